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

from kaudit.cluster import client
from kaudit.cluster.client import AdminSession, new_consumer, new_producer
from kaudit.cluster.topics import TopicSpec, create_probe_topic, delete_probe_topic, partition_roles
from kaudit.connect.settings import ConnectionSettings
from kaudit.errors import InputError
from kaudit.probe.consume.feed import Feed
from kaudit.probe.consume.fleet import Fleet
from kaudit.probe.consume.journal import journal_files, read_journal
from kaudit.probe.consume.model import ConsumeEvent, ConsumeReport, ConsumeSettings
from kaudit.probe.consume.sink import (
    SinkDatabase,
    SinkTarget,
    create_sink,
    drop_sink,
    parse_sink,
    read_processings,
    stored_offsets,
)
from kaudit.probe.consume.verify import Incarnation, Processing, reached, verify

STALL_S = 60.0
"""A run whose committed offsets do not move for this long (plus any fault's duration)
is stopped as unfinished."""
TICK_S = 0.1
PROGRESS_EVERY_S = 0.5
"""How often the group's (or the sink's) committed offsets are asked for."""


class Run:
    """The state of one run between :func:`run_consume`'s steps."""

    def __init__(self, conn: ConnectionSettings, settings: ConsumeSettings) -> None:
        self.conn, self.settings = conn, settings
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

    def event(self, kind: str, detail: str) -> None:
        with self.lock:
            self.events.append(ConsumeEvent(round(time.monotonic() - self.started, 3),
                                            kind, detail))


def _check_session_timeout(session: AdminSession, session_timeout_ms: int) -> None:
    """Refuse a session timeout the brokers would refuse: the workers' JoinGroup would fail
    with INVALID_SESSION_TIMEOUT, over and over, and the group never consume."""
    names = ("group.min.session.timeout.ms", "group.max.session.timeout.ms")
    values = session.broker_values(names)
    if len(values) == 2 and not int(values[names[0]]) <= session_timeout_ms <= int(
            values[names[1]]):
        raise InputError(f"--session-timeout-ms {session_timeout_ms} is outside what the "
                         f"brokers allow ({names[0]} {values[names[0]]} to {names[1]} "
                         f"{values[names[1]]})")


def run_consume(conn: ConnectionSettings, settings: ConsumeSettings,
                interrupted: threading.Event | None = None) -> ConsumeReport:
    """Run end to end; see the module docstring."""
    interrupted = interrupted or threading.Event()
    lab = None
    if settings.faults:
        from kaudit.lab.state import default_state_dir
        from kaudit.probe.faults import LabControl

        lab = LabControl((settings.lab_state_dir or default_state_dir()).expanduser())
    run = Run(conn, settings)
    partitions = list(range(settings.partitions))
    run_dir = Path(tempfile.mkdtemp(prefix="kaudit-consume-"))
    sink = None
    try:
        _check_session_timeout(run.session, settings.session_timeout_ms)
        if settings.strategy == "sink-offsets":
            sink = parse_sink(settings.sink or f"sqlite:{run_dir / 'sink.sqlite'}", run.run_id)
            SinkDatabase(sink).close()  # an unreachable sink is exit 3 before anything else
        for name in filter(None, (run.topic, run.output)):
            create_probe_topic(run.session, TopicSpec(name, settings.partitions,
                                                      settings.replication_factor,
                                                      settings.min_insync_replicas, None))
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    deleted, sink_created = False, False
    # The group can be deleted only once its static members have timed out: that wait
    # runs beside the verification.
    leaving = threading.Thread(target=_delete_group, args=(run,), daemon=True)
    try:
        feed = Feed(conn, run.session, run.topic, partitions, settings.count, settings.rate,
                    lambda detail: run.event("fill", detail))
        if not settings.rate:
            _write_input(run, feed)
        fill_s = time.monotonic() - run.started
        if sink is not None:
            create_sink(sink, feed.starts)
            sink_created = True
        fleet = Fleet(_worker_config(run, run_dir, sink), run_dir, run.event)
        consume_started = time.monotonic()
        try:
            finished = _drive(run, fleet, lab, feed, sink, interrupted)
        finally:
            feed.stop.set()
            feed.join()
            if not settings.keep:
                leaving.start()
        consume_s = time.monotonic() - consume_started
        inputs = _inputs(run, feed)
        if run.output is not None:
            _fence_transactions(run, sorted(fleet.incarnation))
        incarnations = _incarnations(run_dir, fleet)
        if interrupted.is_set():
            whole, inputs = inputs, reached(inputs, incarnations)
            not_reached = sum(e - s for s, e in whole.values()) - sum(
                e - s for s, e in inputs.values())
            if not_reached:
                run.notes.append(f"interrupted: {not_reached} input record(s) no worker had "
                                 "polled yet are left out of the count")
        processings = _processings(run, sink, incarnations, partitions)
        verification = verify(inputs, processings, incarnations)
    finally:
        if not settings.keep:
            deleted = all([delete_probe_topic(run.session, name)
                           for name in filter(None, (run.topic, run.output))])
            if sink is not None and sink_created:
                drop_sink(sink)
            if leaving.is_alive():
                leaving.join()
            shutil.rmtree(run_dir, ignore_errors=True)
        else:
            kept = (f"; the sink's tables {sink.results_table} and {sink.offsets_table} in "
                    f"{sink.shown()}" if sink is not None else "")
            run.notes.append(f"kept: topics and the group {run.group}; journals in "
                             f"{run_dir}{kept}")
    return ConsumeReport(
        run_id=run.run_id, topic=run.topic, output_topic=run.output, group=run.group,
        settings=settings, verification=verification, events=run.events,
        started_ns=run.started_ns, fill_seconds=fill_s, consume_seconds=consume_s,
        total_seconds=time.monotonic() - run.started, restarts=fleet.restarts,
        finished=finished, interrupted=interrupted.is_set(), topics_deleted=deleted,
        sink=sink.shown() if sink is not None else None, notes=run.notes)


