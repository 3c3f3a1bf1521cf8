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

from py4j.java_gateway import JavaPackage  # type: ignore[import-untyped]
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kaudit.errors import RuntimeUnavailable, SourceChanged
from kaudit.reconcile.classes import CLASSES, RAW_VALUE, UNDECODABLE
from kaudit.reconcile.plan.columns import is_live, is_sink, is_topic
from kaudit.reconcile.plan.mode import Mode
from kaudit.reconcile.plan.model import (
    DISCREPANCY_COLUMNS,
    DISCREPANCY_SCHEMA,
    RESERVED_COLUMNS,
    CompareOptions,
)
from kaudit.reconcile.plan.modes import PLANS


@dataclass(frozen=True)
class Comparison:
    """The discrepancy set (lazy, persisted on first use) and its summaries.

    Every method runs Spark jobs. The first one runs the one pass (both sides read, the
    one shuffle, the summary, the detail) and persists its result; the others read that.
    """

    _kept: DataFrame
    """The discrepancy rows and one row of totals (class :data:`_TOTALS`), persisted; with
    ``shuffle="hashes"`` also the rows of :data:`_SUSPECTS` and :data:`_FETCHED`."""
    _fetched: DataFrame | None = None
    """With ``shuffle="hashes"``: the suspects' rows read again."""
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
            if sums.get(_SUSPECTS) != sums.get(_FETCHED):
                raise SourceChanged(_changed(sums.get(_SUSPECTS), sums.get(_FETCHED)))
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


def _changed(suspects: tuple[int, int] | None, fetched: tuple[int, int] | None) -> str:
    """Why a second read of the suspects' rows cannot be trusted, in one line."""
    want, got = suspects or (0, 0), fetched or (0, 0)
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
    topic = _with_problems(topic)
    values = options.shuffle == "values"
    rows_once = _shuffled(topic, sink, mode, options, values)
    group = list(mode.group)
    # The summary is small (suspects and one row of totals): a partition per core. Each
    # of the many tasks before it writes a file per partition of its output. Read twice
    # below, by the detail (its suspects) and by the totals: as one RDD, so that its
    # aggregation of every shuffled row runs once (the optimizer would plan each use anew).
    summary = _read_once(_summary(rows_once, mode, not values),
                         max(1, topic.sparkSession.sparkContext.defaultParallelism))
    suspects = summary.where(~F.col("_clean")).select(*group)
    # Both sides of this join are partitioned by the group key already (the rows by the
    # one shuffle, the suspects by a small exchange): a hash join per partition, no sort.
    suspect_rows = rows_once.join(suspects.hint("shuffle_hash"), on=group, how="left_semi")
    fetched = None
    if not values:
        fetched = _fetched(suspect_rows, summary, _topic_at(topic, topic_at), sink, mode,
                           options)
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
        checks += [_suspects_row(summary), _fetched_row(fetched)]
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
    return Comparison(kept, fetched)


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
#: With shuffle="hashes": the suspect groups' topic rows (tombstones too) and sink rows in
#: the first read, and the same counted in the second; they must be equal.
_SUSPECTS, _FETCHED = "_suspects", "_fetched"
_BOOKKEEPING = (_TOTALS, _SUSPECTS, _FETCHED)


def _totals_row(summary: DataFrame) -> DataFrame:
    """The summary's totals as one row of the discrepancy schema (class :data:`_TOTALS`)."""
    return _counts_row(summary, _TOTALS, F.sum("_live_n"), F.sum("_s_rows"))


def _suspects_row(summary: DataFrame) -> DataFrame:
    """The suspect groups' rows in the first read (class :data:`_SUSPECTS`)."""
    return _counts_row(summary.where(~F.col("_clean")), _SUSPECTS, F.sum("_t_rows"),
                       F.sum("_s_rows"))


def _fetched_row(fetched: DataFrame) -> DataFrame:
    """The suspect groups' rows read again (class :data:`_FETCHED`)."""
    sink = F.col("_side") == F.lit(_SIDE_SINK)
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
# coordinates mode). Every later query reads that one shuffle's output (see _read_once):
# first a hash aggregation over fixed-width columns (counts, payload hashes, a second key
# hash), one row per group, which decides whether the group can hold a discrepancy at all;
# it is collapsed to the suspect groups plus one row of totals for the clean ones (a
# second, small shuffle whose output is read alike). Then the rows of the suspect groups
# only, by a hash join with them, go to the detailed per-mode aggregation. Neither step
# sorts the rows: a sort (a window, a sort-merge join) cost more than all the rest after
# the read (16 of 61 s at 10 M records).

