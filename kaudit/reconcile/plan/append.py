"""``--mode append``: the detail of the suspect keys, as discrepancy rows.

What each class means in this mode: :mod:`kaudit.reconcile.plan.model`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kaudit.reconcile.classes import UNDECODABLE
from kaudit.reconcile.plan.columns import (
    _GROUP,
    _by_offset,
    _group_key_display,
    _is_t,
    _key_unread,
    _mismatch_rows,
    _missing_class,
    _no_rows,
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
    joined = _with_group_key(suspects).groupBy(*_GROUP).agg(
        F.count_if(live).alias("t_n"),
        F.collect_list(F.when(live, rec)).alias("t_recs"),
        F.collect_list(F.when(live, F.col("_ph"))).alias("t_hashes"),
        F.count_if(live & _t()[UNDECODABLE].isNotNull()).alias("u_n"),
        *_sink_aggs(compared),
    )

    staged = (
        joined.select(
            F.col("_gk").alias("key_hash"),
            _group_key_display().alias("key"),
            F.coalesce(F.col("t_n"), F.lit(0).cast("long")).alias("t_n"),
            F.coalesce(F.col("s_n"), F.lit(0).cast("long")).alias("s_n"),
            # Lambdas only where a key has several records (see columns._present).
            F.when(F.col("t_n") > 1, F.array_sort(F.col("t_recs"), _by_offset))
            .otherwise(F.coalesce(F.col("t_recs"), F.array())).alias("recs"),
            F.col("t_hashes"),
            F.col("u_n"),
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
                F.arrays_overlap(F.col("t_hashes"), F.col("s_hashes")), F.lit(False)),
        )
    )
    t_n, s_n, recs = F.col("t_n"), F.col("s_n"), F.col("recs")
    key, key_hash = F.col("key"), F.col("key_hash")
    latest, compared_rec = F.col("latest"), F.col("compared")

    missing = F.coalesce(F.when(t_n > s_n, F.transform(
        F.filter(recs, lambda r, i: (i >= s_n) & ~_key_unread(r, key)),
        lambda r: _row(_missing_class(r["ts"], options), key, key_hash, r["partition"],
                       r["offset"], t_n, s_n),
    )), _no_rows())
    undecodable = F.coalesce(F.when(F.col("u_n") > 0, F.transform(
        F.filter(recs, _undecodable),
        lambda r: _undecodable_row(r, key, key_hash, r["partition"], r["offset"], t_n, s_n),
    )), _no_rows())

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
    return staged.select(F.concat(missing, undecodable, singles).alias("_rows"))
