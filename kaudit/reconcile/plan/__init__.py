"""The comparison plan of ``kaudit reconcile``: topic records against sink rows.

- :mod:`~kaudit.reconcile.plan.model`: what goes in and what comes out:
  :class:`CompareOptions`, the discrepancy columns (:data:`DISCREPANCY_SCHEMA`) and the
  hashing helpers both sides must use (:func:`key_hash_column`, :func:`payload_hash_column`).
  Its docstring states the input frames and what every class means, mode by mode.
- :mod:`~kaudit.reconcile.plan.comparison`: :func:`compare` (input checks, the one shuffle of
  both sides that marks the clean groups, the hand-over to the mode) and its result,
  :class:`Comparison`. Its docstring states what the plan costs.
- :mod:`~kaudit.reconcile.plan.columns`: the column expressions every mode shares: the
  shuffled row's structs, group keys, sink aggregates, one discrepancy row, the null-safe
  comparison of one compared field.
- :mod:`~kaudit.reconcile.plan.append`, :mod:`~kaudit.reconcile.plan.upsert`,
  :mod:`~kaudit.reconcile.plan.coordinates`: one per ``--mode``, the detail of the suspect
  groups as discrepancy rows. Each mode first selects, per joined row, the values used
  several times (sorted lists, picked records, the "compare the columns" condition) as
  columns of their own, so that they are computed once per key; then builds the array of
  discrepancy rows from them.

Imports go one way: the mode modules use ``columns``, which uses ``model``; ``comparison``
uses the mode modules, never the reverse.
"""

from kaudit.reconcile.classes import CLASSES
from kaudit.reconcile.plan.comparison import Comparison, compare
from kaudit.reconcile.plan.model import (
    DISCREPANCY_COLUMNS,
    DISCREPANCY_SCHEMA,
    CompareOptions,
    key_hash_column,
    payload_hash_column,
)

__all__ = [
    "CLASSES",
    "DISCREPANCY_COLUMNS",
    "DISCREPANCY_SCHEMA",
    "CompareOptions",
    "Comparison",
    "compare",
    "key_hash_column",
    "payload_hash_column",
]
