"""``kaudit probe prove``: the claims about Kafka delivery, shown on the lab: the producer's
(acks, ISR, idempotence, transactions) and the consumer's (when offsets are committed).

Each claim is checked on one or two *experiments*: probe runs whose fault schedule makes the
failure happen (see :mod:`kaudit.probe.faults`), so the expected outcome is reached every
run, not by chance. A claim is CONFIRMED only when every run it reads had acknowledged
writes to judge (an inconclusive run confirms nothing) and the counts show what it says.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from kaudit.cluster.client import AdminSession
from kaudit.cluster.topics import wait_until_in_sync
from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.consume.model import ConsumeReport, ConsumeSettings
from kaudit.probe.consume.runner import run_consume
from kaudit.probe.faults.lab import lab_at
from kaudit.probe.faults.registry import parse_fault
from kaudit.probe.model import ProbeReport, ProbeSettings
from kaudit.probe.runner import run_probe

SIDES = ("producer", "consumer")
"""The halves of the proof, both by default (``--only`` picks one)."""
SETTLE_WAIT_S = 120.0
"""How long a healthy cluster (every replica in sync) is waited for before each run."""


@dataclass(frozen=True)
class Experiment:
    """One probe run of the proof: its settings as changes to the base settings."""

    name: str
    changes: dict[str, object]
    fault: str | None = None

    def settings(self, base: ProbeSettings) -> ProbeSettings:
        """The base settings with this experiment's changes and fault."""
        faults = (parse_fault(self.fault),) if self.fault else ()
        return replace(base, faults=faults, **self.changes)  # type: ignore[arg-type]

    def label(self) -> str:
        """The settings that matter, as a reader of the table wants them."""
        c = self.changes
        parts = [f"acks={c.get('acks', 'all')}"]
        if c.get("transactional"):
            parts.append("transactional")
        else:
            parts.append("idempotence " + ("on" if c.get("idempotence", True) else "off"))
        if "min_insync_replicas" in c:
            parts.append(f"min.isr={c['min_insync_replicas']}")
        if "unclean_leader_election" in c:
            parts.append("unclean " + ("on" if c["unclean_leader_election"] else "off"))
        if c.get("abort_ratio"):
            parts.append(f"abort {c['abort_ratio']:g}")
        return ", ".join(parts)


@dataclass(frozen=True)
class ConsumerExperiment:
    """One ``probe consume`` run of the proof: a commit strategy under worker crashes that
    land between its two steps, every time."""

    name: str
    strategy: str
    fault: str = "worker crashes"

    def settings(self, lab_state_dir: Path | None) -> ConsumeSettings:
        # The input is written over 4 s while the group reads it, so the crashes (one a
        # second from the first batch on) always have batches to land on.
        return ConsumeSettings(strategy=self.strategy, workers=2, count=2000, rate=500.0,
                               partitions=3, batch=25, process_ms=20.0, crash_every=1.0,
                               max_crashes=3, lab_state_dir=lab_state_dir)

    def label(self) -> str:
        return f"--commit {self.strategy}"


Report = ProbeReport | ConsumeReport
Outcome = Callable[[dict[str, Report]], tuple[bool, str]]
"""Reads the experiments' reports: (does the claim hold, the observed counts)."""


@dataclass(frozen=True)
class Claim:
    """One row of the proof."""

    claim: str
    experiments: tuple[str, ...]
    expected: str
    outcome: Outcome
    side: str = "producer"


EXPERIMENTS = (
    Experiment("acks0", {"acks": "0", "idempotence": False}, "lag-then-kill-leader"),
    Experiment("acks1", {"acks": "1", "idempotence": False, "e2e_latency": True},
               "lag-then-kill-leader"),
    Experiment("acksall", {"acks": "all", "idempotence": False, "min_insync_replicas": 2},
               "lag-then-kill-leader"),
    Experiment("isr1-unclean", {"min_insync_replicas": 1, "unclean_leader_election": True},
               "shrink-isr-then-kill-leader"),
    Experiment("isr1-clean", {"min_insync_replicas": 1, "unclean_leader_election": False},
               "shrink-isr-then-kill-leader"),
    Experiment("retries", {"idempotence": False}, "lose-responses"),
    Experiment("idempotent", {"idempotence": True}, "lose-responses"),
    Experiment("idempotent-restart", {"idempotence": True}, "restart-producer"),
    Experiment("txn-restart", {"transactional": True, "txn_size": 500}, "restart-producer"),
    Experiment("txn-aborts", {"transactional": True, "txn_size": 500, "abort_ratio": 0.5}),
)
"""Every producer run the proof makes, in order."""

