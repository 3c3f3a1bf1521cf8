"""`reconcile --envelope debezium`: a table's change events (Debezium's documented JSON
envelope, with and without Kafka Connect's schema/payload wrapper; written by the test until
the lab runs Kafka Connect) reconciled in upsert mode against a PostgreSQL table with known
faults: stale rows are mismatched, deleted rows still present are extra, rows never written
are missing."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab, run_kaudit
from tests.integration.test_lab import admin
from tests.integration.test_reconcile import keys_of, reconcile
from tests.integration.test_reconcile_evolving import produce
from tests.pg import Postgres

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.usefixtures("local_spark")]

N = 120
SNAPSHOT = set(range(0, 30))  # op r: read by the connector's initial snapshot
UPDATED = set(range(50, 70))  # op u after the create
DELETED = {5, 60, 90}  # op d, then a tombstone
MISSING = {7, 100}  # never written to the sink
STALE = {55, 65}  # the sink kept the value from before the update
KEPT_DELETED = {90}  # deleted in the topic, still in the sink
EXTRA = {1000}
NO_OP = 9001


def row(i: int, updated: bool = False) -> dict[str, Any]:
    return {"id": i, "status": "paid" if updated else "new",
            "amount": i * 1.5 + (10 if updated else 0)}


def event(op: str, i: int, wrapped: bool) -> str:
    before = row(i, updated=i in UPDATED and op == "d") if op in ("u", "d") else None
    if op == "u":
        before = row(i)
    after = None if op == "d" else row(i, updated=op == "u")
    payload = {"before": before, "after": after, "op": op, "ts_ms": 1_700_000_000_000 + i,
               "source": {"connector": "postgresql", "db": "shop", "table": "orders",
                          "lsn": 1000 + i, "ts_ms": 1_699_999_999_000 + i},
               "transaction": transaction(i) if op == "u" else None}
    if not wrapped:
        return json.dumps(payload)
    schema = {"type": "struct", "name": "shop.public.orders.Envelope", "fields": []}
    return json.dumps({"schema": schema, "payload": payload})


def transaction(i: int) -> dict[str, Any]:
    """Debezium's transaction metadata (provide.transaction.metadata=true)."""
    return {"id": f"571:{53000 + i}", "total_order": 1, "data_collection_order": 1}


def key(i: int) -> str:
    return json.dumps({"id": i})


def events() -> tuple[list[str], list[str | None]]:
    keys: list[str] = []
    values: list[str | None] = []
    for i in range(N):
        keys.append(key(i))
        values.append(event("r" if i in SNAPSHOT else "c", i, wrapped=i % 2 == 0))
    for i in sorted(UPDATED):
        keys.append(key(i))
        values.append(event("u", i, wrapped=i % 3 == 0))
    for i in sorted(DELETED):
        keys += [key(i), key(i)]
        values += [event("d", i, wrapped=i % 2 == 1), None]  # the delete, then a tombstone
    return keys, values


@pytest.fixture(scope="module")
def cdc_topic(lab: Lab) -> Iterator[str]:
    name = f"cdc-orders-{uuid.uuid4().hex[:6]}"
    keys, values = events()
    produce(lab, name, values, keys)
    yield name
    admin(lab).delete_topics([name])


@pytest.fixture(scope="module")
def sink_table(postgres: Postgres) -> str:
    table = f"cdc_orders_{uuid.uuid4().hex[:6]}"
    postgres.psql(f"create table {table} (id bigint primary key, status text, "
                  "amount double precision)")
    rows = []
    for i in range(N):
        if i in MISSING or (i in DELETED and i not in KEPT_DELETED):
            continue
        r = row(i, updated=i in UPDATED and i not in STALE)
        rows.append(f"({i},'{r['status']}',{r['amount']})")
    rows += [f"({i},'new',1.0)" for i in EXTRA]
    postgres.psql(f"insert into {table} values {','.join(rows)}")
    return table


def sink_args(postgres: Postgres, table: str, tmp_path: Path) -> list[str]:
    password_file = tmp_path / "pw"
    password_file.write_text(postgres.password)
    return ["--sink", f"{postgres.jdbc_url}?table={table}", "--sink-option",
            f"user={postgres.user}", "--sink-option", f"password-file={password_file}"]


def assert_the_known_faults_with_their_events(doc: dict[str, Any]) -> None:
    """The verdict on the module's change history against its table, each sample with the
    change event behind it."""
    counts = doc["counts"]
    assert doc["mode"] == "upsert"
    assert (counts["missing_in_sink"], counts["extra_in_sink"], counts["mismatched"],
            counts["duplicated_in_sink"], counts["undecodable"]) == (
        len(MISSING), len(EXTRA | KEPT_DELETED), 2 * len(STALE), 0, 0), counts  # 2 columns
    assert keys_of(doc, "missing_in_sink") == MISSING
    assert keys_of(doc, "extra_in_sink") == EXTRA | KEPT_DELETED
    assert keys_of(doc, "mismatched") == STALE
    assert {s["column"] for s in doc["samples"]["mismatched"]} == {"status", "amount"}
    # Each sample says which change event it comes from: when, and in which transaction.
    for sample in doc["samples"]["mismatched"]:
        i = int(sample["key"])
        assert sample["event"] == {"op": "u", "ts_ms": 1_700_000_000_000 + i,
                                   "source_ts_ms": 1_699_999_999_000 + i,
                                   "transaction": transaction(i)}, sample
    # A row deleted in the topic and kept in the sink points at its delete event; a row the
    # topic never had, at nothing.
    extra = {int(s["key"]): s["event"] for s in doc["samples"]["extra_in_sink"]}
    assert extra[1000] is None
    assert [extra[i]["op"] for i in KEPT_DELETED] == ["d"] * len(KEPT_DELETED), extra