def _write_input(run: Run, feed: Feed) -> None:
    """Write the whole input before the workers start."""
    feed.write()
    _inputs(run, feed)


def _inputs(run: Run, feed: Feed) -> dict[int, tuple[int, int]]:
    """The input's ``[start, end)`` per partition once the feed is over; a feed that could
    not write everything is an error."""
    inputs = feed.inputs()
    if feed.error is not None or inputs is None:
        raise InputError(feed.error or f"the input topic {run.topic} was not written")
    return inputs


def _worker_config(run: Run, run_dir: Path, sink: SinkTarget | None) -> dict[str, Any]:
    s = run.settings
    return {"bootstrap": run.conn.bootstrap_servers, "properties": run.conn.properties,
            "timeout": run.conn.timeout, "topic": run.topic, "output_topic": run.output,
            "group": run.group, "strategy": s.strategy, "batch": s.batch,
            "process_ms": s.process_ms, "auto_commit_ms": s.auto_commit_ms,
            "static_membership": s.static_membership, "run_dir": str(run_dir),
            "sink": sink.config() if sink else None, "session_timeout_ms": s.session_timeout_ms,
            "transaction_timeout_ms": s.transaction_timeout_ms}


class _Progress:
    """Where the group (or the sink) has committed each input partition to, asked in the
    background: the query can wait out a moving coordinator for the whole timeout, and the
    runner must go on restarting crashed workers meanwhile."""

    def __init__(self, run: Run, sink: SinkTarget | None, partitions: list[int]) -> None:
        self.run, self.sink, self.partitions = run, sink, partitions
        self.consumer: Any = None
        if sink is None:
            # Never subscribes: it only asks the coordinator for the group's offsets.
            self.consumer = new_consumer(run.conn, None, **{"group.id": run.group,
                                                      "enable.auto.commit": False})
        self._latest: dict[int, int] | None = None
        self._failed: BaseException | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def committed(self) -> dict[int, int] | None:
        """The latest answer (None until the first); what failed the query is raised
        here, in the runner's thread."""
        with self._lock:
            if self._failed is not None:
                raise self._failed
            return self._latest

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                seen = self._ask()
            except Exception as exc:  # e.g. the sink's database went away
                with self._lock:
                    self._failed = exc
                return
            if seen is not None:
                with self._lock:
                    self._latest = seen
            self._stop.wait(PROGRESS_EVERY_S)

    def _ask(self) -> dict[int, int] | None:
        if self.sink is not None:
            return stored_offsets(self.sink)
        try:
            found = self.consumer.committed(
                [client.TopicPartition(self.run.topic, p) for p in self.partitions],
                timeout=self.run.conn.timeout)
        except client.KafkaException:
            return None  # the coordinator is moving (a fault): ask again later
        return {tp.partition: tp.offset for tp in found if tp.error is None}

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        if self.consumer is not None:
            self.consumer.close()


