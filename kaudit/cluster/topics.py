"""Topics kaudit creates for its own work (probe and demo topics), and what it asks of one.

kaudit never writes to a topic it was not told to write to: without
``--existing`` a probe topic must not exist yet, and with it the topic must.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from kaudit.cluster import client
from kaudit.cluster.client import AdminSession, kafka_message
from kaudit.cluster.model import Broker
from kaudit.errors import ConnectionFailure, InputError
from kaudit.waiting import Deadline, wait_for

CANARY_TOPIC = "kaudit-canary"
"""``kaudit canary``'s topic unless --topic names another: a service's, kept on purpose."""


@dataclass(frozen=True)
class TopicSpec:
    """How to create the probe topic."""

    name: str
    partitions: int
    replication_factor: int
    min_insync_replicas: int | None
    unclean_leader_election: bool | None


def topic_partitions(session: AdminSession, name: str) -> list[int] | None:
    """Partition ids of ``name``, or None when the topic does not exist.

    Uses DescribeTopics, never a metadata request naming the topic: on a broker
    with auto.create.topics.enable=true that request would create it.
    """
    description = _described(session, name)
    return None if description is None else sorted(p.id for p in description.partitions)


@dataclass(frozen=True)
class TopicLayout:
    """Where an existing topic's partitions stand, and its durability settings."""

    leaders: dict[int, int]
    """Partition -> its leader's broker id (-1: none)."""
    replication_factor: int
    min_insync_replicas: int | None
    """None: the topic's configs could not be read (not authorized, no answer)."""


def topic_layout(session: AdminSession, name: str) -> TopicLayout | None:
    """``name``'s partitions, leaders and settings, or None when it does not exist (asked
    as :func:`topic_partitions` asks: nothing is created)."""
    description = _described(session, name)
    if description is None:
        return None
    leaders = {p.id: p.leader.id if p.leader is not None else -1
               for p in description.partitions}
    rf = max((len(p.replicas) for p in description.partitions), default=0)
    resource = client.ConfigResource(client.ResourceType.TOPIC, name)
    within = min(session.settings.timeout, 5.0)
    try:  # best effort: a principal that may write but not describe configs still runs
        configs = session.outcome(session.admin.describe_configs(
            [resource], request_timeout=within)[resource], within + 1)
        min_isr: int | None = int(configs["min.insync.replicas"].value)
    except (client.KafkaException, ConnectionFailure, KeyError, TypeError, ValueError):
        min_isr = None
    return TopicLayout(leaders, rf, min_isr)


def _described(session: AdminSession, name: str) -> Any | None:
    future = session.admin.describe_topics(client.TopicCollection([name]),
                                           request_timeout=session.settings.timeout)[name]
    try:
        return session.outcome(future, session.settings.timeout + 5)
    except client.KafkaException as exc:
        err = exc.args[0]
        if err.name() in ("UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_TOPIC"):
            return None
        raise session.unreachable(exc) from None


def create_probe_topic(session: AdminSession, spec: TopicSpec) -> None:
    """Create the topic, refusing to touch one that already exists."""
    config: dict[str, str] = {}
    if spec.min_insync_replicas is not None:
        config["min.insync.replicas"] = str(spec.min_insync_replicas)
    if spec.unclean_leader_election is not None:
        config["unclean.leader.election.enable"] = str(spec.unclean_leader_election).lower()
    new = client.NewTopic(spec.name, spec.partitions, spec.replication_factor, config=config)
    future = session.admin.create_topics([new], operation_timeout=session.settings.timeout,
                                         request_timeout=session.settings.timeout)[spec.name]
    try:
        session.outcome(future, session.settings.timeout + 5)
    except client.KafkaException as exc:
        name = exc.args[0].name() if exc.args and hasattr(exc.args[0], "name") else ""
        if name == "TOPIC_ALREADY_EXISTS":
            raise InputError(f"topic {spec.name} already exists; pass --existing to probe it "
                             "(kaudit never reuses a topic silently)") from None
        if name in ("INVALID_REPLICATION_FACTOR", "INVALID_CONFIG", "POLICY_VIOLATION",
                    "INVALID_PARTITIONS"):
            raise InputError(f"cannot create {spec.name}: {kafka_message(exc)}") from None
        raise session.unreachable(exc) from None
    # Wait until every partition has a leader: producing earlier only measures start-up.
    def every_partition_led() -> bool:
        md = session.admin.list_topics(topic=spec.name, timeout=session.settings.timeout)
        topic = md.topics.get(spec.name)
        return bool(topic and topic.error is None and len(topic.partitions) == spec.partitions
                    and all(p.leader >= 0 for p in topic.partitions.values()))

    if not wait_for(every_partition_led, session.settings.timeout):
        raise ConnectionFailure(f"topic {spec.name} has partitions without a leader after "
                                f"{session.settings.timeout:g}s")
    # One broker told us the leaders; another may not have applied the new topic yet, and a
    # client asking it hears "unknown topic" ("No leaders found"): for a while, that is
    # the topic settling, not the cluster out of reach.
    settled = time.monotonic() + session.settings.timeout
    session.excuse(lambda: settled)


def delete_probe_topic(session: AdminSession, name: str) -> bool:
    """Delete the probe topic; False (and no exception) when that fails."""
    try:
        session.admin.delete_topics([name], operation_timeout=session.settings.timeout)[
            name].result(timeout=session.settings.timeout + 5)
        return True
    except Exception:  # cleanup must never hide the run's own result
        return False


def partition_roles(session: AdminSession, topic: str, partition: int = 0
                    ) -> tuple[int, list[int]]:
    """A partition's leader and its in-sync followers, fresh from metadata."""
    timeout = session.settings.timeout
    deadline = Deadline(max(timeout, 10))
    while True:
        # A fault's target is looked up right after the previous fault too (bounce-leader):
        # metadata can time out, or show no leader while an election is under way.
        try:
            md = session.admin.list_topics(topic=topic, timeout=min(timeout, 5))
            part = md.topics[topic].partitions.get(partition)
            if part is not None and part.leader >= 0:
                return part.leader, [b for b in part.isrs if b != part.leader]
            problem = f"partition {partition} of {topic} has no leader"
        except client.KafkaException as exc:
            problem = str(exc)
        if session.gives_up(deadline):
            raise session.unreachable(client.KafkaException(problem)) from None
        time.sleep(0.3)


def partition_leaders(session: AdminSession, topic: str
                      ) -> tuple[dict[int, int], dict[int, Broker]]:
    """Each partition's leader (a partition without one left out) and the brokers by id,
    from one metadata request."""
    try:
        md = session.admin.list_topics(topic=topic, timeout=session.settings.timeout)
    except client.KafkaException as exc:
        raise session.unreachable(exc) from None
    found = md.topics.get(topic)
    leaders = {} if found is None else {p: part.leader for p, part in found.partitions.items()
                                        if part.leader >= 0}
    return leaders, {b.id: Broker(id=b.id, host=str(b.host), port=b.port)
                     for b in md.brokers.values()}


def wait_until_in_sync(session: AdminSession, wait_s: float, interrupted: threading.Event
                       ) -> bool:
    """Wait until every partition of every topic has all its replicas in sync: a healthy
    cluster to start an experiment on. False after ``wait_s`` or when interrupted."""
    def all_in_sync() -> bool:
        metadata = session.list_topics()
        return all(len(p.isrs) == len(p.replicas)
                   for t in metadata.topics.values() for p in t.partitions.values())

    return bool(wait_for(all_in_sync, wait_s, every=0.1, cancel=interrupted))
