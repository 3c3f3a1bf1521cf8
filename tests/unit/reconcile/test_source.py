"""How a reconcile run reads the topic: the Spark plan, not the data (no broker is reached
before a job runs; the reads themselves are proven against the lab in the integration
tests)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from kaudit.connection.settings import ConnectionSettings
from kaudit.reconcile.source import OffsetRange, read_topic

pytestmark = pytest.mark.spark

V1_SOURCES = "spark.sql.sources.useV1SourceList"


def test_the_topic_is_read_by_the_v2_reader_and_the_session_setting_is_left_alone(
        spark: SparkSession) -> None:
    before = spark.conf.get(V1_SOURCES)
    assert "kafka" in before.split(",")  # Spark's default: Kafka through its V1 reader
    conn = ConnectionSettings(bootstrap_servers="127.0.0.1:9")
    ranges = [OffsetRange(partition=0, start=0, end=10, log_start=0, requested_start=0)]
    frame = read_topic(spark, conn, "t", ranges, read_committed=True)
    analyzed = frame._jdf.queryExecution().analyzed().toString()
    assert "RelationV2" in analyzed and "KafkaRelation" not in analyzed, analyzed
    assert frame.columns == ["partition", "offset", "timestamp", "key", "value"]
    assert spark.conf.get(V1_SOURCES) == before
