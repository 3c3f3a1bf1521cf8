"""Read what a Kafka Connect sink left behind, for :mod:`kaudit.pipeline.causes`: its
group's committed offsets, its configuration and tasks (Connect's REST API), its dead
letter queue and its tasks' history in Connect's status topic.

Every part is read within one overall bound and each wait within ``--timeout``; a part
that cannot be read is named in :attr:`PipelineEvidence.unread` with why, never an error
of the run. The dead letter queue and the status topic are read up to :data:`RECORD_CAP`
records each, and the evidence says when the cap was hit.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kaudit.cluster.client import AdminSession, ErrorCollector, kafka_message, new_consumer
from kaudit.cluster.segments import SegmentReader
from kaudit.connection.http import Endpoint, get_json
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import InputError, KauditError
from kaudit.pipeline.causes import DeadLetter, PipelineEvidence
from kaudit.pipeline.connect import (
    SinkConnector,
    StatusRecord,
    combined,
    dead_letter,
    sink_connector,
    task_history,
)
from kaudit.waiting import Deadline

RECORD_CAP = 200_000
"""Records read of the dead letter queue, and of the status topic, at most."""
STATUS_TOPIC = "connect-status"
"""Connect's usual name for its status topic (``status.storage.topic``)."""


@dataclass(frozen=True)
class PipelineSource:
    """The pipeline ``--connector``/``--connect-url``/``--sink-group``/``--status-topic``
    name: a Kafka Connect sink connector, or only the consumer group of a sink written by
    something else."""

    group: str
    connector: str | None = None
    connect: Endpoint | None = None
    status_topic: str = STATUS_TOPIC

    @classmethod
    def given(cls, connector: str | None, connect_url: str | None, group: str | None,
              status_topic: str | None) -> PipelineSource | None:
        """The source the options name; None when none is given (reconcile then reads no
        pipeline). A half-given one is exit 2."""
        connector = (connector or "").strip() or None
        if connector is None:
            if connect_url is not None:
                raise InputError("--connect-url is the Kafka Connect worker of --connector: "
                                 "add --connector NAME")
            if status_topic is not None:
                raise InputError("--status-topic is read for --connector's restarts: add "
                                 "--connector NAME")
            if group is None:
                return None
        elif connect_url is None:
            raise InputError("--connector needs the worker's REST API: add --connect-url URL")
        if group is not None and not group.strip():
            raise InputError("--sink-group: empty")
        return cls(group=(group or "").strip() or f"connect-{connector}",
                   connector=connector,
                   connect=Endpoint.parse(connect_url, "--connect-url") if connect_url else None,
                   status_topic=(status_topic or STATUS_TOPIC).strip())

    def describe(self) -> dict[str, Any]:
        """What the report names (the worker's URL without credentials)."""
        return {"connector": self.connector, "connect_url": self.connect.base
                if self.connect else None, "sink_group": self.group,
                "status_topic": self.status_topic if self.connector else None}


@dataclass(frozen=True)
class Capped:
    """Records of a topic read from its start to its end, or up to a cap."""

    records: list[Any]
    capped: bool


def read_pipeline(conn: ConnectionSettings, source: PipelineSource, topic: str,
                  ends: Mapping[int, int], bound: float) -> PipelineEvidence:
    """Everything ``source`` tells of ``topic``'s records up to ``ends`` (partition ->
    the run's pinned end), within ``bound`` seconds."""
    deadline = Deadline(bound)
    conn = replace(conn, timeout=min(conn.timeout, bound))
    unread: dict[str, str] = {}
    evidence = PipelineEvidence(end_offsets=dict(ends))
    committed = _part(unread, "committed offsets",
                      lambda: committed_offsets(conn, source.group, topic, sorted(ends)))
    evidence = replace(evidence, committed=committed)
    if source.connector is None or source.connect is None:
        return replace(evidence, unread=unread)
    sink = _part(unread, "connector", lambda: connector_of(conn, source, topic))
    if sink is None:
        return replace(evidence, unread=unread)
    evidence = replace(evidence, tasks=sink.tasks, tolerates_errors=sink.tolerates_errors,
                       dead_letter_topic=sink.dead_letter_topic, settings={
                           **sink.settings, "errors.deadletterqueue.context.headers.enable":
                           str(sink.context_headers).lower()})
    letters = _part(unread, "dead letter queue",
                    lambda: dead_letters(conn, sink, topic, deadline))
    history = _part(unread, "status topic",
                    lambda: restarts(conn, source.status_topic, sink.name, deadline))
    return replace(evidence, dead_letters=letters,
                   restarts=history[0] if history else None,
                   history_complete=history[1] if history else True,
                   unread=unread)


def _part(unread: dict[str, str], what: str, read: Any) -> Any:
    """One part of the evidence, or None with why in ``unread``."""
    try:
        return read()
    except Unread as exc:
        unread[what] = str(exc)
    except KauditError as exc:
        unread[what] = exc.message
    except Exception as exc:
        unread[what] = kafka_message(exc) or exc.__class__.__name__
    return None


class Unread(Exception):
    """A part of the pipeline that could not be read, and why (one line)."""


def committed_offsets(conn: ConnectionSettings, group: str, topic: str,
                      partitions: list[int]) -> dict[int, int]:
    """The offsets ``group`` committed on ``topic``'s partitions (those it committed on)."""
    from kaudit.cluster import client

    session = AdminSession(conn)
    request = [client.ConsumerGroupTopicPartitions(
        group, [client.TopicPartition(topic, p) for p in partitions])]
    [future] = session.admin.list_consumer_group_offsets(
        request, request_timeout=conn.timeout).values()
    answer = session.outcome(future, conn.timeout + 1)
    found = {tp.partition: tp.offset for tp in answer.topic_partitions or []
             if tp.offset >= 0 and not tp.error}
    if not found:
        raise Unread(f"the group {group} has committed no offset on {topic}")
    return found


