"""What every value format gives the comparison: the :class:`ValueFormat` interface, the
:class:`Decoded` columns a decoder hands back, and :func:`joined_key`, the key text both
sides share. Nothing here imports Spark until a frame is decoded."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaudit.errors import InputError
from kaudit.reconcile.envelope import event_context

if TYPE_CHECKING:
    from kaudit.connection.settings import ConnectionSettings
    from kaudit.reconcile.avro_schemas import AvroSchemas, SchemaSource
    from kaudit.reconcile.request import ReconcileRequest
    from kaudit.reconcile.source import OffsetRange


@dataclass(frozen=True)
class Decoded:
    """A topic frame and the columns the decoded topic is made of (see
    :func:`~kaudit.reconcile.decode.decode_topic`)."""

    frame: Any
    tombstone: Any
    #: Each compared field's value, by its topic name.
    values: dict[str, Any]
    #: Each key field's text (not @key's: that is the message key).
    key_texts: dict[str, Any]
    #: The key fields could not be read: the record's key is null.
    key_unread: Any
    #: The start of the value's text where it could not be decoded.
    raw_text: Any
    #: The tombstones matched by their message key (null: every tombstone is); a
    #: Debezium delete is matched by its ``before``'s key fields instead.
    by_message_key: Any = None


class ValueFormat(ABC):
    """How a topic's values are read: one object per ``--value-format``, in the registry
    (:data:`kaudit.reconcile.formats.VALUE_FORMATS`). Everything reconcile does that depends
    on the format asks this object."""

    #: The ``--value-format`` name.
    name: str
    #: What the option's help says of it ("" for nothing).
    note: str = ""
    #: The ``--envelope`` values its records can carry.
    envelopes: frozenset[str] = frozenset({"none"})

    def value_schemas(self, writers: Path | None, reader: Path | None, ddl: str | None,
                      source: SchemaSource | None) -> AvroSchemas | None:
        """The Avro schemas ``--value-schema`` (else the registry), ``--reader-schema`` and
        ``--schema`` ask for: None for a value that is not Avro; a combination that cannot
        work is exit 2."""
        from kaudit.reconcile.avro_schemas import given_schemas

        if reader is not None:
            raise InputError("--reader-schema is for Avro values: add --value-format avro "
                             "(Confluent's wire format) or avro-plain")
        return given_schemas("value", self.name, writers, None, source)

    def check_schema_fields(self, request: ReconcileRequest) -> None:
        """Exit 2 for a key or compared field the value's schema lacks, before anything
        is read (only a format with a schema of its own knows)."""
        return None

    def check_sampled_fields(self, conn: ConnectionSettings, request: ReconcileRequest,
                             ranges: list[OffsetRange]) -> ReconcileRequest:
        """Exit 2 for a key or compared field no sampled value has, before Spark reads the
        topic (only a format whose fields are found in the values themselves checks); the
        request, with the types the sampled values' own schema gives
        (:attr:`ReconcileRequest.value_types`) where the format reads one."""
        return request

    def field_types(self, request: ReconcileRequest, sink: Any) -> dict[str, Any]:
        """The Spark type each key and compared field is read as (``targets`` of
        :meth:`decode`); empty where the format decides the types itself or reads no
        fields. The one place a format says what a field's type is (a declaration, the
        value's own schema, the sink's column)."""
        return {}

    @abstractmethod
    def decode(self, raw: Any, request: ReconcileRequest, targets: dict[str, Any]) -> Decoded:
        """The topic's records (``raw``: Kafka's columns, the message key already read)
        as :class:`Decoded` columns; ``targets`` from :meth:`field_types`."""

    def shape_sink(self, sink: Any, request: ReconcileRequest) -> Any:
        """The shaped sink frame, its compared columns made like the topic's values
        (unchanged where they already are)."""
        return sink

    def events(self, spark: Any, request: ReconcileRequest,
               values: dict[tuple[int, int], bytes | None]) -> dict[tuple[int, int], Any]:
        """What a Debezium sample shows of the change event at each (partition, offset)
        (see :func:`~kaudit.reconcile.envelope.event_context`): read on the driver."""
        return {place: event_context(value) for place, value in values.items()}


def joined_key(parts: list[Any]) -> Any:
    """One text key from the key fields' texts, alike on both sides: joined by "|", a
    missing part as "" (one field: its text as it is, without concat_ws's arrays)."""
    from pyspark.sql import functions as F

    texts = [F.coalesce(part, F.lit("")) for part in parts]
    return texts[0] if len(texts) == 1 else F.concat_ws("|", *texts)

