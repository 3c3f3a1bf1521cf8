"""Both sides' rows as one frame, and the one shuffle of it that every later step reads.

Each row carries the group key, a side byte (:data:`SIDE_SINK`, :data:`SIDE_RECORD`,
:data:`SIDE_TOMBSTONE`), the payload hash, the key, and its side's struct (``_t`` for a
topic record: its coordinates, its problem columns and the compared values; ``_s`` for a
sink row: the compared values), the other side's struct null. :func:`read_once` makes a
frame's physical plan a leaf, so that every query over it reads the same shuffle output.
"""

from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaPackage  # type: ignore[import-untyped]
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kaudit.errors import RuntimeUnavailable
from kaudit.reconcile.classes import RAW_VALUE, UNDECODABLE
from kaudit.reconcile.plan.mode import Mode
from kaudit.reconcile.plan.model import CompareOptions

#: The ``_side`` byte of a shuffled row.
SIDE_SINK, SIDE_RECORD, SIDE_TOMBSTONE = 0, 1, 2


def read_once(frame: DataFrame, partitions: int | None = None) -> DataFrame:
    """``frame`` as a leaf over the RDD of its physical plan, with the plan's partitioning.

    Every query over the result reads the same RDD, so the shuffle ``frame`` ends in is
    computed once and its output read by each query (Spark skips a shuffle's map stage
    when its output exists). A DataFrame derived from ``frame`` itself would be planned
    anew by every query, and read both sides again. Adaptive execution is off while the
    plan is made, so that the RDD is lazy and has exactly the partitioning the plan says
    (what Dataset.localCheckpoint does, without keeping the rows). Constraint propagation
    is off too: the leaf would carry the plan's constraints, and deriving them from the
    decoded columns' expressions grows with their number and nesting (300,000 records
    with 14 compared text fields: 7.3 s of planning, against 19.6 s for the whole run
    without it); no query over the leaf needs them. ``partitions``: the partition count of
    the shuffles Spark adds while planning ``frame``.
    """
    spark = frame.sparkSession
    jvm = spark.sparkContext._jvm
    assert jvm is not None

    def module(package: Any, name: str) -> Any:
        found = getattr(getattr(package, name + "$"), "MODULE$")
        if isinstance(found, JavaPackage):  # py4j's answer for a class it cannot find
            raise RuntimeUnavailable(
                f"this Spark has no {name} where kaudit needs it (Spark "
                f"{spark.version}; kaudit reconcile runs on pyspark 4.0.0)")
        return found

    saved = {key: spark.conf.get(key) or default for key, default in (
        ("spark.sql.adaptive.enabled", "true"), ("spark.sql.shuffle.partitions", "200"),
        ("spark.sql.constraintPropagation.enabled", "true"))}
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    spark.conf.set("spark.sql.constraintPropagation.enabled", "false")
    if partitions is not None:
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    try:
        rdd = frame._jdf.queryExecution().toRdd()
        plan = module(jvm.org.apache.spark.sql.execution, "LogicalRDD").fromDataset(
            rdd, frame._jdf, False)
    finally:
        for key, value in saved.items():
            spark.conf.set(key, value)
    jdf = module(jvm.org.apache.spark.sql.classic, "Dataset").ofRows(
        frame._jdf.sparkSession(), plan)
    return DataFrame(jdf, spark)


def shuffled(topic: DataFrame, sink: DataFrame, mode: Mode, options: CompareOptions,
             values: bool) -> DataFrame:
    """Both sides' rows (:func:`sides`) after the one shuffle, on the mode's group key."""
    both = sides(topic, sink, mode, options, values).repartition(
        *[F.col(g) for g in mode.group])
    return read_once(both, options.shuffle_partitions)


def sides(topic: DataFrame, sink: DataFrame, mode: Mode, options: CompareOptions,
          values: bool) -> DataFrame:
    """Both sides' rows as one frame, the compared values in the side structs only with
    ``values`` (the summary needs none of them)."""
    tomb = F.coalesce(F.col("tombstone"), F.lit(False))
    offset, partition = F.col("offset").cast("long"), F.col("partition").cast("int")
    # Only what the summary and the detail need crosses the shuffle: the group key, one
    # side/tombstone byte, the payload hash and the key at the top level; in the side
    # structs only the compared values (and the topic record's coordinates, and its time
    # when --grace needs it). What can be derived from those (flags, the second key hash,
    # upsert's ordering) is derived after the shuffle: every byte a row carries is
    # written, compressed and read back for millions of rows.
    compared = list(options.compare) if values else []
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
        *mode.group_columns(),
        F.when(tomb, F.lit(SIDE_TOMBSTONE)).otherwise(F.lit(SIDE_RECORD)).cast("byte")
        .alias("_side"),
        F.col("payload_hash").alias("_ph"),
        *mode.carried(),
        F.col("key").alias("_key"),
        t_struct.alias("_t"),
        F.lit(None).cast(s_type).alias("_s"),
    )
    s_narrow = sink.select(
        *mode.group_columns(),
        F.lit(SIDE_SINK).cast("byte").alias("_side"),
        F.col("payload_hash").alias("_ph"),
        *mode.carried(),
        F.col("key").alias("_key"),
        F.lit(None).cast(t_type).alias("_t"),
        s_struct.alias("_s"),
    )
    return t_narrow.unionByName(s_narrow)
