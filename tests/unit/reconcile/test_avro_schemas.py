"""Avro writer schemas from files, checked and resolved to one reader schema before Spark
starts: Avro's own resolution rules, each refusal naming the file and the field."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kaudit.errors import InputError
from kaudit.reconcile.avro_schemas import (
    field_paths,
    given_schemas,
    key_schemas_for,
    load_schemas,
    never_null_fields,
    read_schema_file,
    resolve,
)
from kaudit.reconcile.formats.avro import pinned_to_sampled_id, schema_ids
from kaudit.reconcile.request import ReconcileRequest

V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "amount", "type": "int"},
    {"name": "note", "type": ["null", "string"], "default": None}]}
V2 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "amount", "type": "double"},  # int -> double: a promotion
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "currency", "type": "string", "default": "EUR"}]}  # added with a default


def write(path: Path, schema: Any) -> Path:
    path.write_text(json.dumps(schema, indent=2), encoding="utf-8")
    return path


def test_a_directory_of_ids_gives_each_writer_and_the_newest_reads_them_all(
        tmp_path: Path) -> None:
    write(tmp_path / "7.avsc", V1)
    write(tmp_path / "12.avsc", V2)
    (tmp_path / "README").write_text("not a schema")  # ignored: not ID.avsc
    schemas = load_schemas(tmp_path)
    assert sorted(k for k in schemas.writers if k is not None) == [7, 12]
    assert schemas.reader.schema_id == 12 and schemas.reader.schema == V2
    assert json.loads(schemas.reader.json()) == V2


def test_one_file_is_plain_avros_one_writer_schema(tmp_path: Path) -> None:
    schemas = load_schemas(write(tmp_path / "order.avsc", V1), framed=False)
    assert list(schemas.writers) == [None] and schemas.reader.schema == V1


def test_one_file_of_confluent_framed_records_names_its_id(tmp_path: Path) -> None:
    schemas = load_schemas(write(tmp_path / "42.avsc", V1))
    assert list(schemas.writers) == [42] and schemas.reader.schema_id == 42
    with pytest.raises(InputError) as err:
        load_schemas(write(tmp_path / "order.avsc", V1))
    assert "name the file ID.avsc" in err.value.message


def test_one_value_file_of_any_name_is_used_for_the_one_id_the_topic_carries(
        tmp_path: Path) -> None:
    schemas = given_schemas("value", "avro", write(tmp_path / "order.avsc", V1), None, None)
    assert schemas is not None and schemas.framed and schemas.id_from_topic
    assert schemas.writers[None].schema == V1  # its id not known until the sample
    pinned = pinned_to_sampled_id(schemas, {3}, sampled=40)
    assert list(pinned.writers) == [3] and pinned.framed and pinned.id_from_topic
    assert pinned.reader.schema_id == 3 and pinned.reader.schema == V1
    # A record of another id found later: unknown, never decoded with this schema.
    assert pinned.unknown_id.startswith(f"{tmp_path / 'order.avsc'} was used for schema id 3")
    assert pinned_to_sampled_id(schemas, set(), sampled=0) is schemas  # an empty range


def test_one_value_file_and_several_sampled_ids_names_them_and_the_files_to_give(
        tmp_path: Path) -> None:
    schemas = given_schemas("value", "avro", write(tmp_path / "order.avsc", V1), None, None)
    assert schemas is not None
    with pytest.raises(InputError) as err:
        pinned_to_sampled_id(schemas, {12, 3}, sampled=40)
    assert err.value.message == (
        f"--value-schema {tmp_path / 'order.avsc'}: one schema file, but the 40 records "
        "sampled from both ends of each partition carry schema ids 3, 12: give a directory "
        "of the writer schemas named by their ids (3.avsc, 12.avsc)")


def test_a_reader_schema_given_stays_the_reader_when_the_id_is_learned(tmp_path: Path) -> None:
    schemas = given_schemas("value", "avro", write(tmp_path / "order.avsc", V1),
                            write(tmp_path / "reader.avsc", V2), None)
    assert schemas is not None
    pinned = pinned_to_sampled_id(schemas, {5}, sampled=1)
    assert list(pinned.writers) == [5] and pinned.writers[5].schema == V1
    assert pinned.reader.schema == V2 and pinned.reader.source.endswith("reader.avsc")


def test_a_key_file_must_still_be_named_by_its_id(tmp_path: Path) -> None:
    """Only values are sampled before Spark starts."""
    with pytest.raises(InputError) as err:
        key_schemas_for("avro", write(tmp_path / "key.avsc", "long"))
    assert "name the file ID.avsc" in err.value.message


def test_schema_ids_are_read_from_the_wire_formats_header_only() -> None:
    values = [b"\x00\x00\x00\x00\x03body", b"\x00\x00\x00\x01\x00", b"\x01\x00\x00\x00\x09",
              b"\x00\x00", b"", b'{"id": 1}']
    assert schema_ids(values) == {3, 256}


def test_plain_avro_has_one_writer_schema_not_a_directory(tmp_path: Path) -> None:
    write(tmp_path / "1.avsc", V1)
    with pytest.raises(InputError) as err:
        load_schemas(tmp_path, framed=False)
    assert "carry no schema id" in err.value.message


def test_the_reader_schema_must_be_a_record(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        load_schemas(write(tmp_path / "1.avsc", "string"))
    assert "not a record" in err.value.message


def test_field_paths_reach_into_nested_and_nullable_records() -> None:
    address = {"type": "record", "name": "Address", "fields": [{"name": "city",
                                                                 "type": "string"}]}
    schema = {**V1, "fields": [*V1["fields"], {"name": "ship", "type": ["null", address]},
                               {"name": "bill", "type": "Address"}]}
    assert field_paths(schema) == {"id", "amount", "note", "ship", "ship.city", "bill",
                                   "bill.city"}


@pytest.mark.parametrize(("writer", "reader"), [
    ("int", "long"), ("int", "float"), ("int", "double"), ("long", "double"),
    ("float", "double"), ("string", "bytes"), ("bytes", "string"),
    ("int", ["null", "long"]), (["null", "int"], ["null", "long"]),
    ({"type": "array", "items": "int"}, {"type": "array", "items": "long"}),
    ({"type": "map", "values": "float"}, {"type": "map", "values": "double"}),
    ({"type": "long", "logicalType": "timestamp-millis"}, "long"),
])
def test_avros_promotions_resolve(writer: Any, reader: Any) -> None:
    assert resolve(writer, reader) is None


@pytest.mark.parametrize(("writer", "reader", "why"), [
    ("long", "int", "written as long, read as int"),
    ("double", "float", "written as double, read as float"),
    ("string", "int", "written as string, read as int"),
    (["null", "string"], "string", "written as null, read as string"),
    ("boolean", ["null", "int"], "matches no branch"),
    ({"type": "fixed", "name": "F", "size": 4}, {"type": "fixed", "name": "F", "size": 8},
     "fixed of size 4 read as size 8"),
    ({"type": "enum", "name": "E", "symbols": ["A", "B"]},
     {"type": "enum", "name": "E", "symbols": ["A"]}, "symbols ['B'] unknown"),
])
def test_what_does_not_resolve_says_why(writer: Any, reader: Any, why: str) -> None:
    assert why in (resolve(writer, reader) or "")


def test_a_reader_field_the_writer_lacks_needs_a_default(tmp_path: Path) -> None:
    strict = {**V2, "fields": [*V1["fields"], {"name": "currency", "type": "string"}]}
    write(tmp_path / "1.avsc", V1)
    reader = write(tmp_path / "reader.json", strict)
    with pytest.raises(InputError) as err:
        load_schemas(tmp_path, reader)
    assert str(tmp_path / "1.avsc") in err.value.message
    assert "field currency: the reader has it with no default" in err.value.message


def test_a_field_of_another_type_is_named_with_its_file(tmp_path: Path) -> None:
    narrowed = {**V1, "fields": [{"name": "id", "type": "int"}, *V1["fields"][1:]]}
    write(tmp_path / "1.avsc", V1)
    write(tmp_path / "2.avsc", narrowed)  # the newest: long -> int does not resolve
    with pytest.raises(InputError) as err:
        load_schemas(tmp_path)
    assert err.value.message == (f"{tmp_path / '1.avsc'}: does not resolve to the reader "
                                 f"schema {tmp_path / '2.avsc'}: field id: written as long, "
                                 "read as int (no Avro promotion)")


def test_a_writer_field_the_reader_lacks_is_skipped_and_records_match_by_name() -> None:
    without_currency = {**V2, "fields": V2["fields"][:3]}
    assert resolve(V2, without_currency) is None  # currency is skipped
    renamed = {**V1, "name": "Invoice"}
    assert "record Order read as record Invoice" in (resolve(V1, renamed) or "")
    assert resolve(V1, {**renamed, "aliases": ["Order"]}) is None


@pytest.mark.parametrize(("text", "why"), [
    ('{"type": "record", "name": "X", "fields": [\n  {"name": "a", "type": "lng"}]}',
     "field X.a: unknown type 'lng'"),
    ('{"type": "record", "fields": []}', "the schema: a record without a name"),
    ('{"type": "enum", "name": "E"}', "the schema: enum E without symbols"),
    ('[]', "the schema: an empty union"),
    ('{"name": "no type"}',
     'the schema: neither a type name, a union nor an object with a "type"'),
    ('{"type": "record", "name": "X", "fields": [{"name": "a", "type": "int"},'
     ' {"name": "a", "type": "int"}]}', "the schema: record X names field a twice"),
])
def test_a_file_that_is_not_an_avro_schema_is_one_line(tmp_path: Path, text: str,
                                                        why: str) -> None:
    path = tmp_path / "bad.avsc"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_schema_file(path, None)
    assert err.value.message == f"{path}: not an Avro schema: {why}"


def test_json_that_does_not_parse_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "1.avsc"
    path.write_text('{"type": "record",\n "name": "X",\n "fields": [,]}', encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_schema_file(path, 1)
    assert err.value.message.startswith(f"{path}:3: not an Avro schema: not JSON")


def test_a_missing_path_or_an_empty_directory_is_said(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such schema file or directory"):
        load_schemas(tmp_path / "nowhere.avsc")
    with pytest.raises(InputError, match=r"no schema file named ID\.avsc"):
        load_schemas(tmp_path)


def test_a_misnamed_schema_among_the_writers_is_refused_unless_it_is_the_reader(
        tmp_path: Path) -> None:
    write(tmp_path / "1.avsc", V1)
    misnamed = write(tmp_path / "v2.avsc", V2)
    (tmp_path / "README").write_text("not a schema", encoding="utf-8")  # not .avsc: let be
    with pytest.raises(InputError) as err:
        load_schemas(tmp_path)
    assert err.value.message.startswith(f"{misnamed}: a writer schema's file is named by its "
                                        "schema id (ID.avsc, e.g. 1.avsc)")
    # The reader schema may sit among the writers.
    schemas = load_schemas(tmp_path, misnamed)
    assert list(schemas.writers) == [1] and schemas.reader.source == str(misnamed)


def test_never_null_fields_tell_a_decoded_record_from_permissives_record_of_nulls() -> None:
    assert never_null_fields(V2) == ["id", "amount", "currency"]  # note is ["null", ...]
    nullable = {**V1, "fields": [{"name": "a", "type": ["null", "int"], "default": None}]}
    assert never_null_fields(nullable) == []


def test_a_key_schema_may_be_a_primitive_and_is_asked_for_with_its_format(
        tmp_path: Path) -> None:
    key = write(tmp_path / "key.avsc", "long")
    assert key_schemas_for("avro-plain", key) is not None
    assert key_schemas_for("string", None) is None
    with pytest.raises(InputError) as err:
        key_schemas_for("string", key)
    assert err.value.message.startswith("--key-schema is for Avro keys: add --key-format")
    with pytest.raises(InputError) as err:
        key_schemas_for("avro", None)
    assert err.value.message.startswith("--key-format avro needs the writer schemas")


def test_an_avro_key_records_fields_are_the_sinks_key_columns(tmp_path: Path) -> None:
    record = {"type": "record", "name": "K", "fields": [
        {"name": "region", "type": "string"}, {"name": "id", "type": "long"}]}
    keys = key_schemas_for("avro", write(tmp_path / "1.avsc", record))
    request = ReconcileRequest(topic="t", sink_uri="json:/dev/null", key_format="avro",
                               key_avro=keys, column_map={"@key.id": "order_id"})
    assert request.sink_key_columns() == ["region", "order_id"]
    primitive = key_schemas_for("avro-plain", write(tmp_path / "k.avsc", "string"))
    assert ReconcileRequest(topic="t", sink_uri="json:/dev/null", key_format="avro-plain",
                            key_avro=primitive).sink_key_columns() == ["key"]
    assert ReconcileRequest(topic="t", sink_uri="json:/dev/null",
                            key="id,@key").sink_key_columns() == ["id", "key"]



def test_the_avro_formats_field_check_learns_the_id_from_the_sample_of_both_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The value format's check before Spark: the one id the sampled values carry, or
    exit 2 for several; files named by id and the registry's schemas are not sampled."""
    import kaudit.reconcile.source as source
    from kaudit.reconcile.formats import value_format

    sampled: list[list[bytes] | None] = []
    monkeypatch.setattr(source, "sample_values", lambda *args: sampled[-1])
    avro = given_schemas("value", "avro", write(tmp_path / "order.avsc", V1), None, None)
    request = ReconcileRequest(topic="orders", sink_uri="json:/x", key="id",
                               value_format="avro", avro=avro)
    check = value_format("avro").check_sampled_fields
    sampled.append([b"\x00\x00\x00\x00\x07a", b"\x00\x00\x00\x00\x07b", b"\x05x"])
    learned = check(None, request, [])  # type: ignore[arg-type]
    assert learned.avro is not None and list(learned.avro.writers) == [7]
    sampled.append([b"\x00\x00\x00\x00\x07a", b"\x00\x00\x00\x00\x08b"])
    with pytest.raises(InputError, match="carry schema ids 7, 8: give a directory"):
        check(None, request, [])  # type: ignore[arg-type]
    sampled.append(None)  # not read within the timeout: the id is not known
    with pytest.raises(InputError, match="not read within the timeout"):
        check(None, request, [])  # type: ignore[arg-type]
    named = replace(request, avro=load_schemas(write(tmp_path / "7.avsc", V1)))
    assert check(None, named, []) is named  # type: ignore[arg-type]


