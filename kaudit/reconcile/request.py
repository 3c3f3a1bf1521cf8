"""What ``kaudit reconcile`` is asked to do, and what it found: the run's models."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from kaudit.errors import InputError
from kaudit.pipeline.causes import Explanation
from kaudit.pipeline.read import PipelineSource
from kaudit.reconcile.avro_schemas import AvroSchemas, record_fields
from kaudit.reconcile.classes import FAILING, KAFKA_KEY
from kaudit.reconcile.declared import parse_declaration
from kaudit.reconcile.modes import ModeName
from kaudit.reconcile.sinks import SinkSpec
from kaudit.reconcile.source import OffsetRange


@dataclass(frozen=True)
class ReconcileRequest:
    """Everything `kaudit reconcile` was asked to do."""

    topic: str
    sink_uri: str
    key: str = KAFKA_KEY
    value_format: str = "json"
    """A name in :data:`kaudit.reconcile.formats.VALUE_FORMATS`."""
    schema: str | None = None
    value_types: str | None = None
    """What the values' own schema says of some fields' types (Connect's and Debezium's
    semantic types, in ``--schema``'s grammar): filled by the field check from the sampled
    values, never by the user; ``--schema``'s fields win."""
    type_notes: dict[str, str] = field(default_factory=dict)
    """Topic field -> why the type its values' own schema names was not read (left to the
    sink column's type): filled by the field check, shown with the field in the report."""
    sampled: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    """Some values of each field the field check sampled (:mod:`kaudit.reconcile.hints`):
    filled by it, never by the user."""
    envelope: Literal["none", "debezium", "connect"] = "none"
    """``debezium``: each value is a change event; the row is its ``after``. ``connect``:
    the record is the ``payload`` of Kafka Connect's JSON converter wrapper."""
    avro: AvroSchemas | None = None
    """The writer and reader schemas of an Avro value (``--value-schema``)."""
    key_format: Literal["string", "avro", "avro-plain"] = "string"
    key_avro: AvroSchemas | None = None
    """The writer schemas of an Avro message key (``--key-schema``)."""
    mode: ModeName = "append"
    compare: tuple[str, ...] = ()
    column_map: dict[str, str] = field(default_factory=dict)
    """Topic field (or @key, partition, offset, value) -> sink column."""
    start: str = "earliest"
    end: str = "latest"
    read_committed: bool = True
    numeric_tolerance: float = 0.0
    timestamp_precision: Literal["us", "ms", "s"] = "us"
    grace_seconds: float = 0.0
    sink_options: dict[str, str] = field(default_factory=dict)
    output_dir: str | None = None
    csv: bool = False
    master: str = "local[*]"
    shuffle: Literal["values", "hashes"] = "values"
    """What the one shuffle of both sides carries (``--shuffle``; see
    :class:`kaudit.reconcile.plan.model.CompareOptions`)."""
    jars: list[str] | None = None
    samples: int = 5
    pipeline: PipelineSource | None = None
    """The pipeline that feeds the sink (``--connector``, ``--sink-group``): read to give
    each discrepancy its cause; None: causes are not looked for."""

    def check(self) -> None:
        """Usage errors the options alone show (exit 2), found before anything is read."""
        self.key_fields()
        twice = sorted({c for c in self.compare if self.compare.count(c) > 1})
        if twice:
            raise InputError(f"--compare names {', '.join(twice)} more than once")
        if self.schema is not None:
            parse_declaration(self.schema)
        if self.csv and not self.output_dir:
            raise InputError("--csv writes the discrepancy set as CSV beside its Parquet: "
                             "add --output-dir DIR")

    def key_fields(self) -> list[str]:
        """The key's fields; ``["@key"]`` for the Kafka message key."""
        fields = [f.strip() for f in self.key.split(",") if f.strip()]
        if not fields:
            raise InputError("--key: give a field name, several joined by commas, or @key")
        return fields

    def value_key_fields(self) -> list[str]:
        """The key's fields read from the value (not the message key's)."""
        return [k for k in self.key_fields() if k != KAFKA_KEY]

    def value_fields(self) -> list[str]:
        """Every field read from the value: the key's, then the compared ones."""
        return list(dict.fromkeys(self.value_key_fields() + list(self.compare)))

    def sink_key_columns(self) -> list[str]:
        """The sink columns the key is made of, in order. An Avro message key is a record:
        ``@key`` is its fields, each in the column of its name (or ``--map @key.FIELD=C``)."""
        columns = []
        for name in self.key_fields():
            fields = None if name != KAFKA_KEY or self.key_avro is None \
                else record_fields(self.key_avro.reader.schema)
            if fields is not None:
                columns += [self.sink_column(f"{KAFKA_KEY}.{f}") for f in fields]
            else:
                columns.append(self.sink_column(name))
        return columns

    def declared_kinds(self) -> dict[str, str]:
        """Sink column -> the kaudit type (``time``, ``uuid``, ``json``) its topic field is
        declared as: by ``--schema``, else by the values' own schema."""
        by_value = parse_declaration(self.value_types) if self.value_types else None
        declared = parse_declaration(self.schema) if self.schema else None
        kinds = {n: k for n, k in (by_value.kinds if by_value else {}).items()
                 if declared is None or n not in declared.names}
        kinds |= declared.kinds if declared else {}
        return {self.sink_column(n): k for n, k in kinds.items()}

    def sink_column(self, name: str) -> str:
        """The sink column a topic field maps to (dots become underscores by default; an
        Avro key's field, ``@key.FIELD``, its own name)."""
        default = {KAFKA_KEY: "key"}.get(
            name, name.removeprefix(f"{KAFKA_KEY}.").replace(".", "_"))
        return self.column_map.get(name, default)


@dataclass(frozen=True)
class FieldTypes:
    """A compared column's type on each side (Spark's names; kaudit's or the database's
    where Spark reads the value as text: ``time``, ``jsonb``) and the type both were
    compared as (:mod:`kaudit.reconcile.kinds`)."""

    column: str
    topic_type: str
    sink_type: str
    compared_as: str
    note: str | None = None
    """Why the type the topic's own schema names was not read, where it was not."""


@dataclass(frozen=True)
class ReconcileResult:
    """What the run found, ready for the report."""

    request: ReconcileRequest
    sink: SinkSpec
    ranges: list[OffsetRange]
    topic_records: int
    sink_rows: int
    counts: dict[str, int]
    by_partition: dict[int, dict[str, int]]
    samples: dict[str, list[dict[str, Any]]]
    output_files: list[str]
    seconds: float
    fields: list[FieldTypes] = field(default_factory=list)
    """Each compared column's types, in --compare's order."""
    explanation: Explanation | None = None
    """Each discrepancy's cause, from the pipeline (None when none was named)."""

    @property
    def verdict(self) -> str:
        """``pass`` when nothing is missing, extra, duplicated in the sink, changed or
        unreadable."""
        return "fail" if any(self.counts.get(k, 0) for k in FAILING) else "pass"
