"""How the long commands end: the report, a line on stderr when it went to a file, the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaudit.cli.ending import end_run, first_of
from kaudit.errors import ExitCode


def test_a_report_to_a_file_says_the_verdict_and_where(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "probe.json"
    code = end_run("probe", "{}\n", str(target), verdict=first_of("fail", ["12 lost", "x"]),
                   interrupted=False, failed=True)
    assert code == ExitCode.FINDINGS and target.read_text() == "{}\n"
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"kaudit probe: fail: 12 lost (+1 more); report written to {target}\n"


def test_an_interrupted_run_says_so_and_exits_130(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "r.txt"
    assert end_run("probe consume", "r\n", str(target), verdict="pass", interrupted=True,
                   failed=False) == ExitCode.INTERRUPTED
    assert capsys.readouterr().err.startswith("kaudit probe consume: interrupted; pass; ")


def test_a_report_on_stdout_is_the_only_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert end_run("probe prove", "table\n", None, verdict="confirmed", interrupted=False,
                   failed=False) == ExitCode.OK
    assert capsys.readouterr() == ("table\n", "")
