"""``kaudit cluster``: who the cluster is (id, controller, brokers, topics, features)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kaudit.cluster.client import AdminSession
from kaudit.cluster.model import Broker, is_internal_topic
from kaudit.cluster.protocol import read_protocol
from kaudit.connection.settings import ConnectionSettings
from kaudit.waiting import Deadline


@dataclass(frozen=True)
class ClusterInfo:
    """A cluster's identity and size, read in one round trip or two."""

    cluster_id: str | None
    controller_id: int | None
    """The controller as reported to clients. Under KRaft, clients cannot see the
    quorum, so Kafka reports a live broker that forwards controller requests."""
    brokers: tuple[Broker, ...]
    topic_count: int
    """All topics, internal ones included."""
    internal_topic_count: int
    features: Mapping[str, str] | None = None
    """Finalized feature levels (None when they could not be read: see ``features_unread``)."""
    features_unread: str | None = None


def read_cluster_info(settings: ConnectionSettings) -> ClusterInfo:
    """Describe the cluster; unreachable or unauthorised clusters raise exit-3 errors."""
    session = AdminSession(settings)
    cluster_id, controller_id, brokers = session.describe_identity()
    metadata = session.list_topics()
    read = read_protocol(settings, brokers, (), Deadline(settings.timeout))
    internal = sum(1 for name in metadata.topics if is_internal_topic(name))
    return ClusterInfo(
        cluster_id=cluster_id,
        controller_id=controller_id,
        brokers=brokers,
        topic_count=len(metadata.topics),
        internal_topic_count=internal,
        features=read.features,
        features_unread=read.features_unread,
    )
