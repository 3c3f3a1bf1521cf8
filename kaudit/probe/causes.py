"""Why each lost record was lost, where Kafka gives a signal for it.

A record acknowledged at offset O of partition P and never read back is:

- ``deleted`` when P's log now starts above O: retention or DeleteRecords removed it before
  it was read;
- ``truncated`` when P's log now ends at or below O, or when the broker acknowledged another
  record of the run at O too: the log was cut below an acknowledged offset (a leader
  change to a replica that did not have it) and the offset written again;
- ``unknown`` otherwise: the cause is not guessed.

A truncation also names its leader epochs (:class:`EpochCut`): the epochs the records were
written in, where reported (with their acknowledgements, or by a reader that was shown
them), and where that epoch ends on the partition's current leader (OffsetForLeaderEpoch):
the offset the log was cut at. When no epoch of theirs was reported, the epoch asked about
is that of the last record the log kept below them, read from the log: the leader's log
left that epoch where it was cut. What could not be read is said, with why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import Any

CAUSES = ("deleted", "truncated", "unknown")


@dataclass(frozen=True)
class PartitionLosses:
    """One partition's lost records by cause, with the evidence."""

    partition: int
    log_start: int | None
    """The partition's log start offset read after the run (None: not read)."""
    log_end: int | None = None
    """Where the partition's log ended when it was read back (None: not read)."""
    deleted: int = 0
    truncated: int = 0
    unknown: int = 0
    deleted_offsets: tuple[int, int] | None = None
    """The lowest and highest acknowledged offset of the deleted records."""
    truncated_offsets: tuple[int, int] | None = None
    """The lowest and highest acknowledged offset of the truncated records."""
    rewritten: int = 0
    """Of the truncated, how many offsets the broker acknowledged to another record since."""
    acked_epochs: tuple[int, int] | None = None
    """The lowest and highest leader epoch the truncated records were written in, where
    reported (None: none was)."""
    cut: EpochCut | None = None
    """Where the log was cut, in leader epochs (None: no truncated record, or not asked)."""


@dataclass(frozen=True)
class EpochCut:
    """Where a partition's truncated records' leader epoch ends on its current leader."""

    leader: int | None = None
    """The broker asked: the partition's leader when the causes were read."""
    epoch_asked: int | None = None
    """The lowest epoch the truncated records were written in, or (none reported) that of
    :attr:`kept_below`."""
    kept_below: tuple[int, int] | None = None
    """The offset and leader epoch of the last record the log kept below the lowest
    truncated offset (read only when the records' own epochs were not reported)."""
    epoch_on_leader: int | None = None
    """The epoch the leader answered for: the one asked, or the latest earlier epoch its
    log holds."""
    end_offset: int | None = None
    """Where that epoch ends on the leader's log: the first offset of a later epoch there
    (or its log end, when it is the latest)."""
    unread: str | None = None
    """Why :attr:`end_offset` was not read (None when it was)."""

    def to_dict(self) -> dict[str, Any]:
        kept = None if self.kept_below is None else {
            "offset": self.kept_below[0], "leader_epoch": self.kept_below[1]}
        return {"leader": self.leader, "epoch_asked": self.epoch_asked, "kept_below": kept,
                "epoch_on_leader": self.epoch_on_leader,
                "epoch_end_offset": self.end_offset, "epoch_end_unread": self.unread}

    def clause(self, lowest: int) -> str:
        """The cut in a few words, for a partition whose lowest truncated offset is
        ``lowest``."""
        if self.end_offset is None:
            return f"epoch end not read: {self.unread or 'not asked'}"
        asked = self.epoch_asked
        whose = "" if self.kept_below is None else \
            f" (that of the last record kept below them, offset {self.kept_below[0]})"
        missing = "" if self.epoch_on_leader == asked else \
            f" (epoch {asked}{whose} is not on its log)"
        epoch = f"leader epoch {self.epoch_on_leader}" + (whose if not missing else "")
        if self.end_offset <= lowest:
            return (f"cut at offset {self.end_offset}, where {epoch} ended on the current "
                    f"leader, broker {self.leader}{missing}")
        return (f"{epoch} runs on to offset {self.end_offset} on the current leader, broker "
                f"{self.leader}{missing}, past offset {lowest}")


