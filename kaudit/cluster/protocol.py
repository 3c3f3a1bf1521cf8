"""What librdkafka cannot ask Kafka: the finalized features (ApiVersions v3, KIP-584),
each partition's eligible leader replicas (DescribeTopicPartitions, KIP-966) and where a
leader epoch ends on a partition leader's log (OffsetForLeaderEpoch, KIP-101/320), read
with kafka-python in this process: no JVM, no Kafka jars.

Bounded while brokers are frozen: every broker is asked at once, each through its own
client that knows only that broker (:mod:`kaudit.cluster.broker_ask`), and the first to
answer is read from; the others are abandoned at the deadline. Nothing here is guessed:
what could not be read comes back with why.

kaudit imports kafka-python here and in the other ``protocol*`` modules only (see
tests/unit/test_architecture.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaudit.cluster.broker_ask import (
    BrokerAsk,
    Unanswered,
    ask_brokers,
    every_answer,
    first_answer,
    first_in_turn,
    unanswered,
    why_not_read,
)
from kaudit.cluster.model import Broker
from kaudit.cluster.protocol_config import (
    error_name,
    kafka_python_config,
    raise_for,
    send_to,
)
from kaudit.connection.redact import redact
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import InputError
from kaudit.waiting import Deadline

# kafka-python logs its whole configuration (passwords included) at DEBUG, and warns on
# every refused connection: none of that may reach kaudit's -v output.
logging.getLogger("kafka").setLevel(logging.CRITICAL)
logging.getLogger("kafka").propagate = False

#: metadata.version levels as Kafka names them (org.apache.kafka.server.common.MetadataVersion).
METADATA_VERSIONS = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2",
    7: "3.3-IV3", 8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0",
    13: "3.6-IV1", 14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3",
    19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2",
    25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0", 29: "4.2-IV1", 30: "4.3-IV0",
    31: "4.4-IV0",
}

PAGE_PARTITIONS = 2000
"""Partitions per DescribeTopicPartitions answer (Kafka's own default)."""


@dataclass(frozen=True)
class EligibleLeaders:
    """One partition's ELR as its controller last decided it."""

    elr: tuple[int, ...]
    """Replicas out of the ISR that still hold every acknowledged write (KIP-966)."""
    last_known_elr: tuple[int, ...]
    """ELR members that were fenced or shut down uncleanly: the likeliest to hold the
    latest data if no eligible replica is left."""


@dataclass
class ProtocolRead:
    """The features and ELR, or why each was not read."""

    features: dict[str, str] | None = None
    features_unread: str | None = None
    elr: dict[tuple[str, int], EligibleLeaders] | None = None
    elr_unread: str | None = None
    answered_by: int | None = None
    """The broker that answered."""


def load_kafka_python() -> None:
    """Import kafka-python whole, in the calling thread, before threads use it: its modules
    import one another in a circle, and two threads that enter it by different modules at
    once deadlock on Python's import locks (the share-group and feature reads did)."""
    import kafka  # its package imports the admin client, and with it the protocol
    import kafka.protocol.admin
    import kafka.protocol.api_message
    import kafka.protocol.consumer
    import kafka.protocol.metadata  # noqa: F401


def feature_levels(finalized: Iterable[tuple[str, int]], supported: Iterable[str]
                   ) -> dict[str, str]:
    """Finalized levels by feature, as Kafka's own tool prints them: every feature the
    broker supports, 0 where none was finalized, metadata.version by its release name."""
    levels = {name: 0 for name in supported} | dict(finalized)
    return {name: METADATA_VERSIONS.get(level, f"level {level}")
            if name == "metadata.version" else str(level) for name, level in levels.items()}


def read_protocol(settings: ConnectionSettings, brokers: Sequence[Broker],
                  topics: Sequence[str], deadline: Deadline) -> ProtocolRead:
    """Features from the first broker that answers, then ELR for ``topics`` from it (or
    the next one that answered), all within ``deadline``."""
    if not brokers:
        return ProtocolRead(features_unread="no broker is registered",
                            elr_unread="no broker is registered")
    try:
        config = kafka_python_config(settings)
    except (InputError, ImportError, OSError) as exc:  # OSError: a CA or key file (TLS)
        why = f"not read: {redact(str(exc))}"
        return ProtocolRead(features_unread=why, elr_unread=why if topics else None)
    load_kafka_python()
    with ask_brokers(brokers, config, deadline, _features, "kaudit-protocol") as answers:
        return _collect(answers, topics, deadline)


def _collect(answers: list[BrokerAsk[dict[str, str]]], topics: Sequence[str],
             deadline: Deadline) -> ProtocolRead:
    out = ProtocolRead()
    tried: set[int] = set()
    while True:
        ready = first_answer(answers, deadline, tried)
        if ready is None:
            break
        tried.add(ready.broker.id)
        if out.features is None:
            out.features, out.answered_by = ready.answer, ready.broker.id
        if not topics:
            out.elr = {}
            return out
        try:
            out.elr = _describe_partitions(ready.client, ready.broker.id, topics, deadline)
            out.answered_by = ready.broker.id
            return out
        except Exception as exc:  # the broker went away after ApiVersions: try the next
            ready.error = why_not_read(exc, ready.broker, deadline)
    why = "; ".join(unanswered(answers, deadline))
    if out.features is None:
        out.features_unread = why
    out.elr_unread = why if out.elr is None and topics else None
    if out.elr is None and not topics:
        out.elr = {}
    return out


def _features(client: Any, broker: Broker, deadline: Deadline) -> dict[str, str]:
    """The broker's finalized feature levels (ApiVersions v3)."""
    from kafka.protocol.metadata import ApiVersionsRequest

    request = ApiVersionsRequest(client_software_name="kaudit", client_software_version="1",
                                 min_version=3)
    response = send_to(client, broker.id, request, deadline)
    raise_for(response.error_code, "ApiVersions")
    return feature_levels(
        ((f.name, f.max_version_level) for f in response.finalized_features or ()),
        (f.name for f in response.supported_features or ()))


def _describe_partitions(client: Any, node_id: int, topics: Sequence[str],
                         deadline: Deadline) -> dict[tuple[str, int], EligibleLeaders]:
    """Every partition's ELR, page by page (a page holds up to PAGE_PARTITIONS)."""
    from kafka.protocol.admin import DescribeTopicPartitionsRequest

    Topic, Cursor = DescribeTopicPartitionsRequest.TopicRequest, \
        DescribeTopicPartitionsRequest.Cursor
    found: dict[tuple[str, int], EligibleLeaders] = {}
    cursor = None
    while True:
        request = DescribeTopicPartitionsRequest(
            topics=[Topic(name=t) for t in topics], response_partition_limit=PAGE_PARTITIONS,
            cursor=cursor)
        response = send_to(client, node_id, request, deadline)
        for topic in response.topics:
            if topic.error_code:  # deleted since, or not authorised: left out, not guessed
                continue
            for p in topic.partitions:
                found[(topic.name, p.partition_index)] = EligibleLeaders(
                    elr=tuple(p.eligible_leader_replicas or ()),
                    last_known_elr=tuple(p.last_known_elr or ()))
        if response.next_cursor is None:
            return found
        cursor = Cursor(topic_name=response.next_cursor.topic_name,
                        partition_index=response.next_cursor.partition_index)


def describe_acls_error(settings: ConnectionSettings, brokers: Sequence[Broker],
                        deadline: Deadline) -> tuple[str | None, str | None]:
    """Kafka's own answer to DescribeAcls (any binding): ``(error name, None)``, ``(None,
    None)`` when it answered without an error, or ``(None, why)`` when no broker answered.

    librdkafka (2.16) hands back no bindings both when there are none and when Kafka refuses
    (SECURITY_DISABLED without an authorizer, CLUSTER_AUTHORIZATION_FAILED without DESCRIBE
    on the cluster): an empty answer is asked again here, where the error code is kept."""
    from kafka.protocol.admin import DescribeAclsRequest

    try:
        config = kafka_python_config(settings)
    except (InputError, ImportError, OSError) as exc:
        return None, redact(str(exc))

    def ask(client: Any, broker: Broker, each: Deadline) -> tuple[str | None, None]:
        response = send_to(client, broker.id, DescribeAclsRequest(
            resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
            principal_filter=None, host_filter=None, operation=1, permission_type=1),
            each)  # 1 is ANY for the type, the pattern, the operation, the permission
        return (error_name(response.error_code) if response.error_code else None), None

    try:  # a frozen broker must leave time to ask the next one
        return first_in_turn(brokers, config, deadline, ask,
                             turn=max(2.0, deadline.seconds / 4))
    except Unanswered as none:
        return None, str(none) or "no broker is registered"


# --- OffsetForLeaderEpoch ----------------------------------------------------------------


@dataclass(frozen=True)
class EpochEnd:
    """Where a leader epoch ends on one partition leader's log."""

    leader: int
    """The broker that answered: the partition's leader."""
    asked: int
    """The leader epoch asked about."""
    epoch: int
    """The epoch the answer is for: the one asked, or the latest earlier one the log holds."""
    end_offset: int
    """The first offset of the next later epoch on that log (its log end offset when the
    epoch is the latest)."""


EpochAsks = Mapping[tuple[str, int], tuple[int, int]]
"""(topic, partition) -> (its leader's broker id, the leader epoch to ask about)."""
CURRENT_EPOCH = -1
"""In :data:`EpochAsks`: the leader's own current epoch, whatever it is."""
EpochAnswers = dict[tuple[str, int], EpochEnd | str]
"""(topic, partition) -> where its epoch ends, or why that was not read."""


def read_epoch_ends(settings: ConnectionSettings, brokers: Mapping[int, Broker],
                    asks: EpochAsks, deadline: Deadline
                    ) -> dict[tuple[str, int], EpochEnd | str]:
    """For each partition of ``asks``, where the epoch ends on its leader's log, asked of
    that leader (a consumer's request is answered by the leader alone), or why it was not
    read. Each leader is asked in its own thread, all within ``deadline``. An epoch of
    :data:`CURRENT_EPOCH` asks for the leader's own current epoch (DescribeTopicPartitions,
    asked of it first): its end is the leader's log end offset."""
    if not asks:
        return {}
    try:
        config = kafka_python_config(settings)
    except (InputError, ImportError, OSError) as exc:  # OSError: a CA or key file (TLS)
        return dict.fromkeys(asks, redact(str(exc)))
    out: EpochAnswers = {}
    by_leader: dict[int, dict[tuple[str, int], int]] = {}
    for key, (leader, epoch) in asks.items():
        by_leader.setdefault(leader, {})[key] = epoch
    load_kafka_python()
    leaders: dict[int, tuple[Broker, dict[tuple[str, int], int]]] = {}
    for leader, wanted in sorted(by_leader.items()):
        broker = brokers.get(leader)
        if broker is None:
            out.update(dict.fromkeys(wanted, f"its leader, broker {leader}, is not registered"))
        else:
            leaders[broker.id] = broker, wanted

    def ask(client: Any, broker: Broker, deadline: Deadline) -> EpochAnswers:
        return _epoch_ends(client, broker.id, leaders[broker.id][1], deadline)

    with ask_brokers([b for b, _ in leaders.values()], config, deadline, ask, "kaudit-epochs",
                     _too_old) as pending:
        for each, found in every_answer(pending, deadline):
            out.update(found if found is not None else
                       dict.fromkeys(leaders[each.broker.id][1], each.why(deadline)))
    return out


def _too_old(exc: Exception, broker: Broker) -> str | None:
    from kafka.errors import IncompatibleBrokerVersion

    if not isinstance(exc, IncompatibleBrokerVersion):
        return None
    return (f"broker {broker.id} does not answer OffsetForLeaderEpoch v2 or later "
            "(Kafka 2.1 and later do)")


def _epoch_ends(client: Any, leader: int, wanted: dict[tuple[str, int], int],
                deadline: Deadline) -> EpochAnswers:
    """Where each epoch of ``wanted`` ends on ``leader``'s log, or why not."""
    found: EpochAnswers = {}
    asked = _current_epochs(client, leader, wanted, found, deadline)
    if asked:
        found |= epoch_answers(send_to(client, leader, epoch_request(asked), deadline),
                               leader, asked)
    return found


def _current_epochs(client: Any, leader: int, wanted: dict[tuple[str, int], int],
                    found: EpochAnswers, deadline: Deadline) -> dict[tuple[str, int], int]:
    """``wanted`` with each :data:`CURRENT_EPOCH` replaced by the epoch ``leader`` leads
    the partition in; a partition it does not lead (any more) is answered so in ``found``."""
    current = [key for key, epoch in wanted.items() if epoch == CURRENT_EPOCH]
    if not current:
        return dict(wanted)
    from kafka.protocol.admin import DescribeTopicPartitionsRequest

    Topic = DescribeTopicPartitionsRequest.TopicRequest
    request = DescribeTopicPartitionsRequest(
        topics=[Topic(name=t) for t in sorted({t for t, _ in current})],
        response_partition_limit=PAGE_PARTITIONS, cursor=None)
    response = send_to(client, leader, request, deadline)
    led = {(topic.name, p.partition_index): p.leader_epoch for topic in response.topics
           if not topic.error_code for p in topic.partitions
           if not p.error_code and p.leader_id == leader and p.leader_epoch >= 0}
    asked = {key: epoch for key, epoch in wanted.items() if epoch != CURRENT_EPOCH}
    for key in current:
        if key in led:
            asked[key] = led[key]
        else:
            found[key] = f"broker {leader} does not lead it now"
    return asked


def epoch_request(wanted: Mapping[tuple[str, int], int]) -> Any:
    """An OffsetForLeaderEpoch request for each partition's epoch of ``wanted``."""
    from kafka.protocol.consumer import OffsetForLeaderEpochRequest

    Topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    Partition = Topic.OffsetForLeaderPartition
    topics: dict[str, list[Any]] = {}
    for (topic, partition), epoch in sorted(wanted.items()):
        # current_leader_epoch -1: the leader's own epoch is not known here, so it is not
        # fenced on; the leader answers from its log as it stands.
        topics.setdefault(topic, []).append(Partition(
            partition=partition, current_leader_epoch=-1, leader_epoch=epoch))
    # replica_id -1: a consumer, as Kafka's own consumer asks when it validates a position.
    return OffsetForLeaderEpochRequest(
        replica_id=-1, topics=[Topic(topic=t, partitions=ps) for t, ps in topics.items()])


def epoch_answers(response: Any, leader: int, wanted: Mapping[tuple[str, int], int]
                  ) -> dict[tuple[str, int], EpochEnd | str]:
    """Each asked partition's :class:`EpochEnd` from an OffsetForLeaderEpoch response, or
    what the leader said instead."""
    out: dict[tuple[str, int], EpochEnd | str] = {}
    for topic in response.topics:
        for p in topic.partitions:
            key = (topic.topic, p.partition)
            if key not in wanted:
                continue
            if p.error_code:
                out[key] = f"broker {leader} answered {error_name(p.error_code)}"
            elif p.end_offset is None or p.end_offset < 0 or p.leader_epoch is None \
                    or p.leader_epoch < 0:
                # UNDEFINED_EPOCH: no epoch at or below it in its log's epoch history (an
                # empty log, or records older than message format v2)
                out[key] = f"broker {leader} knows no leader epoch up to {wanted[key]}"
            else:
                out[key] = EpochEnd(leader, wanted[key], p.leader_epoch, p.end_offset)
    for key in wanted:
        out.setdefault(key, f"broker {leader} did not answer for it")
    return out
