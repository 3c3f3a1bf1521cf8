"""Read a live cluster into a :class:`ClusterSnapshot`.

Round trips: one DescribeCluster, one Metadata request for every topic and
partition, and DescribeConfigs for topics (in batches sent concurrently)
and for each broker. A cluster of thousands of topics is read in seconds.
What the credentials may not read becomes ``snapshot.unreadable`` (check
reports it as a finding) instead of an error.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from kaudit.cluster import client
from kaudit.cluster.client import AdminSession, kafka_message
from kaudit.cluster.model import (
    ClusterSnapshot,
    ConfigMap,
    ConfigSource,
    ConfigValue,
    ConsumerGroup,
    PartitionOffsets,
    PartitionState,
    Topic,
    freeze_configs,
    is_internal_topic,
)
from kaudit.cluster.protocol import EligibleLeaders, ProtocolRead, read_protocol
from kaudit.connect.settings import ConnectionSettings
from kaudit.waiting import Deadline

TOPIC_BATCH = 500
"""Topics per DescribeConfigs request: large enough to be few, small enough to be quick."""

UNKNOWN_TOPIC_TRIES = 3
"""DescribeConfigs rounds for a topic the brokers do not know (created or deleted just now)."""

_AUTH_ERRORS = ("TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED",
                "GROUP_AUTHORIZATION_FAILED")


def _source_names() -> dict[int, ConfigSource]:
    names = {}
    for member in client.ConfigSource:
        try:
            names[int(member.value)] = ConfigSource(member.name)
        except ValueError:
            names[int(member.value)] = ConfigSource.UNKNOWN_CONFIG
    return names


def _configs(entries: Mapping[str, Any], sources: dict[int, ConfigSource]) -> ConfigMap:
    # confluent-kafka hands the source over as a plain int; map it once per code.
    unknown = ConfigSource.UNKNOWN_CONFIG
    return freeze_configs({
        name: ConfigValue(name=name, value=None if e.is_sensitive else e.value,
                          source=sources.get(int(e.source), unknown),
                          sensitive=bool(e.is_sensitive))
        for name, e in entries.items()
    })


HIDDEN_SECURITY_CONFIG = "allow.everyone.if.no.acl.found"


def _error_name(cause: BaseException) -> str:
    """The Kafka error code's name of a KafkaException (``""`` when there is none)."""
    arg: Any = cause.args[0] if cause.args else None
    return str(arg.name()) if hasattr(arg, "name") else ""


def _describe_configs(session: AdminSession, restype: Any, names: Iterable[str],
                      unreadable: list[str], kind: str,
                      deleted: set[str] | None = None) -> dict[str, ConfigMap]:
    """DescribeConfigs for many resources, batched; denied ones go to ``unreadable``.

    With ``deleted``, a topic the brokers do not know is asked for again (a topic just
    created may not have reached the broker that answers yet); one still unknown after
    that was deleted since the metadata was read, and goes to ``deleted``.
    """
    ConfigResource, KafkaException = client.ConfigResource, client.KafkaException

    # Kafka answers a broker's configs only from that broker: one resource per call.
    batch_size = 1 if restype == client.ResourceType.BROKER else TOPIC_BATCH
    sources = _source_names()
    out: dict[str, ConfigMap] = {}
    pending = list(names)
    for attempt in range(UNKNOWN_TOPIC_TRIES):
        if attempt:
            time.sleep(0.5)
        futures: dict[str, Any] = {}
        for start in range(0, len(pending), batch_size):
            batch = [ConfigResource(restype, n) for n in pending[start:start + batch_size]]
            for resource, fut in session.admin.describe_configs(
                    batch, request_timeout=session.settings.timeout).items():
                futures[resource.name] = fut
        pending = []
        for name, fut in futures.items():
            try:
                out[name] = _configs(session.wait(fut), sources)
            except Exception as exc:
                cause = exc.__cause__ or exc.__context__ or exc
                text = kafka_message(cause) if isinstance(cause, KafkaException) else str(exc)
                if any(code in text for code in _AUTH_ERRORS) or "authoriz" in text.lower():
                    unreadable.append(f"configs of {kind} {name}: not authorized")
                elif deleted is not None and _error_name(cause) == "UNKNOWN_TOPIC_OR_PART":
                    pending.append(name)
                else:
                    raise
        if not pending:
            break
    if deleted is not None:
        deleted.update(pending)
    return out


