"""Avro values: ``avro`` (Confluent's wire format) and ``avro-plain`` (a bare Avro body),
decoded in Spark by spark-avro (:mod:`kaudit.reconcile.formats.avro_decode`) with the
writer schemas read before Spark starts (:mod:`kaudit.reconcile.avro_schemas`). Both are
imported when a format is used, not when the CLI starts."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaudit.errors import InputError
from kaudit.reconcile.avro_schemas import row_field_types
from kaudit.reconcile.avro_types import as_declaration, avro_semantic_type, avro_unread
from kaudit.reconcile.declared import parse_declaration
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

        # --schema, where given, overrides a field's type (checked against the reader
        # schema's fields by check_schema_fields).
        return given_schemas("value", self.name, writers, reader, source)

    def check_schema_fields(self, request: ReconcileRequest) -> None:
        from kaudit.reconcile.formats.avro_decode import check_avro_fields

        check_avro_fields(request)

    def check_sampled_fields(self, conn: ConnectionSettings, request: ReconcileRequest,
                             ranges: list[OffsetRange]) -> ReconcileRequest:
        """The request with its one schema file's schema id, where the file was not named
        by it (:func:`pinned_to_sampled_id`): the
        id is read from the same sample as JSON's field check, both ends of each
        partition. Also the kinds the reader schema's semantic names give
        (:func:`with_value_kinds`)."""
        from kaudit.reconcile.formats.json import SAMPLE_PER_END
        from kaudit.reconcile.source import sample_values

        request = with_value_kinds(request)
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
        avro = pinned_to_sampled_id(request.avro, schema_ids(values), len(values))
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


def schema_ids(values: Iterable[bytes]) -> set[int]:
    """The schema ids Confluent's wire format names in ``values`` (a zero magic byte, then
    the id in 4 bytes, big-endian); a value not in that format names none."""
    return {struct.unpack(">I", value[1:5])[0] for value in values
            if len(value) >= 5 and value[0] == 0}


def pinned_to_sampled_id(avro: AvroSchemas, ids: set[int], sampled: int) -> AvroSchemas:
    """The one file (:attr:`~kaudit.reconcile.avro_schemas.AvroSchemas.id_from_topic`) made
    the writer schema of the one schema id seen among the ``sampled`` records (both ends of
    each partition); several ids are exit 2, one file cannot be the writer schema of each.
    A record of another id found later is undecodable (unknown schema id), never read with
    this schema. No id seen (an empty range, or no record in the wire format): unchanged,
    every framed record then unknown."""
    if not avro.id_from_topic or not ids:
        return avro
    [(_, one)] = avro.writers.items()
    if len(ids) > 1:
        names = ", ".join(f"{i}.avsc" for i in sorted(ids))
        raise InputError(
            f"--value-schema {one.source}: one schema file, but the {sampled} records "
            f"sampled from both ends of each partition carry schema ids "
            f"{', '.join(map(str, sorted(ids)))}: give a directory of the writer "
            f"schemas named by their ids ({names})")
    [schema_id] = ids
    writer = replace(one, schema_id=schema_id)
    reader = writer if avro.reader is one else avro.reader
    # Java's format: a % in the file's name is written as itself.
    unknown = (f"{one.source.replace('%', '%%')} was used for schema id {schema_id}, "
               "the one id sampled from both ends of each partition; name each writer "
               "schema by its id (a directory of ID.avsc)")
    return replace(avro, writers={schema_id: writer}, reader=reader, unknown_id=unknown)


def with_value_kinds(request: ReconcileRequest) -> ReconcileRequest:
    """``request`` with the fields whose semantic name in the reader schema is a kind Spark
    has no type for (a time of day, a UUID, JSON, nanoseconds since the epoch) named in
    ``value_types``, as JSON's wrapper schema names them, so the comparison knows them."""
    if request.avro is None:
        return request
    declared = parse_declaration(request.schema).names if request.schema else ()
    found, notes = {}, {}
    for name, avro_type in row_field_types(request.avro.reader.schema, request.value_fields(),
                                           request.envelope).items():
        if (semantic := avro_semantic_type(avro_type)) is not None:
            found[name] = semantic
        elif name not in declared and (why := avro_unread(avro_type)) is not None:
            notes[name] = why  # a field --schema types is read as it says: no note
    by_schema = as_declaration(found)
    if not (by_schema or notes):
        return request
    return replace(request, value_types=by_schema or request.value_types,
                   type_notes=request.type_notes | notes)
