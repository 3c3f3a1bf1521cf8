"""The comparison plan of ``kaudit reconcile``: topic records against sink rows.

Input frames (built by the source and sink readers):

- topic: ``partition`` int, ``offset`` long, ``key`` string (display form of the business
  key, composite keys joined with ``|``), ``key_hash`` long (:func:`key_hash_column` of the
  key), ``tombstone`` boolean (null value in Kafka; null counts as false), ``timestamp``
  (Kafka record time), one column per compared field, ``payload_hash`` long
  (:func:`payload_hash_column` of the compared fields); optionally ``_undecodable`` and
  ``_raw_value`` (see ``undecodable`` below; absent means every record decoded).
- sink: ``key``, ``key_hash``, the compared columns (already renamed to the topic-side
  names), ``payload_hash``; in ``coordinates`` mode also ``partition`` and ``offset`` (the
  Kafka coordinates the sink stored). The sink frame should hold only rows the topic range
  can account for (in coordinates mode: offsets inside the pinned range, or below its start
  when the range was cut by retention); rows outside it are reported as extra.

Both sides must hash with the same helpers: :func:`key_hash_column` (xxhash64 of the key
string; a null key hashes to 42, the seed) and :func:`payload_hash_column` (xxhash64 over
every compared field's null flag and string form: two payloads hash alike when each field is
null on both sides or has the same string form on both sides).

What each class means
=====================

Every discrepancy is one row of :attr:`Comparison.discrepancies` with the columns ``class``,
``key``, ``key_hash``, ``partition`` and ``offset`` (the topic record concerned, where one is
known), ``topic_count`` and ``sink_count`` (how many topic records and sink rows the key, or
the coordinates, has), and for ``mismatched`` rows ``column``, ``topic_value`` and
``sink_value`` (as strings). Nothing is paired off silently: a duplicate is a result, and
every missing record is named with its partition and offset.

``--mode append`` (both sides are multisets of keys; tombstones are not records to append
and are ignored on the topic side). Per key, t = topic records, s = sink rows:

``missing_in_sink``
    one row per topic record that has no sink row. When s = 0 every record of the key is
    missing. When 0 < s < t, the sink holds s of the key's t records and the t - s records
    with the HIGHEST offsets (ordered by offset, then partition) are the ones reported
    missing: kaudit cannot tell which copy a sink row came from, so it assumes the sink
    kept the oldest ones.
``extra_in_sink``
    t = 0 and s > 0: one row per key, with sink_count = s (no partition/offset).
``duplicated_in_sink``
    s > t > 0: one row per key, with both counts (partition/offset = the key's latest topic
    record).
``duplicated_in_topic``
    t > 1: one row per key, informational: the topic itself carries the key several times
    (producer retries without idempotence, replays). Reported together with whatever else
    applies to the key.
``mismatched``
    t > 0 and s > 0, and NO sink row of the key has a payload hash equal to ANY of its topic
    records' (when one copy arrived intact, the counts above tell the rest). The topic record
    compared is the latest one that is not reported missing (the min(s, t)-th by offset:
    the latest record when s >= t); the sink row compared is the key's row with the smallest
    payload hash (an arbitrary but repeatable choice). One row per compared column whose
    values differ (rules below); none when they all compare equal (hashes can differ when
    only the types, the precision or tolerable amounts differ).

``--mode upsert`` (per key, the latest topic record, highest offset with partition as the
tiebreak, is the truth):

``missing_in_sink``
    the latest record is a value (not a tombstone) and the sink has no row for the key; the
    row carries that record's partition/offset.
``extra_in_sink``
    the latest record is a tombstone and the sink still has the key (topic_value
    ``tombstoned``, with the tombstone's partition/offset), or the sink has a key the topic
    range does not have at all (no partition/offset). Either way one row per key with
    sink_count; such a key is not also reported as duplicated.
``duplicated_in_sink``
    the key should be there (latest record is a value) and the sink has it more than once.
``duplicated_in_topic``
    always 0: keys repeat in an upsert topic by design.
``mismatched``
    the latest record against the sink row, per compared column, unless one of the key's
    sink rows has the latest record's payload hash; the row compared is the one with the
    smallest payload hash.

In upsert mode topic_count is the number of topic records the key has (tombstones included).

``--mode coordinates`` (the sink stores the Kafka partition and offset of each record, as
Kafka Connect's sinks do; an exact per-record trace, joined on partition and offset):

``missing_in_sink``
    a topic record (not a tombstone) with no sink row at its coordinates.
``extra_in_sink``
    sink rows at coordinates the topic frame does not have (one row per coordinates, with
    sink_count), or at the coordinates of a tombstone (topic_value ``tombstoned``).
``duplicated_in_sink``
    several sink rows at the coordinates of one topic record.
``duplicated_in_topic``
    always 0.
``mismatched``
    the record against the sink row at its coordinates, per compared column, as in upsert
    mode; and, in this mode only, the key itself (``column`` = ``key``) when the sink row
    stores another key than the record's (null-safe).

Every mode:

``undecodable``
    a topic record whose value could not be decoded: ``_undecodable`` names the field that
    did not convert ("" for a value that is not a JSON object; ``column`` shows it, null for
    the whole value) and ``_raw_value`` holds the start of the raw value (``topic_value``).
    The job gives such a record a payload hash that matches nothing and, when its key could
    not be read, a null key and a key_hash of its own. It is never reported as
    ``mismatched``, nor as ``missing_in_sink`` when its key could not be read (a record
    with a readable key and no sink row is still missing). In upsert mode only the latest
    record of a key is judged, so only a latest record is reported undecodable.
``pending``
    a record that would be ``missing_in_sink`` but whose Kafka timestamp is after
    ``grace_cutoff`` (now minus ``--grace``): the sink may still be catching up. Only missing
    records become pending; an old version still in an upsert sink stays ``mismatched``.
``unverifiable``
    with ``source_truncated`` (the range lost records to retention): instead of
    ``extra_in_sink``, a sink key that has no topic record at all (append, upsert), or a sink
    row whose offset is below the smallest offset the topic frame has in that partition, or
    in a partition the topic frame has no record of (coordinates). The record it came from
    may simply be gone from the log. Duplicates (s > t > 0) are still reported as such.

Comparing a column (mismatched), null-safe: null and null are equal, null and a value
differ. Numbers (any numeric types, both sides) are equal when ``a == b`` or, with a
``numeric_tolerance`` above 0, when ``|a - b| <= tolerance`` (computed in double). Timestamps
and dates are truncated on both sides to ``timestamp_precision`` (``us`` keeps them as they
are; ``ms``, ``s``) before comparing. When one side is a string and the other a number,
timestamp, date or boolean, the string is converted (``try_cast``) and a string that does
not convert differs. Other types are compared natively when they are alike, by their string
forms otherwise. Values are shown with their string forms, as they were before truncation.

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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kaudit.reconcile.classes import CLASSES, RAW_VALUE, UNDECODABLE

Mode = Literal["append", "upsert", "coordinates"]

#: The columns of :attr:`Comparison.discrepancies`, in order.
DISCREPANCY_SCHEMA = T.StructType(
    [
        T.StructField("class", T.StringType(), True),  # never null; Spark cannot tell
        T.StructField("key", T.StringType(), True),
        T.StructField("key_hash", T.LongType(), True),
        T.StructField("partition", T.IntegerType(), True),
        T.StructField("offset", T.LongType(), True),
        T.StructField("topic_count", T.LongType(), True),
        T.StructField("sink_count", T.LongType(), True),
        T.StructField("column", T.StringType(), True),
        T.StructField("topic_value", T.StringType(), True),
        T.StructField("sink_value", T.StringType(), True),
    ]
)
DISCREPANCY_COLUMNS: tuple[str, ...] = tuple(f.name for f in DISCREPANCY_SCHEMA.fields)

#: Topic-frame columns that cannot also be compared payload fields (rename those fields).
RESERVED_COLUMNS: frozenset[str] = frozenset(
    {"partition", "offset", "key", "key_hash", "tombstone", "timestamp", "payload_hash",
     "_undecodable", "_raw_value"}
)

_MARKER = "__kaudit_marker__"
_TRUNC_UNIT = {"ms": "millisecond", "s": "second"}
_TOMBSTONED = "tombstoned"


@dataclass(frozen=True)
class CompareOptions:
    """How to compare; see the module docstring for the meaning of each class.

    ``grace_cutoff`` is compared with the topic's ``timestamp`` column: give an aware
    datetime (a naive one is read in the Spark session's time zone).
    """

    mode: Mode
    compare: tuple[str, ...]
    numeric_tolerance: float = 0.0
    timestamp_precision: Literal["us", "ms", "s"] = "us"
    grace_cutoff: datetime | None = None
    source_truncated: bool = False
    partition_starts: Mapping[int, int] | None = None
    """With ``source_truncated`` in coordinates mode: the first offset read per partition
    (the pinned range's start). Without it, the smallest offset the topic frame has in each
    partition, which costs a second read of the topic frame."""


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


def key_hash_column(key_col: Column) -> Column:
    """The 64-bit hash of the key string that both sides are joined on (xxhash64)."""
    return F.xxhash64(key_col)


def payload_hash_column(cols: Sequence[str]) -> Column:
    """A null-safe 64-bit hash of the compared fields (a constant when there are none).

    Each field contributes its null flag and its string form, so ``(null, 1)`` and
    ``(1, null)`` hash differently, and an int and a long (or a string) with the same
    digits hash alike.
    """
    parts: list[Column] = []
    for name in cols:
        col = F.col(name)
        parts.extend([col.isNull(), col.cast("string")])
    if not parts:
        return F.lit(0).cast("long")
    return F.xxhash64(*parts)


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
# columns (counts, payload hashes, a second key hash) decide per group whether it can
# hold a discrepancy at all (``_clean``). Then the detailed per-mode aggregation below
# groups the suspect groups' rows as before, and ALL clean rows of a Spark partition into
# ONE group that only counts them: its partial aggregation holds a handful of keys (no
# spill, no sort), and only the suspects' partial rows and one count row per partition
# cross the second, small exchange. Every group also emits one marker row with its
# topic-record and sink-row counts, so the totals come out of the same single pass.
# Window, not groupBy + join back: the join would read both sides again, and so would
# splitting the frame into a topic and a sink branch (each branch prunes other columns,
# so Spark cannot reuse one shuffle for both).

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


# --- building blocks --------------------------------------------------------------------

# The detailed plans group the suspects' rows (both sides in one frame, see _suspects) by
# key_hash and the key itself, so that colliding keys are never paired: the key (null as
# '') and whether it was null.
_GROUP = ["_gk", "_k", "_kn"]


def _t() -> Column:
    """The topic record's columns (a struct; null on sink rows)."""
    return F.col("_t")


def _s() -> Column:
    """The sink row's columns (a struct; null on topic records)."""
    return F.col("_s")


def _record_time(options: CompareOptions) -> Column:
    """The topic record's Kafka time; only shuffled (and needed) with a grace cutoff."""
    if options.grace_cutoff is None:
        return F.lit(None).cast("timestamp")
    return _t()["timestamp"]


def _is_t() -> Column:
    return F.col("_is_t")


def _is_s() -> Column:
    return ~F.col("_is_t")


def _suspect() -> Column:
    return ~F.col("_clean")


def _detail_groups(names: Sequence[str]) -> list[Column]:
    """Group keys that keep suspect groups apart and put all clean rows in one group."""
    return [F.col("_clean"), *[F.when(_suspect(), F.col(n)).alias(n) for n in names]]


def _with_marker(rows: Column) -> Column:
    """The group's discrepancy rows (none for the clean group) plus its marker row, which
    carries the group's live topic records and sink rows for the totals."""
    none = F.lit(None)
    marker = _row(_MARKER, none, none, None, None, F.col("_live_n"), F.col("_s_rows"))
    return F.when(F.col("_clean"), F.array(marker)).otherwise(
        F.concat(rows, F.array(marker)))


def _totals_aggs() -> list[Column]:
    return [F.count_if(_is_t() & ~F.col("_tomb")).alias("_live_n"),
            F.count_if(_is_s()).alias("_s_rows")]


def _with_group_key(frame: DataFrame) -> DataFrame:
    """Add the non-null group keys: the key (null as '') and whether it was null."""
    return frame.withColumn("_k", F.coalesce(F.col("_key"), F.lit(""))).withColumn(
        "_kn", F.col("_key").isNull()
    )


def _group_key_display() -> Column:
    return F.when(F.col("_kn"), F.lit(None).cast("string")).otherwise(F.col("_k"))


def _payload_fields(side: Column, compared: Sequence[str]) -> list[Column]:
    """One side's compared columns under positional struct field names (c0, c1, ...)."""
    return [side[name].alias(f"c{i}") for i, name in enumerate(compared)]


def _sink_aggs(compared: Sequence[str], with_key: bool = False) -> list[Column]:
    """Per group, over its sink rows: how many, their distinct payload hashes, and the row
    with the smallest hash (null when the group has no sink row)."""
    fields = _payload_fields(_s(), compared)
    if with_key:
        fields += [F.col("_key").alias("key"), F.col("_kh").alias("key_hash")]
    row = F.struct(F.col("_ph").alias("ph"), *fields)
    mine = _is_s() & _suspect()  # the clean group keeps no values
    ph = F.when(mine, F.col("_ph"))
    return [
        F.count_if(_is_s()).alias("s_n"),
        F.collect_set(ph).alias("s_hashes"),
        F.min_by(F.when(mine, row), ph).alias("s_row"),
        *_totals_aggs(),
    ]


def _row(
    cls: Column | str,
    key: Column,
    key_hash: Column,
    partition: Column | None,
    offset: Column | None,
    topic_count: Column | int,
    sink_count: Column | int,
    column: Column | str | None = None,
    topic_value: Column | str | None = None,
    sink_value: Column | str | None = None,
) -> Column:
    """One discrepancy as a struct of :data:`DISCREPANCY_SCHEMA`."""
    values: list[Column | str | int | None] = [
        cls, key, key_hash, partition, offset, topic_count, sink_count, column, topic_value,
        sink_value,
    ]
    parts = []
    for value, spec in zip(values, DISCREPANCY_SCHEMA.fields, strict=True):
        col = value if isinstance(value, Column) else F.lit(value)
        parts.append(col.cast(spec.dataType).alias(spec.name))
    return F.struct(*parts)


def _present(*candidates: Column) -> Column:
    """An array of the candidate rows that are not null (each is a when(cond, row))."""
    return F.filter(F.array(*candidates), lambda r: r.isNotNull())


def _missing_class(timestamp: Column, options: CompareOptions) -> Column:
    if options.grace_cutoff is None:
        return F.lit("missing_in_sink")
    return F.when(timestamp > F.lit(options.grace_cutoff), F.lit("pending")).otherwise(
        F.lit("missing_in_sink")
    )


def _unmatched_sink_class(options: CompareOptions,
                          below_start: Column | None = None) -> Column:
    if not options.source_truncated:
        return F.lit("extra_in_sink")
    if below_start is None:
        return F.lit("unverifiable")
    return F.when(below_start, F.lit("unverifiable")).otherwise(F.lit("extra_in_sink"))


def _undecodable_fields() -> list[Column]:
    """The topic record's undecodable field and raw value, for the per-mode record structs."""
    return [_t()[UNDECODABLE].alias("u"), _t()[RAW_VALUE].alias("raw")]


def _undecodable(rec: Column) -> Column:
    """The record could not be decoded (see the module docstring)."""
    return rec["u"].isNotNull()


def _key_unread(rec: Column, key: Column) -> Column:
    """The record's key could not be decoded: it has a group of its own and no key."""
    return rec["u"].isNotNull() & key.isNull()


def _undecodable_row(rec: Column, key: Column, key_hash: Column, partition: Column,
                     offset: Column, t_n: Column, s_n: Column) -> Column:
    return _row("undecodable", key, key_hash, partition, offset, t_n, s_n,
                F.nullif(rec["u"], F.lit("")), rec["raw"])


_NUMERIC = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType,
            T.DecimalType)
_TEMPORAL = (T.TimestampType, T.TimestampNTZType, T.DateType)
_CASTABLE_FROM_STRING = (*_NUMERIC, *_TEMPORAL, T.BooleanType)


def _values_equal(tv: Column, sv: Column, tt: T.DataType, st: T.DataType,
                  options: CompareOptions) -> Column:
    """Null-safe equality of one compared field, with tolerance and precision; never null."""
    t_cmp, s_cmp, kind_t, kind_s = tv, sv, tt, st
    if isinstance(st, T.StringType) and isinstance(tt, _CASTABLE_FROM_STRING):
        s_cmp, kind_s = sv.try_cast(tt), tt
    elif isinstance(tt, T.StringType) and isinstance(st, _CASTABLE_FROM_STRING):
        t_cmp, kind_t = tv.try_cast(st), st
    if isinstance(kind_t, _NUMERIC) and isinstance(kind_s, _NUMERIC):
        equal = t_cmp == s_cmp
        if options.numeric_tolerance > 0:
            diff = F.abs(t_cmp.cast("double") - s_cmp.cast("double"))
            equal = equal | (diff <= F.lit(float(options.numeric_tolerance)))
    elif isinstance(kind_t, _TEMPORAL) and isinstance(kind_s, _TEMPORAL):
        unit = _TRUNC_UNIT.get(options.timestamp_precision)
        if unit is not None:
            t_cmp, s_cmp = F.date_trunc(unit, t_cmp), F.date_trunc(unit, s_cmp)
        equal = t_cmp == s_cmp
    elif kind_t == kind_s and not isinstance(kind_t, T.MapType):
        equal = t_cmp == s_cmp
    else:
        equal = t_cmp.cast("string") == s_cmp.cast("string")
    return (
        F.when(tv.isNull() & sv.isNull(), F.lit(True))
        .when(tv.isNull() | sv.isNull(), F.lit(False))
        .otherwise(F.coalesce(equal, F.lit(False)))
    )


def _mismatch_rows(
    when: Column,
    topic_rec: Column,
    sink_rec: Column,
    topic: DataFrame,
    sink: DataFrame,
    options: CompareOptions,
    ident: Callable[[str, Column, Column], Column],
) -> list[Column]:
    """One candidate row per compared column: present when ``when`` and the values differ.

    ``topic_rec`` / ``sink_rec`` are structs with the compared values as c0, c1, ...;
    ``ident(column_name, topic_value, sink_value)`` builds the row.
    """
    out = []
    for i, name in enumerate(options.compare):
        tv, sv = topic_rec[f"c{i}"], sink_rec[f"c{i}"]
        equal = _values_equal(tv, sv, topic.schema[name].dataType, sink.schema[name].dataType,
                              options)
        row = ident(name, tv.cast("string"), sv.cast("string"))
        out.append(F.when(when & ~equal, row))
    return out


def _by_offset(left: Column, right: Column) -> Column:
    """Comparator: ascending offset, then partition."""
    return (
        F.when(left["offset"] < right["offset"], F.lit(-1))
        .when(left["offset"] > right["offset"], F.lit(1))
        .when(left["partition"] < right["partition"], F.lit(-1))
        .when(left["partition"] > right["partition"], F.lit(1))
        .otherwise(F.lit(0))
    )


# --- append -----------------------------------------------------------------------------
#
# Each mode first selects, per joined row, the values used several times (sorted lists,
# picked records, the "compare the columns" condition) as columns of their own, so that they
# are computed once per key; then builds the array of discrepancy rows from them.


def _append_rows(suspects: DataFrame, topic: DataFrame, sink: DataFrame,
                 options: CompareOptions) -> DataFrame:
    compared = options.compare
    rec = F.struct(
        _t()["offset"].cast("long").alias("offset"),
        _t()["partition"].cast("int").alias("partition"),
        _record_time(options).alias("ts"),
        F.col("_ph").alias("ph"),
        *_undecodable_fields(),
        *_payload_fields(_t(), compared),
    )
    live = _is_t() & ~F.col("_tomb")  # tombstones are not records to append
    joined = _with_group_key(suspects).groupBy(*_detail_groups(_GROUP)).agg(
        F.count_if(live).alias("t_n"),
        F.collect_list(F.when(live & _suspect(), rec)).alias("t_recs"),
        *_sink_aggs(compared),
    )

    staged = (
        joined.select(
            F.col("_clean"), F.col("_live_n"), F.col("_s_rows"),
            F.col("_gk").alias("key_hash"),
            _group_key_display().alias("key"),
            F.coalesce(F.col("t_n"), F.lit(0).cast("long")).alias("t_n"),
            F.coalesce(F.col("s_n"), F.lit(0).cast("long")).alias("s_n"),
            F.array_sort(F.coalesce(F.col("t_recs"), F.array()), _by_offset).alias("recs"),
            F.col("s_hashes"),
            F.col("s_row"),
        )
        .withColumn("latest", F.try_element_at(F.col("recs"), F.lit(-1)))
        .withColumn("compared", F.when(
            F.least("s_n", "t_n") > 0,  # element_at(_, 0) fails even as try_element_at
            F.try_element_at(F.col("recs"), F.least("s_n", "t_n").cast("int"))))
        .withColumn(
            "check",
            (F.col("t_n") > 0) & (F.col("s_n") > 0)
            & ~F.coalesce(_undecodable(F.col("compared")), F.lit(False)) & ~F.coalesce(
                F.arrays_overlap(F.transform(F.col("recs"), lambda r: r["ph"]),
                                 F.col("s_hashes")),
                F.lit(False),
            ),
        )
    )
    t_n, s_n, recs = F.col("t_n"), F.col("s_n"), F.col("recs")
    key, key_hash = F.col("key"), F.col("key_hash")
    latest, compared_rec = F.col("latest"), F.col("compared")

    missing = F.transform(
        F.filter(recs, lambda r, i: (i >= s_n) & ~_key_unread(r, key)),
        lambda r: _row(_missing_class(r["ts"], options), key, key_hash, r["partition"],
                       r["offset"], t_n, s_n),
    )
    undecodable = F.transform(
        F.filter(recs, _undecodable),
        lambda r: _undecodable_row(r, key, key_hash, r["partition"], r["offset"], t_n, s_n),
    )

    def ident(name: str, tv: Column, sv: Column) -> Column:
        return _row("mismatched", key, key_hash, compared_rec["partition"],
                    compared_rec["offset"], t_n, s_n, name, tv, sv)

    singles = _present(
        F.when((t_n == 0) & (s_n > 0),
               _row(_unmatched_sink_class(options), key, key_hash, None, None, t_n, s_n)),
        F.when((s_n > t_n) & (t_n > 0),
               _row("duplicated_in_sink", key, key_hash, latest["partition"],
                    latest["offset"], t_n, s_n)),
        F.when(t_n > 1,
               _row("duplicated_in_topic", key, key_hash, latest["partition"],
                    latest["offset"], t_n, s_n)),
        *_mismatch_rows(F.col("check"), compared_rec, F.col("s_row"), topic, sink, options,
                        ident),
    )
    return staged.select(_with_marker(F.concat(missing, undecodable, singles)).alias("_rows"))


# --- upsert -----------------------------------------------------------------------------


def _upsert_rows(suspects: DataFrame, topic: DataFrame, sink: DataFrame,
                 options: CompareOptions) -> DataFrame:
    compared = options.compare
    rec = F.struct(
        _t()["offset"].cast("long").alias("offset"),
        _t()["partition"].cast("int").alias("partition"),
        _record_time(options).alias("ts"),
        F.col("_tomb").alias("tomb"),
        F.col("_ph").alias("ph"),
        *_undecodable_fields(),
        *_payload_fields(_t(), compared),
    )
    order = F.struct(_t()["offset"].cast("long"), _t()["partition"].cast("int"))
    mine = _is_t() & _suspect()
    joined = _with_group_key(suspects).groupBy(*_detail_groups(_GROUP)).agg(
        F.count_if(_is_t()).alias("t_n"),
        F.max_by(F.when(mine, rec), F.when(mine, order)).alias("latest"),
        *_sink_aggs(compared),
    )

    latest = F.col("latest")
    staged = joined.select(
        F.col("_clean"), F.col("_live_n"), F.col("_s_rows"),
        F.col("_gk").alias("key_hash"),
        _group_key_display().alias("key"),
        F.coalesce(F.col("t_n"), F.lit(0).cast("long")).alias("t_n"),
        F.coalesce(F.col("s_n"), F.lit(0).cast("long")).alias("s_n"),
        latest,
        F.col("s_row"),
        F.coalesce(F.exists(F.col("s_hashes"), lambda h: h == latest["ph"]),
                   F.lit(False)).alias("sink_has_latest"),
    ).withColumn(
        "check",
        latest.isNotNull() & ~latest["tomb"] & (F.col("s_n") > 0) & ~F.col("sink_has_latest")
        & ~_undecodable(latest),
    )
    t_n, s_n = F.col("t_n"), F.col("s_n")
    key, key_hash = F.col("key"), F.col("key_hash")
    has_topic = latest.isNotNull()
    value = has_topic & ~latest["tomb"]
    tombstoned = has_topic & latest["tomb"]

    def ident(name: str, tv: Column, sv: Column) -> Column:
        return _row("mismatched", key, key_hash, latest["partition"], latest["offset"], t_n,
                    s_n, name, tv, sv)

    rows = _present(
        F.when(value & (s_n == 0) & ~_key_unread(latest, key),
               _row(_missing_class(latest["ts"], options), key, key_hash,
                    latest["partition"], latest["offset"], t_n, s_n)),
        F.when(value & _undecodable(latest),
               _undecodable_row(latest, key, key_hash, latest["partition"], latest["offset"],
                                t_n, s_n)),
        F.when(tombstoned & (s_n > 0),
               _row("extra_in_sink", key, key_hash, latest["partition"], latest["offset"],
                    t_n, s_n, None, _TOMBSTONED)),
        F.when(~has_topic & (s_n > 0),
               _row(_unmatched_sink_class(options), key, key_hash, None, None, t_n, s_n)),
        F.when(value & (s_n > 1),
               _row("duplicated_in_sink", key, key_hash, latest["partition"],
                    latest["offset"], t_n, s_n)),
        *_mismatch_rows(F.col("check"), latest, F.col("s_row"), topic, sink, options, ident),
    )
    return staged.select(_with_marker(rows).alias("_rows"))


# --- coordinates ------------------------------------------------------------------------


def _coordinates_rows(suspects: DataFrame, topic: DataFrame, sink: DataFrame,
                      options: CompareOptions) -> DataFrame:
    compared = options.compare
    record = F.struct(
        F.col("_key").alias("key"),
        F.col("_kh").alias("key_hash"),
        _record_time(options).alias("ts"),
        F.col("_tomb").alias("tomb"),
        F.col("_ph").alias("ph"),
        *_undecodable_fields(),
        *_payload_fields(_t(), compared),
    )
    # A topic has one record per coordinates: the group's topic record, if any.
    joined = suspects.groupBy(*_detail_groups(["_gp", "_go"])).agg(
        F.first(F.when(_is_t() & _suspect(), record), ignorenulls=True).alias("t"),
        *_sink_aggs(compared, with_key=True),
    )

    joined = joined.withColumnRenamed("_gp", "partition").withColumnRenamed("_go", "offset")
    below_start: Column | None = None
    if options.source_truncated:
        # The suspects are not the whole range: the starts come from the options or the
        # whole topic frame.
        if options.partition_starts is not None:
            start: Column = F.lit(None).cast("long")
            for part, first in options.partition_starts.items():
                start = F.when(F.col("partition") == part, F.lit(first).cast("long")
                               ).otherwise(start)
            joined = joined.withColumn("_start", start)
        else:
            starts = topic.groupBy(
                F.col("partition").cast("int").alias("partition")).agg(
                F.min(F.col("offset").cast("long")).alias("_start"))
            joined = joined.join(F.broadcast(starts), on="partition", how="left")
        below_start = F.col("_start").isNull() | (F.col("offset") < F.col("_start"))

    t, s_row = F.col("t"), F.col("s_row")
    has_topic = t.isNotNull()
    staged = joined.select(
        F.col("_clean"), F.col("_live_n"), F.col("_s_rows"),
        F.col("partition"),
        F.col("offset"),
        t,
        s_row,
        F.when(has_topic, F.lit(1)).otherwise(F.lit(0)).cast("long").alias("t_n"),
        F.coalesce(F.col("s_n"), F.lit(0).cast("long")).alias("s_n"),
        F.when(has_topic, t["key"]).otherwise(s_row["key"]).alias("key"),
        F.when(has_topic, t["key_hash"]).otherwise(s_row["key_hash"]).alias("key_hash"),
        F.coalesce(F.exists(F.col("s_hashes"), lambda h: h == t["ph"]),
                   F.lit(False)).alias("sink_has_it"),
        (below_start if below_start is not None else F.lit(False)).alias("below_start"),
    ).withColumn(
        "check", has_topic & ~t["tomb"] & (F.col("s_n") > 0) & ~F.col("sink_has_it")
        & ~_undecodable(t)
    )
    t_n, s_n = F.col("t_n"), F.col("s_n")
    key, key_hash = F.col("key"), F.col("key_hash")
    value = has_topic & ~t["tomb"]
    tombstoned = has_topic & t["tomb"]
    partition, offset = F.col("partition"), F.col("offset")

    def ident(name: str, tv: Column, sv: Column) -> Column:
        return _row("mismatched", key, key_hash, partition, offset, t_n, s_n, name, tv, sv)

    rows = _present(
        F.when(value & (s_n == 0) & ~_key_unread(t, key),
               _row(_missing_class(t["ts"], options), key, key_hash, partition, offset, t_n,
                    s_n)),
        F.when(value & _undecodable(t),
               _undecodable_row(t, key, key_hash, partition, offset, t_n, s_n)),
        F.when(tombstoned & (s_n > 0),
               _row("extra_in_sink", key, key_hash, partition, offset, t_n, s_n, None,
                    _TOMBSTONED)),
        F.when(~has_topic & (s_n > 0),
               _row(_unmatched_sink_class(options, F.col("below_start")), key, key_hash,
                    partition, offset, t_n, s_n)),
        F.when(value & (s_n > 1),
               _row("duplicated_in_sink", key, key_hash, partition, offset, t_n, s_n)),
        F.when(value & (s_n > 0) & ~_undecodable(t) & ~t["key"].eqNullSafe(s_row["key"]),
               ident("key", t["key"], s_row["key"])),
        *_mismatch_rows(F.col("check"), t, s_row, topic, sink, options, ident),
    )
    return staged.select(_with_marker(rows).alias("_rows"))
