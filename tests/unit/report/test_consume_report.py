"""The `kaudit probe consume` report: one document for JSON, the same counts in the table."""

from __future__ import annotations

import json
from dataclasses import replace

from kaudit.probe.consume.model import ConsumeEvent
from kaudit.report.base import render
from kaudit.report.consume import CONSUME
from tests.unit.probe.reports import consume_report


def test_json_counts_every_record_and_names_the_crash() -> None:
    doc = json.loads(render(CONSUME, consume_report("before-process", lost=7), "json"))
    assert doc["schema"] == "kaudit.consume/v1"
    assert (doc["records"], doc["processed"], doc["lost"], doc["duplicated"]) == (100, 93, 7, 0)
    assert doc["delivered"] == doc["promised"] == "at-most-once"
    assert doc["lost_offsets"] == {"0": "0-6"}
    assert doc["verdict"] == "fail" and doc["violations"] == [
        "lost: 7 input record(s) were never processed"]
    [crash] = doc["crashes"]
    assert crash["point"] == "after-commit-before-process"
    assert doc["settings"]["commit"] == "before-process" and doc["settings"]["rate"] == 250.0


def test_the_table_has_the_counts_the_faults_and_the_verdict() -> None:
    report = replace(consume_report("after-process", duplicated=4), events=[
        ConsumeEvent(3.2, "fault", "kill-coordinator: broker 2 SIGKILLed"),
        ConsumeEvent(6.4, "heal", "broker 2 restarted")])
    table = render(CONSUME, report, "table")
    assert "--commit after-process" in table
    assert "events: 3.2 s kill-coordinator: broker 2 SIGKILLed; 6.4 s broker 2 restarted" in table
    counts = next(line for line in table.splitlines() if line.split()[:1] == ["100"])
    assert counts.split()[:5] == ["100", "100", "0", "4", "4"]
    assert table.rstrip().splitlines()[-1].startswith("verdict: PASS;")


def test_each_workers_share_is_counted() -> None:
    doc = json.loads(render(CONSUME, consume_report("after-process", duplicated=4), "json"))
    # every processing is worker 0's in this report: 100 records, 4 of them twice
    assert doc["processed_by_worker"] == {"0": 104}
