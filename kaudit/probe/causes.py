"""Why each lost record was lost, where Kafka gives a signal for it.

A record acknowledged at offset O of partition P and never read back is ``deleted`` when P's
log now starts above O: retention or DeleteRecords removed it before it was read. Every
other loss is ``unknown`` here: the cause is not guessed. (A truncation after a leader
change needs the leader epochs of the log, read with OffsetForLeaderEpoch: a later step.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CAUSES = ("deleted", "unknown")


@dataclass(frozen=True)
class PartitionLosses:
    """One partition's lost records by cause, with the evidence."""

    partition: int
    log_start: int | None
    """The partition's log start offset read after the run (None: not read)."""
    deleted: int = 0
    unknown: int = 0
    deleted_offsets: tuple[int, int] | None = None
    """The lowest and highest acknowledged offset of the deleted records."""


@dataclass(frozen=True)
class LossCauses:
    """Every lost record's cause, per partition."""

    partitions: tuple[PartitionLosses, ...] = field(default=())

    @property
    def deleted(self) -> int:
        return sum(p.deleted for p in self.partitions)

    @property
    def unknown(self) -> int:
        return sum(p.unknown for p in self.partitions)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the counts by cause, then each partition's evidence."""
        return {"deleted": self.deleted, "unknown": self.unknown,
                "partitions": [{"partition": p.partition, "log_start": p.log_start,
                                "deleted": p.deleted, "unknown": p.unknown,
                                "deleted_offsets": None if p.deleted_offsets is None
                                else list(p.deleted_offsets)} for p in self.partitions]}

    def sentence(self) -> str:
        """The causes in a few words, for the verdict's "lost:" line."""
        parts = []
        deleted = [p for p in self.partitions if p.deleted]
        if deleted:
            where = ", ".join(f"{p.partition} (log start {p.log_start})" for p in deleted[:3])
            parts.append(f"{self.deleted} deleted below the log start offset before they were "
                         f"read, retention or DeleteRecords (partition {where})")
        if self.unknown:
            parts.append(f"{self.unknown} of unknown cause (no signal kaudit reads says why)")
        return "; ".join(parts)


def attribute_losses(lost: Mapping[int, Sequence[int | None]],
                     log_starts: Mapping[int, int | None]) -> LossCauses:
    """The cause of each lost record from its acknowledged offset (``lost``: per partition,
    None or negative where no offset was acknowledged, as with acks=0) and the partitions'
    log start offsets after the run."""
    out = []
    for partition in sorted(p for p, offsets in lost.items() if offsets):
        start = log_starts.get(partition)
        gone = sorted(o for o in lost[partition]
                      if o is not None and o >= 0 and start is not None and o < start)
        out.append(PartitionLosses(
            partition=partition, log_start=start, deleted=len(gone),
            unknown=len(lost[partition]) - len(gone),
            deleted_offsets=(gone[0], gone[-1]) if gone else None))
    return LossCauses(tuple(out))