MICROS = {"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.MicroTimestamp"}
PRECISE = {"type": "bytes", "connect.name": "org.apache.kafka.connect.data.Decimal",
           "connect.parameters": {"scale": "2", "connect.decimal.precision": "12"}}
VARIABLE = {"type": "record", "name": "VariableScaleDecimal", "namespace": "io.debezium.data",
            "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
            "connect.version": 1, "connect.name": "io.debezium.data.VariableScaleDecimal"}


@pytest.mark.parametrize(("avro_type", "ddl", "encoding"), [
    (MICROS, "TIMESTAMP", "micros"),
    ({"type": "long", "connect.name": "io.debezium.time.Timestamp"}, "TIMESTAMP", "millis"),
    ({"type": "int", "connect.name": "io.debezium.time.Date"}, "DATE", "days"),
    (PRECISE, "DECIMAL(12,2)", "base64"),
    # A bare numeric in Debezium's precise mode: its record of the scale and the bytes.
    (VARIABLE, "NUMBER", "variable"),
    ({"type": "string", "connect.name": "io.debezium.time.ZonedTimestamp"}, "TIMESTAMP", None),
])
def test_a_connect_name_in_an_avro_type_says_what_the_primitive_holds(
        avro_type: Any, ddl: str, encoding: str | None) -> None:
    from kaudit.reconcile.avro_types import avro_semantic_type

    found = avro_semantic_type(avro_type)
    assert found is not None and (found.ddl, found.encoding) == (ddl, encoding)


