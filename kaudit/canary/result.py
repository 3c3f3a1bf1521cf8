"""What a canary run saw, read from its books for the summary report."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from kaudit.canary.book import COUNTS
from kaudit.canary.state import CanaryState


@dataclass(frozen=True)
class CanaryResult:
    """What a canary run saw, for the summary report."""

    topic: str
    run_id: str
    settings: dict[str, Any]
    seconds: float
    partitions: list[dict[str, Any]]
    anomalies: dict[str, int]
    events: list[dict[str, Any]]
    faults: list[dict[str, Any]]
    """What was injected and healed (and the injector's notes): the run's own doing."""
    notes: list[str]
    expect: str | None
    timeline: list[dict[str, Any]] = field(default_factory=list)
    """The last hour, second by second (the HTML page's chart; not in the JSON)."""
    leader_changes: list[dict[str, Any]] = field(default_factory=list)
    """Every leader change the canary saw on its topic, injected or not."""

    def happenings(self) -> list[dict[str, Any]]:
        """Faults, heals and leader changes in the order they happened."""
        return sorted(self.faults + self.leader_changes, key=lambda e: e["at_s"])

    def total(self, count: str) -> int:
        return sum(int(p[count]) for p in self.partitions)

    def lost_causes(self) -> dict[str, int]:
        causes: dict[str, int] = {}
        for p in self.partitions:
            for cause, n in p["lost_causes"].items():
                causes[cause] = causes.get(cause, 0) + n
        return causes

    def violations(self) -> list[str]:
        """One line per reason the verdict is not ``pass`` (as ``probe``: loss always,
        duplicates under exactly-once and at-most-once, reordering under exactly-once)."""
        out = []
        if lost := self.total("lost"):
            causes = ", ".join(f"{n} {c}" for c, n in sorted(self.lost_causes().items()))
            out.append(f"lost: {lost} acknowledged record(s) ({causes})")
        repeated = self.total("duplicated") + self.total("beyond_window")
        if repeated and self.expect in ("exactly-once", "at-most-once"):
            out.append(f"duplicated: {repeated} record(s) read more than once")
        if visible := self.total("aborted_visible"):
            out.append(f"aborted_visible: {visible} record(s) of aborted transactions were "
                       "read by a read_committed reader")
        if self.total("reordered") and self.expect == "exactly-once":
            out.append(f"reordered: {self.total('reordered')} record(s) read out of order")
        if unread := self.total("acked_unread"):
            out.append(f"unverified: {unread} acknowledged record(s) not read back before "
                       "the end (not counted lost)")
        return out

    @property
    def verdict(self) -> str:
        return "fail" if self.violations() else "pass"


def result_of(canary: CanaryState) -> CanaryResult:
    """The canary's books as they stand, for the summary report."""
    with canary.lock:
        partitions = [{"partition": part, **{c: book.counts[c] for c in COUNTS},
                       "lost_causes": {c: n for c, n in book.lost_by_cause.items() if n},
                       **book.unsettled()}
                      for part, book in sorted(canary.books.items())]
        timeline = canary.timeline.rows()
    p = canary.settings.producer
    return CanaryResult(
        topic=canary.settings.topic, run_id=canary.run_id.hex(),
        settings={"acks": p.acks, "idempotence": p.idempotence or p.transactional,
                  "transactional": p.transactional, "rate": p.rate,
                  "message_size": p.message_size, "window_s": canary.settings.window_s,
                  "late_after_s": canary.settings.late_after_s,
                  "faults": [f.label() for f in p.faults], "topic_created": canary.created},
        seconds=round(time.monotonic() - canary.started, 3), partitions=partitions,
        anomalies=dict(canary.anomaly_counts), events=list(canary.events),
        faults=[asdict(e) for e in canary.log.events() if e.kind in ("fault", "heal", "note")],
        leader_changes=[asdict(e) for e in canary.log.events() if e.kind == "leader-change"],
        notes=list(canary.notes), expect=p.expect, timeline=timeline)
