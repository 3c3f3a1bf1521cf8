"""The type matrix: every kind `reconcile` compares, in every JSON topic format that carries
it (plain JSON; Kafka Connect's JSON with its schema; Debezium's change events with theirs),
against every sink that can store it (a PostgreSQL table; a Parquet file; an Apache Iceberg
table), on a real lab topic, real Spark, real PostgreSQL and Iceberg's Spark runtime.

Row 0 is equal in every column; row k differs from the sink in column k only, by the
smallest step its type has. So each run finds exactly one mismatch per column, at its row,
and nothing else; and `fields` says what each column was compared as. Cells a sink cannot
hold are listed in :data:`NOT_HELD` with the reason. Avro's cells are in
test_reconcile_avro.py.
"""

from __future__ import annotations

import base64
import json
import math
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab
from tests.integration.test_lab import admin
from tests.integration.test_reconcile import create_topic, reconcile
from tests.pg import Postgres

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.usefixtures("local_spark")]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
AT = datetime(2025, 11, 28, 8, 0, 0, 46993, tzinfo=UTC)
WIDE = "123456789012345678901234567890123456789012.123456789012345678901"


def connect_decimal(unscaled: int) -> str:
    size = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


@dataclass(frozen=True)
class Cell:
    """One kind: its column, the topic's value, the sink's changed value, the SQL type,
    what each format writes, and what the column is compared as against each sink."""

    column: str
    value: Any
    changed: Any
    sql: str
    plain: Callable[[Any], Any]
    connect: tuple[dict[str, Any], Callable[[Any], Any]]
    compared_as: str
    parquet: str | None = None
    """The Parquet column's Spark type; None where Parquet cannot hold it (NOT_HELD)."""
    plain_compared_as: str | None = None
    """What a plain JSON number is compared as, where that differs: it is read exactly as
    a 38-digit decimal (its schema, where there is one, says it is a long or a decimal)."""


def _same(v: Any) -> Any:
    return v


