"""Golden files: every check format rendered from the one shared result, compared exactly.

After an intended output change, regenerate and review the diff:

    KAUDIT_UPDATE_GOLDEN=1 pytest tests/unit/report/test_check_golden.py
    git diff tests/golden/check/
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from kaudit.check.findings import CheckResult
from kaudit.report.base import RenderOptions, render
from kaudit.report.check import CHECK, CheckFormat
from tests.unit.report.check_sample import TOOL_VERSION

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "golden" / "check"
GOLDEN_FILES = {
    CheckFormat.table: "result.table.txt",
    CheckFormat.json: "result.json",
    CheckFormat.junit: "result.junit.xml",
    CheckFormat.sarif: "result.sarif.json",
    CheckFormat.github: "result.github.txt",
    CheckFormat.html: "result.html",
}
UPDATE = os.environ.get("KAUDIT_UPDATE_GOLDEN") == "1"


def _own(fmt: CheckFormat, text: str) -> str:
    """What check itself renders: the page's stylesheet is the shared one
    (kaudit/report/html.py), so its golden holds a placeholder for it."""
    if fmt is not CheckFormat.html:
        return text
    return re.sub(r"<style>.*?</style>", "<style>(kaudit/report/html.py)</style>", text,
                  count=1, flags=re.DOTALL)


def test_every_format_has_a_golden_file() -> None:
    assert set(GOLDEN_FILES) == set(CheckFormat)


@pytest.mark.parametrize("fmt", list(CheckFormat), ids=str)
def test_golden(sample: CheckResult, fmt: CheckFormat) -> None:
    rendered = _own(fmt, render(CHECK, sample, fmt, RenderOptions(tool_version=TOOL_VERSION)))
    golden = GOLDEN_DIR / GOLDEN_FILES[fmt]
    if UPDATE:
        golden.write_bytes(rendered.encode("utf-8"))  # bytes: no newline translation
    assert golden.exists(), f"{golden} missing: run with KAUDIT_UPDATE_GOLDEN=1"
    assert rendered == golden.read_bytes().decode("utf-8")


@pytest.mark.parametrize("width", [80, 100])
def test_golden_table_fits_the_terminal(sample: CheckResult, width: int) -> None:
    rendered = render(CHECK, sample, "table", RenderOptions(tool_version=TOOL_VERSION,
                                                            width=width))
    assert max(len(line) for line in rendered.splitlines()) <= width
    path = GOLDEN_DIR / f"result.table.{width}.txt"
    if UPDATE:
        path.write_text(rendered, encoding="utf-8")
    assert rendered == path.read_text(encoding="utf-8")
