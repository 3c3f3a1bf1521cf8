"""Run one probe: produce sequenced messages, read them back, account for every one.

The data flows one way: settings -> topic -> producer (ledger of send
outcomes) -> read-back passes (verifier) -> :class:`ProbeReport`.
Faults and the leader/ISR monitor run beside the producer and write to the
shared event log. Whatever happens (Ctrl-C included), faults are healed, the
probe topic is deleted unless kept, and what was sent is still verified.

Read-back pass 1 runs *while* the producer writes (the "live" pass: the send loop
takes a batch from a consumer now and then, on the same thread), then drains each
partition past its last acknowledged offset once the producer is done: the run takes
about as long as the slower of writing and reading, not their sum. A live reader sees
the log as it grows, so it is kept only when nothing can have rewritten the log behind
it: no fault injected, no leader change seen by the monitor, and no record of the run
deleted (every partition's log start offset still at or below where the run began).
Otherwise it is set aside and pass 1 reads the finished log again, as a reader after
the run would. A second, fresh pass follows whenever pass 1 left an acknowledged
message unseen, to tell a consumer miss from real log loss.
"""

from __future__ import annotations

import gc
import threading
import time
import uuid
from typing import Any

from kaudit.cluster.client import AdminSession
from kaudit.cluster.topics import (
    TopicSpec,
    create_probe_topic,
    delete_probe_topic,
    partition_roles,
    topic_partitions,
)
from kaudit.connect.settings import ConnectionSettings
from kaudit.errors import InputError
from kaudit.probe.faults import FaultInjector, LabControl, ProducerRestart
from kaudit.probe.latency import Timeline
from kaudit.probe.ledger import Ledger
from kaudit.probe.model import ProbeReport, ProbeSettings
from kaudit.probe.monitor import EventLog, LeaderMonitor
from kaudit.probe.produce import Progress, SendProgress, produce_messages
from kaudit.probe.readback import LatencyTail, ReadPass, live_pass_doubt, read_back, read_ends
from kaudit.probe.verifier import Verifier

DEFAULT_COUNT = 10_000