@pytest.mark.parametrize("avro_type", [
    # spark-avro decodes these itself: Connect's Decimal as Confluent's converter writes it
    # (with logicalType decimal), Connect's Timestamp and Date.
    {**PRECISE, "logicalType": "decimal", "precision": 12, "scale": 2},
    {"type": "long", "logicalType": "timestamp-millis",
     "connect.name": "org.apache.kafka.connect.data.Timestamp"},
    {"type": "int", "logicalType": "date", "connect.name": "org.apache.kafka.connect.data.Date"},
    # Text that stays text, a plain type, a kind not read from Avro yet.
    {"type": "string", "connect.name": "io.debezium.data.Enum"},
    "long", {"type": "long"},
    # A VariableScaleDecimal record of other fields than Debezium's is not trusted.
    {"type": "record", "name": "V", "connect.name": "io.debezium.data.VariableScaleDecimal",
     "fields": []},
    {**VARIABLE, "fields": [{"name": "scale", "type": "long"},
                            {"name": "value", "type": "bytes"}]},
    # A time of day counted in a string is not trusted either.
    {"type": "string", "connect.name": "io.debezium.time.MicroTime"},
    # A name on a primitive that cannot hold it is not trusted.
    {"type": "string", "connect.name": "io.debezium.time.MicroTimestamp"},
])
def test_what_spark_avro_reads_or_the_name_does_not_say_is_left_alone(avro_type: Any) -> None:
    from kaudit.reconcile.avro_types import avro_semantic_type

    assert avro_semantic_type(avro_type) is None


