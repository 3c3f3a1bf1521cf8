"""The settings of one ``kaudit probe consume`` run and its report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaudit.probe.consume.verify import ConsumeVerification
from kaudit.probe.faults.registry import FaultAt, FaultSpec, describe_fault_at

PROMISES = {
    "before-process": "at-most-once",
    "after-process": "at-least-once",
    "auto": "none",
    "transactional": "exactly-once",
    "sink-offsets": "exactly-once",
}
"""What each strategy promises when a worker crashes: committing before processing may lose
records, after it may repeat them; a transaction, or offsets kept in the sink with the
results, does neither; auto-commit, on a timer, promises nothing."""


@dataclass(frozen=True)
class ConsumeSettings:
    """Everything that shapes one consumer run."""

    strategy: str = "after-process"
    workers: int = 2
    count: int = 5000
    rate: float = 250.0
    """Input records written per second while the workers read (0: all before they
    start)."""
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int | None = 2
    batch: int = 50
    process_ms: float = 20.0
    auto_commit_ms: int = 1000
    crash_every: float | None = None
    crash_point: str = "between"
    """``between``: at the strategy's crash point (:data:`~kaudit.probe.consume.worker.
    CRASH_POINTS`), every time; ``anywhere``: a SIGKILL at whatever the worker is doing."""
    max_crashes: int | None = None
    rebalance_every: float | None = None
    static_membership: bool = True
    faults: tuple[FaultSpec, ...] = ()
    fault_at: FaultAt = ("progress", 0.4)
    fault_duration: float = 10.0
    lab_state_dir: Path | None = None
    expect: str | None = None
    keep: bool = False
    sink: str | None = None
    """``--sink`` of ``--commit sink-offsets`` (None: a SQLite file of the run's own)."""
    seed: int = 0
    session_timeout_ms: int = 6000
    transaction_timeout_ms: int = 60000

    def describe(self) -> dict[str, Any]:
        """The settings as the report shows them."""
        return {
            "commit": self.strategy, "workers": self.workers, "count": self.count,
            "rate": self.rate or None,
            "partitions": self.partitions, "replication_factor": self.replication_factor,
            "min_insync_replicas": self.min_insync_replicas, "batch": self.batch,
            "process_ms": self.process_ms,
            "auto_commit_ms": self.auto_commit_ms if self.strategy == "auto" else None,
            "crash_every": self.crash_every, "crash_point": self.crash_point,
            "max_crashes": self.max_crashes, "rebalance_every": self.rebalance_every,
            "static_membership": self.static_membership, "faults": [f.label() for f in self.faults],
            "fault_at": describe_fault_at(self.fault_at) if self.faults else None,
            "fault_duration": self.fault_duration if self.faults else None,
            "expect": self.expect, "seed": self.seed,
        }


@dataclass(frozen=True)
class ConsumeEvent:
    """Something the runner did or saw, seconds from the start of the run."""

    at_s: float
    kind: str
    detail: str


@dataclass(frozen=True)
class ConsumeReport:
    """The outcome of one consumer run."""

    run_id: str
    topic: str
    output_topic: str | None
    group: str
    settings: ConsumeSettings
    verification: ConsumeVerification
    events: list[ConsumeEvent]
    started_ns: int
    fill_seconds: float
    consume_seconds: float
    total_seconds: float
    restarts: int
    finished: bool
    """Every input record was committed (by the group, or in the sink) before the stop."""
    interrupted: bool
    topics_deleted: bool
    sink: str | None = None
    """The sink-offsets database as shown (a password masked)."""
    notes: list[str] = field(default_factory=list)

    @property
    def per_worker_rate(self) -> float:
        """Input records processed per second per worker (processings / consume time)."""
        if self.consume_seconds <= 0:
            return 0.0
        return self.verification.processings / self.consume_seconds / self.settings.workers

    def never_consumed(self) -> bool:
        """The group stopped making progress without processing a single record: its
        workers never got going (a setting the brokers refuse, a missing ACL), so nothing
        was shown about the commit strategy, and its records were not lost by it."""
        return (not self.finished and not self.interrupted
                and self.verification.processings == 0)

    def inconclusive(self) -> bool:
        """Whether the run has shown nothing about what it was asked: crashes were asked for
        and none landed, or the group never consumed at all."""
        return ((bool(self.settings.crash_every) and not self.verification.crashes)
                or self.never_consumed())

    def inconclusive_reason(self) -> str:
        """Why :meth:`inconclusive`, in a few words (for the proof's table)."""
        return "the group consumed nothing" if self.never_consumed() else (
            "no crash landed on a batch")

    def violations(self) -> list[str]:
        """One line per reason the verdict is not ``pass``."""
        out = []
        if self.never_consumed():
            out.append("inconclusive: the group processed no record before it stopped making "
                       "progress; its workers never consumed (see the notes and -v), so "
                       "nothing was shown about --commit")
        elif self.inconclusive():
            out.append("inconclusive: --crash-worker was asked for and no crash landed on a "
                       "batch before the group had read everything (more --count, a lower "
                       "--rate or more --process-ms give the crashes time)")
        out += self.verification.violations(self.settings.expect)
        if not self.finished:
            out.append("unfinished: the group stopped making progress before every input "
                       "record was committed; what it never reached counts as lost")
        return out

    @property
    def verdict(self) -> str:
        """``pass`` or ``fail`` for the expected semantics; ``inconclusive`` when crashes
        were asked for and none landed: the run has shown nothing about them."""
        if self.inconclusive():
            return "inconclusive"
        return "fail" if self.violations() else "pass"
