"""The settings of one ``kaudit probe share`` run and its report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kaudit.probe.share.verify import Mix, ShareVerification


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
    hold_after: int = 20
    lock_ms: int | None = None
    """``share.record.lock.duration.ms`` for the run's group (None: the brokers')."""
    delivery_limit: int | None = None
    """``share.delivery.count.limit`` for the run's group (Kafka 4.3; None: the brokers')."""
    settle_s: float = 120.0
    """How long the workers may take to bring every record to its end."""
    expect: str | None = None
    keep: bool = False

    def describe(self) -> dict[str, Any]:
        """The settings as the report shows them."""
        return {"count": self.count, "partitions": self.partitions,
                "replication_factor": self.replication_factor, "workers": self.workers,
                "release": self.mix.release, "reject": self.mix.reject,
                "poison": self.mix.poison, "kill_worker": self.kill_worker,
                "hold_after": self.hold_after if self.kill_worker else None,
                "lock_ms": self.lock_ms, "delivery_limit": self.delivery_limit,
                "settle_s": self.settle_s, "expect": self.expect}


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
