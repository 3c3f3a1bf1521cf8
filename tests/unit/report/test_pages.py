"""`--format html`: one self-contained page per report, every picture inside it."""

from __future__ import annotations

import base64
from dataclasses import replace
from html.parser import HTMLParser

from kaudit.connection.redact import MASK, register_secret
from kaudit.probe.faults.registry import parse_fault
from kaudit.probe.latency import Timeline
from kaudit.probe.matrix import MatrixCell, MatrixRow
from kaudit.probe.monitor import ProbeEvent
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
from tests.unit.report.probe_sample import lag_then_kill_report

_VOID = {"br", "img", "meta"}


class _Page(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.images: list[str] = []
        self.links: list[str] = []
        self.text: list[str] = []
        self.tags: list[str] = []
        self.blocks: list[tuple[str, str, str]] = []
        """The body's children in order: (tag, class, text)."""
        self.captions: dict[str, str] = {}
        """Each table's text by its caption."""
        self._open: list[str] = []
        self._caption: str | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append(tag)
        if self._open == ["html", "body"]:
            self.blocks.append((tag, found.get("class") or "", ""))
        if tag not in _VOID:
            self._open.append(tag)
        if tag == "img":
            self.images.append(found.get("src") or "")
        for key in ("href", "src"):
            if key in found and tag != "img":
                self.links.append(found[key] or "")

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1] == tag:
            self._open.pop()
        if tag == "table":
            self._caption = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if len(self._open) > 2 and self.blocks:
            tag, css, text = self.blocks[-1]
            self.blocks[-1] = (tag, css, text + data)
        if self._open[-1:] == ["caption"]:
            self._caption = data
            self.captions[data] = ""
        elif "table" in self._open and self._caption is not None:
            self.captions[self._caption] += data + "|"

    def opening(self) -> tuple[str, str, str]:
        """The title, then the first thing after it: (tag, class, text)."""
        assert self.blocks[0][0] == "h1"
        return self.blocks[1]

    def headings(self) -> list[str]:
        return [text for tag, _, text in self.blocks if tag == "h2"]


def _check_self_contained(text: str, *, terminal_text: bool = False) -> _Page:
    page = _Page(text)
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert page.links == []  # no script, stylesheet or link to fetch
    assert "script" not in page.tags  # readable without JavaScript
    # The counts are tables, not the terminal's text (reconcile's page still shows it).
    assert terminal_text or "pre" not in page.tags
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG\r\n\x1a\n")
    return page


def test_a_probe_page_holds_its_summary_and_its_timeline() -> None:
    page = _check_self_contained(render(PROBE, probe_report(acked=50, lost=5), "html"))
    assert len(page.images) == 1
    text = "".join(page.text)
    assert "Fail" in text and "lost: 5 acknowledged message(s)" in text


def test_a_probe_page_opens_with_its_verdict_in_a_sentence_then_counts_chart_and_events(
        ) -> None:
    page = _check_self_contained(render(PROBE, lag_then_kill_report(), "html"))
    tag, css, text = page.opening()
    assert (tag, css) == ("p", "verdict verdict-fail")
    assert text == ("Fail \u2014 4,657 of 20,000 acknowledged writes lost: acknowledged by the "
                    "leader alone (acks=1), sent between 10 s and 13 s, after 'SIGSTOP "
                    "followers 2, 3 for 3s (still in the ISR)' at 10.0 s and 'SIGKILL leader "
                    "1' at 13.0 s; gone when broker 3 became leader of partition 0 at 14.1 s.")
    assert page.headings()[:3] == ["Counts", "Timeline", "Events"]
    assert "sent|20,000|acked|20,000|" in page.captions["What the producer was told"]
    assert "lost|4,657|" in page.captions["What reading back found"]
    assert "p50|p99|p99.9|max|ack|" in page.captions["Latency"]
    assert "unavailable seconds|2|" in page.captions["Throughput and availability"]
    assert page.captions["Per partition"].count("|") > 20
    # Why it failed, what that means and what to do: before the counts.
    reasons = [css for tag, css, _ in page.blocks[:page.blocks.index(("h2", "", "Counts"))]]
    assert "reasons" in reasons
    assert "What to do:" in "".join(page.text)


def test_a_probe_page_explains_a_read_back_that_stopped_short() -> None:
    page = _check_self_contained(render(PROBE, replace(probe_report(acked=10),
                                                       drain_complete=False), "html"))
    text = "".join(page.text)
    assert "could not read every partition back past its last acknowledged offset" in text
    assert "ended before offsets the producer had acknowledged" in text
    assert "longer --timeout" in text and "truncation" in text


def test_a_probe_page_masks_secrets_in_its_sentence_and_its_tables() -> None:
    secret = "hunter2-s3cret"
    register_secret(secret)
    report = lag_then_kill_report()
    events = [replace(e, detail=f"{e.detail} via {secret}") if e.kind == "fault" else e
              for e in report.events]
    events.append(ProbeEvent(19.5, "note", f"exec heal command exited 0 ({secret})"))
    text = render(PROBE, replace(report, events=events, notes=[f"token {secret}"]), "html")
    assert secret not in text
    page = _check_self_contained(text)
    assert MASK in page.opening()[2] and text.count(MASK) >= 5


def test_a_matrix_page_draws_every_run() -> None:
    cell = MatrixCell("1", False, 2, False, parse_fault("lag-then-kill-leader"))
    rows = [MatrixRow(cell, (probe_report(acked=20, lost=3), probe_report(acked=20)))]
    page = _check_self_contained(render(MATRIX, rows, "html"))
    assert len(page.images) == 2
    assert "fault=lag-then-kill-leader:3" in "".join(page.text)
    tag, css, text = page.opening()
    assert (tag, css) == ("p", "verdict verdict-fail")
    assert text.startswith("Fail \u2014 1 of 2 runs failed, in 1 of 1 configuration: ")
    assert page.headings()[:2] == ["Configurations", "Runs"]
    assert "lost: 3 acknowledged message(s)" in "".join(page.text)


def test_a_prove_page_has_a_verdict_per_claim_and_a_timeline_per_run() -> None:
    reports = {"acks1": probe_report(acked=30, lost=4, read_then_lost=0),
               "acksall": probe_report(acked=30)}
    proof = Proof(judge(reports), reports, 5.0)
    page = _check_self_contained(render(PROVE, proof, "html"))
    assert len(page.images) == 2
    text = "".join(page.text)
    # acks1 confirms two claims, acksall one; the sixteen others (four of them the
    # consumer part's, four the share part's) have no run
    assert text.count("NOT CONFIRMED") == 16 and text.count("CONFIRMED") == 19
    tag, css, opening = page.opening()
    assert (tag, css) == ("p", "verdict verdict-not-confirmed")
    assert opening.startswith("Not confirmed \u2014 3 of 19 claims confirmed in 5 s; 16 could")
    assert page.headings()[:2] == ["Claims", "Runs"]


def test_a_reconcile_page_counts_per_partition_with_its_offsets() -> None:
    result = ReconcileResult(
        request=ReconcileRequest(topic="orders", sink_uri="parquet:/data/orders"),
        sink=SinkSpec("parquet", "/data/orders"),
        ranges=[OffsetRange(0, 0, 100, 0, 0), OffsetRange(1, 5, 80, 0, 5)],
        topic_records=175, sink_rows=173, counts={"missing_in_sink": 2},
        by_partition={0: {"missing_in_sink": 2}, 1: {}}, samples={}, output_files=[],
        seconds=1.0)
    page = _check_self_contained(render(RECONCILE, result, "html"), terminal_text=True)
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
