"""What Kafka Connect's and Debezium's semantic types say about a JSON field: its type and
how its value is written, read from the schema Connect's JSON converter puts beside each
payload (``schemas.enable=true``: ``{"schema": ..., "payload": ...}``).

A field of a semantic type (the schema's ``name``: ``io.debezium.time.MicroTimestamp``,
``org.apache.kafka.connect.data.Decimal`` with its ``scale``, ...) is read as that type
says, as a ``--schema`` declaration would make it (:mod:`kaudit.reconcile.declared`); a
field of a plain type is left to the sink column's type. A time of day, a UUID and a JSON
document are read as kaudit's TIME, UUID and JSON (compared as their canonical text). A type
kaudit cannot hold exactly (a time of day with an offset) is named in
:data:`NOT_READ` and left to the sink column's type, with the reason.

Pure: it reads the schema's JSON only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kaudit.reconcile.declared import Encoding


@dataclass(frozen=True)
class SemanticType:
    """A field's type as its schema names it: the Spark DDL type it is read as and how its
    value is written (None: as the type's own text)."""

    ddl: str
    encoding: Encoding | None = None


_BY_NAME = {
    "org.apache.kafka.connect.data.Date": SemanticType("DATE", Encoding.DAYS),
    "io.debezium.time.Date": SemanticType("DATE", Encoding.DAYS),
    "org.apache.kafka.connect.data.Timestamp": SemanticType("TIMESTAMP", Encoding.MILLIS),
    "io.debezium.time.Timestamp": SemanticType("TIMESTAMP", Encoding.MILLIS),
    "io.debezium.time.MicroTimestamp": SemanticType("TIMESTAMP", Encoding.MICROS),
    "io.debezium.time.NanoTimestamp": SemanticType("TIMESTAMP", Encoding.NANOS),
    "io.debezium.time.ZonedTimestamp": SemanticType("TIMESTAMP"),
    "io.debezium.time.IsoTimestamp": SemanticType("TIMESTAMP"),
    "io.debezium.time.IsoDate": SemanticType("DATE"),
    "io.debezium.data.Json": SemanticType("JSON"),
    "io.debezium.data.Uuid": SemanticType("UUID"),
    "io.debezium.data.Enum": SemanticType("STRING"),
    "io.debezium.data.VariableScaleDecimal": SemanticType("NUMBER", Encoding.VARIABLE),
    "org.apache.kafka.connect.data.Time": SemanticType("TIME", Encoding.MILLIS),
    "io.debezium.time.Time": SemanticType("TIME", Encoding.MILLIS),
    "io.debezium.time.MicroTime": SemanticType("TIME", Encoding.MICROS),
    "io.debezium.time.NanoTime": SemanticType("TIME", Encoding.NANOS),
}
DECIMAL = "org.apache.kafka.connect.data.Decimal"
#: Semantic types read as the sink column's type, and why.
NOT_READ = {
    "io.debezium.time.ZonedTime": "a time of day with an offset: no sink type holds one "
                                  "alike",
}


#: Connect's plain types that say more than the sink column's type would: an integer is
#: read as one (not as a 38-digit decimal), a float as a double. Strings are left to the
#: sink column's type: Debezium writes a decimal as one in its string mode.
_PLAIN = {"int8": "BIGINT", "int16": "BIGINT", "int32": "BIGINT", "int64": "BIGINT",
          "float32": "DOUBLE", "float64": "DOUBLE", "boolean": "BOOLEAN"}


def semantic_type(field_schema: dict[str, Any]) -> SemanticType | None:
    """The type a Connect field schema's semantic name gives, else its plain number or
    boolean type's (:data:`_PLAIN`); None for another plain type or a name not read
    (:data:`NOT_READ`)."""
    name = field_schema.get("name")
    if not isinstance(name, str):
        plain = _PLAIN.get(str(field_schema.get("type")))
        return SemanticType(plain) if plain else None
    if name == DECIMAL:
        parameters = field_schema.get("parameters") or {}
        scale = int(parameters.get("scale", 0))
        precision = int(parameters.get("connect.decimal.precision", 38))
        return SemanticType(f"DECIMAL({max(precision, scale, 1)},{scale})", Encoding.BASE64)
    return _BY_NAME.get(name)


def row_fields(schema: dict[str, Any], envelope: str) -> list[dict[str, Any]]:
    """The field schemas of the rows a value carries: a Debezium event's ``after`` (or
    ``before``) struct's, else the value's own."""
    fields = [f for f in schema.get("fields") or [] if isinstance(f, dict)]
    if envelope != "debezium":
        return fields
    for f in fields:
        if f.get("field") in ("after", "before") and f.get("type") == "struct":
            return [g for g in f.get("fields") or [] if isinstance(g, dict)]
    return []


def semantic_fields(schema: dict[str, Any], envelope: str) -> dict[str, SemanticType]:
    """Field name -> its semantic type, for the fields of a semantic type Spark reads
    exactly (nested structs' fields by dotted name)."""
    out: dict[str, SemanticType] = {}

    def walk(fields: list[dict[str, Any]], prefix: str) -> None:
        for f in fields:
            name = f.get("field")
            if not isinstance(name, str):
                continue
            found = semantic_type(f)
            if found is not None:
                out[prefix + name] = found
            elif f.get("type") == "struct":
                walk([g for g in f.get("fields") or [] if isinstance(g, dict)],
                     f"{prefix}{name}.")

    walk(row_fields(schema, envelope), "")
    return out


def unread_note(name: Any) -> str | None:
    """What the report says of a field whose semantic type ``name`` is not read
    (:data:`NOT_READ`); None for any other name."""
    why = NOT_READ.get(name) if isinstance(name, str) else None
    return f"{name}: {why}; compared as the sink column's type" if why else None


def unread_fields(schema: dict[str, Any], envelope: str) -> dict[str, str]:
    """Field name -> why its semantic type is left to the sink column's type."""
    return {f["field"]: note for f in row_fields(schema, envelope)
            if isinstance(f.get("field"), str) and (note := unread_note(f.get("name")))}
