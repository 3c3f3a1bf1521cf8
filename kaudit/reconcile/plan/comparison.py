""":func:`compare`, which builds the comparison plan, and its result, :class:`Comparison`.

The input frames and what every class means, mode by mode: :mod:`kaudit.reconcile.plan.model`.

Scale
=====

One pass over each side, one shuffle of the data, and no sort of it. Both frames go into
one frame (each row carrying the group key, a side byte, the payload hash, the key, and
its side's compared values and coordinates as a struct; nothing else), which is shuffled
ONCE on a 64-bit group key (``key_hash``; ``partition``/``offset`` in coordinates mode).
Spark computes that shuffle once and every later step reads its output:

1. the summary: a hash aggregation over fixed-width columns per group (counts, payload
   hashes, a second, independent key hash that tells colliding keys apart) marks the
   groups that cannot hold a discrepancy as clean: one record and one row with the same
   payload hash and key (append), the sink row equal to the latest record or absent after
   a tombstone (upsert), the same payload and key at the coordinates (coordinates mode).
   It is collapsed to the suspect groups plus one row that counts the clean ones; its
   sums (:meth:`Comparison.topic_records` and :meth:`Comparison.sink_rows`) become one
   more row of the kept set, so that no query of their own reads it again;
2. the detail: the rows of the suspect groups only (a hash join of the shuffled rows with
   the suspects, partition by partition) are aggregated per group (by key_hash and key,
   so colliding keys are never paired) with the per-mode detail below.

No sort-merge join, no window, no Python UDF, no collect of the data.

With ``shuffle="hashes"`` the one shuffle carries no compared value (the topic record's
coordinates still), so its rows are narrow whatever the values weigh; the summary is the
same. The suspect groups' rows are then read again with their values
(:mod:`~kaudit.reconcile.plan.refetch`: the topic's records at their coordinates, joined
before they are decoded; the sink's rows by group key), shuffled (a few rows) and given to
the same detail. That costs one more read of each side, so it is the slower plan where
that read costs more than the values' share of the shuffle (at 3 M records of 14 compared
text fields it still was: 57-58 s against 56 s, for a shuffle of 31 bytes a row instead of
174); its point is a shuffle that does not grow with the values. A second read can differ
from the first (a database table being written): the rows it finds are counted against
the first read's count for the same groups, and a difference is :class:`SourceChanged`.

The discrepancy set and the totals' row are persisted (memory and disk) the first time
they are computed, so that the counts, the samples and writing the set out do not compute
it again; :meth:`Comparison.unpersist` releases it. :meth:`Comparison.counts`,
:meth:`Comparison.counts_by_partition` and the totals come from one aggregation over it
(partition x class, computed once and kept); :meth:`Comparison.samples` is one more small
query (a top-k per class, put in order on the driver). Nothing but counts and samples
reaches the driver.

Memory per key: only suspect groups keep values. Append mode keeps, per suspect key, the
list of the key's topic records (offset, partition, timestamp, payload hash and compared
values) so that missing records can be named and the compared record chosen: O(records
per key). Upsert mode keeps only the latest record per key (constant). The sink side keeps
per suspect key the count, the set of distinct payload hashes and one row. With
``source_truncated`` in coordinates mode, the first offset per partition comes from
``partition_starts``; without it, from a second, small aggregation over the topic frame (a
second read of it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kaudit.errors import SourceChanged
from kaudit.reconcile.classes import CLASSES
from kaudit.reconcile.plan.columns import is_live, is_sink, is_topic
from kaudit.reconcile.plan.mode import Mode
from kaudit.reconcile.plan.model import (
    DISCREPANCY_COLUMNS,
    DISCREPANCY_SCHEMA,
    RESERVED_COLUMNS,
    CompareOptions,
)
from kaudit.reconcile.plan.modes import PLANS
from kaudit.reconcile.plan.refetch import read_again, records_at, with_problems
from kaudit.reconcile.plan.sides import SIDE_SINK, SIDE_TOMBSTONE, read_once, shuffled


@dataclass(frozen=True)
class Comparison:
    """The discrepancy set (lazy, persisted on first use) and its summaries.

    Every method runs Spark jobs. The first one runs the one pass (both sides read, the
    one shuffle, the summary, the detail) and persists its result; the others read that.
    """

    _kept: DataFrame
    """The discrepancy rows and one row of totals (class :data:`_TOTALS`), persisted; with
    ``shuffle="hashes"`` also the row of :data:`_FETCHED`."""
    _fetched: DataFrame | None = None
    """With ``shuffle="hashes"``: the suspects' rows read again."""
    _first_read: tuple[int, int] | None = None
    """With ``shuffle="hashes"``: the suspect groups' topic rows (tombstones too) and sink
    rows in the first read; the second read must find as many."""
    _memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def discrepancies(self) -> DataFrame:
        """The discrepancy rows (columns :data:`DISCREPANCY_COLUMNS`)."""
        return self._kept.where(~F.col("class").isin(*_BOOKKEEPING))

    def topic_records(self) -> int:
        """Topic records compared (tombstones not included)."""
        return self._aggregated()[1][0]

    def sink_rows(self) -> int:
        """Sink rows compared."""
        return self._aggregated()[1][1]

    def _partition_counts(self) -> list[tuple[int | None, str, int]]:
        """(partition, class, rows) for every non-empty group of discrepancies."""
        return self._aggregated()[0]

    def _aggregated(self) -> tuple[list[tuple[int | None, str, int]], tuple[int, int]]:
        """The one aggregation over the kept set: rows per (partition, class), and the
        totals' row (topic records, sink rows)."""
        if "aggregated" not in self._memo:
            rows = self._kept.groupBy("partition", "class").agg(
                F.count(F.lit(1)).alias("n"), F.sum("topic_count").alias("t"),
                F.sum("sink_count").alias("s")).collect()
            found = [(row["partition"], row["class"], int(row["n"])) for row in rows
                     if row["class"] not in _BOOKKEEPING]
            sums = {row["class"]: (int(row["t"] or 0), int(row["s"] or 0)) for row in rows
                    if row["class"] in _BOOKKEEPING}
            if self._first_read is not None and sums.get(_FETCHED) != self._first_read:
                raise SourceChanged(_changed(self._first_read, sums.get(_FETCHED)))
            self._memo["aggregated"] = (found, sums.get(_TOTALS, (0, 0)))
        result: tuple[list[tuple[int | None, str, int]], tuple[int, int]] = \
            self._memo["aggregated"]
        return result

    def counts(self) -> dict[str, int]:
        """Discrepancy rows per class (all of :data:`CLASSES`, zeros included)."""
        totals = dict.fromkeys(CLASSES, 0)
        for _, cls, n in self._partition_counts():
            totals[cls] += n
        return totals

    def counts_by_partition(self) -> dict[int, dict[str, int]]:
        """Discrepancy rows per topic partition and class (each inner dict has every class).

        Rows with no known partition (``extra_in_sink`` and ``unverifiable`` for keys the topic
        does not have, in append and upsert mode) are only in :meth:`counts`.
        """
        result: dict[int, dict[str, int]] = {}
        for partition, cls, n in self._partition_counts():
            if partition is None:
                continue
            result.setdefault(partition, dict.fromkeys(CLASSES, 0))[cls] += n
        return dict(sorted(result.items()))

    def samples(self, per_class: int = 5) -> dict[str, list[dict[str, Any]]]:
        """Up to ``per_class`` discrepancy rows of each class, as dicts.

        Repeatable: the first rows by partition, offset, key and column. Every class is a key;
        a class with no discrepancies has an empty list.
        """
        result: dict[str, list[dict[str, Any]]] = {cls: [] for cls in CLASSES}
        if per_class <= 0:
            return result
        order = [
            F.col(c).asc_nulls_last() for c in ("partition", "offset", "key", "column")
        ]
        # One query that names the set once: a union of per-class queries would name it
        # several times, and Spark then fails to find all but one of them persisted.
        rank = F.row_number().over(Window.partitionBy("class").orderBy(*order))
        picked = self.discrepancies.withColumn("_rank", rank).where(F.col("_rank") <= per_class)
        # A few rows per class: put in order here, not by a sort in Spark (a sampling job
        # and an exchange of their own).
        rows = sorted(picked.collect(), key=lambda row: row["_rank"])
        for row in rows:
            result[row["class"]].append({c: row[c] for c in DISCREPANCY_COLUMNS})
        return result

    def unpersist(self) -> None:
        """Drop the persisted discrepancy set (after the report is written)."""
        self._kept.unpersist()