def test_the_topics_final_state_per_key_against_postgresql(
        lab: Lab, cdc_topic: str, postgres: Postgres, sink_table: str, tmp_path: Path) -> None:
    code, doc, stderr = reconcile(
        lab, "--topic", cdc_topic, "--envelope", "debezium", "--key", "id",
        "--compare", "status,amount", "--samples", "10",
        *sink_args(postgres, sink_table, tmp_path))
    assert code == 1, stderr
    assert_the_known_faults_with_their_events(doc)


def test_an_event_without_op_is_exit_2_when_sampled_and_undecodable_when_not(
        lab: Lab, postgres: Postgres, sink_table: str, tmp_path: Path) -> None:
    name = f"cdc-bad-{uuid.uuid4().hex[:6]}"
    keys, values = events()
    produce(lab, name, [*values, json.dumps({"after": row(NO_OP)})], [*keys, key(NO_OP)])
    try:
        sink = sink_args(postgres, sink_table, tmp_path)
        result = run_kaudit("reconcile", "-b", lab.bootstrap, "--topic", name, "--envelope",
                            "debezium", "--key", "id", "--compare", "status,amount", *sink)
        assert result.code == 2, result.stderr
        assert result.stderr.startswith(f"kaudit: error: topic {name}: a sampled value has "
                                        'no "op": not a Debezium change event')
        # --schema names the types: no sample is read, and Spark finds the event.
        code, doc, stderr = reconcile(
            lab, "--topic", name, "--envelope", "debezium", "--key", "id", "--compare",
            "status,amount", "--schema", "id BIGINT, status STRING, amount DOUBLE", *sink)
        assert code == 1 and doc["counts"]["undecodable"] == 1, stderr
        [bad] = doc["samples"]["undecodable"]
        assert bad["column"] == "op" and '"after"' in bad["topic_value"]
        assert doc["counts"]["missing_in_sink"] == len(MISSING)
    finally:
        admin(lab).delete_topics([name])



ROW_SCHEMA = {"type": "record", "name": "Value", "namespace": "shop.public.orders",
              "fields": [{"name": "id", "type": "long"}, {"name": "status", "type": "string"},
                         {"name": "amount", "type": "double"}]}
ENVELOPE_SCHEMA = {
    "type": "record", "name": "Envelope", "namespace": "shop.public.orders",
    "fields": [
        {"name": "before", "type": ["null", ROW_SCHEMA], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {"name": "source", "type": {"type": "record", "name": "Source", "fields": [
            {"name": "connector", "type": "string"}, {"name": "db", "type": "string"},
            {"name": "table", "type": "string"}, {"name": "lsn", "type": "long"},
            {"name": "ts_ms", "type": "long"}]}},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
        {"name": "transaction", "default": None, "type": ["null", {
            "type": "record", "name": "block", "namespace": "event", "fields": [
                {"name": "id", "type": "string"}, {"name": "total_order", "type": "long"},
                {"name": "data_collection_order", "type": "long"}]}]}]}
"""Debezium's Avro envelope for the same table (what its Avro converter registers)."""


def test_avro_events_are_reconciled_alike_and_their_samples_show_the_event(
        lab: Lab, postgres: Postgres, sink_table: str, tmp_path: Path) -> None:
    """The same change events in Confluent-framed Avro (written with fastavro): the same
    verdict against the same table, and each sample's event decoded in Spark."""
    from tests.unit.reconcile.test_decode_avro import framed

    keys, texts = events()
    values = [None if text is None else framed(
        12, ENVELOPE_SCHEMA, json.loads(text).get("payload", json.loads(text)))
        for text in texts]
    name = f"cdc-orders-avro-{uuid.uuid4().hex[:6]}"
    produce(lab, name, values, keys)  # type: ignore[arg-type]
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "12.avsc").write_text(json.dumps(ENVELOPE_SCHEMA))
    try:
        code, doc, stderr = reconcile(
            lab, "--topic", name, "--envelope", "debezium", "--value-format", "avro",
            "--value-schema", str(schemas), "--key", "id", "--compare", "status,amount",
            "--samples", "10", *sink_args(postgres, sink_table, tmp_path))
    finally:
        admin(lab).delete_topics([name])
    assert code == 1, stderr
    assert_the_known_faults_with_their_events(doc)
