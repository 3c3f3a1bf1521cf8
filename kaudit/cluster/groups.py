"""Read consumer groups and the offsets they are judged against.

For every partition: log start, high watermark and last stable offset (three ListOffsets
rounds for the whole cluster). For every consumer group: its state, members and committed
offsets. Then, only where it matters, one record's timestamp: at a group's committed offset
when the group lags (how old its oldest unread record is, against retention), and at the
last stable offset when a transaction is open (how long read_committed readers have been
held back). What the credentials may not read goes to ``unreadable``.
"""

from __future__ import annotations

from typing import Any

from kaudit.cluster import client
from kaudit.cluster.client import AdminSession, kafka_message
from kaudit.cluster.model import ConsumerGroup, GroupOffset, PartitionOffsets

#: Seconds to spend reading the timestamps of lagging and held-back partitions.
PEEK_SECONDS = 5.0


def read_offsets(session: AdminSession,
                 partitions: list[tuple[str, int]]) -> tuple[PartitionOffsets, ...]:
    """Log start, high watermark and last stable offset of every partition."""
    starts = session.list_offsets_of(partitions, "earliest")
    ends = session.list_offsets_of(partitions, "latest")
    stable = session.list_offsets_of(partitions, "latest", read_committed=True)
    held = {tp: stable[tp] for tp in partitions if stable[tp] < ends[tp]}
    since = session.record_times(held, PEEK_SECONDS)
    return tuple(PartitionOffsets(topic=t, partition=p, log_start=starts[(t, p)],
                                  high_watermark=ends[(t, p)], last_stable=stable[(t, p)],
                                  open_since_ms=since.get((t, p)))
                 for t, p in partitions)


def read_groups(session: AdminSession, offsets: tuple[PartitionOffsets, ...],
                unreadable: list[str]) -> tuple[ConsumerGroup, ...]:
    """Every consumer group with its committed offsets (see the module docstring)."""
    listed = session.wait(session.admin.list_consumer_groups(
        request_timeout=session.settings.timeout))
    ids = sorted(g.group_id for g in listed.valid)
    for err in listed.errors:  # KafkaError or KafkaException, by client version
        text = err.str() if hasattr(err, "str") else kafka_message(err)
        unreadable.append(f"consumer groups of a broker: {text}")
    if not ids:
        return ()
    descriptions = _each(session, session.admin.describe_consumer_groups(
        ids, request_timeout=session.settings.timeout), "description", unreadable)
    # One request per group (the API takes one at a time), all sent before any is awaited.
    pending: dict[str, Any] = {}
    for group_id in ids:
        request = [client.ConsumerGroupTopicPartitions(group_id)]
        pending.update(session.admin.list_consumer_group_offsets(
            request, request_timeout=session.settings.timeout))
    committed = {group_id: list(answer.topic_partitions or [])
                 for group_id, answer in _each(session, pending, "offsets", unreadable).items()}
    ends = {(o.topic, o.partition): o for o in offsets}
    positions = {(tp.topic, tp.partition): tp.offset for tps in committed.values()
                 for tp in tps if tp.offset >= 0 and (tp.topic, tp.partition) in ends
                 and ends[(tp.topic, tp.partition)].log_start <= tp.offset
                 < ends[(tp.topic, tp.partition)].high_watermark}
    unread_since = session.record_times(positions, PEEK_SECONDS)
    groups = []
    for group_id in ids:
        if group_id not in descriptions or group_id not in committed:
            continue
        described = descriptions[group_id]
        found = {(tp.topic, tp.partition): GroupOffset(
            topic=tp.topic, partition=tp.partition,
            committed=tp.offset if tp.offset >= 0 else None,
            unread_since_ms=unread_since.get((tp.topic, tp.partition)) if tp.offset >= 0
            else None) for tp in committed[group_id]}
        # Partitions the members read but never committed on: auto.offset.reset's choice.
        for member in described.members or ():
            assignment = getattr(member, "assignment", None)
            for tp in getattr(assignment, "topic_partitions", None) or ():
                found.setdefault((tp.topic, tp.partition),
                                 GroupOffset(topic=tp.topic, partition=tp.partition,
                                             committed=None))
        group_offsets = tuple(found[k] for k in sorted(found))
        groups.append(ConsumerGroup(group_id=group_id, state=_state(described),
                                    members=len(described.members or ()),
                                    offsets=group_offsets))
    return tuple(groups)


def _state(described: Any) -> str:
    state = getattr(described, "state", None)
    return str(getattr(state, "name", state or "UNKNOWN"))


def _each(session: AdminSession, futures: dict[str, Any], what: str,
          unreadable: list[str]) -> dict[str, Any]:
    """Each group's answer; a group the credentials may not describe goes to unreadable."""
    out = {}
    for group_id, future in futures.items():
        try:
            out[group_id] = session.outcome(future, session.settings.timeout)
        except client.KafkaException as exc:
            text = kafka_message(exc)
            if "AUTHORIZATION" in text.upper() or "authoriz" in text:
                unreadable.append(f"{what} of consumer group {group_id}: not authorized")
            else:
                unreadable.append(f"{what} of consumer group {group_id}: {text}")
    return out
