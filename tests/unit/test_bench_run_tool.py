"""bench/reconcile runs each contender in its own work directory, so that ``python3 -m
kaudit`` imports the kaudit its environment names, not the checkout it was started from."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.unit.test_bench_spark_jobs import _bench

BENCH = _bench()


def test_a_tool_runs_in_its_outputs_directory_and_imports_from_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    # A package of the same name in the caller's directory, as a checkout has one.
    caller = tmp_path / "checkout"
    (caller / "shadow").mkdir(parents=True)
    (caller / "shadow" / "__init__.py").write_text("WHERE = 'checkout'\n")
    (work / "shadow").mkdir()
    (work / "shadow" / "__init__.py").write_text("WHERE = 'work'\n")
    out = work / "tool.out"
    argv = [sys.executable, "-c", "import os, shadow; print(os.getcwd(), shadow.WHERE)"]
    monkeypatch.chdir(caller)
    _, rc = BENCH.run_tool("a tool", argv, dict(os.environ), out, 60)
    assert rc == 0
    assert out.read_text().split() == [str(work), "work"]
