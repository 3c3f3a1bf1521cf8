"""The database sink of ``--commit sink-offsets``: results and the next offset to read of
each partition written in ONE database transaction, as Kafka Connect's exactly-once sinks do.

A worker reads the stored offsets when it is given partitions and seeks there. A batch is
written only from the stored offset on: records below it were already written by someone
(a replay after a rebalance, a zombie), and a batch that starts above it would leave a gap,
so it is refused and the worker seeks back. The offsets rows are the fence: the
transaction locks them first (SQLite's write lock, PostgreSQL's ``FOR UPDATE``), so two
workers cannot both store the same records, whatever the group did.

Sinks: ``sqlite:PATH`` (the default is a file in the run's directory; a SIGKILLed writer's
open transaction is rolled back by the next opener, from its journal) and
``postgresql://USER[:PASSWORD]@HOST[:PORT]/DB`` (libpq's URI; the password may also come
from ``PGPASSWORD`` or ``~/.pgpass``; a killed writer's connection drops and the server
rolls its transaction back). Each run has its own two tables, named after the run, dropped
at the end unless ``--keep``. The results table has no unique key on purpose: a record
stored twice must be countable.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from kaudit.connection.redact import is_secret_key, redact, register_secret
from kaudit.errors import ConnectionFailure, InputError, RuntimeUnavailable
from kaudit.probe.consume.verify import Processing

CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True)
class SinkTarget:
    """Where one run stores its results and offsets."""

    scheme: str
    """``sqlite`` or ``postgresql``."""
    location: str
    """The SQLite file, or the PostgreSQL URI (may hold a password: see :meth:`shown`)."""
    prefix: str
    """The run's table names start with this."""

    @property
    def results_table(self) -> str:
        """One row per record stored (a record stored twice is two rows)."""
        return f"{self.prefix}_processed"

    @property
    def offsets_table(self) -> str:
        """Each partition's next offset to read: the fence."""
        return f"{self.prefix}_offsets"

    def shown(self) -> str:
        """The sink as reports show it: a password in the URI masked."""
        text = self.location if self.scheme == "postgresql" else f"sqlite:{self.location}"
        return str(redact(text))

    def config(self) -> dict[str, str]:
        """What a worker process is given (through its stdin) to open the sink."""
        return {"scheme": self.scheme, "location": self.location, "prefix": self.prefix}


def parse_sink(uri: str, run_id: str) -> SinkTarget:
    """``sqlite:PATH`` or ``postgresql://...`` (``postgres://`` too)."""
    prefix = f"kaudit_consume_{run_id}"
    if uri.startswith(("postgresql://", "postgres://")):
        # Masked wherever it could show up later (a driver's error, a log line).
        register_secret(urlsplit(uri).password)
        for key, value in parse_qsl(urlsplit(uri).query):
            if is_secret_key(key):
                register_secret(value)
        return SinkTarget("postgresql", uri, prefix)
    if uri.startswith("sqlite:") and uri[len("sqlite:"):]:
        return SinkTarget("sqlite", str(Path(uri[len("sqlite:"):]).expanduser()), prefix)
    raise InputError(f"--sink {redact(uri)!r}: expected sqlite:PATH or "
                     "postgresql://USER@HOST:PORT/DB")


def _open_sqlite(path: str) -> sqlite3.Connection:
    """The SQLite sink; a path it cannot be (no such directory, not a database) is exit 2."""
    try:
        # The long timeout lets workers queue for the one write lock, not fail.
        db = sqlite3.connect(path, timeout=60, isolation_level=None)
        db.execute("PRAGMA schema_version").fetchall()  # reads the file: is it a database?
    except sqlite3.DatabaseError as exc:
        raise InputError(f"--sink sqlite:{path}: cannot open it as a SQLite database: "
                         f"{exc}") from None
    return db


