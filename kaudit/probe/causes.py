"""Why each lost record was lost, where Kafka gives a signal for it.

A record acknowledged at offset O of partition P and never read back is:

- ``deleted`` when P's log now starts above O: retention or DeleteRecords removed it before
  it was read;
- ``truncated`` when P's log now ends at or below O, or when the broker acknowledged another
  record of the run at O too: the log was cut below an acknowledged offset (a leader
  change to a replica that did not have it) and the offset written again;
- ``unknown`` otherwise: the cause is not guessed.

(Naming the leader epochs of a truncation needs OffsetForLeaderEpoch: a later step.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
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
                                "rewritten": p.rewritten} for p in self.partitions]}

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
            where = ", ".join(f"{p.partition} (acknowledged offsets {p.truncated_offsets[0]}-"
                              f"{p.truncated_offsets[1]}, {p.rewritten} written again; log "
                              f"end {p.log_end})" for p in truncated[:3] if p.truncated_offsets)
            parts.append(f"{self.truncated} truncated: the log was cut below offsets it had "
                         f"acknowledged, after a leader change (partition {where})")
        if self.unknown:
            parts.append(f"{self.unknown} of unknown cause (no signal kaudit reads says why)")
        return "; ".join(parts)


def attribute_losses(lost: Mapping[int, Sequence[int | None]],
                     log_starts: Mapping[int, int | None],
                     log_ends: Mapping[int, int] | None = None,
                     acked_to_others: Mapping[int, Set[int]] | None = None) -> LossCauses:
    """The cause of each lost record from its acknowledged offset (``lost``: per partition,
    None or negative where no offset was acknowledged, as with acks=0), the partitions' log
    start offsets after the run, where their logs ended when read back (``log_ends``), and
    the offsets the broker acknowledged to the run's other, not lost, records."""
    out = []
    for partition in sorted(p for p, offsets in lost.items() if offsets):
        start = log_starts.get(partition)
        end = (log_ends or {}).get(partition)
        others = (acked_to_others or {}).get(partition, frozenset())
        gone, cut, rewritten = [], [], 0
        for offset in lost[partition]:
            if offset is None or offset < 0:
                continue
            if start is not None and offset < start:
                gone.append(offset)
            elif offset in others:
                cut.append(offset)
                rewritten += 1
            elif end is not None and offset >= end:
                cut.append(offset)
        gone.sort()
        cut.sort()
        out.append(PartitionLosses(
            partition=partition, log_start=start, log_end=end, deleted=len(gone),
            truncated=len(cut), unknown=len(lost[partition]) - len(gone) - len(cut),
            deleted_offsets=(gone[0], gone[-1]) if gone else None,
            truncated_offsets=(cut[0], cut[-1]) if cut else None, rewritten=rewritten))
    return LossCauses(tuple(out))


def _pair(pair: tuple[int, int] | None) -> list[int] | None:
    return None if pair is None else list(pair)
