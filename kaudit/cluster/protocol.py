"""What librdkafka cannot ask Kafka: the finalized features (ApiVersions v3, KIP-584),
each partition's eligible leader replicas (DescribeTopicPartitions, KIP-966) and where a
leader epoch ends on a partition leader's log (OffsetForLeaderEpoch, KIP-101/320), read
with kafka-python in this process: no JVM, no Kafka jars.

Bounded while brokers are frozen: a SIGSTOPped broker still accepts TCP connections and
then never answers, and kafka-python's bootstrap waits out its whole timeout on the first
address it picks. So every broker is asked at once, each through its own client that
knows only that broker, and the first to answer is read from; the others are abandoned at
the deadline. Nothing here is guessed: what could not be read comes back with why.

The one place kaudit imports kafka-python (see tests/unit/test_architecture.py).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kaudit.cluster.model import Broker
from kaudit.cluster.protocol_config import kafka_python_config
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


@dataclass
class _Answer:
    """What one broker's client got; filled in by its thread."""

    broker: Broker
    client: Any = None
    features: dict[str, str] | None = None
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)


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
    answers = [_Answer(b) for b in brokers]
    for answer in answers:
        threading.Thread(target=_ask_features, args=(answer, config, deadline), daemon=True,
                         name=f"kaudit-protocol-{answer.broker.id}").start()
    try:
        return _collect(answers, topics, deadline)
    finally:
        for answer in answers:  # frozen brokers' clients are closed in their own time
            threading.Thread(target=_close_when_done, args=(answer,), daemon=True).start()


def _collect(answers: list[_Answer], topics: Sequence[str], deadline: Deadline
             ) -> ProtocolRead:
    out = ProtocolRead()
    tried: set[int] = set()
    while True:
        ready = _first_answer(answers, tried, deadline)
        if ready is None:
            break
        tried.add(ready.broker.id)
        if out.features is None:
            out.features, out.answered_by = ready.features, ready.broker.id
        if not topics:
            out.elr = {}
            return out
        try:
            out.elr = _describe_partitions(ready.client, ready.broker.id, topics, deadline)
            out.answered_by = ready.broker.id
            return out
        except Exception as exc:  # the broker went away after ApiVersions: try the next
            ready.error = why_not_read(exc, ready.broker, deadline)
    why = _not_answered(answers, deadline)
    if out.features is None:
        out.features_unread = why
    out.elr_unread = why if out.elr is None and topics else None
    if out.elr is None and not topics:
        out.elr = {}
    return out


def _first_answer(answers: list[_Answer], tried: set[int], deadline: Deadline
                  ) -> _Answer | None:
    """The first broker (not yet tried) whose features came back, waiting until all have
    failed or the deadline passes."""
    while not deadline.expired():
        for answer in answers:
            if answer.done.is_set() and answer.features is not None \
                    and answer.broker.id not in tried:
                return answer
        if all(a.done.is_set() for a in answers):
            return None
        pending = next(a for a in answers if not a.done.is_set())
        pending.done.wait(min(0.05, max(0.0, deadline.left())))
    return None


def _not_answered(answers: list[_Answer], deadline: Deadline) -> str:
    return "; ".join(a.error or _silent(a.broker, deadline) for a in answers)


def _silent(broker: Broker, deadline: Deadline) -> str:
    return f"broker {broker.id} ({broker.host}:{broker.port}) gave no answer within " \
        f"{deadline.seconds:g}s"


def client_of(broker: Broker, config: dict[str, Any], deadline: Deadline) -> Any:
    """A kafka-python client that knows only ``broker``, bounded by ``deadline``."""
    from kafka.admin import KafkaAdminClient

    wait_ms = max(1, int(deadline.left() * 1000))
    return KafkaAdminClient(bootstrap_servers=[f"{broker.host}:{broker.port}"],
                            bootstrap_timeout_ms=wait_ms, request_timeout_ms=wait_ms, **config)


def _ask_features(answer: _Answer, config: dict[str, Any], deadline: Deadline) -> None:
    from kafka.protocol.metadata import ApiVersionsRequest

    broker = answer.broker
    try:
        answer.client = client_of(broker, config, deadline)
        request = ApiVersionsRequest(client_software_name="kaudit",
                                     client_software_version="1", min_version=3)
        response = send_to(answer.client, broker.id, request, deadline)
        raise_for(response.error_code, "ApiVersions")
        answer.features = feature_levels(
            ((f.name, f.max_version_level) for f in response.finalized_features or ()),
            (f.name for f in response.supported_features or ()))
    except Exception as exc:
        answer.error = why_not_read(exc, broker, deadline)
    finally:
        answer.done.set()


