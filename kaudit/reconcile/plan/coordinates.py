"""``--mode coordinates``: the detail of the suspect coordinates, as discrepancy rows.

What each class means in this mode: :mod:`kaudit.reconcile.plan.model`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kaudit.reconcile.plan.columns import (
    _TOMBSTONED,
    _is_t,
    _key_unread,
    _mismatch_rows,
    _missing_class,
    _payload_fields,
    _present,
    _record_time,
    _row,
    _sink_aggs,
    _t,
    _undecodable,
    _undecodable_fields,
    _undecodable_row,
    _unmatched_sink_class,
)
from kaudit.reconcile.plan.model import CompareOptions


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
    joined = suspects.groupBy("_gp", "_go").agg(
        F.first(F.when(_is_t(), record), ignorenulls=True).alias("t"),
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
        F.col("partition"),
        F.col("offset"),
        t,
        s_row,
        F.when(has_topic, F.lit(1)).otherwise(F.lit(0)).cast("long").alias("t_n"),
        F.coalesce(F.col("s_n"), F.lit(0).cast("long")).alias("s_n"),
        F.when(has_topic, t["key"]).otherwise(s_row["key"]).alias("key"),
        F.when(has_topic, t["key_hash"]).otherwise(s_row["key_hash"]).alias("key_hash"),
        F.coalesce(F.array_contains(F.col("s_hashes"), t["ph"]),
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
    return staged.select(rows.alias("_rows"))
