"""Faults injected during a probe run, one model for every command that injects them.

- :mod:`~kaudit.probe.faults.registry`: every fault's name, argument, description and which
  commands take it; the parser of ``--fault`` and ``--fault-at``. It imports nothing of
  Kafka, so ``--help`` and shell completion read it cheaply.
- :mod:`~kaudit.probe.faults.lab`: the lab's brokers, signalled through the lab's state.
- :mod:`~kaudit.probe.faults.injector`: the thread that waits for the cue, injects each
  fault and heals it, and tells the run's waits when a fault explains a missing leader.
"""
