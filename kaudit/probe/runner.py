"""Run one probe: produce sequenced messages, read them back, account for every one.

The data flows one way: settings -> topic -> producer (ledger of send
outcomes) -> read-back passes (verifier) -> :class:`ProbeReport`.
Faults and the leader/ISR monitor run beside the producer and write to the
shared event log. Whatever happens (Ctrl-C included), faults are healed, the
probe topic is deleted unless kept, and what was sent is still verified.

Read-back pass 1 runs *while* the producer writes (the "live" pass: the send loop
takes a batch of what was read now and then, on the same thread; in a long run a reader
process of its own fetches and decodes on the other core), then drains each
partition past its last acknowledged offset once the producer is done: the run takes
about as long as the slower of writing and reading, not their sum. A live reader sees
the log as it grows, so it is kept only when nothing can have rewritten the log behind
it: no fault injected, no leader change seen by the monitor, no record of the run
deleted (every partition's log start offset still at or below where the run began), and
its reader process, if it had one, still there at the end.
Otherwise it is set aside and pass 1 reads the finished log again, as a reader after
the run would. A second, fresh pass follows whenever pass 1 left an acknowledged
message unseen, to tell a consumer miss from real log loss.
"""

from __future__ import annotations

import gc
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace

from kaudit.cluster.client import AdminSession
from kaudit.cluster.topics import (
    TopicSpec,
    create_probe_topic,
    delete_probe_topic,
    partition_roles,
    topic_partitions,
)
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import InputError
from kaudit.probe.causes import LossCauses
from kaudit.probe.evidence import LossEvidence
from kaudit.probe.faults.injector import FaultInjector, ProducerRestart, Targets, start_injector
from kaudit.probe.faults.lab import LabControl, lab_for
from kaudit.probe.latency import Timeline
from kaudit.probe.ledger import Ledger
from kaudit.probe.model import ProbeReport, ProbeSettings
from kaudit.probe.monitor import EventLog, LeaderMonitor
from kaudit.probe.produce import ProgressDisplay, SendTarget, SendTracker, Sent, produce_messages
from kaudit.probe.readback import (
    ConsumerPass,
    LatencyTail,
    ReaderProcessPass,
    ReadPass,
    live_pass_doubt,
    read_back,
    read_ends,
)
from kaudit.probe.verifier import Verification, Verifier

DEFAULT_COUNT = 10_000
SEPARATE_READER_FROM = 200_000
"""Runs of at least this many messages (or of a duration at least
:data:`SEPARATE_READER_SECONDS`) read back live in a process of their own, on the other
core: the send loop then has its thread to itself. A shorter run does not repay the
second interpreter's start-up."""
SEPARATE_READER_SECONDS = 30


def run_probe(conn: ConnectionSettings, settings: ProbeSettings,
              interrupted: threading.Event | None = None,
              display: ProgressDisplay | None = None,
              say: Callable[[str], None] | None = None) -> ProbeReport:
    """Run the probe end to end; see the module docstring. ``display`` shows how far the
    sends are; ``say`` what the read-back is doing once they are done."""
    interrupted = interrupted or threading.Event()
    if settings.count is None and settings.duration is None:
        settings = replace(settings, count=DEFAULT_COUNT)
    lab = lab_for(settings.faults, settings.lab_state_dir)  # none: exit 2 before any topic
    session = AdminSession(conn)
    run_id = uuid.uuid4().bytes
    name = settings.topic or f"kaudit-probe-{run_id.hex()[:12]}"
    run = ProbeRun(conn, settings, session, name, _probe_partitions(session, settings, name),
                   run_id, interrupted, lab)
    run.say = say or (lambda _: None)
    try:
        run.send(display)
        run.verify()
    finally:
        run.clean_up()
    return run.report()


def _long(settings: ProbeSettings) -> bool:
    """Whether the run is long enough for a reader process of its own."""
    return (settings.count or 0) >= SEPARATE_READER_FROM or \
        (settings.duration or 0) >= SEPARATE_READER_SECONDS


def _probe_partitions(session: AdminSession, settings: ProbeSettings, name: str) -> list[int]:
    """The partitions of the topic to probe: an existing one's, or a new one's."""
    partitions = topic_partitions(session, name)
    if settings.existing:
        if partitions is None:
            raise InputError(f"--existing: topic {name} does not exist")
        return partitions
    if partitions is not None:
        raise InputError(f"topic {name} already exists; pass --existing to probe it "
                         "(kaudit never reuses a topic silently)")
    create_probe_topic(session, TopicSpec(name, settings.partitions,
                                          settings.replication_factor,
                                          settings.min_insync_replicas,
                                          settings.unclean_leader_election))
    return list(range(settings.partitions))


