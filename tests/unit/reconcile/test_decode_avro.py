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
from kaudit.reconcile.job import hashed, shape_sink
from kaudit.reconcile.request import ReconcileRequest
from tests.unit.reconcile.frames import counts, rows, run

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
    return spark.createDataFrame(data, "partition int, offset long, timestamp timestamp, "
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
    sink = spark.createDataFrame(sink_rows, "id long, value double, unit string")
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
                               avro=avro.for_sampled_ids({3}, sampled=1))
    values = [framed(3, V1, {"id": 1, "value": 10}), framed(4, V1, {"id": 2, "value": 20})]
    sink = spark.createDataFrame([(1, 10.0, None), (2, 20.0, None)],
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
    frame = spark.createDataFrame(
        [(0, i, None, k, v) for i, (k, v) in enumerate(zip(keys, values, strict=True))],
        "partition int, offset long, timestamp timestamp, key binary, value binary")
    sink = spark.createDataFrame([(1, 1.0, None), (2, 5.0, None)],
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
