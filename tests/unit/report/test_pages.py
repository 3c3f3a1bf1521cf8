"""`--format html`: one self-contained page per report, every picture inside it."""

from __future__ import annotations

import base64
from html.parser import HTMLParser

from kaudit.probe.faults.registry import parse_fault
from kaudit.probe.latency import Timeline
from kaudit.probe.matrix import MatrixCell, MatrixRow
from kaudit.probe.prove import judge
from kaudit.reconcile.request import ReconcileRequest, ReconcileResult
from kaudit.reconcile.sinks import SinkSpec
from kaudit.reconcile.source import OffsetRange
from kaudit.report.base import render
from kaudit.report.matrix import MATRIX
from kaudit.report.output import choose_format
from kaudit.report.probe import PROBE
from kaudit.report.prove import PROVE, Proof
from kaudit.report.reconcile import RECONCILE
from tests.unit.probe.reports import probe_report


class _Page(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.images: list[str] = []
        self.links: list[str] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "img":
            self.images.append(found.get("src") or "")
        for key in ("href", "src"):
            if key in found and tag != "img":
                self.links.append(found[key] or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _check_self_contained(text: str) -> _Page:
    page = _Page(text)
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert page.links == []  # no script, stylesheet or link to fetch
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG\r\n\x1a\n")
    return page


def test_a_probe_page_holds_its_summary_and_its_timeline() -> None:
    page = _check_self_contained(render(PROBE, probe_report(acked=50, lost=5), "html"))
    assert len(page.images) == 1
    text = "".join(page.text)
    assert "Verdict: fail" in text and "lost: 5 acknowledged message(s)" in text


def test_a_matrix_page_draws_every_run() -> None:
    cell = MatrixCell("1", False, 2, False, parse_fault("lag-then-kill-leader"))
    rows = [MatrixRow(cell, (probe_report(acked=20, lost=3), probe_report(acked=20)))]
    page = _check_self_contained(render(MATRIX, rows, "html"))
    assert len(page.images) == 2
    assert "fault lag-then-kill-leader:3" in "".join(page.text)


def test_a_prove_page_has_a_verdict_per_claim_and_a_timeline_per_run() -> None:
    reports = {"acks1": probe_report(acked=30, lost=4, read_then_lost=0),
               "acksall": probe_report(acked=30)}
    proof = Proof(judge(reports), reports, 5.0)
    page = _check_self_contained(render(PROVE, proof, "html"))
    assert len(page.images) == 2
    text = "".join(page.text)
    # acks1 confirms two claims, acksall one; the twelve others (four of them the consumer
    # half's) have no run
    assert text.count("NOT CONFIRMED") == 12 and text.count("CONFIRMED") == 15


def test_a_reconcile_page_counts_per_partition_with_its_offsets() -> None:
    result = ReconcileResult(
        request=ReconcileRequest(topic="orders", sink_uri="parquet:/data/orders"),
        sink=SinkSpec("parquet", "/data/orders"),
        ranges=[OffsetRange(0, 0, 100, 0, 0), OffsetRange(1, 5, 80, 0, 5)],
        topic_records=175, sink_rows=173, counts={"missing_in_sink": 2},
        by_partition={0: {"missing_in_sink": 2}, 1: {}}, samples={}, output_files=[],
        seconds=1.0)
    page = _check_self_contained(render(RECONCILE, result, "html"))
    assert page.images == []
    cells = [t.strip() for t in page.text if t.strip()]
    assert cells[cells.index("missing_in_sink") + 1:][:4] == ["0", "0", "100", "2"]


def test_html_is_chosen_by_the_file_name_only_where_a_page_exists() -> None:
    assert choose_format(None, "run.html", html=True) == "html"
    assert choose_format(None, "run.HTML", html=True) == "html"
    assert choose_format(None, "run.html") in ("table", "json")
    assert choose_format("json", "run.html", html=True) == "json"


def test_lost_and_duplicated_messages_are_placed_at_the_second_they_were_sent() -> None:
    timeline = Timeline()
    timeline.mark_sequences(0, {0: 0, 1: 0})
    timeline.mark_sequences(1, {0: 100, 1: 90})
    timeline.mark_sequences(3, {0: 250, 1: 240})
    assert timeline.seconds_of(0, [5, 99, 100, 249, 250, 999]) == {0: 2, 1: 2, 3: 2}
    assert timeline.seconds_of(1, [89, 90]) == {0: 1, 1: 1}
    timeline.send(3, 10)
    timeline.outcomes({1: 2}, {3: 1})
    seconds = timeline.seconds()
    assert [(s.second, s.lost, s.duplicated) for s in seconds] == [
        (0, 0, 0), (1, 2, 0), (2, 0, 0), (3, 0, 1)]
