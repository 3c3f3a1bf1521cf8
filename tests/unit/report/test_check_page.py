"""`kaudit check --format html`: one self-contained page, the summary first in a sentence.

The page's exact text is pinned by tests/golden/check/result.html; these are what must hold
whatever the wording: nothing to run or fetch, secrets masked, severities coloured, and the
guarantees said as the text table says them.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kaudit.check.findings import CheckResult, Guarantee, Reader, Semantics
from kaudit.connection.redact import MASK, register_secret
from kaudit.report.base import RenderOptions, render
from kaudit.report.check import CHECK
from kaudit.report.check.html_format import SEVERITY_STYLES, summary_sentence, why
from kaudit.report.check.record import check_document, guarantee_record
from kaudit.report.check.table import _why as table_why
from kaudit.report.output import choose_format
from tests.conftest import run_in_process
from tests.unit.report.check_sample import SAMPLE, TOOL_VERSION


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def page(result: CheckResult = SAMPLE) -> str:
    return render(CHECK, result, "html", RenderOptions(tool_version=TOOL_VERSION))


def test_the_page_runs_nothing_and_fetches_nothing() -> None:
    text = page()
    tags = _Tags(text)
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert "<script" not in text.lower()
    assert not [tag for tag, _ in tags.tags if tag in ("script", "link", "img", "iframe",
                                                       "object", "embed")]
    for tag, attrs in tags.tags:
        for name, value in attrs.items():
            assert name not in ("href", "src") and not name.startswith("on"), (tag, name)
            assert "url(" not in (value or "") and "//" not in (value or ""), (tag, value)
    assert "@import" not in text and "url(" not in text


def test_the_summary_sentence_comes_first() -> None:
    text = page()
    summary = re.search(r'<p class="verdict[^"]*">(.*?)</p>', text, re.DOTALL)
    assert summary is not None and "<pre>" not in text
    assert "&mdash; 1 error, 2 warnings, 1 info (1 waived): 2 topics can lose acknowledged " \
        "writes or stop taking them when one broker fails" in summary.group(1)
    assert text.index("<h1>") < summary.start() < text.index("<h2>Findings</h2>") \
        < text.index("<h2>Guarantees</h2>")


def test_the_sentence_counts_topics_and_what_their_producers_lose() -> None:
    sound = Guarantee(topic="orders", semantics=Semantics.exactly_once, loss_tolerance=1,
                      write_tolerance=1)
    acks1 = replace(sound, producer="orders.properties", semantics=Semantics.at_least_once,
                    loss_tolerance=0)
    clicks = replace(sound, topic="clicks", loss_tolerance=0, write_tolerance=0)
    audit = replace(sound, topic="audit", loss_tolerance=2, write_tolerance=0)

    def sentence(*guarantees: Guarantee) -> str:
        return summary_sentence(check_document(replace(SAMPLE, findings=(),
                                                       guarantees=guarantees)))

    assert sentence(sound, acks1, clicks, audit) == (
        "0 errors, 0 warnings: 2 topics can lose acknowledged writes or stop taking them "
        "when one broker fails, and 1 more can lose acknowledged writes through its "
        "producer's settings")
    assert sentence(sound) == ("0 errors, 0 warnings: no topic can lose an acknowledged "
                               "write or stop taking them when one broker fails")
    assert sentence(sound, acks1).endswith(
        "when one broker fails, and 1 topic can lose acknowledged writes through its "
        "producer's settings")
    assert sentence() == "0 errors, 0 warnings; no topic's guarantee was worked out"


def test_severities_are_coloured_and_waived_findings_greyed() -> None:
    cells = [(attrs.get("class"), attrs.get("style")) for tag, attrs in _Tags(page()).tags
             if tag == "td" and (attrs.get("class") or "").startswith("severity-")]
    assert ("severity-error", SEVERITY_STYLES["error"]) in cells
    assert ("severity-warning", SEVERITY_STYLES["warning"]) in cells
    assert ("severity-info", SEVERITY_STYLES["info"]) in cells
    assert len({style for _, style in cells}) == 4  # the waived error is not red
    assert ("severity-error waived", "color: #757575") in cells
    # Open findings first, worst first; the waived error last.
    order = [css for css, _ in cells]
    assert order == ["severity-error", "severity-warning", "severity-warning", "severity-info",
                     "severity-error waived"]


def test_a_secret_in_a_finding_source_is_masked() -> None:
    secret = "Sup3r-S3cret&<pw>"
    register_secret(secret)
    finding = replace(SAMPLE.findings[1], source=f"/etc/kafka/{secret}.properties:3",
                      message=f"sasl.jaas.config password={secret}")
    text = page(replace(SAMPLE, findings=(finding,)))
    assert "Sup3r" not in text and "S3cret" not in text
    assert MASK in text


def test_text_is_escaped() -> None:
    text = page()
    assert '"acks=all" & <all>' not in text
    assert "&quot;acks=all&quot; &amp; &lt;all&gt;" in text


def test_the_guarantees_say_what_the_text_table_says() -> None:
    reader = replace(SAMPLE.guarantees[0], readers=(
        Reader(group="billing", lag=0, oldest_unread_age_ms=None),
        Reader(group="audit", lag=1200, oldest_unread_age_ms=3 * 3_600_000)))
    for g in (*SAMPLE.guarantees, reader):
        record = json.loads(json.dumps(guarantee_record(g)))  # as a stored check.json holds it
        assert why(record) == table_why(g)
    text = page(replace(SAMPLE, guarantees=(reader,)))
    assert "read by billing (caught up), audit (lag 1200, oldest unread 3 h)" in text
    text = page()
    for g in SAMPLE.guarantees:
        record = guarantee_record(g)
        assert record["producer_gives"] in text and record["survives"] in text


def test_an_empty_result_says_so() -> None:
    text = page(CheckResult(findings=(), guarantees=(), rules=(), policies=(), origin="live"))
    assert "No findings." in text and "No guarantees" in text
    assert '<strong class="pass">Pass</strong>' in text


@pytest.mark.parametrize("name", ["report.html", "REPORT.HTM"])
def test_an_html_file_name_chooses_the_page(tmp_path: Path, name: str) -> None:
    assert choose_format(None, name, html=True) == "html"
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"schema": "kaudit.snapshot/v1", "taken_at": "2026-01-01",
                                "brokers": [], "broker_configs": {}, "topics": [
                                    {"name": "t", "internal": False, "partition_count": 1,
                                     "replication_factor": 1, "configs": {},
                                     "partitions": []}]}))
    target = tmp_path / name
    result = run_in_process("check", "--snapshot", str(snap), "-o", str(target))
    assert result.code == 1, result.stderr
    text = target.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "<h2>Guarantees</h2>" in text
    assert "1 topic can lose acknowledged writes" in text
