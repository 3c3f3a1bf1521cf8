"""``kaudit probe prove``: the producer-side claims about Kafka delivery, shown on the lab.

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
from kaudit.connect.settings import ConnectionSettings
from kaudit.probe.faults import LabControl, parse_fault
from kaudit.probe.model import ProbeReport, ProbeSettings
from kaudit.probe.runner import run_probe

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


Outcome = Callable[[dict[str, ProbeReport]], tuple[bool, str]]
"""Reads the experiments' reports: (does the claim hold, the observed counts)."""


@dataclass(frozen=True)
class Claim:
    """One row of the proof."""

    claim: str
    experiments: tuple[str, ...]
    expected: str
    outcome: Outcome


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
"""Every run the proof makes, in order."""


def _counts(report: ProbeReport, *names: str) -> str:
    v = report.verification
    return ", ".join(f"{name} {getattr(v, name)}" for name in names)


def _one(name: str, holds: Callable[[ProbeReport], bool], *shown: str) -> Outcome:
    def outcome(reports: dict[str, ProbeReport]) -> tuple[bool, str]:
        report = reports[name]
        return holds(report), _counts(report, *shown)
    return outcome


def _unclean_truncates(reports: dict[str, ProbeReport]) -> tuple[bool, str]:
    on, off = reports["isr1-unclean"], reports["isr1-clean"]
    offline = off.timeline.summary()["unavailable_seconds"]
    return (on.verification.lost > 0 and off.verification.lost == 0,
            f"unclean on: lost {on.verification.lost}; unclean off: lost "
            f"{off.verification.lost}, unavailable {offline}s")


def _reader_saw_only_replicated(reports: dict[str, ProbeReport]) -> tuple[bool, str]:
    report = reports["acks1"]
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


def judge(reports: dict[str, ProbeReport]) -> list[ProofRow]:
    """Every claim against the runs made; a claim whose run is missing or inconclusive
    is not confirmed."""
    by_name = {e.name: e for e in EXPERIMENTS}
    rows = []
    for claim in CLAIMS:
        used = [by_name[name] for name in claim.experiments]
        schedule = " / ".join(dict.fromkeys(e.fault or "aborts" for e in used))
        settings = " vs ".join(e.label() for e in used)
        missing = [name for name in claim.experiments if name not in reports]
        inconclusive = [name for name in claim.experiments
                        if name in reports and reports[name].inconclusive()]
        if missing or inconclusive:
            observed = (f"run {', '.join(missing)} not made" if missing
                        else f"run {', '.join(inconclusive)} inconclusive (nothing acknowledged)")
            rows.append(ProofRow(claim, schedule, settings, observed, False))
            continue
        holds, observed = claim.outcome(reports)
        rows.append(ProofRow(claim, schedule, settings, observed, holds))
    return rows


def run_proof(conn: ConnectionSettings, base: ProbeSettings, interrupted: threading.Event,
              say: Callable[[str], None]) -> tuple[list[ProofRow], dict[str, ProbeReport]]:
    """Make every experiment on a healthy cluster, then judge every claim."""
    from kaudit.lab.state import default_state_dir

    # Every schedule signals the lab's brokers: no lab there is exit 2 before any run.
    LabControl((base.lab_state_dir or default_state_dir()).expanduser())
    reports: dict[str, ProbeReport] = {}
    session = AdminSession(conn)
    for n, experiment in enumerate(EXPERIMENTS, 1):
        if interrupted.is_set():
            break
        if not wait_until_in_sync(session, SETTLE_WAIT_S, interrupted):
            say(f"some replicas are still out of sync after {SETTLE_WAIT_S:g}s; going on")
        say(f"[{n}/{len(EXPERIMENTS)}] {experiment.label()}, "
            f"{experiment.fault or 'transactions aborted on purpose'}")
        report = run_probe(conn, experiment.settings(base), interrupted)
        reports[experiment.name] = report
    return judge(reports), reports

