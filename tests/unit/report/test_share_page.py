"""``kaudit probe share --format html``: the verdict and why, the fates, the chart of the
deliveries per second with the run's events, the event log and the records on one page."""

from __future__ import annotations

import struct
from dataclasses import replace
from typing import Any

import pytest

from kaudit.probe.faults.registry import SHARE as SHARE_FAULTS
from kaudit.probe.faults.registry import parse_faults
from kaudit.probe.monitor import ProbeEvent
from kaudit.probe.share.model import ShareReport, ShareSettings
from kaudit.probe.share.verify import Action, Event, Mix, Treatment, per_second, treatment, verify
from kaudit.report.base import render
from kaudit.report.share import SHARE, share_document
from kaudit.report.share_page import share_png
from tests.unit.report import test_pages as pages

MIX = Mix(release=0.1, reject=0.05, poison=0.02)
LIMIT, RECORDS, STARTED_MS = 3, 100, 1_700_000_000_000
SHOWN = 200
"""Records a page lists before "... and N more"."""
KILLED = "SIGKILLed <b>holding</b> its locks & more"
"""How the run says it killed worker 0: markup in it must reach the page as text."""
EVENTS = [ProbeEvent(1.2, "fault", f"worker 0 {KILLED}"),
          ProbeEvent(2.5, "fault", "SIGKILL leader 2"),
          ProbeEvent(4.0, "heal", "broker 2 restarted"),
          ProbeEvent(4.6, "note", "kill-leader: <script>alert(1)</script>")]


def _journal() -> tuple[list[Event], int]:
    """What the workers journaled over ~5 s: every treatment, one record processed twice
    (its first worker killed, its acceptance failed), the last record never delivered.
    Returns the events and the record processed twice."""
    events: list[Event] = []
    twice = next(s for s in range(RECORDS) if treatment(s, MIX) == Treatment.accept)
    for seq in range(RECORDS - 1):
        at, kind = STARTED_MS + seq * 50, treatment(seq, MIX)
        if seq == twice:
            events += [Event(seq, 0, 0, 1, Action.processed, at),
                       Event(seq, 0, 0, 1, Action.ack_failed, at + 5, "INVALID_RECORD_STATE"),
                       Event(seq, 1, 0, 2, Action.processed, at + 2_000),
                       Event(seq, 1, 0, 2, Action.accepted, at + 2_001)]
        elif kind == Treatment.accept:
            events += [Event(seq, seq % 2, 0, 1, Action.processed, at),
                       Event(seq, seq % 2, 0, 1, Action.accepted, at + 1)]
        elif kind == Treatment.release:
            events += [Event(seq, 0, 0, 1, Action.released, at),
                       Event(seq, 1, 0, 2, Action.processed, at + 1_000),
                       Event(seq, 1, 0, 2, Action.accepted, at + 1_001)]
        elif kind == Treatment.reject:
            events.append(Event(seq, 1, 0, 1, Action.rejected, at))
        else:
            events += [Event(seq, d % 2, 0, d, Action.released, at + (d - 1) * 1_000)
                       for d in range(1, LIMIT + 1)]
    return events, twice


def share_sample(expect: str | None = "exactly-once", **changes: Any) -> ShareReport:
    events, _ = _journal()
    settings = ShareSettings(count=RECORDS, workers=2, mix=MIX, kill_worker=True,
                             delivery_limit=LIMIT, lock_ms=5_000, expect=expect,
                             faults=parse_faults(["kill-leader"], SHARE_FAULTS))
    report = ShareReport(
        run_id="5889817ed52f00aa11", topic="kaudit-share-5889817ed52f",
        group="kaudit-share-5889817ed52f", settings=settings, written=RECORDS,
        delivery_limit=LIMIT,
        verification=verify(range(RECORDS), events, MIX, LIMIT, {(0, 0): KILLED}, expect),
        killed=[f"worker 0: {KILLED}"], notes=["kept: <nothing>"], settled=True,
        seconds=7.14, events=list(EVENTS), timeline=per_second(events, STARTED_MS))
    return replace(report, **changes)


def _page(report: ShareReport) -> tuple[str, pages._Page]:
    text = render(SHARE, report, "html")
    return text, pages._check_self_contained(text)


def _block(page: pages._Page, heading: str) -> str:
    """The text of what follows ``heading``."""
    blocks = page.blocks
    at = blocks.index(("h2", "", heading))
    return blocks[at + 1][2]


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_share_report_offers_html() -> None:
    assert SHARE.formats == ("json", "table", "html")


def test_a_share_page_opens_with_its_verdict_then_fates_chart_events_and_records() -> None:
    report = share_sample()
    text, page = _page(report)
    assert page.blocks[0] == ("h1", "", "kaudit probe share 5889817ed52f on "
                                        "kaudit-share-5889817ed52f")
    tag, css, opening = page.opening()
    assert (tag, css) == ("p", "verdict verdict-fail")
    assert opening.startswith("Fail \u2014 2 of 100 records broke exactly-once: ")
    for violation in report.violations():  # each one, in the sentence and as a reason
        assert violation in opening
        assert text.count(violation) == 2
    assert page.headings() == ["Summary", "Timeline", "Events", "Records", "Notes"]
    fates = share_document(report)["fates"]
    assert page.captions["Fates"] == "fate|records|" + "".join(
        f"{fate.replace('_', ' ')}|{n:,}|" for fate, n in fates.items())
    assert fates["processed_twice"] == 1 and fates["archived"] == 3 and fates["rejected"]
    run = page.captions["The run"]
    for shown in ("workers|2|", "records written|100|", "partitions|3|",
                  "acknowledgements|accept 83%, release 10%, reject 5%, poison 2%|",
                  "delivery count limit|3|", "lock ms|5,000|", "faults|kill-leader at 30% "
                  "for 10s|", "slow worker|no|", "expect|exactly-once|", "settled|yes|",
                  "seconds|7.14|"):
        assert shown in run
    assert f"killed worker|worker 0: {KILLED}|" in run
    assert len(page.images) == 1  # the chart
    events = _block(page, "Events")
    assert "1.2fault" in events and "4.0healbroker 2 restarted" in events
    assert "4.6notekill-leader: <script>alert(1)</script>" in events  # as text, escaped
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "kept: <nothing>" in _block(page, "Notes")


