"""What an Avro field's type says it holds beyond its primitive: Kafka Connect's and
Debezium's semantic names (``connect.name``, with ``connect.parameters``), as their Avro
converters write them, read with the names' meanings JSON's wrapper schemas use
(:mod:`kaudit.reconcile.semantic`). Pure: it reads the schema's JSON only."""

from __future__ import annotations

from typing import Any

from kaudit.reconcile.declared import Encoding
from kaudit.reconcile.semantic import SemanticType, semantic_type, unread_note

#: The logical types spark-avro (Spark 4.0) decodes to a Spark type of their own: a field
#: of one needs nothing more. What it leaves as the primitive (checked: time-millis as the
#: int of milliseconds of the day, time-micros as the long of microseconds, timestamp-nanos
#: and local-timestamp-nanos as the long of nanoseconds, uuid as its string) is compared
#: as the sink column's type says; a decimal above precision 38 is refused by spark-avro.
SPARK_LOGICAL_TYPES = frozenset({"decimal", "date", "timestamp-millis", "timestamp-micros",
                                 "local-timestamp-millis", "local-timestamp-micros"})
#: The types a semantic name is read as here (a time, a date, a decimal; kaudit's time of
#: day, UUID and JSON, read as text) and the Spark type each is read into.
_READ_AS = {"TIMESTAMP": "TIMESTAMP", "TIMESTAMP_NTZ": "TIMESTAMP_NTZ", "DATE": "DATE",
            "DECIMAL": "DECIMAL", "TIME": "STRING", "UUID": "STRING", "JSON": "STRING",
            "NUMBER": "STRING"}
#: The Avro primitives each encoding of a semantic type is written in.
_ENCODED_IN = {Encoding.MILLIS: {"long", "int"}, Encoding.MICROS: {"long", "int"},
               Encoding.NANOS: {"long"}, Encoding.SECONDS: {"long", "int"},
               Encoding.DAYS: {"int", "long"}, Encoding.BASE64: {"bytes"},
               Encoding.VARIABLE: {"record"}}
#: Debezium's VariableScaleDecimal in Avro: a record of the scale and the unscaled bytes.
_VARIABLE_FIELDS = {"scale": "int", "value": "bytes"}


def avro_semantic_type(avro_type: Any) -> SemanticType | None:
    """What a Kafka Connect or Debezium semantic name in an Avro type says it holds
    (``connect.name``, with ``connect.parameters`` for a Decimal's scale and precision, as
    Connect's and Debezium's Avro converters write them), where spark-avro does not decode
    it already (:data:`SPARK_LOGICAL_TYPES`: a Decimal with ``logicalType`` decimal is one)
    and the primitive holds what the name says; else None (a plain type)."""
    if not isinstance(avro_type, dict) or avro_type.get("logicalType") in SPARK_LOGICAL_TYPES:
        return None
    found = semantic_type({"name": avro_type.get("connect.name"),
                           "parameters": avro_type.get("connect.parameters")})
    if found is None:
        return None
    if found.ddl.split("(")[0] not in _READ_AS:
        return None  # text, or a kind not read from Avro yet: left to the sink column's
    primitive = avro_type.get("type")
    if found.encoding is None:
        return found if primitive == "string" else None
    if found.encoding is Encoding.VARIABLE and _fields(avro_type) != _VARIABLE_FIELDS:
        return None
    return found if primitive in _ENCODED_IN.get(found.encoding, ()) else None


def avro_unread(avro_type: Any) -> str | None:
    """Why a semantic name in an Avro type is left to the sink column's type
    (:func:`~kaudit.reconcile.semantic.unread_note`); None for any other type."""
    return unread_note(avro_type.get("connect.name")) if isinstance(avro_type, dict) else None


def _fields(record: dict[str, Any]) -> dict[Any, Any]:
    return {f.get("name"): f.get("type") for f in record.get("fields") or []
            if isinstance(f, dict)}


def spark_ddl(found: SemanticType) -> str:
    """The Spark type a semantic type is read into: its own, text for kaudit's TIME, UUID,
    JSON and wide decimal (NUMBER), a long for nanoseconds since the epoch (compared as
    the count)."""
    if found.encoding is Encoding.NANOS and found.ddl.startswith("TIMESTAMP"):
        return "BIGINT"
    base = found.ddl.split("(")[0]
    return found.ddl if _READ_AS.get(base, base) == base else _READ_AS[base]


def as_declaration(fields: dict[str, SemanticType]) -> str | None:
    """``--schema``'s grammar for the fields of a kind Spark has no type for (a time of day,
    a UUID, JSON, a decimal of any scale, nanoseconds since the epoch): what the comparison
    reads their kind from (:meth:`~kaudit.reconcile.request.ReconcileRequest.declared_kinds`)."""
    items = [f"`{name}` {t.ddl} {t.encoding or ''}".rstrip() for name, t in fields.items()
             if spark_ddl(t) != t.ddl]
    return ", ".join(items) or None
