"""A probe run as an operator meets it: acks=1 under lag-then-kill-leader:3, 20,000 writes
of which 4,657 were lost, with the fault, ISR and leader events the run logged.

The counts come from a real ledger and verifier (:func:`tests.unit.probe.reports.probe_report`);
the timeline and the events are laid over them as the runner would record them.
"""

from __future__ import annotations

from dataclasses import replace

from kaudit.probe.faults.registry import parse_fault
from kaudit.probe.latency import LatencyHistogram, Timeline
from kaudit.probe.model import ProbeReport, ProbeSettings
from kaudit.probe.monitor import ProbeEvent
from tests.unit.probe.reports import probe_report

SENT, LOST = 20_000, 4_657
RATE, SECONDS = 1_000, 20
FREEZE_S, KILL_S, NEW_LEADER_S = 10.0, 13.0, 14.1

EVENTS = [
    ProbeEvent(FREEZE_S, "fault", "SIGSTOP followers 2, 3 for 3s (still in the ISR)", 0),
    ProbeEvent(KILL_S, "fault", "SIGKILL leader 1", 0),
    ProbeEvent(13.05, "heal", "broker 2 resumed", 0),
    ProbeEvent(13.05, "heal", "broker 3 resumed", 0),
    ProbeEvent(13.6, "isr-change", "ISR [1, 2, 3] -> [2, 3]", 0),
    ProbeEvent(13.6, "leader-change", "leader 1 -> -1", 0),
    ProbeEvent(NEW_LEADER_S, "leader-change", "leader -1 -> 3", 0),
    ProbeEvent(18.2, "heal", "broker 1 restarted", 0),
    ProbeEvent(19.0, "isr-change", "ISR [2, 3] -> [1, 2, 3]", 0),
]


def _timeline() -> Timeline:
    timeline = Timeline()
    lost: dict[int, int] = {}
    left = LOST
    for second in range(SECONDS):
        timeline.send(second, RATE)
        if second in (13, 14):  # no leader: sends wait, then are answered late
            continue
        timeline.acks(second, RATE if second < 15 else RATE + 1_000 * (second == 15),
                      1.2, 5.0 if second < 15 else 1_900.0)
        if int(FREEZE_S) <= second < int(KILL_S):  # written to the leader alone
            lost[second] = min(left, 1_600)
            left -= lost[second]
    lost[int(KILL_S) - 1] += left
    timeline.outcomes(lost, {})
    return timeline


def lag_then_kill_report() -> ProbeReport:
    """The issue's run: the verdict's sentence should name the freeze and broker 3."""
    settings = ProbeSettings(acks="1", idempotence=False, min_insync_replicas=2,
                             faults=(parse_fault("lag-then-kill-leader:3"),), count=SENT)
    base = probe_report(acked=SENT, lost=LOST, settings=settings)
    latency = LatencyHistogram()
    for ms in (1.2, 1.5, 2.0, 2.4, 5.0, 1_900.0):
        latency.record(ms)
    return replace(base, run_id="9f3c2a7be41d00aa11223344", topic="kaudit-probe-9f3c2a7b",
                   timeline=_timeline(), events=list(EVENTS), ack_latency=latency,
                   produce_seconds=float(SECONDS), total_seconds=26.4,
                   live_verification=True, read_then_lost=0)
