"""Run one consumer probe: fill an input topic, run a group of worker processes over it
with a commit strategy while crashing and restarting them (and, on the lab, killing
brokers), then count how often each input record was processed.

The data flows one way: settings -> input topic (its pinned ``[start, end)`` per
partition) -> workers (journals; the output topic or the sink) -> processings ->
:func:`~kaudit.probe.consume.verify.verify` -> :class:`ConsumeReport`. The run ends when
every input record is committed (by the group, or in the sink), when it stops making
progress for :data:`STALL_S`, or on Ctrl-C; whatever happens, the workers are stopped,
brokers restarted, and the topics deleted unless kept.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from kaudit.cluster.client import AdminSession
from kaudit.cluster.topics import TopicSpec, create_probe_topic, delete_probe_topic, partition_roles
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import InputError
from kaudit.probe.consume.feed import Feed
from kaudit.probe.consume.fleet import Fleet
from kaudit.probe.consume.group import check_session_timeout, coordinator, delete_group
from kaudit.probe.consume.journal import journal_files, read_journal
from kaudit.probe.consume.model import ConsumeEvent, ConsumeReport, ConsumeSettings
from kaudit.probe.consume.output import fence_transactions, read_output
from kaudit.probe.consume.sink import (
    SinkDatabase,
    SinkTarget,
    create_sink,
    drop_sink,
    parse_sink,
    read_processings,
)
from kaudit.probe.consume.verify import (
    ConsumeVerification,
    Incarnation,
    Processing,
    reached,
    verify,
)
from kaudit.probe.consume.watch import ASK_EVERY_S, CommittedOffsets
from kaudit.probe.faults.injector import FaultInjector, Targets, start_injector
from kaudit.probe.faults.lab import LabControl, lab_for
from kaudit.probe.faults.registry import fault_at_reached

STALL_S = 60.0
"""A run whose committed offsets do not move for this long (plus any fault's duration)
is stopped as unfinished."""
TICK_S = 0.1


class Run:
    """The state of one run between :func:`run_consume`'s steps."""

    def __init__(self, conn: ConnectionSettings, settings: ConsumeSettings,
                 lab: LabControl | None) -> None:
        self.conn, self.settings = conn, settings
        self.lab = lab
        """The lab the faults signal, found before any topic was made."""
        self.session = AdminSession(conn)
        self.run_id = uuid.uuid4().hex[:12]
        self.topic = f"kaudit-consume-{self.run_id}"
        self.output = f"{self.topic}-out" if settings.strategy == "transactional" else None
        self.group = self.topic
        self.started = time.monotonic()
        self.started_ns = time.time_ns()
        self.events: list[ConsumeEvent] = []
        self.lock = threading.Lock()
        self.notes: list[str] = []
        self.dir = Path(tempfile.mkdtemp(prefix="kaudit-consume-"))
        """The workers' journals (and the default sink)."""
        self.sink: SinkTarget | None = None
        self.sink_created = False
        self.deleted = False
        self.injector: FaultInjector | None = None

    def event(self, kind: str, detail: str) -> None:
        with self.lock:
            self.events.append(ConsumeEvent(round(time.monotonic() - self.started, 3),
                                            kind, detail))

    def add(self, kind: str, detail: str, partition: int | None = None) -> None:
        """The fault injector's log: its events are the run's."""
        self.event(kind, detail)

    def topics(self) -> list[str]:
        return [name for name in (self.topic, self.output) if name]

    def fresh_session(self) -> AdminSession:
        """A new admin client that still knows the run's faults."""
        session = AdminSession(self.conn)
        session.excused_until = self.session.excused_until
        return session


def run_consume(conn: ConnectionSettings, settings: ConsumeSettings,
                interrupted: threading.Event | None = None) -> ConsumeReport:
    """Run end to end; see the module docstring."""
    interrupted = interrupted or threading.Event()
    lab = lab_for(settings.faults, settings.lab_state_dir)  # none: exit 2 before any topic
    run = Run(conn, settings, lab)
    try:
        _prepare(run)
    except BaseException:
        shutil.rmtree(run.dir, ignore_errors=True)
        raise
    # The group can be deleted only once its static members have timed out: that wait
    # runs beside the verification.
    leaving = threading.Thread(target=delete_group, daemon=True, args=(
        run.session, run.group, settings.session_timeout_ms))
    try:
        feed = Feed(conn, run.session, run.topic, list(range(settings.partitions)),
                    settings.count, settings.rate, lambda detail: run.event("fill", detail))
        if not settings.rate:
            feed.write()  # the whole input before the workers start
            _inputs(run, feed)
        fill_s = time.monotonic() - run.started
        if run.sink is not None:
            create_sink(run.sink, feed.starts)
            run.sink_created = True
        fleet = Fleet(_worker_config(run), run.dir, run.event)
        consume_started = time.monotonic()
        try:
            finished = _drive(run, fleet, feed, interrupted)
        finally:
            feed.stop.set()
            feed.join()
            if not settings.keep:
                leaving.start()
        consume_s = time.monotonic() - consume_started
        verification = _count(run, fleet, feed, interrupted)
    finally:
        _clean_up(run, leaving)
    return ConsumeReport(
        run_id=run.run_id, topic=run.topic, output_topic=run.output, group=run.group,
        settings=settings, verification=verification, events=run.events,
        started_ns=run.started_ns, fill_seconds=fill_s, consume_seconds=consume_s,
        total_seconds=time.monotonic() - run.started, restarts=fleet.restarts,
        finished=finished, interrupted=interrupted.is_set(), topics_deleted=run.deleted,
        sink=run.sink.shown() if run.sink is not None else None, notes=run.notes)


def _prepare(run: Run) -> None:
    """Check what the brokers and the sink will refuse, then create the topics."""
    s = run.settings
    check_session_timeout(run.session, s.session_timeout_ms)
    if s.strategy == "sink-offsets":
        run.sink = parse_sink(s.sink or f"sqlite:{run.dir / 'sink.sqlite'}", run.run_id)
        SinkDatabase(run.sink).close()  # an unreachable sink is exit 3 before anything else
    for name in run.topics():
        create_probe_topic(run.session, TopicSpec(name, s.partitions, s.replication_factor,
                                                  s.min_insync_replicas, None))


def _count(run: Run, fleet: Fleet, feed: Feed, interrupted: threading.Event
           ) -> ConsumeVerification:
    """How often each input record was processed, from the journals and the output (or the
    sink); an interrupted run counts only the records some worker had polled."""
    inputs = _inputs(run, feed)
    if run.output is not None:
        fence_transactions(run.session, run.group, sorted(fleet.incarnation), run.notes)
    incarnations = _incarnations(run.dir, fleet)
    if interrupted.is_set():
        whole, inputs = inputs, reached(inputs, incarnations)
        not_reached = sum(e - s for s, e in whole.values()) - sum(
            e - s for s, e in inputs.values())
        if not_reached:
            run.notes.append(f"interrupted: {not_reached} input record(s) no worker had "
                             "polled yet are left out of the count")
    processings = _processings(run, incarnations, feed.partitions)
    return verify(inputs, processings, incarnations)


def _clean_up(run: Run, leaving: threading.Thread) -> None:
    """Topics, group, sink tables and journals deleted, unless kept (then said where)."""
    if run.settings.keep:
        sink = run.sink
        kept = (f"; the sink's tables {sink.results_table} and {sink.offsets_table} in "
                f"{sink.shown()}" if sink is not None else "")
        run.notes.append(f"kept: topics and the group {run.group}; journals in "
                         f"{run.dir}{kept}")
        return
    run.deleted = all([delete_probe_topic(run.session, name) for name in run.topics()])
    if run.sink is not None and run.sink_created:
        drop_sink(run.sink)
    if leaving.is_alive():
        leaving.join()
    shutil.rmtree(run.dir, ignore_errors=True)


def _inputs(run: Run, feed: Feed) -> dict[int, tuple[int, int]]:
    """The input's ``[start, end)`` per partition once the feed is over; a feed that could
    not write everything is an error."""
    inputs = feed.inputs()
    if feed.error is not None or inputs is None:
        raise InputError(feed.error or f"the input topic {run.topic} was not written")
    return inputs


def _worker_config(run: Run) -> dict[str, Any]:
    s = run.settings
    return {"bootstrap": run.conn.bootstrap_servers, "properties": run.conn.properties,
            "timeout": run.conn.timeout, "topic": run.topic, "output_topic": run.output,
            "group": run.group, "strategy": s.strategy, "batch": s.batch,
            "process_ms": s.process_ms, "auto_commit_ms": s.auto_commit_ms,
            "static_membership": s.static_membership, "run_dir": str(run.dir),
            "sink": run.sink.config() if run.sink else None,
            "session_timeout_ms": s.session_timeout_ms,
            "transaction_timeout_ms": s.transaction_timeout_ms}


def _drive(run: Run, fleet: Fleet, feed: Feed, interrupted: threading.Event) -> bool:
    """Start the workers (and a paced feed) and run the schedule until every input record
    is committed."""
    s = run.settings
    committed = CommittedOffsets(run.conn, run.topic, run.group, run.sink, feed.partitions)
    for w in range(s.workers):
        fleet.start(w)
    run.event("start", f"{s.workers} worker(s), --commit {s.strategy}")
    if s.rate:
        feed.start()
    schedule = _Schedule(run, fleet, committed, feed)
    try:
        while not interrupted.is_set():
            fleet.reap(restart=True)
            if schedule.over():
                break
            schedule.crash_a_worker()
            schedule.join_or_leave()
            time.sleep(TICK_S)
    finally:
        killed = fleet.stop_all()
        if killed:
            run.notes.append(f"worker(s) {', '.join(map(str, killed))} did not stop within "
                             "30 s of SIGTERM and were killed")
        if run.injector is not None:
            run.notes.extend(run.injector.finish(None))  # healed before anything is read back
        committed.close()
    return schedule.finished


class _Schedule:
    """What the runner does to the group while it consumes: crash a worker every
    ``--crash-worker``, have an extra member join and leave every ``--rebalance``, inject
    the broker faults at ``--fault-at``; and when the run is over."""

    def __init__(self, run: Run, fleet: Fleet, committed: CommittedOffsets,
                 feed: Feed) -> None:
        s = run.settings
        self.run, self.fleet, self.committed, self.feed = run, fleet, committed, feed
        self.rng = random.Random(s.seed)
        self.start = time.monotonic()
        self.next_crash = self.start + s.crash_every if s.crash_every else None
        self.next_rebalance = self.start + s.rebalance_every if s.rebalance_every else None
        self.extra_running = False
        self.last_change = self.start
        self.last_seen: dict[int, int] | None = None
        self.next_check = 0.0
        self.share_done = 0.0
        self.finished = False
        if s.faults:
            run.injector = self._injector()

    def _injector(self) -> FaultInjector:
        run, s = self.run, self.run.settings
        targets = Targets(lambda: partition_roles(run.session, run.topic),
                          coordinator=lambda: coordinator(run.session, run.group))
        return start_injector(
            s, run.lab, lambda: fault_at_reached(s.fault_at, self.share_done,
                                                 time.monotonic() - self.start),
            run, targets, run.session, run.conn.timeout)

    def over(self) -> bool:
        """Whether every input record is committed (and the faults healed), or the run
        stalled, or the feed failed; asked every :data:`ASK_EVERY_S`."""
        now = time.monotonic()
        if now < self.next_check:
            return False
        self.next_check = now + ASK_EVERY_S
        feed, s = self.feed, self.run.settings
        seen = self.committed.latest()
        if seen is not None and seen != self.last_seen:
            self.last_seen, self.last_change = seen, now
        inputs, total = feed.inputs(), feed.written() or 1
        done = sum(max(0, min(seen.get(p, 0), inputs[p][1] if inputs else total)
                       - feed.starts[p]) for p in feed.partitions) if seen else 0
        self.share_done = done / total
        if feed.error is not None:
            return True  # reported as an error once the workers are stopped
        injector = self.run.injector
        if inputs is not None and done >= total and (injector is None
                                                     or not injector.under_way()):
            self.finished = True
            return True
        stall = STALL_S + (s.fault_duration if s.faults else 0)
        if now - self.last_change > stall:
            self.run.notes.append(f"stopped: no progress for {stall:g} s "
                                  f"({done} of {total} records committed)")
            return True
        return False

    def crash_a_worker(self) -> None:
        s, fleet, now = self.run.settings, self.fleet, time.monotonic()
        if self.next_crash is None or now < self.next_crash or (
                s.max_crashes is not None and fleet.crashes >= s.max_crashes):
            return
        # Only a worker that has its partitions can crash on a batch; until one has, the
        # crash waits (it is not skipped).
        targets = [w for w in fleet.running() if w < s.workers
                   and w not in fleet.pending_crash and fleet.busy(w)]
        if targets:
            self.next_crash = now + (s.crash_every or 0)
            fleet.crash(self.rng.choice(targets), anywhere=s.crash_point == "anywhere")

    def join_or_leave(self) -> None:
        s, fleet, now = self.run.settings, self.fleet, time.monotonic()
        if self.next_rebalance is None or now < self.next_rebalance:
            return
        extra = s.workers
        if self.extra_running:
            # It leaves only once it has had partitions and polled a batch, so each join
            # and leave really moves partitions (on any load).
            if fleet.busy(extra):
                fleet.stop_one(extra)
                self.run.event("rebalance", f"worker {extra} leaves the group")
                self.extra_running, self.next_rebalance = False, now + (s.rebalance_every or 0)
        else:
            # A dynamic member: a static one would leave no trace of its leave (no
            # LeaveGroup) and rejoin under the same id without a rebalance.
            fleet.start(extra, dynamic=True)
            self.run.event("rebalance", f"worker {extra} joins the group")
            self.extra_running, self.next_rebalance = True, now + (s.rebalance_every or 0)


def _incarnations(run_dir: Path, fleet: Fleet) -> list[Incarnation]:
    out = []
    for w, i, path in journal_files(run_dir):
        killed = fleet.ended.get((w, i))
        out.append(Incarnation(w, i, tuple(read_journal(path)),
                               killed[0] if killed else None, killed[1] if killed else None))
    return out


def _processings(run: Run, incarnations: list[Incarnation], partitions: list[int]
                 ) -> list[Processing]:
    """Every processing, in the order the sink holds them."""
    strategy = run.settings.strategy
    if run.sink is not None:
        return read_processings(run.sink)
    if strategy == "transactional":
        assert run.output is not None
        return read_output(run.fresh_session(), run.output, run.group, partitions, run.notes)
    # The ledger strategies: the journals' P lines are the ledger, ordered by time.
    lines = sorted((e.t_ns, x.worker, x.incarnation, e) for x in incarnations
                   for e in x.entries if e.kind == "P")
    return [Processing(e.partition or 0, o, w, i, t) for t, w, i, e in lines for o in e.offsets]
