"""Topic records against sink rows: the comparison plan's input frames, options and classes.

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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kaudit.reconcile.modes import ModeName

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

Shuffle = Literal["values", "hashes"]


@dataclass(frozen=True)
class CompareOptions:
    """How to compare; see the module docstring for the meaning of each class.

    ``grace_cutoff`` is compared with the topic's ``timestamp`` column: give an aware
    datetime (a naive one is read in the Spark session's time zone).
    """

    mode: ModeName
    compare: tuple[str, ...]
    numeric_tolerance: float = 0.0
    timestamp_precision: Literal["us", "ms", "s"] = "us"
    grace_cutoff: datetime | None = None
    source_truncated: bool = False
    partition_starts: Mapping[int, int] | None = None
    """With ``source_truncated`` in coordinates mode: the first offset read per partition
    (the pinned range's start). Without it, the smallest offset the topic frame has in each
    partition, which costs a second read of the topic frame."""
    shuffle_partitions: int | None = None
    """Partitions of the one shuffle of both sides (None: the session's
    ``spark.sql.shuffle.partitions``). The other shuffles, all small, use the session's."""
    display_scales: Mapping[str, int] | None = None
    """Per decimal column, the decimal places its samples keep at least (the sink column's
    scale: ``12.50``); beyond them, only the digits a value has (``12.505``, never the
    zeros a wider comparison type adds). Without it, the column's own scale."""
    shuffle: Shuffle = "values"
    """What the one shuffle of both sides carries besides keys and hashes: ``values``, every
    row's compared values (the suspects' detail then reads them from that shuffle again);
    ``hashes``, none of them (the suspects' rows are then read again from both sides and
    only they are shuffled with their values): a smaller shuffle for one more read of
    each side (:mod:`kaudit.reconcile.plan.comparison`, "Scale")."""


def key_hash_column(key_col: Column) -> Column:
    """The 64-bit hash of the key string that both sides are joined on (xxhash64)."""
    return F.xxhash64(key_col)


def payload_hash_column(cols: Sequence[str], typed: bool = False) -> Column:
    """A null-safe 64-bit hash of the compared fields (a constant when there are none).

    Each field contributes its null flag and its string form, so ``(null, 1)`` and
    ``(1, null)`` hash differently, and an int and a long (or a string) with the same
    digits hash alike. With ``typed``, each field contributes its value as it is typed
    instead: no value is turned into text (a double's text is costly), but both sides must
    then have the same column types (the run aligns them before it hashes).
    """
    parts: list[Column] = []
    for name in cols:
        col = F.col(name)
        parts.extend([col.isNull(), col if typed else col.cast("string")])
    if not parts:
        return F.lit(0).cast("long")
    return F.xxhash64(*parts)
