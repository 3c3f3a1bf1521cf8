"""The topic side: pin an offset range per partition, then read it with Spark.

The range [start, end) of every partition is fixed before Spark reads
anything, recorded in the report, and can be given back with --from/--to
to repeat a run. With read_committed (the default) the end is the last
stable offset, so open transactions are left out rather than half-read.
A start below the log start offset (records removed by retention) is
reported as unverifiable: those records cannot be compared, which is not
the same as missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kaudit.cluster.client import AdminSession
from kaudit.cluster.topics import topic_partitions
from kaudit.connection.java_options import java_client_options
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import InputError, RuntimeUnavailable
from kaudit.waiting import Deadline


@dataclass(frozen=True)
class OffsetRange:
    """What is read from one partition."""

    partition: int
    start: int
    end: int
    log_start: int
    """The partition's earliest offset when the range was pinned."""
    requested_start: int

    @property
    def unverifiable(self) -> int:
        """Offsets asked for that retention has already removed."""
        return max(0, min(self.log_start, self.end) - self.requested_start)


def _parse_offsets_json(text: str, topic: str, option: str) -> dict[int, int]:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{option}: not valid JSON ({exc.msg}); expected e.g. "
                         '{"0": 42, "1": 17}') from None
    if isinstance(raw, dict) and topic in raw and isinstance(raw[topic], dict):
        raw = raw[topic]  # Spark's {"topic": {"0": 42}} form
    if not isinstance(raw, dict) or not raw:
        raise InputError(f'{option}: expected an object of partition -> offset, e.g. {{"0": 42}}')
    out = {}
    for key, value in raw.items():
        if not str(key).isdigit() or isinstance(value, bool) or not isinstance(value, int) \
                or value < 0:
            raise InputError(f"{option}: partition {key!r} -> {value!r} is not "
                             "a partition number and a non-negative offset")
        out[int(key)] = value
    return out


def _parse_timestamp(text: str) -> int | None:
    """Epoch milliseconds from ``1700000000000`` or an ISO-8601 time; None if neither."""
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        raise InputError(f"timestamp {text!r} needs a time zone (e.g. 2026-11-21T10:00:00Z)")
    return int(moment.timestamp() * 1000)


def pin_offsets(conn: ConnectionSettings, topic: str, start_spec: str, end_spec: str,
                read_committed: bool) -> list[OffsetRange]:
    """Resolve --from/--to into a fixed [start, end) per partition."""
    times = _parse_timestamp(start_spec), _parse_timestamp(end_spec)
    if times[0] is not None and times[1] is not None and times[0] > times[1]:
        # Both would resolve to the same offsets and the range be silently empty.
        raise InputError(f"--from {start_spec!r} is later than --to {end_spec!r}")
    session = AdminSession(conn)
    partitions = topic_partitions(session, topic)
    if partitions is None:
        raise InputError(f"topic {topic} does not exist")
    earliest = session.list_offsets(topic, partitions, "earliest", read_committed)
    latest = session.list_offsets(topic, partitions, "latest", read_committed)

    def resolve(spec: str, option: str, default: dict[int, int]) -> dict[int, int]:
        if spec in ("earliest", "latest"):
            return dict(earliest if spec == "earliest" else latest)
        if spec.lstrip().startswith("{"):
            given = _parse_offsets_json(spec, topic, option)
            unknown = sorted(set(given) - set(partitions))
            if unknown:
                raise InputError(f"{option}: {topic} has no partition {unknown[0]} "
                                 f"(partitions: {', '.join(map(str, partitions))})")
            return {p: given.get(p, default[p]) for p in partitions}
        millis = _parse_timestamp(spec)
        if millis is None:
            raise InputError(f"{option} {spec!r}: expected earliest/latest, a timestamp "
                             '(ISO-8601 or epoch ms) or offsets JSON like {"0": 42}')
        found = session.list_offsets(topic, partitions, millis, read_committed)
        # No record at or after the time: the range ends (or starts) at the end.
        return {p: (found[p] if found[p] >= 0 else latest[p]) for p in partitions}

    starts = resolve(start_spec, "--from", earliest)
    ends = resolve(end_spec, "--to", latest)
    ranges = []
    for p in partitions:
        if starts[p] > ends[p]:
            raise InputError(f"partition {p}: --from offset {starts[p]} is after --to offset "
                             f"{ends[p]}")
        ranges.append(OffsetRange(partition=p, start=max(starts[p], earliest[p]),
                                  end=min(ends[p], latest[p]), log_start=earliest[p],
                                  requested_start=starts[p]))
    return ranges


