"""``--mode upsert``: :data:`UPSERT`, its clean groups and the detail of the suspect keys, as
discrepancy rows.

What each class means in this mode: :mod:`kaudit.reconcile.plan.model`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kaudit.reconcile.plan.columns import (
    TOMBSTONED,
    discrepancy,
    is_sink,
    is_topic,
    key_and_counts,
    key_unread,
    largest,
    mismatch_rows,
    missing_class,
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

#: Offsets and partitions packed into one ordering long (the latest record): offset in the
#: high bits, partition in the low 20. Records outside it are always suspects.
_ORD_PARTITION_BITS = 20
_ORD_MAX_OFFSET = 1 << (63 - _ORD_PARTITION_BITS)


class Upsert(Mode):
    """Per key, the latest topic record (highest offset, partition the tiebreak) is the
    truth."""

    name = "upsert"

    def derived(self, rows: DataFrame) -> DataFrame:
        """The topic record's order as one long (``_ord``; null when it does not fit)."""
        t_off, t_part = topic_struct()["offset"], topic_struct()["partition"]
        ord_ok = (t_off >= 0) & (t_off < _ORD_MAX_OFFSET) & (t_part >= 0) & (
            t_part < (1 << _ORD_PARTITION_BITS))
        return rows.withColumn("_ord", F.when(
            is_topic() & ord_ok, F.shiftleft(t_off, _ORD_PARTITION_BITS) + t_part))

    def summary(self) -> tuple[list[Column], Column]:
        """Clean: the sink row equal to the latest record, or absent after a tombstone."""
        order = F.when(is_topic(), F.col("_ord"))
        aggs = [
            F.count_if(is_topic()).alias("_t_n"),
            F.count_if(is_topic() & F.col("_ord").isNull()).alias("_unordered"),
            (largest(is_sink(), "_ph") == F.max_by(F.when(is_topic(), F.col("_ph")), order))
            .alias("_same"),
            F.max_by(F.when(is_topic(), F.col("_tomb")), order).alias("_latest_tomb"),
        ]
        latest_tomb = F.col("_latest_tomb")
        clean = F.col("_one_key") & (F.col("_t_n") > 0) & (F.col("_unordered") == 0) & (
            (~latest_tomb & (F.col("_s_rows") == 1) & F.col("_same"))
            | (latest_tomb & (F.col("_s_rows") == 0)))
        return aggs, clean

    def rows(self, suspects: DataFrame, topic: DataFrame, sink: DataFrame,
             options: CompareOptions) -> DataFrame:
        rec = topic_record(options, topic_struct()["offset"].cast("long").alias("offset"),
                           topic_struct()["partition"].cast("int").alias("partition"))
        order = F.struct(topic_struct()["offset"].cast("long"),
                         topic_struct()["partition"].cast("int"))
        mine = is_topic()
        joined = per_key(
            suspects, options,
            F.count_if(is_topic()).alias("t_n"),
            F.max_by(F.when(mine, rec), F.when(mine, order)).alias("latest"),
        )
        return _rows(joined, topic, sink, options)


UPSERT = Upsert()


def _rows(joined: DataFrame, topic: DataFrame, sink: DataFrame,
          options: CompareOptions) -> DataFrame:
    latest = F.col("latest")
    staged = joined.select(
        *key_and_counts(),
        latest,
        F.col("s_row"),
        F.coalesce(F.array_contains(F.col("s_hashes"), latest["ph"]),
                   F.lit(False)).alias("sink_has_latest"),
    ).withColumn(
        "check",
        latest.isNotNull() & ~latest["tomb"] & (F.col("s_n") > 0) & ~F.col("sink_has_latest")
        & ~undecodable(latest),
    )
    t_n, s_n = F.col("t_n"), F.col("s_n")
    key, key_hash = F.col("key"), F.col("key_hash")
    partition, offset = latest["partition"], latest["offset"]
    has_topic = latest.isNotNull()
    value = has_topic & ~latest["tomb"]
    tombstoned = has_topic & latest["tomb"]

    def ident(name: str, tv: Column, sv: Column) -> Column:
        return discrepancy("mismatched", key, key_hash, partition, offset, t_n, s_n, name, tv,
                           sv)

    rows = present(
        F.when(value & (s_n == 0) & ~key_unread(latest, key),
               discrepancy(missing_class(latest["ts"], options), key, key_hash, partition,
                           offset, t_n, s_n)),
        F.when(value & undecodable(latest),
               undecodable_row(latest, key, key_hash, partition, offset, t_n, s_n)),
        F.when(tombstoned & (s_n > 0),
               discrepancy("extra_in_sink", key, key_hash, partition, offset, t_n, s_n, None,
                           TOMBSTONED)),
        F.when(~has_topic & (s_n > 0), discrepancy(
            unmatched_sink_class(options), key, key_hash, None, None, t_n, s_n)),
        F.when(value & (s_n > 1),
               discrepancy("duplicated_in_sink", key, key_hash, partition, offset, t_n, s_n)),
        *mismatch_rows(F.col("check"), latest, F.col("s_row"), topic, sink, options, ident),
    )
    return staged.select(rows.alias("_rows"))
