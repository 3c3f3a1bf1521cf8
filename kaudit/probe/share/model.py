"""The settings of one ``kaudit probe share`` run and its report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaudit.probe.faults.registry import FaultAt, FaultSpec, describe_fault_at
from kaudit.probe.monitor import ProbeEvent
from kaudit.probe.share.verify import Mix, ShareSecond, ShareVerification


@dataclass(frozen=True)
class ShareSettings:
    """Everything that shapes one share-group run."""

    count: int = 1000
    partitions: int = 3
    replication_factor: int = 3
    workers: int = 3
    mix: Mix = field(default_factory=Mix)
    kill_worker: bool = False
    """The first worker to have processed ``hold_after`` records stops acknowledging,
    holding its records' locks, and is SIGKILLed: its records must come back to the
    others."""
    auto_offset_reset: str = "earliest"
    """The group's ``share.auto.offset.reset`` (Kafka's default is latest: a new group
    never delivers what was written before it first fetched)."""
    processing_ms: int = 0
    """How long each worker takes over each record it processes."""
    slow_worker: bool = False
    """The first worker to have processed ``hold_after`` records holds the last one past
    its lock, until another worker has processed it too: a duplicate processing."""
    hold_after: int = 20
    lock_ms: int | None = None
    """``share.record.lock.duration.ms`` for the run's group (None: the brokers')."""
    delivery_limit: int | None = None
    """``share.delivery.count.limit`` for the run's group (Kafka 4.3; None: the brokers')."""
    settle_s: float = 120.0
    """How long the workers may take to bring every record to its end."""
    expect: str | None = None
    keep: bool = False
    faults: tuple[FaultSpec, ...] = ()
    fault_at: FaultAt = ("progress", 0.3)
    """When the faults strike: a share of the records processed, or seconds."""
    fault_duration: float = 10.0
    lab_state_dir: Path | None = None

    def describe(self) -> dict[str, Any]:
        """The settings as the report shows them."""
        return {"count": self.count, "partitions": self.partitions,
                "replication_factor": self.replication_factor, "workers": self.workers,
                "processing_ms": self.processing_ms,
                "auto_offset_reset": self.auto_offset_reset,
                "release": self.mix.release, "reject": self.mix.reject,
                "poison": self.mix.poison, "kill_worker": self.kill_worker,
                "slow_worker": self.slow_worker,
                "hold_after": self.hold_after if self.kill_worker or self.slow_worker
                else None,
                "lock_ms": self.lock_ms, "delivery_limit": self.delivery_limit,
                "settle_s": self.settle_s, "expect": self.expect,
                "faults": [f.label() for f in self.faults],
                "fault_at": describe_fault_at(self.fault_at) if self.faults else None,
                "fault_duration": self.fault_duration if self.faults else None}


@dataclass
class ShareReport:
    """What one run did and found."""

    run_id: str
    topic: str
    group: str
    settings: ShareSettings
    written: int
    """Records the brokers acknowledged."""
    delivery_limit: int
    verification: ShareVerification
    killed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    settled: bool = False
    """Every record reached its end before ``settle_s`` ran out."""
    seconds: float = 0.0
    topic_deleted: bool = False
    events: list[ProbeEvent] = field(default_factory=list)
    """What the run did to the group and the cluster (a worker killed, a broker killed or
    restarted), seconds from the start."""
    timeline: list[ShareSecond] = field(default_factory=list)
    """The workers' deliveries second by second, from the start of the run."""

    def inconclusive(self) -> bool:
        """Whether the run has shown nothing about what it was asked: the worker to kill
        or to slow down never got that far, or no record was processed at all."""
        return bool(self.inconclusive_reason())

    def inconclusive_reason(self) -> str:
        """Why :meth:`inconclusive`, in a few words ("" when it is not)."""
        accounts = self.verification.accounts
        if self.settings.kill_worker and not self.killed:
            return "no worker was killed"
        if self.settings.slow_worker and not any("held it past its lock" in a.why
                                                 for a in accounts):
            return "no record was held past its lock"
        if not any(a.processings for a in accounts):
            return "no record was processed"
        return ""

    @property
    def verdict(self) -> str:
        """``pass``, ``fail`` (the expected semantics broken, or records left unsettled
        under an expectation), or ``none`` (nothing was expected)."""
        if self.verification.holds is None:
            return "none"
        return "pass" if self.verification.holds else "fail"

    def violations(self) -> list[str]:
        """One line per kind of violation, with a count and an example record."""
        by_wrong: dict[str, list[int]] = {}
        for account in self.verification.violations:
            by_wrong.setdefault(account.wrong.split(":")[0], []).append(account.seq)
        return [f"{len(seqs)} record(s) {wrong} (e.g. record {seqs[0]})"
                for wrong, seqs in sorted(by_wrong.items())]
