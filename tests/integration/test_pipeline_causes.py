"""Why a row is missing, from the pipeline's own records: a topic -> Debezium's JDBC sink ->
PostgreSQL on the lab's Kafka Connect worker, driven to each failure a real sink has, and
reconciled with ``--connector``: records its converter could not read are dead-lettered
(with ``errors.tolerance=all`` and a dead letter queue with context headers), a record the
table refuses fails the task, a paused connector leaves records undelivered, and a group
moved past records by hand skips them. Each missing record is given exactly its cause."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaudit.lab.connect import rest
from kaudit.lab.state import LabNode
from tests.conftest import Lab
from tests.connect import (
    connect_worker,
    delete_connector,
    jdbc_sink,
    pipeline_args,
    start_connector,
    wait_until,
)
from tests.integration.test_lab import admin
from tests.integration.test_pipeline_jdbc import produce, rows_in, sink_args, value
from tests.integration.test_reconcile import reconcile
from tests.pg import Postgres

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.usefixtures("local_spark")]

UNREADABLE = {7, 21}
"""Records written without the JSON converter's schema/payload wrapper: kaudit reads them
(``--envelope connect`` takes a bare payload as it is), the sink's converter cannot
(``schemas.enable=true``), and Connect dead-letters them."""
FIRST, LAST = 30, 40
"""Records 0..FIRST-1 arrive first; then FIRST..LAST-1, whose first breaks the table's
check: the task fails on it, and nothing from it on is written."""


UPSERT_CONNECT_JSON = {
    "insert.mode": "upsert", "primary.key.mode": "record_value", "primary.key.fields": "id",
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "true"}
"""The sink's settings: a row per id, from Kafka Connect's JSON with its schema."""


@pytest.fixture(scope="module")
def worker(lab: Lab) -> Iterator[LabNode]:
    # Offsets committed every second: the committed offset is where the sink is.
    with connect_worker(lab, {"offset.flush.interval.ms": "1000"}) as node:
        yield node


def produce_values(lab: Lab, topic: str, values: dict[int, str]) -> None:
    """These values, keyed by their ids, in this order."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for i, text in values.items():
        producer.produce(topic, key=str(i), value=text)
    assert producer.flush(60) == 0


def committed(lab: Lab, group: str, topic: str) -> int | None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])]
    [future] = admin(lab).list_consumer_group_offsets(request).values()
    [tp] = future.result(30).topic_partitions
    return tp.offset if tp.offset >= 0 else None


def state(node: LabNode, name: str) -> dict[str, Any]:
    status = rest(node, "GET", f"/connectors/{name}/status")
    return {"connector": status["connector"]["state"],
            "tasks": [t["state"] for t in status.get("tasks", [])]}


def explained(lab: Lab, node: LabNode, name: str, topic: str, postgres: Postgres,
              table: str, tmp_path: Path, *more: str) -> tuple[int, dict[str, Any], str]:
    return reconcile(
        lab, "--topic", topic, "--envelope", "connect", "--key", "id",
        "--compare", "status,amount", "--samples", "20", *more,
        *pipeline_args(node, name), *sink_args(postgres, table, tmp_path))


def causes_of(doc: dict[str, Any], cls: str) -> dict[int, str]:
    return {int(s["key"]): s["cause"]["name"] for s in doc["samples"].get(cls, [])}


def test_unreadable_records_are_dead_lettered_and_a_refused_one_fails_the_task(
        lab: Lab, worker: LabNode, postgres: Postgres, tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:6]
    topic, table, name = f"dlq-{suffix}", f"dlq_{suffix}", f"dlq-{suffix}"
    dlq = f"{topic}-dlq"
    postgres.psql(f"create table {table} (id bigint primary key check (id <> {FIRST}), "
                  "status text, amount double precision)")
    produce(lab, topic, range(0))  # the topic, empty
    produce_values(lab, topic, {i: json.dumps(json.loads(value(i))["payload"])
                                if i in UNREADABLE else value(i) for i in range(FIRST)})
    start_connector(worker, name, jdbc_sink(
        postgres, topic, table, **UPSERT_CONNECT_JSON, **{
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "3",
            "errors.deadletterqueue.context.headers.enable": "true"}))
    try:
        wait_until(lambda: committed(lab, f"connect-{name}", topic) == FIRST, 120,
                   f"{name} committed past record {FIRST - 1}")
        assert rows_in(postgres, table) == FIRST - len(UNREADABLE)
        produce(lab, topic, range(FIRST, LAST))
        wait_until(lambda: state(worker, name)["tasks"] == ["FAILED"], 120,
                   f"{name}'s task failed on record {FIRST}")
        code, doc, stderr = explained(lab, worker, name, topic, postgres, table, tmp_path)
        assert code == 1, stderr
        missing = set(UNREADABLE) | set(range(FIRST, LAST))
        assert doc["counts"]["missing_in_sink"] == len(missing), doc["counts"]
        assert doc["causes"]["missing_in_sink"] == {
            "not_yet_delivered": LAST - FIRST, "dead_lettered": len(UNREADABLE)}
        samples = {int(s["key"]): s["cause"] for s in doc["samples"]["missing_in_sink"]}
        assert set(samples) == missing
        for i in UNREADABLE:
            assert samples[i]["name"] == "dead_lettered"
            assert samples[i]["exception"] == "org.apache.kafka.connect.errors.DataException"
        for i in range(FIRST, LAST):
            assert samples[i]["name"] == "not_yet_delivered"
            assert (samples[i]["committed"], samples[i]["lag"]) == (FIRST, LAST - FIRST)
            assert samples[i]["tasks"][0]["state"] == "FAILED"
            assert samples[i]["tasks"][0]["trace"], samples[i]
            assert "task 0 FAILED" in samples[i]["evidence"]
        pipe = doc["pipeline"]
        assert (pipe["dead_letter_topic"], pipe["dead_letters"], pipe["errors_tolerance"],
                pipe["unread"]) == (dlq, len(UNREADABLE), "all", {})
        assert pipe["settings"] == {"insert.mode": "upsert",
                                    "errors.deadletterqueue.context.headers.enable": "true"}
    finally:
        delete_connector(worker, name)
        admin(lab).delete_topics([topic, dlq])