def _drive(run: Run, fleet: Fleet, lab: Any, feed: Feed, sink: SinkTarget | None,
           interrupted: threading.Event) -> bool:
    """Start the workers (and a paced feed) and run the schedule until every input record
    is committed."""
    s = run.settings
    rng = random.Random(s.seed)
    progress = _Progress(run, sink, feed.partitions)
    for w in range(s.workers):
        fleet.start(w)
    run.event("start", f"{s.workers} worker(s), --commit {s.strategy}")
    if s.rate:
        feed.start()
    start = time.monotonic()
    next_crash = start + s.crash_every if s.crash_every else None
    next_rebalance = start + s.rebalance_every if s.rebalance_every else None
    extra_running = False
    faults = _Faults(run, lab) if s.faults else None
    last_change, last_seen, finished = time.monotonic(), None, False
    next_check = 0.0
    try:
        while not interrupted.is_set():
            fleet.reap(restart=True)
            now = time.monotonic()
            if next_check <= now:
                next_check = now + PROGRESS_EVERY_S
                seen = progress.committed()
                if seen is not None and seen != last_seen:
                    last_seen, last_change = seen, now
                inputs, total = feed.inputs(), feed.written() or 1
                done = sum(max(0, min(seen.get(p, 0), inputs[p][1] if inputs else total)
                               - feed.starts[p]) for p in feed.partitions) if seen else 0
                if feed.error is not None:
                    break  # reported as an error once the workers are stopped
                if faults is not None:
                    faults.maybe_start(done / total, now - start)
                if inputs is not None and done >= total and (faults is None or faults.over()):
                    finished = True
                    break
                stall = STALL_S + (s.fault_duration if s.faults else 0)
                if now - last_change > stall:
                    run.notes.append(f"stopped: no progress for {stall:g} s "
                                     f"({done} of {total} records committed)")
                    break
            if next_crash is not None and now >= next_crash and (
                    s.max_crashes is None or fleet.crashes < s.max_crashes):
                # Only a worker that has its partitions can crash on a batch; until one
                # has, the crash waits (it is not skipped).
                targets = [w for w in fleet.running() if w < s.workers
                           and w not in fleet.pending_crash and fleet.busy(w)]
                if targets:
                    next_crash = now + (s.crash_every or 0)
                    fleet.crash(rng.choice(targets), anywhere=s.crash_point == "anywhere")
            if next_rebalance is not None and now >= next_rebalance:
                if extra_running:
                    # It leaves only once it has had partitions and polled a batch, so
                    # each join and leave really moves partitions (on any load).
                    if fleet.busy(s.workers):
                        fleet.stop_one(s.workers)
                        run.event("rebalance", f"worker {s.workers} leaves the group")
                        extra_running, next_rebalance = False, now + (s.rebalance_every or 0)
                else:
                    # A dynamic member: a static one would leave no trace of its leave
                    # (no LeaveGroup) and rejoin under the same id without a rebalance.
                    fleet.start(s.workers, dynamic=True)
                    run.event("rebalance", f"worker {s.workers} joins the group")
                    extra_running, next_rebalance = True, now + (s.rebalance_every or 0)
            time.sleep(TICK_S)
    finally:
        killed = fleet.stop_all()
        if killed:
            run.notes.append(f"worker(s) {', '.join(map(str, killed))} did not stop within "
                             "30 s of SIGTERM and were killed")
        if faults is not None:
            faults.heal()
        progress.close()
    return finished


COORDINATOR_WAIT_S = 30.0
"""How long ``kill-coordinator`` keeps asking for the group's coordinator: right after a
worker's crash or a rebalance the lookup can time out, or find the group's state still
loading."""


class _Faults:
    """The broker faults of the run, started once, healed after --fault-duration."""

    def __init__(self, run: Run, lab: Any) -> None:
        self.run, self.lab = run, lab
        self.thread: threading.Thread | None = None
        self.down: list[int] = []
        self.cancel = threading.Event()

    def maybe_start(self, share: float, seconds: float) -> None:
        kind, at = self.run.settings.fault_at
        if self.thread is None and (share >= at if kind == "progress" else seconds >= at):
            self.thread = threading.Thread(target=self._inject, daemon=True)
            self.thread.start()

    def over(self) -> bool:
        return self.thread is None or not self.thread.is_alive()

    def _inject(self) -> None:
        for fault in self.run.settings.faults:
            if self.cancel.is_set():
                return
            try:
                broker = self._target(fault)
                self.lab.kill(broker, "KILL")
            except Exception as exc:  # said in the report: a run without its fault must
                # not look like one that had it (this thread's traceback reaches no one)
                self.run.notes.append(f"fault {fault} failed: {exc}")
                self.run.event("note", f"fault {fault} failed")
                continue
            self.down.append(broker)
            self.run.event("fault", f"{fault}: broker {broker} SIGKILLed")
        self.cancel.wait(self.run.settings.fault_duration)
        self._restart()

    def _target(self, fault: str) -> int:
        if fault == "kill-leader":
            return partition_roles(self.run.session, self.run.topic, 0)[0]
        deadline = time.monotonic() + COORDINATOR_WAIT_S
        while True:
            try:
                groups = self.run.session.admin.describe_consumer_groups([self.run.group])
                return int(self.run.session.wait(groups[self.run.group]).coordinator.id)
            except Exception:
                if time.monotonic() >= deadline or self.cancel.is_set():
                    raise
            self.cancel.wait(0.5)

    def heal(self) -> None:
        """Cut the fault short (the run is over) and restart what it killed, before
        anything is read back."""
        self.cancel.set()
        if self.thread is not None:
            self.thread.join()
        self._restart()

    def _restart(self) -> None:
        while self.down:
            broker = self.down.pop()
            try:
                self.lab.start(broker)
            except Exception as exc:  # said in the report, as a failed fault is
                self.run.notes.append(f"heal broker {broker} failed: {exc}")
                self.run.event("note", f"heal broker {broker} failed")
                continue
            self.run.event("heal", f"broker {broker} restarted")