def connector_of(conn: ConnectionSettings, source: PipelineSource, topic: str
                 ) -> SinkConnector:
    """The connector's configuration and tasks; one that does not read ``topic`` is unread."""
    assert source.connect is not None and source.connector is not None
    name = urllib.parse.quote(source.connector, safe="")
    what = "Kafka Connect"
    config = get_json(source.connect, f"/connectors/{name}/config", conn.timeout, what, {})
    if not config:
        raise Unread(f"{source.connect.base} has no connector {source.connector}")
    status = get_json(source.connect, f"/connectors/{name}/status", conn.timeout, what, {})
    listed = [t.strip() for t in str(config.get("topics") or "").split(",") if t.strip()]
    if listed and topic not in listed:
        raise Unread(f"{source.connector} reads {', '.join(listed)}, not {topic}")
    return sink_connector(source.connector, config, status)


def dead_letters(conn: ConnectionSettings, sink: SinkConnector, topic: str,
                 deadline: Deadline) -> Mapping[tuple[int, int], DeadLetter]:
    """The dead letter queue's records of ``topic``, by their source coordinates; empty
    when the connector has no queue (nothing can have been dead-lettered)."""
    if sink.dead_letter_topic is None:
        return {}
    if not sink.context_headers:
        raise Unread(f"{sink.dead_letter_topic} is written without context headers "
                     "(errors.deadletterqueue.context.headers.enable=false): its records "
                     "name no topic record")
    read = read_whole(conn, sink.dead_letter_topic, deadline)
    found = {}
    for msg in read.records:
        letter = dead_letter(msg.headers(), topic, sink.name)
        if letter is not None:
            found[(letter.partition, letter.offset)] = letter
    if read.capped:
        raise Unread(f"{sink.dead_letter_topic} holds more than {RECORD_CAP:,} records: "
                     "not read whole")
    return found


def restarts(conn: ConnectionSettings, status_topic: str, connector: str,
             deadline: Deadline) -> tuple[tuple[Any, ...], bool]:
    """The connector's task restarts in the status topic, and whether its history is
    whole (compaction may have removed records; a capped read is not whole either)."""
    read = read_whole(conn, status_topic, deadline)
    by_partition: dict[int, list[StatusRecord]] = {}
    for msg in read.records:
        key = msg.key()
        by_partition.setdefault(msg.partition(), []).append(StatusRecord(
            key.decode("utf-8", "replace") if key else "", msg.value(),
            msg.timestamp()[1], msg.offset()))
    history = combined(task_history(records, connector) for records in by_partition.values())
    return history.restarts, history.complete and not read.capped


def read_whole(conn: ConnectionSettings, topic: str, deadline: Deadline) -> Capped:
    """``topic`` from each partition's start to its end as it is now, up to
    :data:`RECORD_CAP` records; one not read whole by ``deadline`` is :class:`Unread`."""
    session = AdminSession(conn)
    metadata = session.admin.list_topics(topic=topic, timeout=conn.timeout)
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        raise Unread(f"no topic {topic}" + (f" ({found.error.str()})"
                                            if found is not None and found.error else ""))
    partitions = sorted(found.partitions)
    starts = session.list_offsets(topic, partitions, "earliest")
    ends = session.list_offsets(topic, partitions, "latest")
    segments = {p: (starts[p], ends[p]) for p in partitions if ends[p] > starts[p]}
    records: list[Any] = []
    for msg in _records(conn, topic, segments, deadline):
        records.append(msg)
        if len(records) >= RECORD_CAP:
            return Capped(records, capped=True)
    return Capped(records, capped=False)


def _records(conn: ConnectionSettings, topic: str, segments: dict[int, tuple[int, int]],
             deadline: Deadline) -> Iterator[Any]:
    """The records of each ``partition -> [start, end)`` segment; not all read by
    ``deadline``: :class:`Unread`."""
    if not segments:
        return
    consumer = new_consumer(conn, ErrorCollector(), **{
        "group.id": "kaudit-reconcile-pipeline", "enable.auto.commit": False,
        "enable.partition.eof": True, "isolation.level": "read_uncommitted"})
    try:
        reader = SegmentReader(consumer, topic, segments)
        yield from reader.records(deadline)
        if reader.left:
            raise Unread(f"{topic} not read to its end within {deadline.seconds:g}s")
    finally:
        consumer.close()


def record_times(conn: ConnectionSettings, topic: str, places: set[tuple[int, int]],
                 bound: float) -> dict[tuple[int, int], int]:
    """The timestamps (epoch ms) of the records at these (partition, offset) places, read
    from each partition's first place to its last, up to :data:`RECORD_CAP` records; those
    not read within ``bound`` seconds are left out."""
    deadline = Deadline(bound)
    segments: dict[int, tuple[int, int]] = {}
    for partition, offset in places:
        start, end = segments.get(partition, (offset, offset + 1))
        segments[partition] = (min(start, offset), max(end, offset + 1))
    found: dict[tuple[int, int], int] = {}
    try:
        for n, msg in enumerate(_records(conn, topic, segments, deadline)):
            if (msg.partition(), msg.offset()) in places:
                found[(msg.partition(), msg.offset())] = msg.timestamp()[1]
            if n + 1 >= RECORD_CAP or len(found) == len(places):
                break
    except (Unread, KauditError):
        pass  # what was read is kept; the rest is classified without a time
    return found