class SinkDatabase:
    """One connection to the sink, in autocommit mode: kaudit says BEGIN and COMMIT."""

    def __init__(self, target: SinkTarget) -> None:
        self.target = target
        self._pg = target.scheme == "postgresql"
        if self._pg:
            self._db: Any = _connect_postgres(target)
        else:
            self._db = _open_sqlite(target.location)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement (``?`` placeholders); its rows, if it returns any."""
        cursor = self._db.execute(sql.replace("?", "%s") if self._pg else sql, params)
        return list(cursor.fetchall()) if cursor.description is not None else []

    def insert_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """Run one INSERT (``?`` placeholders) for every row."""
        if self._pg:
            with self._db.cursor() as cursor:
                cursor.executemany(sql.replace("?", "%s"), rows)
        else:
            self._db.executemany(sql, rows)

    def begin(self) -> None:
        """Start a transaction; SQLite takes its write lock now, not at the first write."""
        self.rows("BEGIN" if self._pg else "BEGIN IMMEDIATE")

    @property
    def lock_rows(self) -> str:
        """What a SELECT adds to lock the rows it reads until COMMIT."""
        return " FOR UPDATE" if self._pg else ""

    def close(self) -> None:
        """Close the connection (an open transaction is rolled back)."""
        self._db.close()


def _connect_postgres(target: SinkTarget) -> Any:
    try:
        import psycopg
    except ImportError:
        raise RuntimeUnavailable("--sink postgresql: needs the psycopg package "
                                 "(pip install 'kaudit[postgres]')") from None
    try:
        return psycopg.connect(target.location, autocommit=True,
                               connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.OperationalError as exc:
        first = str(redact(str(exc).strip().splitlines()[0] if str(exc).strip() else "failed"))
        raise ConnectionFailure(f"cannot reach the sink {target.shown()}: {first}") from None
    except psycopg.ProgrammingError as exc:
        raise InputError(f"--sink {target.shown()}: {redact(str(exc).strip())}") from None


def create_sink(target: SinkTarget, starts: dict[int, int]) -> None:
    """The run's two tables, the stored offsets being the input's first offsets."""
    db = SinkDatabase(target)
    key = "BIGSERIAL PRIMARY KEY" if target.scheme == "postgresql" else \
        "INTEGER PRIMARY KEY AUTOINCREMENT"
    try:
        db.rows(f"CREATE TABLE {target.results_table} (seq {key}, "
                "partition INTEGER NOT NULL, record_offset BIGINT NOT NULL, "
                "worker INTEGER NOT NULL, incarnation INTEGER NOT NULL, "
                "at_ns BIGINT NOT NULL)")
        db.rows(f"CREATE TABLE {target.offsets_table} (partition INTEGER PRIMARY KEY, "
                "next_offset BIGINT NOT NULL)")
        db.insert_many(f"INSERT INTO {target.offsets_table} VALUES (?, ?)",
                       sorted(starts.items()))
    finally:
        db.close()


def drop_sink(target: SinkTarget) -> None:
    """Drop the run's tables (the end of a run not kept)."""
    db = SinkDatabase(target)
    try:
        for table in (target.results_table, target.offsets_table):
            db.rows(f"DROP TABLE IF EXISTS {table}")
    finally:
        db.close()


class SinkWriter:
    """One worker's connection to the sink."""

    def __init__(self, target: SinkTarget) -> None:
        self._db = SinkDatabase(target)
        self._target = target

    def stored(self, partitions: list[int], lock: bool = False) -> dict[int, int]:
        """The next offset to read of each partition, as the sink last committed it."""
        rows = self._db.rows(
            f"SELECT partition, next_offset FROM {self._target.offsets_table} WHERE "
            f"partition IN ({','.join('?' * len(partitions))}) ORDER BY partition"
            + (self._db.lock_rows if lock else ""), partitions)
        return {int(p): int(n) for p, n in rows}

    def write(self, batch: dict[int, list[int]], worker: int, incarnation: int,
              before_commit: Callable[[], None]) -> tuple[dict[int, list[int]], dict[int, int]]:
        """Store a batch and the offsets after it in one transaction.

        Returns the offsets stored by partition, and the partitions to seek back to (their
        stored offset) because the batch started above it. ``before_commit`` runs after
        the writes, before COMMIT (the crash point)."""
        db, t = self._db, self._target
        db.begin()
        try:
            stored = self.stored(sorted(batch), lock=True)
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
                db.insert_many(
                    f"INSERT INTO {t.results_table} (partition, record_offset, worker, "
                    "incarnation, at_ns) VALUES (?, ?, ?, ?, ?)",
                    [(p, o, worker, incarnation, now) for o in fresh])
                db.rows(f"UPDATE {t.offsets_table} SET next_offset = ? WHERE partition = ?",
                        (fresh[-1] + 1, p))
                written[p] = fresh
            before_commit()
            db.rows("COMMIT")
        except BaseException:
            # Nothing may be open to roll back (the failure was BEGIN's): the error stands.
            with contextlib.suppress(Exception):
                db.rows("ROLLBACK")
            raise
        return written, rewind

    def close(self) -> None:
        self._db.close()


def stored_offsets(target: SinkTarget) -> dict[int, int]:
    """Every partition's stored next offset (the runner's progress check)."""
    db = SinkDatabase(target)
    try:
        return {int(p): int(n) for p, n in
                db.rows(f"SELECT partition, next_offset FROM {target.offsets_table}")}
    finally:
        db.close()


def read_processings(target: SinkTarget) -> list[Processing]:
    """Every stored record, in the order it was committed."""
    db = SinkDatabase(target)
    try:
        return [Processing(int(p), int(o), int(w), int(i), int(t)) for p, o, w, i, t in
                db.rows(f"SELECT partition, record_offset, worker, incarnation, at_ns "
                        f"FROM {target.results_table} ORDER BY seq")]
    finally:
        db.close()
