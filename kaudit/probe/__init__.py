"""``kaudit probe``: produce sequenced messages, read them back, account for every one.

The pure core, usable and tested without Kafka:

- :mod:`kaudit.probe.payload`: the probe message value (run id, partition and global
  sequence, send time) and its decoder.
- :mod:`kaudit.probe.ledger`: every send's outcome (acked at an offset, failed, indeterminate,
  aborted on purpose) in compact per-partition arrays, and the error classification that
  decides failed vs indeterminate.
- :mod:`kaudit.probe.verifier`: what the read-back passes saw against the ledger: lost,
  consumer-missed, duplicated, reordered, inconsistent offsets, aborted reads, failed- and
  indeterminate-but-present writes; and the verdict for ``--expect``.
- :mod:`kaudit.probe.outcomes`: those counts (:class:`~kaudit.probe.outcomes.OutcomeCounts`)
  and class names, defined once for the verifier and the reports.
- :mod:`kaudit.probe.latency`: a fixed-memory latency histogram and the per-second timeline
  used for availability windows.

The I/O is around them: the send loop (:mod:`kaudit.probe.produce`), the read-back
consumers (:mod:`kaudit.probe.readback`), faults, the leader/ISR monitor and topic handling;
:mod:`kaudit.probe.runner` runs one probe with them (settings and report:
:mod:`kaudit.probe.model`).
"""