CONSUMER_EXPERIMENTS = tuple(ConsumerExperiment(f"consume-{strategy}", strategy) for strategy
                             in ("before-process", "after-process", "transactional",
                                 "sink-offsets"))
"""Every consumer run the proof makes, in order."""


def _consumed(name: str, lost: bool, duplicated: bool) -> Outcome:
    def outcome(reports: dict[str, Report]) -> tuple[bool, str]:
        report = reports[name]
        assert isinstance(report, ConsumeReport)
        v = report.verification
        holds = (v.lost > 0) == lost and (v.duplicated > 0) == duplicated and report.finished
        return holds, (f"lost {v.lost}, duplicated {v.duplicated} after {len(v.crashes)} "
                       f"crash(es)")
    return outcome


def _counts(report: ProbeReport, *names: str) -> str:
    v = report.verification
    return ", ".join(f"{name} {getattr(v, name)}" for name in names)


def _one(name: str, holds: Callable[[ProbeReport], bool], *shown: str) -> Outcome:
    def outcome(reports: dict[str, Report]) -> tuple[bool, str]:
        report = reports[name]
        assert isinstance(report, ProbeReport)
        return holds(report), _counts(report, *shown)
    return outcome


def _unclean_truncates(reports: dict[str, Report]) -> tuple[bool, str]:
    on, off = reports["isr1-unclean"], reports["isr1-clean"]
    assert isinstance(on, ProbeReport) and isinstance(off, ProbeReport)
    offline = off.timeline.summary()["unavailable_seconds"]
    return (on.verification.lost > 0 and off.verification.lost == 0,
            f"unclean on: lost {on.verification.lost}; unclean off: lost "
            f"{off.verification.lost}, unavailable {offline}s")


def _reader_saw_only_replicated(reports: dict[str, Report]) -> tuple[bool, str]:
    report = reports["acks1"]
    assert isinstance(report, ProbeReport)
    return (report.verification.lost > 0 and report.read_then_lost == 0,
            f"lost {report.verification.lost}, of which a reader had seen "
            f"{report.read_then_lost}")


CLAIMS = (
    Claim("acks=0 loses writes in a failure", ("acks0",), "lost > 0",
          _one("acks0", lambda r: r.verification.lost > 0, "sent", "lost")),
    Claim("acks=1 loses acknowledged writes when the leader dies first", ("acks1",),
          "lost > 0", _one("acks1", lambda r: r.verification.lost > 0, "acked", "lost")),
    Claim("acks=all with min.insync.replicas=2 does not", ("acksall",), "lost = 0",
          _one("acksall", lambda r: r.verification.lost == 0, "acked", "lost")),
    Claim("min.insync.replicas=1 makes acks=all into acks=1 once the ISR shrinks",
          ("isr1-unclean",), "lost > 0",
          _one("isr1-unclean", lambda r: r.verification.lost > 0, "acked", "lost")),
    Claim("unclean election truncates acknowledged writes", ("isr1-unclean", "isr1-clean"),
          "lost > 0 with it on; 0 with it off (offline instead)", _unclean_truncates),
    Claim("retries without idempotence duplicate", ("retries",), "duplicated > 0",
          _one("retries", lambda r: r.verification.duplicated > 0, "duplicated",
               "duplicate_copies")),
    Claim("idempotence does not", ("idempotent",), "duplicated = 0, reordered = 0",
          _one("idempotent", lambda r: r.verification.duplicated == 0
               and r.verification.reordered == 0, "duplicated", "reordered")),
    Claim("idempotence holds for one producer session only", ("idempotent-restart",),
          "duplicated > 0", _one("idempotent-restart",
                                 lambda r: r.verification.duplicated > 0, "duplicated")),
    Claim("a transactional id fences the old session", ("txn-restart",),
          "duplicated = 0 for read_committed",
          _one("txn-restart", lambda r: r.verification.duplicated == 0
               and r.verification.lost == 0, "duplicated", "lost")),
    Claim("read_committed never sees aborted records", ("txn-aborts",),
          "aborted > 0 (in the log), aborted_visible = 0",
          _one("txn-aborts", lambda r: r.verification.aborted > 0
               and r.verification.aborted_visible == 0, "aborted", "aborted_visible")),
    Claim("consumers see only replicated writes (high watermark)", ("acks1",),
          "no message read and then lost", _reader_saw_only_replicated),
    Claim("committing before processing loses what a crash interrupts",
          ("consume-before-process",), "lost > 0, duplicated = 0",
          _consumed("consume-before-process", lost=True, duplicated=False), "consumer"),
    Claim("processing before committing repeats it", ("consume-after-process",),
          "duplicated > 0, lost = 0",
          _consumed("consume-after-process", lost=False, duplicated=True), "consumer"),
    Claim("offsets in the producer's transaction: exactly once for read_committed",
          ("consume-transactional",), "lost = 0, duplicated = 0",
          _consumed("consume-transactional", lost=False, duplicated=False), "consumer"),
    Claim("results and offsets in one sink transaction: exactly once",
          ("consume-sink-offsets",), "lost = 0, duplicated = 0",
          _consumed("consume-sink-offsets", lost=False, duplicated=False), "consumer"),
)
"""The rows of the proof, each naming the experiments it reads."""


