"""One reconcile run: pin the topic range, read both sides, compare, report.

Data flows one way: request -> offset ranges -> topic frame and sink frame
(decoded, keyed, typed alike) -> comparison plan -> result. Nothing is cached:
the plan reads each side once, and its counts, totals and samples come from
its own (small, persisted) discrepancy set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from kaudit.connect.settings import ConnectionSettings
from kaudit.errors import InputError
from kaudit.reconcile.infer import infer_ddl
from kaudit.reconcile.sinks import SinkSpec, parse_sink, read_sink
from kaudit.reconcile.source import OffsetRange, pin_offsets, read_topic
from kaudit.reconcile.spark import error_line

KAFKA_KEY = "@key"


@dataclass(frozen=True)
class ReconcileRequest:
    """Everything `kaudit reconcile` was asked to do."""

    topic: str
    sink_uri: str
    key: str = KAFKA_KEY
    value_format: Literal["json", "string", "bytes"] = "json"
    schema: str | None = None
    mode: Literal["append", "upsert", "coordinates"] = "append"
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
    jars: list[str] | None = None
    samples: int = 5

    def key_fields(self) -> list[str]:
        """The key's fields; ``["@key"]`` for the Kafka message key."""
        fields = [f.strip() for f in self.key.split(",") if f.strip()]
        if not fields:
            raise InputError("--key: give a field name, several joined by commas, or @key")
        return fields

    def sink_column(self, name: str) -> str:
        """The sink column a topic field maps to (dots become underscores by default)."""
        default = {"@key": "key"}.get(name, name.replace(".", "_"))
        return self.column_map.get(name, default)


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

    @property
    def verdict(self) -> str:
        """``pass`` when nothing is missing, extra, duplicated in the sink or changed."""
        failing = ("missing_in_sink", "extra_in_sink", "duplicated_in_sink", "mismatched")
        return "fail" if any(self.counts.get(k, 0) for k in failing) else "pass"


def _field_column(name: str) -> Any:
    from pyspark.sql import functions as F

    return F.col("v." + ".".join(f"`{part}`" for part in name.split(".")))


