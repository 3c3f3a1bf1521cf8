"""Read a live cluster into frozen models."""
