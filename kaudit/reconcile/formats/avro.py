"""Avro values: ``avro`` (Confluent's wire format) and ``avro-plain`` (a bare Avro body),
decoded in Spark by spark-avro (:mod:`kaudit.reconcile.formats.avro_decode`) with the
writer schemas read before Spark starts (:mod:`kaudit.reconcile.avro_schemas`). Both are
imported when a format is used, not when the CLI starts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaudit.errors import InputError
from kaudit.reconcile.formats.base import Decoded, ValueFormat

if TYPE_CHECKING:
    from kaudit.connection.settings import ConnectionSettings
    from kaudit.reconcile.avro_schemas import AvroSchemas, SchemaSource
    from kaudit.reconcile.request import ReconcileRequest
    from kaudit.reconcile.source import OffsetRange


class AvroFormat(ValueFormat):
    """An Avro value: its fields and their types are the reader schema's."""

    envelopes = frozenset({"none", "debezium"})

    def __init__(self, name: str, *, note: str) -> None:
        # Which framing the records have is the writer schemas' (AvroSchemas.framed):
        # a registry's or ID.avsc files name ids, a plain body's one file does not.
        self.name, self.note = name, note

    def value_schemas(self, writers: Path | None, reader: Path | None, ddl: str | None,
                      source: SchemaSource | None) -> AvroSchemas | None:
        from kaudit.reconcile.avro_schemas import given_schemas

        if ddl is not None:
            raise InputError("--schema types JSON fields; an Avro value's fields have the "
                             "types of its reader schema (--reader-schema)")
        return given_schemas("value", self.name, writers, reader, source)

    def check_schema_fields(self, request: ReconcileRequest) -> None:
        from kaudit.reconcile.formats.avro_decode import check_avro_fields

        check_avro_fields(request)

    def check_sampled_fields(self, conn: ConnectionSettings, request: ReconcileRequest,
                             ranges: list[OffsetRange]) -> ReconcileRequest:
        """The request with its one schema file's schema id, where the file was not named
        by it (:meth:`~kaudit.reconcile.avro_schemas.AvroSchemas.for_sampled_ids`): the
        id is read from the same sample as JSON's field check, both ends of each
        partition."""
        from dataclasses import replace

        from kaudit.reconcile.avro_schemas import schema_ids
        from kaudit.reconcile.formats.json import SAMPLE_PER_END
        from kaudit.reconcile.source import sample_values

        if request.avro is None or not request.avro.id_from_topic:
            return request
        values = sample_values(conn, request.topic, ranges, SAMPLE_PER_END,
                               request.read_committed)
        if values is None:
            [one] = request.avro.writers.values()
            raise InputError(f"--value-schema {one.source}: the records sampled from both ends "
                             f"of each partition of topic {request.topic} were not read within "
                             "the timeout, so their schema id is not known: name the file "
                             "by its id (ID.avsc), or raise --timeout")
        avro = request.avro.for_sampled_ids(schema_ids(values), len(values))
        return replace(request, avro=avro)

    def decode(self, raw: Any, request: ReconcileRequest, targets: dict[str, Any]) -> Decoded:
        from kaudit.reconcile.formats.avro_decode import decode_avro

        return decode_avro(raw, request)

    def events(self, spark: Any, request: ReconcileRequest,
               values: dict[tuple[int, int], bytes | None]) -> dict[tuple[int, int], Any]:
        """Decoded in Spark, by the decoder that read the topic."""
        from kaudit.reconcile.formats.avro_decode import avro_events

        return avro_events(spark, request, values) if values else {}


AVRO = AvroFormat("avro", note="avro: Confluent's wire format")
AVRO_PLAIN = AvroFormat("avro-plain", note="avro-plain: a bare Avro body")
