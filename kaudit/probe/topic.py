"""The probe topic: created for the run and deleted after it, or an existing one by name.

kaudit never writes to a topic it was not told to write to: without
``--existing`` the topic must not exist yet, and with it the topic must.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kaudit.cluster.client import AdminSession, kafka_message
from kaudit.errors import ConnectionFailure, InputError


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
    from confluent_kafka import KafkaException, TopicCollection

    future = session.admin.describe_topics(TopicCollection([name]),
                                           request_timeout=session.settings.timeout)[name]
    try:
        description = future.result(timeout=session.settings.timeout + 5)
    except KafkaException as exc:
        err = exc.args[0]
        if err.name() in ("UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_TOPIC"):
            return None
        raise session.unreachable(exc) from None
    return sorted(p.id for p in description.partitions)


def create_probe_topic(session: AdminSession, spec: TopicSpec) -> None:
    """Create the topic, refusing to touch one that already exists."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    config: dict[str, str] = {}
    if spec.min_insync_replicas is not None:
        config["min.insync.replicas"] = str(spec.min_insync_replicas)
    if spec.unclean_leader_election is not None:
        config["unclean.leader.election.enable"] = str(spec.unclean_leader_election).lower()
    new = NewTopic(spec.name, spec.partitions, spec.replication_factor, config=config)
    future = session.admin.create_topics([new], operation_timeout=session.settings.timeout,
                                         request_timeout=session.settings.timeout)[spec.name]
    try:
        future.result(timeout=session.settings.timeout + 5)
    except KafkaException as exc:
        name = exc.args[0].name() if exc.args and hasattr(exc.args[0], "name") else ""
        if name == "TOPIC_ALREADY_EXISTS":
            raise InputError(f"topic {spec.name} already exists; pass --existing to probe it "
                             "(kaudit never reuses a topic silently)") from None
        if name in ("INVALID_REPLICATION_FACTOR", "INVALID_CONFIG", "POLICY_VIOLATION",
                    "INVALID_PARTITIONS"):
            raise InputError(f"cannot create {spec.name}: {kafka_message(exc)}") from None
        raise session.unreachable(exc) from None
    # Wait until every partition has a leader: producing earlier only measures start-up.
    deadline = time.monotonic() + session.settings.timeout
    while time.monotonic() < deadline:
        md = session.admin.list_topics(topic=spec.name, timeout=session.settings.timeout)
        topic = md.topics.get(spec.name)
        if topic and topic.error is None and len(topic.partitions) == spec.partitions and all(
                p.leader >= 0 for p in topic.partitions.values()):
            return
        time.sleep(0.2)
    raise ConnectionFailure(f"topic {spec.name} has partitions without a leader after "
                            f"{session.settings.timeout:g}s")


def delete_probe_topic(session: AdminSession, name: str) -> bool:
    """Delete the probe topic; False (and no exception) when that fails."""
    try:
        session.admin.delete_topics([name], operation_timeout=session.settings.timeout)[
            name].result(timeout=session.settings.timeout + 5)
        return True
    except Exception:  # cleanup must never hide the run's own result
        return False