def send_to(client: Any, node_id: int, request: Any, deadline: Deadline) -> Any:
    """One request to one broker (kafka-python's public calls pick a broker themselves,
    and may pick a frozen one)."""
    manager = client._manager
    wait_ms = max(1, int(deadline.left() * 1000))

    async def ask() -> Any:
        return await manager.send(request, node_id=node_id, request_timeout_ms=wait_ms)

    return manager.run(ask)


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
    whys = []
    for broker in brokers:
        client = None
        # A frozen broker must leave time to ask the next one.
        each = Deadline(deadline.slice(max(2.0, deadline.seconds / 4)))
        try:
            client = client_of(broker, config, each)
            response = send_to(client, broker.id, DescribeAclsRequest(
                resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                principal_filter=None, host_filter=None, operation=1, permission_type=1),
                each)  # 1 is ANY for the type, the pattern, the operation, the permission
            return (error_name(response.error_code) if response.error_code else None), None
        except Exception as exc:
            whys.append(why_not_read(exc, broker, each))
            if deadline.expired():
                break
        finally:
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close()
    return None, "; ".join(whys) or "no broker is registered"


def error_name(code: int) -> str:
    """Kafka's name of a protocol error code (``NOT_COORDINATOR``...)."""
    from kafka.errors import for_code

    return str(getattr(for_code(code), "message", code))


def raise_for(code: int, what: str) -> None:
    """Raise, naming the error, when an answer's ``code`` is not 0."""
    if code:
        raise RuntimeError(f"{what}: {error_name(code)}")


def why_not_read(exc: BaseException, broker: Broker, deadline: Deadline) -> str:
    name = exc.__class__.__name__
    if "Timeout" in name or deadline.expired():
        return _silent(broker, deadline)
    text = redact(str(exc)).strip().splitlines()
    return f"broker {broker.id}: {name}" + (f": {text[0][:160]}" if text else "")


def _close_when_done(answer: _Answer | _EpochAsk) -> None:
    answer.done.wait()
    if answer.client is not None:
        with contextlib.suppress(Exception):  # a frozen broker's client: nothing to report
            answer.client.close()


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
    out: dict[tuple[str, int], EpochEnd | str] = {}
    by_leader: dict[int, dict[tuple[str, int], int]] = {}
    for key, (leader, epoch) in asks.items():
        by_leader.setdefault(leader, {})[key] = epoch
    pending = []
    load_kafka_python()
    for leader, wanted in sorted(by_leader.items()):
        broker = brokers.get(leader)
        if broker is None:
            out.update(dict.fromkeys(wanted, f"its leader, broker {leader}, is not registered"))
            continue
        ask = _EpochAsk(broker, wanted)
        threading.Thread(target=_ask_epoch_ends, args=(ask, config, deadline), daemon=True,
                         name=f"kaudit-epochs-{leader}").start()
        pending.append(ask)
    for ask in pending:
        ask.done.wait(max(0.0, deadline.left()))
        if ask.done.is_set() and ask.error is None:
            out.update(ask.found)
        else:
            out.update(dict.fromkeys(ask.wanted, ask.error or _silent(ask.broker, deadline)))
        # a frozen leader's client is closed in its own time
        threading.Thread(target=_close_when_done, args=(ask,), daemon=True).start()
    return out


@dataclass
class _EpochAsk:
    """One leader's question and answer; filled in by its thread."""

    broker: Broker
    wanted: dict[tuple[str, int], int]
    client: Any = None
    found: dict[tuple[str, int], EpochEnd | str] = field(default_factory=dict)
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)


def _ask_epoch_ends(ask: _EpochAsk, config: dict[str, Any], deadline: Deadline) -> None:
    from kafka.errors import IncompatibleBrokerVersion

    broker = ask.broker
    try:
        ask.client = client_of(broker, config, deadline)
        wanted = _current_epochs(ask, deadline)
        if wanted:
            response = send_to(ask.client, broker.id, epoch_request(wanted), deadline)
            ask.found |= epoch_answers(response, broker.id, wanted)
    except IncompatibleBrokerVersion:
        ask.error = (f"broker {broker.id} does not answer OffsetForLeaderEpoch v2 or later "
                     "(Kafka 2.1 and later do)")
    except Exception as exc:
        ask.error = why_not_read(exc, broker, deadline)
    finally:
        ask.done.set()


def _current_epochs(ask: _EpochAsk, deadline: Deadline) -> dict[tuple[str, int], int]:
    """``ask.wanted`` with each :data:`CURRENT_EPOCH` replaced by the epoch the broker
    leads the partition in; a partition it does not lead (any more) is answered so."""
    current = [key for key, epoch in ask.wanted.items() if epoch == CURRENT_EPOCH]
    if not current:
        return dict(ask.wanted)
    from kafka.protocol.admin import DescribeTopicPartitionsRequest

    Topic = DescribeTopicPartitionsRequest.TopicRequest
    request = DescribeTopicPartitionsRequest(
        topics=[Topic(name=t) for t in sorted({t for t, _ in current})],
        response_partition_limit=PAGE_PARTITIONS, cursor=None)
    response = send_to(ask.client, ask.broker.id, request, deadline)
    led = {(topic.name, p.partition_index): p.leader_epoch for topic in response.topics
           if not topic.error_code for p in topic.partitions
           if not p.error_code and p.leader_id == ask.broker.id and p.leader_epoch >= 0}
    wanted = {key: epoch for key, epoch in ask.wanted.items() if epoch != CURRENT_EPOCH}
    for key in current:
        if key in led:
            wanted[key] = led[key]
        else:
            ask.found[key] = f"broker {ask.broker.id} does not lead it now"
    return wanted


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
