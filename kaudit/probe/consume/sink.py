"""The database sink of ``--commit sink-offsets``: results and the next offset to read of
each partition written in ONE database transaction, as Kafka Connect's exactly-once sinks do.

A worker reads the stored offsets when it is given partitions and seeks there. A batch is
written only from the stored offset on: records below it were already written by someone
(a replay after a rebalance, a zombie), and a batch that starts above it would leave a gap,
so it is refused and the worker seeks back. The offsets row is the fence: two workers
cannot both store the same records, whatever the group did.

SQLite (a file; a SIGKILLed writer's open transaction is rolled back by the next opener, from
its journal). The ``processed`` table has no unique key on purpose: a record stored twice
must be countable.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from kaudit.probe.consume.verify import Processing

_SCHEMA = """
CREATE TABLE IF NOT EXISTS processed (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    partition INTEGER NOT NULL, record_offset INTEGER NOT NULL,
    worker INTEGER NOT NULL, incarnation INTEGER NOT NULL, at_ns INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS offsets (
    partition INTEGER PRIMARY KEY, next_offset INTEGER NOT NULL);
"""


def _connect(path: Path) -> sqlite3.Connection:
    # isolation_level None: kaudit says BEGIN and COMMIT itself. The long timeout lets
    # workers queue for the one write lock instead of failing.
    return sqlite3.connect(path, timeout=60, isolation_level=None)


def create_sink(path: Path, starts: dict[int, int]) -> None:
    """A new sink whose stored offsets are the input's first offsets."""
    with _connect(path) as db:
        db.executescript(_SCHEMA)
        db.executemany("INSERT INTO offsets VALUES (?, ?)", sorted(starts.items()))
    db.close()


class SinkWriter:
    """One worker's connection to the sink."""

    def __init__(self, path: Path) -> None:
        self._db = _connect(path)

    def stored(self, partitions: list[int]) -> dict[int, int]:
        """The next offset to read of each partition, as the sink last committed it."""
        rows = self._db.execute(
            f"SELECT partition, next_offset FROM offsets WHERE partition IN "
            f"({','.join('?' * len(partitions))})", partitions).fetchall()
        return {int(p): int(n) for p, n in rows}

    def write(self, batch: dict[int, list[int]], worker: int, incarnation: int,
              before_commit: Callable[[], None]) -> tuple[dict[int, list[int]], dict[int, int]]:
        """Store a batch and the offsets after it in one transaction.

        Returns the offsets stored by partition, and the partitions to seek back to (their
        stored offset) because the batch started above it. ``before_commit`` runs after
        the writes, before COMMIT (the crash point)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            stored = self.stored(sorted(batch))
            written: dict[int, list[int]] = {}
            rewind: dict[int, int] = {}
            for p, offsets in sorted(batch.items()):
                at = stored.get(p, 0)
                fresh = [o for o in offsets if o >= at]
                if not fresh:
                    continue  # all written before (a replay): nothing to do
                if fresh[0] != at:
                    rewind[p] = at
                    continue
                now = time.time_ns()
                db.executemany(
                    "INSERT INTO processed (partition, record_offset, worker, incarnation, "
                    "at_ns) VALUES (?, ?, ?, ?, ?)",
                    [(p, o, worker, incarnation, now) for o in fresh])
                db.execute("UPDATE offsets SET next_offset = ? WHERE partition = ?",
                           (fresh[-1] + 1, p))
                written[p] = fresh
            before_commit()
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return written, rewind

    def close(self) -> None:
        self._db.close()


def stored_offsets(path: Path) -> dict[int, int]:
    """Every partition's stored next offset (the runner's progress check)."""
    db = _connect(path)
    try:
        return {int(p): int(n) for p, n in
                db.execute("SELECT partition, next_offset FROM offsets").fetchall()}
    finally:
        db.close()


def read_processings(path: Path) -> list[Processing]:
    """Every stored record, in the order it was committed."""
    db = _connect(path)
    try:
        return [Processing(int(p), int(o), int(w), int(i), int(t)) for p, o, w, i, t in
                db.execute("SELECT partition, record_offset, worker, incarnation, at_ns "
                           "FROM processed ORDER BY seq")]
    finally:
        db.close()
