"""The sink-offsets database: results and offsets in one transaction, fenced by the
stored offset, and a SIGKILL between the writes and COMMIT leaves nothing behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kaudit.probe.consume.sink import SinkWriter, create_sink, read_processings, stored_offsets


def test_a_batch_and_its_offsets_commit_together(tmp_path: Path) -> None:
    path = tmp_path / "sink.sqlite"
    create_sink(path, {0: 0, 1: 5})
    sink = SinkWriter(path)
    written, rewind = sink.write({0: [0, 1, 2], 1: [5, 6]}, 0, 0, lambda: None)
    assert written == {0: [0, 1, 2], 1: [5, 6]} and rewind == {}
    assert stored_offsets(path) == {0: 3, 1: 7}
    # A replay (the same records again, e.g. a zombie after a rebalance) stores nothing;
    # the part of a batch past the stored offset is stored once.
    written, rewind = sink.write({0: [1, 2, 3, 4]}, 1, 0, lambda: None)
    assert written == {0: [3, 4]} and rewind == {}
    # A batch that starts past the stored offset would leave a gap: refused, seek back.
    written, rewind = sink.write({1: [9, 10]}, 1, 0, lambda: None)
    assert written == {} and rewind == {1: 7}
    assert [(x.partition, x.offset, x.worker) for x in read_processings(path)] == [
        (0, 0, 0), (0, 1, 0), (0, 2, 0), (1, 5, 0), (1, 6, 0), (0, 3, 1), (0, 4, 1)]
    sink.close()


def test_a_failure_before_commit_rolls_the_batch_back(tmp_path: Path) -> None:
    path = tmp_path / "sink.sqlite"
    create_sink(path, {0: 0})
    sink = SinkWriter(path)

    def fail() -> None:
        raise RuntimeError("crash point")

    with pytest.raises(RuntimeError):
        sink.write({0: [0, 1]}, 0, 0, fail)
    assert stored_offsets(path) == {0: 0} and read_processings(path) == []
    assert sink.write({0: [0, 1]}, 0, 1, lambda: None)[0] == {0: [0, 1]}
    sink.close()


def test_sigkill_between_the_writes_and_commit_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "sink.sqlite"
    create_sink(path, {0: 0})
    code = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from kaudit.probe.consume.sink import SinkWriter\n"
        f"s = SinkWriter(Path({str(path)!r}))\n"
        "s.write({0: [0, 1, 2]}, 0, 0, lambda: os.kill(os.getpid(), signal.SIGKILL))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], timeout=60)
    assert proc.returncode == -9
    assert stored_offsets(path) == {0: 0} and read_processings(path) == []
