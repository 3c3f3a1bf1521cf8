"""Read a live cluster into a :class:`ClusterSnapshot`.

Round trips: one DescribeCluster, one Metadata request for every topic and
partition, and DescribeConfigs for topics (in batches sent concurrently)
and for each broker; beside them, in threads, the features, the ELR and the
controller quorum (DescribeQuorum). A cluster of thousands of topics is read in seconds.
What the credentials may not read becomes ``snapshot.unreadable`` (check
reports it as a finding) instead of an error.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, TypeVar

from kaudit.cluster import client
from kaudit.cluster.client import AdminSession, kafka_message
from kaudit.cluster.model import (
    AclBinding,
    Broker,
    ClusterSnapshot,
    ConfigMap,
    ConfigSource,
    ConfigValue,
    ConsumerGroup,
    PartitionOffsets,
    PartitionState,
    ShareGroup,
    Topic,
    freeze_configs,
    is_internal_topic,
)
from kaudit.cluster.protocol import (
    EligibleLeaders,
    ProtocolRead,
    describe_acls_error,
    load_kafka_python,
    read_protocol,
)
from kaudit.cluster.protocol_quorum import NOT_AUTHORIZED, QuorumRead, read_quorum
from kaudit.cluster.protocol_share import ShareGroupsRead, read_share_groups
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import ConnectionFailure
from kaudit.waiting import Deadline

T = TypeVar("T")

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


def _configs(entries: Mapping[str, Any], sources: dict[int, ConfigSource],
             made: dict[tuple[str, str | None, int, bool], ConfigValue]) -> ConfigMap:
    """``made``: the values made so far in this read, shared (they are immutable): most
    topics inherit the same defaults, and 2,000 topics have 120,000 entries."""
    unknown = ConfigSource.UNKNOWN_CONFIG
    out = {}
    for name, e in entries.items():
        sensitive = bool(e.is_sensitive)
        # confluent-kafka hands the source over as a plain int; map it once per code.
        key = (name, None if sensitive else e.value, int(e.source), sensitive)
        value = made.get(key)
        if value is None:
            value = made[key] = ConfigValue(name=name, value=key[1],
                                            source=sources.get(key[2], unknown),
                                            sensitive=sensitive)
        out[name] = value
    return freeze_configs(out)


HIDDEN_SECURITY_CONFIG = "allow.everyone.if.no.acl.found"


def _error_name(cause: BaseException) -> str:
    """The Kafka error code's name of a KafkaException (``""`` when there is none)."""
    arg: Any = cause.args[0] if cause.args else None
    return str(arg.name()) if hasattr(arg, "name") else ""


def _describe_configs(session: AdminSession, restype: Any, names: Iterable[str],
                      unreadable: list[str], kind: str, deadline: Deadline,
                      deleted: set[str] | None = None) -> dict[str, ConfigMap]:
    """DescribeConfigs for many resources, batched; denied ones go to ``unreadable``, and
    so do those no broker answered for by ``deadline`` (a frozen broker still registered
    answers nothing, and its configs are asked of it alone).

    With ``deleted``, a topic the brokers do not know is asked for again (a topic just
    created may not have reached the broker that answers yet); one still unknown after
    that was deleted since the metadata was read, and goes to ``deleted``.
    """
    ConfigResource, KafkaException = client.ConfigResource, client.KafkaException

    # Kafka answers a broker's configs only from that broker: one resource per call, with
    # the whole deadline. Topics' configs come from whichever broker librdkafka picks; if
    # that one is silent, a shorter try leaves time to ask again (another broker).
    broker = restype == client.ResourceType.BROKER
    batch_size = 1 if broker else TOPIC_BATCH
    sources = _source_names()
    made: dict[tuple[str, str | None, int, bool], ConfigValue] = {}
    out: dict[str, ConfigMap] = {}
    pending, unknown_tries = list(names), 0
    while pending:
        try_for = deadline.left() if broker else deadline.slice(max(2.0, deadline.seconds / 4))
        futures: dict[str, Any] = {}
        for start in range(0, len(pending), batch_size):
            batch = [ConfigResource(restype, n) for n in pending[start:start + batch_size]]
            for resource, fut in session.admin.describe_configs(
                    batch, request_timeout=max(1.0, try_for)).items():
                futures[resource.name] = fut
        pending, unknown, silent = [], [], []
        for name, fut in futures.items():
            try:
                out[name] = _configs(session.outcome(fut, max(1.0, try_for)), sources, made)
            except ConnectionFailure:  # no answer in time (or credentials refused)
                if session.collector.fatal():
                    raise
                silent.append(name)
            except KafkaException as exc:
                text = kafka_message(exc)
                if _error_name(exc) == "_TIMED_OUT":  # librdkafka's own wait (a broker)
                    silent.append(name)
                elif any(code in text for code in _AUTH_ERRORS) or "authoriz" in text.lower():
                    unreadable.append(f"configs of {kind} {name}: not authorized")
                elif deleted is not None and _error_name(exc) == "UNKNOWN_TOPIC_OR_PART":
                    unknown.append(name)
                else:
                    raise session.unreachable(exc) from None
        unknown_tries += bool(unknown)
        if deadline.expired() or broker:
            unreadable.extend(f"configs of {kind} {name}: no answer within "
                              f"{deadline.seconds:g}s" for name in silent)
            silent = []
        if unknown and unknown_tries < UNKNOWN_TOPIC_TRIES and not deadline.expired():
            time.sleep(0.5)
            pending.extend(unknown)
        elif deleted is not None:
            deleted.update(unknown)
        if silent:
            # librdkafka asks the broker its metadata names as controller; fresh metadata
            # may name a live one (a frozen broker is fenced within seconds).
            with contextlib.suppress(KafkaException):
                session.admin.list_topics(timeout=deadline.slice(1.0) or 0.1)
        pending.extend(silent)
    return out