def test_kinds_spark_has_no_type_for_are_read_as_text_or_counts_and_declared() -> None:
    from kaudit.reconcile.avro_types import as_declaration, avro_semantic_type, spark_ddl

    found = {name: avro_semantic_type(t) for name, t in {
        "attrs": {"type": "string", "connect.name": "io.debezium.data.Json"},
        "ref": {"type": "string", "connect.name": "io.debezium.data.Uuid"},
        "opens": {"type": "long", "connect.name": "io.debezium.time.MicroTime"},
        "closes": {"type": "int", "connect.name": "io.debezium.time.Time"},
        "at": {"type": "long", "connect.name": "io.debezium.time.NanoTimestamp"},
        "day": {"type": "int", "connect.name": "io.debezium.time.Date"},
        "price": VARIABLE}.items()}
    assert all(t is not None for t in found.values())
    assert {n: spark_ddl(t) for n, t in found.items() if t} == {
        "attrs": "STRING", "ref": "STRING", "opens": "STRING", "closes": "STRING",
        "at": "BIGINT", "day": "DATE", "price": "STRING"}
    assert as_declaration({n: t for n, t in found.items() if t}) == (
        "`attrs` JSON, `ref` UUID, `opens` TIME micros, `closes` TIME millis, "
        "`at` TIMESTAMP nanos, `price` NUMBER variable")
    assert as_declaration({"day": found["day"]}) is None  # Spark's own type: nothing to say


