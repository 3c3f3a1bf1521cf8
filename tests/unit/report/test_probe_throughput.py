"""The send rate is over the time spent sending: a run held open for its fault to heal
does not look slow."""

from __future__ import annotations

from dataclasses import replace

from kaudit.report.base import render
from kaudit.report.probe import PROBE, probe_document
from tests.unit.probe.reports import probe_report


def test_the_send_rate_leaves_out_the_wait_for_a_fault_to_heal() -> None:
    report = replace(probe_report(acked=1000), produce_seconds=10.0, held_seconds=8.0,
                     total_seconds=12.0)
    throughput = probe_document(report)["throughput"]
    assert throughput["sending_seconds"] == 2.0 and throughput["held_seconds"] == 8.0
    assert throughput["sent_per_second"] == 500.0  # 1000 in 2 s, not in 10 s
    assert throughput["verified_per_second"] == round(1000 / 12.0, 1)
    text = render(PROBE, report, "table")
    assert "500 msg/s sent (over 2s of sending; then held 8s for the fault to heal)" in text


def test_a_run_without_a_hold_says_nothing_of_one() -> None:
    report = replace(probe_report(acked=1000), produce_seconds=2.0, held_seconds=0.0)
    assert "held" not in render(PROBE, report, "table").split("throughput:")[1].splitlines()[0]