class ProbeRun:
    """One probe's state between its steps: send, verify, clean up, report."""

    def __init__(self, conn: ConnectionSettings, settings: ProbeSettings,
                 session: AdminSession, topic: str, partitions: list[int], run_id: bytes,
                 interrupted: threading.Event, lab: LabControl | None) -> None:
        self.conn, self.settings, self.session = conn, settings, session
        self.lab = lab
        """The lab the faults signal, found before the topic was made."""
        self.topic, self.partitions, self.run_id = topic, partitions, run_id
        self.interrupted = interrupted
        self.started = time.monotonic()
        self.log = EventLog(self.started)
        self.notes: list[str] = []
        self.ledger = Ledger(max(partitions) + 1)
        self.deleted = False
        self.live: ReadPass | None = None
        self.live_kept = False
        self.drain_complete = True
        self.tail: LatencyTail | None = None
        self.sent: Sent | None = None
        self.verification: Verification | None = None
        self.read_then_lost: int | None = None
        self.loss_causes: LossCauses | None = None
        self.read_then_lost_causes: LossCauses | None = None
        # The admin client asks again while leadership is still moving after the previous
        # trial's fault; a consumer's watermark query gave up on NOT_LEADER_OR_FOLLOWER.
        self.start_offsets = session.list_offsets(topic, partitions, "latest")
        self.monitor = LeaderMonitor(session, topic, self.log)
        self.monitor.sample()
        self.monitor.start()
        self.verifier = Verifier(self.ledger, run_id)
        self.say: Callable[[str], None] = lambda _: None

    def send(self, display: ProgressDisplay | None) -> None:
        """Send every message, with the faults injected and healed meanwhile, the live
        read-back pass (when no fault can rewrite the log behind it) and the latency tail
        beside it."""
        s = self.settings
        tracker = SendTracker(s, display)
        restart = ProducerRestart() \
            if any(f.registered.target == "producer" for f in s.faults) else None
        injector = self._injector(tracker, restart) if s.faults else None
        if s.e2e_latency:
            self.tail = LatencyTail(self.conn, self.topic, self.partitions, self.start_offsets,
                                    self.run_id)
            self.tail.start()
        if not s.faults:  # a fault sets the live pass aside anyway: spare the load
            live = ReaderProcessPass if _long(s) else ConsumerPass
            self.live = live(self.conn, s, self.topic, self.partitions, self.start_offsets,
                             self.verifier, self.run_id, 1)
        target = SendTarget(self.topic, self.partitions, self.run_id, self.ledger, self.log,
                            self.notes)
        # The send loop and the live pass allocate a few objects per message and keep
        # none: the cyclic collector would only rescan the heap, again and again.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            self.sent = produce_messages(self.conn, s, target, tracker, self.interrupted,
                                         self.live.step if self.live is not None else None,
                                         restart)
        finally:
            if gc_was_enabled:
                gc.enable()
            if injector:
                self.notes.extend(injector.finish(s.fault_duration + 150))
        self.ledger.finish()
        self.monitor.stop()

    def _injector(self, tracker: SendTracker, restart: ProducerRestart | None
                  ) -> FaultInjector:
        s = self.settings
        # A fault waits for the first acknowledged write to partition 0 too: before it, a
        # run measures the producer's start-up (a producer id, metadata), not the fault,
        # and a schedule would meet writes that had not begun.
        first = 0 if 0 in self.partitions else self.partitions[0]

        def trigger() -> bool:
            return tracker.trigger() and self.ledger.partition_counts(first)["acked"] > 0

        targets = Targets(lambda: partition_roles(self.session, self.topic), restart=restart,
                          transactional=s.transactional,
                          committed=lambda: self.session.list_offsets(self.topic, [0],
                                                                      "latest")[0])
        injector = start_injector(s, self.lab, trigger, self.log, targets, self.session,
                                  self.conn.timeout)
        tracker.hold = injector.under_way
        return injector

    def verify(self) -> None:
        """Read every partition back past its last acknowledged offset, in one or two
        passes (see the module docstring), and place each loss and duplicate in time."""
        acked = sum(self.ledger.partition_counts(p)["acked"] for p in self.partitions)
        self.say(f"verifying: reading {acked:,} acknowledged message(s) back from "
                 f"{len(self.partitions)} partition(s)")
        ends = read_ends(self.session, self.settings, self.topic, self.partitions,
                         self.start_offsets, self.ledger)
        if self.live is not None:
            self._judge_live_pass(ends)
        for pass_no in (1, 2):
            if pass_no == 1 and self.live_kept:
                complete = self.drain_complete
            else:
                if pass_no == 2:
                    self.say("verifying: a second, fresh read-back pass, to tell a message a "
                             "reader missed from one the log lost")
                complete = read_back(self.conn, self.settings, self.topic, self.partitions,
                                     self.start_offsets, ends, self.verifier, self.run_id,
                                     pass_no)
                self.verifier.pass_done(pass_no)
                self.drain_complete = self.drain_complete and complete
            # The second pass only tells a consumer miss from log loss: with no
            # acknowledged message missing after the first, there is nothing to tell.
            if pass_no == 1 and complete and self.verifier.result().lost == 0:
                break
        if self.tail:
            self.tail.stop()
        self.verification = self.verifier.result()
        shown = self.tail.read_then_lost_sequences(self.verifier) if self.tail else None
        self.read_then_lost = None if shown is None else sum(map(len, shown.values()))
        if self.verification.lost:
            self._loss_causes(shown)
        assert self.sent is not None
        _place_outcomes(self.sent.timeline, self.verifier, self.partitions)

    def _loss_causes(self, shown: dict[int, list[int]] | None) -> None:
        """Each lost record's cause (:mod:`kaudit.probe.causes`), and that of each record a
        reader was shown before it was lost, with the evidence read now
        (:mod:`kaudit.probe.evidence`)."""
        lost = {p: sorted(self.verifier.lost_sequences(p)) for p in self.partitions}
        evidence = LossEvidence(self.session, self.topic, self.ledger, lost, self.run_id,
                                self.notes)
        seen = self.tail.epochs if self.tail else None
        self.loss_causes = evidence.causes(lost, seen)
        if shown and any(shown.values()):
            self.read_then_lost_causes = evidence.causes(shown, seen)

    def _judge_live_pass(self, ends: dict[int, int]) -> None:
        """Keep the live pass as pass 1 when nothing can have rewritten the log behind it;
        else set it aside for a fresh pass 1."""
        assert self.live is not None
        complete = self.live.drain(ends)
        doubt = self.live.failure or live_pass_doubt(self.session, self.topic,
                                                     self.partitions, self.log,
                                                     self.start_offsets)
        self.live.close()
        self.live = None
        if doubt is None:
            self.live_kept = True
            self.verifier.pass_done(1)
            self.drain_complete = complete
        else:
            self.notes.append(f"the live read-back pass was set aside ({doubt}); "
                              "pass 1 read the topic again after the run")
            self.verifier = Verifier(self.ledger, self.run_id)

    def clean_up(self) -> None:
        """Whatever happened: readers closed, the monitor stopped, the topic deleted unless
        kept or existing."""
        if self.live is not None:
            self.live.close()
        self.monitor.stop()
        if not self.settings.existing and not self.settings.keep:
            self.deleted = delete_probe_topic(self.session, self.topic)
            if not self.deleted:
                self.notes.append(f"could not delete probe topic {self.topic}; delete it by "
                                  "hand")

    def report(self) -> ProbeReport:
        assert self.sent is not None and self.verification is not None
        sent = self.sent
        return ProbeReport(
            run_id=self.run_id.hex(), topic=self.topic, settings=self.settings,
            verification=self.verification, ledger=self.ledger, ack_latency=sent.ack_latency,
            e2e_latency=self.tail.histogram if self.tail else None, timeline=sent.timeline,
            events=self.log.events(), produce_seconds=sent.produce_seconds,
            held_seconds=sent.held_seconds,
            total_seconds=time.monotonic() - self.started, send_errors=sent.errors,
            drain_complete=self.drain_complete, interrupted=self.interrupted.is_set(),
            topic_deleted=self.deleted, notes=self.notes, live_verification=self.live_kept,
            read_then_lost=self.read_then_lost, loss_causes=self.loss_causes,
            read_then_lost_causes=self.read_then_lost_causes)


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