def decode_topic(raw: Any, request: ReconcileRequest) -> Any:
    """partition, offset, timestamp, tombstone, key, typed compare columns (sink names)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    keys = request.key_fields()
    tombstone = F.col("value").isNull()
    if request.value_format == "json":
        text = F.col("value").cast("string")
        if request.schema:
            try:
                schema: Any = StructType.fromDDL(request.schema)
            except Exception as exc:
                raise InputError(f"--schema: not a valid DDL schema: "
                                 f"{error_line(exc, 200)}") from None
        else:
            # Inferred on the driver from a small sample, by Spark's rules (see infer.py):
            # spark.read.json over it would cost one more job and a Python worker.
            sample = [row.j for row in
                      raw.where(~tombstone).select(text.alias("j")).limit(1000).collect()]
            ddl = infer_ddl(sample)
            schema = StructType.fromDDL(ddl) if ddl else StructType([])
        frame = raw.select("*", F.from_json(text, schema).alias("v"))
        known = _schema_fields(schema)
        for name in [k for k in keys if k != KAFKA_KEY] + list(request.compare):
            if name not in known:
                raise InputError(f"topic {request.topic} values have no field {name!r} "
                                 f"(fields: {', '.join(sorted(known)) or 'none'})")
        value_of = _field_column
    else:
        allowed = {"value", KAFKA_KEY}
        for name in [*keys, *request.compare]:
            if name not in allowed:
                raise InputError(f"--value-format {request.value_format}: fields cannot be "
                                 f"read from the value; use --key @key and --compare value")
        payload = (F.col("value").cast("string") if request.value_format == "string"
                   else F.xxhash64(F.col("value")))
        frame = raw.select("*", payload.alias("value_payload"))

        def value_of(name: str) -> Any:
            return F.col("value_payload")

    def key_part(name: str) -> Any:
        return F.col("key").cast("string") if name == KAFKA_KEY else value_of(name).cast("string")

    key = F.concat_ws("|", *[F.coalesce(key_part(k), F.lit("")) for k in keys])
    # A tombstone has no value to take key fields from: Kafka deletes by message key,
    # so a tombstone is matched by its message key (which names the same record).
    key = F.when(tombstone, F.col("key").cast("string")).otherwise(key)
    columns = [F.col("partition"), F.col("offset"), F.col("timestamp"),
               tombstone.alias("tombstone"), key.alias("key")]
    columns += [value_of(c).alias(request.sink_column(c)) for c in request.compare]
    return frame.select(*columns)


def _schema_fields(schema: Any, prefix: str = "") -> set[str]:
    from pyspark.sql.types import StructType

    out: set[str] = set()
    for f in schema.fields:
        name = f"{prefix}{f.name}"
        out.add(name)
        if isinstance(f.dataType, StructType):
            out |= _schema_fields(f.dataType, name + ".")
    return out


def shape_sink(df: Any, request: ReconcileRequest) -> Any:
    """key, compare columns (and partition/offset in coordinates mode), from sink columns."""
    from pyspark.sql import functions as F

    names = set(df.columns)
    wanted = [request.sink_column(k) for k in request.key_fields()]
    wanted += [request.sink_column(c) for c in request.compare]
    if request.mode == "coordinates":
        wanted += [request.sink_column("partition"), request.sink_column("offset")]
    missing = [c for c in wanted if c not in names]
    if missing:
        raise InputError(f"the sink has no column {missing[0]!r} (columns: "
                         f"{', '.join(sorted(names))}); map topic fields to sink columns "
                         "with --map FIELD=COLUMN")
    key = F.concat_ws("|", *[F.coalesce(F.col(request.sink_column(k)).cast("string"),
                                        F.lit("")) for k in request.key_fields()])
    columns = [key.alias("key")] + [F.col(request.sink_column(c)) for c in request.compare]
    if request.mode == "coordinates":
        columns += [F.col(request.sink_column("partition")).cast("int").alias("partition"),
                    F.col(request.sink_column("offset")).cast("long").alias("offset")]
        topic_column = request.sink_column("topic")
        if topic_column in names:  # a sink fed by several topics: keep ours
            df = df.where(F.col(topic_column) == F.lit(request.topic))
    return df.select(*columns)


def align_types(topic: Any, sink: Any, columns: list[str]) -> tuple[Any, Any]:
    """Compare like with like: numbers as double, times as timestamp, the rest as text."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NumericType, TimestampType

    t_types = {f.name: f.dataType for f in topic.schema.fields}
    s_types = {f.name: f.dataType for f in sink.schema.fields}
    for c in columns:
        a, b = t_types[c], s_types[c]
        if isinstance(a, NumericType) and isinstance(b, NumericType):
            target = "double"
        elif isinstance(a, TimestampType) or isinstance(b, TimestampType):
            target = "timestamp"
        else:
            target = "string"
        topic = topic.withColumn(c, F.col(c).cast(target))
        sink = sink.withColumn(c, F.col(c).cast(target))
    return topic, sink


