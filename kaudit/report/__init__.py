"""Render results: one registry of formats, one way to write output."""
