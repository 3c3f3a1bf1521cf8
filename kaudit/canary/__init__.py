"""`kaudit canary`: the probe that never stops (books, service loop, metrics)."""
