"""Leader epochs by sequence, for the records something reported one for.

A leader epoch arrives with an acknowledgement (when the client reports it) or with a
record a reader was shown. Consecutive sequences of one epoch are kept as one run (three
numbers), so a run costs a few bytes whatever its length and a client that reports no
epoch costs nothing.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence


class EpochRuns:
    """One partition's leader epochs, by sequence, in runs."""

    def __init__(self) -> None:
        self._first = array("q")
        self._last = array("q")
        self._epoch = array("i")

    def note(self, seq: int, epoch: int | None) -> None:
        """``seq`` was written in leader ``epoch`` (None or negative: not known, ignored)."""
        if epoch is None or epoch < 0:
            return
        n = len(self._epoch)
        if n and self._epoch[n - 1] == epoch and self._last[n - 1] + 1 == seq:
            self._last[n - 1] = seq
            return
        self._first.append(seq)
        self._last.append(seq)
        self._epoch.append(epoch)

    def __len__(self) -> int:
        """How many runs are kept."""
        return len(self._epoch)

    def epochs_of(self, seqs: Sequence[int]) -> list[int | None]:
        """The epoch of each of ``seqs`` (None where none was noted). When a sequence was
        noted twice (an answer replaced by a later one), the later note wins."""
        out: list[int | None] = [None] * len(seqs)
        if not self._epoch or not seqs:
            return out
        order = sorted(range(len(seqs)), key=seqs.__getitem__)
        keys = [seqs[i] for i in order]
        for first, last, epoch in zip(self._first, self._last, self._epoch, strict=True):
            for k in range(bisect_left(keys, first), bisect_right(keys, last)):
                out[order[k]] = epoch
        return out

    def nbytes(self) -> int:
        """Bytes held by the runs."""
        return sum(sys.getsizeof(a) for a in (self._first, self._last, self._epoch))
