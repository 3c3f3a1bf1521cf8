"""`kaudit reconcile` compares numbers exactly in their own types, on a real lab topic of
JSON values against a Parquet file and a PostgreSQL table: a long above 2^53 and the same
long + 1 differ (one double holds both), a decimal differs by 0.01, a JSON integer equals
the same decimal, and the largest and smallest longs are equal to themselves; a text with a
no-break space for a space differs, and the sample says where."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab
from tests.integration.test_lab import admin
from tests.integration.test_reconcile import create_topic, keys_of, reconcile
from tests.pg import Postgres

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.usefixtures("local_spark")]

BIG = 2**53 + 1  # 2^53 and 2^53 + 1 are one double
# id -> (the topic's JSON value text for big and price, the sink's big and price)
ROWS: dict[int, tuple[str, str, int, Decimal]] = {
    1: (str(BIG), "12.50", BIG, Decimal("12.50")),
    2: (str(BIG), "12.50", BIG + 1, Decimal("12.50")),  # differs by 1 in a long: big
    3: (str(2**63 - 1), "0.01", 2**63 - 1, Decimal("0.01")),
    4: ("7", "12.50", 7, Decimal("12.51")),  # differs by 0.01: price
    5: (str(-(2**63)), "10", -(2**63), Decimal("10.00")),  # an integer equals 10.00
    6: ("3000000225", "1e1", 3000000225, Decimal("10.00")),  # 1e1 is 10 too
}
NOTE = "Main St"
NOTES = {6: "Main\u00a0St"}  # the topic's note where it is not NOTE: a no-break space
CHANGED = {2: "big", 4: "price", 6: "note"}


@pytest.fixture(scope="module")
def topic(lab: Lab) -> Iterator[str]:
    from confluent_kafka import Producer

    name = create_topic(lab, "types", 1)
    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for i, (big, price, _, _) in ROWS.items():
        note = json.dumps(NOTES.get(i, NOTE))
        producer.produce(name, key=str(i),
                         value=f'{{"id": {i}, "big": {big}, "price": {price}, "note": {note}}}')
    assert producer.flush(30) == 0
    yield name
    admin(lab).delete_topics([name])


def assert_exact(doc: dict[str, Any]) -> None:
    counts = doc["counts"]
    assert (counts["missing_in_sink"], counts["extra_in_sink"], counts["mismatched"]) == \
        (0, 0, len(CHANGED)), counts
    assert {int(s["key"]): s["column"] for s in doc["samples"]["mismatched"]} == CHANGED
    assert keys_of(doc, "mismatched") == set(CHANGED)
    [note] = [s for s in doc["samples"]["mismatched"] if s["column"] == "note"]
    assert note["difference"] == \
        "character 5: topic U+00A0 NO-BREAK SPACE, sink U+0020 SPACE"
    assert {f["column"]: f["compared_as"] for f in doc["fields"]} == {
        "big": "decimal(38,18)", "price": "decimal(38,18)", "note": "text"}


def test_longs_and_decimals_are_exact_against_parquet(lab: Lab, topic: str, local_spark: Any,
                                                      tmp_path: Path) -> None:
    sink = tmp_path / "types.parquet"
    local_spark.createDataFrame(
        [(i, big, price, NOTE) for i, (_, _, big, price) in ROWS.items()],
        "id BIGINT, big BIGINT, price DECIMAL(12,2), note STRING").coalesce(1).write.parquet(
            str(sink))
    code, doc, stderr = reconcile(lab, "--topic", topic, "--sink", f"parquet:{sink}",
                                  "--key", "id", "--compare", "big,price,note",
                                  "--samples", "10")
    assert code == 1, stderr
    assert_exact(doc)


def test_longs_and_decimals_are_exact_against_postgresql(lab: Lab, topic: str,
                                                         postgres: Postgres,
                                                         tmp_path: Path) -> None:
    table = f"types_{uuid.uuid4().hex[:6]}"
    postgres.psql(f"create table {table} (id bigint, big bigint, price numeric(12,2), "
                  "note text)")
    values = ",".join(f"({i},{big},{price},'{NOTE}')" for i, (_, _, big, price) in ROWS.items())
    postgres.psql(f"insert into {table} values {values}")
    password_file = tmp_path / "pw"
    password_file.write_text(postgres.password)
    code, doc, stderr = reconcile(
        lab, "--topic", topic, "--sink", f"{postgres.jdbc_url}?table={table}",
        "--sink-option", f"user={postgres.user}",
        "--sink-option", f"password-file={password_file}", "--mode", "upsert", "--key", "id",
        "--compare", "big,price,note", "--samples", "10")
    assert code == 1, stderr
    assert_exact(doc)


# Kafka Connect's JSON converter with schemas on: each value names its fields' semantic
# types, as Debezium's PostgreSQL source writes a time, a uuid and a jsonb column.
CONNECT_SCHEMA = {"type": "struct", "fields": [
    {"field": "id", "type": "int64"},
    {"field": "opens", "type": "int64", "name": "io.debezium.time.MicroTime"},
    {"field": "ref", "type": "string", "name": "io.debezium.data.Uuid"},
    {"field": "attrs", "type": "string", "name": "io.debezium.data.Json"},
    {"field": "exact", "type": "string"}]}  # decimal.handling.mode=string: a numeric's text
WIDE = "123456789012345678901234567890123456789012.123456789012345678901"
# id -> the exact column in the topic and in the table (PostgreSQL's bare numeric).
EXACT = {1: ("12.50", "12.5"), 2: (WIDE, WIDE), 3: ("-0.0", "0"), 4: (WIDE, WIDE[:-1] + "2"),
         5: ("1E+3", "1000")}
# id -> (opens in µs of the day, ref, attrs) in the topic; the table holds SINK_ROWS.
TOPIC_ROWS = {
    1: (28800123456, "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", '{"b": 1, "a": [1, 2.50]}'),
    2: (28800123457, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12", '{"a": 1}'),
    3: (0, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13", '{"a": 1}'),
    4: (86399999999, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a14", '{"a": {"y": 1, "x": 2}}'),
    5: (43200000000, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a15", '{"a": "x y"}'),
}
SINK_ROWS = {
    1: ("08:00:00.123456", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", '{"a": [1, 2.5], "b": 1}'),
    2: ("08:00:00.123456", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12", '{"a": 1}'),  # 1 µs
    3: ("00:00:00", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1f", '{"a": 1}'),  # a uuid's digit
    4: ("23:59:59.999999", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a14", '{"a": {"x": 2, "y": 1}}'),
    5: ("12:00:00", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a15", '{"a": "x\u00a0y"}'),  # nbsp
}


def test_times_uuids_and_json_are_compared_as_what_they_are(
        lab: Lab, postgres: Postgres, tmp_path: Path) -> None:
    from confluent_kafka import Producer

    name = create_topic(lab, "kinds", 1)
    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for i, (opens, ref, attrs) in TOPIC_ROWS.items():
        payload = {"id": i, "opens": opens, "ref": ref, "attrs": attrs, "exact": EXACT[i][0]}
        producer.produce(name, key=str(i),
                         value=json.dumps({"schema": CONNECT_SCHEMA, "payload": payload}))
    assert producer.flush(30) == 0
    table = f"kinds_{uuid.uuid4().hex[:6]}"
    postgres.psql(f"create table {table} (id bigint, opens time, ref uuid, attrs jsonb, "
                  "wide numeric(38,0), exact numeric)")
    postgres.psql(f"insert into {table} values " + ",".join(
        f"({i},'{t}','{r}','{a}',{i},{EXACT[i][1]})" for i, (t, r, a) in SINK_ROWS.items()))
    password_file = tmp_path / "pw"
    password_file.write_text(postgres.password)
    sink = ("--sink", f"{postgres.jdbc_url}?table={table}", "--sink-option",
            f"user={postgres.user}", "--sink-option", f"password-file={password_file}")
    try:
        code, doc, stderr = reconcile(lab, "--topic", name, *sink, "--envelope", "connect",
                                      "--mode", "upsert", "--key", "id",
                                      "--compare", "opens,ref,attrs,exact", "--samples", "10")
        assert code == 1, stderr
        assert doc["counts"]["mismatched"] == 4, doc["counts"]
        assert {(int(s["key"]), s["column"], s["topic_value"], s["sink_value"])
                for s in doc["samples"]["mismatched"]} == {
            (2, "opens", "08:00:00.123457", "08:00:00.123456"),
            (3, "ref", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13",
             "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1f"),
            (5, "attrs", '{"a":"x y"}', '{"a":"x\u00a0y"}'),
            (4, "exact", WIDE, WIDE[:-1] + "2")}
        assert {f["column"]: (f["topic_type"], f["sink_type"], f["compared_as"])
                for f in doc["fields"]} == {
            "opens": ("time", "time without time zone", "time"),
            "ref": ("uuid", "uuid", "uuid"), "attrs": ("json", "jsonb", "json"),
            "exact": ("string", "numeric", "wide decimal")}
        # Read without the schema beside them, the counts since midnight are whole numbers
        # for a time column: refused before the comparison, with the word that reads them.
        code, _, stderr = reconcile(lab, "--topic", name, *sink, "--key", "payload.id",
                                    "--compare", "payload.opens", "--map", "payload.id=id",
                                    "--map", "payload.opens=opens")
        assert code == 2, stderr
        assert "field payload.opens: the 5 values sampled are whole numbers (e.g. " \
            "28800123456) where sink column opens is a time of day; by their size they " \
            "count microseconds since midnight: 'payload.opens TIME MICROS'" in stderr
        # Two decimals no 38-digit decimal holds exactly: said, exit 2, before any compare.
        code, _, stderr = reconcile(lab, "--topic", name, *sink, "--envelope", "connect",
                                    "--key", "id", "--compare", "wide",
                                    "--schema", "id BIGINT, wide DECIMAL(38,10)")
        assert code == 2, stderr
        assert "kaudit: error: column wide: decimal(38,10) and decimal(38,0) compared " \
            "exactly need 38 integer digits and 10 decimal places" in stderr
        assert "Traceback" not in stderr
    finally:
        admin(lab).delete_topics([name])
