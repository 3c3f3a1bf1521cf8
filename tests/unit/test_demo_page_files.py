"""The demo writes its one page, demo/index.html, from the reports its steps stored, and
lists it first among them at the end of its output. No lab: the reports are stand-ins."""

from __future__ import annotations

import threading
from pathlib import Path

from kaudit.demo.model import DEMO_PAGE, SINK_FAULT_COUNTS, SINK_MISSING
from kaudit.demo.report import summary
from kaudit.demo.steps import Demo, listing_the_page
from kaudit.report.output import to_json
from tests.unit.report.demo_sample import INJECTED, check_doc, matrix_doc, reconcile_doc
from tests.unit.test_demo_output import fake_result


def test_the_sample_sink_faults_are_the_demos() -> None:
    assert INJECTED == SINK_FAULT_COUNTS
    assert SINK_FAULT_COUNTS["missing_in_sink"] == len(SINK_MISSING) == 3


def test_the_page_is_written_beside_the_reports(tmp_path: Path) -> None:
    result = fake_result(tmp_path)
    reports = result.reports
    for path, doc in ((reports.check_json, check_doc()), (reports.probe_json, matrix_doc()),
                      (reports.reconcile_json, reconcile_doc())):
        path.write_text(to_json(doc), encoding="utf-8")
    demo = Demo(tmp_path, out=print, say=print, interrupted=threading.Event())
    page = demo.write_page(reports)
    assert page == tmp_path / "demo" / DEMO_PAGE
    text = page.read_text(encoding="utf-8")
    assert '<strong class="pass">Pass</strong>' in text
    assert "found 3 missing, 0 extra, 2 duplicated, 2 changed" in text
    # The reports beside it, named as they sit beside it.
    for name in ("check.json", "check.sarif", "probe-matrix.json", "probe-matrix.html",
                 "reconcile.json", "discrepancies/part-0.parquet", "policy.yaml"):
        assert f"<code>{name}</code>" in text
    assert str(tmp_path) not in text


def test_the_closing_lines_list_the_page_first(tmp_path: Path) -> None:
    result = fake_result(tmp_path)
    page = result.reports.directory / DEMO_PAGE
    lines = listing_the_page(summary(result), page).split("\n")
    done = next(n for n, line in enumerate(lines) if line.startswith("== done"))
    assert lines[done + 1] == (f"  demo page    {page}  (every step and what it shows: open "
                               "it in a browser)")
    assert lines[done + 2].startswith("  check        ")
    assert listing_the_page("elsewhere\n", page) == (
        f"elsewhere\n  demo page    {page}  (every step and what it shows: open it in a "
        "browser)\n")