def test_row_field_types_reach_through_nullable_records_and_debeziums_after() -> None:
    from kaudit.reconcile.avro_schemas import row_field_types

    row = {"type": "record", "name": "Value", "fields": [
        {"name": "id", "type": "long"},
        {"name": "at", "type": ["null", MICROS], "default": None},
        {"name": "shop", "type": ["null", {"type": "record", "name": "Shop", "fields": [
            {"name": "opened", "type": {"type": "int", "connect.name": "io.debezium.time.Date"}}
        ]}]}]}
    envelope = {"type": "record", "name": "Envelope", "fields": [
        {"name": "before", "type": ["null", row]}, {"name": "after", "type": ["null", "Value"]},
        {"name": "op", "type": "string"}]}
    wanted = ["id", "at", "shop.opened", "nope"]
    expected = {"id": "long", "at": MICROS,
                "shop.opened": {"type": "int", "connect.name": "io.debezium.time.Date"}}
    assert row_field_types(row, wanted, "none") == expected
    assert row_field_types(envelope, wanted, "debezium") == expected


def test_schema_overrides_a_semantic_name_and_names_only_the_reader_schemas_fields(
        tmp_path: Path) -> None:
    from kaudit.reconcile.formats.avro_decode import check_avro_fields, typed_fields

    row = {"type": "record", "name": "Value", "fields": [
        {"name": "id", "type": "long"}, {"name": "at", "type": MICROS},
        {"name": "amount", "type": PRECISE}, {"name": "note", "type": "string"},
        {"name": "paid", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
    avro = load_schemas(write(tmp_path / "v.avsc", row), framed=False)
    request = ReconcileRequest(topic="t", sink_uri="json:/x", key="id", value_format="avro-plain",
                               compare=("at", "amount", "note", "paid"), avro=avro,
                               schema="at BIGINT, note DATE, paid TIMESTAMP MILLIS")
    typed = typed_fields(request, ["id", "at", "amount", "note", "paid"])
    assert {n: (f.ddl, f.encoding, f.said_by, f.avro_type) for n, f in typed.items()} == {
        "at": (None, None, "--schema", "long"),
        "amount": ("DECIMAL(12,2)", "base64", "org.apache.kafka.connect.data.Decimal", "bytes"),
        "note": (None, None, "--schema", "string"),
        # spark-avro's timestamp already: MILLIS would read it again as a count
        "paid": (None, None, "--schema", "long")}
    check_avro_fields(request)
    with pytest.raises(InputError, match="--schema declares 'nope', which the reader schema"):
        check_avro_fields(replace(request, schema="nope INT"))