def read_snapshot(settings: ConnectionSettings, groups: bool = False) -> ClusterSnapshot:
    """Read brokers, broker configs, topics, topic configs and partition states, each
    partition's ELR and the finalized features (:mod:`kaudit.cluster.protocol`), the
    controller quorum (:mod:`kaudit.cluster.protocol_quorum`); with
    ``groups``, also every partition's offsets and the consumer groups
    (:mod:`kaudit.cluster.groups`)."""
    return _read(AdminSession(settings), groups)


def _read(session: AdminSession, groups: bool) -> ClusterSnapshot:
    ResourceType = client.ResourceType

    deadline = Deadline(session.settings.timeout)
    cluster_id, controller_id, brokers = session.describe_identity()
    metadata = session.list_topics()
    load_kafka_python()  # before the threads below enter it
    # Slow answers overlap: the features and ELR (kafka-python) and each broker's configs
    # (a frozen broker, still registered, answers nothing until the deadline) are read in
    # threads while the topics' configs and the groups are read here.
    protocol = _in_thread(lambda: read_protocol(session.settings, brokers,
                                                sorted(metadata.topics), deadline))
    quorum_read = _in_thread(lambda: read_quorum(session.settings, brokers, deadline))
    unreadable: list[str] = []
    broker_unreadable: list[str] = []
    broker_read = _in_thread(lambda: _broker_configs(session, brokers, broker_unreadable,
                                                     deadline))
    shares = _in_thread(lambda: read_share_groups(session.settings, brokers, deadline)) \
        if groups else None
    acl_read = _in_thread(lambda: read_acls(session, brokers, deadline))
    deleted: set[str] = set()
    topic_configs = _describe_configs(session, ResourceType.TOPIC, sorted(metadata.topics),
                                      unreadable, "topic", deadline, deleted)
    read = protocol(deadline) or ProtocolRead(
        features_unread="no broker answered in time", elr_unread="no broker answered in time")
    topics = _topics(metadata, deleted, topic_configs, read.elr or {}, unreadable)
    offsets: tuple[PartitionOffsets, ...] = ()
    consumer_groups: tuple[ConsumerGroup, ...] | None = None
    if groups:
        from kaudit.cluster.groups import read_groups, read_offsets

        offsets = read_offsets(session, [(t.name, p.partition) for t in topics
                                         if not t.internal for p in t.partitions
                                         if p.leader is not None], unreadable, deadline)
        consumer_groups = read_groups(session, offsets, unreadable, deadline)
    share_groups = None if shares is None else _share_groups(
        session, shares(deadline) or ShareGroupsRead(unread=["share groups: no broker "
                                                             "answered in time"]),
        offsets, unreadable, deadline)
    broker_configs = broker_read(deadline) or {}
    quorum = quorum_read(deadline) or QuorumRead(unread="no broker answered in time")
    if quorum.unread == NOT_AUTHORIZED:  # missing ACLs are KA002's to report
        unreadable.append(f"the controller quorum ({NOT_AUTHORIZED})")
    unreadable[:0] = broker_unreadable  # the brokers' first, as they were read before
    acls, acls_unread = acl_read(deadline) or (None, f"no answer within {deadline.seconds:g}s")
    if acls_unread is not None and acls_unread != NO_AUTHORIZER:
        unreadable.append(f"the ACLs: {acls_unread}")
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
        share_groups=share_groups,
        quorum=quorum.quorum,
        quorum_unread=quorum.unread,
        acls=acls,
        acls_unread=acls_unread,
    )


def _share_groups(session: AdminSession, read: ShareGroupsRead,
                  offsets: tuple[PartitionOffsets, ...], unreadable: list[str],
                  deadline: Deadline) -> tuple[ShareGroup, ...]:
    """The share groups read, each with its group configs (DescribeConfigs on GROUP
    resources) and the time of its oldest undelivered record per partition; what was not
    read goes to ``unreadable``."""
    from kaudit.cluster.groups import times_at

    unreadable.extend(read.unread)
    configs = _describe_configs(session, client.ResourceType.GROUP,
                                [g.group_id for g in read.groups], unreadable, "group",
                                deadline) if read.groups else {}
    ends = {(o.topic, o.partition): o for o in offsets}
    waiting = {(s.topic, s.partition, s.start_offset) for g in read.groups for s in g.partitions
               if s.start_offset is not None and (s.topic, s.partition) in ends
               and ends[(s.topic, s.partition)].log_start <= s.start_offset
               < ends[(s.topic, s.partition)].high_watermark}
    since = times_at(session, waiting, unreadable, "a share group's oldest undelivered record",
                     deadline) if waiting else {}
    return tuple(replace(
        g, configs=configs.get(g.group_id, g.configs),
        partitions=tuple(replace(s, undelivered_since_ms=None if s.start_offset is None
                                 else since.get((s.topic, s.partition, s.start_offset)))
                         for s in g.partitions))
        for g in read.groups)


