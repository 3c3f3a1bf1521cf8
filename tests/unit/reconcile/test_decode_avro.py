"""Decoding Avro values in Spark (spark-avro): each writer schema resolved into the reader
schema, and every way a value can fail named in its sample. Raw records are built here and
written with a real Avro library (fastavro), no Kafka."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from kaudit.reconcile.avro_schemas import given_schemas, load_schemas
from kaudit.reconcile.decode import decode_topic
from kaudit.reconcile.formats.avro import pinned_to_sampled_id
from kaudit.reconcile.job import hashed, shape_sink
from kaudit.reconcile.request import ReconcileRequest
from tests.unit.reconcile.frames import counts, local_frame, rows, run

pytestmark = pytest.mark.spark

V1 = {"type": "record", "name": "Reading", "fields": [
    {"name": "id", "type": "long"}, {"name": "value", "type": "int"}]}
V2 = {**V1, "fields": [{"name": "id", "type": "long"}, {"name": "value", "type": "float"},
                       {"name": "unit", "type": ["null", "string"], "default": None}]}


ROW = {"type": "record", "name": "Value", "namespace": "shop.public.readings",
       "fields": [{"name": "id", "type": "long"}, {"name": "value", "type": "double"}]}
ENVELOPE = {"type": "record", "name": "Envelope", "namespace": "shop.public.readings",
            "fields": [{"name": "before", "type": ["null", ROW], "default": None},
                       {"name": "after", "type": ["null", "Value"], "default": None},
                       {"name": "op", "type": "string"},
                       {"name": "ts_ms", "type": ["null", "long"], "default": None},
                       {"name": "source", "default": None, "type": ["null", {
                           "type": "record", "name": "Source", "fields": [
                               {"name": "table", "type": "string"},
                               {"name": "ts_ms", "type": "long"}]}]},
                       {"name": "transaction", "default": None, "type": ["null", {
                           "type": "record", "name": "Block",
                           "namespace": "event", "fields": [
                               {"name": "id", "type": "string"},
                               {"name": "total_order", "type": "long"},
                               {"name": "data_collection_order", "type": "long"}]}]}]}


def body(schema: Any, record: dict[str, Any]) -> bytes:
    import fastavro

    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def framed(schema_id: int, schema: Any, record: dict[str, Any]) -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + body(schema, record)


def raw(spark: SparkSession, values: list[bytes | None]) -> DataFrame:
    data = [(0, i, None, str(i).encode(), v) for i, v in enumerate(values)]
    return local_frame(spark, data, "partition int, offset long, timestamp timestamp, "
                                    "key binary, value binary")


def reconcile(spark: SparkSession, tmp_path: Path, value_format: str, values: list[Any],
              sink_rows: list[tuple[Any, ...]], compare: tuple[str, ...] = ("value",),
              envelope: str = "none") -> Any:
    schemas = tmp_path / "schemas"
    schemas.mkdir(exist_ok=True)
    if envelope == "debezium":
        (schemas / "5.avsc").write_text(json.dumps(ENVELOPE))
        avro = load_schemas(schemas / "5.avsc")
    elif value_format == "avro":
        (schemas / "1.avsc").write_text(json.dumps(V1))
        (schemas / "2.avsc").write_text(json.dumps(V2))
        avro = load_schemas(schemas)
    else:
        (schemas / "reading.avsc").write_text(json.dumps(V2))
        avro = load_schemas(schemas / "reading.avsc", framed=False)
    mode = "upsert" if envelope == "debezium" else "append"
    request = ReconcileRequest(topic="t", sink_uri="json:/dev/null", key="id",
                               compare=compare, value_format=value_format,  # type: ignore
                               avro=avro, envelope=envelope, mode=mode)  # type: ignore
    if not sink_rows:
        return request
    sink = local_frame(spark, sink_rows, "id long, value double, unit string")
    topic = decode_topic(raw(spark, values), request, {})
    topic, sink, _ = hashed(topic, shape_sink(sink, request), list(compare))
    return run(topic, sink, mode, list(compare))


def test_each_writer_schema_is_resolved_into_the_reader_schema(
        spark: SparkSession, tmp_path: Path) -> None:
    values = [framed(1, V1, {"id": 1, "value": 10}),
              framed(2, V2, {"id": 2, "value": 2.5, "unit": "C"}),
              framed(2, V2, {"id": 3, "value": 3.5, "unit": None})]
    sink = [(1, 10.0, None), (2, 2.5, "C"), (3, 3.5, None)]
    result = reconcile(spark, tmp_path, "avro", values, sink, ("value", "unit"))
    assert result.counts() == counts()  # V1's int read as float; its unit the default, null


def test_every_way_a_framed_value_fails_is_named(spark: SparkSession, tmp_path: Path) -> None:
    good = framed(2, V2, {"id": 7, "value": 1.5, "unit": "C"})
    values = [good, b"\x00\x00", b"\x05" + good[1:], b"\x00" + struct.pack(">I", 3) + good[5:],
              good[:6], None]
    result = reconcile(spark, tmp_path, "avro", values, [(7, 1.5, "C")])
    assert result.counts() == counts(undecodable=4)
    why = {r[3]: r[7] for r in rows(result)}
    assert why[1].startswith("2 bytes: shorter than the 5-byte header")
    assert why[2].startswith("magic byte 0x05, not 0x00")
    assert why[3].startswith("schema id 3: no 3.avsc among the writer schemas")
    assert why[4].startswith("the body does not decode with schema id 2; the value starts "
                             "00000000020e")


def test_one_file_is_used_for_the_sampled_id_and_another_id_is_unknown_not_misread(
        spark: SparkSession, tmp_path: Path) -> None:
    """A single .avsc for framed records, pinned to the id the sample carried (3): a
    record of id 4 found later, which V1 would read as some (wrong) values, is undecodable
    with why."""
    (tmp_path / "reading.avsc").write_text(json.dumps(V1))
    avro = given_schemas("value", "avro", tmp_path / "reading.avsc", None, None)
    assert avro is not None
    request = ReconcileRequest(topic="t", sink_uri="json:/dev/null", key="id",
                               compare=("value",), value_format="avro",
                               avro=pinned_to_sampled_id(avro, {3}, sampled=1))
    values = [framed(3, V1, {"id": 1, "value": 10}), framed(4, V1, {"id": 2, "value": 20})]
    sink = local_frame(spark, [(1, 10.0, None), (2, 20.0, None)],
                       "id long, value double, unit string")
    topic, sink, _ = hashed(decode_topic(raw(spark, values), request, {}),
                            shape_sink(sink, request), ["value"])
    result = run(topic, sink, "append", ["value"])
    assert result.counts() == counts(undecodable=1, extra_in_sink=1)
    [bad] = [r for r in rows(result) if r[0] == "undecodable"]
    assert bad[7].startswith(f"schema id 4: {tmp_path / 'reading.avsc'} was used for schema "
                             "id 3, the one id sampled")


def test_plain_avro_has_no_header_and_one_writer_schema(spark: SparkSession,
                                                        tmp_path: Path) -> None:
    values = [body(V2, {"id": 1, "value": 1.0, "unit": None}), b"\x02"]
    result = reconcile(spark, tmp_path, "avro-plain", values, [(1, 1.0, None)])
    assert result.counts() == counts(undecodable=1)
    [bad] = rows(result)
    assert bad[7] == "does not decode with the writer schema reading.avsc; the value starts 02"


def test_debezium_events_in_avro_leave_each_keys_final_row(spark: SparkSession,
                                                           tmp_path: Path) -> None:
    def change(op: str, before: Any, after: Any) -> bytes:
        return framed(5, ENVELOPE, {"before": before, "after": after, "op": op,
                                    "ts_ms": 1_700_000_000_000})

    values = [change("r", None, {"id": 1, "value": 1.0}),
              change("c", None, {"id": 2, "value": 2.0}),
              change("u", {"id": 2, "value": 2.0}, {"id": 2, "value": 2.5}),
              change("c", None, {"id": 3, "value": 3.0}),
              change("d", {"id": 3, "value": 3.0}, None), None,
              change("x", None, {"id": 4, "value": 4.0})]
    # The sink kept 2 from before its update and 3 after its delete.
    sink = [(1, 1.0, None), (2, 2.0, None), (3, 3.0, None)]
    result = reconcile(spark, tmp_path, "avro", values, sink, envelope="debezium")
    assert result.counts() == counts(mismatched=1, extra_in_sink=1, undecodable=1)
    found = {(r[0], r[1]): r for r in rows(result)}
    assert found[("mismatched", "2")][7:] == ("2.5", "2.0")
    assert ("extra_in_sink", "3") in found
    [bad] = [r for r in rows(result) if r[0] == "undecodable"]
    assert bad[6] == "op" and bad[7].startswith("op x: not a Debezium change event")


def test_a_samples_avro_change_event_is_decoded_in_spark_as_the_topic_was(
        spark: SparkSession, tmp_path: Path) -> None:
    """What a Debezium sample shows of its event (op, ts_ms, the source's ts_ms and the
    transaction), from the raw value read at its place; None where there is no event."""
    from kaudit.reconcile.formats.avro_decode import avro_events

    request = reconcile(spark, tmp_path, "avro", [], [], envelope="debezium")
    update = framed(5, ENVELOPE, {
        "before": {"id": 2, "value": 2.0}, "after": {"id": 2, "value": 2.5}, "op": "u",
        "ts_ms": 1_700_000_000_002, "source": {"table": "readings", "ts_ms": 1_699_999_999_002},
        "transaction": {"id": "571:53002", "total_order": 3, "data_collection_order": 1}})
    create = framed(5, ENVELOPE, {"before": None, "after": {"id": 1, "value": 1.0},
                                  "op": "c", "ts_ms": None})
    events = avro_events(spark, request, {(0, 7): update, (1, 3): create, (1, 4): None,
                                          (2, 0): b"\x05garbage"})
    assert events == {
        (0, 7): {"op": "u", "ts_ms": 1_700_000_000_002, "source_ts_ms": 1_699_999_999_002,
                 "transaction": {"id": "571:53002", "total_order": 3,
                                 "data_collection_order": 1}},
        (1, 3): {"op": "c", "ts_ms": None, "source_ts_ms": None, "transaction": None},
        (1, 4): None, (2, 0): None}


def test_an_avro_key_is_matched_as_its_text_and_one_that_does_not_decode_says_why(
        spark: SparkSession, tmp_path: Path) -> None:
    """A plain Avro key of a primitive type (as Confluent's serializers write a long key):
    its value is the key, in the column --map names; an unfinished varint does not decode."""
    (tmp_path / "key.avsc").write_text('"long"')
    (tmp_path / "value.avsc").write_text(json.dumps(V2))
    request = ReconcileRequest(
        topic="t", sink_uri="json:/dev/null", key="@key", compare=("value",),
        value_format="avro-plain", avro=load_schemas(tmp_path / "value.avsc", framed=False),
        key_format="avro-plain", column_map={"@key": "id"},
        key_avro=load_schemas(tmp_path / "key.avsc", framed=False, record_only=False))
    keys = [body("long", 1), body("long", 2), b"\x80"]
    values = [body(V2, {"id": i, "value": float(i), "unit": None}) for i in (1, 2, 3)]
    frame = local_frame(spark,
        [(0, i, None, k, v) for i, (k, v) in enumerate(zip(keys, values, strict=True))],
        "partition int, offset long, timestamp timestamp, key binary, value binary")
    sink = local_frame(spark, [(1, 1.0, None), (2, 5.0, None)],
                       "id long, value double, unit string")
    topic, sink, _ = hashed(decode_topic(frame, request, {}), shape_sink(sink, request),
                         ["value"])
    result = run(topic, sink, "append", ["value"])
    assert result.counts() == counts(mismatched=1, undecodable=1)
    found = {r[0]: r for r in rows(result)}
    assert found["mismatched"][1] == "2"
    assert found["undecodable"][6] == "@key"
    assert found["undecodable"][7] == ("the key: does not decode with the writer schema "
                                       "key.avsc; the key starts 80")


DATE = {"type": "int", "connect.version": 1, "connect.name": "io.debezium.time.Date"}
TYPED = {"type": "record", "name": "Value", "namespace": "shop.public.orders", "fields": [
    {"name": "id", "type": "long"},
    {"name": "at", "type": {"type": "long", "connect.version": 1,
                            "connect.name": "io.debezium.time.MicroTimestamp"}},
    {"name": "ms", "type": ["null", {"type": "long", "connect.name":
                                     "io.debezium.time.Timestamp"}], "default": None},
    {"name": "day", "type": DATE},
    # decimal.handling.mode=precise as Debezium's schema names it, without a logicalType
    {"name": "amount", "type": {
        "type": "bytes", "connect.version": 1, "connect.name":
        "org.apache.kafka.connect.data.Decimal",
        "connect.parameters": {"scale": "2", "connect.decimal.precision": "12"}}},
    # as Confluent's AvroConverter writes it: spark-avro reads the logical type itself
    {"name": "total", "type": {
        "type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2,
        "connect.name": "org.apache.kafka.connect.data.Decimal",
        "connect.parameters": {"scale": "2", "connect.decimal.precision": "12"}}},
    {"name": "zoned", "type": {"type": "string", "connect.name":
                               "io.debezium.time.ZonedTimestamp"}},
    {"name": "doc", "type": {"type": "string", "connect.name": "io.debezium.data.Json"}}]}
TYPED_SINK = ("id long, at timestamp, ms timestamp, day date, amount decimal(12,2), "
              "total decimal(12,2), zoned timestamp, doc string")
TYPED_FIELDS = ("at", "ms", "day", "amount", "total", "zoned", "doc")


def typed_row(i: int) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """One row as Debezium writes it to Avro, and as PostgreSQL holds it; every other one
    before 1970, the amounts negative."""
    from datetime import UTC, date, datetime, timedelta
    from decimal import Decimal

    sign = -1 if i % 2 else 1
    at = datetime(2026, 11, 28, 8, 0, 0, 46993, tzinfo=UTC) + sign * timedelta(days=20000 + i)
    day = date(2024, 2, 29) + sign * timedelta(days=19000 + i)
    cents = sign * (1_000_000_000_00 + 1250 + i)
    micros = (at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    unscaled = cents.to_bytes(8, "big", signed=True)
    record = {"id": i, "at": micros, "ms": micros // 1000, "day": (day - date(1970, 1, 1)).days,
              "amount": unscaled, "total": unscaled, "zoned": at.isoformat().replace(
                  "+00:00", "Z"), "doc": '{"a": 1}'}
    naive = at.replace(tzinfo=None)
    amount = Decimal(cents).scaleb(-2)
    return record, (i, naive, naive.replace(microsecond=naive.microsecond // 1000 * 1000), day,
                    amount, amount, naive, '{"a": 1}')


def typed_run(spark: SparkSession, tmp_path: Path, records: list[bytes],
              sink_rows: list[tuple[Any, ...]], schema: Any, envelope: str = "none") -> Any:
    (tmp_path / "value.avsc").write_text(json.dumps(schema))
    avro = given_schemas("value", "avro", tmp_path / "value.avsc", None, None)
    assert avro is not None
    mode = "upsert" if envelope == "debezium" else "append"
    request = ReconcileRequest(topic="t", sink_uri="json:/dev/null", key="id",
                               compare=TYPED_FIELDS, value_format="avro", mode=mode,
                               avro=pinned_to_sampled_id(avro, {1}, sampled=1),
                               envelope=envelope)  # type: ignore[arg-type]
    sink = local_frame(spark, sink_rows, TYPED_SINK)
    topic, sink, fields = hashed(decode_topic(raw(spark, records), request, {}),
                                 shape_sink(sink, request), list(TYPED_FIELDS))
    return run(topic, sink, mode, list(TYPED_FIELDS)), fields


def test_debeziums_semantic_types_in_avro_compare_exactly_with_the_sinks_types(
        spark: SparkSession, tmp_path: Path) -> None:
    """Equal rows (after and before 1970, negative decimals) are clean; 1 µs, 1 day and
    0.01 are each found in their field; a zoned timestamp that does not parse is
    undecodable in its field."""
    from datetime import timedelta
    from decimal import Decimal

    made = [typed_row(i) for i in range(6)]
    records = [framed(1, TYPED, record) for record, _ in made]
    sink = [row for _, row in made]
    sink[2] = (*sink[2][:1], sink[2][1] + timedelta(microseconds=1), *sink[2][2:])
    sink[3] = (*sink[3][:3], sink[3][3] + timedelta(days=1), *sink[3][4:])
    sink[4] = (*sink[4][:4], sink[4][4] + Decimal("0.01"), *sink[4][5:])
    broken, _ = typed_row(5)
    records[5] = framed(1, TYPED, {**broken, "zoned": "not a time"})
    result, fields = typed_run(spark, tmp_path, records, sink, TYPED)
    assert {f.column: f.topic_type for f in fields} == {
        "at": "timestamp", "ms": "timestamp", "day": "date", "amount": "decimal(12,2)",
        "total": "decimal(12,2)", "zoned": "timestamp", "doc": "string"}
    found = {(r[0], r[1], r[6]) for r in rows(result) if r[0] != "extra_in_sink"}
    assert found == {("mismatched", "2", "at"), ("mismatched", "3", "day"),
                     ("mismatched", "4", "amount"), ("undecodable", "5", "zoned")}, \
        rows(result)
    [bad] = [r for r in rows(result) if r[0] == "undecodable"]
    assert bad[7].startswith("field zoned does not read as timestamp "
                             "(io.debezium.time.ZonedTimestamp); the value starts 0000000001")


def test_semantic_types_are_read_in_a_debezium_events_after(spark: SparkSession,
                                                           tmp_path: Path) -> None:
    envelope = {"type": "record", "name": "Envelope", "namespace": "shop.public.orders",
                "fields": [{"name": "before", "type": ["null", TYPED], "default": None},
                           {"name": "after", "type": ["null", "Value"], "default": None},
                           {"name": "op", "type": "string"}]}
    first, row = typed_row(1)
    second, _ = typed_row(2)
    records = [framed(1, envelope, {"before": None, "after": first, "op": "c"}),
               framed(1, envelope, {"before": None, "after": second, "op": "c"}),
               framed(1, envelope, {"before": second, "after": None, "op": "d"})]
    result, _ = typed_run(spark, tmp_path, records, [row], envelope, "debezium")
    assert result.counts() == counts()


def test_schema_declares_an_avro_fields_type_over_its_semantic_name(
        spark: SparkSession, tmp_path: Path) -> None:
    """--schema with Avro: an epoch-millis long, a Decimal's bytes and an ISO date text
    read as declared; a semantic name overridden (kept as the long it is)."""
    from datetime import date, datetime
    from decimal import Decimal

    schema = {"type": "record", "name": "Plain", "fields": [
        {"name": "id", "type": "long"}, {"name": "at", "type": "long"},
        {"name": "amount", "type": "bytes"}, {"name": "day", "type": "string"},
        {"name": "micros", "type": {"type": "long", "connect.name":
                                    "io.debezium.time.MicroTimestamp"}}]}
    (tmp_path / "plain.avsc").write_text(json.dumps(schema))
    compare = ("at", "amount", "day", "micros")
    request = ReconcileRequest(
        topic="t", sink_uri="json:/dev/null", key="id", compare=compare,
        value_format="avro-plain",
        schema="at TIMESTAMP MILLIS, amount DECIMAL(12,2) BASE64, day DATE, micros BIGINT",
        avro=load_schemas(tmp_path / "plain.avsc", framed=False))
    days = {1: ("2024-02-29", date(2024, 2, 29)), 2: ("2024-03-01", date(2024, 3, 2)),
            3: ("2024-02-30", date(2024, 3, 1))}  # 2 differs; 3 is no date
    values = [body(schema, {"id": i, "at": 1_700_000_000_123 + i,
                            "amount": (-1250 - i).to_bytes(4, "big", signed=True),
                            "day": days[i][0], "micros": 7}) for i in days]
    sink = local_frame(spark,
        [(i, datetime(2023, 11, 14, 22, 13, 20, 123000 + 1000 * i), Decimal(-1250 - i) / 100,
          days[i][1], 7) for i in days],
        "id long, at timestamp, amount decimal(12,2), day date, micros long")
    topic, sink, fields = hashed(decode_topic(raw(spark, values), request, {}),
                                 shape_sink(sink, request), list(compare))
    result = run(topic, sink, "append", list(compare))
    assert {f.column: f.topic_type for f in fields} == {
        "at": "timestamp", "amount": "decimal(12,2)", "day": "date", "micros": "bigint"}
    assert {(r[0], r[1], r[6]) for r in rows(result)} == {
        ("mismatched", "2", "day"), ("undecodable", "3", "day")}, rows(result)
    [bad] = [r for r in rows(result) if r[0] == "undecodable"]
    assert bad[7].startswith("field day does not read as date (--schema)")


KINDS = {"type": "record", "name": "Value", "fields": [
    {"name": "id", "type": "long"},
    {"name": "opens", "type": {"type": "long", "connect.name": "io.debezium.time.MicroTime"}},
    {"name": "ref", "type": {"type": "string", "connect.name": "io.debezium.data.Uuid"}},
    {"name": "attrs", "type": {"type": "string", "connect.name": "io.debezium.data.Json"}},
    {"name": "at", "type": {"type": "long", "connect.name": "io.debezium.time.NanoTimestamp"}}]}


def test_times_of_day_uuids_json_and_nanoseconds_in_avro_are_compared_as_their_kinds(
        spark: SparkSession, tmp_path: Path) -> None:
    from datetime import datetime

    from kaudit.reconcile.formats.avro import with_value_kinds

    ns = 1764316800046993123
    record = {"id": 0, "opens": 28800123456, "ref": "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
              "attrs": '{"b": 1, "a": [1, 2.50]}', "at": ns}
    records = [framed(1, KINDS, {**record, "id": i}) for i in range(5)]
    same = ("08:00:00.123456", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", '{"a": [1, 2.5], "b": 1}',
            datetime(2025, 11, 28, 8, 0, 0, 46993))
    sink = [(0, *same), (1, "08:00:00.123457", *same[1:]),
            (2, same[0], "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12", *same[2:]),
            (3, *same[:2], '{"a": [1, 2.5], "b": 2}', same[3]),
            (4, *same[:3], datetime(2025, 11, 28, 8, 0, 0, 46994))]
    (tmp_path / "value.avsc").write_text(json.dumps(KINDS))
    avro = given_schemas("value", "avro", tmp_path / "value.avsc", None, None)
    assert avro is not None
    compare = ("opens", "ref", "attrs", "at")
    request = with_value_kinds(ReconcileRequest(
        topic="t", sink_uri="json:/dev/null", key="id", compare=compare, value_format="avro",
        avro=pinned_to_sampled_id(avro, {1}, sampled=1)))
    sink_frame = local_frame(spark,
        sink, "id long, opens string, ref string, attrs string, at timestamp")
    topic, sink_frame, fields = hashed(
        decode_topic(raw(spark, records), request, {}), shape_sink(sink_frame, request),
        list(compare), request.declared_kinds(),
        {"opens": "time without time zone", "ref": "uuid", "attrs": "jsonb"})
    result = run(topic, sink_frame, "append", list(compare))
    assert {f.column: f.compared_as for f in fields} == {
        "opens": "time", "ref": "uuid", "attrs": "json",
        "at": "timestamp (nanoseconds cut to microseconds)"}
    found = {(r[1], r[6]) for r in rows(result) if r[0] == "mismatched"}
    assert found == {("1", "opens"), ("2", "ref"), ("3", "attrs"), ("4", "at")}, rows(result)


PRICED = {"type": "record", "name": "Value", "fields": [
    {"name": "id", "type": "long"},
    {"name": "price", "type": ["null", {
        "type": "record", "name": "VariableScaleDecimal", "namespace": "io.debezium.data",
        "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
        "connect.version": 1, "connect.name": "io.debezium.data.VariableScaleDecimal"}],
     "default": None}]}


def test_debeziums_variable_scale_decimals_in_avro_are_read_by_every_digit(
        spark: SparkSession, tmp_path: Path) -> None:
    """A bare numeric as Debezium's Avro converter writes it (a record of the scale and the
    unscaled bytes), against PostgreSQL's numeric: negative values, 30 places, 38 digits
    and a negative scale equal; 0.01 apart found."""
    from kaudit.reconcile.formats.avro import with_value_kinds

    def variable(unscaled: int, scale: int) -> dict[str, Any]:
        size = max(1, (unscaled.bit_length() + 8) // 8)
        return {"scale": scale, "value": unscaled.to_bytes(size, "big", signed=True)}

    prices = {1: (variable(1250, 2), "12.50"), 2: (variable(-1, 30), "-0." + "0" * 29 + "1"),
              3: (variable(10**37 + 1, 0), str(10**37 + 1)), 4: (variable(12, -3), "12000"),
              5: (variable(1250, 2), "12.51")}
    records = [framed(1, PRICED, {"id": i, "price": p}) for i, (p, _) in prices.items()]
    (tmp_path / "value.avsc").write_text(json.dumps(PRICED))
    avro = given_schemas("value", "avro", tmp_path / "value.avsc", None, None)
    assert avro is not None
    request = with_value_kinds(ReconcileRequest(
        topic="t", sink_uri="json:/dev/null", key="id", compare=("price",),
        value_format="avro", avro=pinned_to_sampled_id(avro, {1}, sampled=1)))
    sink = local_frame(spark, [(i, text) for i, (_, text) in prices.items()],
                       "id long, price string")
    topic, sink, fields = hashed(decode_topic(raw(spark, records), request, {}),
                                 shape_sink(sink, request), ["price"],
                                 request.declared_kinds(), {"price": "numeric"})
    result = run(topic, sink, "append", ["price"])
    assert [f.compared_as for f in fields] == ["wide decimal"]
    assert [(r[0], r[1], r[6], r[7], r[8]) for r in rows(result)] == [
        ("mismatched", "5", "price", "12.5", "12.51")], rows(result)
