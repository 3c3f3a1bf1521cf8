"""``kaudit probe consume``: what a consumer group's commit strategy really delivers.

- :mod:`~kaudit.probe.consume.model`: the settings and the report of one run.
- :mod:`~kaudit.probe.consume.journal`: the one line format every worker writes (what it
  polled, processed and committed) and its reader.
- :mod:`~kaudit.probe.consume.verify`: pure: how often each input record was processed,
  and which crash lost or repeated which offsets.
- :mod:`~kaudit.probe.consume.sink`: the database sink of ``--commit sink-offsets``.
- :mod:`~kaudit.probe.consume.worker`: one worker process (``python -m``).
- :mod:`~kaudit.probe.consume.runner`: fills the input, runs the workers, crashes and
  restarts them, injects broker faults, collects what was processed, verifies.
"""
