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
