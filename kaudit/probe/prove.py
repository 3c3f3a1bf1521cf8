"""``kaudit probe prove``: the claims about Kafka delivery, shown on the lab: the producer's
(acks, ISR, idempotence, transactions), the consumer's (when offsets are committed) and the
share group's (redelivery, archiving, lock expiry, where a new group starts).

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
from kaudit.probe.share.model import ShareReport, ShareSettings
from kaudit.probe.share.runner import run_share
from kaudit.probe.share.verify import Fate, Mix, Treatment

SIDES = ("producer", "consumer", "share")
"""The parts of the proof, all by default (``--only`` picks one)."""
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


@dataclass(frozen=True)
class ShareExperiment:
    """One ``probe share`` run of the proof: a short run on one or three partitions whose
    schedule (a worker killed, poison records, a worker past its lock, a late start) makes
    the behaviour happen every time."""

    name: str
    settings: ShareSettings
    fault: str

    def label(self) -> str:
        s = self.settings
        parts = [f"{s.workers} workers, {s.partitions} partition(s)"]
        if s.lock_ms is not None:
            parts.append(f"lock {s.lock_ms} ms")
        if s.delivery_limit is not None:
            parts.append(f"delivery limit {s.delivery_limit}")
        if s.auto_offset_reset != "earliest":
            parts.append(f"starting at {s.auto_offset_reset}")
        return ", ".join(parts)


RunReport = ProbeReport | ConsumeReport | ShareReport
"""The report of one run of the proof, whichever part it belongs to."""
Outcome = Callable[[dict[str, RunReport]], tuple[bool, str]]
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


# Two workers on one partition: a record one of them drops comes straight back to the other.
SHARE_EXPERIMENTS = (
    ShareExperiment("share-kill", ShareSettings(
        count=200, workers=2, partitions=1, kill_worker=True, hold_after=10, lock_ms=15000,
        settle_s=90.0), "a worker SIGKILLed holding its locks"),
    ShareExperiment("share-poison", ShareSettings(
        count=200, mix=Mix(poison=0.05), delivery_limit=3, settle_s=90.0),
        "poison records released on every delivery"),
    ShareExperiment("share-slow", ShareSettings(
        count=100, workers=2, partitions=1, slow_worker=True, hold_after=10, lock_ms=2000,
        settle_s=90.0), "a worker holding a record past its lock"),
    ShareExperiment("share-latest", ShareSettings(
        count=100, auto_offset_reset="latest", settle_s=90.0),
        "records written before the group's first fetch"),
)
"""Every share-group run the proof makes, in order."""


def _fates(report: ShareReport) -> dict[str, int]:
    return {f: report.verification.counts.get(f.value, 0) for f in Fate}


def _killed_comes_back(reports: dict[str, RunReport]) -> tuple[bool, str]:
    report = reports["share-kill"]
    assert isinstance(report, ShareReport)
    n = _fates(report)
    left = n[Fate.never_delivered] + n[Fate.unsettled]
    return (bool(report.killed) and n[Fate.processed_twice] > 0 and left == 0,
            f"processed again {n[Fate.processed_twice]} (the killed worker's), never "
            f"delivered {n[Fate.never_delivered]}, unsettled {n[Fate.unsettled]}")


def _poison_archived(reports: dict[str, RunReport]) -> tuple[bool, str]:
    report = reports["share-poison"]
    assert isinstance(report, ShareReport)
    poison = [a for a in report.verification.accounts if a.treatment == Treatment.poison]
    exact = [a for a in poison if a.fate == Fate.archived and not a.processings
             and a.top_count == report.delivery_limit]
    return (bool(poison) and len(exact) == len(poison),
            f"archived {len(exact)} of {len(poison)} poison records after exactly "
            f"{report.delivery_limit} deliveries")


def _lock_expiry_twice(reports: dict[str, RunReport]) -> tuple[bool, str]:
    report = reports["share-slow"]
    assert isinstance(report, ShareReport)
    n = _fates(report)
    held = [a for a in report.verification.accounts if "held it past its lock" in a.why]
    return (len(held) == 1 and held[0].fate == Fate.processed_twice
            and n[Fate.never_delivered] == 0,
            f"the held record processed {held[0].processings if held else 0} times; "
            f"{n[Fate.processed_twice]} processed twice in all")


def _latest_misses_the_past(reports: dict[str, RunReport]) -> tuple[bool, str]:
    report = reports["share-latest"]
    assert isinstance(report, ShareReport)
    count = report.settings.count
    before = [a for a in report.verification.accounts if a.seq < count]
    missed = [a for a in before if a.fate == Fate.never_delivered
              and "below its partition's start offset" in a.why]
    late = [a for a in report.verification.accounts if a.seq >= count
            and a.fate == Fate.processed]
    return (len(missed) == count and bool(late),
            f"never delivered {len(missed)} of the {count} written before; "
            f"processed {len(late)} written after")


def _consumed(name: str, lost: bool, duplicated: bool) -> Outcome:
    def outcome(reports: dict[str, RunReport]) -> tuple[bool, str]:
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
    def outcome(reports: dict[str, RunReport]) -> tuple[bool, str]:
        report = reports[name]
        assert isinstance(report, ProbeReport)
        return holds(report), _counts(report, *shown)
    return outcome


def _unclean_truncates(reports: dict[str, RunReport]) -> tuple[bool, str]:
    on, off = reports["isr1-unclean"], reports["isr1-clean"]
    assert isinstance(on, ProbeReport) and isinstance(off, ProbeReport)
    offline = off.timeline.summary()["unavailable_seconds"]
    return (on.verification.lost > 0 and off.verification.lost == 0,
            f"unclean on: lost {on.verification.lost}; unclean off: lost "
            f"{off.verification.lost}, unavailable {offline}s")


def _reader_saw_only_replicated(reports: dict[str, RunReport]) -> tuple[bool, str]:
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
    Claim("a share group delivers a killed worker's records again: none lost",
          ("share-kill",), "processed again > 0, never delivered = 0", _killed_comes_back,
          "share"),
    Claim("a record released on every delivery is archived after exactly the limit",
          ("share-poison",), "every poison record archived at the limit", _poison_archived,
          "share"),
    Claim("a worker slower than its lock has its record processed twice",
          ("share-slow",), "the held record processed 2 times", _lock_expiry_twice,
          "share"),
    Claim("a share group starting at latest never delivers what came before",
          ("share-latest",), "never delivered = all written before; later ones processed",
          _latest_misses_the_past, "share"),
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


def judge(reports: dict[str, RunReport], sides: tuple[str, ...] = SIDES) -> list[ProofRow]:
    """Every claim of ``sides`` against the runs made; a claim whose run is missing or
    inconclusive is not confirmed."""
    by_name: dict[str, Experiment | ConsumerExperiment | ShareExperiment] = {
        e.name: e for e in EXPERIMENTS}
    by_name.update((e.name, e) for e in CONSUMER_EXPERIMENTS)
    by_name.update((e.name, e) for e in SHARE_EXPERIMENTS)
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
              ) -> tuple[list[ProofRow], dict[str, RunReport]]:
    """Make every experiment of ``sides`` on a healthy cluster, then judge its claims."""
    # Every schedule signals the lab's brokers: no lab there is exit 2 before any run.
    lab_at(base.lab_state_dir)
    reports: dict[str, RunReport] = {}
    session = AdminSession(conn)
    producer = EXPERIMENTS if "producer" in sides else ()
    consumer = CONSUMER_EXPERIMENTS if "consumer" in sides else ()
    share = SHARE_EXPERIMENTS if "share" in sides else ()
    total = len(producer) + len(consumer) + len(share)
    for n, experiment in enumerate((*producer, *consumer, *share), 1):
        if interrupted.is_set():
            break
        if not wait_until_in_sync(session, SETTLE_WAIT_S, interrupted):
            say(f"some replicas are still out of sync after {SETTLE_WAIT_S:g}s; going on")
        say(f"[{n}/{total}] {experiment.label()}, "
            f"{experiment.fault or 'transactions aborted on purpose'}")
        if isinstance(experiment, ConsumerExperiment):
            reports[experiment.name] = run_consume(
                conn, experiment.settings(base.lab_state_dir), interrupted)
        elif isinstance(experiment, ShareExperiment):
            reports[experiment.name] = run_share(conn, experiment.settings, interrupted)
        else:
            reports[experiment.name] = run_probe(conn, experiment.settings(base), interrupted)
    return judge(reports, sides), reports

