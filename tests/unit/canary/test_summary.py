"""The canary's summary and metrics, from books filled by hand (no cluster)."""

from __future__ import annotations

import json

from prometheus_client import CollectorRegistry, generate_latest

from kaudit.canary.metrics import BooksCollector
from kaudit.canary.service import EVENTS_KEPT, result_of
from kaudit.report.base import render
from kaudit.report.canary import CANARY
from tests.unit.canary.sample import a_canary


def test_a_loss_fails_with_its_cause_and_duplicates_only_under_exactly_once() -> None:
    result = result_of(a_canary())
    assert result.total("lost") == 1 and result.lost_causes() == {"deleted": 1}
    assert result.violations() == [
        "lost: 1 acknowledged record(s) (1 deleted)",
        "unverified: 1 acknowledged record(s) not read back before the end (not counted lost)"]
    strict = result_of(a_canary("exactly-once"))
    assert "duplicated: 1 record(s) read more than once" in strict.violations()


def test_the_document_and_table_show_every_partition_and_the_loss_evidence() -> None:
    result = result_of(a_canary())
    doc = json.loads(render(CANARY, result, "json"))
    assert doc["schema"] == "kaudit.canary/v1" and doc["verdict"] == "fail"
    assert [p["partition"] for p in doc["partitions"]] == [0, 1]
    assert doc["totals"]["duplicated"] == 1 and doc["totals"]["acked_unread"] == 1
    [lost] = [e for e in doc["events"] if e["kind"] == "lost"]
    assert lost["cause"] == "deleted" and "log start offset 1" in lost["evidence"]
    table = render(CANARY, result, "table")
    assert "lost p0 seq 0 (1), offset 0: deleted" in table and "verdict: fail" in table


def test_metrics_count_every_fate_and_cause_per_partition_and_carry_no_secret() -> None:
    canary = a_canary()
    canary.health.leaders, canary.health.isr_sizes = {0: 1, 1: 2}, {0: 3, 1: 2}
    registry = CollectorRegistry()
    registry.register(BooksCollector(canary, {"acks": "all"}))
    text = generate_latest(registry).decode()
    assert 'kaudit_canary_records_total{fate="sent",partition="0",topic="kaudit-canary"} 3.0' \
        in text
    assert 'kaudit_canary_records_total{fate="duplicated",partition="0",' in text
    assert 'kaudit_canary_lost_records_total{cause="deleted",partition="0",' \
           'topic="kaudit-canary"} 1.0' in text
    assert 'kaudit_canary_partition_isr_size{partition="0",topic="kaudit-canary"} 3.0' in text
    assert 'kaudit_canary_settings_info{acks="all"} 1.0' in text
    assert 'kaudit_canary_produce_available{topic="kaudit-canary"}' in text
    assert "s3cret" not in text


def test_consecutive_losses_of_one_cause_are_one_line() -> None:
    canary = a_canary()
    b1 = canary.books[1]
    for seq in range(1, 5):
        b1.sent(seq, 0.0)
        b1.acked(seq, 10 + seq, 0.1)
    b1.read(3, 13, 0.2)  # 1, 2 and 4 are lost: two runs, not three lines
    for event in b1.passed(20, 0, 0.3):
        canary.add_event(event)
    table = render(CANARY, result_of(canary), "table")
    assert "lost p1 seq 0-2 (3), offsets 7-12: unknown" in table
    assert "lost p1 seq 4 (1), offset 14: unknown" in table


def test_a_flood_of_late_reads_does_not_crowd_the_losses_out_of_the_summary() -> None:
    canary = a_canary()
    for seq in range(EVENTS_KEPT + 50):
        canary.add_event({"kind": "late", "partition": 1, "seq": seq, "offset": seq})
    canary.add_event({"kind": "lost", "partition": 1, "seq": 9, "offset": 9,
                      "cause": "unknown", "evidence": "none"})
    result = result_of(canary)
    assert [e["kind"] for e in result.events].count("late") == EVENTS_KEPT
    assert result.anomalies["late"] == EVENTS_KEPT + 50
    assert any(e["kind"] == "lost" and e["seq"] == 9 for e in result.events)


def test_the_page_shows_the_counts_the_losses_the_timeline_and_no_secret() -> None:
    page = render(CANARY, result_of(a_canary()), "html")
    assert page.startswith("<!DOCTYPE html>") and "kaudit canary" in page
    assert "lost: 1 acknowledged record(s) (1 deleted)" in page
    assert "below the log start offset 1" in page  # the loss's evidence
    assert page.count('src="data:image/png;base64,') == 1  # the timeline, drawn
    assert "leader 1 -&gt; 2" in page and "s3cret" not in page
