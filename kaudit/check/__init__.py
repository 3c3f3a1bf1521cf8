"""Rules over cluster and client models, and the delivery guarantee calculator."""
