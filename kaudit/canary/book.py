"""The canary's books: every record's fate per partition, in memory bounded by a window.

A record is kept from its send until its fate is final, then forgotten:

- acknowledged and read: delivered (``late`` too when read more than ``late_after_s``
  after it was sent; late is never lost);
- acknowledged, and the reader moved past its offset without it: ``lost``, with a cause
  (``deleted``: below the log start offset; ``truncated``: its offset now holds another
  record, or was acknowledged to another since; else ``unknown``, said as such);
- acknowledged at or past the high watermark and past the current leader's own log end:
  ``lost``, ``truncated`` (the log was cut back below it and nothing was written there
  since, so no reader will pass it);
- failed or indeterminate and not read within ``window_s`` of its answer: absent
  (``indeterminate_absent``; a failed one was expected to be absent);
- read while failed or indeterminate: ``failed_present`` / ``indeterminate_present``;
- in a transaction the producer aborted: ``aborted``, never to be read (a read of it is
  ``aborted_visible``); in a transaction whose commit has no known outcome:
  ``indeterminate``.

A forgotten record's sequence and fate are remembered for ``window_s`` more: a read of it
then is ``duplicated`` (it had been read) or ``reappeared`` (it had been declared lost or
absent: the verdict stands, the sighting is reported). A read of a sequence forgotten longer
ago is ``beyond_window``: a duplicate or a reappearance, the books cannot tell which.

Distinct offsets make a duplicate: a record already read, read again at an offset the reader
had already passed, is the reader going back over the log (librdkafka rewinds after a leader
change), not a second copy; it is counted ``redelivered`` and judged no further.

Nothing here reads a clock or Kafka: the caller passes ``now`` (monotonic seconds) and
what it saw, so every rule is tested exactly.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

COUNTS = ("sent", "acked", "failed", "indeterminate", "read", "lost", "duplicated",
          "reordered", "late", "failed_present", "indeterminate_present",
          "indeterminate_absent", "reappeared", "beyond_window", "aborted", "aborted_visible",
          "redelivered")
"""Every per-partition count, in the order the reports show them."""

CAUSES = ("deleted", "truncated", "unknown")


@dataclass(frozen=True)
class LogEnd:
    """Where one partition's log ends: the high watermark, and the current leader's own log
    end offset with the leader epoch it holds it in (OffsetForLeaderEpoch, asked of it)."""

    high_watermark: int
    """The end of what a reader can read."""
    leader: int
    epoch: int
    """The leader epoch the leader is in."""
    log_end: int
    """The leader's log end offset: no record lies at or past it on its log."""
    asked_at: float
    """When it was asked (monotonic): a record acknowledged since is not judged by it (the
    leader has written past its answer)."""


@dataclass(slots=True)
class Record:
    """One record still in the books."""

    sent_at: float
    outcome: str = "pending"  # acked, failed, indeterminate
    offset: int | None = None
    answered_at: float | None = None
    read: bool = False
    epoch: int | None = None
    """The leader epoch the acknowledgement came from, when the client says."""


