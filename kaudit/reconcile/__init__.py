"""``kaudit reconcile``: did the topic's records arrive in the sink table, record by record?

- :mod:`kaudit.reconcile.plan`: the comparison plan (pure Spark, testable on small
  DataFrames): per-key (or per-coordinate) aggregates of both sides after one shuffle of
  both, and the discrepancy set with its classes (missing, extra, duplicated, mismatched,
  unverifiable, pending), counts, per-partition counts and samples. The docstring of
  :mod:`kaudit.reconcile.plan.model` states the semantics of every mode in operator's words.

The Kafka source reader, the sink readers and the report are built around it. Importing this
package does not import pyspark; importing :mod:`kaudit.reconcile.plan` does.
"""
