"""Avro values as the comparison reads them, decoded in Spark by spark-avro.

``avro``: Confluent's wire format, a zero magic byte and a 4-byte big-endian schema id
before the Avro body; each record is decoded with the writer schema of its id.
``avro-plain``: the value is the Avro body alone, written with the one writer schema.
Either way the record is resolved into the one reader schema (fields added with defaults,
promoted types), so every record has the same fields, typed as the reader schema says.

A field of Kafka Connect's or Debezium's semantic types (``connect.name`` in its Avro type:
``io.debezium.time.MicroTimestamp`` on a long, Connect's Decimal on bytes, ...) is read as
the type the name says (:func:`~kaudit.reconcile.avro_types.avro_semantic_type`), by the
decoders JSON's declarations use (:mod:`kaudit.reconcile.encodings`); one that does not
read so is undecodable, with its field named.

A record that cannot be decoded is kept, undecodable as a whole, with why in its sample:
shorter than the header, another magic byte, a schema id with no file, or a body that does
not decode with its writer schema. spark-avro's PERMISSIVE mode decodes such a body as a
record whose every field is null: it is told by a field the reader schema never leaves
null (where every field may be null, by all of them being null, which a real record of
only nulls would share). A field that is null in the record stays null.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kaudit.errors import InputError
from kaudit.reconcile.avro_schemas import (
    AvroSchemas,
    field_paths,
    never_null_fields,
    record_fields,
    row_field_types,
)
from kaudit.reconcile.avro_types import SPARK_LOGICAL_TYPES, avro_semantic_type, spark_ddl
from kaudit.reconcile.classes import KEY_PROBLEM, UNDECODABLE
from kaudit.reconcile.declared import Encoding, parse_declaration
from kaudit.reconcile.encodings import decimal_from_base64, decoded, variable_decimal
from kaudit.reconcile.envelope import OPS
from kaudit.reconcile.formats.base import Decoded, joined_key
from kaudit.reconcile.request import ReconcileRequest

HEADER_BYTES = 5
#: How many of an undecodable value's first bytes its sample shows, in hex.
SAMPLE_BYTES = 24


def check_avro_fields(request: ReconcileRequest) -> None:
    """A key or compared field the Avro reader schema lacks is a usage error, known before
    anything is read."""
    if request.avro is None:
        return
    known = field_paths(request.avro.reader.schema)
    where = "the reader schema"
    if request.envelope == "debezium":
        if "op" not in known or "after" not in known:
            raise InputError(f"{request.avro.reader.source}: the reader schema has no op and "
                             "after fields: not a Debezium envelope")
        known = {p.removeprefix("after.") for p in known if p.startswith("after.")}
        where = "the reader schema's after record"
    for name in request.value_fields():
        if name not in known:
            raise InputError(f"{request.avro.reader.source}: {where} has no field {name!r} "
                             f"(fields: {', '.join(sorted(known))})")
    # --schema overrides the type of a field the reader schema has, never adds one.
    for name in parse_declaration(request.schema).names if request.schema else ():
        if name not in known:
            raise InputError(f"--schema declares {name!r}, which {where} "
                             f"({request.avro.reader.source}) lacks (fields: "
                             f"{', '.join(sorted(known))})")


def decode_avro(raw: Any, request: ReconcileRequest) -> Decoded:
    """The frame and the columns decode_topic builds its result from."""
    from pyspark.sql import functions as F

    schemas = request.avro
    if schemas is None:  # the CLI loads them; a request made in code may not have
        raise ValueError("an Avro value format needs the writer schemas (request.avro)")
    value = F.col("value")
    decoded, reason = _framing(schemas)(value, schemas)
    frame = raw.select("partition", "offset", "timestamp", "key", KEY_PROBLEM, "value",
                       decoded.alias("v")).withColumn("_reason", F.when(
                           value.isNotNull(), reason))
    # A body that did not decode is a record of nulls (see the module docstring).
    frame = frame.withColumn("v", F.when(F.col("_reason").isNull(), F.col("v")))
    key_names = request.value_key_fields()
    tombstone, by_message_key = value.isNull(), None
    if request.envelope == "debezium":
        frame, tombstone = _debezium(frame)
        by_message_key = value.isNull()
    else:
        frame = frame.withColumn(UNDECODABLE, F.when(F.col("_reason").isNotNull(),
                                                     F.lit("")))
    fields = [*key_names, *request.compare]
    read = {name: _row_field(name, request.envelope) for name in fields}
    typed = typed_fields(request, fields)
    targets = _targets(typed, request)
    values = {name: _read_as(read[name], typed[name], targets[name]) if name in typed
              else read[name] for name in fields}
    # A field that does not read as its type (an unparsable zoned timestamp, a decimal too
    # wide): the record is undecodable in that field, as a JSON one would be.
    failed = [F.when(read[n].isNotNull() & values[n].isNull(), F.lit(n)) for n in typed]
    key_unread = F.col(UNDECODABLE).isNotNull()
    if failed:
        # Named apart: UNDECODABLE below then also holds the field.
        frame = frame.withColumn("_field", F.when(F.col(UNDECODABLE).isNull(),
                                                  F.coalesce(*failed)))
        key_unread = (F.col(UNDECODABLE).isNotNull() & F.col("_field").isNull()) \
            | F.coalesce(F.col("_field").isin(*key_names), F.lit(False))
        why = [F.when(F.col("_field") == n, F.lit(
            f"field {n} does not read as {targets[n].simpleString()} "
            f"{(f.encoding or '').upper()} ({f.said_by})".replace("  ", " ")))
            for n, f in typed.items()]
        frame = frame.withColumn(UNDECODABLE, F.coalesce(F.col(UNDECODABLE), F.col("_field")))
        frame = frame.withColumn("_reason", F.coalesce(F.col("_reason"), *why))
    raw_text = F.when(F.col(UNDECODABLE).isNotNull(), F.concat(
        F.col("_reason"), F.lit("; the value starts "),
        F.lower(F.hex(F.substring(value, 1, SAMPLE_BYTES)))))
    return Decoded(frame=frame, tombstone=tombstone,
                   values={c: values[c] for c in request.compare},
                   key_texts={k: values[k].cast("string") for k in key_names},
                   key_unread=key_unread, raw_text=raw_text,
                   by_message_key=by_message_key)


@dataclass(frozen=True)
class TypedField:
    """A field read as another type than spark-avro gives it, and who says so."""

    ddl: str | None
    """Its Spark type; None: the one ``--schema`` declares (read by Spark's parser)."""
    encoding: Encoding | None
    """How its value is written (an epoch number, a Decimal's bytes); None: as the type's
    own text, or a value of the type already."""
    said_by: str
    """``--schema``, or the semantic name in its Avro type."""
    avro_type: str
    """The Avro primitive it is written in."""


def typed_fields(request: ReconcileRequest, fields: list[str]) -> dict[str, TypedField]:
    """The ``fields`` read as another type than spark-avro gives them: the one ``--schema``
    declares (it overrides), else the one a Connect or Debezium semantic name in the
    reader schema says (:func:`~kaudit.reconcile.avro_types.avro_semantic_type`)."""
    if request.avro is None:
        return {}
    declared = parse_declaration(request.schema) if request.schema else None
    out = {}
    for name, kind in row_field_types(request.avro.reader.schema, fields,
                                      request.envelope).items():
        primitive = kind.get("type") if isinstance(kind, dict) else kind
        if declared is not None and name in declared.names:
            # A logical type spark-avro decodes is a value of its type already: an
            # encoding word would read it again (a timestamp as a count), a cast will do.
            logical = isinstance(kind, dict) and kind.get("logicalType") in SPARK_LOGICAL_TYPES
            out[name] = TypedField(None, None if logical else declared.encodings.get(name),
                                   "--schema", str(primitive))
        elif (found := avro_semantic_type(kind)) is not None:
            out[name] = TypedField(spark_ddl(found), found.encoding, kind["connect.name"],
                                   str(primitive))
    return out


def _targets(typed: dict[str, TypedField], request: ReconcileRequest) -> dict[str, Any]:
    """The Spark type each typed field is read as."""
    from pyspark.sql.types import DataType, StructType

    schema: Any = StructType.fromDDL(parse_declaration(request.schema).ddl) \
        if request.schema else StructType()
    declared = {f.name: f.dataType for f in schema.fields}
    return {name: declared[name] if field.ddl is None else DataType.fromDDL(field.ddl)
            for name, field in typed.items()}



def _read_as(column: Any, field: TypedField, target: Any) -> Any:
    """A decoded Avro field read as ``target``, written as ``field`` says: an epoch number
    as a time or a date, a Decimal's bytes at its scale (through their base64: the one
    decoder of Connect's Decimal), a VariableScaleDecimal's record at its own scale, a
    text or a number cast; null where it does not read."""
    from pyspark.sql import functions as F

    if field.encoding is Encoding.BASE64:
        text = F.base64(column) if field.avro_type == "bytes" else column.cast("string")
        return decimal_from_base64(text, target)
    if field.encoding is Encoding.VARIABLE and field.avro_type == "record":
        return variable_decimal(column.getField("scale"), column.getField("value"))
    if field.encoding is not None:
        return decoded(column, target, field.encoding)
    return column.try_cast(target)


def decode_key(raw: Any, request: ReconcileRequest) -> Any:
    """``raw`` with its message key as the text the comparison matches (an Avro key record:
    its fields' texts joined as :func:`~kaudit.reconcile.formats.base.joined_key` joins them) and
    :data:`KEY_PROBLEM`: why an Avro key did not decode, with its first bytes in hex."""
    from pyspark.sql import functions as F

    schemas = request.key_avro
    if schemas is None:
        return raw.withColumn(KEY_PROBLEM, F.lit(None).cast("string"))
    key = F.col("key")
    decoded, reason = _framing(schemas)(key, schemas, "_k")
    frame = raw.withColumn("_k", decoded).withColumn(KEY_PROBLEM, F.when(
        key.isNotNull(), reason))
    problem = F.col(KEY_PROBLEM)
    fields = record_fields(schemas.reader.schema)
    parts = [F.col("_k")] if fields is None else [_field(f, "_k") for f in fields]
    text = joined_key([part.cast("string") for part in parts])
    return frame.withColumn(KEY_PROBLEM, F.when(problem.isNotNull(), F.concat(
        F.lit("the key: "), problem, F.lit("; the key starts "),
        F.lower(F.hex(F.substring(key, 1, SAMPLE_BYTES)))))).withColumn(
        "key", F.when(key.isNotNull() & problem.isNull(), text)).drop("_k")


def avro_events(spark: Any, request: ReconcileRequest,
                values: dict[tuple[int, int], bytes | None]) -> dict[tuple[int, int], Any]:
    """What a sample shows of the Avro change event at each (partition, offset) (see
    :func:`~kaudit.reconcile.envelope.event_context`), decoded in Spark as the topic was;
    None for a value that is not a decodable event."""
    from pyspark.sql import functions as F

    schemas = request.avro
    if schemas is None:
        raise ValueError("Avro events need the writer schemas (request.avro)")
    paths = field_paths(schemas.reader.schema)

    def field(name: str) -> Any:
        return _field(name) if name in paths else F.lit(None)

    decoded, reason = _framing(schemas)(F.col("value"), schemas)
    data = [(p, o, v) for (p, o), v in values.items()]
    frame = spark.createDataFrame(data, "partition int, offset long, value binary") \
        .withColumn("v", decoded).withColumn("_reason", reason)
    picked = frame.select("partition", "offset", F.col("_reason").isNull().alias("ok"),
                          field("op").alias("op"), field("ts_ms").alias("ts_ms"),
                          field("source.ts_ms").alias("source_ts_ms"),
                          field("transaction").alias("transaction"))
    events: dict[tuple[int, int], Any] = {}
    for row in picked.collect():
        event = None
        if row["ok"] and row["op"] is not None:
            transaction = row["transaction"]
            event = {"op": row["op"], "ts_ms": row["ts_ms"],
                     "source_ts_ms": row["source_ts_ms"],
                     "transaction": transaction.asDict(recursive=True)
                     if hasattr(transaction, "asDict") else transaction}
        events[(row["partition"], row["offset"])] = event
    return events


def _debezium(frame: Any) -> tuple[Any, Any]:
    """A Debezium envelope decoded from Avro: the frame with its undecodable reasons (an
    event without a known ``op`` too: field ``op``) and which records leave no row (a
    delete, a tombstone)."""
    from pyspark.sql import functions as F

    op = F.col("v.op")
    frame = frame.withColumn("_not_event", F.col("value").isNotNull()
                             & F.col("_reason").isNull() & (op.isNull() | ~op.isin(*OPS)))
    not_event = F.col("_not_event")
    frame = frame.withColumn("_reason", F.when(not_event, F.concat(
        F.lit("op "), F.coalesce(op, F.lit("missing")),
        F.lit(": not a Debezium change event"))).otherwise(F.col("_reason")))
    frame = frame.withColumn(UNDECODABLE, F.when(not_event, F.lit("op")).when(
        F.col("_reason").isNotNull(), F.lit("")))
    deleted = F.coalesce(op == F.lit("d"), F.lit(False)) & F.col(UNDECODABLE).isNull()
    return frame, F.col("value").isNull() | deleted


def _framing(schemas: AvroSchemas) -> Any:
    """The decoder of the records' framing: Confluent's wire format, or a bare body."""
    return _framed if schemas.framed else _plain


def _framed(value: Any, schemas: Any, decoded: str = "v") -> tuple[Any, Any]:
    """Confluent's wire format: the decoded record (null where it is not one) and why not
    (read from the column ``decoded`` it is put in)."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    reader = schemas.reader.json()
    length = F.length(value)
    magic = F.substring(value, 1, 1)
    schema_id = F.conv(F.hex(F.substring(value, 2, 4)), 16, 10).cast("long")
    body = value.substr(F.lit(HEADER_BYTES + 1), length - HEADER_BYTES)
    header_ok = (length >= HEADER_BYTES) & (magic == F.unhex(F.lit("00")))
    ids = sorted(i for i in schemas.writers if i is not None)
    by_id: Any = None
    for schema_id_known in ids:
        # CASE WHEN evaluates only the branch that matches: one decoder per record.
        branch = from_avro(body, schemas.writers[schema_id_known].json(),
                           {"mode": "PERMISSIVE", "avroSchema": reader})
        test = header_ok & (schema_id == F.lit(schema_id_known))
        by_id = F.when(test, branch) if by_id is None else by_id.when(test, branch)
    if by_id is None:  # one file whose id no sampled record named: no record is its
        [writer] = schemas.writers.values()
        by_id = F.when(F.lit(False), from_avro(body, writer.json(), {
            "mode": "PERMISSIVE", "avroSchema": reader}))
    reason = (
        F.when(length < HEADER_BYTES, F.format_string(
            "%d bytes: shorter than the 5-byte header of Confluent's wire format", length))
        .when(magic != F.unhex(F.lit("00")), F.concat(
            F.lit("magic byte 0x"), F.lower(F.hex(magic)),
            F.lit(", not 0x00: not Confluent's wire format")))
        .when(~schema_id.isin(ids), F.format_string(
            "schema id %1$d: " + schemas.unknown_id, schema_id))
        .when(_not_decoded(schemas, decoded), F.format_string(
            "the body does not decode with schema id %d", schema_id)))
    return by_id, reason


def _plain(value: Any, schemas: Any, decoded: str = "v") -> tuple[Any, Any]:
    """A bare Avro body: the decoded record (null where it is not one) and why not (read
    from the column ``decoded`` it is put in)."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    [writer] = schemas.writers.values()
    record = from_avro(value, writer.json(),
                       {"mode": "PERMISSIVE", "avroSchema": schemas.reader.json()})
    reason = F.when(_not_decoded(schemas, decoded), F.lit(
        f"does not decode with the writer schema {Path(writer.source).name}"))
    return record, reason


def _not_decoded(schemas: Any, decoded: str) -> Any:
    """The column ``decoded`` holds no record: null, or PERMISSIVE's record of nulls (a
    schema that is not a record, a key's, decodes to null where it does not decode)."""
    from pyspark.sql import functions as F

    reader = schemas.reader.schema
    fields = record_fields(reader)
    missing = F.col(decoded).isNull()
    if fields is None:
        return missing
    nulls = F.lit(True)
    for name in never_null_fields(reader)[:1] or fields:
        nulls = nulls & _field(name, decoded).isNull()
    return missing | nulls


def _row_field(name: str, envelope: str) -> Any:
    """A row field: of the value itself, or of a Debezium event's ``after`` (``before``
    for a delete: its key)."""
    from pyspark.sql import functions as F

    if envelope != "debezium":
        return _field(name)
    return F.when(F.col("v.op") == F.lit("d"), _field(f"before.{name}")).otherwise(
        _field(f"after.{name}"))


def _field(name: str, decoded: str = "v") -> Any:
    from pyspark.sql import functions as F

    return F.col(decoded + "." + ".".join(f"`{part}`" for part in name.split(".")))
