"""What an Avro field's type says it holds beyond its primitive: Kafka Connect's and
Debezium's semantic names (``connect.name``, with ``connect.parameters``), as their Avro
converters write them, read with the names' meanings JSON's wrapper schemas use
(:mod:`kaudit.reconcile.semantic`). Pure: it reads the schema's JSON only."""

from __future__ import annotations

from typing import Any

from kaudit.reconcile.declared import Encoding
from kaudit.reconcile.semantic import SemanticType, semantic_type

#: The logical types spark-avro (Spark 4.0) decodes to a Spark type of their own: a field
#: of one needs nothing more. What it leaves as the primitive (checked: time-millis as the
#: int of milliseconds of the day, time-micros as the long of microseconds, timestamp-nanos
#: and local-timestamp-nanos as the long of nanoseconds, uuid as its string) is compared
#: as the sink column's type says; a decimal above precision 38 is refused by spark-avro.
SPARK_LOGICAL_TYPES = frozenset({"decimal", "date", "timestamp-millis", "timestamp-micros",
                                 "local-timestamp-millis", "local-timestamp-micros"})
#: The Spark types a semantic name is read as here (a time, a date, a decimal).
_SPARK_TYPES = frozenset({"TIMESTAMP", "TIMESTAMP_NTZ", "DATE", "DECIMAL"})
#: The Avro primitives each encoding of a semantic type is written in.
_ENCODED_IN = {Encoding.MILLIS: {"long", "int"}, Encoding.MICROS: {"long", "int"},
               Encoding.SECONDS: {"long", "int"}, Encoding.DAYS: {"int", "long"},
               Encoding.BASE64: {"bytes"}}


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
    if found.ddl.split("(")[0] not in _SPARK_TYPES:
        return None  # text, or a kind Spark has no type for: left to the sink column's
    primitive = avro_type.get("type")
    if found.encoding is None:
        return found if primitive == "string" else None
    return found if primitive in _ENCODED_IN.get(found.encoding, ()) else None
