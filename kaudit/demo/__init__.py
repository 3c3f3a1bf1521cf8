"""``kaudit demo``: the whole tour, on the local lab, in a few minutes.

The demo calls the same cores the commands call (the lab manager, the
snapshot reader and rule engine, the probe matrix, the reconcile job) and
renders their results with the same formatters, so what it shows is exactly
what ``kaudit lab``, ``check``, ``probe matrix`` and ``reconcile`` print. Each
step also prints the command line that does the same thing by hand.

Steps:

1. the lab: reuse the one running in the state directory, or start it;
2. topics with sound and unsound durability settings, a policy for them and an
   ``acks=1`` producer config (all written under ``STATE_DIR/demo/``);
3. ``check``: the findings and the guarantee of every demo topic;
4. ``probe matrix``: acks=1 against acks=all with min.insync.replicas=2, the
   partition leader killed mid-run, at a steady rate (so that the followers are
   always a few milliseconds behind when the leader dies);
5. orders produced to a topic, and a Parquet "sink" written from them with
   known faults (rows missing, duplicated and changed);
6. ``reconcile`` of the topic against that sink.

Findings, losses and discrepancies are the point of the demo, not failures:
the demo succeeds when every step ran. Reports go to ``STATE_DIR/demo/``.

The package:

- :mod:`~kaudit.demo.model`: the scenario (topics, policy, producer, orders, the sink's
  faults) and the results (:class:`DemoResult`, :class:`DemoReports`);
- :mod:`~kaudit.demo.steps`: the steps, in order, and :func:`run_demo`;
- :mod:`~kaudit.demo.orders`: the orders produced, and the faulty Parquet sink;
- :mod:`~kaudit.demo.cluster`: the demo's own work on the lab (its connection, its
  topics' configs, the wait for the replicas to be in sync);
- :mod:`~kaudit.demo.report`: the matrix story, the closing summary and the
  ``kaudit.demo/v1`` document (:data:`DEMO`).

Imports go one way: ``steps`` uses the others, and all of them use ``model``.
"""

from kaudit.demo.model import DemoReports, DemoResult
from kaudit.demo.report import DEMO, demo_document
from kaudit.demo.steps import run_demo

__all__ = [
    "DEMO",
    "DemoReports",
    "DemoResult",
    "demo_document",
    "run_demo",
]
