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
from kaudit.errors import ConnectionFailure
from kaudit.waiting import Deadline

#: Seconds at least to spend reading record times (the connection timeout if longer).
PEEK_SECONDS = 5.0
#: Rounds of record-time reads: one position per partition each, so as many as the most
#: distinct committed offsets any lagging partition has among its groups.
PEEK_ROUNDS = 10


def read_offsets(session: AdminSession, partitions: list[tuple[str, int]],
                 unreadable: list[str], deadline: Deadline) -> tuple[PartitionOffsets, ...]:
    """Log start, high watermark and last stable offset of every partition; a partition
    that does not answer (deleted meanwhile, leader lost or frozen) by ``deadline`` goes to
    ``unreadable``."""
    failed: dict[tuple[str, int], str] = {}
    starts = session.list_offsets_of(partitions, "earliest", failed=failed, deadline=deadline)
    ends = session.list_offsets_of(partitions, "latest", failed=failed, deadline=deadline)
    stable = session.list_offsets_of(partitions, "latest", read_committed=True, failed=failed,
                                     deadline=deadline)
    for (t, p), why in sorted(failed.items()):
        unreadable.append(f"offsets of {t}-{p}: {why}")
    read = [tp for tp in partitions if tp in starts and tp in ends and tp in stable]
    held = {tp: stable[tp] for tp in read if stable[tp] < ends[tp]}
    since = times_at(session, {(t, p, o) for (t, p), o in held.items()}, unreadable,
                   "the start of an open transaction", deadline)
    return tuple(PartitionOffsets(topic=t, partition=p, log_start=starts[(t, p)],
                                  high_watermark=ends[(t, p)], last_stable=stable[(t, p)],
                                  open_since_ms=since.get((t, p, stable[(t, p)])))
                 for t, p in read)


def times_at(session: AdminSession, wanted: set[tuple[str, int, int]], unreadable: list[str],
           what: str, deadline: Deadline) -> dict[tuple[str, int, int], int]:
    """The record time at each (topic, partition, offset), read in rounds of one offset per
    partition; what stays unread is said in ``unreadable``."""
    # PEEK_SECONDS at least, even past the deadline: a consumer needs a moment to start.
    within = max(PEEK_SECONDS, min(session.settings.timeout, deadline.left()))
    times: dict[tuple[str, int, int], int] = {}
    left = sorted(wanted)
    for _ in range(PEEK_ROUNDS):
        if not left:
            break
        batch: dict[tuple[str, int], int] = {}
        for t, p, o in left:
            batch.setdefault((t, p), o)
        answered = session.record_times(batch, within)
        for (t, p), stamp in answered.items():
            if stamp is not None:
                times[(t, p, batch[(t, p)])] = stamp
        done = {(t, p, o) for (t, p), o in batch.items() if (t, p) in answered}
        unanswered = [(t, p, o) for (t, p), o in batch.items() if (t, p) not in answered]
        left = [x for x in left if x not in done and x not in unanswered]
        if unanswered:
            t, p, o = unanswered[0]
            unreadable.append(f"the record times of {len(unanswered)} position(s), e.g. "
                              f"{t}-{p} at offset {o} ({what}): no answer within {within:g}s")
    if left:
        t, p, o = left[0]
        unreadable.append(f"the record times of {len(left)} more position(s), e.g. {t}-{p} "
                          f"at offset {o} ({what}): more than {PEEK_ROUNDS} per partition")
    return times


def read_groups(session: AdminSession, offsets: tuple[PartitionOffsets, ...],
                unreadable: list[str], deadline: Deadline) -> tuple[ConsumerGroup, ...]:
    """Every consumer group with its committed offsets (see the module docstring), within
    ``deadline`` (a second at least per request). A broker that does not answer the
    listing in time is named in ``unreadable``: its groups are missing, not guessed."""
    # Asked of every broker; librdkafka gives up on a silent one at the request timeout,
    # a second before kaudit's own wait, and returns the others' groups with its error.
    listed = session.wait(session.admin.list_consumer_groups(
        request_timeout=max(1.0, deadline.left() - 1)), within=max(2.0, deadline.left()))
    ids = sorted(g.group_id for g in listed.valid)
    for err in listed.errors:  # KafkaError or KafkaException, by client version
        text = err.str() if hasattr(err, "str") else kafka_message(err)
        if "Timed out" in text:
            text = f"no answer within {deadline.seconds:g}s"
        unreadable.append(f"consumer groups of a broker: {text}")
    if not ids:
        return ()
    descriptions = _each(session, session.admin.describe_consumer_groups(
        ids, request_timeout=max(1.0, deadline.left())), "description", unreadable, deadline)
    # One request per group (the API takes one at a time), all sent before any is awaited.
    pending: dict[str, Any] = {}
    for group_id in ids:
        request = [client.ConsumerGroupTopicPartitions(group_id)]
        pending.update(session.admin.list_consumer_group_offsets(
            request, request_timeout=max(1.0, deadline.left())))
    committed = {group_id: list(answer.topic_partitions or []) for group_id, answer
                 in _each(session, pending, "offsets", unreadable, deadline).items()}
    ends = {(o.topic, o.partition): o for o in offsets}
    # Each group's own position: groups on one partition sit at different offsets.
    positions = {(tp.topic, tp.partition, tp.offset) for tps in committed.values()
                 for tp in tps if tp.offset >= 0 and (tp.topic, tp.partition) in ends
                 and ends[(tp.topic, tp.partition)].log_start <= tp.offset
                 < ends[(tp.topic, tp.partition)].high_watermark}
    unread_since = times_at(session, positions, unreadable, "a lagging group's next record",
                          deadline)
    groups = []
    for group_id in ids:
        if group_id not in descriptions or group_id not in committed:
            continue
        described = descriptions[group_id]
        found = {(tp.topic, tp.partition): GroupOffset(
            topic=tp.topic, partition=tp.partition,
            committed=tp.offset if tp.offset >= 0 else None,
            unread_since_ms=unread_since.get((tp.topic, tp.partition, tp.offset))
            if tp.offset >= 0 else None) for tp in committed[group_id]}
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
          unreadable: list[str], deadline: Deadline) -> dict[str, Any]:
    """Each group's answer; a group the credentials may not describe, or whose coordinator
    does not answer in time, goes to unreadable."""
    out = {}
    for group_id, future in futures.items():
        try:
            out[group_id] = session.outcome(future, max(1.0, deadline.left()))
        except ConnectionFailure:
            if session.collector.fatal():
                raise
            unreadable.append(f"{what} of consumer group {group_id}: no answer within "
                              f"{deadline.seconds:g}s")
        except client.KafkaException as exc:
            text = kafka_message(exc)
            if "AUTHORIZATION" in text.upper() or "authoriz" in text:
                unreadable.append(f"{what} of consumer group {group_id}: not authorized")
            else:
                unreadable.append(f"{what} of consumer group {group_id}: {text}")
    return out