class FateMemory:
    """The fates of forgotten sequences, one byte each from a base sequence.

    Sequences of a partition are sent in order, so what was forgotten is a run of
    sequences: a bytearray indexed by sequence holds it in a byte a record (a dict of
    sequence -> fate and a deque of forget times held ~170 bytes a record). It is dropped a
    block of :data:`BLOCK` sequences at a time, once the block's latest forget is older than
    the window: a fate is remembered for the window at least, at most a block longer.
    """

    BLOCK = 4096
    FATES = (None, "read", "gone", "aborted")
    """A byte's fate (0: none remembered)."""

    __slots__ = ("base", "forgot_at", "marks")

    def __init__(self) -> None:
        self.base = 0
        """The first sequence :attr:`marks` covers (a multiple of :data:`BLOCK`)."""
        self.marks = bytearray()
        self.forgot_at: list[float] = []
        """Per block from :attr:`base`: when a sequence in it was last forgotten."""

    def remember(self, seq: int, fate: str, now: float) -> None:
        if seq < self.base:
            return  # cannot happen: a block is dropped only below every open sequence
        if not self.marks:
            self.base = seq - seq % self.BLOCK
        i = seq - self.base
        if i >= len(self.marks):
            blocks = i // self.BLOCK + 1
            self.marks.extend(bytes(blocks * self.BLOCK - len(self.marks)))
            self.forgot_at.extend([float("-inf")] * (blocks - len(self.forgot_at)))
        self.marks[i] = self.FATES.index(fate)
        self.forgot_at[i // self.BLOCK] = now

    def fate(self, seq: int) -> str | None:
        """``read``, ``gone``, ``aborted``; None when not remembered."""
        i = seq - self.base
        return self.FATES[self.marks[i]] if 0 <= i < len(self.marks) else None

    def expire(self, now: float, window_s: float, keep_from: int) -> None:
        """Forget what was forgotten more than ``window_s`` ago, never a sequence at or
        above ``keep_from`` (the lowest still open or yet to be sent)."""
        while self.forgot_at and now - self.forgot_at[0] > window_s:
            below = keep_from - self.base
            if below < self.BLOCK:
                # The block is still being written: clear what is below keep_from.
                if below > 0:
                    self.marks[:below] = bytes(below)
                return
            del self.marks[:self.BLOCK]
            del self.forgot_at[0]
            self.base += self.BLOCK

    def remembered(self) -> int:
        """How many sequences have a fate remembered."""
        return len(self.marks) - self.marks.count(0)


@dataclass
class PartitionBook:
    """One partition's records, from send to final fate."""

    partition: int
    window_s: float
    late_after_s: float
    counts: Counter[str] = field(default_factory=Counter)
    lost_by_cause: Counter[str] = field(default_factory=Counter)
    open: dict[int, Record] = field(default_factory=dict)
    """Records whose fate is not final yet, by sequence."""
    owners: dict[int, int] = field(default_factory=dict)
    """Acknowledged offset -> sequence, for the open acknowledged records."""
    memory: FateMemory = field(default_factory=FateMemory)
    """The fates of the records forgotten within the window (``read``, ``gone``,
    ``aborted``)."""
    next_seq: int = 0
    """One past the highest sequence sent."""
    max_read: int = -1
    max_offset: int = -1
    """The highest offset read."""
    overwritten: dict[int, tuple[int, int | None]] = field(default_factory=dict)
    """Sequence of an open record -> (the sequence that took its offset since, the leader
    epoch it was written or acknowledged in)."""

    # --- the producer's side ---------------------------------------------------------

    def sent(self, seq: int, now: float) -> None:
        self.counts["sent"] += 1
        self.open[seq] = Record(sent_at=now)
        if seq >= self.next_seq:
            self.next_seq = seq + 1

    def acked(self, seq: int, offset: int | None, now: float, epoch: int | None = None
              ) -> None:
        """The broker acknowledged ``seq`` at ``offset``; None: without saying where (an
        idempotent producer's retry answered DUPLICATE_SEQUENCE_NUMBER: already written)."""
        record = self.open.get(seq)
        if record is None or record.outcome != "pending":
            return  # a send already settled: its transaction's end came first
        self.counts["acked"] += 1
        record.outcome, record.offset, record.answered_at = "acked", offset, now
        record.epoch = epoch
        if offset is None:
            if record.read:
                self._forget(seq, now)
            return
        earlier = self.owners.get(offset)
        if earlier is not None and earlier != seq:
            # The same offset acknowledged twice: the log was cut back below it in between.
            self.overwritten[earlier] = (seq, epoch)
        self.owners[offset] = seq
        if record.read:
            self._forget(seq, now)

    def not_acked(self, seq: int, now: float, indeterminate: bool) -> None:
        """A send that failed surely (``indeterminate`` False) or may have been written."""
        record = self.open.get(seq)
        if record is None or record.outcome != "pending":
            return
        record.outcome = "indeterminate" if indeterminate else "failed"
        record.answered_at = now
        self.counts[record.outcome] += 1
        if record.read:
            self.counts[f"{record.outcome}_present"] += 1
            self._forget(seq, now)

    def withdrawn(self, seq: int, now: float, aborted: bool) -> list[dict[str, Any]]:
        """The record's transaction was aborted (``aborted``): it counts as ``aborted``
        instead of what its send was told. Or its commit has no known outcome: an
        acknowledgement no longer promises it will be read, it is ``indeterminate``."""
        record = self.open.get(seq)
        if record is None or (not aborted and record.outcome in ("failed", "indeterminate")):
            return []
        if record.outcome != "pending":
            self.counts[record.outcome] -= 1
        if record.offset is not None and self.owners.get(record.offset) == seq:
            del self.owners[record.offset]
        record.outcome, record.answered_at = "indeterminate", now
        if not aborted:
            self.counts["indeterminate"] += 1
            if record.read:
                self.counts["indeterminate_present"] += 1
                self._forget(seq, now)
            return []
        self.counts["aborted"] += 1
        events = []
        if record.read:
            self.counts["aborted_visible"] += 1
            events.append(self._event("aborted_visible", seq, record.offset or -1, now))
        self._forget(seq, now, "aborted")
        return events

    # --- the reader's side -----------------------------------------------------------

    def read(self, seq: int, offset: int, now: float, epoch: int | None = None
             ) -> list[dict[str, Any]]:
        """The reader saw ``seq`` at ``offset`` (written in leader ``epoch``); returns the
        anomalies it reveals."""
        events: list[dict[str, Any]] = []
        owner = self.owners.get(offset)
        if owner is not None and owner != seq:
            # This offset was acknowledged to another record: that one was cut off.
            self.overwritten.setdefault(owner, (seq, epoch))
        record = self.open.get(seq)
        passed, self.max_offset = offset <= self.max_offset, max(self.max_offset, offset)
        if (record is None or record.read) and passed:
            self.counts["redelivered"] += 1
            return events
        if record is None or record.read:
            fate = "read" if record is not None else self.memory.fate(seq)
            kind = {"read": "duplicated", "gone": "reappeared",
                    "aborted": "aborted_visible"}.get(fate or "", "beyond_window")
            self.counts[kind] += 1
            events.append(self._event(kind, seq, offset, now))
            return events
        self.counts["read"] += 1
        record.read = True
        if seq < self.max_read:
            self.counts["reordered"] += 1
            events.append(self._event("reordered", seq, offset, now, after=self.max_read))
        self.max_read = max(self.max_read, seq)
        if now - record.sent_at > self.late_after_s:
            self.counts["late"] += 1
            events.append(self._event("late", seq, offset, now,
                                      seconds=round(now - record.sent_at, 3)))
        if record.outcome in ("failed", "indeterminate"):
            self.counts[f"{record.outcome}_present"] += 1
            events.append(self._event(f"{record.outcome}_present", seq, offset, now))
        if record.outcome != "pending":
            self._forget(seq, now)
        return events

    def passed(self, position: int, log_start: int, now: float) -> list[dict[str, Any]]:
        """The reader's next offset is ``position`` and the log starts at ``log_start``:
        every acknowledged record below ``position`` not read is lost."""
        events: list[dict[str, Any]] = []
        behind = sorted((r.offset, seq) for seq, r in self.open.items()
                        if r.outcome == "acked" and not r.read and r.offset is not None
                        and r.offset < position)
        for offset, seq in behind:
            events.append(self._lost(seq, offset, now, *self._cause(seq, offset, log_start)))
        # Acknowledged without an offset: an idempotent producer writes a partition in
        # sequence order, so one that was there lies below any later sequence read.
        unplaced = [seq for seq, r in self.open.items() if r.outcome == "acked"
                    and r.offset is None and not r.read and seq < self.max_read]
        for seq in unplaced:
            events.append(self._lost(
                seq, -1, now, "unknown",
                f"acknowledged without an offset (a retry the broker already had); the reader "
                f"read sequence {self.max_read}, written after it, and not it"))
        return events

    def past_end(self, end: LogEnd, now: float) -> list[dict[str, Any]]:
        """An acknowledged record, answered before ``end`` was asked, at or past both the
        high watermark and the current leader's log end is not in the log: the leader that
        acknowledged it wrote it there, and the log was cut back below it since. Returns
        the losses."""
        events: list[dict[str, Any]] = []
        gone = sorted((r.offset, seq) for seq, r in self.open.items()
                      if r.outcome == "acked" and not r.read
                      and r.answered_at is not None and r.answered_at < end.asked_at
                      and r.offset is not None
                      and r.offset >= max(end.high_watermark, end.log_end))
        for offset, seq in gone:
            acked_in = self.open[seq].epoch
            before = f" in leader epoch {acked_in}" if acked_in is not None else ""
            events.append(self._lost(
                seq, offset, now, "truncated",
                f"offset {offset} was acknowledged to it{before}; the current leader, broker "
                f"{end.leader}, in leader epoch {end.epoch}, ends its log at offset "
                f"{end.log_end} (high watermark {end.high_watermark}): the log was cut back "
                "below it after a leader change"))
        return events

    def beyond(self, high_watermark: int, settled_before: float) -> bool:
        """Whether an acknowledged record not read lies at or past ``high_watermark``,
        answered before ``settled_before`` (an acks=1 record just acknowledged lies past it
        until its followers copy it)."""
        return any(r.outcome == "acked" and not r.read and r.offset is not None
                   and r.offset >= high_watermark and r.answered_at is not None
                   and r.answered_at < settled_before for r in self.open.values())

    def expire(self, now: float) -> list[dict[str, Any]]:
        """Settle failed and indeterminate records not read within the window of their
        answer, and forget sequences past their window."""
        events: list[dict[str, Any]] = []
        for seq, record in list(self.open.items()):
            if record.outcome in ("failed", "indeterminate") and record.answered_at is not None \
                    and now - record.answered_at > self.window_s:
                if record.outcome == "indeterminate":
                    self.counts["indeterminate_absent"] += 1
                    events.append(self._event("indeterminate_absent", seq, -1, now))
                self._forget(seq, now, "gone")
        # ``open`` is in send order, so its first key is the lowest open sequence.
        keep_from = next(iter(self.open), self.next_seq)
        self.memory.expire(now, self.window_s, keep_from)
        return events

    def unsettled(self) -> dict[str, int]:
        """What is still open at the end: acknowledged records not read yet, and sends
        with no answer."""
        acked = sum(1 for r in self.open.values() if r.outcome == "acked")
        pending = sum(1 for r in self.open.values() if r.outcome == "pending")
        return {"acked_unread": acked, "unanswered": pending}

    # --- inside ----------------------------------------------------------------------

    def _cause(self, seq: int, offset: int, log_start: int) -> tuple[str, str]:
        if offset < log_start:
            return "deleted", f"offset {offset} is below the log start offset {log_start}"
        other = self.overwritten.get(seq)
        if other is not None:
            other_seq, other_epoch = other
            mine = self.open[seq].epoch
            acked_in = f" in leader epoch {mine}" if mine is not None else ""
            theirs = f" (leader epoch {other_epoch})" if other_epoch is not None else ""
            return "truncated", (f"offset {offset} was acknowledged to it{acked_in}, then "
                                 f"holds or was acknowledged to sequence {other_seq}{theirs}: "
                                 "the log was cut back after a leader change")
        return "unknown", "no signal tells why: the reader passed its offset without it"

    def _lost(self, seq: int, offset: int, now: float, cause: str, evidence: str
              ) -> dict[str, Any]:
        """Count ``seq`` lost with its cause, forget it, and return its event."""
        self.counts["lost"] += 1
        self.lost_by_cause[cause] += 1
        event = self._event("lost", seq, offset, now, cause=cause, evidence=evidence)
        self._forget(seq, now, "gone")
        return event

    def _forget(self, seq: int, now: float, fate: str = "read") -> None:
        record = self.open.pop(seq, None)
        if record is not None and record.offset is not None \
                and self.owners.get(record.offset) == seq:
            del self.owners[record.offset]
        self.overwritten.pop(seq, None)
        self.memory.remember(seq, fate, now)

    def _event(self, kind: str, seq: int, offset: int, now: float, **extra: Any
               ) -> dict[str, Any]:
        return {"kind": kind, "partition": self.partition, "seq": seq, "offset": offset,
                "at": now, **extra}
