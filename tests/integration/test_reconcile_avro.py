"""`reconcile --value-format avro`: Confluent-framed Avro written with a real Avro library
(fastavro) under two schema versions (a promoted type, a field added with a default),
decoded by spark-avro, reconciled exactly against Parquet and PostgreSQL sinks with known
faults; a bad magic byte, an unknown schema id and a truncated body are each undecodable
with their reason, among valid records. One schema file not named by its id: used for the
one id the range carries, and refused before Spark where it carries several."""

from __future__ import annotations

import io
import json
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab
from tests.integration.test_lab import admin
from tests.integration.test_reconcile import create_topic, keys_of, placing, reconcile
from tests.pg import Postgres

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.usefixtures("local_spark")]

N = 200
V2_FROM = 100  # records 0-99 written with schema 1, 100-199 with schema 2
MISSING = {3, 150}
DUPLICATED = {10, 120}
CHANGED = {20, 160}
EXTRA = {1000}
TOMBSTONED = {40, 140}
NO_NOTE = {5, 105}  # the nullable field is null in the record
BAD = {"bad_magic": 9001, "unknown_id": 9002, "truncated": 9003}

CUSTOMER = {"type": "record", "name": "Customer", "fields": [{"name": "id", "type": "int"}]}
V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "status", "type": "string"},
    {"name": "amount", "type": "int"},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "customer", "type": CUSTOMER}]}
V2 = {**V1, "fields": [
    *V1["fields"][:2],
    {"name": "amount", "type": "double"},  # int -> double: a promotion
    *V1["fields"][3:],
    {"name": "currency", "type": "string", "default": "EUR"}]}


def amount(i: int) -> float:
    return float(i) if i < V2_FROM else i + 0.25


def order(i: int) -> dict[str, Any]:
    return {"id": i, "status": "new", "amount": int(amount(i)) if i < V2_FROM else amount(i),
            "note": None if i in NO_NOTE else f"n{i}", "customer": {"id": i % 7},
            "currency": "USD"}


def framed(schema_id: int, schema: Any, record: dict[str, Any]) -> bytes:
    """Confluent's wire format: magic byte 0, the schema id (4 bytes, big-endian), the body."""
    import fastavro

    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), record)
    return b"\x00" + struct.pack(">I", schema_id) + body.getvalue()


