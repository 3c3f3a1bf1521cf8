"""The KRaft controller quorum, asked with DescribeQuorum (KIP-595; times since KIP-836,
directory ids and the voters' listeners since KIP-853) through kafka-python, which sends
the highest version both sides speak (v2 to Kafka 3.9 and later). confluent-kafka cannot
ask it.

A broker answers DescribeQuorum by forwarding it to the active controller, so any broker
will do: every broker is asked at once, each on its own client (a frozen broker still
accepts connections and never answers), and the first answer is kept. Kafka checks DESCRIBE
on the CLUSTER resource; a principal without it is told CLUSTER_AUTHORIZATION_FAILED, and
the quorum is then unread, with why.
"""

from __future__ import annotations

import base64
import contextlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kaudit.cluster.model import Broker
from kaudit.cluster.protocol import (
    client_of,
    error_name,
    load_kafka_python,
    send_to,
    why_not_read,
)
from kaudit.cluster.protocol_config import kafka_python_config
from kaudit.cluster.quorum import ControllerEndpoint, QuorumReplica, QuorumState
from kaudit.connection.redact import redact
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import InputError
from kaudit.waiting import Deadline

METADATA_TOPIC = "__cluster_metadata"
"""The metadata log's topic: its one partition is what the controllers replicate."""
NOT_AUTHORIZED = "not authorized: DescribeQuorum needs DESCRIBE on the CLUSTER resource"
_AUTH_ERRORS = ("CLUSTER_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED")


@dataclass
class QuorumRead:
    """The quorum, or why it was not read."""

    quorum: QuorumState | None = None
    unread: str | None = None


@dataclass
class _Ask:
    """One broker's question and answer; filled in by its thread."""

    broker: Broker
    client: Any = None
    quorum: QuorumState | None = None
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)


def read_quorum(settings: ConnectionSettings, brokers: Sequence[Broker],
                deadline: Deadline) -> QuorumRead:
    """The quorum as the first broker to answer tells it, within ``deadline``."""
    if not brokers:
        return QuorumRead(unread="no broker is registered")
    try:
        config = kafka_python_config(settings)
    except (InputError, ImportError, OSError) as exc:  # OSError: a CA or key file (TLS)
        return QuorumRead(unread=f"not read: {redact(str(exc))}")
    load_kafka_python()
    asks = [_Ask(b) for b in brokers]
    for ask in asks:
        threading.Thread(target=_ask_broker, args=(ask, config, deadline), daemon=True,
                         name=f"kaudit-quorum-{ask.broker.id}").start()
    try:
        return _first_answer(asks, deadline)
    finally:
        for ask in asks:  # a frozen broker's client is closed in its own time
            threading.Thread(target=_close_when_done, args=(ask,), daemon=True).start()


def _first_answer(asks: list[_Ask], deadline: Deadline) -> QuorumRead:
    while not deadline.expired():
        answered = next((a for a in asks if a.quorum is not None), None)
        if answered is not None:
            return QuorumRead(quorum=answered.quorum)
        if all(a.done.is_set() for a in asks):
            break
        pending = next(a for a in asks if not a.done.is_set())
        pending.done.wait(min(0.05, max(0.0, deadline.left())))
    answered = next((a for a in asks if a.quorum is not None), None)
    if answered is not None:
        return QuorumRead(quorum=answered.quorum)
    errors = [a.error or why_not_read(TimeoutError(), a.broker, deadline) for a in asks]
    if any(NOT_AUTHORIZED in e for e in errors):  # the same principal everywhere
        return QuorumRead(unread=NOT_AUTHORIZED)
    return QuorumRead(unread="; ".join(dict.fromkeys(errors)))


def _ask_broker(ask: _Ask, config: dict[str, Any], deadline: Deadline) -> None:
    broker = ask.broker
    try:
        ask.client = client_of(broker, config, deadline)
        response = send_to(ask.client, broker.id, quorum_request(), deadline)
        ask.quorum = quorum_state(response, broker.id)
    except QuorumRefused as exc:
        ask.error = f"broker {broker.id}: {exc}"
    except Exception as exc:
        ask.error = why_not_read(exc, broker, deadline)
    finally:
        ask.done.set()


def _close_when_done(ask: _Ask) -> None:
    ask.done.wait()
    if ask.client is not None:
        with contextlib.suppress(Exception):  # a frozen broker's client: nothing to report
            ask.client.close()


class QuorumRefused(Exception):
    """The broker (or the controller behind it) answered with an error."""


def quorum_request() -> Any:
    """DescribeQuorum for the metadata log's one partition."""
    from kafka.protocol.admin import DescribeQuorumRequest

    Topic = DescribeQuorumRequest.TopicData
    return DescribeQuorumRequest(topics=[Topic(
        topic_name=METADATA_TOPIC, partitions=[Topic.PartitionData(partition_index=0)])])


def _refusal(code: int, message: str | None) -> QuorumRefused:
    name = error_name(code)
    if name in _AUTH_ERRORS:
        return QuorumRefused(NOT_AUTHORIZED)
    return QuorumRefused(f"DescribeQuorum answered {name}" + (f": {message}" if message else ""))


def quorum_state(response: Any, answered_by: int | None) -> QuorumState:
    """The :class:`QuorumState` of a DescribeQuorum response (any version). Raises
    :class:`QuorumRefused` when it carries an error instead."""
    if response.error_code:
        raise _refusal(response.error_code, getattr(response, "error_message", None))
    partition = next((p for t in response.topics if t.topic_name == METADATA_TOPIC
                      for p in t.partitions if p.partition_index == 0), None)
    if partition is None:
        raise QuorumRefused(f"DescribeQuorum did not answer for {METADATA_TOPIC}-0")
    if partition.error_code:
        raise _refusal(partition.error_code, getattr(partition, "error_message", None))
    return QuorumState(
        leader_id=partition.leader_id if partition.leader_id >= 0 else None,
        leader_epoch=partition.leader_epoch, high_watermark=partition.high_watermark,
        voters=tuple(replica(r) for r in partition.current_voters or ()),
        observers=tuple(replica(r) for r in partition.observers or ()),
        endpoints=tuple(ControllerEndpoint(node_id=n.node_id, listener=listener.name,
                                           host=listener.host, port=listener.port)
                        for n in getattr(response, "nodes", None) or ()
                        for listener in n.listeners or ()),
        answered_by=answered_by)


def _known(value: Any) -> int | None:
    """Kafka says -1 for what it does not know; an older version leaves the field out."""
    return None if value is None or value < 0 else int(value)


def replica(state: Any) -> QuorumReplica:
    """One ReplicaState of a DescribeQuorum response."""
    return QuorumReplica(
        replica_id=state.replica_id,
        directory_id=kafka_uuid(getattr(state, "replica_directory_id", None)),
        log_end_offset=_known(state.log_end_offset),
        last_fetch_ms=_known(getattr(state, "last_fetch_timestamp", None)),
        last_caught_up_ms=_known(getattr(state, "last_caught_up_timestamp", None)))


def kafka_uuid(value: Any) -> str | None:
    """A UUID as Kafka prints it (URL-safe base64 of its 16 bytes, unpadded); None for
    none or the all-zero UUID (a voter of a static quorum has no directory id)."""
    if value is None or not getattr(value, "int", 0):
        return None
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")
