""":func:`compare`, which builds the comparison plan, and its result, :class:`Comparison`.

The input frames and what every class means, mode by mode: :mod:`kaudit.reconcile.plan.model`.

Scale
=====

One pass over each side and one shuffle of the data. Both frames go into one frame (each
row carrying the group key, a side byte, the payload hash, the key, and its side's compared
values and coordinates as a struct; nothing else), which is shuffled ONCE on a 64-bit group
key (``key_hash``; ``partition``/``offset`` in coordinates mode) and sorted within
partitions. What can be derived from those columns is derived after the shuffle.
Window aggregates over fixed-width columns per group (counts, payload hashes, a second,
independent key hash that tells colliding keys apart) mark the groups that cannot hold a
discrepancy as clean: one record and one row with the same payload hash and key (append),
the sink row equal to the latest record or absent after a tombstone (upsert), the same
payload and key at the coordinates (coordinates mode). Then one aggregation on the
partitioning the shuffle already made: suspect groups by key_hash and key (so colliding
keys are never paired) with the per-mode detail below, and all clean rows of a Spark
partition as ONE group that only counts them; only the suspects and one count row per
partition cross the second exchange. Every group emits one marker row with its record and
row counts, so the totals (:meth:`Comparison.topic_records`, :meth:`Comparison.sink_rows`)
come from the same pass. No join, no Python UDF, no collect of the data.

:func:`compare` is lazy and marks the discrepancy set (plus the marker rows) to be
persisted (memory and disk) the first time it is computed, so that the counts, the
samples and writing it out do not read the sources again; :meth:`Comparison.unpersist`
releases it. :meth:`Comparison.counts`, :meth:`Comparison.counts_by_partition` and the
totals come from one aggregation over it (partition x class, computed once and kept);
:meth:`Comparison.samples` is one more small job (a top-k per class). Nothing but counts
and samples reaches the driver.

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

from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kaudit.reconcile.classes import CLASSES, RAW_VALUE, UNDECODABLE
from kaudit.reconcile.plan.append import _append_rows
from kaudit.reconcile.plan.columns import _t
from kaudit.reconcile.plan.coordinates import _coordinates_rows
from kaudit.reconcile.plan.model import (
    _MARKER,
    DISCREPANCY_COLUMNS,
    RESERVED_COLUMNS,
    CompareOptions,
)
from kaudit.reconcile.plan.upsert import _upsert_rows


@dataclass(frozen=True)
class Comparison:
    """The discrepancy set (lazy, persisted on first use) and its summaries.

    :meth:`counts`, :meth:`counts_by_partition`, :meth:`samples`, :meth:`topic_records` and
    :meth:`sink_rows` run Spark jobs; the first of them computes the whole plan (one pass
    over each side), the others read the persisted discrepancy set.
    """

    discrepancies: DataFrame
    _persisted: DataFrame = field(repr=False, compare=False)
    """The discrepancies plus the marker rows that carry the totals (see :func:`compare`)."""
    _memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def topic_records(self) -> int:
        """Topic records compared (tombstones not included)."""
        self._partition_counts()
        result: int = self._memo["topic_records"]
        return result

    def sink_rows(self) -> int:
        """Sink rows compared."""
        self._partition_counts()
        result: int = self._memo["sink_rows"]
        return result

    def _partition_counts(self) -> list[tuple[int | None, str, int]]:
        """(partition, class, rows) for every non-empty group: the one aggregation, which
        also sums the marker rows into the totals."""
        if "partition_counts" not in self._memo:
            rows = self._persisted.groupBy("partition", "class").agg(
                F.count(F.lit(1)).alias("n"), F.sum("topic_count").alias("t"),
                F.sum("sink_count").alias("s")).collect()
            markers = [row for row in rows if row["class"] == _MARKER]
            self._memo["topic_records"] = sum(int(row["t"] or 0) for row in markers)
            self._memo["sink_rows"] = sum(int(row["s"] or 0) for row in markers)
            self._memo["partition_counts"] = [
                (row["partition"], row["class"], int(row["n"])) for row in rows
                if row["class"] != _MARKER
            ]
        result: list[tuple[int | None, str, int]] = self._memo["partition_counts"]
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
        parts = [
            self.discrepancies.where(F.col("class") == cls).orderBy(*order).limit(per_class)
            for cls, n in self.counts().items()
            if n
        ]
        if parts:
            union = parts[0]
            for part in parts[1:]:
                union = union.unionAll(part)
            for row in union.collect():  # one job: a top-k per class over the persisted set
                result[row["class"]].append(row.asDict())
        return result

    def unpersist(self) -> None:
        """Drop the persisted discrepancy set (after the report is written)."""
        self._persisted.unpersist()


def compare(topic: DataFrame, sink: DataFrame, options: CompareOptions) -> Comparison:
    """Build the comparison plan of ``topic`` against ``sink``.

    Lazy: nothing runs until the :class:`Comparison` is asked for counts or samples (or the
    discrepancies are written). Raises :class:`ValueError` on a frame without a required
    column, a compared column with a reserved name, or an unknown mode.
    """
    _validate(topic, sink, options)
    for name in (UNDECODABLE, RAW_VALUE):
        if name not in topic.columns:
            topic = topic.withColumn(name, F.lit(None).cast("string"))
    classified = _classified(topic, sink, options)
    if options.mode == "append":
        rows = _append_rows(classified, topic, sink, options)
    elif options.mode == "upsert":
        rows = _upsert_rows(classified, topic, sink, options)
    else:
        rows = _coordinates_rows(classified, topic, sink, options)
    # inline_outer + filter, not inline: with inline, Spark infers a size(_rows) > 0 filter
    # and pushes it below the projection, computing every row's discrepancies twice.
    persisted = (
        rows.select(F.inline_outer(F.col("_rows")))
        .where(F.col("class").isNotNull())
        .select(*DISCREPANCY_COLUMNS)
        # The set is small (suspects and one marker per group of clean rows), but the big
        # shuffle left it in many partitions; the counts and samples that read it would
        # pay a task per partition, every time. One partition per core is plenty.
        .coalesce(max(1, topic.sparkSession.sparkContext.defaultParallelism))
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    return Comparison(persisted.where(F.col("class") != _MARKER), persisted)


# --- phase 1: the narrow summary that picks the suspects ------------------------------
#
# Both sides go into one frame (the topic's columns as struct _t, the sink's as _s, the
# other one null), shuffled ONCE on the group key (key_hash, or partition/offset in
# coordinates mode) and sorted within partitions; window aggregates over fixed-width
# columns (counts, payload hashes, a second key hash) decide per group whether it can hold
# a discrepancy at all (``_clean``). Then the detailed per-mode aggregation (the mode
# modules) groups the suspect groups' rows as before, and ALL clean rows of a Spark
# partition into ONE group that only counts them: its partial aggregation holds a handful
# of keys (no spill, no sort), and only the suspects' partial rows and one count row per
# partition cross the second, small exchange. Every group also emits one marker row with
# its topic-record and sink-row counts, so the totals come out of the same single pass.
# Window, not groupBy + join back: the join would read both sides again, and so would
# splitting the frame into a topic and a sink branch (each branch prunes other columns, so
# Spark cannot reuse one shuffle for both).

#: Offsets and partitions packed into one ordering long (upsert's latest record): offset
#: in the high bits, partition in the low 20. Records outside it are always suspects.
_ORD_PARTITION_BITS = 20
_ORD_MAX_OFFSET = 1 << (63 - _ORD_PARTITION_BITS)
#: The ``_side`` byte of a shuffled row.
_SIDE_SINK, _SIDE_RECORD, _SIDE_TOMBSTONE = 0, 1, 2


def _second_key_hash(key: Column) -> Column:
    """An independent 64-bit hash of the key (and its null flag): two keys that share a
    key_hash but not this one are told apart before anything is paired."""
    return F.xxhash64(F.lit("kaudit.reconcile.k2"), key, key.isNull())


def _classified(topic: DataFrame, sink: DataFrame, options: CompareOptions) -> DataFrame:
    """Both sides' rows (see above), each with ``_clean``: its group cannot hold a
    discrepancy."""
    coordinates = options.mode == "coordinates"
    tomb = F.coalesce(F.col("tombstone"), F.lit(False))
    offset, partition = F.col("offset").cast("long"), F.col("partition").cast("int")
    if coordinates:
        t_group = [partition.alias("_gp"), offset.alias("_go")]
        s_group = [F.col("partition").cast("int").alias("_gp"),
                   F.col("offset").cast("long").alias("_go")]
        group = ["_gp", "_go"]
    else:
        t_group = s_group = [F.col("key_hash").alias("_gk")]
        group = ["_gk"]
    # Only what the window and the detail need crosses the shuffle: the group key, one
    # side/tombstone byte, the payload hash and the key at the top level; in the side
    # structs only the compared values (and the topic record's coordinates, and its time
    # when --grace needs it). What can be derived from those (flags, the second key hash,
    # upsert's ordering) is derived after the shuffle: every byte a row carries is
    # written, compressed and read back for millions of rows.
    compared = list(options.compare)
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
        *t_group,
        F.when(tomb, F.lit(_SIDE_TOMBSTONE)).otherwise(F.lit(_SIDE_RECORD)).cast("byte")
        .alias("_side"),
        F.col("payload_hash").alias("_ph"),
        *([F.col("key_hash").alias("_kh")] if coordinates else []),
        F.col("key").alias("_key"),
        t_struct.alias("_t"),
        F.lit(None).cast(s_type).alias("_s"),
    )
    s_narrow = sink.select(
        *s_group,
        F.lit(_SIDE_SINK).cast("byte").alias("_side"),
        F.col("payload_hash").alias("_ph"),
        *([F.col("key_hash").alias("_kh")] if coordinates else []),
        F.col("key").alias("_key"),
        F.lit(None).cast(t_type).alias("_t"),
        s_struct.alias("_s"),
    )
    # The explicit repartition puts the exchange below the derived columns (the window
    # would otherwise have it inserted above them); the window needs no other.
    both = (t_narrow.unionByName(s_narrow).repartition(*[F.col(g) for g in group])
            .withColumn("_is_t", F.col("_side") != F.lit(_SIDE_SINK))
            .withColumn("_tomb", F.col("_side") == F.lit(_SIDE_TOMBSTONE))
            .withColumn("_k2", _second_key_hash(F.col("_key"))))
    if options.mode == "upsert":
        t_off, t_part = _t()["offset"], _t()["partition"]
        ord_ok = (t_off >= 0) & (t_off < _ORD_MAX_OFFSET) & (t_part >= 0) & (
            t_part < (1 << _ORD_PARTITION_BITS))
        both = both.withColumn("_ord", F.when(
            F.col("_is_t") & ord_ok, F.shiftleft(t_off, _ORD_PARTITION_BITS) + t_part))
    is_t, is_s = F.col("_is_t"), ~F.col("_is_t")
    live = is_t & ~F.col("_tomb")

    w = Window.partitionBy(*group)

    def count(cond: Column) -> Column:
        return F.sum(F.when(cond, F.lit(1)).otherwise(F.lit(0))).over(w)

    def top(cond: Column, name: str) -> Column:
        return F.max(F.when(cond, F.col(name))).over(w)

    ph, kh = "_ph", "_kh"
    one_key = F.min("_k2").over(w) == F.max("_k2").over(w)
    s_n = count(is_s)
    if options.mode == "append":
        t_n = count(live)
        clean = ((t_n == 1) & (s_n == 1) & (top(live, ph) == top(is_s, ph)) & one_key) | (
            (t_n == 0) & (s_n == 0))
    elif options.mode == "upsert":
        order = F.when(is_t, F.col("_ord"))
        latest_ph = F.max_by(F.when(is_t, F.col(ph)), order).over(w)
        latest_tomb = F.max_by(F.when(is_t, F.col("_tomb")), order).over(w)
        clean = one_key & (count(is_t) > 0) & (count(is_t & F.col("_ord").isNull()) == 0) & (
            (~latest_tomb & (s_n == 1) & (top(is_s, ph) == latest_ph))
            | (latest_tomb & (s_n == 0)))
    else:
        t_n, tombs = count(is_t), count(is_t & F.col("_tomb"))
        clean = ((t_n == 1) & (tombs == 0) & (s_n == 1) & (top(is_t, ph) == top(is_s, ph))
                 & (top(is_t, kh) == top(is_s, kh)) & one_key) | (
            (t_n == 1) & (tombs == 1) & (s_n == 0))
    return both.withColumn("_clean", F.coalesce(clean, F.lit(False)))


# --- validation -------------------------------------------------------------------------


def _validate(topic: DataFrame, sink: DataFrame, options: CompareOptions) -> None:
    if options.mode not in ("append", "upsert", "coordinates"):
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
    need_sink = ["key", "key_hash", "payload_hash", *compared]
    if options.mode == "coordinates":
        need_sink += ["partition", "offset"]
    for side, frame, needed in (("topic", topic, need_topic), ("sink", sink, need_sink)):
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            raise ValueError(f"the {side} frame has no column(s): {', '.join(missing)}")