def test_a_share_page_shows_the_escaped_why_of_a_record_processed_twice() -> None:
    report = share_sample()
    _, twice = _journal()
    text, page = _page(report)
    (account,) = [a for a in report.verification.accounts if a.seq == twice]
    assert account.why.startswith("worker 0 processed it (delivery 1) and was SIGKILLed <b>")
    records = _block(page, "Records")
    assert f"{twice}acceptprocessed_twice22{account.why}" in records
    assert "<b>" not in text and "SIGKILLed &lt;b&gt;holding&lt;/b&gt; its locks &amp; more" \
        in text
    # the record never delivered, with what is wrong with it
    assert f"{RECORDS - 1}acceptnever_delivered00" in records
    assert "never_delivered: never processed" in records


def test_a_passing_share_page_says_what_became_of_the_records() -> None:
    events, _ = _journal()
    delivered = range(RECORDS - 1)  # the never-delivered record left out
    ok = share_sample(expect="at-least-once", written=len(delivered), verification=verify(
        delivered, events, MIX, LIMIT, {(0, 0): KILLED}, "at-least-once"))
    _, page = _page(ok)
    _, css, opening = page.opening()
    assert css == "verdict verdict-pass"
    assert opening.startswith("Pass \u2014 all 99 records kept at-least-once: ")
    assert "1 processed twice" in opening and "3 archived" in opening
    _, page = _page(share_sample(expect=None))
    assert page.opening()[2].startswith("None \u2014 nothing was expected (no --expect)")


def test_a_share_page_without_a_timeline_says_so_instead_of_a_chart() -> None:
    _, page = _page(share_sample(timeline=[], events=[]))
    assert page.images == []
    assert _block(page, "Timeline") == ("No chart: the workers handled no delivery while "
                                        "the run lasted.")
    assert "Events" not in page.headings()
    assert "Fates" in page.captions  # the rest of the page is there


def test_a_share_page_lists_the_first_records_then_counts_the_rest() -> None:
    written = RECORDS + SHOWN + 50  # the last 251 never delivered
    events, _ = _journal()
    report = share_sample(written=written, verification=verify(
        range(written), events, MIX, LIMIT, {(0, 0): KILLED}, "exactly-once"))
    listed = share_document(report)["records"]
    assert len(listed) > SHOWN
    text, page = _page(report)
    table = text.split("<h2>Records</h2>")[1].split("<h2>Notes</h2>")[0]
    assert table.count("<tr") == 1 + SHOWN  # the header, then the first SHOWN records
    # those that break the expectation in red
    assert table.count('<tr class="flag">') == sum(1 for r in listed[:SHOWN] if r["wrong"])
    at = page.headings().index("Records")
    records = [b for b in page.blocks if b[0] in ("h2", "table", "p")]
    after = records[records.index(("h2", "", "Records")) + 2]
    assert after == ("p", "", f"... and {len(listed) - SHOWN:,} more (the JSON lists them "
                              "all)")
    assert page.headings()[at + 1] == "Notes"
    # the 200th listed record is on the page, the 201st is not
    last, beyond = listed[SHOWN - 1]["seq"], listed[SHOWN]["seq"]
    rows = _block(page, "Records")
    assert f"{last}acceptnever_delivered" in rows and f"{beyond}accept" not in rows


def test_a_share_page_with_every_record_processed_once_lists_none() -> None:
    events, twice = _journal()
    plain = [s for s in range(RECORDS - 1) if s != twice
             and treatment(s, MIX) in (Treatment.accept, Treatment.release)]
    report = share_sample(expect="exactly-once", written=len(plain), verification=verify(
        plain, events, MIX, LIMIT, {}, "exactly-once"))
    _, page = _page(report)
    assert page.opening()[1] == "verdict verdict-pass"
    assert _block(page, "Records") == "Every record was processed once, as expected."


@pytest.fixture
def mpl() -> Any:
    return pytest.importorskip("matplotlib")


def test_the_share_chart_draws_the_timeline_and_its_events(mpl: Any) -> None:
    doc = share_document(share_sample())
    assert len(doc["timeline"]) >= 5 and any(s["ack_failed"] for s in doc["timeline"])
    png = share_png(doc)
    width, height = _png_size(png)
    assert 800 <= width <= 2500 and 300 <= height <= 1200 and width > height
    assert len(png) > 10_000  # bars, lines and labels, not a blank canvas
    assert share_png(doc) == png  # the same document gives the same bytes
    # the events and the bars are drawn: without them the picture differs
    assert share_png({**doc, "events": []}) != png
    assert share_png({**doc, "timeline": doc["timeline"][:2]}) != png
    # nothing to draw is still a picture, not an error
    assert _png_size(share_png({**doc, "timeline": [], "events": []}))[0] == width
