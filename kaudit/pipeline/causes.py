"""Why a row is missing, duplicated, extra or different: each discrepancy reconcile found,
given the cause the pipeline's own records show (pure: evidence in, causes out).

The evidence is what a Kafka Connect sink leaves behind: its committed offsets, its dead
letter queue, its tasks' states and the restarts Connect's status topic recorded, and for
an Iceberg table the snapshots that added or removed each row. A cause is given only where
one of those says it; otherwise the cause is ``unknown``, with what was looked at.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

DEAD_LETTERED = "dead_lettered"
NOT_YET_DELIVERED = "not_yet_delivered"
SKIPPED = "skipped"
DELETED_IN_SINK = "deleted_in_sink"
WRITTEN_TWICE = "written_twice"
REDELIVERED = "redelivered_after_restart"
ADDED_BY_SNAPSHOT = "added_by_snapshot"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class DeadLetter:
    """A record of the dead letter queue, by the source coordinates its headers name."""

    partition: int
    offset: int
    exception: str
    message: str | None = None


@dataclass(frozen=True)
class TaskState:
    """A connector task as the REST API shows it; ``trace``: its first line, when failed."""

    task: int
    state: str
    trace: str | None = None


@dataclass(frozen=True)
class Restart:
    """A task that came back to RUNNING after another state, in Connect's status topic."""

    task: int
    at_ms: int


@dataclass(frozen=True)
class Snapshot:
    """An Iceberg table snapshot: its id, commit time, operation and the Kafka Connect
    sink's commit id (None for a commit made by something else)."""

    snapshot_id: int
    committed_at_ms: int
    operation: str
    commit_id: str | None = None
    valid_through: str | None = None
    """The sink's ``kafka.connect.valid-through-ts``: the records it holds were written
    before this time (epoch ms, as the sink writes it)."""

    def says(self) -> str:
        by = f", commit id {self.commit_id}" if self.commit_id else ""
        through = f", valid through {self.valid_through}" if self.valid_through else ""
        return (f"snapshot {self.snapshot_id} ({self.operation}) at {self.committed_at_ms} ms"
                f"{by}{through}")


@dataclass(frozen=True)
class PipelineEvidence:
    """What was read of the pipeline; None for a part that was not read (``unread`` says
    why), an empty mapping for a part read and empty."""

    committed: Mapping[int, int] | None = None
    end_offsets: Mapping[int, int] = field(default_factory=dict)
    tasks: tuple[TaskState, ...] | None = None
    tolerates_errors: bool = False
    dead_letter_topic: str | None = None
    dead_letters: Mapping[tuple[int, int], DeadLetter] | None = None
    restarts: tuple[Restart, ...] | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    """The connector's settings that bear on what reached the sink, as configured
    (``insert.mode``, ``delete.enabled``, ``transforms``, the queue's context headers)."""
    history_complete: bool = True
    """False where the status topic's history may lack earlier restarts (compacted, or
    read only up to a cap)."""
    added_by: Mapping[str, tuple[Snapshot, ...]] | None = None
    """Iceberg: per key, the snapshots that added each of its rows now in the table."""
    removed_by: Mapping[str, Snapshot] | None = None
    """Iceberg: per key absent now, the snapshot that removed the row an earlier one had."""
    unread: Mapping[str, str] = field(default_factory=dict)
    """What could not be read, and why (e.g. ``{"status topic": "not authorized"}``)."""

    def looked_at(self) -> str:
        parts = (("committed offsets", self.committed), ("dead letter queue", self.dead_letters),
                 ("status topic", self.restarts), ("table snapshots", self.added_by))
        read = [name for name, part in parts if part is not None]
        unread = [f"{what} unread: {why}" for what, why in sorted(self.unread.items())]
        return "; ".join([f"looked at {', '.join(read) or 'nothing'}", *unread])


@dataclass(frozen=True)
class Cause:
    """A discrepancy's cause: its name, one line of evidence, and the evidence's fields."""

    name: str
    evidence: str
    detail: Mapping[str, Any] = field(default_factory=dict)


def missing(partition: int, offset: int, key: str, ev: PipelineEvidence) -> Cause:
    """A topic record whose row the sink lacks."""
    letter = (ev.dead_letters or {}).get((partition, offset))
    if letter is not None:
        said = f": {letter.message}" if letter.message else ""
        return Cause(DEAD_LETTERED, f"in the dead letter queue {ev.dead_letter_topic}: "
                                    f"{letter.exception}{said}",
                     {"exception": letter.exception, "message": letter.message})
    removed = (ev.removed_by or {}).get(key)
    if removed is not None:
        return Cause(DELETED_IN_SINK, f"written, then removed by {removed.says()}",
                     {"snapshot_id": removed.snapshot_id, "at_ms": removed.committed_at_ms,
                      "operation": removed.operation})
    if ev.committed is None or partition not in ev.committed:
        return Cause(UNKNOWN, ev.looked_at())
    position = ev.committed[partition]
    if offset >= position:
        return _not_yet_delivered(partition, position, ev)
    return Cause(SKIPPED, f"below the committed offset {position} of partition {partition}: "
                          f"the connector moved past it ({_not_dead_lettered(ev)}); a row "
                          "deleted from the sink since would look the same",
                 {"committed": position})


