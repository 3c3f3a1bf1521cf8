"""The column expressions every mode builds its discrepancy rows from.

The shuffled row's topic and sink structs, the detail's group keys and sink aggregates,
one discrepancy row (:func:`discrepancy`), the classes that depend on the options, the
undecodable record's fields, and the null-safe comparison of one compared field
(:func:`_values_equal`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kaudit.reconcile.classes import RAW_VALUE, UNDECODABLE
from kaudit.reconcile.plan.model import DISCREPANCY_SCHEMA, CompareOptions

_TRUNC_UNIT = {"ms": "millisecond", "s": "second"}
TOMBSTONED = "tombstoned"


# --- building blocks --------------------------------------------------------------------

# The detailed plans of the modes keyed by key group the suspects' rows (both sides in one
# frame, see sides.sides) by key_hash and the key itself, so that colliding keys
# are never paired: the key (null as '') and whether it was null.
KEY_GROUP = ["_gk", "_k", "_kn"]


def topic_struct() -> Column:
    """The topic record's columns (a struct; null on sink rows)."""
    return F.col("_t")


def sink_struct() -> Column:
    """The sink row's columns (a struct; null on topic records)."""
    return F.col("_s")


def record_time(options: CompareOptions) -> Column:
    """The topic record's Kafka time; only shuffled (and needed) with a grace cutoff."""
    if options.grace_cutoff is None:
        return F.lit(None).cast("timestamp")
    return topic_struct()["timestamp"]


def is_topic() -> Column:
    return F.col("_is_t")


def is_sink() -> Column:
    return ~F.col("_is_t")


def is_live() -> Column:
    """A topic record that is not a tombstone."""
    return is_topic() & ~F.col("_tomb")


def largest(where: Column, name: str) -> Column:
    """The largest value of column ``name`` over the group's rows where ``where`` holds."""
    return F.max(F.when(where, F.col(name)))


def topic_record(options: CompareOptions, *leading: Column, tomb: bool = True) -> Column:
    """The topic record as every mode's detail keeps it: ``leading`` (its coordinates, or
    its key), its time (ts), whether it is a tombstone (tomb, unless ``tomb`` is false),
    its payload hash (ph), why it could not be decoded (u, raw) and its compared values
    (c0, c1, ...)."""
    return F.struct(
        *leading,
        record_time(options).alias("ts"),
        *([F.col("_tomb").alias("tomb")] if tomb else []),
        F.col("_ph").alias("ph"),
        *undecodable_fields(),
        *payload_fields(topic_struct(), options.compare),
    )


def with_key_group(frame: DataFrame) -> DataFrame:
    """Add the non-null group keys: the key (null as '') and whether it was null."""
    return frame.withColumn("_k", F.coalesce(F.col("_key"), F.lit(""))).withColumn(
        "_kn", F.col("_key").isNull()
    )


def group_key() -> Column:
    return F.when(F.col("_kn"), F.lit(None).cast("string")).otherwise(F.col("_k"))


def per_key(suspects: DataFrame, options: CompareOptions, *aggregates: Column) -> DataFrame:
    """The suspects' rows aggregated per key (:data:`KEY_GROUP`): ``aggregates`` over its
    topic records, then :func:`sink_aggregates` over its sink rows."""
    return with_key_group(suspects).groupBy(*KEY_GROUP).agg(
        *aggregates, *sink_aggregates(options.compare))


def key_and_counts() -> list[Column]:
    """A :func:`per_key` group's key_hash, key, and its topic records and sink rows (t_n,
    s_n; 0 where it has none)."""
    return [
        F.col("_gk").alias("key_hash"),
        group_key().alias("key"),
        F.coalesce(F.col("t_n"), F.lit(0).cast("long")).alias("t_n"),
        F.coalesce(F.col("s_n"), F.lit(0).cast("long")).alias("s_n"),
    ]


def payload_fields(side: Column, compared: Sequence[str]) -> list[Column]:
    """One side's compared columns under positional struct field names (c0, c1, ...)."""
    return [side[name].alias(f"c{i}") for i, name in enumerate(compared)]


