"""`kaudit demo --format json` and `-o`: what reaches stdout and the report file.

The demo's steps run against the lab in tests/integration/test_demo.py; here they are
replaced by a stand-in that reports two sections, so only the output handling is tested.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import kaudit.demo
from kaudit.cli.app import app
from kaudit.demo import DemoReports, DemoResult, demo_document


def fake_result(state_dir: Path) -> DemoResult:
    directory = state_dir / "demo"
    directory.mkdir(parents=True)
    docs = {"check.json": {"schema": "kaudit.check/v1", "summary": {"errors": 4}},
            "probe-matrix.json": {"schema": "kaudit.probe.matrix/v1", "rows": []},
            "reconcile.json": {"schema": "kaudit.reconcile/v1", "verdict": "fail"}}
    for name, doc in docs.items():
        (directory / name).write_text(json.dumps(doc), encoding="utf-8")
    reports = DemoReports(directory=directory, policy=directory / "policy.yaml",
                          check_json=directory / "check.json",
                          check_sarif=directory / "check.sarif",
                          probe_json=directory / "probe-matrix.json", probe_plot=None,
                          reconcile_json=directory / "reconcile.json",
                          sink=directory / "sink" / "orders.parquet",
                          discrepancies=(str(directory / "discrepancies" / "part-0.parquet"),))
    return DemoResult(state_dir=state_dir, bootstrap="127.0.0.1:9092", started_lab=False,
                      check=None, matrix=[], reconcile=None,  # type: ignore[arg-type]
                      reports=reports, seconds=123.45)


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    def run_demo(state_dir: Path, *, out: Callable[[str], None], say: Callable[[str], None],
                 interrupted: threading.Event, color: bool = False) -> DemoResult:
        say("[1/6] lab")
        out("== check\nsection one\n")
        out("== reconcile\nsection two\n")
        return fake_result(state_dir)

    monkeypatch.setattr(kaudit.demo, "run_demo", run_demo)
    return tmp_path / "lab"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, ["demo", *args])


def test_table_streams_the_sections_to_stdout(stand_in: Path) -> None:
    result = invoke("--state-dir", str(stand_in))
    assert result.exit_code == 0, result.output
    assert "section one" in result.stdout and "section two" in result.stdout


def test_table_to_a_file_writes_every_section_once(stand_in: Path, tmp_path: Path) -> None:
    target = tmp_path / "demo.txt"
    result = invoke("--state-dir", str(stand_in), "-o", str(target))
    assert result.exit_code == 0, result.output
    assert target.read_text() == "== check\nsection one\n== reconcile\nsection two\n"
    assert "section" not in result.stdout


def test_json_is_one_document_with_the_reports_inside(stand_in: Path) -> None:
    result = invoke("--state-dir", str(stand_in), "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)  # nothing else on stdout
    assert doc["schema"] == "kaudit.demo/v1"
    assert (doc["bootstrap"], doc["started_lab"], doc["seconds"]) == ("127.0.0.1:9092", False,
                                                                       123.5)
    assert doc["check"]["summary"] == {"errors": 4}
    assert doc["reconcile"]["verdict"] == "fail"
    assert doc["probe_matrix"]["rows"] == []
    assert doc["reports"]["probe_plot"] is None
    assert doc["reports"]["check"] == str(stand_in / "demo" / "check.json")


def test_document_lists_every_report(tmp_path: Path) -> None:
    doc = demo_document(fake_result(tmp_path))
    assert set(doc["reports"]) == {"directory", "policy", "check", "check_sarif",
                                   "probe_matrix", "probe_plot", "probe_page", "reconcile",
                                   "sink", "discrepancies"}
    assert doc["reports"]["discrepancies"] == [
        str(tmp_path / "demo" / "discrepancies" / "part-0.parquet")]
