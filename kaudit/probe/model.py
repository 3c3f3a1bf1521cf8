"""A probe run's settings and its report: what :func:`kaudit.probe.runner.run_probe` takes
and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaudit.probe.faults import FaultSpec
from kaudit.probe.latency import LatencyHistogram, Timeline
from kaudit.probe.ledger import Ledger
from kaudit.probe.monitor import ProbeEvent
from kaudit.probe.verifier import Verification

DEFAULT_DELIVERY_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class ProbeSettings:
    """Everything that shapes one probe run."""

    topic: str | None = None
    existing: bool = False
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int | None = 2
    unclean_leader_election: bool | None = None
    acks: str = "all"
    idempotence: bool = True
    transactional: bool = False
    txn_size: int = 100
    abort_ratio: float = 0.0
    retries: int | None = None
    max_in_flight: int | None = None
    linger_ms: int | None = None
    compression: str | None = None
    message_size: int = 100
    rate: float | None = None
    count: int | None = None
    duration: float | None = None
    faults: tuple[FaultSpec, ...] = ()
    fault_at: tuple[str, float] = ("progress", 0.4)
    fault_duration: float = 10.0
    expect: str | None = None
    keep: bool = False
    lab_state_dir: Path | None = None
    e2e_latency: bool = True
    producer_properties: dict[str, str] = field(default_factory=dict)
    """Extra producer-only properties (e.g. request.timeout.ms for duplicate experiments)."""

    def producer_config(self) -> dict[str, Any]:
        """librdkafka producer settings for these options."""
        conf: dict[str, Any] = {
            "acks": self.acks,
            "enable.idempotence": self.idempotence or self.transactional,
            "message.timeout.ms": DEFAULT_DELIVERY_TIMEOUT_MS,
        }
        for key, value in (("retries", self.retries),
                           ("max.in.flight.requests.per.connection", self.max_in_flight),
                           ("linger.ms", self.linger_ms), ("compression.type", self.compression)):
            if value is not None:
                conf[key] = value
        conf.update(self.producer_properties)
        return conf

    def describe(self) -> dict[str, Any]:
        """The settings as the report shows them."""
        return {
            "partitions": self.partitions, "replication_factor": self.replication_factor,
            "min_insync_replicas": self.min_insync_replicas,
            "unclean_leader_election": self.unclean_leader_election,
            "acks": self.acks, "idempotence": self.idempotence or self.transactional,
            "transactional": self.transactional,
            "txn_size": self.txn_size if self.transactional else None,
            "abort_ratio": self.abort_ratio if self.transactional else None,
            "retries": self.retries, "max_in_flight": self.max_in_flight,
            "linger_ms": self.linger_ms, "compression": self.compression,
            "message_size": self.message_size, "rate": self.rate, "count": self.count,
            "duration": self.duration, "faults": [f.label() for f in self.faults],
            "fault_at": (f"{self.fault_at[1] * 100:g}%" if self.fault_at[0] == "progress"
                         else f"{self.fault_at[1]:g}s") if self.faults else None,
            "fault_duration": self.fault_duration if self.faults else None,
            "expect": self.expect, "existing_topic": self.existing,
            "producer_properties": dict(self.producer_properties),
        }


@dataclass(frozen=True)
class ProbeReport:
    """The outcome of one run."""

    run_id: str
    topic: str
    settings: ProbeSettings
    verification: Verification
    ledger: Ledger
    ack_latency: LatencyHistogram
    e2e_latency: LatencyHistogram | None
    timeline: Timeline
    events: list[ProbeEvent]
    produce_seconds: float
    total_seconds: float
    send_errors: dict[str, int]
    drain_complete: bool
    interrupted: bool
    topic_deleted: bool
    notes: list[str]
    live_verification: bool = False
    """Whether pass 1 was the live pass, read while producing (see :mod:`kaudit.probe.runner`)."""

    @property
    def verdict(self) -> str:
        """``pass`` or ``fail`` for the expected semantics."""
        if not self.drain_complete:
            return "fail"
        return self.verification.verdict(self.settings.expect)

    def violations(self) -> list[str]:
        """One line per reason the verdict is ``fail``."""
        out = list(self.verification.violations(self.settings.expect))
        if not self.drain_complete:
            out.append("could not read every partition back past its last acknowledged offset")
        return out

