"""The comparison modes' plans by name: the one place that knows every mode module.

Their names (and what ``--mode`` says of them) are :data:`kaudit.reconcile.modes.MODES`,
readable without Spark; a unit test keeps the two in step.
"""

from __future__ import annotations

from kaudit.reconcile.plan.append import APPEND
from kaudit.reconcile.plan.coordinates import COORDINATES
from kaudit.reconcile.plan.mode import Mode
from kaudit.reconcile.plan.upsert import UPSERT

#: Every mode's plan, by its name.
PLANS: dict[str, Mode] = {mode.name: mode for mode in (APPEND, UPSERT, COORDINATES)}
