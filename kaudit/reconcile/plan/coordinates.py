"""``--mode coordinates``: :data:`COORDINATES`, its clean groups and the detail of the
suspect coordinates, as discrepancy rows.

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
    key_unread,
    largest,
    mismatch_rows,
    missing_class,
    present,
    sink_aggregates,
    topic_record,
    undecodable,
    undecodable_row,
    unmatched_sink_class,
)
from kaudit.reconcile.plan.mode import Mode
from kaudit.reconcile.plan.model import CompareOptions


class Coordinates(Mode):
    """The sink stores the Kafka partition and offset of each record, as Kafka Connect's
    sinks do: an exact per-record trace, joined on partition and offset."""

    name = "coordinates"
    group = ("_gp", "_go")
    sink_columns = ("partition", "offset")
    by_coordinates = True

    def group_columns(self) -> list[Column]:
        return [F.col("partition").cast("int").alias("_gp"),
                F.col("offset").cast("long").alias("_go")]

    def carried(self) -> list[Column]:
        """The key hash: the group is not the key, and its key is checked too."""
        return [F.col("key_hash").alias("_kh")]

    def summary(self) -> tuple[list[Column], Column]:
        """Clean: the same payload and key at the coordinates, or a tombstone and no row."""
        same = (largest(is_topic(), "_ph") == largest(is_sink(), "_ph")) & (
            largest(is_topic(), "_kh") == largest(is_sink(), "_kh"))
        aggs = [
            F.count_if(is_topic()).alias("_t_n"),
            F.count_if(is_topic() & F.col("_tomb")).alias("_tombs"),
            same.alias("_same"),
        ]
        t_n, tombs, s_rows = F.col("_t_n"), F.col("_tombs"), F.col("_s_rows")
        clean = ((t_n == 1) & (tombs == 0) & (s_rows == 1) & F.col("_same")
                 & F.col("_one_key")) | ((t_n == 1) & (tombs == 1) & (s_rows == 0))
        return aggs, clean

    def rows(self, suspects: DataFrame, topic: DataFrame, sink: DataFrame,
             options: CompareOptions) -> DataFrame:
        record = topic_record(options, F.col("_key").alias("key"),
                              F.col("_kh").alias("key_hash"))
        # A topic has one record per coordinates: the group's topic record, if any.
        joined = suspects.groupBy(*self.group).agg(
            F.first(F.when(is_topic(), record), ignorenulls=True).alias("t"),
            *sink_aggregates(options.compare, with_key=True),
        )
        joined, below_start = _with_starts(joined, topic, options)
        return _rows(joined, below_start, topic, sink, options)


COORDINATES = Coordinates()


def _with_starts(joined: DataFrame, topic: DataFrame,
                 options: CompareOptions) -> tuple[DataFrame, Column | None]:
    """The groups named by partition and offset, and (with ``source_truncated``) whether a
    group's offset is below its partition's first offset read."""
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
    return joined, below_start


def _rows(joined: DataFrame, below_start: Column | None, topic: DataFrame, sink: DataFrame,
          options: CompareOptions) -> DataFrame:
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
        & ~undecodable(t)
    )
    t_n, s_n = F.col("t_n"), F.col("s_n")
    key, key_hash = F.col("key"), F.col("key_hash")
    value = has_topic & ~t["tomb"]
    tombstoned = has_topic & t["tomb"]
    partition, offset = F.col("partition"), F.col("offset")

    def ident(name: str, tv: Column, sv: Column) -> Column:
        return discrepancy("mismatched", key, key_hash, partition, offset, t_n, s_n, name, tv,
                           sv)

    rows = present(
        F.when(value & (s_n == 0) & ~key_unread(t, key),
               discrepancy(missing_class(t["ts"], options), key, key_hash, partition, offset,
                           t_n, s_n)),
        F.when(value & undecodable(t),
               undecodable_row(t, key, key_hash, partition, offset, t_n, s_n)),
        F.when(tombstoned & (s_n > 0),
               discrepancy("extra_in_sink", key, key_hash, partition, offset, t_n, s_n, None,
                           TOMBSTONED)),
        F.when(~has_topic & (s_n > 0),
               discrepancy(unmatched_sink_class(options, F.col("below_start")), key, key_hash,
                           partition, offset, t_n, s_n)),
        F.when(value & (s_n > 1),
               discrepancy("duplicated_in_sink", key, key_hash, partition, offset, t_n, s_n)),
        F.when(value & (s_n > 0) & ~undecodable(t) & ~t["key"].eqNullSafe(s_row["key"]),
               ident("key", t["key"], s_row["key"])),
        *mismatch_rows(F.col("check"), t, s_row, topic, sink, options, ident),
    )
    return staged.select(rows.alias("_rows"))
