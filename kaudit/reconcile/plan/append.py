"""``--mode append``: :data:`APPEND`, its clean groups and the detail of the suspect keys, as
discrepancy rows.

What each class means in this mode: :mod:`kaudit.reconcile.plan.model`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kaudit.reconcile.classes import UNDECODABLE
from kaudit.reconcile.plan.columns import (
    by_offset,
    discrepancy,
    is_live,
    is_sink,
    key_and_counts,
    key_unread,
    largest,
    mismatch_rows,
    missing_class,
    no_rows,
    per_key,
    present,
    topic_record,
    topic_struct,
    undecodable,
    undecodable_row,
    unmatched_sink_class,
)
from kaudit.reconcile.plan.mode import Mode
from kaudit.reconcile.plan.model import CompareOptions


class Append(Mode):
    """Both sides are multisets of keys; tombstones are not records to append."""

    name = "append"

    def summary(self) -> tuple[list[Column], Column]:
        """Clean: one record and one row with the same payload hash and key, or neither."""
        same = largest(is_live(), "_ph") == largest(is_sink(), "_ph")
        live_n, s_rows = F.col("_live_n"), F.col("_s_rows")
        clean = ((live_n == 1) & (s_rows == 1) & F.col("_same") & F.col("_one_key")) | (
            (live_n == 0) & (s_rows == 0))
        return [same.alias("_same")], clean

    def rows(self, suspects: DataFrame, topic: DataFrame, sink: DataFrame,
             options: CompareOptions) -> DataFrame:
        return _rows(_staged(suspects, options), topic, sink, options)


APPEND = Append()


def _staged(suspects: DataFrame, options: CompareOptions) -> DataFrame:
    """Per key: its live records in offset order (recs), the latest one, the one compared
    with the sink, and whether their columns are compared at all (check)."""
    rec = topic_record(options, topic_struct()["offset"].cast("long").alias("offset"),
                       topic_struct()["partition"].cast("int").alias("partition"), tomb=False)
    live = is_live()  # tombstones are not records to append
    joined = per_key(
        suspects, options,
        F.count_if(live).alias("t_n"),
        F.collect_list(F.when(live, rec)).alias("t_recs"),
        F.collect_list(F.when(live, F.col("_ph"))).alias("t_hashes"),
        F.count_if(live & topic_struct()[UNDECODABLE].isNotNull()).alias("u_n"),
    )
    return (
        joined.select(
            *key_and_counts(),
            # Lambdas only where a key has several records (see columns.present).
            F.when(F.col("t_n") > 1, F.array_sort(F.col("t_recs"), by_offset))
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
            & ~F.coalesce(undecodable(F.col("compared")), F.lit(False)) & ~F.coalesce(
                F.arrays_overlap(F.col("t_hashes"), F.col("s_hashes")), F.lit(False)),
        )
    )


def _rows(staged: DataFrame, topic: DataFrame, sink: DataFrame,
          options: CompareOptions) -> DataFrame:
    t_n, s_n, recs = F.col("t_n"), F.col("s_n"), F.col("recs")
    key, key_hash = F.col("key"), F.col("key_hash")
    latest, compared_rec = F.col("latest"), F.col("compared")

    missing = F.coalesce(F.when(t_n > s_n, F.transform(
        F.filter(recs, lambda r, i: (i >= s_n) & ~key_unread(r, key)),
        lambda r: discrepancy(missing_class(r["ts"], options), key, key_hash, r["partition"],
                              r["offset"], t_n, s_n),
    )), no_rows())
    unread = F.coalesce(F.when(F.col("u_n") > 0, F.transform(
        F.filter(recs, undecodable),
        lambda r: undecodable_row(r, key, key_hash, r["partition"], r["offset"], t_n, s_n),
    )), no_rows())

    def ident(name: str, tv: Column, sv: Column) -> Column:
        return discrepancy("mismatched", key, key_hash, compared_rec["partition"],
                           compared_rec["offset"], t_n, s_n, name, tv, sv)

    singles = present(
        F.when((t_n == 0) & (s_n > 0), discrepancy(
            unmatched_sink_class(options), key, key_hash, None, None, t_n, s_n)),
        F.when((s_n > t_n) & (t_n > 0),
               discrepancy("duplicated_in_sink", key, key_hash, latest["partition"],
                           latest["offset"], t_n, s_n)),
        F.when(t_n > 1,
               discrepancy("duplicated_in_topic", key, key_hash, latest["partition"],
                           latest["offset"], t_n, s_n)),
        *mismatch_rows(F.col("check"), compared_rec, F.col("s_row"), topic, sink, options,
                       ident),
    )
    return staged.select(F.concat(missing, unread, singles).alias("_rows"))
