"""`reconcile --key-format avro`: message keys in Confluent's wire format (a composite key
record written with fastavro), decoded by spark-avro and matched with the sink's columns of
the same names; tombstones delete by their decoded key; a key with a bad magic byte or an
unknown schema id makes its record undecodable, with why."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab
from tests.integration.test_lab import admin
from tests.integration.test_reconcile import create_topic, reconcile
from tests.integration.test_reconcile_avro import framed

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.usefixtures("local_spark")]

N = 120
MISSING = {4, 77}
CHANGED = {9, 100}
TOMBSTONED = {15, 60, 61}
EXTRA = {500}
BAD_KEYS = {"bad_magic": 9001, "unknown_id": 9002}

KEY = {"type": "record", "name": "OrderKey", "namespace": "shop", "fields": [
    {"name": "region", "type": "string"}, {"name": "id", "type": "long"}]}
KEY_ID = 3
VALUE = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "region", "type": "string"}, {"name": "id", "type": "long"},
    {"name": "amount", "type": "double"}]}
VALUE_ID = 4


def region(i: int) -> str:
    return "eu" if i % 2 else "us"


def key_of(i: int) -> bytes:
    return framed(KEY_ID, KEY, {"region": region(i), "id": i})


def ids_of(doc: dict[str, Any], cls: str) -> set[int]:
    """The ids of a class's samples (the key text is the key record's fields: region|id)."""
    return {int(s["key"].split("|")[1]) for s in doc["samples"].get(cls, [])}


@pytest.fixture(scope="module")
def keyed_topic(lab: Lab, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[dict[str, Any]]:
    from confluent_kafka import Producer

    schemas = tmp_path_factory.mktemp("key-schemas")
    (schemas / "keys").mkdir()
    (schemas / "values").mkdir()
    (schemas / "keys" / f"{KEY_ID}.avsc").write_text(json.dumps(KEY))
    (schemas / "values" / f"{VALUE_ID}.avsc").write_text(json.dumps(VALUE))
    name = create_topic(lab, "avro-keys", 3)
    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for i in range(N):
        value = {"region": region(i), "id": i, "amount": i * 1.5}
        producer.produce(name, key=key_of(i), value=framed(VALUE_ID, VALUE, value))
    for i in sorted(TOMBSTONED):
        producer.produce(name, key=key_of(i), value=None)
    valid = framed(VALUE_ID, VALUE, {"region": "us", "id": 7000, "amount": 1.0})
    producer.produce(name, key=b"\x01" + key_of(7000)[1:], value=valid)
    producer.produce(name, key=b"\x00" + struct.pack(">I", 8) + key_of(7000)[5:], value=valid)
    assert producer.flush(30) == 0, "records still unsent after 30 s"
    yield {"name": name, "schemas": schemas}
    admin(lab).delete_topics([name])


@pytest.fixture(scope="module")
def sink(local_spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sink as an upsert pipeline left it: tombstoned rows still in it (extra)."""
    rows = [{"region": region(i), "id": i, "amount": i * 1.5 + (1.0 if i in CHANGED else 0)}
            for i in range(N) if i not in MISSING]
    rows += [{"region": "us", "id": i, "amount": 0.0} for i in EXTRA]
    dst = tmp_path_factory.mktemp("avro-keys-sink") / "orders.parquet"
    local_spark.createDataFrame(rows, "region STRING, id BIGINT, amount DOUBLE"
                                ).coalesce(1).write.parquet(str(dst))
    return dst


@pytest.mark.parametrize("key", ["@key", "region,id"])
def test_avro_keys_match_the_sinks_columns_and_tombstones_delete_by_them(
        lab: Lab, keyed_topic: dict[str, Any], sink: Path, key: str) -> None:
    """``@key``: the key record's fields against the sink's region and id columns; the
    same fields read from the value give the same verdict, a tombstone (which has no value)
    matched by its decoded key either way."""
    schemas = keyed_topic["schemas"]
    code, doc, stderr = reconcile(
        lab, "--topic", keyed_topic["name"], "--key-format", "avro",
        "--key-schema", str(schemas / "keys"), "--value-format", "avro",
        "--value-schema", str(schemas / "values"), "--sink", f"parquet:{sink}",
        "--mode", "upsert", "--key", key, "--compare", "amount", "--samples", "10")
    assert code == 1, stderr
    counts = doc["counts"]
    assert (counts["missing_in_sink"], counts["extra_in_sink"], counts["mismatched"],
            counts["duplicated_in_sink"], counts["undecodable"]) == (
        len(MISSING), len(EXTRA | TOMBSTONED), len(CHANGED), 0, len(BAD_KEYS)), \
        json.dumps(doc["samples"])
    assert ids_of(doc, "missing_in_sink") == MISSING
    assert ids_of(doc, "extra_in_sink") == EXTRA | TOMBSTONED
    assert ids_of(doc, "mismatched") == CHANGED
    why = sorted((s["column"], s["topic_value"].split(";")[0])
                 for s in doc["samples"]["undecodable"])
    assert why == [("@key", "the key: magic byte 0x01, not 0x00: not Confluent's wire format"),
                   ("@key", "the key: schema id 8: no 8.avsc among the writer schemas")], why
