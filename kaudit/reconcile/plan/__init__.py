"""The comparison plan of ``kaudit reconcile``: topic records against sink rows.

- :mod:`~kaudit.reconcile.plan.model`: what goes in and what comes out:
  :class:`CompareOptions`, the discrepancy columns (:data:`DISCREPANCY_SCHEMA`) and the
  hashing helpers both sides must use (:func:`key_hash_column`, :func:`payload_hash_column`).
  Its docstring states the input frames and what every class means, mode by mode.
- :mod:`~kaudit.reconcile.plan.comparison`: :func:`compare` (input checks, the one shuffle of
  both sides that marks the clean groups, the hand-over to the mode) and its result,
  :class:`Comparison`. Its docstring states what the plan costs.
- :mod:`~kaudit.reconcile.plan.sides`: both sides' rows as one frame, the one shuffle of it,
  and :func:`~kaudit.reconcile.plan.sides.read_once`, which makes every query read that
  shuffle's output.
- :mod:`~kaudit.reconcile.plan.refetch`: with ``shuffle="hashes"``, the suspects' rows
  read again with their values.
- :mod:`~kaudit.reconcile.plan.columns`: the column expressions every mode shares: the
  shuffled row's structs, the topic record a mode's detail keeps, group keys, sink
  aggregates, one discrepancy row, the null-safe comparison of one compared field.
- :mod:`~kaudit.reconcile.plan.mode`: :class:`Mode`, what a mode decides: its group key,
  what crosses the shuffle and is derived after it, when a group is clean, and the
  discrepancy rows of a suspect group.
- :mod:`~kaudit.reconcile.plan.append`, :mod:`~kaudit.reconcile.plan.upsert`,
  :mod:`~kaudit.reconcile.plan.coordinates`: one :class:`Mode` each (``APPEND``,
  ``UPSERT``, ``COORDINATES``). Each mode's detail first selects, per joined row, the values
  used several times (sorted lists, picked records, the "compare the columns" condition) as
  columns of their own, so that they are computed once per key; then builds the array of
  discrepancy rows from them.
- :mod:`~kaudit.reconcile.plan.modes`: :data:`PLANS`, every mode by name (their names,
  without Spark: :mod:`kaudit.reconcile.modes`).

Imports go one way, and only public names cross modules: the mode modules use ``mode`` and
``columns``, which use ``model``; ``modes`` uses the mode modules; ``sides`` uses
``mode`` and ``model``, ``refetch`` uses ``sides``; ``comparison`` uses ``modes``,
``sides`` and ``refetch``, never a mode module.
"""

from kaudit.reconcile.classes import CLASSES
from kaudit.reconcile.plan.comparison import Comparison, compare
from kaudit.reconcile.plan.mode import Mode
from kaudit.reconcile.plan.model import (
    DISCREPANCY_COLUMNS,
    DISCREPANCY_SCHEMA,
    CompareOptions,
    key_hash_column,
    payload_hash_column,
)
from kaudit.reconcile.plan.modes import PLANS

__all__ = [
    "CLASSES",
    "DISCREPANCY_COLUMNS",
    "DISCREPANCY_SCHEMA",
    "PLANS",
    "CompareOptions",
    "Comparison",
    "Mode",
    "compare",
    "key_hash_column",
    "payload_hash_column",
]