def _incarnations(run_dir: Path, fleet: Fleet) -> list[Incarnation]:
    out = []
    for w, i, path in journal_files(run_dir):
        killed = fleet.ended.get((w, i))
        out.append(Incarnation(w, i, tuple(read_journal(path)),
                               killed[0] if killed else None, killed[1] if killed else None))
    return out


def _processings(run: Run, sink: SinkTarget | None, incarnations: list[Incarnation],
                 partitions: list[int]) -> list[Processing]:
    """Every processing, in the order the sink holds them."""
    strategy = run.settings.strategy
    if sink is not None:
        return read_processings(sink)
    if strategy == "transactional":
        assert run.output is not None
        return _read_output(run, partitions)
    # The ledger strategies: the journals' P lines are the ledger, ordered by time.
    lines = sorted((e.t_ns, x.worker, x.incarnation, e) for x in incarnations
                   for e in x.entries if e.kind == "P")
    return [Processing(e.partition or 0, o, w, i, t) for t, w, i, e in lines for o in e.offsets]


def _fence_transactions(run: Run, workers: list[int]) -> None:
    """Abort what a worker killed at the end left open: a new session with its
    transactional id fences it (as its restart would have), so the output's last stable
    offset is not held back until transaction.timeout.ms."""
    for w in workers:
        producer = new_producer(run.conn, None, **{
            "transactional.id": f"{run.group}-w{w}", "enable.idempotence": True})
        try:
            producer.init_transactions(run.conn.timeout * 3)
        except client.KafkaException as exc:
            run.notes.append(f"could not fence worker {w}'s transactions: "
                             f"{client.kafka_message(exc)}")


def _read_output(run: Run, partitions: list[int]) -> list[Processing]:
    """The output topic as a read_committed reader sees it: committed transactions only."""
    assert run.output is not None
    # A fresh admin client: the run's own cached the leader epochs from before a broker
    # was restarted, and librdkafka's ListOffsets sends them, FENCED_LEADER_EPOCH forever.
    ends = AdminSession(run.conn).list_offsets(run.output, partitions, "latest",
                                               read_committed=True)
    consumer = new_consumer(run.conn, None, **{
        "group.id": f"{run.group}-verify", "enable.auto.commit": False,
        "enable.partition.eof": True, "isolation.level": "read_committed"})
    consumer.assign([client.TopicPartition(run.output, p, 0) for p in partitions])
    pending = {p for p in partitions if ends[p] > 0}
    out: list[Processing] = []
    deadline = time.monotonic() + max(60.0, run.conn.timeout * 6)
    try:
        while pending and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=5000, timeout=0.5):
                err, p = msg.error(), msg.partition()
                if err is not None:
                    if err.code() == client.KafkaError._PARTITION_EOF and msg.offset() >= ends[p]:
                        pending.discard(p)
                    continue
                ip, io, w, i = (int(x) for x in msg.value().split())
                out.append(Processing(ip, io, w, i, msg.timestamp()[1] * 1_000_000))
                if msg.offset() + 1 >= ends[p]:
                    pending.discard(p)
    finally:
        consumer.close()
    if pending:
        run.notes.append(f"output partitions {sorted(pending)} could not be read to their end")
    return out


def _delete_group(run: Run) -> None:
    """Delete the run's consumer group once its static members have timed out."""
    deadline = time.monotonic() + run.settings.session_timeout_ms / 1000 + 10
    while time.monotonic() < deadline:
        try:
            run.session.wait(run.session.admin.delete_consumer_groups([run.group])[run.group])
            return
        except Exception:  # NON_EMPTY_GROUP until the members time out; best effort
            time.sleep(1.0)
