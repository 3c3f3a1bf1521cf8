"""The comparison modes of ``kaudit reconcile`` by name (no Spark import: ``--mode`` reads it).

What a mode does (how both sides are grouped, which groups are clean, the discrepancy rows of
the others) is its plan module's :class:`~kaudit.reconcile.plan.mode.Mode`, found by name in
:data:`kaudit.reconcile.plan.modes.PLANS`; a unit test keeps the two in step.
"""

from __future__ import annotations

from typing import Literal

ModeName = Literal["append", "upsert", "coordinates"]

#: Every mode, in the order ``--mode`` lists them, with what its help says of it.
MODES: dict[ModeName, str] = {
    "append": "multisets of keys",
    "upsert": "latest record per key",
    "coordinates": "the sink stores partition/offset",
}
