"""Share groups (KIP-932) as their coordinators describe them: which groups each broker
coordinates (ListGroups filtered to type ``share``), their members and assignments
(ShareGroupDescribe) and each share-partition's start offset and lag
(DescribeShareGroupOffsets). Neither confluent-kafka nor kafka-python asks these; the
messages' layouts ship with kaudit (``schemas/``) and kafka-python encodes them.

A broker lists only the groups it coordinates, so each broker is asked on its own client
(as :mod:`kaudit.cluster.protocol` does, a frozen broker stalls only its own groups), and
its groups are described by it. What a broker did not answer comes back with why.
"""

from __future__ import annotations

import contextlib
import threading
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from types import SimpleNamespace
from typing import Any

from kaudit.cluster.model import Broker, ShareGroup, ShareMember, SharePartition
from kaudit.cluster.protocol import (
    client_of,
    error_name,
    load_kafka_python,
    raise_for,
    send_to,
    why_not_read,
)
from kaudit.cluster.protocol_config import kafka_python_config
from kaudit.connection.redact import redact
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import InputError
from kaudit.waiting import Deadline

SCHEMAS = "kaudit.cluster.schemas"
GROUP_KEY, SHARE_KEY = 0, 2
"""FindCoordinator's key types: a group's coordinator; a share-partition's share
coordinator (the leader of its ``__share_group_state`` partition)."""


@cache
def messages() -> SimpleNamespace:
    """The four message classes, declared once (kafka-python registers each response class
    by API key, weakly: they must live as long as the process)."""
    from kafka.protocol.api_message import ApiMessage

    made = {name: types.new_class(name, (ApiMessage,), {"load_json": SCHEMAS}) for name in (
        "ShareGroupDescribeRequest", "ShareGroupDescribeResponse",
        "DescribeShareGroupOffsetsRequest", "DescribeShareGroupOffsetsResponse")}
    return SimpleNamespace(**made)


@dataclass
class ShareGroupsRead:
    """The share groups every answering broker coordinates, and why the others' were not
    read."""

    groups: list[ShareGroup] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)


@dataclass
class _Ask:
    broker: Broker
    client: Any = None
    groups: list[ShareGroup] | None = None
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)


def read_share_groups(settings: ConnectionSettings, brokers: tuple[Broker, ...],
                      deadline: Deadline) -> ShareGroupsRead:
    """Every broker's share groups, described, within ``deadline``."""
    out = ShareGroupsRead()
    try:
        config = kafka_python_config(settings)
    except (InputError, ImportError, OSError) as exc:  # OSError: a CA or key file (TLS)
        out.unread.append(f"share groups: not read: {redact(str(exc))}")
        return out
    load_kafka_python()
    messages()
    asks = [_Ask(b) for b in brokers]
    for ask in asks:
        threading.Thread(target=_ask_broker, args=(ask, config, deadline), daemon=True,
                         name=f"kaudit-share-{ask.broker.id}").start()
    for ask in asks:
        ask.done.wait(deadline.left() + 1)
        if ask.groups is not None:
            out.groups.extend(ask.groups)
        else:
            out.unread.append(f"share groups coordinated by broker {ask.broker.id}: "
                              f"{ask.error or why_not_read(TimeoutError(), ask.broker, deadline)}")
        threading.Thread(target=_close_when_done, args=(ask,), daemon=True).start()
    out.groups.sort(key=lambda g: g.group_id)
    return out


def _ask_broker(ask: _Ask, config: dict[str, Any], deadline: Deadline) -> None:
    from kafka.protocol.admin import ListGroupsRequest

    broker = ask.broker
    try:
        ask.client = client_of(broker, config, deadline)
        listed = send_to(ask.client, broker.id,
                         ListGroupsRequest(states_filter=[], types_filter=["share"],
                                           min_version=5), deadline)
        raise_for(listed.error_code, "ListGroups")
        ids = sorted(g.group_id for g in listed.groups)
        if not ids:
            ask.groups = []
            return
        m = messages()
        described = send_to(ask.client, broker.id, m.ShareGroupDescribeRequest(
            group_ids=ids, include_authorized_operations=False, min_version=1), deadline)
        offsets = send_to(ask.client, broker.id, _offsets_request(ids), deadline)
        ask.groups = share_groups(described, offsets, broker.id)
    except Exception as exc:
        ask.error = why_not_read(exc, broker, deadline)
    finally:
        ask.done.set()


