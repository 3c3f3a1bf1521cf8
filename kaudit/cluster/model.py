"""Frozen models of a cluster, as read live, from a snapshot file, or from manifests.

Everything `kaudit check` evaluates is one of these; rules never talk to Kafka.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from types import MappingProxyType
from typing import Any

from kaudit.cluster.acl import AclBinding as AclBinding  # the snapshot's, re-exported
from kaudit.cluster.acl import acl_from_dict, acl_to_dict

# The config value model is the snapshot's too; re-exported for the modules that read it here.
from kaudit.cluster.config_values import ConfigMap as ConfigMap
from kaudit.cluster.config_values import ConfigSource as ConfigSource
from kaudit.cluster.config_values import ConfigValue as ConfigValue
from kaudit.cluster.config_values import config_from_dict, config_to_dict
from kaudit.cluster.config_values import freeze_configs as freeze_configs
from kaudit.cluster.quorum import (
    QuorumState,
    quorum_from_dict,
    quorum_to_dict,
    quorum_unread_of,
)

SNAPSHOT_SCHEMA = "kaudit.snapshot/v1"

ACLS_NOT_IN_SNAPSHOT = "the snapshot was taken before kaudit read ACLs"

TOPIC_NAME_MAX = 249
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]+")


def topic_name_problem(name: str) -> str | None:
    """Why Kafka would refuse ``name`` as a topic name (its own rules), or None.

    Asked before any request: a broker answers an invalid name with INVALID_TOPIC_EXCEPTION,
    which says neither which name nor why.
    """
    if name in ("", ".", ".."):
        return f"{name!r} cannot be a topic name"
    if len(name) > TOPIC_NAME_MAX:
        return f"a topic name has at most {TOPIC_NAME_MAX} characters, this one {len(name)}"
    if not _TOPIC_NAME.fullmatch(name):
        bad = "".join(sorted({ch for ch in name if not _TOPIC_NAME.fullmatch(ch)}))
        return (f"{name!r} has characters Kafka does not allow in a topic name ({bad!r}); "
                "it allows letters, digits, '.', '_' and '-'")
    return None


@dataclass(frozen=True)
class Broker:
    """A registered broker."""

    id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionState:
    """Leadership and replication state of one partition."""

    partition: int
    leader: int | None
    """Leader broker id; None when the partition is offline."""
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...] | None = None
    """Eligible leader replicas (KIP-966): out of the ISR, yet holding every acknowledged
    write, so electable without loss. None when not read (no ELR reader, older snapshot)."""
    last_known_elr: tuple[int, ...] | None = None
    """ELR members that were fenced or shut down uncleanly since: the replicas an unclean
    election should prefer. None when not read."""


def is_internal_topic(name: str) -> bool:
    """True for Kafka's own topics (``__consumer_offsets``, ``__transaction_state``...).

    Kafka names its own topics with a leading ``__``. The internal flag in topic
    metadata is not enough: Kafka sets it only for its group and transaction
    state topics, not for others such as tiered storage's ``__remote_log_metadata``.
    """
    return name.startswith("__")


@dataclass(frozen=True)
class Topic:
    """A topic with its effective configs and partition states."""

    name: str
    internal: bool
    """Kafka's own topic (see :func:`is_internal_topic`)."""
    partition_count: int
    replication_factor: int
    """Declared RF for manifests; the largest replica count across partitions for live topics."""
    configs: ConfigMap = field(default_factory=lambda: MappingProxyType({}))
    partitions: tuple[PartitionState, ...] = ()
    """Empty when the state is not known (manifests): live-state rules then skip."""
    declared_at: str | None = None
    """``file:line`` of the manifest that declares the topic, when it came from one."""
    settings_at: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """``file:line`` of each setting the topic's manifest declares: ``replication_factor``,
    ``partition_count``, its configs by name (``min.insync.replicas``), and ``name`` for the
    line that names it. Empty when the topic was not read from a manifest."""

    def config(self, name: str) -> ConfigValue | None:
        """The effective value of ``name``, if known."""
        return self.configs.get(name)

    def setting_at(self, name: str) -> str | None:
        """Where the manifest sets ``name``, so a finding lands on the line to change; a
        setting it leaves out is missing at the line that names the topic (metadata.name).
        None when the topic was not read from a manifest."""
        return self.settings_at.get(name) or self.settings_at.get("name")


