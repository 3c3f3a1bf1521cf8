"""Connect's and Debezium's semantic types, read from the schema beside each payload."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from kaudit.reconcile.declared import Encoding, parse_declaration
from kaudit.reconcile.formats.json import with_value_types
from kaudit.reconcile.request import ReconcileRequest
from kaudit.reconcile.semantic import SemanticType, semantic_fields, unread_fields


def row_schema() -> list[dict[str, Any]]:
    return [
        {"field": "id", "type": "int64"},
        {"field": "amount", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
         "parameters": {"scale": "2", "connect.decimal.precision": "12"}},
        {"field": "created_at", "type": "int64", "name": "io.debezium.time.MicroTimestamp"},
        {"field": "paid_at", "type": "string", "name": "io.debezium.time.ZonedTimestamp"},
        {"field": "day", "type": "int32", "name": "io.debezium.time.Date"},
        {"field": "at_ms", "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"},
        {"field": "doc", "type": "string", "name": "io.debezium.data.Json"},
        {"field": "opens", "type": "int64", "name": "io.debezium.time.MicroTime"},
        {"field": "ns", "type": "int64", "name": "io.debezium.time.NanoTimestamp"},
        {"field": "closes", "type": "int32", "name": "org.apache.kafka.connect.data.Time"},
        {"field": "lap", "type": "int64", "name": "io.debezium.time.NanoTime"},
        {"field": "ref", "type": "string", "name": "io.debezium.data.Uuid"},
        {"field": "zt", "type": "string", "name": "io.debezium.time.ZonedTime"},
        {"field": "v", "type": "struct", "name": "io.debezium.data.VariableScaleDecimal",
         "fields": [{"field": "scale", "type": "int32"}, {"field": "value", "type": "bytes"}]},
        {"field": "where", "type": "struct", "fields": [
            {"field": "on", "type": "int32", "name": "org.apache.kafka.connect.data.Date"}]},
    ]


def event_schema() -> dict[str, Any]:
    row = {"type": "struct", "fields": row_schema()}
    return {"type": "struct", "fields": [{"field": "before", **row}, {"field": "after", **row},
                                         {"field": "op", "type": "string"}]}


EXPECTED = {
    "id": SemanticType("BIGINT"),  # a plain int64: an integer, not a 38-digit decimal
    "amount": SemanticType("DECIMAL(12,2)", Encoding.BASE64),
    "created_at": SemanticType("TIMESTAMP", Encoding.MICROS),
    "paid_at": SemanticType("TIMESTAMP"), "day": SemanticType("DATE", Encoding.DAYS),
    "at_ms": SemanticType("TIMESTAMP", Encoding.MILLIS), "doc": SemanticType("JSON"),
    "opens": SemanticType("TIME", Encoding.MICROS), "closes": SemanticType("TIME", Encoding.MILLIS),
    "lap": SemanticType("TIME", Encoding.NANOS), "ref": SemanticType("UUID"),
    "ns": SemanticType("TIMESTAMP", Encoding.NANOS),
    "v": SemanticType("NUMBER", Encoding.VARIABLE),
    "where.on": SemanticType("DATE", Encoding.DAYS),
}


def test_each_semantic_type_is_read_as_its_schema_names_it() -> None:
    assert semantic_fields(event_schema(), "debezium") == EXPECTED
    assert semantic_fields({"type": "struct", "fields": row_schema()}, "connect") == EXPECTED


def test_types_spark_cannot_hold_are_left_to_the_sink_with_the_reason() -> None:
    unread = unread_fields(event_schema(), "debezium")
    assert unread == {"zt": "io.debezium.time.ZonedTime: a time of day with an offset: no sink "
                            "type holds one alike; compared as the sink column's type"}


def request(**kwargs: Any) -> ReconcileRequest:
    return ReconcileRequest(topic="t", sink_uri="json:/dev/null", key="id",  # type: ignore[arg-type]
                            compare=("amount", "created_at", "note", "where.on"),
                            mode="upsert", **kwargs)


def test_the_first_wrapped_sample_gives_the_wanted_fields_types_as_a_declaration() -> None:
    wrapped = json.dumps({"schema": event_schema(), "payload": {"op": "c"}})
    found = with_value_types(request(envelope="debezium"), [None, "not json", wrapped])
    assert found.value_types is not None
    declared = parse_declaration(found.value_types)
    assert declared.names == ("id", "amount", "created_at", "where.on")
    assert declared.encodings == {"amount": Encoding.BASE64, "created_at": Encoding.MICROS,
                                  "where.on": Encoding.DAYS}


def test_a_wanted_field_of_a_type_not_read_carries_the_reason_to_the_report() -> None:
    """ZonedTime is left to the sink column's type, and the report's fields say why; a
    field not compared gets no note."""
    wrapped = json.dumps({"schema": event_schema(), "payload": {"op": "c"}})
    wanted = replace(request(envelope="debezium"), compare=("amount", "zt"))
    assert with_value_types(wanted, [wrapped]).type_notes == {
        "zt": "io.debezium.time.ZonedTime: a time of day with an offset: no sink type holds "
              "one alike; compared as the sink column's type"}
    assert with_value_types(request(envelope="debezium"), [wrapped]).type_notes == {}


def test_an_avro_field_of_a_type_not_read_carries_the_reason_too(tmp_path: Path) -> None:
    from kaudit.reconcile.avro_schemas import load_schemas
    from kaudit.reconcile.formats.avro import with_value_kinds

    schema = {"type": "record", "name": "V", "fields": [
        {"name": "id", "type": "long"},
        {"name": "zt", "type": {"type": "string", "connect.name": "io.debezium.time.ZonedTime"}},
        {"name": "doc", "type": {"type": "string", "connect.name": "io.debezium.data.Json"}}]}
    (tmp_path / "v.avsc").write_text(json.dumps(schema))
    found = with_value_kinds(replace(request(), compare=("zt", "doc"), value_format="avro-plain",
                                     avro=load_schemas(tmp_path / "v.avsc", framed=False)))
    assert found.value_types == "`doc` JSON"
    assert list(found.type_notes) == ["zt"]
    assert found.type_notes["zt"].startswith("io.debezium.time.ZonedTime: a time of day")
    typed = with_value_kinds(replace(request(), compare=("zt",), value_format="avro-plain",
                                     schema="zt STRING",
                                     avro=load_schemas(tmp_path / "v.avsc", framed=False)))
    assert typed.type_notes == {}  # --schema says how it is read


def test_schema_declarations_win_and_bare_values_say_nothing() -> None:
    wrapped = json.dumps({"schema": event_schema(), "payload": {"op": "c"}})
    mine = request(envelope="debezium", schema="id BIGINT, amount DOUBLE, created_at STRING, "
                                               "note STRING, `where.on` DATE")
    assert with_value_types(mine, [wrapped]).value_types is None
    assert with_value_types(request(envelope="debezium"), ['{"op": "c"}']).value_types is None
    assert with_value_types(request(), [wrapped]).value_types is None  # --envelope none


def test_plain_numbers_and_booleans_say_their_type_and_strings_leave_it_to_the_sink() -> None:
    from kaudit.reconcile.semantic import semantic_type

    assert semantic_type({"type": "int32"}) == SemanticType("BIGINT")
    assert semantic_type({"type": "float64"}) == SemanticType("DOUBLE")
    assert semantic_type({"type": "boolean"}) == SemanticType("BOOLEAN")
    # Debezium's string mode writes a decimal as text: the sink's numeric reads it exactly.
    assert semantic_type({"type": "string"}) is None
    assert semantic_type({"type": "bytes"}) is None