def _offsets_of(group: Any) -> tuple[list[SharePartition], str | None]:
    """One group's share-partitions in a DescribeShareGroupOffsets answer, and why some
    are missing (None: none is)."""
    found: list[SharePartition] = []
    why = f"offsets: {error_name(group.error_code)}" if group.error_code else None
    for topic in group.topics:
        for p in topic.partitions:
            if p.error_code:
                why = f"offsets of {topic.topic_name}-{p.partition_index}: " \
                      f"{error_name(p.error_code)}"
                continue
            lag = getattr(p, "lag", -1)  # absent before v1 (Kafka 4.1)
            found.append(SharePartition(
                topic=topic.topic_name, partition=p.partition_index,
                start_offset=p.start_offset if p.start_offset >= 0 else None,
                leader_epoch=p.leader_epoch if p.leader_epoch >= 0 else None,
                lag=lag if lag is not None and lag >= 0 else None))
    return sorted(found, key=lambda s: (s.topic, s.partition)), why


def _offsets_request(groups: Sequence[str]) -> Any:
    m = messages()
    return m.DescribeShareGroupOffsetsRequest(groups=[
        m.DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(
            group_id=g, topics=None) for g in groups])


def share_offsets(settings: ConnectionSettings, coordinator: Broker, group: str,
                  deadline: Deadline) -> list[SharePartition]:
    """``group``'s share-partitions (start offset, lag) as its coordinator answers now;
    raises when it does not answer for all of them."""
    config = kafka_python_config(settings)
    load_kafka_python()
    client = client_of(coordinator, config, deadline)
    try:
        answer = send_to(client, coordinator.id, _offsets_request([group]), deadline)
    finally:
        with contextlib.suppress(Exception):
            client.close()
    (entry,) = answer.groups
    found, why = _offsets_of(entry)
    if why is not None:
        raise RuntimeError(why)
    return found


def share_groups(described: Any, offsets: Any, coordinator: int) -> list[ShareGroup]:
    """The groups in a ShareGroupDescribe answer with their share-partitions from a
    DescribeShareGroupOffsets answer; a group or partition the coordinator refused carries
    why instead."""
    partitions = {group.group_id: _offsets_of(group) for group in offsets.groups}
    out = []
    for g in described.groups:
        if g.error_code:
            out.append(ShareGroup(group_id=g.group_id, state="Unknown", coordinator=coordinator,
                                  unread=f"described: {error_name(g.error_code)}"))
            continue
        found, why = partitions.get(g.group_id, ([], "offsets: not answered"))
        out.append(ShareGroup(
            group_id=g.group_id, state=g.group_state, coordinator=coordinator,
            group_epoch=g.group_epoch, assignment_epoch=g.assignment_epoch,
            members=tuple(sorted((ShareMember(
                member_id=m.member_id, client_id=m.client_id, host=m.client_host.lstrip("/"),
                member_epoch=m.member_epoch, subscribed=tuple(sorted(m.subscribed_topic_names)),
                assignment=tuple(sorted((t.topic_name, tuple(sorted(t.partitions)))
                                        for t in m.assignment.topic_partitions)))
                for m in g.members), key=lambda m: m.member_id)),
            partitions=tuple(found), unread=why))
    return out


def _close_when_done(ask: _Ask) -> None:
    ask.done.wait()
    if ask.client is not None:
        with contextlib.suppress(Exception):  # a frozen broker's client: nothing to report
            ask.client.close()


def find_coordinator(settings: ConnectionSettings, brokers: Sequence[Broker], key_type: int,
                     key: str, deadline: Deadline) -> Broker:
    """The broker that coordinates ``key`` (FindCoordinator v6, ``key_type``
    :data:`GROUP_KEY` or :data:`SHARE_KEY`), asked of each of ``brokers`` in turn until one
    answers; raises with every broker's reason when none does."""
    from kafka.protocol.metadata import FindCoordinatorRequest

    config = kafka_python_config(settings)
    load_kafka_python()
    said = []
    for broker in brokers:
        client = None
        try:
            client = client_of(broker, config, deadline)
            answer = send_to(client, broker.id, FindCoordinatorRequest(
                key_type=key_type, coordinator_keys=[key], min_version=4), deadline)
            (found,) = answer.coordinators
            raise_for(found.error_code, "FindCoordinator")
            return Broker(int(found.node_id), found.host, int(found.port))
        except Exception as exc:
            said.append(why_not_read(exc, broker, deadline))
        finally:
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close()
    raise RuntimeError(f"no coordinator found for {key}: " + "; ".join(said))


def share_state_key(group: str, topic_id: str, partition: int) -> str:
    """The share coordinator's key of a share-partition: ``group:topicId:partition``, the
    topic id in Kafka's own spelling (URL-safe base64 without padding)."""
    return f"{group}:{topic_id.replace('/', '_').replace('+', '-').rstrip('=')}:{partition}"