@dataclass(frozen=True)
class PartitionOffsets:
    """Where a partition's log starts and ends, for readers of either isolation level."""

    topic: str
    partition: int
    log_start: int
    """The first offset still stored: retention deleted everything before it."""
    high_watermark: int
    """The end for read_uncommitted readers (every replicated record)."""
    last_stable: int
    """The end for read_committed readers: the first record of the oldest open transaction,
    or the high watermark when none is open."""
    open_since_ms: int | None = None
    """When ``last_stable`` < ``high_watermark``: the time (epoch ms) of the record at the
    last stable offset, so how long read_committed readers have been held back."""


@dataclass(frozen=True)
class GroupOffset:
    """A consumer group's committed position in one partition."""

    topic: str
    partition: int
    committed: int | None
    """None: the group has no committed offset here (``auto.offset.reset`` decides)."""
    unread_since_ms: int | None = None
    """The time (epoch ms) of the first record the group has not read yet, when it lags."""


@dataclass(frozen=True)
class ConsumerGroup:
    """A consumer group (classic or consumer protocol) and its committed offsets."""

    group_id: str
    state: str
    """Kafka's state name: STABLE, EMPTY, PREPARING_REBALANCE, DEAD..."""
    members: int
    offsets: tuple[GroupOffset, ...] = ()


@dataclass(frozen=True)
class ShareMember:
    """A share group member, as its coordinator describes it."""

    member_id: str
    client_id: str
    host: str
    member_epoch: int
    subscribed: tuple[str, ...] = ()
    assignment: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """(topic, partitions) pairs, sorted."""


@dataclass(frozen=True)
class SharePartition:
    """A share group's state on one partition (KIP-932)."""

    topic: str
    partition: int
    start_offset: int | None
    """The share-partition start offset: every record below it is delivered and done with
    (or was skipped); None when the group holds no state there yet."""
    leader_epoch: int | None = None
    lag: int | None = None
    """Records the group has yet to finish with, as the broker counts them (Kafka 4.2+,
    KIP-1226); None when the broker does not say."""
    undelivered_since_ms: int | None = None
    """The time of the record at the start offset (the oldest the group is not done with),
    epoch ms; None when there is none or it was not read."""


@dataclass(frozen=True)
class ShareGroup:
    """A share group: its members, its share-partitions and its group configs."""

    group_id: str
    state: str
    """Kafka's state name: Stable, Empty, Dead, Unknown."""
    coordinator: int
    group_epoch: int = -1
    assignment_epoch: int = -1
    members: tuple[ShareMember, ...] = ()
    partitions: tuple[SharePartition, ...] = ()
    configs: ConfigMap = field(default_factory=lambda: freeze_configs({}))
    """The group's configs (``share.auto.offset.reset``...), as DescribeConfigs gives them."""
    unread: str | None = None
    """What of the group could not be read, and why."""


