"""The demo's one page, made from the three JSON documents its steps write, as stored
(tests/unit/report/demo_sample.py)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import pytest

from kaudit.report.demo_page import demo_page
from tests.unit.report.demo_sample import INJECTED, check_doc, matrix_doc, reconcile_doc


def page(**changes: Any) -> str:
    docs = {"check": check_doc(), "matrix": matrix_doc(), "reconcile": reconcile_doc(),
            **changes}
    return demo_page(docs["check"], docs["matrix"], docs["reconcile"], INJECTED,
                     [("check.json", "check's findings"), ("probe-matrix.html", "the matrix")])


def sections(text: str) -> dict[str, str]:
    """Each section's text (tags removed) by its heading."""
    parts = re.split(r"<h2>(.*?)</h2>", text)
    return {heading: re.sub(r"<[^>]+>", " ", body)
            for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


def plain(text: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", text).replace("&#x27;", "'").split())


def test_every_step_is_there_in_order_with_what_it_shows_and_why() -> None:
    text = page()
    headings = list(sections(text))
    assert headings[0] == "What the demo did"
    steps = [h for h in headings if h[:1].isdigit()]
    assert [h.split(":")[0] for h in steps] == ["1. check", "2. probe matrix", "3. reconcile"]
    for heading in steps:
        body = plain(sections(text)[heading])
        assert "What it shows:" in body and "Why its result is the point:" in body
        assert "Shown:" in body  # each showed what it was built to show
    assert headings[-1] == "The reports beside this page"
    assert "probe-matrix.html" in sections(text)[headings[-1]]


def test_the_page_says_the_failures_are_the_point() -> None:
    text = page()
    assert "<pre>" not in text  # the outcome is sentences and a list, not a text dump
    first = plain(re.search(r'<p class="verdict[^"]*">(.*?)</p>', text, re.DOTALL).group(1))  # type: ignore[union-attr]
    assert first == ("Pass &mdash; every step showed what it was built to show; the failures "
                     "it reports are the point.")
    summary = plain(re.search(r"</p>\s*<ul>(.*?)</ul>", text, re.DOTALL).group(1))  # type: ignore[union-attr]
    assert "probe matrix: acks=1: 37 of 200 acknowledged writes lost (verdict fail)" in summary
    assert "reconcile: found 3 missing, 0 extra, 2 duplicated, 2 changed" in summary


def test_the_acks1_loss_is_explained_as_the_point() -> None:
    body = plain(sections(page())["2. probe matrix: what acks=1 and acks=all lose when the "
                                  "leader dies before its followers have its writes"])
    assert "under acks=1 a write is acknowledged as soon as the leader alone has it" in body
    assert "When that leader dies before its followers have copied it" in body
    assert "acks=1's fail verdict is that loss" in body
    assert "is what this step is for" in body
    assert "Under acks=all a write is acknowledged only once a second replica has it, so the " \
           "same failure loses none" in body
    assert ("Shown: acks=1: 37 of 200 acknowledged writes lost (verdict fail). acks=all: 0 of "
            "190 acknowledged writes lost (verdict pass), 2 duplicated.") in body


def test_the_matrix_verdicts_are_a_coloured_table() -> None:
    text = page()
    assert '<td class="fail">fail</td>' in text and '<td class="pass">pass</td>' in text
    assert "acks=1, idempotence off, min.insync.replicas=2, unclean leader election off, " \
           "fault lag-then-kill-leader:3" in text


@pytest.mark.parametrize(("acks1", "acks_all", "said"), [
    (0, 0, "acks=1 lost nothing this time"),
    (37, 5, "acks=all: 5 of 190 acknowledged writes lost"),
])
def test_a_matrix_that_did_not_show_the_loss_is_not_passed_off(acks1: int, acks_all: int,
                                                               said: str) -> None:
    text = page(matrix=matrix_doc(acks1_lost=acks1, acks_all_lost=acks_all))
    assert '<strong class="fail">Fail</strong>' in text
    assert "probe matrix did not show what it was built to show this time." in text
    assert '<strong class="fail">Not shown this time:</strong>' in text
    assert said in plain(text)


def test_reconcile_sets_the_faults_found_beside_the_faults_put_in() -> None:
    body = plain(sections(page())["3. reconcile: did every order reach the sink, once and "
                                  "unchanged?"])
    assert ("found 3 missing, 0 extra, 2 duplicated, 2 changed (of 1,000 orders on the topic): "
            "every fault put into the sink, and nothing else") in body
    assert "missing on the topic, never written to the sink 3 3 17, 404, 777" in body
    assert "changed in the sink with another value than on the topic 2 2 123, ..." in body
    assert "Verdict: fail" in body and "a sink that matched its topic would pass" in body


def test_reconcile_finding_other_counts_is_said() -> None:
    text = page(reconcile=reconcile_doc({"missing_in_sink": 3, "extra_in_sink": 1,
                                         "duplicated_in_sink": 2, "mismatched": 2,
                                         "undecodable": 4}))
    body = plain(text)
    assert "reconcile did not show what it was built to show this time." in body
    assert "the sink was built with 3 missing, 0 extra, 2 duplicated, 2 changed" in body
    assert "Also found: 4 undecodable" in body


def test_the_check_step_shows_its_sentence_guarantees_and_findings() -> None:
    text = page()
    body = sections(text)["1. check: does the configuration give the guarantee we think it "
                          "does?"]
    assert "1 error, 2 warnings, 1 info (1 waived): 2 topics can lose acknowledged writes" \
        in plain(body)
    assert "no broker failure: one can lose acknowledged writes" in body
    assert "<details><summary>The 5 findings</summary>" in text
    assert 'class="severity-error"' in text


def test_a_check_without_errors_did_not_show_the_unsound_topics() -> None:
    clean = check_doc()
    clean["summary"]["errors"] = 0
    assert "check did not show" in page(check=clean)


class _Links(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.found: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "link", "img", "iframe"):
            self.found.append(tag)
        self.found += [name for name, _ in attrs if name in ("href", "src")]


def test_the_page_is_self_contained_and_escaped() -> None:
    check = check_doc()
    check["guarantees"][0]["topic"] = "<script>alert(1)</script>"
    text = page(check=check)
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert _Links(text).found == []
    assert "<script" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
