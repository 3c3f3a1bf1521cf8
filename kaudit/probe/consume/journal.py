"""The journal each worker incarnation appends to: one line per step, written with one
``write(2)`` on an ``O_APPEND`` descriptor, so a line that reached the kernel survives a
SIGKILL and a line is never half there.

Lines (space-separated; times are ``time.time_ns()``, one clock for every process on
the host)::

    S <t> <pid>                   the incarnation started
    B <t> <partition> <ranges>    a batch was polled
    P <t> <partition> <ranges>    the batch was processed (for the ledger strategies this
                                  line IS the processing: the append-only ledger)
    C <t> <partition> <next>      offsets were committed up to <next> (exclusive)
    K <t> <point>                 the worker is about to SIGKILL itself at a crash point
    E <t>                         the worker stopped cleanly

``<ranges>`` is a comma-separated list of ``first-last`` (inclusive) runs of offsets.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path


def ranges_text(offsets: Iterable[int]) -> str:
    """``[4, 5, 6, 9]`` as ``4-6,9-9``."""
    runs: list[list[int]] = []
    for o in offsets:
        if runs and o == runs[-1][1] + 1:
            runs[-1][1] = o
        else:
            runs.append([o, o])
    return ",".join(f"{a}-{b}" for a, b in runs)


def parse_ranges(text: str) -> list[int]:
    """The offsets of a ``ranges_text``."""
    out: list[int] = []
    for run in text.split(","):
        first, _, last = run.partition("-")
        out.extend(range(int(first), int(last) + 1))
    return out


@dataclass(frozen=True)
class Entry:
    """One journal line."""

    kind: str
    t_ns: int
    partition: int | None = None
    offsets: tuple[int, ...] = ()
    value: int | None = None
    """C: the next offset committed; S: the pid."""
    text: str = ""
    """K: the crash point."""


def parse_line(line: str) -> Entry | None:
    """One line; None for a line that is not whole (the last one, when a crash cut it)."""
    parts = line.split()
    try:
        kind, t = parts[0], int(parts[1])
        if kind in ("B", "P") and len(parts) == 4:
            return Entry(kind, t, int(parts[2]), tuple(parse_ranges(parts[3])))
        if kind == "C" and len(parts) == 4:
            return Entry(kind, t, int(parts[2]), value=int(parts[3]))
        if kind == "S" and len(parts) == 3:
            return Entry(kind, t, value=int(parts[2]))
        if kind == "K" and len(parts) == 3:
            return Entry(kind, t, text=parts[2])
        if kind == "E" and len(parts) == 2:
            return Entry(kind, t)
    except (IndexError, ValueError):
        return None
    return None


def read_journal(path: Path) -> list[Entry]:
    """Every whole line of one journal file; none for an incarnation that ended before it
    opened its journal (killed while Python started)."""
    if not path.exists():
        return []
    text = path.read_text(encoding="ascii", errors="replace")
    return [e for e in (parse_line(line) for line in text.splitlines() if line) if e]


class JournalWriter:
    """Appends lines to one incarnation's journal (the worker side)."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def _write(self, *fields: object) -> None:
        os.write(self._fd, (" ".join(str(f) for f in fields) + "\n").encode("ascii"))

    def started(self) -> None:
        self._write("S", time.time_ns(), os.getpid())

    def polled(self, partition: int, offsets: list[int]) -> None:
        self._write("B", time.time_ns(), partition, ranges_text(offsets))

    def processed(self, partition: int, offsets: list[int]) -> None:
        self._write("P", time.time_ns(), partition, ranges_text(offsets))

    def committed(self, partition: int, next_offset: int) -> None:
        self._write("C", time.time_ns(), partition, next_offset)

    def crashing(self, point: str) -> None:
        self._write("K", time.time_ns(), point)

    def stopped(self) -> None:
        self._write("E", time.time_ns())

    def close(self) -> None:
        os.close(self._fd)


def journal_name(worker: int, incarnation: int) -> str:
    """The file name of one incarnation's journal."""
    return f"w{worker}-i{incarnation}.journal"


def journal_files(run_dir: Path) -> Iterator[tuple[int, int, Path]]:
    """(worker, incarnation, path) of every journal in a run directory."""
    for path in sorted(run_dir.glob("w*-i*.journal")):
        w, _, i = path.stem[1:].partition("-i")
        yield int(w), int(i), path
