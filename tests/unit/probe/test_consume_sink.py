"""The sink-offsets database: results and offsets in one transaction, fenced by the
stored offset, and a SIGKILL between the writes and COMMIT leaves nothing behind.

The cases take a :class:`SinkTarget` so the same ones run against a real PostgreSQL
(tests/integration/test_probe_consume.py); here they run on SQLite.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kaudit.connection.redact import MASK, redact
from kaudit.errors import ConnectionFailure, InputError
from kaudit.probe.consume.sink import (
    SinkTarget,
    SinkWriter,
    create_sink,
    drop_sink,
    parse_sink,
    read_processings,
    stored_offsets,
)


def a_batch_and_its_offsets_commit_together(target: SinkTarget) -> None:
    create_sink(target, {0: 0, 1: 5})
    sink = SinkWriter(target)
    written, rewind = sink.write({0: [0, 1, 2], 1: [5, 6]}, 0, 0, lambda: None)
    assert written == {0: [0, 1, 2], 1: [5, 6]} and rewind == {}
    assert stored_offsets(target) == {0: 3, 1: 7}
    # A replay (the same records again, e.g. a zombie after a rebalance) stores nothing;
    # the part of a batch past the stored offset is stored once.
    written, rewind = sink.write({0: [1, 2, 3, 4]}, 1, 0, lambda: None)
    assert written == {0: [3, 4]} and rewind == {}
    # A batch that starts past the stored offset would leave a gap: refused, seek back.
    written, rewind = sink.write({1: [9, 10]}, 1, 0, lambda: None)
    assert written == {} and rewind == {1: 7}
    assert [(x.partition, x.offset, x.worker) for x in read_processings(target)] == [
        (0, 0, 0), (0, 1, 0), (0, 2, 0), (1, 5, 0), (1, 6, 0), (0, 3, 1), (0, 4, 1)]
    sink.close()


def a_failure_before_commit_rolls_the_batch_back(target: SinkTarget) -> None:
    create_sink(target, {0: 0})
    sink = SinkWriter(target)

    def fail() -> None:
        raise RuntimeError("crash point")

    with pytest.raises(RuntimeError):
        sink.write({0: [0, 1]}, 0, 0, fail)
    assert stored_offsets(target) == {0: 0} and read_processings(target) == []
    assert sink.write({0: [0, 1]}, 0, 1, lambda: None)[0] == {0: [0, 1]}
    sink.close()


def sigkill_between_the_writes_and_commit_leaves_nothing(target: SinkTarget) -> None:
    create_sink(target, {0: 0})
    code = (
        "import json, os, signal, sys\n"
        "from kaudit.probe.consume.sink import SinkTarget, SinkWriter\n"
        "s = SinkWriter(SinkTarget(**json.loads(sys.stdin.read())))\n"
        "s.write({0: [0, 1, 2]}, 0, 0, lambda: os.kill(os.getpid(), signal.SIGKILL))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(target.config()),
                          text=True, timeout=60)
    assert proc.returncode == -9
    assert stored_offsets(target) == {0: 0} and read_processings(target) == []
    # The killed writer held the partition's row lock: it is free again.
    assert SinkWriter(target).write({0: [0]}, 0, 1, lambda: None)[0] == {0: [0]}
    drop_sink(target)


CASES = [a_batch_and_its_offsets_commit_together, a_failure_before_commit_rolls_the_batch_back,
         sigkill_between_the_writes_and_commit_leaves_nothing]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_on_sqlite(tmp_path: Path, case: object) -> None:
    assert callable(case)
    case(parse_sink(f"sqlite:{tmp_path / 'sink.sqlite'}", "run1"))


def test_tables_are_named_after_the_run_and_a_password_is_never_shown() -> None:
    target = parse_sink("postgresql://kaudit:s3cr3t-pw@db.example:5432/results", "abc123")
    assert (target.results_table, target.offsets_table) == (
        "kaudit_consume_abc123_processed", "kaudit_consume_abc123_offsets")
    assert "s3cr3t-pw" not in target.shown() and "db.example:5432/results" in target.shown()
    assert parse_sink("postgres://h/db", "r").scheme == "postgresql"
    # A percent-encoded password is masked as written and as the driver reads it.
    parse_sink("postgresql://kaudit:p%40ss%26w0rd@db:5432/results", "r")
    assert redact("p%40ss%26w0rd and p@ss&w0rd") == f"{MASK} and {MASK}"


@pytest.mark.parametrize("uri", ["mysql://h/db", "sqlite:", "results.db"])
def test_a_sink_that_is_not_sqlite_or_postgresql_is_an_input_error(uri: str) -> None:
    with pytest.raises(InputError, match="expected sqlite:PATH or postgresql://"):
        parse_sink(uri, "r")


@pytest.mark.parametrize("where,why", [("missing-dir/results.db", "unable to open database file"),
                                       (".", "unable to open database file"),
                                       ("notes.txt", "file is not a database")])
def test_a_sqlite_sink_that_cannot_be_a_database_is_an_input_error(tmp_path: Path, where: str,
                                                                   why: str) -> None:
    # It was an internal error (sqlite3.OperationalError) before the run began.
    (tmp_path / "notes.txt").write_text("not a database, but long enough to have a header\n" * 4)
    path = tmp_path / where
    with pytest.raises(InputError, match=f"^--sink sqlite:{path}: cannot open it as a SQLite "
                                         f"database: {why}$"):
        create_sink(parse_sink(f"sqlite:{path}", "r"), {0: 0})


def test_an_unreachable_postgresql_is_a_connection_failure_without_the_password() -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    target = parse_sink(f"postgresql://kaudit:pw-never-shown@127.0.0.1:{port}/db", "r")
    with pytest.raises(ConnectionFailure) as caught:
        create_sink(target, {0: 0})
    assert "pw-never-shown" not in str(caught.value)
    assert str(caught.value).startswith("cannot reach the sink postgresql://kaudit:")