@dataclass(frozen=True)
class ClusterSnapshot:
    """Everything check needs about a cluster, frozen at one moment."""

    cluster_id: str | None
    controller_id: int | None
    brokers: tuple[Broker, ...]
    broker_configs: Mapping[int, ConfigMap]
    """Effective configs per broker id, with their sources."""
    topics: tuple[Topic, ...]
    taken_at: str
    """ISO-8601 UTC time the snapshot was read."""
    origin: str = "live"
    """``live``, ``snapshot:FILE`` or ``manifests``."""
    live: bool = True
    """False when broker and partition state is unknown (manifests only)."""
    unreadable: tuple[str, ...] = ()
    """Things the reader was not allowed or able to read (ACLs), as short descriptions."""
    offsets: tuple[PartitionOffsets, ...] = ()
    """Log start, high watermark and last stable offset per partition (read with groups)."""
    groups: tuple[ConsumerGroup, ...] | None = None
    """The consumer groups; None when they were not read (``--no-groups``, manifests)."""
    features: Mapping[str, str] | None = None
    """Finalized feature levels by name (``metadata.version``: ``4.3-IV0``,
    ``transaction.version``: ``2``...); None when they were not read."""
    features_unread: str | None = None
    """Why the features were not read (no broker answered ApiVersions, older snapshot)."""
    elr_unread: str | None = None
    """Why the partitions' ELR was not read (None when it was, or when nothing asked)."""
    share_groups: tuple[ShareGroup, ...] | None = None
    """The share groups (KIP-932); None when they were not read."""
    quorum: QuorumState | None = None
    """The KRaft controller quorum (DescribeQuorum); None when it was not read."""
    quorum_unread: str | None = None
    """Why the quorum was not read (not authorized, no answer, an older snapshot)."""
    acls: tuple[AclBinding, ...] | None = None
    """Every ACL binding (DescribeAcls); None when they were not read."""
    acls_unread: str | None = None
    """Why the ACLs were not read (denied, no authorizer, an older snapshot)."""

    def feature_level(self, name: str) -> int | None:
        """A numeric feature's finalized level: 0 when the cluster has not finalized it,
        None when the features were not read."""
        if self.features is None:
            return None
        level = self.features.get(name, "0")
        return int(level) if level.isdigit() else None

    @cached_property
    def kafka_version(self) -> tuple[int, int] | None:
        """(major, minor) of the finalized metadata.version (``4.3-IV0`` -> (4, 3))."""
        found = re.match(r"(\d+)\.(\d+)", (self.features or {}).get("metadata.version", ""))
        return (int(found.group(1)), int(found.group(2))) if found else None

    @property
    def broker_ids(self) -> frozenset[int]:
        """Ids of the brokers that are registered (alive)."""
        return frozenset(b.id for b in self.brokers)

    def broker_config(self, name: str, weakest: Callable[[ConfigValue], Any] | None = None
                      ) -> ConfigValue | None:
        """A broker config as the brokers report it: their one value when they agree.

        When they disagree there is no one value: each broker applies its own to what it
        leads or hosts. Then the value sorted first by ``weakest`` (a key putting the one
        worst for durability first) stands for all, else the lowest-id broker's; either
        way it names its broker (:attr:`ConfigValue.broker`) so a finding can say whose
        it is. Cluster-wide settings (dynamic defaults) always agree."""
        values = self.broker_config_values(name)
        if not values:
            return None
        if len({v.value for v in values.values()}) == 1:  # one value, whatever its source
            return values[min(values)]
        ordered = sorted(values.items(), key=lambda item: (
            weakest(item[1]) if weakest is not None else 0, item[0]))
        broker_id, chosen = ordered[0]
        return replace(chosen, broker=broker_id)

    def broker_config_values(self, name: str) -> dict[int, ConfigValue]:
        """Each broker's entry for ``name``, by broker id (brokers that report it)."""
        return {broker_id: configs[name] for broker_id, configs
                in sorted(self.broker_configs.items()) if name in configs}

    @property
    def taken_at_ms(self) -> int:
        """``taken_at`` in epoch milliseconds (a time without a zone is UTC)."""
        taken = datetime.fromisoformat(self.taken_at)
        if taken.tzinfo is None:
            taken = taken.replace(tzinfo=UTC)
        return int(taken.timestamp() * 1000)

    def partition_offsets(self, topic: str, partition: int) -> PartitionOffsets | None:
        """The offsets of one partition, when they were read."""
        return self._offsets_index.get((topic, partition))

    @cached_property
    def _offsets_index(self) -> Mapping[tuple[str, int], PartitionOffsets]:
        return {(o.topic, o.partition): o for o in self.offsets}

    @cached_property
    def derived(self) -> dict[Any, Any]:
        """What others work out from this snapshot and ask again and again (each topic's
        durability, asked by nine rules), kept with it; never part of its document."""
        return {}