def run_probe(conn: ConnectionSettings, settings: ProbeSettings,
              interrupted: threading.Event | None = None,
              progress: Progress | None = None) -> ProbeReport:
    """Run the probe end to end; see the module docstring."""
    interrupted = interrupted or threading.Event()
    if settings.count is None and settings.duration is None:
        settings = _replace(settings, count=DEFAULT_COUNT)
    lab = None
    if any(f.needs_lab for f in settings.faults):
        from kaudit.lab.state import default_state_dir

        lab = LabControl((settings.lab_state_dir or default_state_dir()).expanduser())

    session = AdminSession(conn)
    run_id = uuid.uuid4().bytes
    name = settings.topic or f"kaudit-probe-{run_id.hex()[:12]}"
    partitions = topic_partitions(session, name)
    if settings.existing:
        if partitions is None:
            raise InputError(f"--existing: topic {name} does not exist")
    else:
        if partitions is not None:
            raise InputError(f"topic {name} already exists; pass --existing to probe it "
                             "(kaudit never reuses a topic silently)")
        create_probe_topic(session, TopicSpec(name, settings.partitions,
                                              settings.replication_factor,
                                              settings.min_insync_replicas,
                                              settings.unclean_leader_election))
        partitions = list(range(settings.partitions))
    assert partitions is not None
    started = time.monotonic()
    log = EventLog(started)
    notes: list[str] = []
    # The admin client asks again while leadership is still moving after the previous
    # trial's fault; a consumer's watermark query gave up on NOT_LEADER_OR_FOLLOWER.
    start_offsets = session.list_offsets(name, partitions, "latest")
    monitor = LeaderMonitor(session, name, log)
    monitor.sample()
    monitor.start()
    deleted = False
    ledger = Ledger(max(partitions) + 1)
    live: ReadPass | None = None
    try:
        tracker = SendProgress(settings, progress)
        injector = None
        restart = (ProducerRestart()
                   if any(f.kind == "restart-producer" for f in settings.faults) else None)
        if settings.faults:
            # A fault waits for the first acknowledged write to partition 0 too: before it,
            # a run measures the producer's start-up (a producer id, metadata), not the
            # fault, and a schedule would meet writes that had not begun.
            first = 0 if 0 in partitions else partitions[0]

            def trigger() -> bool:
                return tracker.trigger() and ledger.partition_counts(first)["acked"] > 0

            injector = FaultInjector(list(settings.faults), trigger,
                                     settings.fault_duration, log, lab,
                                     lambda: partition_roles(session, name), restart,
                                     settings.transactional)
            tracker.hold = injector.under_way
            injector.start()
        tail = (LatencyTail(conn, name, partitions, start_offsets, run_id)
                if settings.e2e_latency else None)
        if tail:
            tail.start()
        verifier = Verifier(ledger, run_id)
        if not settings.faults:  # a fault sets the live pass aside anyway: spare the load
            live = ReadPass(conn, settings, name, partitions, start_offsets, verifier,
                            run_id, 1)
        # The send loop and the live pass allocate a few objects per message and keep
        # none: the cyclic collector would only rescan the heap, again and again.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            produced = produce_messages(conn, settings, name, partitions, run_id, ledger,
                                        tracker, interrupted, log, notes,
                                        live.step if live is not None else None,
                                        restart)
        finally:
            if gc_was_enabled:
                gc.enable()
            if injector:
                injector.cancel()
                injector.join(timeout=settings.fault_duration + 150)
                injector.heal()
                notes.extend(injector.errors)
        ack_latency, timeline, produce_seconds, send_errors = produced
        ledger.finish()
        monitor.stop()
        drain_complete = True
        live_kept = False
        ends = read_ends(session, settings, name, partitions, start_offsets, ledger)
        if live is not None:
            complete = live.drain(ends)
            doubt = live_pass_doubt(session, name, partitions, log, start_offsets)
            live.close()
            live = None
            if doubt is None:
                live_kept = True
                verifier.pass_done(1)
                drain_complete = complete
            else:
                notes.append(f"the live read-back pass was set aside ({doubt}); "
                             "pass 1 read the topic again after the run")
                verifier = Verifier(ledger, run_id)
        for pass_no in (1, 2):
            if pass_no == 1 and live_kept:
                complete = drain_complete
            else:
                complete = read_back(conn, settings, name, partitions, start_offsets,
                                     ends, verifier, run_id, pass_no)
                verifier.pass_done(pass_no)
                drain_complete = drain_complete and complete
            # The second pass only tells a consumer miss from log loss: with no
            # acknowledged message missing after the first, there is nothing to tell.
            if pass_no == 1 and complete and verifier.result().lost == 0:
                break
        if tail:
            tail.stop()
        verification = verifier.result()
        read_then_lost = tail.read_then_lost(verifier) if tail else None
        _place_outcomes(timeline, verifier, partitions)
    finally:
        if live is not None:
            live.close()
        monitor.stop()
        if not settings.existing and not settings.keep:
            deleted = delete_probe_topic(session, name)
            if not deleted:
                notes.append(f"could not delete probe topic {name}; delete it by hand")
    return ProbeReport(
        run_id=run_id.hex(), topic=name, settings=settings, verification=verification,
        ledger=ledger, ack_latency=ack_latency,
        e2e_latency=tail.histogram if tail else None, timeline=timeline,
        events=log.events(), produce_seconds=produce_seconds,
        total_seconds=time.monotonic() - started, send_errors=send_errors,
        drain_complete=drain_complete, interrupted=interrupted.is_set(), topic_deleted=deleted,
        notes=notes, live_verification=live_kept, read_then_lost=read_then_lost)


def _replace(settings: ProbeSettings, **changes: Any) -> ProbeSettings:
    from dataclasses import replace

    return replace(settings, **changes)



def _place_outcomes(timeline: Timeline, verifier: Verifier, partitions: list[int]) -> None:
    """Put each lost and duplicated message in the second it was sent (the timeline's
    picture of where a fault hit)."""
    lost: dict[int, int] = {}
    duplicated: dict[int, int] = {}
    for p in partitions:
        for tally, seqs in ((lost, verifier.lost_sequences(p)),
                            (duplicated, verifier.duplicated_sequences(p))):
            for second, n in timeline.seconds_of(p, seqs).items():
                tally[second] = tally.get(second, 0) + n
    timeline.outcomes(lost, duplicated)