NO_AUTHORIZER = ("the cluster has no authorizer (Kafka answers DescribeAcls with "
                 "SECURITY_DISABLED), so no ACL is enforced")
"""Why ACLs are unread on a cluster without an authorizer: nothing to read, not a gap in
what kaudit may see (KA503 reports the missing authorizer)."""


def read_acls(session: AdminSession, brokers: tuple[Broker, ...], deadline: Deadline
              ) -> tuple[tuple[AclBinding, ...] | None, str | None]:
    """Every ACL binding, or None and why not: no authorizer, no DESCRIBE on the cluster,
    no answer by the deadline, or a binding the client library cannot decode. No binding
    at all is believed only once Kafka says so itself (:func:`describe_acls_error`)."""
    try:
        found = session.describe_acls(deadline.left())
    except ConnectionFailure:
        if session.collector.fatal():
            raise
        return None, f"no answer within {deadline.seconds:g}s"
    except client.KafkaException as exc:
        return None, acls_refused(_error_name(exc), kafka_message(exc))
    except (ValueError, TypeError) as exc:  # an operation or type librdkafka has no name for
        return None, f"confluent-kafka could not decode a binding: {exc}"
    if found:
        return tuple(sorted(_binding(b) for b in found)), None
    error, unasked = describe_acls_error(session.settings, brokers, deadline)
    if unasked is not None:
        return None, f"no binding was returned, and Kafka could not be asked why: {unasked}"
    return ((), None) if error is None else (None, acls_refused(error, ""))


def acls_refused(error: str, message: str) -> str:
    """Why the ACLs are unread, from Kafka's error for DescribeAcls."""
    if error == "SECURITY_DISABLED":
        return NO_AUTHORIZER
    if error == "CLUSTER_AUTHORIZATION_FAILED":
        return "not authorized (DescribeAcls needs DESCRIBE on the cluster)"
    return f"Kafka answered {error or 'an error'}" + (f": {message}" if message else "")


def _binding(raw: Any) -> AclBinding:
    # confluent-kafka calls the cluster resource BROKER; Kafka's tools call it CLUSTER.
    rtype = raw.restype.name
    return AclBinding(resource_type="CLUSTER" if rtype == "BROKER" else rtype,
                      resource_name=raw.name, pattern_type=raw.resource_pattern_type.name,
                      principal=raw.principal, host=raw.host, operation=raw.operation.name,
                      permission=raw.permission_type.name)


def _in_thread(read: Callable[[], T]) -> Callable[[Deadline], T | None]:
    """Start ``read`` in a thread; the returned call waits for its result until the
    deadline (and a second of grace), None if it has none by then."""
    result: list[T] = []
    thread = threading.Thread(target=lambda: result.append(read()), daemon=True)
    thread.start()

    def wait(deadline: Deadline) -> T | None:
        thread.join(deadline.left() + 1)
        return result[0] if result else None

    return wait


def _broker_configs(session: AdminSession, brokers: tuple[Broker, ...], unreadable: list[str],
                    deadline: Deadline) -> dict[str, ConfigMap]:
    configs = _describe_configs(session, client.ResourceType.BROKER,
                                [str(b.id) for b in brokers], unreadable, "broker", deadline)
    for broker_id, found in configs.items():
        hidden = found.get(HIDDEN_SECURITY_CONFIG)
        if hidden is not None and hidden.value is None:
            # Kafka shows settings it does not define itself (authorizer options) as
            # sensitive, so their value cannot be judged from outside.
            unreadable.append(f"the value of {HIDDEN_SECURITY_CONFIG} on broker {broker_id} "
                              "(Kafka hides it; check server.properties)")
    return configs


def _topics(metadata: Any, deleted: set[str], configs: dict[str, ConfigMap],
            elr: Mapping[tuple[str, int], EligibleLeaders], unreadable: list[str]
            ) -> list[Topic]:
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
            configs=configs.get(name, freeze_configs({})),
            partitions=partitions,
        ))
    return topics


def _partition(topic: str, meta: Any, elr: Mapping[tuple[str, int], EligibleLeaders]
               ) -> PartitionState:
    eligible = elr.get((topic, meta.id))
    return PartitionState(partition=meta.id, leader=meta.leader if meta.leader >= 0 else None,
                          replicas=tuple(meta.replicas), isr=tuple(meta.isrs),
                          elr=None if eligible is None else eligible.elr,
                          last_known_elr=None if eligible is None else eligible.last_known_elr)