def read_topic(spark: Any, conn: ConnectionSettings, topic: str, ranges: list[OffsetRange],
               read_committed: bool) -> Any:
    """The raw records of the pinned range: partition, offset, timestamp, key, value."""
    from pyspark.sql import functions as F

    reader = (spark.read.format("kafka")
              .option("subscribe", topic)
              .option("startingOffsets", json.dumps({topic: {str(r.partition): r.start
                                                             for r in ranges}}))
              .option("endingOffsets", json.dumps({topic: {str(r.partition): r.end
                                                           for r in ranges}}))
              # Gaps (compaction, transaction markers) are expected inside a range.
              .option("failOnDataLoss", "false"))
    for key, value in java_client_options(conn).items():
        reader = reader.option(f"kafka.{key}", value)
    reader = reader.option("kafka.isolation.level",
                           "read_committed" if read_committed else "read_uncommitted")
    # Spark's DataSource V2 reader of Kafka hands its rows over as they are; the V1 one,
    # which Spark picks for "kafka" by default, makes every record an external Row and
    # back (about a sixth of a warm read). The choice is made at load(): the session's
    # setting is put back at once.
    v1_sources = "spark.sql.sources.useV1SourceList"
    saved = spark.conf.get(v1_sources)
    spark.conf.set(v1_sources, ",".join(name for name in saved.split(",")
                                        if name.strip().lower() != "kafka"))
    try:
        frame = reader.load()
    except Exception as exc:
        if "Failed to find data source: kafka" not in str(exc):
            raise
        raise RuntimeUnavailable(
            "Spark has no Kafka source: the jars given with --jars must include "
            "spark-sql-kafka-0-10 and its dependencies (without --jars kaudit resolves them "
            "with mvn)") from None
    finally:
        spark.conf.set(v1_sources, saved)
    return frame.select(F.col("partition").cast("int").alias("partition"),
                        F.col("offset"), F.col("timestamp"), F.col("key"), F.col("value"))


def sample_values(conn: ConnectionSettings, topic: str, ranges: list[OffsetRange],
                  per_end: int, read_committed: bool) -> list[bytes] | None:
    """The values of the first and the last ``per_end`` records of each partition's range,
    read on the driver by an assigned consumer that never joins or commits to its group
    (no Spark job: this runs before the session starts). None when a segment could not be
    read to its end within the timeout: a partial sample cannot prove a field absent."""
    heads, tails = {}, {}
    for r in ranges:
        if r.end > r.start:
            heads[r.partition] = (r.start, min(r.end, r.start + per_end))
            tail_start = max(heads[r.partition][1], r.end - per_end)
            if tail_start < r.end:
                tails[r.partition] = (tail_start, r.end)
    found = read_segments(conn, topic, [heads, tails], read_committed)
    return None if found is None else [v for v in found.values() if v is not None]


def values_at(conn: ConnectionSettings, topic: str, places: set[tuple[int, int]],
              read_committed: bool) -> dict[tuple[int, int], bytes | None]:
    """The values at these (partition, offset) places (a few: the report's samples), read
    on the driver; a place not read within the timeout is left out."""
    by_partition: dict[int, list[int]] = {}
    for partition, offset in sorted(places):
        by_partition.setdefault(partition, []).append(offset)
    rounds = max((len(offsets) for offsets in by_partition.values()), default=0)
    passes = [{p: (offsets[i], offsets[i] + 1) for p, offsets in by_partition.items()
               if i < len(offsets)} for i in range(rounds)]
    found = read_segments(conn, topic, passes, read_committed, partial=True) or {}
    return {place: value for place, value in found.items() if place in places}


def read_segments(conn: ConnectionSettings, topic: str,
                  passes: list[dict[int, tuple[int, int]]], read_committed: bool,
                  partial: bool = False) -> dict[tuple[int, int], bytes | None] | None:
    """Each pass's ``partition -> [start, end)`` segments read, by (partition, offset), by
    an assigned consumer that never joins or commits to its group. A segment not read to
    its end within the timeout: None, or (``partial``) what was read."""
    from kaudit.cluster.client import ErrorCollector, new_consumer
    from kaudit.cluster.segments import SegmentReader

    consumer = new_consumer(conn, ErrorCollector(), **{
        "group.id": "kaudit-reconcile-sample", "enable.auto.commit": False,
        "enable.partition.eof": True,
        "isolation.level": "read_committed" if read_committed else "read_uncommitted"})
    values: dict[tuple[int, int], bytes | None] = {}
    try:
        for segments in passes:
            reader = SegmentReader(consumer, topic, segments)
            for msg in reader.records(Deadline(conn.timeout)):
                values[(msg.partition(), msg.offset())] = msg.value()
            if reader.left and not partial:
                return None
    finally:
        consumer.close()
    return values
