"""A topic -> Apache Iceberg's Kafka Connect sink (a Hadoop catalog on local disk, its
KafkaMetadataTransform, a 2-second commit interval) -> an Iceberg table, on the lab's Kafka
Connect worker, the worker SIGKILLed after the first commits, with records still coming,
and restarted, then its task restarted. Iceberg's sink commits exactly once: kaudit
reconcile, reading the table's ``_kafka_metadata_*`` columns as the records' coordinates,
finds every record once, as the table itself says when the test reads it with Spark."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaudit.lab.connect import CONNECT_ID, rest
from kaudit.lab.state import LabNode
from tests.conftest import Lab
from tests.connect import (
    connect_worker,
    delete_connector,
    start_connector,
    wait_running,
    wait_until,
)
from tests.integration.test_lab import admin
from tests.integration.test_reconcile import reconcile

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.usefixtures("local_spark")]

FIRST, SECOND, THIRD = 300, 200, 100
PARTITIONS = 3


@pytest.fixture(scope="module")
def worker(lab: Lab) -> Iterator[LabNode]:
    # A sink task's put() runs, with or without records, at least once per offset flush
    # interval, and Iceberg's sink answers its coordinator's commit requests only there:
    # flush every second, so that each commit is answered at once.
    with connect_worker(lab, {"offset.flush.interval.ms": "1000"}) as node:
        yield node


def produce(lab: Lab, topic: str, numbers: range) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for i in numbers:
        producer.produce(topic, key=str(i), value=json.dumps(
            {"id": i, "status": ("new", "paid")[i % 2], "amount": i * 0.5}))
    assert producer.flush(60) == 0, "records still unsent after 60 s"


def table_rows(spark: Any, warehouse: Path, table: str) -> list[Any]:
    """The table's coordinates, read fresh from its latest metadata (none before the sink
    first commits)."""
    location = warehouse / "lake" / table
    # A Hadoop table exists once its version hint names a metadata file: the metadata
    # folder alone appears first, and reading it then is "table not found" (seen in CI on
    # a busy machine, while the sink was still creating the table).
    if not (location / "metadata" / "version-hint.text").exists():
        return []
    frame = spark.read.format("iceberg").load(str(location))
    return frame.select("_kafka_metadata_partition", "_kafka_metadata_offset").collect()


def commit_a_file_again(spark: Any, warehouse: Path, table: str) -> tuple[set[int], int]:
    """One of the table's data files appended again by Iceberg's own API (a fast append
    checks for no duplicate): the ids it holds, and the snapshot that added it again."""
    jvm = spark._jvm
    tables = jvm.org.apache.iceberg.hadoop.HadoopTables(spark._jsc.hadoopConfiguration())
    iceberg = tables.load(str(warehouse / "lake" / table))
    data_file = iceberg.newScan().planFiles().iterator().next().file()
    path = str(data_file.location())
    ids = {r[0] for r in spark.read.parquet(path).select("id").collect()}
    iceberg.newFastAppend().appendFile(data_file).commit()
    spark.sql(f"REFRESH TABLE ice.lake.{table}")  # the session's catalog caches tables
    return ids, int(iceberg.currentSnapshot().snapshotId())


def test_icebergs_exactly_once_commits_survive_a_killed_worker(
        lab: Lab, worker: LabNode, local_spark: Any, tmp_path: Path) -> None:
    from confluent_kafka.admin import NewTopic

    suffix = uuid.uuid4().hex[:6]
    topic, table, name = f"ice-orders-{suffix}", f"orders_{suffix}", f"iceberg-{suffix}"
    warehouse = tmp_path / "warehouse"
    admin(lab).create_topics([NewTopic(topic, PARTITIONS, 3)])[topic].result(30)
    produce(lab, topic, range(FIRST))
    start_connector(worker, name, {
        "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
        "tasks.max": "1",
        "topics": topic,
        "iceberg.tables": f"lake.{table}",
        "iceberg.tables.auto-create-enabled": "true",
        "iceberg.catalog.type": "hadoop",
        "iceberg.catalog.warehouse": f"file://{warehouse}",
        "iceberg.control.topic": f"iceberg-control-{suffix}",
        "iceberg.control.commit.interval-ms": "2000",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "transforms": "metadata",
        "transforms.metadata.type":
            "org.apache.iceberg.connect.transforms.KafkaMetadataTransform",
    })
    try:
        wait_until(lambda: len(table_rows(local_spark, warehouse, table)) >= FIRST, 180,
                   "the first records committed to the table")
        produce(lab, topic, range(FIRST, FIRST + SECOND))
        assert lab.kaudit("kill", str(CONNECT_ID), "--signal", "KILL").code == 0
        restarted = lab.kaudit("start", str(CONNECT_ID))
        assert restarted.code == 0, restarted.stderr
        wait_until(lambda: len(table_rows(local_spark, warehouse, table)) >= FIRST + SECOND,
                   240, "every record committed after the restart")
        # A task restarted through the REST API, with a third batch on its way.
        rest(worker, "POST", f"/connectors/{name}/tasks/0/restart")
        produce(lab, topic, range(FIRST + SECOND, FIRST + SECOND + THIRD))
        wait_running(worker, name)
        total = FIRST + SECOND + THIRD
        wait_until(lambda: len(table_rows(local_spark, warehouse, table)) >= total, 240,
                   "every record committed after the task's restart")
        delete_connector(worker, name)
        rows = table_rows(local_spark, warehouse, table)
        places = [(r[0], r[1]) for r in rows]
        assert (len(places), len(set(places))) == (total, total)  # the table's own truth

        code, doc, stderr = reconcile(
            lab, "--topic", topic, "--sink", f"iceberg:ice.lake.{table}", "--mode",
            "coordinates", "--key", "id", "--compare", "status,amount",
            "--sink-option", "type=hadoop", "--sink-option", f"warehouse=file://{warehouse}")
        assert code == 0, json.dumps([doc.get("counts"), stderr])
        assert (doc["counts"]["topic_records"], doc["counts"]["sink_rows"]) == (total, total)

        # Then the table's own history explains what differs: a data file committed a
        # second time (as apache/iceberg#16282 did), and two rows deleted by hand.
        twice, again = commit_a_file_again(local_spark, warehouse, table)
        gone = sorted(set(range(total)) - twice)[:2]
        local_spark.sql(f"DELETE FROM ice.lake.{table} WHERE id IN ({gone[0]}, {gone[1]})")
        deleted_by = local_spark.sql(f"SELECT snapshot_id, operation FROM ice.lake.{table}"
                                     ".snapshots ORDER BY committed_at DESC LIMIT 1").first()
        code, doc, stderr = reconcile(
            lab, "--topic", topic, "--sink", f"iceberg:ice.lake.{table}", "--mode",
            "coordinates", "--key", "id", "--compare", "status,amount", "--samples", "5",
            "--sink-option", "type=hadoop", "--sink-option", f"warehouse=file://{warehouse}",
            "--sink-group", f"connect-{name}")
        assert code == 1, stderr
        assert doc["causes"] == {"missing_in_sink": {"deleted_in_sink": 2},
                                 "duplicated_in_sink": {"written_twice": len(twice)}}, \
            json.dumps([doc["counts"], doc["pipeline"]])
        for sample in doc["samples"]["missing_in_sink"]:
            assert int(sample["key"]) in gone
            assert sample["cause"]["snapshot_id"] == deleted_by["snapshot_id"], sample
            assert sample["cause"]["operation"] == deleted_by["operation"]
        for sample in doc["samples"]["duplicated_in_sink"]:
            assert int(sample["key"]) in twice
            assert sample["cause"]["snapshots"][-1] == again, sample
            assert len(sample["cause"]["snapshots"]) == 2
    finally:
        admin(lab).delete_topics([topic, f"iceberg-control-{suffix}"])