#: The ``_side`` byte of a shuffled row.
_SIDE_SINK, _SIDE_RECORD, _SIDE_TOMBSTONE = 0, 1, 2


def _second_key_hash(key: Column) -> Column:
    """An independent 64-bit hash of the key (and its null flag): two keys that share a
    key_hash but not this one are told apart before anything is paired."""
    return F.xxhash64(F.lit("kaudit.reconcile.k2"), key, key.isNull())


def _read_once(frame: DataFrame, partitions: int | None = None) -> DataFrame:
    """``frame`` as a leaf over the RDD of its physical plan, with the plan's partitioning.

    Every query over the result reads the same RDD, so the shuffle ``frame`` ends in is
    computed once and its output read by each query (Spark skips a shuffle's map stage
    when its output exists). A DataFrame derived from ``frame`` itself would be planned
    anew by every query, and read both sides again. Adaptive execution is off while the
    plan is made, so that the RDD is lazy and has exactly the partitioning the plan says
    (what Dataset.localCheckpoint does, without keeping the rows). Constraint propagation
    is off too: the leaf would carry the plan's constraints, and deriving them from the
    decoded columns' expressions grows with their number and nesting (300,000 records
    with 14 compared text fields: 7.3 s of planning, against 19.6 s for the whole run
    without it); no query over the leaf needs them. ``partitions``: the partition count of
    the shuffles Spark adds while planning ``frame``.
    """
    spark = frame.sparkSession
    jvm = spark.sparkContext._jvm
    assert jvm is not None

    def module(package: Any, name: str) -> Any:
        found = getattr(getattr(package, name + "$"), "MODULE$")
        if isinstance(found, JavaPackage):  # py4j's answer for a class it cannot find
            raise RuntimeUnavailable(
                f"this Spark has no {name} where kaudit needs it (Spark "
                f"{spark.version}; kaudit reconcile runs on pyspark 4.0.0)")
        return found

    saved = {key: spark.conf.get(key) or default for key, default in (
        ("spark.sql.adaptive.enabled", "true"), ("spark.sql.shuffle.partitions", "200"),
        ("spark.sql.constraintPropagation.enabled", "true"))}
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    spark.conf.set("spark.sql.constraintPropagation.enabled", "false")
    if partitions is not None:
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    try:
        rdd = frame._jdf.queryExecution().toRdd()
        plan = module(jvm.org.apache.spark.sql.execution, "LogicalRDD").fromDataset(
            rdd, frame._jdf, False)
    finally:
        for key, value in saved.items():
            spark.conf.set(key, value)
    jdf = module(jvm.org.apache.spark.sql.classic, "Dataset").ofRows(
        frame._jdf.sparkSession(), plan)
    return DataFrame(jdf, spark)


def _shuffled(topic: DataFrame, sink: DataFrame, mode: Mode, options: CompareOptions,
              values: bool) -> DataFrame:
    """Both sides' rows (see above) after the one shuffle, on the mode's group key."""
    both = _sides(topic, sink, mode, options, values).repartition(
        *[F.col(g) for g in mode.group])
    return _read_once(both, options.shuffle_partitions)


