"""One reconcile run: pin the topic range, read both sides, compare, report.

Data flows one way: request -> offset ranges -> topic frame and sink frame
(decoded, keyed, typed alike) -> comparison plan -> result. Nothing is cached:
the plan reads each side once, and its counts, totals and samples come from
its own (small, persisted) discrepancy set.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kaudit.connect.settings import ConnectionSettings
from kaudit.errors import InputError
from kaudit.reconcile.classes import RAW_VALUE, UNDECODABLE
from kaudit.reconcile.infer import field_paths
from kaudit.reconcile.request import KAFKA_KEY, ReconcileRequest, ReconcileResult
from kaudit.reconcile.sinks import SinkSpec, parse_sink, pin_sink, read_sink
from kaudit.reconcile.source import OffsetRange, pin_offsets, read_topic, sample_values
from kaudit.reconcile.spark import error_line

#: How much of an undecodable value the samples show.
RAW_SAMPLE_CHARS = 200
_CORRUPT = "_kaudit_corrupt"
#: Records read from each end of each partition to check that the named fields exist.
SAMPLE_PER_END = 300


def _field_column(name: str, struct: str = "v") -> Any:
    from pyspark.sql import functions as F

    return F.col(struct + "." + ".".join(f"`{part}`" for part in name.split(".")))


def _text_schema(fields: list[str], doubles: frozenset[str] = frozenset(),
                 longs: frozenset[str] = frozenset()) -> Any:
    """A from_json schema with every wanted field as text (nested ones as structs): Spark
    then hands over any JSON value as its text (a number as its digits, an object as its
    JSON), so no value is turned into null for having another type than expected.

    Fields in ``doubles`` are read as DOUBLE and those in ``longs`` as BIGINT instead (the
    fast schema, see decode_topic): a value of another kind then marks the record corrupt
    rather than becoming null."""
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    tree: dict[str, Any] = {}
    for name in fields:
        node = tree
        parts = name.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):  # a.b and a both wanted: a is read as text
                break
        else:
            node.setdefault(parts[-1], name)

    def leaf(name: Any) -> Any:
        return (DoubleType() if name in doubles else LongType() if name in longs
                else StringType())

    def struct(node: dict[str, Any]) -> Any:
        return StructType([StructField(k, struct(v) if isinstance(v, dict) else leaf(v))
                           for k, v in node.items()])

    schema = struct(tree)
    return StructType([*schema.fields, StructField(_CORRUPT, StringType())])


def _convert(text: Any, target: Any) -> Any:
    """A field's text as the type it is compared as: null only where the text was null
    or does not convert (which decode_topic reports as undecodable)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import (
        BooleanType,
        DateType,
        NumericType,
        TimestampNTZType,
        TimestampType,
    )

    if isinstance(target, NumericType):
        # Numbers are compared as double (align_types): 10, 10.0 and 1e1 all read alike.
        return text.try_cast("double")
    if isinstance(target, BooleanType):
        return text.try_cast("boolean")
    if isinstance(target, TimestampType | TimestampNTZType | DateType):
        # ISO text, or a number of seconds since the epoch.
        return F.coalesce(text.try_cast("timestamp"),
                          F.timestamp_seconds(text.try_cast("double")))
    return text


