"""Hand-built topic and sink frames for the comparison-plan tests, and result helpers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kaudit.reconcile.plan import (
    CLASSES,
    CompareOptions,
    Comparison,
    compare,
    key_hash_column,
    payload_hash_column,
)

T0 = datetime(2024, 1, 1, 12, 0, 0)
"""The default Kafka timestamp of a test record (sessions run in UTC)."""

TOPIC_COLUMNS = (
    "partition int, offset long, key string, tombstone boolean, timestamp timestamp"
)


def local_frame(spark: SparkSession, rows: Sequence[tuple[Any, ...]], ddl: str) -> DataFrame:
    """``spark.createDataFrame(rows, ddl)``, each row checked against the schema the same
    way, without a Python worker: createDataFrame re-batches its rows in Python tasks each
    time the frame is computed, and the comparison computes each frame several times. The
    JVM unpickles the parallelized batches itself (they are the lists it expects)."""
    from pyspark.sql.types import StructType, _make_type_verifier

    schema = spark._parse_ddl(ddl)  # type: ignore[attr-defined]
    assert isinstance(schema, StructType), ddl
    verify = _make_type_verifier(schema)
    internal = []
    for row in rows:
        verify(row)
        internal.append(schema.toInternal(row))
    batches = spark.sparkContext.parallelize(internal)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    objects = jvm.SerDeUtil.toJavaArray(jvm.SerDeUtil.pythonToJava(batches._jrdd, True))
    return DataFrame(spark._jsparkSession.applySchemaToPythonRDD(objects.rdd(), schema.json()),
                     spark)


def rec(partition: int, offset: int, key: str | None, *values: Any, tomb: bool = False,
        ts: datetime = T0) -> tuple[Any, ...]:
    """One topic record: coordinates, key, then the compared values (None when tombstoned)."""
    return (partition, offset, key, tomb, ts, *values)


def topic_frame(spark: SparkSession, records: Sequence[tuple[Any, ...]], fields: str = "",
                compared: Sequence[str] = (), key_hash: bool = True) -> DataFrame:
    """A topic frame; ``fields`` is the DDL of the compared columns ("v long, s string").

    With ``key_hash=False`` the records carry their own key_hash right after the key
    (for hash-collision tests): rec(p, o, key, hash, *values).
    """
    ddl = TOPIC_COLUMNS
    if not key_hash:
        ddl = "partition int, offset long, key string, key_hash long, tombstone boolean, " \
              "timestamp timestamp"
        records = [(r[0], r[1], r[2], r[5], r[3], r[4], *r[6:]) for r in records]
    frame = local_frame(spark, records, ddl + (f", {fields}" if fields else ""))
    if key_hash:
        frame = frame.withColumn("key_hash", key_hash_column(F.col("key")))
    return frame.withColumn("payload_hash", payload_hash_column(compared))


def sink_frame(spark: SparkSession, rows: Sequence[tuple[Any, ...]], fields: str = "",
               compared: Sequence[str] = (), coordinates: bool = False,
               key_hash: bool = True) -> DataFrame:
    """A sink frame: rows are (key, *values), or (partition, offset, key, *values) with
    ``coordinates``; with ``key_hash=False`` the key_hash follows the key."""
    ddl = "key string" if key_hash else "key string, key_hash long"
    if coordinates:
        ddl = "partition int, offset long, " + ddl
    frame = local_frame(spark, rows, ddl + (f", {fields}" if fields else ""))
    if key_hash:
        frame = frame.withColumn("key_hash", key_hash_column(F.col("key")))
    return frame.withColumn("payload_hash", payload_hash_column(compared))


SHUFFLE = "values"
"""The ``shuffle`` :func:`run` compares with unless told (the ``each_shuffle`` fixture sets
it to each in turn)."""


def run(topic: DataFrame, sink: DataFrame, mode: str, compared: Sequence[str] = (),
        **options: Any) -> Comparison:
    """compare() with CompareOptions built from the arguments."""
    options.setdefault("shuffle", SHUFFLE)
    return compare(topic, sink, CompareOptions(mode=mode,  # type: ignore[arg-type]
                                               compare=tuple(compared), **options))


Row = tuple[Any, ...]


def rows(comparison: Comparison) -> list[Row]:
    """Every discrepancy as (class, key, partition, offset, topic_count, sink_count, column,
    topic_value, sink_value), sorted."""
    out = [
        (r["class"], r["key"], r["partition"], r["offset"], r["topic_count"], r["sink_count"],
         r["column"], r["topic_value"], r["sink_value"])
        for r in comparison.discrepancies.collect()
    ]
    return sorted(out, key=lambda row: tuple((v is None, v) for v in row))


def counts(**nonzero: int) -> dict[str, int]:
    """The expected counts dict: every class, zeros except those given."""
    expected = dict.fromkeys(CLASSES, 0)
    expected.update(nonzero)
    return expected