def _sides(topic: DataFrame, sink: DataFrame, mode: Mode, options: CompareOptions,
           values: bool) -> DataFrame:
    """Both sides' rows as one frame, the compared values in the side structs only with
    ``values``."""
    tomb = F.coalesce(F.col("tombstone"), F.lit(False))
    offset, partition = F.col("offset").cast("long"), F.col("partition").cast("int")
    # Only what the summary and the detail need crosses the shuffle: the group key, one
    # side/tombstone byte, the payload hash and the key at the top level; in the side
    # structs only the compared values (and the topic record's coordinates, and its time
    # when --grace needs it). What can be derived from those (flags, the second key hash,
    # upsert's ordering) is derived after the shuffle: every byte a row carries is
    # written, compressed and read back for millions of rows.
    compared = list(options.compare) if values else []
    t_fields = [partition.alias("partition"), offset.alias("offset"),
                F.col(UNDECODABLE).alias(UNDECODABLE), F.col(RAW_VALUE).alias(RAW_VALUE)]
    if options.grace_cutoff is not None:
        t_fields.append(F.col("timestamp").alias("timestamp"))
    t_struct = F.struct(*t_fields, *[F.col(c) for c in compared])
    s_struct = F.struct(*[F.col(c) for c in compared]) if compared else F.struct(
        F.lit(None).cast("boolean").alias("_"))
    t_type = topic.select(t_struct.alias("s")).schema["s"].dataType
    s_type = sink.select(s_struct.alias("s")).schema["s"].dataType
    t_narrow = topic.select(
        *mode.group_columns(),
        F.when(tomb, F.lit(_SIDE_TOMBSTONE)).otherwise(F.lit(_SIDE_RECORD)).cast("byte")
        .alias("_side"),
        F.col("payload_hash").alias("_ph"),
        *mode.carried(),
        F.col("key").alias("_key"),
        t_struct.alias("_t"),
        F.lit(None).cast(s_type).alias("_s"),
    )
    s_narrow = sink.select(
        *mode.group_columns(),
        F.lit(_SIDE_SINK).cast("byte").alias("_side"),
        F.col("payload_hash").alias("_ph"),
        *mode.carried(),
        F.col("key").alias("_key"),
        F.lit(None).cast(t_type).alias("_t"),
        s_struct.alias("_s"),
    )
    return t_narrow.unionByName(s_narrow)


FETCH_BROADCAST_MAX = 4_000_000
"""Most suspect topic records whose coordinates are sent to every task as one table
(about 30 bytes each in the driver and in each executor); above it both sides are
shuffled to meet them instead, as a shuffle of values would have done."""


def _with_problems(topic: DataFrame) -> DataFrame:
    """The topic frame with :data:`UNDECODABLE` and :data:`RAW_VALUE` (null where absent:
    every record decoded)."""
    for name in (UNDECODABLE, RAW_VALUE):
        if name not in topic.columns:
            topic = topic.withColumn(name, F.lit(None).cast("string"))
    return topic


def _topic_at(topic: DataFrame, given: Callable[[DataFrame], DataFrame] | None
              ) -> Callable[[DataFrame], DataFrame]:
    """``compare``'s ``topic_at``, or the topic frame joined with the coordinates."""
    if given is not None:
        return lambda at: _with_problems(given(at))
    return lambda at: topic.join(at, on=["partition", "offset"], how="left_semi")


def _fetched(suspect_rows: DataFrame, summary: DataFrame,
             topic_at: Callable[[DataFrame], DataFrame], sink: DataFrame, mode: Mode,
             options: CompareOptions) -> DataFrame:
    """The suspect groups' rows with their values, read again from both sides: the topic's
    records at the coordinates the first read gave them (``topic_at``), the sink's rows by
    group key. Read once (:func:`_read_once`): the detail and the check of
    :data:`_FETCHED` read the same rows. Runs the first pass now: how many records the
    suspects have decides how they are met."""
    suspects = summary.where(~F.col("_clean"))
    counted = suspects.agg(F.sum("_t_rows")).collect()[0][0] or 0
    hint = "broadcast" if counted <= FETCH_BROADCAST_MAX else "shuffle_hash"
    at = (suspect_rows.where(F.col("_side") != F.lit(_SIDE_SINK))
          .select(F.col("_t.partition").alias("partition"),
                  F.col("_t.offset").alias("offset")))
    group = list(mode.group)
    s = (sink.select("*", *mode.group_columns())
         .join(suspects.select(*group).hint(hint), on=group, how="left_semi")
         .drop(*group))
    both = _sides(topic_at(at.hint(hint)), s, mode, options, True)
    return _read_once(both.repartition(*[F.col(g) for g in group]),
                      max(1, summary.sparkSession.sparkContext.defaultParallelism))


def _derived(rows: DataFrame, mode: Mode) -> DataFrame:
    """The shuffled rows with the columns derived from them after the shuffle."""
    rows = (rows.withColumn("_is_t", F.col("_side") != F.lit(_SIDE_SINK))
            .withColumn("_tomb", F.col("_side") == F.lit(_SIDE_TOMBSTONE))
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