CELLS = [
    # A JSON number is read as a 38-digit decimal, its schema's int64 or not: 7.5 where an
    # integer belongs is then a mismatch, not undecodable.
    Cell("big", 2**53 + 1, 2**53 + 2, "bigint", _same, ({"type": "int64"}, _same),
         "decimal(38,18)", "bigint"),
    Cell("price", Decimal("12.50"), Decimal("12.51"), "numeric(12,2)", _same, (
        {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
         "parameters": {"scale": "2", "connect.decimal.precision": "12"}},
        lambda v: connect_decimal(int(v * 100))), "decimal(12,2)", "decimal(12,2)",
         "decimal(38,18)"),
    Cell("ratio", 0.1, math.nextafter(0.1, 1.0), "double precision", _same,
         ({"type": "float64"}, _same), "float", "double"),
    Cell("flag", True, False, "boolean", _same, ({"type": "boolean"}, _same), "boolean",
         "boolean"),
    Cell("day", date(2024, 2, 29), date(2024, 3, 1), "date", lambda v: v.isoformat(), (
        {"type": "int32", "name": "io.debezium.time.Date"},
        lambda v: (v - EPOCH.date()).days), "date", "date"),
    Cell("at", AT, AT + timedelta(microseconds=1), "timestamptz",
         lambda v: v.isoformat().replace("+00:00", "Z"), (
             {"type": "int64", "name": "io.debezium.time.MicroTimestamp"},
             lambda v: (v - EPOCH) // timedelta(microseconds=1)), "timestamp", "timestamp"),
    Cell("opens", "08:00:00.123456", "08:00:00.123457", "time", _same, (
        {"type": "int64", "name": "io.debezium.time.MicroTime"},
        lambda v: 28800123456), "time"),
    Cell("ref", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12",
         "uuid", _same, ({"type": "string", "name": "io.debezium.data.Uuid"}, _same), "uuid"),
    Cell("note", "Main St", "Main\u00a0St", "text", _same, ({"type": "string"}, _same),
         "text", "string"),
    Cell("attrs", {"b": 1, "a": [1, 2.5]}, '{"a": [1, 2.5], "b": 2}', "jsonb", _same, (
        {"type": "string", "name": "io.debezium.data.Json"}, json.dumps), "json"),
    Cell("wide", WIDE, WIDE[:-1] + "2", "numeric", _same, ({"type": "string"}, _same),
         "wide decimal"),
]
#: Cells a Parquet file written by Spark cannot hold, and why (see the README's table). An
#: Iceberg table written through Spark holds the same: Iceberg's own time and uuid types
#: have no Spark type to write them from.
NOT_HELD = {
    "opens": "Spark 4.0 has no TIME type to write",
    "ref": "Spark has no UUID type: a string column is text, where case counts",
    "attrs": "Spark has no JSON type: a string column is text (declare the field JSON)",
    "wide": "Spark's decimals hold 38 digits",
}
FORMATS = ("plain", "connect", "debezium")


def sink_value(cell: Cell, row: int) -> Any:
    """The sink's value of ``cell`` in row ``row``: changed in its own row only."""
    if row == CELLS.index(cell) + 1:
        return cell.changed
    if cell.column == "attrs":
        return '{"a": [1, 2.5], "b": 1}'
    return str(cell.value).lower() if cell.column == "ref" else cell.value


def topic_value(fmt: str, row: int) -> str:
    if fmt == "plain":
        fields = {c.column: c.plain(c.value) for c in CELLS}
        return json.dumps({"id": row, **fields}, default=str).replace(
            '"12.50"', "12.50")  # a JSON number, as written: not a string
    fields = {c.column: c.connect[1](c.value) for c in CELLS}
    row_schema = {"type": "struct", "fields": [{"field": "id", "type": "int64"}] + [
        {"field": c.column, **c.connect[0]} for c in CELLS]}
    payload = {"id": row, **fields}
    if fmt == "connect":
        return json.dumps({"schema": row_schema, "payload": payload})
    envelope = {"type": "struct", "fields": [{"field": "before", "optional": True, **row_schema},
                                             {"field": "after", "optional": True, **row_schema},
                                             {"field": "op", "type": "string"}]}
    return json.dumps({"schema": envelope,
                       "payload": {"before": None, "after": payload, "op": "c"}})


@pytest.fixture(scope="module")
def topics(lab: Lab) -> Iterator[dict[str, str]]:
    from confluent_kafka import Producer

    names = {fmt: create_topic(lab, f"matrix-{fmt}", 1) for fmt in FORMATS}
    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for fmt, name in names.items():
        for row in range(len(CELLS) + 1):
            producer.produce(name, key=str(row), value=topic_value(fmt, row))
    assert producer.flush(30) == 0
    yield names
    admin(lab).delete_topics(list(names.values()))


@pytest.fixture(scope="module")
def table(postgres: Postgres) -> str:
    name = f"matrix_{uuid.uuid4().hex[:6]}"
    postgres.psql(f"create table {name} (id bigint, "
                  + ", ".join(f"{c.column} {c.sql}" for c in CELLS) + ")")
    for row in range(len(CELLS) + 1):
        values = ", ".join(_sql(sink_value(c, row)) for c in CELLS)
        postgres.psql(f"insert into {name} values ({row}, {values})")
    return name


def _sql(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | Decimal):
        return repr(value) if isinstance(value, float) else str(value)
    if value == WIDE or (isinstance(value, str) and value.startswith("1234567890")):
        return value
    return "'" + str(value).replace("'", "''") + "'"


def assert_every_cell(doc: dict[str, Any], cells: list[Cell], fmt: str) -> None:
    counts = doc["counts"]
    assert (counts["mismatched"], counts["missing_in_sink"], counts["extra_in_sink"],
            counts["undecodable"]) == (len(cells), 0, 0, 0), json.dumps(doc["samples"])
    assert {s["column"]: int(s["key"]) for s in doc["samples"]["mismatched"]} == {
        c.column: CELLS.index(c) + 1 for c in cells}
    assert {f["column"]: f["compared_as"] for f in doc["fields"]} == {
        c.column: (c.plain_compared_as if fmt == "plain" else None) or c.compared_as
        for c in cells}


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_kind_against_postgresql(lab: Lab, topics: dict[str, str], table: str,
                                       postgres: Postgres, fmt: str, tmp_path: Path) -> None:
    password_file = tmp_path / "pw"
    password_file.write_text(postgres.password)
    envelope = {"plain": "none"}.get(fmt, fmt)
    code, doc, stderr = reconcile(
        lab, "--topic", topics[fmt], "--sink", f"{postgres.jdbc_url}?table={table}",
        "--sink-option", f"user={postgres.user}",
        "--sink-option", f"password-file={password_file}", "--envelope", envelope,
        "--mode", "upsert", "--key", "id", "--compare", ",".join(c.column for c in CELLS),
        "--samples", "20")
    assert code == 1, stderr
    assert_every_cell(doc, CELLS, fmt)


def _held_rows(local_spark: Any) -> tuple[list[Cell], Any]:
    """The cells a Spark-written file or table holds, and the sink's rows of them."""
    held = [c for c in CELLS if c.parquet is not None]
    ddl = "id BIGINT, " + ", ".join(f"{c.column} {c.parquet}" for c in held)
    return held, local_spark.createDataFrame(
        [(row, *(sink_value(c, row) for c in held)) for row in range(len(CELLS) + 1)], ddl)


def _reconcile_held(lab: Lab, topic: str, fmt: str, held: list[Cell], *sink: str
                    ) -> dict[str, Any]:
    envelope = {"plain": "none"}.get(fmt, fmt)
    code, doc, stderr = reconcile(
        lab, "--topic", topic, *sink, "--envelope", envelope, "--mode", "upsert", "--key",
        "id", "--compare", ",".join(c.column for c in held), "--samples", "20")
    assert code == 1, stderr
    assert_every_cell(doc, held, fmt)
    return doc


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_kind_parquet_holds_against_parquet(lab: Lab, topics: dict[str, str],
                                                  local_spark: Any, fmt: str,
                                                  tmp_path: Path) -> None:
    held, rows = _held_rows(local_spark)
    assert {c.column for c in CELLS} - {c.column for c in held} == set(NOT_HELD)
    sink = tmp_path / "matrix.parquet"
    rows.coalesce(1).write.parquet(str(sink))
    _reconcile_held(lab, topics[fmt], fmt, held, "--sink", f"parquet:{sink}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_kind_iceberg_holds_against_iceberg(lab: Lab, topics: dict[str, str],
                                                  local_spark: Any, fmt: str,
                                                  tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    table = f"matrix.types.t_{fmt}"
    for key, value in (("", "org.apache.iceberg.spark.SparkCatalog"), (".type", "hadoop"),
                       (".warehouse", str(warehouse))):
        local_spark.conf.set(f"spark.sql.catalog.matrix{key}", value)
    held, rows = _held_rows(local_spark)
    rows.writeTo(table).create()
    doc = _reconcile_held(lab, topics[fmt], fmt, held, "--sink", f"iceberg:{table}",
                          "--sink-option", "type=hadoop",
                          "--sink-option", f"warehouse={warehouse}")
    assert doc["sink"]["kind"] == "iceberg" and doc["sink"]["snapshot_id"] is not None
    # Iceberg's own column types, as its table says them (the report's sink_type is Spark's).
    iceberg_types = {f.name: f.dataType.simpleString()
                     for f in local_spark.table(table).schema.fields}
    assert {f["column"]: f["sink_type"] for f in doc["fields"]} == {
        c.column: iceberg_types[c.column] for c in held}