def decode_topic(raw: Any, request: ReconcileRequest, targets: dict[str, Any]) -> Any:
    """partition, offset, timestamp, tombstone, key, the compare columns (sink names) as
    their ``targets`` types, and :data:`UNDECODABLE` / :data:`RAW_VALUE`.

    ``targets`` maps each key and compared field to the type it is read as (the sink
    column's, or the one ``--schema`` gives). A field present in a record is never read as
    null: JSON values are taken as text and converted. A record whose value is not a JSON
    object, or whose field does not convert, has :data:`UNDECODABLE` set (the field's name,
    "" for the whole value) and its raw text in :data:`RAW_VALUE`; when its key cannot be
    read its key is null.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegralType, NumericType

    keys = request.key_fields()
    no_reason = F.lit(None).cast("string")
    if request.value_format == "json":
        # The value as text once, the bytes dropped: every later use reads the text where
        # it lies, where each use of the bytes would copy them.
        raw = raw.select("partition", "offset", "timestamp", "key",
                         F.col("value").isNull().alias("_tombstone"),
                         F.col("value").cast("string").alias("_text"))
        tombstone, text = F.col("_tombstone"), F.col("_text")
        key_names = [k for k in keys if k != KAFKA_KEY]
        fields = list(dict.fromkeys(key_names + list(request.compare)))
        options = {"columnNameOfCorruptRecord": _CORRUPT, "mode": "PERMISSIVE"}
        # Two decoders, one read. The fast one parses numbers straight to DOUBLE (what
        # _convert makes of their text anyway): about a quarter of the decoding time of
        # parsing text and converting it. Where it cannot give the exact same values
        # (the value is not a JSON object, or a number field holds something else, which
        # marks the record corrupt), the text decoder reads that record, lazily: only
        # those records pay for it, and every record gets the text decoder's values.
        doubles = frozenset(n for n in fields if n not in key_names
                            and isinstance(targets[n], NumericType))
        # Key fields the sink holds as integers are parsed to BIGINT alike: read as text,
        # every JSON number is written out again through a JSON generator of its own.
        longs = frozenset(n for n in key_names if isinstance(targets[n], IntegralType))
        # Both decoders in one projection (from_json keeps it out of Spark's generated
        # pipeline: each projection of its own copies every row once more); the fast
        # decoder's expression is named twice there and evaluated once.
        decoded = F.from_json(text, _text_schema(fields, doubles, longs), options)
        frame = raw.select("*", decoded.alias("v"), F.when(
            decoded.isNull() | decoded.getField(_CORRUPT).isNotNull(),
            F.from_json(text, _text_schema(fields), options)).alias("vt"))
        slow = F.col("v").isNull() | F.col(f"v.{_CORRUPT}").isNotNull()
        fast = {name: _field_column(name) for name in fields}
        texts = {name: _field_column(name, "vt") for name in fields}
        values = {name: F.when(slow, _convert(texts[name], targets[name])).otherwise(
            fast[name] if name in doubles else _convert(fast[name], targets[name]))
            for name in fields}
        corrupt = F.col("vt").isNull() | F.col(f"vt.{_CORRUPT}").isNotNull()
        all_null = F.lit(True)
        for name in fields:
            all_null = all_null & texts[name].isNull()
        # The whole value first (not JSON, not an object, nothing wanted could be read);
        # then a field the JSON could not give (a nested field under a non-object); then a
        # field whose text does not convert to its type. A record the fast decoder read
        # can only have the last kind, in a field it read as text.
        reasons = [F.when(corrupt & all_null, F.lit(""))]
        reasons += [F.when(corrupt & texts[n].isNull(), F.lit(n)) for n in fields]
        reasons += [F.when(texts[n].isNotNull() & values[n].isNull(), F.lit(n))
                    for n in fields]
        fast_reasons = [F.when(fast[n].isNotNull() & values[n].isNull(), F.lit(n))
                        for n in fields if n not in doubles | longs]
        reason = F.when(~tombstone, F.when(slow, F.coalesce(*reasons)).otherwise(
            F.coalesce(*fast_reasons) if fast_reasons else no_reason))
        frame = frame.withColumn(UNDECODABLE, reason)
        # The text decoder writes a JSON integer as its value's digits (-0 as 0), as the
        # BIGINT prints: both decoders give a key the same text.
        texts = {name: F.when(slow, texts[name]).otherwise(
            fast[name].cast("string") if name in longs else fast[name]) for name in key_names}
        key_unread = F.col(UNDECODABLE).isin("", *[k for k in keys if k != KAFKA_KEY])
        raw_text = F.when(F.col(UNDECODABLE).isNotNull(), F.substring(text, 1, RAW_SAMPLE_CHARS))

        def value_of(name: str) -> Any:
            return values[name]

        def key_text(name: str) -> Any:
            return texts[name]
    else:
        tombstone = F.col("value").isNull()
        allowed = {"value", KAFKA_KEY}
        for name in [*keys, *request.compare]:
            if name not in allowed:
                raise InputError(f"--value-format {request.value_format}: fields cannot be "
                                 f"read from the value; use --key @key and --compare value")
        payload = (F.col("value").cast("string") if request.value_format == "string"
                   else F.xxhash64(F.col("value")))
        frame = raw.select("*", payload.alias("value_payload"), no_reason.alias(UNDECODABLE))
        key_unread = F.lit(False)
        raw_text = no_reason

        def value_of(name: str) -> Any:
            return F.col("value_payload")

        key_text = value_of

    def key_part(name: str) -> Any:
        return F.col("key").cast("string") if name == KAFKA_KEY else key_text(name).cast("string")

    key = joined_key([key_part(k) for k in keys])
    # A tombstone has no value to take key fields from: Kafka deletes by message key,
    # so a tombstone is matched by its message key (which names the same record).
    key = (F.when(tombstone, F.col("key").cast("string"))
           .when(key_unread, F.lit(None).cast("string")).otherwise(key))
    columns = [F.col("partition"), F.col("offset"), F.col("timestamp"),
               tombstone.alias("tombstone"), key.alias("key")]
    columns += [value_of(c).alias(request.sink_column(c)) for c in request.compare]
    columns += [F.col(UNDECODABLE), raw_text.alias(RAW_VALUE)]
    return frame.select(*columns)


def read_types(request: ReconcileRequest, sink: Any) -> dict[str, Any]:
    """The type each key and compared field is read as: the one ``--schema`` names, else
    the sink column's."""
    from pyspark.sql.types import StringType

    if request.value_format != "json":
        return {}  # nothing is decoded: the value is compared as text or by its bytes
    fields = [k for k in request.key_fields() if k != KAFKA_KEY] + list(request.compare)
    declared = _schema_types(request.schema) if request.schema else {}
    sink_types = {f.name: f.dataType for f in sink.schema.fields}
    types = {}
    for name in fields:
        if request.schema and name not in declared:
            raise InputError(f"--schema has no field {name!r} "
                             f"(fields: {', '.join(sorted(declared)) or 'none'})")
        types[name] = declared.get(name, sink_types.get(request.sink_column(name),
                                                         StringType()))
    return types


