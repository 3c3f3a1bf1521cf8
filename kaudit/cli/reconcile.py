"""``kaudit reconcile``: compare a topic with the sink table it feeds, record by record."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kaudit.cli import options
from kaudit.cli.clicompat import Choice
from kaudit.cli.ending import written
from kaudit.errors import ExitCode
from kaudit.reconcile.formats import VALUE_FORMATS, value_format_help
from kaudit.reconcile.modes import MODES
from kaudit.report.base import render
from kaudit.report.output import choose_format, emit

SINK = "Sink"
MATCH = "Matching"
PIPELINE = "Pipeline (why each discrepancy)"


if TYPE_CHECKING:
    ValueFormatName = str
else:
    #: --value-format's choices: the registry's formats, in its order.
    ValueFormatName = StrEnum("ValueFormatName", {name: name for name in VALUE_FORMATS})
JSON_VALUES = ValueFormatName("json")


class KeyFormat(StrEnum):
    """How message keys are decoded."""

    string = "string"
    avro = "avro"
    avro_plain = "avro-plain"




class Envelope(StrEnum):
    """What each value wraps."""

    none = "none"
    debezium = "debezium"
    connect = "connect"


class Shuffle(StrEnum):
    """What reconcile's one shuffle of both sides carries."""

    values = "values"
    hashes = "hashes"


class Precision(StrEnum):
    """Timestamp precision for comparisons."""

    us = "us"
    ms = "ms"
    s = "s"


