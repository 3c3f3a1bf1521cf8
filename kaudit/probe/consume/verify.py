"""Account for every input record of a consumer run, and name the crash behind each loss
and each repeat. Pure: journals and processings in, a :class:`ConsumeVerification` out.

- ``lost``: an input record processed 0 times.
- ``duplicated``: an input record processed more than once (``extra_processings`` counts
  the repeats, ``times`` how many records were processed how often).
- ``reordered``: an input record first processed after a higher offset of its partition had
  been (a repeat of an earlier record is not a reorder; a lost record is a gap, not one).

Attribution, per crashed incarnation X (its journal, :mod:`~kaudit.probe.consume.journal`):
a lost record X had polled but never processed is X's; a record X processed but did not
commit past, and that another incarnation processed again after X died, is a repeat X
caused. What no crash explains is ``unattributed`` (e.g. a rebalance that moved a partition
between a member's processing and its commit).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from kaudit.probe.consume.journal import Entry, ranges_text


@dataclass(frozen=True, slots=True)
class Processing:
    """One processing of one input record, as the sink holds it."""

    partition: int
    offset: int
    worker: int
    incarnation: int
    t_ns: int = 0
    """When it was processed (0: not known)."""


@dataclass(frozen=True)
class Incarnation:
    """One run of one worker process, and how it ended."""

    worker: int
    incarnation: int
    entries: tuple[Entry, ...]
    killed_ns: int | None = None
    """When it was SIGKILLed (None: it was not)."""
    point: str | None = None
    """Where the kill landed: a crash point (the worker's ``K`` line) or ``anywhere``."""


@dataclass(frozen=True)
class CrashBlame:
    """What one crash cost: offsets by partition."""

    worker: int
    incarnation: int
    killed_ns: int
    point: str
    in_flight: dict[int, str]
    """Offsets polled and not both processed and committed when it died (ranges text)."""
    lost: dict[int, list[int]] = field(default_factory=dict)
    duplicated: dict[int, list[int]] = field(default_factory=dict)

    def lost_count(self) -> int:
        return sum(len(v) for v in self.lost.values())

    def duplicated_count(self) -> int:
        return sum(len(v) for v in self.duplicated.values())


@dataclass(frozen=True)
class ConsumeVerification:
    """How often each input record was processed, and why not once."""

    records: int
    processed: int
    processings: int
    lost: int
    duplicated: int
    extra_processings: int
    reordered: int
    times: dict[int, int]
    """Processings per record -> records (``{1: 9990, 2: 10}``), 0 included."""
    lost_offsets: dict[int, list[int]]
    duplicated_offsets: dict[int, list[int]]
    outside_input: int
    """Processings of offsets the input range does not hold (a bug in the consumer)."""
    by_worker: dict[int, int]
    """Processings per worker (every incarnation), in the input range."""
    crashes: list[CrashBlame]
    unattributed_lost: dict[int, list[int]]
    unattributed_duplicated: dict[int, list[int]]

    def delivered(self) -> str:
        """The semantics the run showed: exactly-once, at-least-once, at-most-once, or
        none (both lost and duplicated)."""
        if self.lost and self.duplicated:
            return "none"
        if self.lost:
            return "at-most-once"
        if self.duplicated:
            return "at-least-once"
        return "exactly-once"

    def violations(self, expect: str | None) -> list[str]:
        """One line per way the run broke ``expect`` (None: loss only)."""
        out = []
        lost = f"lost: {self.lost} input record(s) were never processed"
        dup = (f"duplicated: {self.duplicated} input record(s) were processed more than once "
               f"({self.extra_processings} extra processing(s))")
        if self.lost and expect in (None, "at-least-once", "exactly-once"):
            out.append(lost)
        if self.duplicated and expect in ("at-most-once", "exactly-once"):
            out.append(dup)
        if self.outside_input:
            out.append(f"outside_input: {self.outside_input} processing(s) of offsets the "
                       "input does not hold")
        return out


def _committed(entries: Sequence[Entry]) -> dict[int, int]:
    out: dict[int, int] = {}
    for e in entries:
        if e.kind == "C" and e.partition is not None and e.value is not None:
            out[e.partition] = max(out.get(e.partition, 0), e.value)
    return out


def _polled(entries: Sequence[Entry]) -> dict[int, set[int]]:
    out: dict[int, set[int]] = defaultdict(set)
    for e in entries:
        if e.kind == "B" and e.partition is not None:
            out[e.partition].update(e.offsets)
    return out


def reached(inputs: dict[int, tuple[int, int]], incarnations: Sequence[Incarnation]
            ) -> dict[int, tuple[int, int]]:
    """The input cut at what any worker had polled of each partition: when a run is
    interrupted, the records no worker was ever given are not lost, only not reached."""
    polled_end: dict[int, int] = {}
    for x in incarnations:
        for e in x.entries:
            if e.kind == "B" and e.partition is not None and e.offsets:
                polled_end[e.partition] = max(polled_end.get(e.partition, 0), max(e.offsets) + 1)
    return {p: (start, max(start, min(end, polled_end.get(p, start))))
            for p, (start, end) in inputs.items()}


def verify(inputs: dict[int, tuple[int, int]], processings: Sequence[Processing],
           incarnations: Sequence[Incarnation]) -> ConsumeVerification:
    """``inputs``: each input partition's ``[start, end)``; ``processings`` in the order the
    sink holds them (per partition, the order they were processed)."""
    counts: Counter[tuple[int, int]] = Counter()
    # (p, o) -> (incarnation index, when) of each processing
    by: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    index = {(x.worker, x.incarnation): i for i, x in enumerate(incarnations)}
    outside = reordered = 0
    by_worker: Counter[int] = Counter()
    highest: dict[int, int] = {}
    for item in processings:
        start, end = inputs.get(item.partition, (0, 0))
        if not start <= item.offset < end:
            outside += 1
            continue
        key = (item.partition, item.offset)
        if not counts[key]:
            if item.offset < highest.get(item.partition, -1):
                reordered += 1
            highest[item.partition] = max(highest.get(item.partition, -1), item.offset)
        counts[key] += 1
        by_worker[item.worker] += 1
        by[key].append((index.get((item.worker, item.incarnation), -1), item.t_ns))

    lost: dict[int, list[int]] = defaultdict(list)
    duplicated: dict[int, list[int]] = defaultdict(list)
    times: Counter[int] = Counter()
    for p, (start, end) in sorted(inputs.items()):
        for o in range(start, end):
            n = counts[(p, o)]
            times[n] += 1
            if n == 0:
                lost[p].append(o)
            elif n > 1:
                duplicated[p].append(o)

    crashes, unattributed_lost, unattributed_dup = _attribute(
        incarnations, dict(lost), dict(duplicated), by)
    records = sum(end - start for start, end in inputs.values())
    n_lost = sum(len(v) for v in lost.values())
    return ConsumeVerification(
        records=records, processed=records - n_lost,
        processings=sum(counts.values()), lost=n_lost,
        duplicated=sum(len(v) for v in duplicated.values()),
        extra_processings=sum(n - 1 for n in counts.values() if n > 1),
        reordered=reordered, times=dict(sorted(times.items())),
        lost_offsets=dict(lost), duplicated_offsets=dict(duplicated), outside_input=outside,
        by_worker=dict(sorted(by_worker.items())),
        crashes=crashes, unattributed_lost=unattributed_lost,
        unattributed_duplicated=unattributed_dup)


def _attribute(incarnations: Sequence[Incarnation], lost: dict[int, list[int]],
               duplicated: dict[int, list[int]],
               by: dict[tuple[int, int], list[tuple[int, int]]]
               ) -> tuple[list[CrashBlame], dict[int, list[int]], dict[int, list[int]]]:
    crashed = sorted((i for i, x in enumerate(incarnations) if x.killed_ns is not None),
                     key=lambda i: incarnations[i].killed_ns or 0)
    polled = {i: _polled(incarnations[i].entries) for i in crashed}
    committed = {i: _committed(incarnations[i].entries) for i in crashed}
    blames = {}
    for i in crashed:
        x = incarnations[i]
        in_flight = {}
        for p, offsets in sorted(polled[i].items()):
            done = {o for o in offsets if o < committed[i].get(p, 0)
                    and any(who == i for who, _ in by.get((p, o), ()))}
            rest = sorted(offsets - done)
            if rest:
                in_flight[p] = ranges_text(rest)
        blames[i] = CrashBlame(x.worker, x.incarnation, x.killed_ns or 0, x.point or "anywhere",
                               in_flight)
    unattributed_lost: dict[int, list[int]] = defaultdict(list)
    for p, lost_here in lost.items():
        for o in lost_here:
            # The last crash whose incarnation had the record in hand and never processed it.
            owner = next((i for i in reversed(crashed) if o in polled[i].get(p, ())), None)
            if owner is None:
                unattributed_lost[p].append(o)
            else:
                blames[owner].lost.setdefault(p, []).append(o)
    unattributed_dup: dict[int, list[int]] = defaultdict(list)
    for p, repeated in duplicated.items():
        for o in repeated:
            runs = by[(p, o)]
            explained = 0
            for i in {who for who, _ in runs if who in blames}:
                # It processed the record, died before committing past it, and someone
                # else processed it again after its death (times 0: not known).
                died = incarnations[i].killed_ns or 0
                if committed[i].get(p, 0) <= o and any(
                        who != i and (t == 0 or died == 0 or t >= died) for who, t in runs):
                    blames[i].duplicated.setdefault(p, []).append(o)
                    explained += 1
            if explained < len(runs) - 1:
                unattributed_dup[p].append(o)
    return [blames[i] for i in crashed], dict(unattributed_lost), dict(unattributed_dup)
