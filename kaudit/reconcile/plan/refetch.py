"""``shuffle="hashes"``: the suspect groups' rows read again, with their values.

The one shuffle then carries no compared value, so the detail cannot read the suspects'
values from it: :func:`read_again` reads the topic's records at the coordinates the first
read gave them (before they are decoded, where the caller's ``topic_at`` joins the raw
records) and the sink's rows by group key. A second read of a side can differ from the
first (a database table being written); the comparison checks that it found as many rows.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kaudit.reconcile.classes import RAW_VALUE, UNDECODABLE
from kaudit.reconcile.plan.mode import Mode
from kaudit.reconcile.plan.model import CompareOptions
from kaudit.reconcile.plan.sides import SIDE_SINK, read_once, sides

FETCH_BROADCAST_MAX = 4_000_000
"""Most suspect topic records whose coordinates are sent to every task as one table
(about 30 bytes each in the driver and in each executor); above it both sides are
shuffled to meet them instead, as a shuffle of values would have done."""


def with_problems(topic: DataFrame) -> DataFrame:
    """The topic frame with :data:`UNDECODABLE` and :data:`RAW_VALUE` (null where absent:
    every record decoded)."""
    for name in (UNDECODABLE, RAW_VALUE):
        if name not in topic.columns:
            topic = topic.withColumn(name, F.lit(None).cast("string"))
    return topic


def records_at(topic: DataFrame, given: Callable[[DataFrame], DataFrame] | None
               ) -> Callable[[DataFrame], DataFrame]:
    """``compare``'s ``topic_at``, or the topic frame joined with the coordinates."""
    if given is not None:
        return lambda at: with_problems(given(at))
    return lambda at: topic.join(at, on=["partition", "offset"], how="left_semi")


def read_again(suspect_rows: DataFrame, summary: DataFrame,
               topic_at: Callable[[DataFrame], DataFrame], sink: DataFrame, mode: Mode,
               options: CompareOptions) -> tuple[DataFrame, tuple[int, int]]:
    """The suspect groups' rows with their values, read again from both sides: the topic's
    records at the coordinates the first read gave them (``topic_at``), the sink's rows by
    group key. ``suspect_rows``: the first shuffle's rows of the suspect groups;
    ``summary``: the first pass's summary (``_t_rows`` per group). Read once
    (:func:`~kaudit.reconcile.plan.sides.read_once`): the detail and the check of how many
    rows came back read the same rows. Also how many topic rows (tombstones too) and sink
    rows the suspect groups had in the first read, which the second must find again. Runs
    the first pass now: how many records the suspects have decides how they are met."""
    suspects = summary.where(~F.col("_clean"))
    sums = suspects.agg(F.sum("_t_rows"), F.sum("_s_rows")).collect()[0]
    first_read = (int(sums[0] or 0), int(sums[1] or 0))
    hint = "broadcast" if first_read[0] <= FETCH_BROADCAST_MAX else "shuffle_hash"
    at = (suspect_rows.where(F.col("_side") != F.lit(SIDE_SINK))
          .select(F.col("_t.partition").alias("partition"),
                  F.col("_t.offset").alias("offset")))
    group = list(mode.group)
    s = (sink.select("*", *mode.group_columns())
         .join(suspects.select(*group).hint(hint), on=group, how="left_semi")
         .drop(*group))
    both = sides(topic_at(at.hint(hint)), s, mode, options, True)
    return read_once(both.repartition(*[F.col(g) for g in group]),
                     max(1, summary.sparkSession.sparkContext.defaultParallelism)), first_read
