"""One reconcile run: pin the topic range, read both sides, compare, report.

Data flows one way: request -> offset ranges -> topic frame (its records decoded by
:func:`~kaudit.reconcile.decode.decode_topic`) and sink frame, keyed and typed alike ->
comparison plan -> result. Nothing is cached: the plan reads each side once, and its
counts, totals and samples come from its own (small, persisted) discrepancy set.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import InputError
from kaudit.reconcile.canonical import canonical
from kaudit.reconcile.classes import UNDECODABLE
from kaudit.reconcile.decode import decode_topic
from kaudit.reconcile.difference import add_differences
from kaudit.reconcile.explain import PipelineRead, explain
from kaudit.reconcile.formats import value_format
from kaudit.reconcile.formats.base import joined_key
from kaudit.reconcile.hints import refuse_misread
from kaudit.reconcile.kinds import (
    Kind,
    TooWide,
    ValueType,
    compared_as,
    database_kind,
    display_scales,
    kind_of,
)
from kaudit.reconcile.request import FieldTypes, ReconcileRequest, ReconcileResult
from kaudit.reconcile.sinks import SinkSpec, parse_sink, pin_sink, read_sink
from kaudit.reconcile.source import (
    OffsetRange,
    pin_offsets,
    read_topic,
    values_at,
)
from kaudit.reconcile.table_history import table_history


def read_types(request: ReconcileRequest, sink: Any) -> dict[str, Any]:
    """The Spark type each key and compared field is read as, as the value format says
    (JSON: the one ``--schema`` names, else the sink column's)."""
    return value_format(request.value_format).field_types(request, sink)


def shape_sink(df: Any, request: ReconcileRequest) -> Any:
    """key, compare columns (and partition/offset in coordinates mode), from sink columns."""
    from pyspark.sql import functions as F

    from kaudit.reconcile.plan import PLANS

    names = set(df.columns)
    wanted = request.sink_key_columns() + [request.sink_column(c) for c in request.compare]
    coordinates = {c: coordinate_column(request, c, names)
                   for c in ("partition", "offset", "topic")}
    by_coordinates = PLANS[request.mode].by_coordinates
    if by_coordinates:
        wanted += [coordinates["partition"], coordinates["offset"]]
    missing = [c for c in wanted if c not in names]
    if missing:
        raise InputError(f"the sink has no column {missing[0]!r} (columns: "
                         f"{', '.join(sorted(names))}); map topic fields to sink columns "
                         "with --map FIELD=COLUMN")
    key = joined_key([F.col(c).cast("string") for c in request.sink_key_columns()])
    columns = [key.alias("key")] + [F.col(request.sink_column(c)) for c in request.compare]
    if by_coordinates:
        columns += [F.col(coordinates["partition"]).cast("int").alias("partition"),
                    F.col(coordinates["offset"]).cast("long").alias("offset")]
        topic_column = coordinates["topic"]
        if topic_column in names:  # a sink fed by several topics: keep ours
            df = df.where(F.col(topic_column) == F.lit(request.topic))
    return df.select(*columns)


#: Where Apache Iceberg's Kafka Connect sink (its KafkaMetadataTransform) keeps each row's
#: record coordinates.
ICEBERG_METADATA = "_kafka_metadata_"


def coordinate_column(request: ReconcileRequest, name: str, columns: set[str]) -> str:
    """The sink column of a record coordinate (partition, offset, topic): the one --map
    names, else a column of its name, else the Iceberg sink's ``_kafka_metadata_NAME``."""
    if name in request.column_map:
        return request.column_map[name]
    plain = request.sink_column(name)
    if plain not in columns and ICEBERG_METADATA + name in columns:
        return ICEBERG_METADATA + name
    return plain


def align_types(topic: Any, sink: Any, columns: list[str],
                topic_kinds: dict[str, str] | None = None,
                sink_types: dict[str, str] | None = None
                ) -> tuple[Any, Any, list[FieldTypes]]:
    """Compare like with like: both sides cast to the type that loses nothing of either
    (:func:`kaudit.reconcile.kinds.compared_as`): integers as integers, decimals at their
    scale, never a 64-bit integer through a double; a time of day, a UUID or JSON as its
    canonical text (:mod:`kaudit.reconcile.canonical`). ``topic_kinds`` names the fields
    declared as kaudit's TIME, UUID or JSON (:meth:`ReconcileRequest.declared_kinds`);
    ``sink_types`` the database's own column types (:attr:`SinkSpec.column_types`). Also
    what each column was on each side and what it was compared as, for the report."""
    from pyspark.sql import functions as F

    topic_kinds, sink_types = topic_kinds or {}, sink_types or {}
    t_types = {f.name: f.dataType.simpleString() for f in topic.schema.fields}
    s_types = {f.name: f.dataType.simpleString() for f in sink.schema.fields}
    fields = []
    for c in columns:
        t_kind = kind_of(topic_kinds.get(c, t_types[c]))
        s_database = database_kind(sink_types.get(c, ""))
        s_kind = s_database or kind_of(s_types[c])
        try:
            target = compared_as(t_kind, s_kind)
        except TooWide as exc:
            raise InputError(f"column {c}: {exc}; declare it with --schema") from None
        t_col, s_col = as_target(F.col(c), t_kind, target), as_target(F.col(c), s_kind, target)
        if target.round_to is not None:  # a float with a decimal: at the decimal's scale
            t_col, s_col = F.round(t_col, target.round_to), F.round(s_col, target.round_to)
        topic = topic.withColumn(c, canonical(t_col, target.kind))
        sink = sink.withColumn(c, canonical(s_col, target.kind))
        shown_sink = sink_types[c] if s_database else s_types[c]
        fields.append(FieldTypes(c, topic_kinds.get(c, t_types[c]), shown_sink, str(target)))
    return topic, sink, fields


def as_target(column: Any, side: ValueType, target: ValueType) -> Any:
    """One side's column cast to the type it is compared as; nanoseconds since the epoch
    compared with a timestamp are cut to its microseconds (floored, before 1970 too)."""
    from pyspark.sql import functions as F

    if target.from_nanos and side.kind is Kind.NANO_TIMESTAMP:
        # In decimals: a long of nanoseconds divided as a double would lose its last digits.
        whole = (column - F.pmod(column, F.lit(1000))).cast("decimal(20,0)")
        return F.timestamp_micros((whole / F.lit(1000)).cast("bigint")).cast(target.spark)
    return column.cast(target.spark)


def hashed(topic: Any, sink: Any, compared: list[str],
           topic_kinds: dict[str, str] | None = None,
           sink_types: dict[str, str] | None = None) -> tuple[Any, Any, list[FieldTypes]]:
    """Both sides typed alike (:func:`align_types`), with the key and payload hashes the
    comparison groups and matches on."""
    from pyspark.sql import functions as F

    from kaudit.reconcile.plan import key_hash_column, payload_hash_column

    topic, sink, fields = align_types(topic, sink, compared, topic_kinds, sink_types)
    # A record that could not be decoded stands alone: a key_hash of its own when its key
    # was not read, and a payload hash that matches nothing, so it is always looked at.
    undecodable = F.col(UNDECODABLE).isNotNull()
    own = F.xxhash64(F.lit("kaudit.undecodable"), F.col("partition"), F.col("offset"))
    topic = topic.withColumn("key_hash", F.when(undecodable & F.col("key").isNull(), own)
                             .otherwise(key_hash_column(F.col("key")))).withColumn(
        "payload_hash", F.when(undecodable, own).otherwise(
            payload_hash_column(compared, typed=True)))
    sink = sink.withColumn("key_hash", key_hash_column(F.col("key"))).withColumn(
        "payload_hash", payload_hash_column(compared, typed=True))
    return topic, sink, fields


def run_reconcile(conn: ConnectionSettings, request: ReconcileRequest) -> ReconcileResult:
    """Run the whole job; see the module docstring."""
    import time

    from kaudit.reconcile.spark import (
        begin_session,
        connector_jars,
        out_of_memory,
        quiet_pyspark_errors,
        running_session,
        stop_session,
    )

    started = time.monotonic()
    quiet_pyspark_errors()
    request.check()
    _make_output_dir(request)  # before the long run, not after it
    sink_spec = parse_sink(request.sink_uri, request.sink_options)
    value = value_format(request.value_format)
    value.check_schema_fields(request)
    for jar in request.jars or []:
        # A local path that is missing would surface minutes later as a missing class.
        if "://" not in jar and not Path(jar.removeprefix("file:")).expanduser().is_file():
            raise InputError(f"--jars {jar}: no such file")
    ranges = pin_offsets(conn, request.topic, request.start, request.end,
                         request.read_committed)
    # The pipeline is read while Spark starts and compares (its own thread, bounded).
    pipeline = (PipelineRead(conn, request.pipeline, request.topic, ranges)
                if request.pipeline is not None else None)
    # A session this process already runs on the same master is used and left running.
    spark = running_session(request.master)
    owned = spark is None
    if spark is None:
        jars = request.jars
        if jars is None:
            jars = connector_jars(iceberg=sink_spec.kind == "iceberg",
                                  avro=request.avro is not None
                                  or request.key_avro is not None)
        # The driver JVM starts while the field check reads the topic's ends.
        request, spark = begin_session(request.master, jars).wait_after(
            lambda: value.check_sampled_fields(conn, request, ranges))
    else:
        request = value.check_sampled_fields(conn, request, ranges)
    try:
        sink_spec = pin_sink(spark, sink_spec)
        return _compare_and_report(conn, request, spark, sink_spec, ranges, started, pipeline)
    except Exception as exc:
        short = out_of_memory(exc, request.master)
        if short is None:
            raise
        raise short from None
    finally:
        if owned:
            stop_session(spark)


def _compare_and_report(conn: ConnectionSettings, request: ReconcileRequest, spark: Any,
                        sink_spec: SinkSpec, ranges: list[OffsetRange],
                        started: float, pipeline: PipelineRead | None = None
                        ) -> ReconcileResult:
    import time

    from pyspark.sql import functions as F

    from kaudit.reconcile.plan import PLANS, CompareOptions, compare

    # The one big shuffle gets its partitions from the topic's size (CompareOptions); every
    # other shuffle of the run moves a few rows: a partition per core, not a task per
    # partition that reads nothing.
    spark.conf.set("spark.sql.shuffle.partitions",
                   str(max(1, spark.sparkContext.defaultParallelism)))
    sink_table = read_sink(spark, sink_spec)
    types = read_types(request, sink_table)  # from the sink's own columns: the keys' too
    refuse_misread(request, {n: t.simpleString() for n, t in types.items()},
                   sink_spec.database_kinds())
    sink = shape_sink(sink_table, request)
    raw = read_topic(spark, conn, request.topic, ranges, request.read_committed)
    sink = value_format(request.value_format).shape_sink(sink, request)
    if PLANS[request.mode].by_coordinates:
        # Rows outside the pinned range were written before or after it: not ours to judge.
        in_range = F.lit(False)
        for r in ranges:
            in_range = in_range | ((F.col("partition") == r.partition)
                                   & (F.col("offset") >= r.requested_start)
                                   & (F.col("offset") < r.end))
        sink = sink.where(in_range)
    compared = [request.sink_column(c) for c in request.compare]
    topic_at = _records_at(raw, request, types, sink, compared, sink_spec)
    topic, sink, fields = _decoded_and_hashed(raw, request, types, sink, compared, sink_spec)
    notes = {request.sink_column(n): why for n, why in request.type_notes.items()}
    fields = [replace(f, note=notes.get(f.column)) for f in fields]
    grace = (datetime.now(UTC) - timedelta(seconds=request.grace_seconds)
             if request.grace_seconds > 0 else None)
    options = CompareOptions(mode=request.mode, compare=tuple(compared),
                             numeric_tolerance=request.numeric_tolerance,
                             timestamp_precision=request.timestamp_precision,
                             grace_cutoff=grace,
                             source_truncated=any(r.unverifiable for r in ranges),
                             partition_starts={r.partition: r.start for r in ranges},
                             shuffle_partitions=shuffle_partitions(ranges),
                             display_scales=display_scales(
                                 {f.column: f.sink_type for f in fields}),
                             shuffle=request.shuffle)
    try:
        comparison = compare(topic, sink, options, topic_at)
    except ValueError as exc:  # e.g. a compared field with a reserved name
        raise InputError(f"cannot compare: {exc}") from None
    counts = dict(comparison.counts())
    # Kept apart from the sink rows classed unverifiable: a sink row at a lost offset is the
    # same record, and adding the two would count it twice.
    counts["unverifiable_offsets"] = sum(r.unverifiable for r in ranges)
    topic_records = comparison.topic_records()  # from the same pass, no job of their own
    sink_rows = comparison.sink_rows()
    output_files = _write_discrepancies(comparison.discrepancies, request)
    samples = comparison.samples(request.samples)
    add_differences(samples)  # two texts that print alike: where they differ
    if request.envelope == "debezium":
        add_events(conn, request, samples, spark)
    explanation = None
    if pipeline is not None:
        history_of = ((lambda present, absent: table_history(spark, sink_spec, request,
                                                             present, absent))
                      if sink_spec.kind == "iceberg" else None)
        explanation = explain(conn, request.topic, pipeline, comparison.discrepancies,
                              samples, history_of)
    result = ReconcileResult(
        request=request, sink=sink_spec, ranges=ranges, topic_records=topic_records,
        sink_rows=sink_rows, counts=counts, by_partition=comparison.counts_by_partition(),
        samples=samples, output_files=output_files,
        seconds=time.monotonic() - started, fields=fields, explanation=explanation)
    comparison.unpersist()
    return result


def add_events(conn: ConnectionSettings, request: ReconcileRequest,
               samples: dict[str, list[dict[str, Any]]], spark: Any) -> None:
    """Each sample of a Debezium topic gets the change event behind it (``event``: op,
    ts_ms, the source's ts_ms, transaction), read on the driver at its partition and
    offset (a row kept after its delete points at the delete); a sample with no topic
    record (a row the topic never had) gets none. The value format reads the events (Avro
    ones in Spark, by the decoder that read the topic)."""
    places = {(s["partition"], s["offset"]) for rows in samples.values() for s in rows
              if s.get("partition") is not None and s.get("offset") is not None}
    found = values_at(conn, request.topic, places, request.read_committed) if places else {}
    events = value_format(request.value_format).events(spark, request, found)
    for rows in samples.values():
        for sample in rows:
            partition, offset = sample.get("partition"), sample.get("offset")
            sample["event"] = None if partition is None or offset is None \
                else events.get((partition, offset))


#: Rows per partition of the one shuffle that keep a task's hash aggregation and hash
#: join well inside its memory.
ROWS_PER_SHUFFLE_PARTITION = 250_000


def _records_at(raw: Any, request: ReconcileRequest, types: dict[str, Any], sink: Any,
                compared: list[str], sink_spec: SinkSpec) -> Callable[[Any], Any]:
    """For ``--shuffle hashes``: the topic frame's records at the coordinates (partition,
    offset) of the frame given, the raw records joined before they are decoded and hashed
    as the whole topic was (``sink``: before :func:`hashed`)."""
    def at(coordinates: Any) -> Any:
        subset = raw.join(coordinates, on=["partition", "offset"], how="left_semi")
        return _decoded_and_hashed(subset, request, types, sink, compared, sink_spec)[0]
    return at


def _decoded_and_hashed(raw: Any, request: ReconcileRequest, types: dict[str, Any], sink: Any,
                        compared: list[str], sink_spec: SinkSpec
                        ) -> tuple[Any, Any, list[FieldTypes]]:
    """The topic's ``raw`` records decoded, and both sides typed and hashed alike
    (:func:`hashed`): the one way the topic frame is built, for the whole range and for the
    records :func:`_records_at` reads again, so that the two cannot differ."""
    return hashed(decode_topic(raw, request, types), sink, compared,
                  request.declared_kinds(), sink_spec.column_types)


def shuffle_partitions(ranges: list[OffsetRange]) -> int:
    """Partitions of the one shuffle, from the topic's size: see
    :func:`shuffle_partitions_for`."""
    return shuffle_partitions_for(sum(r.end - r.start for r in ranges))


def shuffle_partitions_for(records: int) -> int:
    """Partitions of the one shuffle for this many topic records (the sink's rows are not
    known before they are read: assume as many): at least 8, so that small runs stay quick;
    more for big topics, so that no task spills its sort to disk (a 10 M record run
    spilled 1.9 GB with 8)."""
    return max(8, -(-2 * records // ROWS_PER_SHUFFLE_PARTITION))


def _make_output_dir(request: ReconcileRequest) -> None:
    """Create ``--output-dir`` now: one that cannot be is exit 2 before anything is read,
    not an error after the whole comparison."""
    if not request.output_dir:
        return
    out = Path(request.output_dir).expanduser()
    if out.exists() and not out.is_dir():
        raise InputError(f"--output-dir {request.output_dir}: not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--output-dir {request.output_dir}: cannot create it: "
                         f"{exc.strerror or exc}") from None


def _write_discrepancies(discrepancies: Any, request: ReconcileRequest) -> list[str]:
    if not request.output_dir:
        return []
    out = Path(request.output_dir).expanduser()  # made by _make_output_dir
    stamp = re.sub(r"[^0-9]", "", datetime.now(UTC).isoformat(timespec="seconds"))
    files = [str(out / f"discrepancies-{stamp}.parquet")]
    discrepancies.write.mode("errorifexists").parquet(files[0])
    if request.csv:
        files.append(str(out / f"discrepancies-{stamp}.csv"))
        discrepancies.write.mode("errorifexists").option("header", "true").csv(files[1])
    return files
