"""The KRaft controller quorum as DescribeQuorum tells it (KIP-595, KIP-836, KIP-853): who
leads the metadata log, in which epoch, up to where it is committed, and how far each voter
(controller) and observer (broker) has replicated it. Frozen, with its JSON form for
snapshots; read by :mod:`kaudit.cluster.protocol_quorum`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KRAFT_VERSION = "kraft.version"
"""The finalized feature that says whether the quorum is static (0) or dynamic (1+)."""


@dataclass(frozen=True)
class QuorumReplica:
    """One voter's or observer's replica of the metadata log, as the leader last saw it."""

    replica_id: int
    """The node id (a controller's for a voter, a broker's for an observer)."""
    directory_id: str | None = None
    """Its metadata log directory's id, as Kafka prints it (base64, KIP-853); None when
    the quorum does not record one (a static quorum) or the answer predates it (v0, v1)."""
    log_end_offset: int | None = None
    """The last log end offset the leader knows of it; None when unknown."""
    last_fetch_ms: int | None = None
    """When (the leader's clock, epoch ms) it last fetched from the leader; None for the
    leader itself, or when unknown."""
    last_caught_up_ms: int | None = None
    """The leader's append time of the offset it had reached at its latest fetch: it held
    everything written up to then (the leader's own is the time of the answer); None when
    unknown."""


@dataclass(frozen=True)
class ControllerEndpoint:
    """A listener a voter is reached on (DescribeQuorum v2's nodes)."""

    node_id: int
    listener: str
    host: str
    port: int


@dataclass(frozen=True)
class QuorumState:
    """The metadata log's replication, as its leader (the active controller) told it."""

    leader_id: int | None
    """The active controller's node id; None when the quorum has no leader."""
    leader_epoch: int
    high_watermark: int
    """The end of the committed metadata log: what a majority of voters hold."""
    voters: tuple[QuorumReplica, ...]
    observers: tuple[QuorumReplica, ...] = ()
    endpoints: tuple[ControllerEndpoint, ...] = ()
    """The voters' listeners; empty before DescribeQuorum v2 (Kafka 3.9)."""
    answered_by: int | None = None
    """The broker that answered (it forwards the question to the active controller)."""

    @property
    def leader(self) -> QuorumReplica | None:
        """The leader's own entry among the voters."""
        return next((v for v in self.voters if v.replica_id == self.leader_id), None)

    @property
    def failures_tolerated(self) -> int:
        """How many voters may fail while a majority still elects a leader and commits."""
        return max(0, (len(self.voters) - 1) // 2)


def _replica_to_dict(r: QuorumReplica) -> dict[str, Any]:
    return {"replica_id": r.replica_id, "directory_id": r.directory_id,
            "log_end_offset": r.log_end_offset, "last_fetch_ms": r.last_fetch_ms,
            "last_caught_up_ms": r.last_caught_up_ms}


def _replica_from_dict(raw: Mapping[str, Any]) -> QuorumReplica:
    def maybe_int(key: str) -> int | None:
        value = raw.get(key)
        return None if value is None else int(value)

    return QuorumReplica(replica_id=int(raw["replica_id"]), directory_id=raw.get("directory_id"),
                         log_end_offset=maybe_int("log_end_offset"),
                         last_fetch_ms=maybe_int("last_fetch_ms"),
                         last_caught_up_ms=maybe_int("last_caught_up_ms"))


def quorum_to_dict(q: QuorumState) -> dict[str, Any]:
    """The quorum's part of a ``kaudit.snapshot/v1`` document."""
    return {"leader_id": q.leader_id, "leader_epoch": q.leader_epoch,
            "high_watermark": q.high_watermark,
            "voters": [_replica_to_dict(v) for v in q.voters],
            "observers": [_replica_to_dict(o) for o in q.observers],
            "endpoints": [{"node_id": e.node_id, "listener": e.listener, "host": e.host,
                           "port": e.port} for e in q.endpoints],
            "answered_by": q.answered_by}


def quorum_from_dict(raw: Mapping[str, Any]) -> QuorumState:
    """Rebuild the quorum from its JSON form. Raises KeyError/TypeError/ValueError."""
    leader = raw.get("leader_id")
    answered = raw.get("answered_by")
    return QuorumState(
        leader_id=None if leader is None else int(leader),
        leader_epoch=int(raw["leader_epoch"]), high_watermark=int(raw["high_watermark"]),
        voters=tuple(_replica_from_dict(v) for v in raw["voters"]),
        observers=tuple(_replica_from_dict(o) for o in raw.get("observers") or ()),
        endpoints=tuple(ControllerEndpoint(node_id=int(e["node_id"]), listener=e["listener"],
                                           host=e["host"], port=int(e["port"]))
                        for e in raw.get("endpoints") or ()),
        answered_by=None if answered is None else int(answered))


QUORUM_NOT_IN_SNAPSHOT = "the snapshot was taken before kaudit read the controller quorum"


def quorum_unread_of(raw: Mapping[str, Any]) -> str | None:
    """Why a snapshot document has no quorum: its own reason, or that it predates the key."""
    if "quorum" not in raw:
        return QUORUM_NOT_IN_SNAPSHOT
    return None if raw.get("quorum") is not None else raw.get("quorum_unread")