def read_snapshot(settings: ConnectionSettings, groups: bool = False) -> ClusterSnapshot:
    """Read brokers, broker configs, topics, topic configs and partition states, each
    partition's ELR and the finalized features (:mod:`kaudit.cluster.protocol`); with
    ``groups``, also every partition's offsets and the consumer groups
    (:mod:`kaudit.cluster.groups`)."""
    return _read(AdminSession(settings), groups)


def _read(session: AdminSession, groups: bool) -> ClusterSnapshot:
    ResourceType = client.ResourceType

    cluster_id, controller_id, brokers = session.describe_identity()
    metadata = session.list_topics()
    # Features and ELR come from kafka-python; asked now, in threads, from every broker at
    # once, they are read while librdkafka reads the configs.
    protocol: list[ProtocolRead] = []
    deadline = Deadline(session.settings.timeout)
    reading = threading.Thread(target=lambda: protocol.append(read_protocol(
        session.settings, brokers, sorted(metadata.topics), deadline)), daemon=True)
    reading.start()
    unreadable: list[str] = []
    broker_configs = _describe_configs(session, ResourceType.BROKER,
                                       [str(b.id) for b in brokers], unreadable, "broker")
    for broker_id, configs in broker_configs.items():
        hidden = configs.get(HIDDEN_SECURITY_CONFIG)
        if hidden is not None and hidden.value is None:
            # Kafka shows settings it does not define itself (authorizer options) as
            # sensitive, so their value cannot be judged from outside.
            unreadable.append(f"the value of {HIDDEN_SECURITY_CONFIG} on broker {broker_id} "
                              "(Kafka hides it; check server.properties)")
    deleted: set[str] = set()
    topic_configs = _describe_configs(session, ResourceType.TOPIC, sorted(metadata.topics),
                                      unreadable, "topic", deleted)
    reading.join(max(0.0, deadline.left()) + 1)
    read = protocol[0] if protocol else ProtocolRead(
        features_unread="no broker answered in time", elr_unread="no broker answered in time")
    elr = read.elr or {}
    topics = []
    for name in sorted(set(metadata.topics) - deleted):  # deleted while being read: gone
        meta = metadata.topics[name]
        if meta.error is not None and meta.error.name() in _AUTH_ERRORS:
            unreadable.append(f"metadata of topic {name}: not authorized")
            continue
        partitions = tuple(_partition(name, p, elr)
                           for p in sorted(meta.partitions.values(), key=lambda p: p.id))
        topics.append(Topic(
            name=name,
            internal=is_internal_topic(name),
            partition_count=len(partitions),
            replication_factor=max((len(p.replicas) for p in partitions), default=0),
            configs=topic_configs.get(name, freeze_configs({})),
            partitions=partitions,
        ))
    offsets: tuple[PartitionOffsets, ...] = ()
    consumer_groups: tuple[ConsumerGroup, ...] | None = None
    if groups:
        from kaudit.cluster.groups import read_groups, read_offsets

        offsets = read_offsets(session, [(t.name, p.partition) for t in topics
                                         if not t.internal for p in t.partitions
                                         if p.leader is not None], unreadable)
        consumer_groups = read_groups(session, offsets, unreadable)
    return ClusterSnapshot(
        cluster_id=cluster_id,
        controller_id=controller_id,
        brokers=brokers,
        broker_configs=MappingProxyType({int(k): v for k, v in broker_configs.items()}),
        topics=tuple(topics),
        taken_at=datetime.now(UTC).isoformat(timespec="seconds"),
        origin="live",
        live=True,
        unreadable=tuple(unreadable),
        offsets=offsets,
        groups=consumer_groups,
        features=None if read.features is None else MappingProxyType(read.features),
        features_unread=read.features_unread,
        elr_unread=read.elr_unread,
    )


def _partition(topic: str, meta: Any, elr: Mapping[tuple[str, int], EligibleLeaders]
               ) -> PartitionState:
    eligible = elr.get((topic, meta.id))
    return PartitionState(partition=meta.id, leader=meta.leader if meta.leader >= 0 else None,
                          replicas=tuple(meta.replicas), isr=tuple(meta.isrs),
                          elr=None if eligible is None else eligible.elr,
                          last_known_elr=None if eligible is None else eligible.last_known_elr)
