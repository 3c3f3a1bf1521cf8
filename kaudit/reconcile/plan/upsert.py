"""``--mode upsert``: the detail of the suspect keys, as discrepancy rows.

What each class means in this mode: :mod:`kaudit.reconcile.plan.model`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kaudit.reconcile.plan.columns import (
    _GROUP,
    _TOMBSTONED,
    _group_key_display,
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
    _with_group_key,
)
from kaudit.reconcile.plan.model import CompareOptions


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
    mine = _is_t()
    joined = _with_group_key(suspects).groupBy(*_GROUP).agg(
        F.count_if(_is_t()).alias("t_n"),
        F.max_by(F.when(mine, rec), F.when(mine, order)).alias("latest"),
        *_sink_aggs(compared),
    )

    latest = F.col("latest")
    staged = joined.select(
        F.col("_gk").alias("key_hash"),
        _group_key_display().alias("key"),
        F.coalesce(F.col("t_n"), F.lit(0).cast("long")).alias("t_n"),
        F.coalesce(F.col("s_n"), F.lit(0).cast("long")).alias("s_n"),
        latest,
        F.col("s_row"),
        F.coalesce(F.array_contains(F.col("s_hashes"), latest["ph"]),
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
    return staged.select(rows.alias("_rows"))