@options.with_connection
def reconcile(
    topic: Annotated[str, typer.Option(metavar="NAME", callback=options.topic_name,
                                       help="Topic to read.")],
    sink: Annotated[str, typer.Option(
        metavar="URI", rich_help_panel=SINK,
        help="jdbc:postgresql://HOST:PORT/DB?table=T, parquet:PATH, csv:PATH, json:PATH, "
             "delta:PATH, table:DB.T or iceberg:CATALOG.DB.TABLE; only ever read.")],
    key: Annotated[str, typer.Option(
        metavar="FIELD[,FIELD]|@key", rich_help_panel=MATCH,
        help="Record key: value field(s), dotted for nested, commas for composite; "
             "@key for the Kafka message key.")] = "@key",
    key_format: Annotated[KeyFormat, typer.Option(
        case_sensitive=False, rich_help_panel=MATCH,
        help="How message keys are decoded (avro: Confluent's wire format; avro-plain: a bare "
             "Avro body). An Avro key record's fields are matched with the sink columns of "
             "their names.")] = KeyFormat.string,
    key_schema: Annotated[Path | None, typer.Option(
        metavar="FILE|DIR", rich_help_panel=MATCH,
        help="Avro writer schemas of the key, as --value-schema.")] = None,
    key_subject: Annotated[str | None, typer.Option(
        metavar="SUBJECT", rich_help_panel=MATCH,
        help="The registry subject of the key's schemas, as --value-subject [default: "
             "TOPIC-key].")] = None,
    value_format: Annotated[ValueFormatName, typer.Option(
        case_sensitive=False, help=value_format_help())] = JSON_VALUES,
    value_schema: Annotated[Path | None, typer.Option(
        metavar="FILE|DIR", help="Avro writer schemas: a directory of ID.avsc files (one per "
                                 "schema id), or one .avsc file (with --value-format avro, "
                                 "used for the one schema id the records carry).")] = None,
    schema_registry: Annotated[str | None, typer.Option(
        metavar="URL", help="A Schema Registry's Confluent-compatible API: the writer schemas "
                            "of --value-format/--key-format avro without a schema file, from "
                            "subjects TOPIC-value and TOPIC-key (or those --value-subject and "
                            "--key-subject name). Credentials in the URL are never shown."
    )] = None,
    value_subject: Annotated[str | None, typer.Option(
        metavar="SUBJECT", help="The registry subject of the value's schemas, e.g. the record's "
                                "full name under RecordNameStrategy [default: TOPIC-value]."
    )] = None,
    reader_schema: Annotated[Path | None, typer.Option(
        metavar="FILE", help="The Avro schema every value is read as and compared in "
                             "[default: the writer schema with the highest id].")] = None,
    schema: Annotated[str | None, typer.Option(
        metavar="DDL", help="Types of the key and compared JSON fields, e.g. 'id BIGINT, "
                            "amount DOUBLE' [default: the sink columns' types]. A word after a "
                            "type says how the value is written: TIMESTAMP SECONDS|MILLIS|"
                            "MICROS|NANOS (since the epoch), DATE DAYS, DECIMAL(p,s) BASE64 "
                            "(Kafka Connect's Decimal), TIME MILLIS|MICROS|NANOS (since "
                            "midnight), NUMBER VARIABLE (Debezium's VariableScaleDecimal). TIME, "
                            "UUID, JSON and NUMBER (any width) are compared as what they are. "
                            "With Avro: overrides the reader schema's type of the fields it "
                            "names.")
    ] = None,
    envelope: Annotated[Envelope, typer.Option(
        case_sensitive=False, help="debezium: each value is a Debezium change event (JSON, "
                                   "with or without schema/payload); implies --mode upsert. "
                                   "connect: the record is the payload of Kafka Connect's "
                                   "JSON converter (schemas.enable=true), where it has one."
    )] = Envelope.none,
    mode: Annotated[str | None, typer.Option(
        click_type=Choice(list(MODES), case_sensitive=False), rich_help_panel=MATCH,
        show_default=False,
        help="; ".join(f"{name}: {what}" for name, what in MODES.items())
        + " [default: append; upsert with --envelope debezium].")] = None,
    compare: Annotated[str | None, typer.Option(
        metavar="FIELD[,FIELD]", rich_help_panel=MATCH,
        help="Payload fields compared with sink columns of the same name (or --map).")
    ] = None,
    map: Annotated[list[str] | None, typer.Option(
        "--map", metavar="FIELD=COLUMN", rich_help_panel=MATCH,
        help="Map a topic field (or @key, partition, offset, topic) to a sink column; "
             "repeatable [default: same name, dots as underscores].")] = None,
    from_: Annotated[str, typer.Option(
        "--from", metavar="earliest|TIME|JSON",
        help='Start of the range: earliest, a time (ISO-8601 or epoch ms) or {"0": 42}.')
    ] = "earliest",
    to: Annotated[str, typer.Option(
        metavar="latest|TIME|JSON", help="End of the range (exclusive), pinned at the start.")
    ] = "latest",
    read_committed: Annotated[bool, typer.Option(
        "--read-committed/--read-uncommitted",
        help="Leave out aborted records and open transactions.")] = True,
    tolerance: Annotated[float, typer.Option(
        min=0.0, rich_help_panel=MATCH, help="Numeric difference still counted as equal.")
    ] = 0.0,
    timestamp_precision: Annotated[Precision, typer.Option(
        case_sensitive=False, rich_help_panel=MATCH,
        help="Truncate timestamps to this before comparing.")] = Precision.us,
    grace: Annotated[float, typer.Option(
        min=0.0, metavar="SECONDS", rich_help_panel=MATCH,
        help="Records newer than this are never 'missing': the sink may still catch up.")
    ] = 0.0,
    sink_option: Annotated[list[str] | None, typer.Option(
        metavar="KEY=VALUE", rich_help_panel=SINK,
        help="Sink reader option (JDBC: user, password-file, driver; Iceberg: the catalog's "
             "type, warehouse, uri..., and snapshot-id to read an earlier snapshot); "
             "repeatable.")] = None,
    output_dir: Annotated[str | None, typer.Option(
        metavar="DIR", help="Write the full discrepancy set here as Parquet.")] = None,
    csv: Annotated[bool, typer.Option("--csv", help="Also write it as CSV.")] = False,
    master: Annotated[str, typer.Option(
        metavar="URL", help="Spark master, e.g. spark://host:7077.")] = "local[*]",
    shuffle: Annotated[Shuffle, typer.Option(
        case_sensitive=False,
        help="What the one shuffle of both sides carries: the compared values, or only "
             "hashes, the suspects' rows read again afterwards (a smaller shuffle where "
             "the values are wide, for one more read of each side).")
    ] = Shuffle.values,
    jars: Annotated[str | None, typer.Option(
        metavar="JAR[,JAR]", help="Use these jars (Kafka connector, JDBC driver) instead "
                                  "of resolving them with mvn.")] = None,
    samples: Annotated[int, typer.Option(min=0, help="Samples shown per class.")] = 5,
    connector: Annotated[str | None, typer.Option(
        metavar="NAME", rich_help_panel=PIPELINE,
        help="The Kafka Connect sink connector that writes the sink: each missing, "
             "duplicated, extra or changed row is given its cause from the connector's "
             "committed offsets, dead letter queue, tasks and restarts (needs "
             "--connect-url).")] = None,
    connect_url: Annotated[str | None, typer.Option(
        metavar="URL", rich_help_panel=PIPELINE,
        help="The Connect worker's REST API, e.g. http://connect:8083. Credentials in the "
             "URL are never shown.")] = None,
    sink_group: Annotated[str | None, typer.Option(
        metavar="GROUP", rich_help_panel=PIPELINE,
        help="The sink's consumer group [default: connect-NAME]; alone, for a sink written "
             "by something else: its committed offsets only.")] = None,
    status_topic: Annotated[str | None, typer.Option(
        metavar="NAME", rich_help_panel=PIPELINE,
        help="Connect's status topic (status.storage.topic), read for the tasks' restarts "
             "[default: connect-status].")] = None,
    format: options.PageFormatOption = None,
    output: options.Output = None,
    connection: options.ConnectionOptions = options.NO_CONNECTION,
) -> int:
    """Compare a topic with its sink: missing, extra, duplicated and changed records.

    With --connector and --connect-url (or --sink-group alone) each missing, duplicated,
    extra or changed row is also given its cause, with its evidence: dead_lettered (the
    record is in the connector's dead letter queue, matched by its context headers: the
    exception), not_yet_delivered (at or past the group's committed offset: the lag and the
    tasks' states, a FAILED task's first trace line), skipped (below it and in no dead
    letter queue), redelivered_after_restart (a task restart in Connect's status topic after
    the record was written), for an Iceberg sink deleted_in_sink, written_twice and
    added_by_snapshot (the snapshots that removed or added the row), or unknown, with what
    was looked at. The pipeline is read while Spark runs, within three --timeout; the dead
    letter queue and the status topic up to 200,000 records each. A part that cannot be
    read is reported unread, with why.
    """
    from kaudit.connection.settings import parse_key_values
    from kaudit.pipeline.read import PipelineSource
    from kaudit.reconcile import formats
    from kaudit.reconcile.avro_schemas import SchemaSource, key_schemas_for
    from kaudit.reconcile.classes import FAILING
    from kaudit.reconcile.job import run_reconcile
    from kaudit.reconcile.request import ReconcileRequest
    from kaudit.report.reconcile import RECONCILE

    conn = connection.settings()
    pipeline = PipelineSource.given(connector, connect_url, sink_group, status_topic)
    value_format = str(value_format)  # the registry's name, not the enum member
    source = SchemaSource.given(schema_registry, topic, conn.timeout,
                                (value_format, key_format.value),
                                (value_subject, key_subject))
    request = ReconcileRequest(
        topic=topic, sink_uri=sink, key=key, value_format=value_format, schema=schema,
        avro=formats.value_format(value_format).value_schemas(
            value_schema, reader_schema, schema, source),
        key_format=key_format.value,
        key_avro=key_schemas_for(key_format.value, key_schema, source),
        envelope=envelope.value,
        mode=formats.mode_for(envelope.value, mode, value_format),
        compare=tuple(c.strip() for c in (compare or "").split(",") if c.strip()),
        column_map=parse_key_values(map or [], "--map"), start=from_, end=to,
        read_committed=read_committed,
        numeric_tolerance=tolerance, timestamp_precision=timestamp_precision.value,
        grace_seconds=grace, sink_options=parse_key_values(sink_option or [], "--sink-option"),
        output_dir=output_dir, csv=csv, master=master, shuffle=shuffle.value,
        jars=[j for j in jars.split(",") if j] if jars else None, samples=samples,
        pipeline=pipeline)
    if sys.stderr.isatty():
        print("kaudit reconcile: reading both sides with Spark...", file=sys.stderr)
    result = run_reconcile(conn, request)
    emit(render(RECONCILE, result, choose_format(format, output, html=True)), output)
    failing = [f"{result.counts[k]:,} {k}" for k in FAILING if result.counts.get(k)]
    written("reconcile", f"{result.verdict}" + (f": {', '.join(failing)}" if failing else ""),
            output)
    if result.counts.get("undecodable") and request.avro is not None:
        print(f"hint: {result.counts['undecodable']} record(s) could not be decoded: each "
              "undecodable sample says why", file=sys.stderr)
    elif result.counts.get("undecodable"):
        print(f"hint: {result.counts['undecodable']} record(s) could not be decoded (see the "
              "undecodable samples); name the fields' types with --schema if the sink's are "
              "not the ones to read them as", file=sys.stderr)
    return ExitCode.OK if result.verdict == "pass" else ExitCode.FINDINGS
