"""A topic -> Debezium's JDBC sink -> PostgreSQL, on the lab's Kafka Connect worker, its
worker SIGKILLed once every record is in the table and restarted: the records since the
last committed offset (all of them: the worker commits every 10 minutes) are delivered
again. ``insert.mode=insert`` into a table without a primary key writes them twice;
``upsert`` writes each once. kaudit reconcile's counts are checked against SQL truth
computed here, and a row deleted by hand is found exactly."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaudit.lab.connect import CONNECT_ID
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
from tests.integration.test_reconcile import reconcile
from tests.pg import Postgres

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.usefixtures("local_spark")]

N = 200
DELETED_BY_HAND = {17, 140}
SCHEMA = {"type": "struct", "name": "shop.order", "optional": False, "fields": [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "status", "type": "string", "optional": False},
    {"field": "amount", "type": "double", "optional": False}]}


def value(i: int) -> str:
    """Kafka Connect's JSON converter format with its schema, as the sink reads it."""
    return json.dumps({"schema": SCHEMA, "payload": {
        "id": i, "status": ("new", "paid", "sent")[i % 3], "amount": i * 1.25}})


@pytest.fixture(scope="module")
def worker(lab: Lab) -> Iterator[LabNode]:
    with connect_worker(lab) as node:
        yield node


def produce(lab: Lab, topic: str, numbers: range) -> None:
    """Records ``numbers`` to ``topic`` (one partition: the sink reads them in order), keyed
    by their number."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    if topic not in admin(lab).list_topics(timeout=10).topics:
        admin(lab).create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for i in numbers:
        producer.produce(topic, key=str(i), value=value(i))
    assert producer.flush(60) == 0, "records still unsent after 60 s"


def rows_in(postgres: Postgres, table: str, where: str = "true") -> int:
    try:
        return int(postgres.psql(f"select count(*) from {table} where {where}"))
    except RuntimeError:  # the sink has not created the table yet
        return 0


def run_pipeline(lab: Lab, worker: LabNode, postgres: Postgres, mode: str
                 ) -> tuple[str, str, str]:
    """The topic, the table and the connector after the records, the kill, the restart
    and a last record (whose arrival says every record before it in the one partition
    arrived again). The caller deletes the connector."""
    suffix = uuid.uuid4().hex[:6]
    topic, table, name = f"jdbc-{mode}-{suffix}", f"jdbc_{mode}_{suffix}", f"jdbc-{mode}-{suffix}"
    produce(lab, topic, range(N))
    keys = ({"primary.key.mode": "record_value", "primary.key.fields": "id"}
            if mode == "upsert" else {"primary.key.mode": "none"})
    start_connector(worker, name, jdbc_sink(
        postgres, topic, table, **{"insert.mode": mode}, **keys,
        **{"key.converter": "org.apache.kafka.connect.storage.StringConverter",
           "value.converter": "org.apache.kafka.connect.json.JsonConverter",
           "value.converter.schemas.enable": "true"}))
    wait_until(lambda: rows_in(postgres, table) >= N, 120, f"{N} rows in {table}")
    assert lab.kaudit("kill", str(CONNECT_ID), "--signal", "KILL").code == 0
    restarted = lab.kaudit("start", str(CONNECT_ID))
    assert restarted.code == 0, restarted.stderr
    produce(lab, topic, range(N, N + 1))
    wait_until(lambda: rows_in(postgres, table, f"id = {N}") >= 1, 180,
               f"the last record in {table} after the restart")
    return topic, table, name


def sink_args(postgres: Postgres, table: str, tmp_path: Path) -> list[str]:
    password_file = tmp_path / "pw"
    password_file.write_text(postgres.password)
    return ["--sink", f"{postgres.jdbc_url}?table={table}", "--sink-option",
            f"user={postgres.user}", "--sink-option", f"password-file={password_file}"]


def truth(postgres: Postgres, table: str) -> dict[str, Any]:
    """What the table holds, by SQL: keys written more than once, and keys missing."""
    duplicated = int(postgres.psql(
        f"select count(*) from (select id from {table} group by id having count(*) > 1) d"))
    distinct = int(postgres.psql(f"select count(distinct id) from {table}"))
    return {"duplicated": duplicated, "missing": N + 1 - distinct,
            "rows": int(postgres.psql(f"select count(*) from {table}"))}


def test_insert_mode_writes_every_redelivered_record_again(
        lab: Lab, worker: LabNode, postgres: Postgres, tmp_path: Path) -> None:
    topic, table, name = run_pipeline(lab, worker, postgres, "insert")
    sql = truth(postgres, table)
    assert sql["duplicated"] > 0, sql  # the redelivery happened, as the test makes certain
    try:
        # With the connector named: every duplicate is the restart's redelivery, as the
        # status topic shows it (the task's RUNNING again, after each record was written).
        code, doc, stderr = reconcile(
            lab, "--topic", topic, "--envelope", "connect", "--key", "id",
            "--compare", "status,amount", *sink_args(postgres, table, tmp_path),
            *pipeline_args(worker, name))
        assert code == 1, stderr
        counts = doc["counts"]
        assert (counts["duplicated_in_sink"], counts["missing_in_sink"], counts["mismatched"],
                counts["extra_in_sink"]) == (sql["duplicated"], sql["missing"], 0, 0), counts
        assert counts["sink_rows"] == sql["rows"]
        assert doc["causes"] == {"duplicated_in_sink": {
            "redelivered_after_restart": sql["duplicated"]}}, doc["pipeline"]
        shown = doc["samples"]["duplicated_in_sink"]
        assert shown and all(s["cause"]["task"] == 0 for s in shown)
        # The worker commits every 10 minutes: no offset yet, and that is said.
        assert set(doc["pipeline"]["unread"]) == {"committed offsets"}, doc["pipeline"]
        assert doc["pipeline"]["restarts"]
        assert postgres.password not in json.dumps(doc) + stderr
    finally:
        delete_connector(worker, name)
        admin(lab).delete_topics([topic])


def test_upsert_mode_writes_each_once_and_a_row_deleted_by_hand_is_found(
        lab: Lab, worker: LabNode, postgres: Postgres, tmp_path: Path) -> None:
    topic, table, name = run_pipeline(lab, worker, postgres, "upsert")
    delete_connector(worker, name)
    assert truth(postgres, table) == {"duplicated": 0, "missing": 0, "rows": N + 1}
    postgres.psql(f"delete from {table} where id in "
                  f"({','.join(str(i) for i in DELETED_BY_HAND)})")
    sql = truth(postgres, table)
    try:
        code, doc, stderr = reconcile(
            lab, "--topic", topic, "--envelope", "connect", "--key", "id",
            "--compare", "status,amount", "--samples", "10",
            *sink_args(postgres, table, tmp_path))
        assert code == 1, stderr
        counts = doc["counts"]
        assert (counts["missing_in_sink"], counts["duplicated_in_sink"], counts["mismatched"],
                counts["extra_in_sink"]) == (sql["missing"], 0, 0, 0), counts
        assert {int(s["key"]) for s in doc["samples"]["missing_in_sink"]} == DELETED_BY_HAND
    finally:
        admin(lab).delete_topics([topic])
