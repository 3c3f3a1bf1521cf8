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

from kaudit.reconcile.avro_schemas import load_schemas
from kaudit.reconcile.decode import decode_topic
from kaudit.reconcile.job import hashed, shape_sink
from kaudit.reconcile.request import ReconcileRequest
from tests.unit.reconcile.frames import counts, rows, run

pytestmark = pytest.mark.spark

V1 = {"type": "record", "name": "Reading", "fields": [
    {"name": "id", "type": "long"}, {"name": "value", "type": "int"}]}
V2 = {**V1, "fields": [{"name": "id", "type": "long"}, {"name": "value", "type": "float"},
                       {"name": "unit", "type": ["null", "string"], "default": None}]}


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
              sink_rows: list[tuple[Any, ...]], compare: tuple[str, ...] = ("value",)) -> Any:
    schemas = tmp_path / "schemas"
    schemas.mkdir(exist_ok=True)
    if value_format == "avro":
        (schemas / "1.avsc").write_text(json.dumps(V1))
        (schemas / "2.avsc").write_text(json.dumps(V2))
        avro = load_schemas(schemas)
    else:
        (schemas / "reading.avsc").write_text(json.dumps(V2))
        avro = load_schemas(schemas / "reading.avsc", framed=False)
    request = ReconcileRequest(topic="t", sink_uri="json:/dev/null", key="id",
                               compare=compare, value_format=value_format,  # type: ignore
                               avro=avro)
    sink = spark.createDataFrame(sink_rows, "id long, value double, unit string")
    topic = decode_topic(raw(spark, values), request, {})
    topic, sink = hashed(topic, shape_sink(sink, request), list(compare))
    return run(topic, sink, "append", list(compare))


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


def test_plain_avro_has_no_header_and_one_writer_schema(spark: SparkSession,
                                                        tmp_path: Path) -> None:
    values = [body(V2, {"id": 1, "value": 1.0, "unit": None}), b"\x02"]
    result = reconcile(spark, tmp_path, "avro-plain", values, [(1, 1.0, None)])
    assert result.counts() == counts(undecodable=1)
    [bad] = rows(result)
    assert bad[7] == "does not decode with the writer schema reading.avsc; the value starts 02"
