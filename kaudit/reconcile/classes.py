"""The discrepancy classes of ``kaudit reconcile`` (no Spark import: the report uses them)."""

from __future__ import annotations

#: In report order; the comparison counts exactly these (see ``plan``'s module docstring).
CLASSES: tuple[str, ...] = (
    "missing_in_sink",
    "extra_in_sink",
    "duplicated_in_sink",
    "duplicated_in_topic",
    "mismatched",
    "undecodable",
    "unverifiable",
    "pending",
)

#: The classes that make the verdict ``fail`` (exit 1). duplicated_in_topic is what the
#: topic itself carries, unverifiable and pending are what cannot be judged (yet).
FAILING: tuple[str, ...] = (
    "missing_in_sink",
    "extra_in_sink",
    "duplicated_in_sink",
    "mismatched",
    "undecodable",
)

#: Topic-frame columns of a record that could not be decoded: which field ("" for the whole
#: value; null for a record that decoded) and the start of its raw value.
UNDECODABLE, RAW_VALUE = "_undecodable", "_raw_value"
#: Topic-frame column: why the message key could not be decoded (null where it was, or
#: where it is text).
KEY_PROBLEM = "_key_problem"
#: ``--key``'s name for the Kafka message key (and ``--map``'s, ``@key.FIELD`` for an Avro
#: key record's field).
KAFKA_KEY = "@key"
