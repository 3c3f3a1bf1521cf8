"""The interface of a comparison mode: what ``--mode`` decides in the comparison plan.

:mod:`~kaudit.reconcile.plan.comparison` runs the same passes for every mode (the one
shuffle of both sides, the summary that marks the clean groups, the detail of the suspect
ones); a :class:`Mode` says what differs: the group key, what crosses the shuffle besides
it, what is derived after it, when a group is clean, and the discrepancy rows of a suspect
group. Each mode module exports one (``APPEND``, ``UPSERT``, ``COORDINATES``), registered in
:data:`kaudit.reconcile.plan.modes.PLANS`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kaudit.reconcile.modes import ModeName
from kaudit.reconcile.plan.model import CompareOptions


class Mode(ABC):
    """One comparison mode. By default its groups are keys (``key_hash``, and the key
    itself in the detail)."""

    name: ModeName
    group: tuple[str, ...] = ("_gk",)
    """The group key's columns in the shuffled rows."""
    sink_columns: tuple[str, ...] = ()
    """The sink frame's columns the mode needs besides key, key_hash, payload_hash and the
    compared ones."""
    by_coordinates: bool = False
    """The sink stores each row's Kafka partition and offset and rows are matched on them:
    the sink keeps only the rows of the pinned range and of this topic."""

    def group_columns(self) -> list[Column]:
        """The group key (its columns named as :attr:`group`), from either side's frame."""
        return [F.col("key_hash").alias("_gk")]

    def carried(self) -> list[Column]:
        """What else of either side's row crosses the shuffle, besides the group key, the
        side, the payload hash and the key."""
        return []

    def derived(self, rows: DataFrame) -> DataFrame:
        """The shuffled rows with what this mode derives from them after the shuffle."""
        return rows

    @abstractmethod
    def summary(self) -> tuple[list[Column], Column]:
        """The summary's aggregates of this mode, and when a group is clean: cannot hold a
        discrepancy. Over the shuffled rows of one group; the condition may read the
        aggregates and the ones every mode has (``_live_n``, ``_s_rows``, ``_one_key``).
        Only fixed-width aggregates: Spark keeps them in a hash map, no sort."""

    @abstractmethod
    def rows(self, suspects: DataFrame, topic: DataFrame, sink: DataFrame,
             options: CompareOptions) -> DataFrame:
        """The suspect groups' rows as one row per group, its discrepancy rows (of
        :data:`~kaudit.reconcile.plan.model.DISCREPANCY_SCHEMA`) in the array ``_rows``."""