@dataclass(frozen=True)
class ProofRow:
    """One claim, the runs it read, and the verdict."""

    claim: Claim
    schedule: str
    settings: str
    observed: str
    confirmed: bool


def base_settings(lab_state_dir: Path | None, count: int, rate: float) -> ProbeSettings:
    """The settings every run of the proof shares: one partition, three replicas."""
    return ProbeSettings(partitions=1, replication_factor=3, min_insync_replicas=2,
                         count=count, rate=rate, fault_at=("progress", 0.3),
                         fault_duration=3.0, lab_state_dir=lab_state_dir,
                         e2e_latency=False)


def judge(reports: dict[str, Report], sides: tuple[str, ...] = SIDES) -> list[ProofRow]:
    """Every claim of ``sides`` against the runs made; a claim whose run is missing or
    inconclusive is not confirmed."""
    by_name: dict[str, Experiment | ConsumerExperiment] = {e.name: e for e in EXPERIMENTS}
    by_name.update((e.name, e) for e in CONSUMER_EXPERIMENTS)
    rows = []
    for claim in (c for c in CLAIMS if c.side in sides):
        used = [by_name[name] for name in claim.experiments]
        schedule = " / ".join(dict.fromkeys(e.fault or "aborts" for e in used))
        settings = " vs ".join(e.label() for e in used)
        missing = [name for name in claim.experiments if name not in reports]
        inconclusive = [name for name in claim.experiments
                        if name in reports and reports[name].inconclusive()]
        if missing or inconclusive:
            observed = (f"run {', '.join(missing)} not made" if missing
                        else f"run {', '.join(inconclusive)} inconclusive "
                             f"({reports[inconclusive[0]].inconclusive_reason()})")
            rows.append(ProofRow(claim, schedule, settings, observed, False))
            continue
        holds, observed = claim.outcome(reports)
        rows.append(ProofRow(claim, schedule, settings, observed, holds))
    return rows


def run_proof(conn: ConnectionSettings, base: ProbeSettings, interrupted: threading.Event,
              say: Callable[[str], None], sides: tuple[str, ...] = SIDES
              ) -> tuple[list[ProofRow], dict[str, Report]]:
    """Make every experiment of ``sides`` on a healthy cluster, then judge its claims."""
    # Every schedule signals the lab's brokers: no lab there is exit 2 before any run.
    lab_at(base.lab_state_dir)
    reports: dict[str, Report] = {}
    session = AdminSession(conn)
    producer = EXPERIMENTS if "producer" in sides else ()
    consumer = CONSUMER_EXPERIMENTS if "consumer" in sides else ()
    total = len(producer) + len(consumer)
    for n, experiment in enumerate((*producer, *consumer), 1):
        if interrupted.is_set():
            break
        if not wait_until_in_sync(session, SETTLE_WAIT_S, interrupted):
            say(f"some replicas are still out of sync after {SETTLE_WAIT_S:g}s; going on")
        say(f"[{n}/{total}] {experiment.label()}, "
            f"{experiment.fault or 'transactions aborted on purpose'}")
        if isinstance(experiment, ConsumerExperiment):
            reports[experiment.name] = run_consume(
                conn, experiment.settings(base.lab_state_dir), interrupted)
        else:
            reports[experiment.name] = run_probe(conn, experiment.settings(base), interrupted)
    return judge(reports, sides), reports

