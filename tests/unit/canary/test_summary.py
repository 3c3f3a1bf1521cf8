"""The canary's summary and metrics, from books filled by hand (no cluster)."""

from __future__ import annotations

import json
from pathlib import Path

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
    for seq in range(EVENTS_KEPT + 50):  # one a second: a line each
        canary.add_event({"kind": "late", "partition": 1, "seq": seq, "offset": seq,
                          "time": 1000.0 + seq})
    canary.add_event({"kind": "lost", "partition": 1, "seq": 9, "offset": 9,
                      "cause": "unknown", "evidence": "none"})
    canary.flush_late()
    result = result_of(canary)
    assert [e["kind"] for e in result.events].count("late") == EVENTS_KEPT
    assert result.anomalies["late"] == EVENTS_KEPT + 50
    assert any(e["kind"] == "lost" and e["seq"] == 9 for e in result.events)


def test_late_reads_are_one_line_per_partition_and_second_with_the_first_and_the_count(
        tmp_path: Path) -> None:
    canary = a_canary()
    canary.events_file = (tmp_path / "events.jsonl").open("a", encoding="utf-8")
    for seq in range(500):  # a fault: every record late, two partitions, two seconds
        canary.add_event({"kind": "late", "partition": seq % 2, "seq": seq, "offset": seq,
                          "seconds": 11.0, "time": 2000.2 + seq // 300})

    def late_lines() -> list[tuple[int, int, int]]:
        canary.events_file.flush()  # type: ignore[union-attr]
        lines = (tmp_path / "events.jsonl").read_text().splitlines()
        return sorted((e["partition"], e["seq"], e["count"]) for e in map(json.loads, lines)
                      if e["kind"] == "late")

    # A partition's line is written when its next second begins; the second still going
    # on stays open until the clock has left it (or the run ends).
    assert late_lines() == [(0, 0, 150), (1, 1, 150)]
    canary.flush_late(2001.9)
    assert late_lines() == [(0, 0, 150), (1, 1, 150)]
    canary.flush_late(2002.1)
    late = late_lines()
    assert late == [(0, 0, 150), (0, 300, 100), (1, 1, 150), (1, 301, 100)]
    assert sum(n for _, _, n in late) == 500 == canary.anomaly_counts["late"]
    canary.events_file.close()  # type: ignore[union-attr]


def test_the_page_shows_the_counts_the_losses_the_timeline_and_no_secret() -> None:
    page = render(CANARY, result_of(a_canary()), "html")
    assert page.startswith("<!DOCTYPE html>") and "kaudit canary" in page
    assert "lost: 1 acknowledged record(s) (1 deleted)" in page
    assert "below the log start offset 1" in page  # the loss's evidence
    assert page.count('src="data:image/png;base64,') == 1  # the timeline, drawn
    assert "leader 1 -&gt; 2" in page and "s3cret" not in page


def test_faults_hold_what_was_injected_and_leader_changes_are_listed_as_such() -> None:
    canary = a_canary()  # one leader change nobody injected
    canary.log.add("fault", "SIGKILL leader 1", 0)
    doc = json.loads(render(CANARY, result_of(canary), "json"))
    assert [(f["kind"], f["detail"]) for f in doc["faults"]] == [("fault", "SIGKILL leader 1")]
    assert [(c["kind"], c["partition"], c["detail"]) for c in doc["leader_changes"]] == [
        ("leader-change", 0, "leader 1 -> 2")]
    table = render(CANARY, result_of(canary), "table")
    assert "leader-change at" in table and "p0 leader 1 -> 2" in table
