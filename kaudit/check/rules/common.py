"""Effective values and wording shared by the rules and the guarantee calculator."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kaudit.check.findings import Subject, SubjectKind
from kaudit.cluster.model import (
    ClusterSnapshot,
    ConfigSource,
    ConfigValue,
    PartitionState,
    Topic,
    is_internal_topic,
)

# Kafka's own defaults when neither the topic nor any broker reports a value
# (manifests checked without a cluster).
KAFKA_DEFAULTS = {
    "min.insync.replicas": "1",
    "unclean.leader.election.enable": "false",
    "default.replication.factor": "1",
    "auto.create.topics.enable": "true",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
}

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"
SHARE_STATE_TOPIC = "__share_group_state"

_PROVENANCE = {
    ConfigSource.DYNAMIC_TOPIC_CONFIG: "set on the topic",
    ConfigSource.GROUP_CONFIG: "set on the group",
    ConfigSource.MANIFEST: "declared in the manifest",
    ConfigSource.DYNAMIC_BROKER_CONFIG: "inherited from a per-broker dynamic config",
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG: "inherited from the cluster-wide dynamic default",
    ConfigSource.STATIC_BROKER_CONFIG: "inherited from the brokers' server.properties",
    ConfigSource.DEFAULT_CONFIG: "inherited from Kafka's built-in default",
    ConfigSource.UNKNOWN_CONFIG: "of unknown origin",
    ConfigSource.CLIENT_CONFIG: "set in the client config",
    ConfigSource.CLIENT_DEFAULT: "the client library's default",
}


def assumed_offline(value: ConfigValue, snapshot: ClusterSnapshot) -> bool:
    """True when kaudit supplied ``value`` itself for a manifest: no broker config was read,
    so the cluster's default is unknown and Kafka's built-in one is assumed."""
    return (snapshot.origin == "manifests" and value.source is ConfigSource.DEFAULT_CONFIG
            and snapshot.broker_config(value.name) is None)


def provenance(value: ConfigValue, snapshot: ClusterSnapshot | None = None) -> str:
    """Where a value came from, in words: 'set on the topic', 'inherited from ...'.

    Given the ``snapshot``, a value assumed for a manifest says so: offline, kaudit cannot
    know which default the cluster will apply. A value one broker holds while the others
    disagree (:func:`broker_value`) says whose it is."""
    if snapshot is not None and assumed_offline(value, snapshot):
        return (f"not set in the manifest: the cluster's default applies; kaudit assumes "
                f"{value.value}, Kafka's built-in default")
    said = _PROVENANCE.get(value.source, "of unknown origin")
    if value.broker is not None:
        said += (f" of broker {value.broker}, where the brokers disagree"
                 + (" (the weakest of their values)" if value.name in WEAKEST_FIRST else ""))
    return said


def is_internal(topic: Topic) -> bool:
    """Kafka's own topics: flagged internal, or named like one (:func:`is_internal_topic`)."""
    return topic.internal or is_internal_topic(topic.name)


def topic_value(topic: Topic, snapshot: ClusterSnapshot, name: str) -> ConfigValue:
    """The effective value of a topic config: the topic's, else the broker's, else Kafka's.

    A value the topic does not set itself is described by whichever broker answered, with
    that broker's default; where the brokers disagree, their weakest stands instead
    (:func:`broker_value`), as some partition may be led by the broker that holds it."""
    own = topic.config(name)
    if own is not None and own.value is not None:
        if not own.source.is_default or name not in WEAKEST_FIRST:
            return own
        found = snapshot.broker_config(name, WEAKEST_FIRST[name])
        return found if found is not None and found.broker is not None \
            and found.value is not None else own
    return broker_value(snapshot, name)


_FEWEST = 2**63
WEAKEST_FIRST: dict[str, Callable[[ConfigValue], Any]] = {
    # Fewer copies, or fewer in-sync replicas to acknowledge, lose data sooner.
    **dict.fromkeys(("min.insync.replicas", "default.replication.factor",
                     "offsets.topic.replication.factor",
                     "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
                     "share.coordinator.state.topic.replication.factor",
                     "share.coordinator.state.topic.min.isr"),
                    lambda v: as_int(v, _FEWEST)),
    # An election that may truncate acknowledged writes.
    "unclean.leader.election.enable": lambda v: not as_bool(v),
    # The longest a transaction may hold read_committed readers back before Kafka aborts it.
    "transaction.max.timeout.ms": lambda v: -as_int(v, -_FEWEST),
}
"""For settings whose brokers may disagree: a sort key putting the value worst for
durability first. Each broker applies its own value to what it leads or hosts, so a topic
that does not set one may get the weakest; kaudit judges by it and says whose it is."""