@dataclass(frozen=True)
class LossCauses:
    """Every lost record's cause, per partition."""

    partitions: tuple[PartitionLosses, ...] = field(default=())

    @property
    def deleted(self) -> int:
        return sum(p.deleted for p in self.partitions)

    @property
    def truncated(self) -> int:
        return sum(p.truncated for p in self.partitions)

    @property
    def unknown(self) -> int:
        return sum(p.unknown for p in self.partitions)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the counts by cause, then each partition's evidence."""
        return {"deleted": self.deleted, "truncated": self.truncated, "unknown": self.unknown,
                "partitions": [{"partition": p.partition, "log_start": p.log_start,
                                "log_end": p.log_end, "deleted": p.deleted,
                                "truncated": p.truncated, "unknown": p.unknown,
                                "deleted_offsets": _pair(p.deleted_offsets),
                                "truncated_offsets": _pair(p.truncated_offsets),
                                "rewritten": p.rewritten,
                                "acked_epochs": _pair(p.acked_epochs),
                                **(p.cut or EpochCut()).to_dict()}
                               for p in self.partitions]}

    def with_cuts(self, cuts: Mapping[int, EpochCut]) -> LossCauses:
        """These causes with each truncated partition's cut (by partition)."""
        return LossCauses(tuple(replace(p, cut=cuts[p.partition])
                                if p.truncated and p.partition in cuts else p
                                for p in self.partitions))

    def sentence(self) -> str:
        """The causes in a few words, for the verdict's "lost:" line."""
        parts = []
        deleted = [p for p in self.partitions if p.deleted]
        if deleted:
            where = ", ".join(f"{p.partition} (log start {p.log_start})" for p in deleted[:3])
            parts.append(f"{self.deleted} deleted below the log start offset before they were "
                         f"read, retention or DeleteRecords (partition {where})")
        truncated = [p for p in self.partitions if p.truncated]
        if truncated:
            where = ", ".join(_truncation(p) for p in truncated[:3] if p.truncated_offsets)
            parts.append(f"{self.truncated} truncated: the log was cut below offsets it had "
                         f"acknowledged, after a leader change (partition {where})")
        if self.unknown:
            parts.append(f"{self.unknown} of unknown cause (no signal kaudit reads says why)")
        return "; ".join(parts)


def attribute_losses(lost: Mapping[int, Sequence[int | None]],
                     log_starts: Mapping[int, int | None],
                     log_ends: Mapping[int, int] | None = None,
                     acked_to_others: Mapping[int, Set[int]] | None = None,
                     epochs: Mapping[int, Sequence[int | None]] | None = None) -> LossCauses:
    """The cause of each lost record from its acknowledged offset (``lost``: per partition,
    None or negative where no offset was acknowledged, as with acks=0), the partitions' log
    start offsets after the run, where their logs ended when read back (``log_ends``), and
    the offsets the broker acknowledged to the run's other, not lost, records. ``epochs``,
    in the order of ``lost``, is the leader epoch each was written in (None: not reported).
    The cuts in leader epochs are added afterwards (:meth:`LossCauses.with_cuts`)."""
    out = []
    for partition in sorted(p for p, offsets in lost.items() if offsets):
        start = log_starts.get(partition)
        end = (log_ends or {}).get(partition)
        others = (acked_to_others or {}).get(partition, frozenset())
        known = (epochs or {}).get(partition) or [None] * len(lost[partition])
        gone, cut, rewritten, cut_epochs = [], [], 0, []
        for offset, epoch in zip(lost[partition], known, strict=True):
            if offset is None or offset < 0:
                continue
            if start is not None and offset < start:
                gone.append(offset)
                continue
            if offset in others:
                rewritten += 1
            elif end is None or offset < end:
                continue
            cut.append(offset)
            if epoch is not None and epoch >= 0:
                cut_epochs.append(epoch)
        gone.sort()
        cut.sort()
        out.append(PartitionLosses(
            partition=partition, log_start=start, log_end=end, deleted=len(gone),
            truncated=len(cut), unknown=len(lost[partition]) - len(gone) - len(cut),
            deleted_offsets=(gone[0], gone[-1]) if gone else None,
            truncated_offsets=(cut[0], cut[-1]) if cut else None, rewritten=rewritten,
            acked_epochs=(min(cut_epochs), max(cut_epochs)) if cut_epochs else None))
    return LossCauses(tuple(out))


def _truncation(p: PartitionLosses) -> str:
    """One truncated partition's evidence, for :meth:`LossCauses.sentence`."""
    assert p.truncated_offsets is not None
    lo, hi = p.truncated_offsets
    epochs = "" if p.acked_epochs is None else f" in leader epoch {p.acked_epochs[0]}" \
        if p.acked_epochs[0] == p.acked_epochs[1] else \
        f" in leader epochs {p.acked_epochs[0]}-{p.acked_epochs[1]}"
    cut = "" if p.cut is None else f"; {p.cut.clause(lo)}"
    return (f"{p.partition} (acknowledged offsets {lo}-{hi}{epochs}, {p.rewritten} written "
            f"again; log end {p.log_end}{cut})")


def _pair(pair: tuple[int, int] | None) -> list[int] | None:
    return None if pair is None else list(pair)