def _changed(want: tuple[int, int], fetched: tuple[int, int] | None) -> str:
    """Why a second read of the suspects' rows cannot be trusted, in one line."""
    got = fetched or (0, 0)
    side = "topic" if want[0] != got[0] else "sink"
    n = 0 if side == "topic" else 1
    return (f"the {side} changed while kaudit read it: the suspect keys had {want[n]} "
            f"{side} rows in the first read and {got[n]} when read again for their values; "
            "run again, or with --shuffle values (one read of each side)")


def compare(topic: DataFrame, sink: DataFrame, options: CompareOptions,
            topic_at: Callable[[DataFrame], DataFrame] | None = None) -> Comparison:
    """Build the comparison plan of ``topic`` against ``sink``.

    Lazy: nothing runs until the :class:`Comparison` is asked for counts, totals or
    samples (or the discrepancies are written); with ``shuffle="hashes"`` the first pass
    runs here. Raises :class:`ValueError` on a frame without a required column, a compared
    column with a reserved name, or an unknown mode.

    ``topic_at``: with ``shuffle="hashes"``, the topic frame's records at the coordinates
    (``partition``, ``offset``) of the frame it is given, built so that only those records
    are decoded (the caller joins the raw records before decoding them); without it, the
    topic frame joined with them.
    """
    mode = _validate(topic, sink, options)
    topic = with_problems(topic)
    values = options.shuffle == "values"
    rows_once = shuffled(topic, sink, mode, options, values)
    group = list(mode.group)
    # The summary is small (suspects and one row of totals): a partition per core. Each
    # of the many tasks before it writes a file per partition of its output. Read twice
    # below, by the detail (its suspects) and by the totals: as one RDD, so that its
    # aggregation of every shuffled row runs once (the optimizer would plan each use anew).
    summary = read_once(_summary(rows_once, mode, not values),
                        max(1, topic.sparkSession.sparkContext.defaultParallelism))
    suspects = summary.where(~F.col("_clean")).select(*group)
    # Both sides of this join are partitioned by the group key already (the rows by the
    # one shuffle, the suspects by a small exchange): a hash join per partition, no sort.
    suspect_rows = rows_once.join(suspects.hint("shuffle_hash"), on=group, how="left_semi")
    fetched, first_read = None, None
    if not values:
        fetched, first_read = read_again(suspect_rows, summary, records_at(topic, topic_at),
                                         sink, mode, options)
        suspect_rows = fetched
    detail = _derived(suspect_rows, mode)
    rows = mode.rows(detail, topic, sink, options)
    # inline_outer + filter, not inline: with inline, Spark infers a size(_rows) > 0 filter
    # and pushes it below the projection, computing every row's discrepancies twice.
    found = (
        rows.select(F.inline_outer(F.col("_rows")))
        .where(F.col("class").isNotNull())
        .select(*DISCREPANCY_COLUMNS)
    )
    checks = [_totals_row(summary)]
    if fetched is not None:
        checks.append(_fetched_row(fetched))
    kept = (
        _union(found, *checks)
        # The set is small (the suspects' rows), but the big shuffle left it in many
        # partitions; the counts and samples that read it would pay a task per
        # partition, every time. One partition per core, or fewer shuffle partitions
        # per task than PARTITIONS_PER_KEPT_TASK.
        .coalesce(kept_partitions(topic.sparkSession.sparkContext.defaultParallelism,
                                  options.shuffle_partitions))
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    return Comparison(kept, fetched, first_read)


PARTITIONS_PER_KEPT_TASK = 40
"""Most partitions of the one shuffle that one task of the kept set computes. A task that
coalesces them computes each one's join with the suspects in turn, and Spark frees each
one's hash relation (about 1 MiB) only when the task ends: a 100 M record run (800 shuffle
partitions in 2 tasks) failed on 1 GiB executors, "Can't acquire 1049600 bytes memory to
build hash relation". 40 is what a 10 M record run (80 in 2) had always used."""


def kept_partitions(cores: int, shuffled: int | None) -> int:
    """Partitions of the kept set: one per core, or more where the one shuffle has more
    than :data:`PARTITIONS_PER_KEPT_TASK` partitions per core."""
    cores = max(1, cores)
    if shuffled is None:
        return cores
    return max(cores, -(-shuffled // PARTITIONS_PER_KEPT_TASK))


#: The class of the kept set's one row of totals (topic_count: topic records compared,
#: sink_count: sink rows compared); never a discrepancy.
_TOTALS = "_totals"
#: With shuffle="hashes": the suspect groups' topic rows (tombstones too) and sink rows
#: counted in the second read; they must equal the first read's (Comparison._first_read).
_FETCHED = "_fetched"
_BOOKKEEPING = (_TOTALS, _FETCHED)


def _totals_row(summary: DataFrame) -> DataFrame:
    """The summary's totals as one row of the discrepancy schema (class :data:`_TOTALS`)."""
    return _counts_row(summary, _TOTALS, F.sum("_live_n"), F.sum("_s_rows"))


def _fetched_row(fetched: DataFrame) -> DataFrame:
    """The suspect groups' rows read again (class :data:`_FETCHED`)."""
    sink = F.col("_side") == F.lit(SIDE_SINK)
    return _counts_row(fetched, _FETCHED, F.count_if(~sink), F.count_if(sink))


def _counts_row(frame: DataFrame, cls: str, topic_count: Column,
                sink_count: Column) -> DataFrame:
    """Two sums over ``frame`` as one row of the discrepancy schema, of class ``cls``."""
    sums = frame.agg(topic_count.alias("topic_count"), sink_count.alias("sink_count"))
    values = {"class": F.lit(cls), "topic_count": F.col("topic_count"),
              "sink_count": F.col("sink_count")}
    return sums.select(*[values.get(f.name, F.lit(None)).cast(f.dataType).alias(f.name)
                         for f in DISCREPANCY_SCHEMA.fields])


def _union(first: DataFrame, *others: DataFrame) -> DataFrame:
    for other in others:
        first = first.unionByName(other)
    return first


# --- the first pass: the one shuffle and the summary that picks the suspects ------------
#
# Both sides go into one frame (the topic's columns as struct _t, the sink's as _s, the
# other one null), shuffled ONCE on the group key (key_hash, or partition/offset in
# coordinates mode). Every later query reads that one shuffle's output (see read_once):
# first a hash aggregation over fixed-width columns (counts, payload hashes, a second key
# hash), one row per group, which decides whether the group can hold a discrepancy at all;
# it is collapsed to the suspect groups plus one row of totals for the clean ones (a
# second, small shuffle whose output is read alike). Then the rows of the suspect groups
# only, by a hash join with them, go to the detailed per-mode aggregation. Neither step
# sorts the rows: a sort (a window, a sort-merge join) cost more than all the rest after
# the read (16 of 61 s at 10 M records).

def _second_key_hash(key: Column) -> Column:
    """An independent 64-bit hash of the key (and its null flag): two keys that share a
    key_hash but not this one are told apart before anything is paired."""
    return F.xxhash64(F.lit("kaudit.reconcile.k2"), key, key.isNull())


def _derived(rows: DataFrame, mode: Mode) -> DataFrame:
    """The shuffled rows with the columns derived from them after the shuffle."""
    rows = (rows.withColumn("_is_t", F.col("_side") != F.lit(SIDE_SINK))
            .withColumn("_tomb", F.col("_side") == F.lit(SIDE_TOMBSTONE))
            .withColumn("_k2", _second_key_hash(F.col("_key"))))
    return mode.derived(rows)


def _summary(rows: DataFrame, mode: Mode, topic_rows: bool = False) -> DataFrame:
    """One row per suspect group (its group key, ``_clean`` false) and one row for all
    clean groups (group key null, ``_clean`` true); each
    with the live topic records (``_live_n``) and sink rows (``_s_rows``) it stands for.

    A group is clean when it cannot hold a discrepancy (:meth:`Mode.summary`): one record
    and one row with the same payload hash and key (append), the sink row equal to the
    latest record or absent after a tombstone (upsert), the same payload and key at the
    coordinates (coordinates mode). Only fixed-width aggregates: Spark keeps them in a hash
    map, no sort.
    """
    rows = _derived(rows, mode)
    aggs, clean = mode.summary()
    # With topic_rows, each group's topic rows, tombstones too (_t_rows): what a second
    # read of the suspects must find again.
    counted = ["_live_n", "_s_rows", *(["_t_rows"] if topic_rows else [])]
    per_group = rows.groupBy(*mode.group).agg(
        F.count_if(is_live()).alias("_live_n"), F.count_if(is_sink()).alias("_s_rows"),
        *([F.count_if(is_topic()).alias("_t_rows")] if topic_rows else []),
        (F.min("_k2") == F.max("_k2")).alias("_one_key"), *aggs,
    ).withColumn("_clean", F.coalesce(clean, F.lit(False)))
    suspect = ~F.col("_clean")
    # All clean groups fall into one group (key null): the partial aggregation makes that
    # one row per task, so only the suspects and a row per task cross this exchange.
    return per_group.groupBy(
        F.col("_clean"), *[F.when(suspect, F.col(g)).alias(g) for g in mode.group],
    ).agg(*[F.sum(c).alias(c) for c in counted])


# --- validation -------------------------------------------------------------------------


def _validate(topic: DataFrame, sink: DataFrame, options: CompareOptions) -> Mode:
    """The mode of ``options``, once the options and both frames' columns fit it."""
    mode = PLANS.get(options.mode)
    if mode is None:
        raise ValueError(f"unknown reconcile mode {options.mode!r}")
    if options.timestamp_precision not in ("us", "ms", "s"):
        raise ValueError(f"unknown timestamp precision {options.timestamp_precision!r}")
    if options.numeric_tolerance < 0:
        raise ValueError("the numeric tolerance cannot be negative")
    reserved = sorted(set(options.compare) & RESERVED_COLUMNS)
    if reserved:
        raise ValueError(
            f"compared column(s) {', '.join(reserved)} clash with kaudit's own topic columns; "
            "map them to other names"
        )
    if len(set(options.compare)) != len(options.compare):
        raise ValueError("a compared column is listed twice")
    compared = list(options.compare)
    need_topic = [
        "partition", "offset", "key", "key_hash", "tombstone", "timestamp", "payload_hash",
        *compared,
    ]
    need_sink = ["key", "key_hash", "payload_hash", *compared, *mode.sink_columns]
    for side, frame, needed in (("topic", topic, need_topic), ("sink", sink, need_sink)):
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            raise ValueError(f"the {side} frame has no column(s): {', '.join(missing)}")
    return mode