def run_reconcile(conn: ConnectionSettings, request: ReconcileRequest) -> ReconcileResult:
    """Run the whole job; see the module docstring."""
    import time

    from pyspark.sql import functions as F

    from kaudit.reconcile.plan import (
        CompareOptions,
        compare,
        key_hash_column,
        payload_hash_column,
    )
    from kaudit.reconcile.spark import start_session

    started = time.monotonic()
    sink_spec = parse_sink(request.sink_uri, request.sink_options)
    ranges = pin_offsets(conn, request.topic, request.start, request.end,
                         request.read_committed)
    spark = start_session(request.master, request.jars)
    spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions(ranges)))
    raw = read_topic(spark, conn, request.topic, ranges, request.read_committed)
    topic = decode_topic(raw, request)
    sink = shape_sink(read_sink(spark, sink_spec), request)
    if request.value_format == "bytes":
        # The topic side compares the value by the hash of its bytes: hash the sink's
        # column alike (a text column by its UTF-8 bytes).
        for c in request.compare:
            column = request.sink_column(c)
            sink = sink.withColumn(column, F.xxhash64(F.col(column).cast("binary")))
    if request.mode == "coordinates":
        # Rows outside the pinned range were written before or after it: not ours to judge.
        in_range = F.lit(False)
        for r in ranges:
            in_range = in_range | ((F.col("partition") == r.partition)
                                   & (F.col("offset") >= r.requested_start)
                                   & (F.col("offset") < r.end))
        sink = sink.where(in_range)
    compared = [request.sink_column(c) for c in request.compare]
    topic, sink = align_types(topic, sink, compared)
    topic = topic.withColumn("key_hash", key_hash_column(F.col("key"))).withColumn(
        "payload_hash", payload_hash_column(compared))
    sink = sink.withColumn("key_hash", key_hash_column(F.col("key"))).withColumn(
        "payload_hash", payload_hash_column(compared))
    grace = (datetime.now(UTC) - timedelta(seconds=request.grace_seconds)
             if request.grace_seconds > 0 else None)
    options = CompareOptions(mode=request.mode, compare=tuple(compared),
                             numeric_tolerance=request.numeric_tolerance,
                             timestamp_precision=request.timestamp_precision,
                             grace_cutoff=grace,
                             source_truncated=any(r.unverifiable for r in ranges),
                             partition_starts={r.partition: r.start for r in ranges})
    try:
        comparison = compare(topic, sink, options)
    except ValueError as exc:  # e.g. a compared field with a reserved name
        raise InputError(f"cannot compare: {exc}") from None
    counts = dict(comparison.counts())
    # Kept apart from the sink rows classed unverifiable: a sink row at a lost offset is the
    # same record, and adding the two would count it twice.
    counts["unverifiable_offsets"] = sum(r.unverifiable for r in ranges)
    topic_records = comparison.topic_records()  # from the same pass, no job of their own
    sink_rows = comparison.sink_rows()
    output_files = _write_discrepancies(comparison.discrepancies, request)
    result = ReconcileResult(
        request=request, sink=sink_spec, ranges=ranges, topic_records=topic_records,
        sink_rows=sink_rows, counts=counts, by_partition=comparison.counts_by_partition(),
        samples=comparison.samples(request.samples), output_files=output_files,
        seconds=time.monotonic() - started)
    spark.stop()
    return result


#: Rows per shuffle partition that keep the one sort well inside a task's memory.
ROWS_PER_SHUFFLE_PARTITION = 250_000


def shuffle_partitions(ranges: list[OffsetRange]) -> int:
    """Partitions of the one shuffle, from the topic's size (the sink's is not known
    before it is read: assume as many rows): at least 8, so that small runs stay quick;
    more for big topics, so that no task spills its sort to disk (a 10 M record run
    spilled 1.9 GB with 8)."""
    records = sum(r.end - r.start for r in ranges)
    return max(8, -(-2 * records // ROWS_PER_SHUFFLE_PARTITION))


def _write_discrepancies(discrepancies: Any, request: ReconcileRequest) -> list[str]:
    if not request.output_dir:
        return []
    out = Path(request.output_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    stamp = re.sub(r"[^0-9]", "", datetime.now(UTC).isoformat(timespec="seconds"))
    files = [str(out / f"discrepancies-{stamp}.parquet")]
    discrepancies.write.mode("errorifexists").parquet(files[0])
    if request.csv:
        files.append(str(out / f"discrepancies-{stamp}.csv"))
        discrepancies.write.mode("errorifexists").option("header", "true").csv(files[1])
    return files
