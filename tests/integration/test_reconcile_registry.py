"""`reconcile --schema-registry URL`: the writer schemas of Confluent-framed Avro values and
keys read from a real Schema Registry (Apicurio's Confluent-compatible API), under the
topic's subjects, with the schema ids the registry gave; a record framed with an id the
subject lacks is undecodable, said so; credentials in the URL never shown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab, run_kaudit
from tests.integration.test_lab import admin
from tests.integration.test_reconcile import create_topic, reconcile
from tests.integration.test_reconcile_avro import V1, V2, framed
from tests.integration.test_reconcile_avro_keys import KEY, ids_of, region
from tests.registry import SchemaRegistry

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.usefixtures("local_spark")]

N = 60
V2_FROM = 30
MISSING = {3, 44}
CHANGED = {12, 50}
SECRET = "registry-secret-pw"


@pytest.fixture(scope="module")
def registry(schema_registry: SchemaRegistry) -> SchemaRegistry:
    return schema_registry


def order(i: int) -> dict[str, Any]:
    amount = i if i < V2_FROM else i + 0.5
    return {"id": i, "status": "new", "amount": amount, "note": None,
            "customer": {"id": i % 7}, "currency": "USD"}


@pytest.fixture(scope="module")
def registered_topic(lab: Lab, registry: SchemaRegistry) -> Iterator[dict[str, Any]]:
    from confluent_kafka import Producer

    name = create_topic(lab, "registry-orders", 2)
    v1, v2 = (registry.register(f"{name}-value", schema) for schema in (V1, V2))
    key_id = registry.register(f"{name}-key", KEY)
    stray = max(v1, v2, key_id) + 100  # an id no subject of this topic has
    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for i in range(N):
        value = framed(v1, V1, order(i)) if i < V2_FROM else framed(v2, V2, order(i))
        key = framed(key_id, KEY, {"region": region(i), "id": i})
        producer.produce(name, key=key, value=value)
    key = framed(key_id, KEY, {"region": "us", "id": 9000})
    producer.produce(name, key=key, value=framed(stray, V2, order(9000)))
    assert producer.flush(30) == 0, "records still unsent after 30 s"
    yield {"name": name, "stray": stray}
    admin(lab).delete_topics([name])


@pytest.fixture(scope="module")
def sink(local_spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows = [{"region": region(i), "id": i, "status": "new",
             "amount": float(order(i)["amount"]) + (1.0 if i in CHANGED else 0.0)}
            for i in range(N) if i not in MISSING]
    dst = tmp_path_factory.mktemp("registry-sink") / "orders.parquet"
    local_spark.createDataFrame(rows, "region STRING, id BIGINT, status STRING, amount DOUBLE"
                                ).coalesce(1).write.parquet(str(dst))
    return dst


def test_values_and_keys_decoded_with_the_registrys_schemas(
        lab: Lab, registry: SchemaRegistry, registered_topic: dict[str, Any],
        sink: Path) -> None:
    url = registry.url.replace("http://", f"http://kaudit:{SECRET}@")
    code, doc, stderr = reconcile(
        lab, "--topic", registered_topic["name"], "--schema-registry", url,
        "--value-format", "avro", "--key-format", "avro", "--key", "@key",
        "--compare", "status,amount", "--sink", f"parquet:{sink}", "--samples", "10")
    assert code == 1, stderr
    counts = doc["counts"]
    # The stray record's value does not decode, its key does: it keeps the key (us|9000),
    # which no sink row has, so it is missing too.
    assert (counts["missing_in_sink"], counts["mismatched"], counts["extra_in_sink"],
            counts["duplicated_in_sink"], counts["undecodable"]) == (
        len(MISSING) + 1, len(CHANGED), 0, 0, 1), json.dumps(doc["samples"])
    assert ids_of(doc, "missing_in_sink") == MISSING | {9000}
    assert ids_of(doc, "mismatched") == CHANGED  # one of each schema version
    [stray] = doc["samples"]["undecodable"]
    subject = f"{registered_topic['name']}-value"
    assert stray["topic_value"].startswith(
        f"schema id {registered_topic['stray']}: not a version of subject {subject} in the "
        "registry"), stray
    assert SECRET not in json.dumps(doc) + stderr


def test_a_topic_without_a_subject_is_exit_2(
        lab: Lab, registry: SchemaRegistry, sink: Path) -> None:
    name = "no-such-subject"
    result = run_kaudit("reconcile", "-b", lab.bootstrap, "--topic", name, "--value-format",
                        "avro", "--schema-registry", registry.url, "--key", "id",
                        "--sink", f"parquet:{sink}")
    assert (result.code, result.stderr.strip()) == (
        2, f"kaudit: error: schema registry {registry.url}: no schema under subject "
           f"{name}-value: name the subject's schemas with files instead, or check the "
           "topic's name, or name the subject with --value-subject"), result.stderr


RECORD_SUBJECT = "shop.Order"
"""The values' subject under RecordNameStrategy: the record's full name (V1's and V2's)."""


@pytest.fixture(scope="module")
def record_named_topic(lab: Lab, registry: SchemaRegistry) -> Iterator[str]:
    """A topic whose value schemas are registered under the record's name, not the topic's:
    the schema ids its records carry are those of subject shop.Order."""
    from confluent_kafka import Producer

    name = create_topic(lab, "registry-record-named", 2)
    v1, v2 = (registry.register(RECORD_SUBJECT, schema) for schema in (V1, V2))
    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for i in range(N):
        producer.produce(name, key=str(i).encode(), value=framed(
            v1, V1, order(i)) if i < V2_FROM else framed(v2, V2, order(i)))
    assert producer.flush(30) == 0, "records still unsent after 30 s"
    yield name
    admin(lab).delete_topics([name])


def test_value_subject_reads_the_schemas_of_a_record_named_subject(
        lab: Lab, registry: SchemaRegistry, record_named_topic: str, sink: Path) -> None:
    common = ("--topic", record_named_topic, "--schema-registry", registry.url,
              "--value-format", "avro", "--key", "id", "--compare", "status,amount",
              "--sink", f"parquet:{sink}")
    # By default the subject is the topic's, which this registry does not have.
    code, _, stderr = reconcile(lab, *common)
    assert code == 2 and f"no schema under subject {record_named_topic}-value" in stderr, \
        stderr
    code, doc, stderr = reconcile(lab, *common, "--value-subject", RECORD_SUBJECT,
                                  "--samples", "10")
    assert code == 1, stderr
    counts = doc["counts"]
    assert (counts["missing_in_sink"], counts["mismatched"], counts["extra_in_sink"],
            counts["duplicated_in_sink"], counts["undecodable"]) == (
        len(MISSING), len(CHANGED), 0, 0, 0), json.dumps(doc["samples"])
    assert {int(s["key"]) for s in doc["samples"]["mismatched"]} == CHANGED
    # A named subject the registry lacks: its own name in the message, exit 2.
    code, _, stderr = reconcile(lab, *common, "--value-subject", "shop.Nothing")
    assert code == 2 and stderr.strip().endswith(
        "no schema under subject shop.Nothing: name the subject's schemas with files "
        "instead, or check the subject's name"), stderr