def _schema_types(ddl: str) -> dict[str, Any]:
    from pyspark.sql.types import StructType

    try:
        schema = StructType.fromDDL(ddl)
    except Exception as exc:
        raise InputError(f"--schema: not a valid DDL schema: {error_line(exc, 200)}") from None
    out: dict[str, Any] = {}

    def walk(struct: Any, prefix: str) -> None:
        for f in struct.fields:
            out[prefix + f.name] = f.dataType
            if isinstance(f.dataType, StructType):
                walk(f.dataType, prefix + f.name + ".")

    walk(schema, "")
    return out


def check_fields_exist(conn: ConnectionSettings, request: ReconcileRequest,
                       ranges: list[OffsetRange]) -> None:
    """A key or compared field that no sampled value has is a usage error (a typo, a field
    that needs --map), found before Spark starts. The sample is the first and the last
    records of each partition, so a field added to a topic later is still seen."""
    if request.value_format != "json" or request.schema:
        return
    wanted = [k for k in request.key_fields() if k != KAFKA_KEY] + list(request.compare)
    if not wanted:
        return
    texts = sample_values(conn, request.topic, ranges, SAMPLE_PER_END, request.read_committed)
    if not texts:
        return  # an empty range, or a sample not read in time: nothing to judge
    known = field_paths(texts)
    for name in wanted:
        if name not in known:
            raise InputError(
                f"topic {request.topic} values have no field {name!r} in the {len(texts)} "
                f"records sampled from each partition's start and end (fields: "
                f"{', '.join(sorted(known)) or 'none'}); if it appears elsewhere, name its "
                "type with --schema")