def sink_aggregates(compared: Sequence[str], with_key: bool = False) -> list[Column]:
    """Per group, over its sink rows: how many, their distinct payload hashes, and the row
    with the smallest hash (null when the group has no sink row)."""
    fields = payload_fields(sink_struct(), compared)
    if with_key:
        fields += [F.col("_key").alias("key"), F.col("_kh").alias("key_hash")]
    row = F.struct(F.col("_ph").alias("ph"), *fields)
    ph = F.when(is_sink(), F.col("_ph"))
    return [
        F.count_if(is_sink()).alias("s_n"),
        F.collect_set(ph).alias("s_hashes"),
        F.min_by(F.when(is_sink(), row), ph).alias("s_row"),
    ]


def discrepancy(
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


def present(*candidates: Column) -> Column:
    """An array of the candidate rows that are not null (each is a when(cond, row)).

    No lambda here or in the common paths of the modes: Spark interprets lambdas row by
    row, where the rest of the detail is compiled (it cost seconds at 10 M records)."""
    return F.array_compact(F.array(*candidates))


def no_rows() -> Column:
    """An empty array of discrepancy rows."""
    return F.array_compact(F.array(F.lit(None).cast(T.StructType(DISCREPANCY_SCHEMA.fields))))


def missing_class(timestamp: Column, options: CompareOptions) -> Column:
    if options.grace_cutoff is None:
        return F.lit("missing_in_sink")
    return F.when(timestamp > F.lit(options.grace_cutoff), F.lit("pending")).otherwise(
        F.lit("missing_in_sink")
    )


def unmatched_sink_class(options: CompareOptions,
                          below_start: Column | None = None) -> Column:
    if not options.source_truncated:
        return F.lit("extra_in_sink")
    if below_start is None:
        return F.lit("unverifiable")
    return F.when(below_start, F.lit("unverifiable")).otherwise(F.lit("extra_in_sink"))


def undecodable_fields() -> list[Column]:
    """The topic record's undecodable field and raw value, for the per-mode record structs."""
    return [topic_struct()[UNDECODABLE].alias("u"), topic_struct()[RAW_VALUE].alias("raw")]


def undecodable(rec: Column) -> Column:
    """The record could not be decoded (see :mod:`kaudit.reconcile.plan.model`)."""
    return rec["u"].isNotNull()


def key_unread(rec: Column, key: Column) -> Column:
    """The record's key could not be decoded: it has a group of its own and no key."""
    return rec["u"].isNotNull() & key.isNull()


def undecodable_row(rec: Column, key: Column, key_hash: Column, partition: Column,
                     offset: Column, t_n: Column, s_n: Column) -> Column:
    return discrepancy("undecodable", key, key_hash, partition, offset, t_n, s_n,
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


def mismatch_rows(
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
        keep = (options.display_scales or {}).get(name)
        row = ident(name, shown(tv, topic.schema[name].dataType, keep),
                    shown(sv, sink.schema[name].dataType, keep))
        out.append(F.when(when & ~equal, row))
    return out


def shown(value: Column, data_type: T.DataType, keep: int | None = None) -> Column:
    """A compared value as its kind writes it: a decimal with at least ``keep`` decimal
    places (default: its type's scale) and beyond them only the digits it has (``12.50``,
    ``12.505``, ``7``; not ``12.500000000000000000``), the rest as Spark writes it."""
    text = value.cast("string")
    if not isinstance(data_type, T.DecimalType) or data_type.scale <= 0:
        return text
    keep = data_type.scale if keep is None else min(keep, data_type.scale)
    bare = F.regexp_replace(F.regexp_replace(text, r"(\.[0-9]*?)0+$", "$1"), r"\.$", "")
    if keep <= 0:
        return bare
    point = F.instr(bare, ".")
    places = F.when(point > 0, F.length(bare) - point).otherwise(F.lit(0))
    padded = F.concat(bare, F.when(point > 0, F.lit("")).otherwise(F.lit(".")),
                      F.repeat(F.lit("0"), F.lit(keep) - places))
    return F.when(places >= keep, bare).otherwise(padded)


def by_offset(left: Column, right: Column) -> Column:
    """Comparator: ascending offset, then partition."""
    return (
        F.when(left["offset"] < right["offset"], F.lit(-1))
        .when(left["offset"] > right["offset"], F.lit(1))
        .when(left["partition"] < right["partition"], F.lit(-1))
        .when(left["partition"] > right["partition"], F.lit(1))
        .otherwise(F.lit(0))
    )