def _not_dead_lettered(ev: PipelineEvidence) -> str:
    """Why a record the connector moved past is not in a dead letter queue."""
    if ev.dead_letter_topic is None:
        if ev.tolerates_errors:
            return ("errors.tolerance=all without a dead letter queue: a record that failed "
                    "was dropped without a trace")
        return "the connector has no dead letter queue"
    if ev.dead_letters is None:
        return f"the dead letter queue {ev.dead_letter_topic} was not read"
    return f"not in the dead letter queue {ev.dead_letter_topic}"


def _not_yet_delivered(partition: int, position: int, ev: PipelineEvidence) -> Cause:
    end = ev.end_offsets.get(partition)
    lag = None if end is None else max(end - position, 0)
    failed = [t for t in ev.tasks or () if t.state == "FAILED"]
    states = ", ".join(f"task {t.task} {t.state}" for t in ev.tasks or ()) or "tasks unread"
    line = (f"at or past the committed offset {position} of partition {partition}"
            f"{'' if lag is None else f' (lag {lag})'}; {states}")
    if failed and failed[0].trace:
        line += f": {failed[0].trace}"
    return Cause(NOT_YET_DELIVERED, line, {
        "committed": position, "lag": lag,
        "tasks": [{"task": t.task, "state": t.state, "trace": t.trace} for t in ev.tasks or ()]})


def duplicated(key: str, record_ms: int | None, ev: PipelineEvidence) -> Cause:
    """A key whose row the sink holds more than once."""
    added = (ev.added_by or {}).get(key, ())
    if len({s.snapshot_id for s in added}) > 1:
        return Cause(WRITTEN_TWICE, "added by " + " and again by ".join(s.says() for s in added),
                     {"snapshots": [s.snapshot_id for s in added]})
    if ev.restarts and record_ms is None:  # a restart before the record explains nothing
        return Cause(UNKNOWN, f"{ev.looked_at()}; the status topic shows restarts, but the "
                              "record's time was not read to place them")
    after = [r for r in ev.restarts or () if record_ms is not None and r.at_ms >= record_ms]
    if after:
        first = min(after, key=lambda r: r.at_ms)
        return Cause(REDELIVERED, f"at-least-once redelivery after task {first.task} "
                                  f"restarted at {first.at_ms} ms",
                     {"task": first.task, "restarted_at_ms": first.at_ms})
    return Cause(UNKNOWN, ev.looked_at())


def extra(key: str, ev: PipelineEvidence) -> Cause:
    """A sink row no topic record accounts for."""
    added = (ev.added_by or {}).get(key, ())
    if added:
        return Cause(ADDED_BY_SNAPSHOT, f"added by {added[-1].says()}",
                     {"snapshot_id": added[-1].snapshot_id})
    return Cause(UNKNOWN, ev.looked_at())


def mismatched(latest: tuple[int, int] | None, ev: PipelineEvidence) -> Cause:
    """An upsert sink's row that differs from its key's latest record at ``latest``
    (partition, offset): behind, not wrong, when that record is still to be delivered."""
    if latest is not None and ev.committed is not None and latest[0] in ev.committed:
        partition, offset = latest
        if offset >= ev.committed[partition]:
            return _not_yet_delivered(partition, ev.committed[partition], ev)
    return Cause(UNKNOWN, ev.looked_at())


def breakdown(causes: Iterable[Cause]) -> dict[str, int]:
    """How many discrepancies each cause explains, most first."""
    return dict(Counter(c.name for c in causes).most_common())


@dataclass(frozen=True)
class Discrepancy:
    """One discrepancy reconcile found: its class, key and the topic record concerned
    (where one is known), and that record's time (epoch ms) where it was read."""

    cls: str
    key: str | None
    partition: int | None = None
    offset: int | None = None
    record_ms: int | None = None

    def place(self) -> tuple[int, int] | None:
        if self.partition is None or self.offset is None:
            return None
        return self.partition, self.offset


def _missing(d: Discrepancy, ev: PipelineEvidence) -> Cause:
    place = d.place()
    if place is None:  # a missing record always names its place; unknown if it does not
        return Cause(UNKNOWN, ev.looked_at())
    return missing(place[0], place[1], d.key or "", ev)


#: The classes a pipeline can explain, and how.
EXPLAINED: dict[str, Callable[[Discrepancy, PipelineEvidence], Cause]] = {
    "missing_in_sink": _missing,
    "duplicated_in_sink": lambda d, ev: duplicated(d.key or "", d.record_ms, ev),
    "extra_in_sink": lambda d, ev: extra(d.key or "", ev),
    "mismatched": lambda d, ev: mismatched(d.place(), ev),
}


def cause_of(d: Discrepancy, ev: PipelineEvidence) -> Cause | None:
    """``d``'s cause; None for a class no pipeline explains (e.g. undecodable)."""
    explain = EXPLAINED.get(d.cls)
    return None if explain is None else explain(d, ev)


@dataclass(frozen=True)
class Explanation:
    """What was read of the pipeline and how many discrepancies of each class each cause
    explains (of the first ``classified`` of ``discrepancies``, when there were more)."""

    source: Mapping[str, Any]
    evidence: PipelineEvidence
    causes: Mapping[str, Mapping[str, int]]
    classified: int
    discrepancies: int
    bound_s: float