def snapshot_to_dict(snap: ClusterSnapshot) -> dict[str, Any]:
    """The ``kaudit.snapshot/v1`` JSON document (sensitive values dropped)."""
    return {
        "schema": SNAPSHOT_SCHEMA,
        "cluster_id": snap.cluster_id,
        "controller_id": snap.controller_id,
        "taken_at": snap.taken_at,
        "live": snap.live,
        "unreadable": list(snap.unreadable),
        "brokers": [{"id": b.id, "host": b.host, "port": b.port, "rack": b.rack}
                    for b in snap.brokers],
        "broker_configs": {str(bid): config_to_dict(cfg)
                           for bid, cfg in sorted(snap.broker_configs.items())},
        "topics": [{
            "name": t.name,
            "internal": t.internal,
            "partition_count": t.partition_count,
            "replication_factor": t.replication_factor,
            "configs": config_to_dict(t.configs),
            "partitions": [{"partition": p.partition, "leader": p.leader,
                            "replicas": list(p.replicas), "isr": list(p.isr),
                            "elr": _ids_or_none(p.elr),
                            "last_known_elr": _ids_or_none(p.last_known_elr)}
                           for p in t.partitions],
            **({"declared_at": t.declared_at} if t.declared_at else {}),
        } for t in snap.topics],
        "offsets": [{"topic": o.topic, "partition": o.partition, "log_start": o.log_start,
                     "high_watermark": o.high_watermark, "last_stable": o.last_stable,
                     "open_since_ms": o.open_since_ms} for o in snap.offsets],
        "groups": None if snap.groups is None else [{
            "group_id": g.group_id, "state": g.state, "members": g.members,
            "offsets": [{"topic": o.topic, "partition": o.partition, "committed": o.committed,
                         "unread_since_ms": o.unread_since_ms} for o in g.offsets],
        } for g in snap.groups],
        "features": None if snap.features is None else dict(sorted(snap.features.items())),
        "features_unread": snap.features_unread,
        "elr_unread": snap.elr_unread,
        "share_groups": None if snap.share_groups is None else [
            _share_group_to_dict(g) for g in snap.share_groups],
        "quorum": None if snap.quorum is None else quorum_to_dict(snap.quorum),
        "quorum_unread": snap.quorum_unread,
        "acls": None if snap.acls is None else [acl_to_dict(a) for a in snap.acls],
        "acls_unread": snap.acls_unread,
    }


def _share_group_to_dict(g: ShareGroup) -> dict[str, Any]:
    return {
        "group_id": g.group_id, "state": g.state, "coordinator": g.coordinator,
        "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch,
        "members": [{"member_id": m.member_id, "client_id": m.client_id, "host": m.host,
                     "member_epoch": m.member_epoch, "subscribed": list(m.subscribed),
                     "assignment": {t: list(ps) for t, ps in m.assignment}}
                    for m in g.members],
        "partitions": [{"topic": s.topic, "partition": s.partition,
                        "start_offset": s.start_offset, "leader_epoch": s.leader_epoch,
                        "lag": s.lag, "undelivered_since_ms": s.undelivered_since_ms}
                       for s in g.partitions],
        "configs": config_to_dict(g.configs), "unread": g.unread}


def _share_group_from_dict(g: Mapping[str, Any]) -> ShareGroup:
    return ShareGroup(
        group_id=g["group_id"], state=g["state"], coordinator=int(g["coordinator"]),
        group_epoch=int(g.get("group_epoch", -1)),
        assignment_epoch=int(g.get("assignment_epoch", -1)),
        members=tuple(ShareMember(
            member_id=m["member_id"], client_id=m["client_id"], host=m["host"],
            member_epoch=int(m["member_epoch"]), subscribed=tuple(m.get("subscribed", ())),
            assignment=tuple((t, tuple(int(p) for p in ps))
                             for t, ps in sorted(m.get("assignment", {}).items())))
            for m in g.get("members", ())),
        partitions=tuple(SharePartition(
            topic=s["topic"], partition=int(s["partition"]), start_offset=s.get("start_offset"),
            leader_epoch=s.get("leader_epoch"), lag=s.get("lag"),
            undelivered_since_ms=s.get("undelivered_since_ms"))
            for s in g.get("partitions", ())),
        configs=config_from_dict(g.get("configs", {})), unread=g.get("unread"))