def test_a_paused_connector_leaves_records_undelivered_and_a_group_moved_on_skips_them(
        lab: Lab, worker: LabNode, postgres: Postgres, tmp_path: Path) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    suffix = uuid.uuid4().hex[:6]
    topic, table, name = f"paused-{suffix}", f"paused_{suffix}", f"paused-{suffix}"
    group = f"connect-{name}"
    produce(lab, topic, range(20))
    start_connector(worker, name, jdbc_sink(postgres, topic, table, **UPSERT_CONNECT_JSON))
    try:
        wait_until(lambda: committed(lab, group, topic) == 20, 120, f"{name} at offset 20")
        rest(worker, "PUT", f"/connectors/{name}/pause")
        wait_until(lambda: state(worker, name) == {"connector": "PAUSED", "tasks": ["PAUSED"]},
                   60, f"{name} paused")
        produce(lab, topic, range(20, 26))
        update = dict(json.loads(value(5)), payload={**json.loads(value(5))["payload"],
                                                     "status": "refunded"})
        produce_values(lab, topic, {5: json.dumps(update)})  # offset 26
        code, doc, stderr = explained(lab, worker, name, topic, postgres, table, tmp_path,
                                      "--mode", "upsert")
        assert code == 1, stderr
        # The sink is behind, not wrong: key 5's row is its record before the update.
        assert doc["causes"] == {"missing_in_sink": {"not_yet_delivered": 6},
                                 "mismatched": {"not_yet_delivered": 1}}, doc["counts"]
        [changed] = doc["samples"]["mismatched"]
        assert (changed["key"], changed["column"], changed["cause"]["lag"]) == \
            ("5", "status", 7)
        samples = {int(s["key"]): s["cause"] for s in doc["samples"]["missing_in_sink"]}
        assert set(samples) == set(range(20, 26))
        assert {(c["committed"], c["lag"]) for c in samples.values()} == {(20, 7)}
        assert all("task 0 PAUSED" in c["evidence"] for c in samples.values())

        rest(worker, "PUT", f"/connectors/{name}/resume")
        wait_until(lambda: committed(lab, group, topic) == 27, 120, f"{name} at offset 27")
        code, doc, stderr = explained(lab, worker, name, topic, postgres, table, tmp_path,
                                      "--mode", "upsert")
        assert (code, doc["causes"]) == (0, {}), stderr

        # An operator's reset: the connector stopped, its group moved past six records.
        rest(worker, "PUT", f"/connectors/{name}/stop")
        wait_until(lambda: state(worker, name)["connector"] == "STOPPED", 60, f"{name} stopped")
        produce(lab, topic, range(27, 33))

        def move() -> bool:  # once the stopped task's consumer has left its group
            moved = admin(lab).alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 33)])])
            try:
                return all(future.result(30) is not None for future in moved.values())
            except Exception:
                return False
        wait_until(move, 60, f"{group} moved to offset 33")
        code, doc, stderr = explained(lab, worker, name, topic, postgres, table, tmp_path,
                                      "--mode", "upsert")
        assert code == 1, stderr
        assert doc["causes"] == {"missing_in_sink": {"skipped": 6}}
        skipped = {int(s["key"]): s["cause"] for s in doc["samples"]["missing_in_sink"]}
        assert set(skipped) == set(range(27, 33))
        assert all(c["committed"] == 33 and "the connector has no dead letter queue"
                   in c["evidence"] for c in skipped.values()), skipped
    finally:
        delete_connector(worker, name)
        admin(lab).delete_topics([topic])
