"""Probe reports built from a real ledger and verifier, for tests of what is judged on them."""

from __future__ import annotations

from dataclasses import replace

from kaudit.probe.consume.model import ConsumeReport, ConsumeSettings
from kaudit.probe.consume.verify import Incarnation, Processing, verify
from kaudit.probe.consume.worker import CRASH_POINTS
from kaudit.probe.latency import LatencyHistogram, Timeline
from kaudit.probe.ledger import Ledger
from kaudit.probe.model import ProbeReport, ProbeSettings
from kaudit.probe.share.model import ShareReport
from kaudit.probe.share.verify import (
    Action,
    Event,
    Treatment,
    explain_undelivered,
    treatment,
)
from kaudit.probe.share.verify import verify as verify_share
from kaudit.probe.verifier import Verifier

RUN_ID = bytes(range(16))


def probe_report(*, acked: int = 10, lost: int = 0, duplicated: int = 0, failed: int = 0,
                 errors: dict[str, int] | None = None, unavailable_s: int = 0,
                 read_then_lost: int | None = None,
                 settings: ProbeSettings | None = None) -> ProbeReport:
    """A one-partition run: ``acked`` acked sends of which ``lost`` were never read and
    ``duplicated`` read twice, then ``failed`` refused ones; ``unavailable_s`` seconds in
    which sends got no answer."""
    ledger = Ledger(1)
    for seq in range(acked + failed):
        ledger.next_seq(0)
        if seq < acked:
            ledger.acked(0, seq, seq)
        else:
            ledger.failed(0, seq, "MSG_SIZE_TOO_LARGE")
    ledger.finish()
    verifier = Verifier(ledger, RUN_ID)
    offset = 0
    for seq in range(lost, acked):
        verifier.observe_sequence(0, seq, seq, 1)
        offset = seq
    for n, seq in enumerate(range(lost, lost + duplicated)):
        verifier.observe_sequence(0, offset + 1 + n, seq, 1)
    verifier.pass_done(1)
    timeline = Timeline()
    timeline.send(0, acked + failed)
    timeline.ack(0, 1.0)
    for second in range(1, unavailable_s + 1):
        timeline.send(second, 1)
    for second in range(unavailable_s + 1, unavailable_s + 2):
        timeline.ack(second, 1.0)
    return ProbeReport(
        run_id=RUN_ID.hex(), topic="t", settings=settings or ProbeSettings(),
        verification=verifier.result(), ledger=ledger, ack_latency=LatencyHistogram(),
        e2e_latency=None, timeline=timeline, events=[], produce_seconds=1.0, held_seconds=0.0,
        total_seconds=1.0, send_errors=dict(errors or {}), drain_complete=True,
        interrupted=False, topic_deleted=True, notes=[], read_then_lost=read_then_lost)


def with_settings(report: ProbeReport, **changes: object) -> ProbeReport:
    """The same report under other settings."""
    return replace(report, settings=replace(report.settings, **changes))  # type: ignore[arg-type]


def consume_report(strategy: str, *, lost: int = 0, duplicated: int = 0, crashes: int = 1,
                   finished: bool = True) -> ConsumeReport:
    """A one-partition consumer run of 100 records, verified for real: the first ``lost``
    never processed, the next ``duplicated`` processed twice, by a worker whose first
    ``crashes`` incarnations were SIGKILLed at its strategy's crash point."""
    processings = [Processing(0, o, 0, crashes, o + 1) for o in range(lost, 100)]
    processings += [Processing(0, o, 0, 0, 1000 + o) for o in range(lost, lost + duplicated)]
    incarnations = [Incarnation(0, i, (), killed_ns=100 * (i + 1), point=CRASH_POINTS[strategy])
                    for i in range(crashes)]
    return ConsumeReport(
        run_id="r", topic="t", output_topic=None, group="g",
        settings=ConsumeSettings(strategy=strategy, count=100, partitions=1, crash_every=1.0),
        verification=verify({0: (0, 100)}, processings, incarnations), events=[],
        started_ns=0, fill_seconds=1.0, consume_seconds=2.0, total_seconds=3.0,
        restarts=crashes, finished=finished, interrupted=False, topics_deleted=True)


def share_report(experiment: str, *, break_it: bool = False) -> ShareReport:
    """The report of the proof's share-group run ``experiment`` (see
    :data:`~kaudit.probe.prove.SHARE_EXPERIMENTS`), its journal events made as the lab
    makes them; ``break_it`` makes each go the way its claim says it does not."""
    from kaudit.probe.prove import SHARE_EXPERIMENTS

    settings = next(e.settings for e in SHARE_EXPERIMENTS if e.name == experiment)
    limit, count = settings.delivery_limit or 5, settings.count
    placed = {seq: (0, seq) for seq in range(count)}
    events: list[Event] = []
    killed: dict[tuple[int, int], str] = {}

    def once(seq: int, worker: int = 1, delivery: int = 1) -> None:
        events.extend([Event(seq, worker, 0, delivery, Action.processed, seq),
                       Event(seq, worker, 0, delivery, Action.accepted, seq)])

    if experiment == "share-latest":
        placed.update({count: (0, count + 5)})
        for seq in ([0] if break_it else []) + [count]:
            once(seq)
    else:
        for seq in range(count):
            if treatment(seq, settings.mix) == Treatment.poison:
                counts = range(1, limit + (2 if break_it else 1))
                events.extend(Event(seq, 0, 0, d, Action.released, d) for d in counts)
            elif seq < 10 and experiment in ("share-kill", "share-slow"):
                events.append(Event(seq, 0, 0, 1, Action.processed, seq))
                if experiment == "share-slow" and seq == 9 and not break_it:
                    events.append(Event(seq, 0, 0, 1, Action.held, seq))
                once(seq, 1, 2)
            elif not (break_it and experiment == "share-kill" and seq == 50):
                once(seq)
        if experiment == "share-kill":
            killed = {(0, 0): "SIGKILLed while it held its records' locks"}
    result = verify_share(placed, events, settings.mix, limit, killed, None)
    explain_undelivered(result, placed, {0: count + 5}, settings.auto_offset_reset)
    return ShareReport(run_id="r", topic="t", group="t", settings=settings,
                       written=len(placed), delivery_limit=limit, verification=result,
                       killed=[f"worker {w}: {how}" for (w, _), how in killed.items()],
                       settled=True)