def joined_key(parts: list[Any]) -> Any:
    """One text key from the key fields' texts, alike on both sides: joined by "|", a
    missing part as "" (one field: its text as it is, without concat_ws's arrays)."""
    from pyspark.sql import functions as F

    texts = [F.coalesce(part, F.lit("")) for part in parts]
    return texts[0] if len(texts) == 1 else F.concat_ws("|", *texts)


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
    key = joined_key([F.col(request.sink_column(k)).cast("string")
                      for k in request.key_fields()])
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


def hashed(topic: Any, sink: Any, compared: list[str]) -> tuple[Any, Any]:
    """Both sides typed alike (:func:`align_types`), with the key and payload hashes the
    comparison groups and matches on."""
    from pyspark.sql import functions as F

    from kaudit.reconcile.plan import key_hash_column, payload_hash_column

    topic, sink = align_types(topic, sink, compared)
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
    return topic, sink


def run_reconcile(conn: ConnectionSettings, request: ReconcileRequest) -> ReconcileResult:
    """Run the whole job; see the module docstring."""
    import time

    from kaudit.reconcile.spark import (
        begin_session,
        connector_jars,
        quiet_pyspark_errors,
        running_session,
    )

    started = time.monotonic()
    quiet_pyspark_errors()
    sink_spec = parse_sink(request.sink_uri, request.sink_options)
    for jar in request.jars or []:
        # A local path that is missing would surface minutes later as a missing class.
        if "://" not in jar and not Path(jar.removeprefix("file:")).expanduser().is_file():
            raise InputError(f"--jars {jar}: no such file")
    ranges = pin_offsets(conn, request.topic, request.start, request.end,
                         request.read_committed)
    # A session this process already runs on the same master is used and left running.
    spark = running_session(request.master)
    owned = spark is None
    if spark is None:
        jars = request.jars
        if jars is None:
            jars = connector_jars(iceberg=sink_spec.kind == "iceberg")
        # The driver JVM starts while the field check reads the topic's ends.
        _, spark = begin_session(request.master, jars).wait_after(
            lambda: check_fields_exist(conn, request, ranges))
    else:
        check_fields_exist(conn, request, ranges)
    try:
        sink_spec = pin_sink(spark, sink_spec)
        return _compare_and_report(conn, request, spark, sink_spec, ranges, started)
    finally:
        if owned:
            spark.stop()


def _compare_and_report(conn: ConnectionSettings, request: ReconcileRequest, spark: Any,
                        sink_spec: SinkSpec, ranges: list[OffsetRange],
                        started: float) -> ReconcileResult:
    import time

    from pyspark.sql import functions as F

    from kaudit.reconcile.plan import CompareOptions, compare

    # The one big shuffle gets its partitions from the topic's size (CompareOptions); every
    # other shuffle of the run moves a few rows: a partition per core, not a task per
    # partition that reads nothing.
    spark.conf.set("spark.sql.shuffle.partitions",
                   str(max(1, spark.sparkContext.defaultParallelism)))
    sink_table = read_sink(spark, sink_spec)
    types = read_types(request, sink_table)  # from the sink's own columns: the keys' too
    sink = shape_sink(sink_table, request)
    raw = read_topic(spark, conn, request.topic, ranges, request.read_committed)
    topic = decode_topic(raw, request, types)
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
    topic, sink = hashed(topic, sink, compared)
    grace = (datetime.now(UTC) - timedelta(seconds=request.grace_seconds)
             if request.grace_seconds > 0 else None)
    options = CompareOptions(mode=request.mode, compare=tuple(compared),
                             numeric_tolerance=request.numeric_tolerance,
                             timestamp_precision=request.timestamp_precision,
                             grace_cutoff=grace,
                             source_truncated=any(r.unverifiable for r in ranges),
                             partition_starts={r.partition: r.start for r in ranges},
                             shuffle_partitions=shuffle_partitions(ranges))
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
    comparison.unpersist()
    return result


#: Rows per partition of the one shuffle that keep a task's hash aggregation and hash
#: join well inside its memory.
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