@pytest.fixture(scope="module")
def avro_topic(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from confluent_kafka import Producer

    schemas = tmp_path_factory.mktemp("schemas")
    (schemas / "1.avsc").write_text(json.dumps(V1, indent=2))
    (schemas / "2.avsc").write_text(json.dumps(V2, indent=2))
    name = create_topic(lab, "avro-orders", 3)
    placed: dict[int, tuple[int, int]] = {}
    record = placing(placed)
    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for i in range(N):
        value = framed(1, V1, order(i)) if i < V2_FROM else framed(2, V2, order(i))
        producer.produce(name, key=str(i), value=value, on_delivery=record)
    good = framed(2, V2, order(7))
    bad = {BAD["bad_magic"]: b"\x01" + good[1:],
           BAD["unknown_id"]: b"\x00" + struct.pack(">I", 9) + good[5:],
           BAD["truncated"]: good[:9]}
    for key, value in bad.items():
        producer.produce(name, key=str(key), value=value, on_delivery=record)
    for i in TOMBSTONED:
        producer.produce(name, key=str(i), value=None)
    assert producer.flush(30) == 0, "records still unsent after 30 s"
    yield {"name": name, "schemas": schemas, "placed": placed}
    admin(lab).delete_topics([name])


def sink_rows(drop_tombstoned: bool) -> list[dict[str, Any]]:
    rows = []
    for i in range(N):
        if i in MISSING or (drop_tombstoned and i in TOMBSTONED):
            continue
        row = {"id": i, "status": "new", "amount": amount(i) + (1.0 if i in CHANGED else 0.0),
               "note": None if i in NO_NOTE else f"n{i}", "customer_id": i % 7}
        rows.append(row)
        if i in DUPLICATED:
            rows.append(dict(row))
    return rows + [{"id": i, "status": "new", "amount": 1.0, "note": None, "customer_id": 0}
                   for i in EXTRA]


@pytest.fixture(scope="module")
def parquet_sink(local_spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Written by the suite's own Spark session (no second driver to start)."""
    dst = tmp_path_factory.mktemp("avro-sink") / "orders.parquet"
    local_spark.createDataFrame(
        sink_rows(drop_tombstoned=True),
        "id BIGINT, status STRING, amount DOUBLE, note STRING, customer_id INT",
    ).coalesce(1).write.parquet(str(dst))
    return dst


def _assert_undecodable_exactly(doc: dict[str, Any], placed: dict[int, tuple[int, int]]
                                ) -> None:
    assert doc["counts"]["undecodable"] == len(BAD)
    samples = doc["samples"]["undecodable"]
    by_place = {(s["partition"], s["offset"]): s["topic_value"] for s in samples}
    why = {key: by_place[placed[key]] for key in BAD.values()}
    assert why[BAD["bad_magic"]].startswith("magic byte 0x01, not 0x00"), why
    assert why[BAD["unknown_id"]].startswith("schema id 9: no 9.avsc"), why
    assert why[BAD["truncated"]].startswith("the body does not decode with schema id 2"), why


def test_two_schema_versions_against_parquet_in_append_mode(
        lab: Lab, avro_topic: dict[str, Any], parquet_sink: Path) -> None:
    code, doc, stderr = reconcile(
        lab, "--topic", avro_topic["name"], "--value-format", "avro",
        "--value-schema", str(avro_topic["schemas"]), "--sink", f"parquet:{parquet_sink}",
        "--key", "id", "--compare", "status,amount,note,customer.id", "--samples", "10")
    assert code == 1, stderr
    counts = doc["counts"]
    assert counts["topic_records"] == N + len(BAD)  # the tombstones are not records
    # A tombstoned key's row was dropped from this sink: in append mode it is missing.
    assert (counts["missing_in_sink"], counts["extra_in_sink"], counts["duplicated_in_sink"],
            counts["mismatched"]) == (len(MISSING | TOMBSTONED), len(EXTRA), len(DUPLICATED),
                                      len(CHANGED)), json.dumps([counts, doc["samples"]])
    assert keys_of(doc, "missing_in_sink") == MISSING | TOMBSTONED
    assert keys_of(doc, "duplicated_in_sink") == DUPLICATED
    assert keys_of(doc, "mismatched") == CHANGED  # one of each schema version
    assert {s["column"] for s in doc["samples"]["mismatched"]} == {"amount"}
    _assert_undecodable_exactly(doc, avro_topic["placed"])
    assert "undecodable sample says why" in stderr


def test_avro_read_as_json_is_exit_2_before_spark_with_the_format_to_use(
        lab: Lab, avro_topic: dict[str, Any], parquet_sink: Path) -> None:
    code, doc, stderr = reconcile(
        lab, "--topic", avro_topic["name"], "--sink", f"parquet:{parquet_sink}", "--key", "id",
        "--compare", "status")
    framed = N + len(BAD) - 1  # all but the record with the bad magic byte
    assert (code, doc) == (2, {}), stderr
    assert stderr == (
        f"kaudit: error: topic {avro_topic['name']} values have no field 'id' in the "
        f"{N + len(BAD)} records sampled from each partition's start and end (none of them "
        f"is a JSON object: {framed} of {N + len(BAD)} start as Confluent's Avro framing "
        "does, a zero byte and a schema id: --value-format avro reads them)\n")


def test_upsert_mode_against_postgres_with_tombstones(
        lab: Lab, avro_topic: dict[str, Any], postgres: Postgres, tmp_path: Path) -> None:
    table = f"avro_orders_{uuid.uuid4().hex[:6]}"
    postgres.psql(f"create table {table} (id bigint, status text, amount double precision, "
                  "note text, customer_id int)")
    rows = sink_rows(drop_tombstoned=False)  # tombstoned keys still present: extra
    postgres.psql(f"insert into {table} values " + ",".join(
        f"({r['id']},'{r['status']}',{r['amount']},"
        f"{'null' if r['note'] is None else repr(r['note'])},{r['customer_id']})"
        for r in rows))
    password_file = tmp_path / "pw"
    password_file.write_text(postgres.password)
    code, doc, stderr = reconcile(
        lab, "--topic", avro_topic["name"], "--value-format", "avro",
        "--value-schema", str(avro_topic["schemas"]),
        "--sink", f"{postgres.jdbc_url}?table={table}", "--sink-option", f"user={postgres.user}",
        "--sink-option", f"password-file={password_file}", "--mode", "upsert", "--key", "id",
        "--compare", "status,amount,note", "--samples", "10")
    assert code == 1, stderr
    counts = doc["counts"]
    assert (counts["missing_in_sink"], counts["extra_in_sink"], counts["duplicated_in_sink"],
            counts["mismatched"]) == (len(MISSING), len(EXTRA | TOMBSTONED), len(DUPLICATED),
                                      len(CHANGED)), json.dumps([counts, doc["samples"]])
    assert keys_of(doc, "extra_in_sink") == EXTRA | TOMBSTONED
    assert keys_of(doc, "mismatched") == CHANGED
    _assert_undecodable_exactly(doc, avro_topic["placed"])
    assert postgres.password not in json.dumps(doc) + stderr


ONE_ID = 17  # the id a registry gave the one schema; the user's file is named order.avsc


@pytest.fixture(scope="module")
def one_id_topic(lab: Lab, local_spark: Any, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[dict[str, Any]]:
    """Confluent-framed records all of one schema id, its schema in a file not named by
    it, and a Parquet sink equal to them."""
    from confluent_kafka import Producer

    home = tmp_path_factory.mktemp("one-id")
    (home / "order.avsc").write_text(json.dumps(V2, indent=2))
    name = create_topic(lab, "avro-one-id", 3)
    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for i in range(V2_FROM, N):
        producer.produce(name, key=str(i), value=framed(ONE_ID, V2, order(i)))
    assert producer.flush(30) == 0, "records still unsent after 30 s"
    sink = home / "orders.parquet"
    local_spark.createDataFrame(
        [{"id": i, "status": "new", "amount": amount(i)} for i in range(V2_FROM, N)],
        "id BIGINT, status STRING, amount DOUBLE").coalesce(1).write.parquet(str(sink))
    yield {"name": name, "schema": home / "order.avsc", "sink": sink}
    admin(lab).delete_topics([name])


def test_one_schema_file_is_used_for_the_one_id_the_range_carries_and_named(
        lab: Lab, one_id_topic: dict[str, Any]) -> None:
    code, doc, stderr = reconcile(
        lab, "--topic", one_id_topic["name"], "--value-format", "avro",
        "--value-schema", str(one_id_topic["schema"]),
        "--sink", f"parquet:{one_id_topic['sink']}", "--key", "id",
        "--compare", "status,amount")
    assert code == 0, stderr
    assert doc["counts"]["topic_records"] == N - V2_FROM
    assert doc["source"]["value_schemas"] == {
        "writers": [{"schema_id": ONE_ID, "source": str(one_id_topic["schema"])}],
        "reader": str(one_id_topic["schema"]), "id_from_topic": True}


def test_one_schema_file_for_several_ids_is_exit_2_before_spark_naming_them(
        lab: Lab, avro_topic: dict[str, Any], parquet_sink: Path, tmp_path: Path) -> None:
    one_file = tmp_path / "order.avsc"
    one_file.write_text(json.dumps(V2))
    code, doc, stderr = reconcile(
        lab, "--topic", avro_topic["name"], "--value-format", "avro",
        "--value-schema", str(one_file), "--sink", f"parquet:{parquet_sink}",
        "--key", "id", "--compare", "status")
    assert (code, doc) == (2, {}), stderr
    # Ids 1 and 2, and the record written with an unknown id 9: every record was sampled.
    assert stderr == (
        f"kaudit: error: --value-schema {one_file}: one schema file, but the {N + len(BAD)} "
        "records sampled from both ends of each partition carry schema ids 1, 2, 9: give a "
        "directory of the writer schemas named by their ids (1.avsc, 2.avsc, 9.avsc)\n")