def _ids_or_none(ids: tuple[int, ...] | None) -> list[int] | None:
    return None if ids is None else list(ids)


def _ids_from(raw: Any) -> tuple[int, ...] | None:
    return None if raw is None else tuple(int(i) for i in raw)


def snapshot_from_dict(raw: Mapping[str, Any], origin: str) -> ClusterSnapshot:
    """Rebuild a snapshot from its JSON document. Raises KeyError/TypeError/ValueError."""
    if raw.get("schema") != SNAPSHOT_SCHEMA:
        raise ValueError(f"schema is {raw.get('schema')!r}, expected {SNAPSHOT_SCHEMA!r}")
    # Ages (groups, open transactions) are measured from taken_at: it must be a time.
    datetime.fromisoformat(str(raw["taken_at"]))
    return ClusterSnapshot(
        cluster_id=raw.get("cluster_id"),
        controller_id=raw.get("controller_id"),
        taken_at=raw["taken_at"],
        origin=origin,
        live=bool(raw.get("live", True)),
        unreadable=tuple(raw.get("unreadable", ())),
        brokers=tuple(Broker(id=int(b["id"]), host=b["host"], port=int(b["port"]),
                             rack=b.get("rack")) for b in raw["brokers"]),
        broker_configs=MappingProxyType({int(bid): config_from_dict(cfg)
                                         for bid, cfg in raw["broker_configs"].items()}),
        topics=tuple(Topic(
            name=t["name"], internal=bool(t["internal"]),
            partition_count=int(t["partition_count"]),
            replication_factor=int(t["replication_factor"]),
            configs=config_from_dict(t["configs"]),
            partitions=tuple(PartitionState(partition=int(p["partition"]), leader=p["leader"],
                                            replicas=tuple(p["replicas"]), isr=tuple(p["isr"]),
                                            elr=_ids_from(p.get("elr")),
                                            last_known_elr=_ids_from(p.get("last_known_elr")))
                             for p in t["partitions"]),
            declared_at=t.get("declared_at"),
        ) for t in raw["topics"]),
        # Snapshots written before groups were read have neither key.
        offsets=tuple(PartitionOffsets(
            topic=o["topic"], partition=int(o["partition"]), log_start=int(o["log_start"]),
            high_watermark=int(o["high_watermark"]), last_stable=int(o["last_stable"]),
            open_since_ms=o.get("open_since_ms")) for o in raw.get("offsets") or ()),
        groups=None if raw.get("groups") is None else tuple(ConsumerGroup(
            group_id=g["group_id"], state=g["state"], members=int(g["members"]),
            offsets=tuple(GroupOffset(topic=o["topic"], partition=int(o["partition"]),
                                      committed=o.get("committed"),
                                      unread_since_ms=o.get("unread_since_ms"))
                          for o in g["offsets"])) for g in raw["groups"]),
        features=None if raw.get("features") is None else MappingProxyType(
            {str(k): str(v) for k, v in raw["features"].items()}),
        features_unread=raw.get("features_unread"),
        elr_unread=raw.get("elr_unread"),
        share_groups=None if raw.get("share_groups") is None else tuple(
            _share_group_from_dict(g) for g in raw["share_groups"]),
        quorum=None if raw.get("quorum") is None else quorum_from_dict(raw["quorum"]),
        quorum_unread=quorum_unread_of(raw),
        acls=None if raw.get("acls") is None else tuple(
            acl_from_dict(a) for a in raw["acls"]),
        acls_unread=raw.get("acls_unread") if "acls" in raw else ACLS_NOT_IN_SNAPSHOT,
    )