def broker_value(snapshot: ClusterSnapshot, name: str) -> ConfigValue:
    """A broker config as the brokers report it, else Kafka's default. Where the brokers
    disagree, the weakest of their values (:data:`WEAKEST_FIRST`), else the lowest-id
    broker's, naming its broker."""
    found = snapshot.broker_config(name, WEAKEST_FIRST.get(name))
    if found is not None and found.value is not None:
        return found
    return ConfigValue(name=name, value=KAFKA_DEFAULTS.get(name),
                       source=ConfigSource.DEFAULT_CONFIG)


def as_int(value: ConfigValue, fallback: int) -> int:
    """An integer config value; ``fallback`` when missing or unreadable."""
    try:
        return int(str(value.value).strip())
    except ValueError:
        return fallback


def as_bool(value: ConfigValue) -> bool:
    """A boolean config value (Kafka writes ``true``/``false``)."""
    return str(value.value).strip().lower() == "true"


@dataclass(frozen=True)
class Durability:
    """The durability settings of one topic, with where each came from."""

    replication_factor: int
    min_isr: int
    """min.insync.replicas as configured."""
    min_isr_value: ConfigValue
    unclean: bool
    unclean_value: ConfigValue
    capped_known: bool = False
    """The cluster's metadata.version is 3.7 or later, so its brokers certainly cap
    min.insync.replicas at the replica count (KAFKA-15583). A lower or unread
    metadata.version proves nothing (brokers upgraded to 3.7+ may keep an older one): the
    cap is then assumed, as every release since 3.7 applies it, and the findings say so."""

    @property
    def effective_min_isr(self) -> int:
        """The ISR size acks=all writes need: min(min.insync.replicas, RF)."""
        return min(self.min_isr, max(1, self.replication_factor))

    @property
    def write_tolerance(self) -> int:
        """Broker losses acks=all writes survive: RF - effective min.insync.replicas."""
        return self.replication_factor - self.effective_min_isr


#: The release whose brokers began to use min(min.insync.replicas, replica count).
CAPPED_SINCE = (3, 7)


def durability(topic: Topic, snapshot: ClusterSnapshot) -> Durability:
    """Read a topic's effective RF, min.insync.replicas and unclean election setting (once
    per topic and snapshot: nine rules ask)."""
    # Keyed by the topic object itself (a manifest's topic may share a live topic's name),
    # which the entry keeps alive so that its id is not reused.
    kept = snapshot.derived.get(("durability", id(topic)))
    if kept is not None and kept[0] is topic:
        return kept[1]  # type: ignore[no-any-return]
    min_isr_value = topic_value(topic, snapshot, "min.insync.replicas")
    unclean_value = topic_value(topic, snapshot, "unclean.leader.election.enable")
    version = snapshot.kafka_version
    found = Durability(
        replication_factor=topic.replication_factor,
        min_isr=max(1, as_int(min_isr_value, 1)),
        min_isr_value=min_isr_value,
        unclean=as_bool(unclean_value),
        unclean_value=unclean_value,
        capped_known=version is not None and version >= CAPPED_SINCE,
    )
    snapshot.derived[("durability", id(topic))] = (topic, found)
    return found


def topic_subject(topic: Topic) -> Subject:
    """The subject of a finding about a whole topic."""
    return Subject(SubjectKind.topic, topic.name)


def partition_subject(topic: Topic, partition: PartitionState) -> Subject:
    """The subject of a finding about one partition: ``orders-3``."""
    return Subject(SubjectKind.partition, f"{topic.name}-{partition.partition}")


def broker_values(snapshot: ClusterSnapshot, name: str) -> list[tuple[Subject, ConfigValue]]:
    """A broker config per subject: the cluster when all brokers agree, else each broker.

    Falls back to Kafka's default (one cluster subject) when no broker reports it.
    """
    seen: dict[int, ConfigValue] = {}
    for broker_id, configs in sorted(snapshot.broker_configs.items()):
        value = configs.get(name)
        if value is not None and value.value is not None:
            seen[broker_id] = value
    cluster = Subject(SubjectKind.cluster, snapshot.cluster_id or "cluster")
    if not seen:
        return [(cluster, broker_value(snapshot, name))]
    distinct = {(v.value, v.source) for v in seen.values()}
    if len(distinct) == 1 and len(seen) == len(snapshot.broker_configs):
        return [(cluster, next(iter(seen.values())))]
    return [(Subject(SubjectKind.broker, str(bid)), v) for bid, v in seen.items()]


def where_on(subject: Subject) -> str:
    """'the brokers' for a cluster-wide value, else 'broker N'."""
    return "the brokers" if subject.kind is SubjectKind.cluster else f"broker {subject.name}"


def show(value: ConfigValue) -> str:
    """``name=value``."""
    return f"{value.name}={value.value}"
