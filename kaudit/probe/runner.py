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
import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaudit.cluster import client
from kaudit.cluster.client import (
    AdminSession,
    ErrorCollector,
    kafka_message,
    new_consumer,
    new_producer,
)
from kaudit.cluster.topics import (
    TopicSpec,
    create_probe_topic,
    delete_probe_topic,
    partition_roles,
    topic_partitions,
)
from kaudit.connect.settings import ConnectionSettings
from kaudit.errors import InputError
from kaudit.probe.faults import FaultInjector, FaultSpec, LabControl
from kaudit.probe.latency import LatencyHistogram, Timeline, bucket_of_us
from kaudit.probe.ledger import Ledger, SendOutcome, classify_error
from kaudit.probe.monitor import EventLog, LeaderMonitor, ProbeEvent
from kaudit.probe.payload import (
    HEADER_SIZE,
    MAGIC,
    PROBE_HEADER,
    RUN_AND_SEQUENCE,
    SEQUENCE_AND_TIME,
    SEQUENCE_OFFSET,
    VERSION,
    decode,
    encoder,
    header_value,
)
from kaudit.probe.verifier import Verification, Verifier

DEFAULT_COUNT = 10_000
DEFAULT_DELIVERY_TIMEOUT_MS = 30_000
POLL_EVERY = 64
"""Sends between two producer polls (which serve delivery reports): one poll per
message costs more than the reports it serves."""
READ_EVERY = 2048
"""Sends between two turns of the live read-back pass."""
ACKS_0_QUIET_S = 2.0
"""acks=0: how long the log ends must stand still, short of what was sent, before the
read-back stops there (what is missing then was lost, as acks=0 allows)."""
END_QUIET_S = 3.0
"""Read-back: how long a partition's log must have ended short of its last acknowledged
offset, without growing, before the pass stops waiting for it."""
READ_BATCH = 4096
"""Most messages the live pass takes per turn: it keeps up without stalling the sends
(the client keeps sending its queue meanwhile)."""


@dataclass(frozen=True)
class ProbeSettings:
    """Everything that shapes one probe run."""

    topic: str | None = None
    existing: bool = False
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int | None = 2
    unclean_leader_election: bool | None = None
    acks: str = "all"
    idempotence: bool = True
    transactional: bool = False
    txn_size: int = 100
    abort_ratio: float = 0.0
    retries: int | None = None
    max_in_flight: int | None = None
    linger_ms: int | None = None
    compression: str | None = None
    message_size: int = 100
    rate: float | None = None
    count: int | None = None
    duration: float | None = None
    faults: tuple[FaultSpec, ...] = ()
    fault_at: tuple[str, float] = ("progress", 0.4)
    fault_duration: float = 10.0
    expect: str | None = None
    keep: bool = False
    lab_state_dir: Path | None = None
    e2e_latency: bool = True
    producer_properties: dict[str, str] = field(default_factory=dict)
    """Extra producer-only properties (e.g. request.timeout.ms for duplicate experiments)."""

    def producer_config(self) -> dict[str, Any]:
        """librdkafka producer settings for these options."""
        conf: dict[str, Any] = {
            "acks": self.acks,
            "enable.idempotence": self.idempotence or self.transactional,
            "message.timeout.ms": DEFAULT_DELIVERY_TIMEOUT_MS,
        }
        for key, value in (("retries", self.retries),
                           ("max.in.flight.requests.per.connection", self.max_in_flight),
                           ("linger.ms", self.linger_ms), ("compression.type", self.compression)):
            if value is not None:
                conf[key] = value
        conf.update(self.producer_properties)
        return conf

    def describe(self) -> dict[str, Any]:
        """The settings as the report shows them."""
        return {
            "partitions": self.partitions, "replication_factor": self.replication_factor,
            "min_insync_replicas": self.min_insync_replicas,
            "unclean_leader_election": self.unclean_leader_election,
            "acks": self.acks, "idempotence": self.idempotence or self.transactional,
            "transactional": self.transactional,
            "txn_size": self.txn_size if self.transactional else None,
            "abort_ratio": self.abort_ratio if self.transactional else None,
            "retries": self.retries, "max_in_flight": self.max_in_flight,
            "linger_ms": self.linger_ms, "compression": self.compression,
            "message_size": self.message_size, "rate": self.rate, "count": self.count,
            "duration": self.duration, "faults": [f.label() for f in self.faults],
            "fault_at": (f"{self.fault_at[1] * 100:g}%" if self.fault_at[0] == "progress"
                         else f"{self.fault_at[1]:g}s") if self.faults else None,
            "fault_duration": self.fault_duration if self.faults else None,
            "expect": self.expect, "existing_topic": self.existing,
            "producer_properties": dict(self.producer_properties),
        }


@dataclass(frozen=True)
class ProbeReport:
    """The outcome of one run."""

    run_id: str
    topic: str
    settings: ProbeSettings
    verification: Verification
    ledger: Ledger
    ack_latency: LatencyHistogram
    e2e_latency: LatencyHistogram | None
    timeline: Timeline
    events: list[ProbeEvent]
    produce_seconds: float
    total_seconds: float
    send_errors: dict[str, int]
    drain_complete: bool
    interrupted: bool
    topic_deleted: bool
    notes: list[str]
    live_verification: bool = False
    """Whether pass 1 was the live pass, read while producing (see the module docstring)."""

    @property
    def verdict(self) -> str:
        """``pass`` or ``fail`` for the expected semantics."""
        if not self.drain_complete:
            return "fail"
        return self.verification.verdict(self.settings.expect)

    def violations(self) -> list[str]:
        """One line per reason the verdict is ``fail``."""
        out = list(self.verification.violations(self.settings.expect))
        if not self.drain_complete:
            out.append("could not read every partition back past its last acknowledged offset")
        return out


class _Progress:
    """Shared between the producer loop, the fault trigger and the progress display."""

    def __init__(self, settings: ProbeSettings, report: Progress | None = None) -> None:
        self.settings = settings
        self.sent = 0
        self.started = time.monotonic()
        self._report = report
        self._next_report = 0.0
        self.hold: Callable[[], bool] = lambda: False
        """True while the run must not end yet (a fault schedule is under way)."""

    def tick(self) -> None:
        """Tell the display how far the run is, at most a few times a second."""
        now = time.monotonic()
        if self._report is not None and now >= self._next_report:
            self._next_report = now + 0.25
            self._report(self.sent, min(self.fraction(), 1.0), False)

    def finish(self) -> None:
        """Sending is over: the display shows where it stopped and ends its line."""
        if self._report is not None:
            self._report(self.sent, min(self.fraction(), 1.0), True)

    def fraction(self) -> float:
        s = self.settings
        if s.count:
            return self.sent / s.count
        if s.duration:
            return (time.monotonic() - self.started) / s.duration
        return 0.0

    def trigger(self) -> bool:
        kind, value = self.settings.fault_at
        if kind == "progress":
            return self.fraction() >= value
        return time.monotonic() - self.started >= value


Progress = Callable[[int, float, bool], None]
"""Called now and then while sending: messages sent so far, share of the run done (0..1),
and whether sending is over."""


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
    live: _ReadPass | None = None
    try:
        tracker = _Progress(settings, progress)
        injector = None
        if settings.faults:
            injector = FaultInjector(list(settings.faults), tracker.trigger,
                                     settings.fault_duration, log, lab,
                                     lambda: partition_roles(session, name))
            tracker.hold = injector.under_way
            injector.start()
        tail = (_LatencyTail(conn, name, partitions, start_offsets, run_id)
                if settings.e2e_latency else None)
        if tail:
            tail.start()
        verifier = Verifier(ledger, run_id)
        if not settings.faults:  # a fault sets the live pass aside anyway: spare the load
            live = _ReadPass(conn, settings, name, partitions, start_offsets, verifier,
                             run_id, 1)
        # The send loop and the live pass allocate a few objects per message and keep
        # none: the cyclic collector would only rescan the heap, again and again.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            produced = _produce(conn, settings, name, partitions, run_id, ledger, tracker,
                                interrupted, log, notes, live)
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
        ends = _read_ends(session, settings, name, partitions, start_offsets, ledger)
        if live is not None:
            complete = live.drain(ends)
            doubt = _live_pass_doubt(session, name, partitions, log, start_offsets)
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
                complete = _read_back(conn, settings, name, partitions, start_offsets,
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
        notes=notes, live_verification=live_kept)


def _replace(settings: ProbeSettings, **changes: Any) -> ProbeSettings:
    from dataclasses import replace

    return replace(settings, **changes)


def _read_ends(session: AdminSession, settings: ProbeSettings, topic: str,
               partitions: list[int], starts: dict[int, int], ledger: Ledger
               ) -> dict[int, int]:
    """Where each partition's read-back may stop: past its end now and past its last
    acknowledged offset."""
    ends = session.list_offsets(topic, partitions, "latest",
                                 read_committed=settings.transactional)
    if settings.acks == "0":
        # acks=0 gets no offsets back, and flush() returns once the requests are sent,
        # maybe before the broker appended them; the high watermark then moves only as
        # followers fetch. Wait until every partition has grown by what was sent to it (it
        # cannot grow by less unless messages were lost), or has stopped moving for a while.
        wanted = {p: starts[p] + ledger.partition_counts(p)["acked"] for p in partitions}
        deadline = time.monotonic() + session.settings.timeout
        quiet_since = time.monotonic()
        while time.monotonic() < deadline and any(ends[p] < wanted[p] for p in partitions):
            time.sleep(0.2)
            again = session.list_offsets(topic, partitions, "latest")
            if again != ends:
                ends, quiet_since = again, time.monotonic()
            elif time.monotonic() - quiet_since >= ACKS_0_QUIET_S:
                break
    return {p: max(ends[p], ledger.last_acked_offset(p) + 1) for p in partitions}


def _produce(conn: ConnectionSettings, settings: ProbeSettings, topic: str,
             partitions: list[int], run_id: bytes, ledger: Ledger, progress: _Progress,
             interrupted: threading.Event, log: EventLog, notes: list[str],
             live: _ReadPass | None = None,
             ) -> tuple[LatencyHistogram, Timeline, float, dict[str, int]]:
    collector = ErrorCollector()
    conf = settings.producer_config()
    if settings.transactional:
        conf["transactional.id"] = f"kaudit-probe-{run_id.hex()}"
    histogram = LatencyHistogram()
    timeline = Timeline()
    errors: dict[str, int] = {}
    t0_ns = time.time_ns()
    time_ns = time.time_ns
    headers: list[tuple[str, str | bytes | None]] | None = (
        [(PROBE_HEADER, header_value(run_id))] if settings.existing else None)

    # Acks are tallied per second here and handed to the timeline when the second
    # changes: one timeline call per second instead of one per message. Ack latencies
    # go straight into the histogram's buckets; their count, sum and extremes follow
    # once per second (the callback runs for every message).
    ack_second = 0
    ack_count = 0
    ack_min = math.inf
    ack_max = -math.inf
    ack_total_ns = 0
    buckets = histogram.bucket_counts
    ledger_acked = ledger.acked
    unpack_seq_time = SEQUENCE_AND_TIME.unpack_from

    def flush_acks() -> None:
        nonlocal ack_count, ack_min, ack_max, ack_total_ns
        if ack_count:
            timeline.acks(ack_second, ack_count, ack_min, ack_max)
            histogram.absorb(ack_count, ack_total_ns / 1e6, ack_min, ack_max)
        ack_count, ack_min, ack_max, ack_total_ns = 0, math.inf, -math.inf, 0

    def on_delivery(err: Any, msg: Any) -> None:
        nonlocal ack_second, ack_count, ack_min, ack_max, ack_total_ns
        seq, sent_ns = unpack_seq_time(msg.value(), SEQUENCE_OFFSET)
        now = time_ns()
        second = (now - t0_ns) // 1_000_000_000
        partition = msg.partition()
        if err is None:
            ledger_acked(partition, seq, msg.offset())
            latency_ns = now - sent_ns
            buckets[bucket_of_us(latency_ns // 1000)] += 1
            latency_ms = latency_ns / 1e6
            if second != ack_second:
                flush_acks()
                ack_second = second
            ack_count += 1
            ack_total_ns += latency_ns
            if latency_ms < ack_min:
                ack_min = latency_ms
            if latency_ms > ack_max:
                ack_max = latency_ms
            return
        name = err.name()
        errors[name] = errors.get(name, 0) + 1
        if classify_error(name) is SendOutcome.failed:
            ledger.failed(partition, seq, name)
            timeline.failure(second)
        else:
            ledger.indeterminate(partition, seq, name)
            timeline.indeterminate(second)

    # One delivery callback for every message, set once (cheaper than per produce()).
    conf["on_delivery"] = on_delivery
    producer = new_producer(conn, collector, **conf)
    if settings.transactional:
        _init_transactions(producer, conn, collector)

    count = settings.count
    deadline = (progress.started + settings.duration) if settings.duration else math.inf
    interval = 1.0 / settings.rate if settings.rate else 0.0
    next_send = time.monotonic()
    global_seq = 0
    n_parts = len(partitions)
    encode_value = encoder(run_id, settings.message_size)
    next_seq = ledger.next_seq
    produce = producer.produce
    poll = producer.poll
    read = live.step if live is not None else None
    # Sends are tallied per second like acks (the timeline's "sent" column).
    send_second = 0
    send_count = 0
    txn_open = False
    txn_index = 0
    txn_starts: dict[int, int] = {}
    aborts_done = 0.0
    while not interrupted.is_set():
        if (count is not None and global_seq >= count) or (
                global_seq % 256 == 0 and time.monotonic() >= deadline):
            if not progress.hold():
                break
            # A fault schedule is still being injected (bounces, a freeze): the run stays
            # open until it is done, so it is never cut short by how fast the sends went.
            if read is not None:
                read()
            poll(0.05)
            continue
        if settings.transactional and not txn_open:
            producer.begin_transaction()
            txn_open = True
            txn_starts = {p: ledger.next_seq_peek(p) for p in partitions}
        partition = partitions[global_seq % n_parts]
        seq = next_seq(partition)
        now = time_ns()
        second = (now - t0_ns) // 1_000_000_000
        if second != send_second:
            if send_count:
                timeline.send(send_second, send_count)
            send_second, send_count = second, 0
        value = encode_value(seq, global_seq, now)
        while True:
            try:
                produce(topic, value, None, partition, headers=headers)
                break
            except BufferError:
                # Local queue full: let deliveries drain, and read meanwhile.
                if read is not None:
                    read()
                poll(0.005)
            except client.KafkaException as exc:
                name = exc.args[0].name() if exc.args else "_UNKNOWN"
                errors[name] = errors.get(name, 0) + 1
                ledger.failed(partition, seq, name)
                timeline.failure(second)
                break
        send_count += 1
        global_seq += 1
        if global_seq % POLL_EVERY == 0 or interval:
            poll(0)
            progress.sent = global_seq
            if global_seq % READ_EVERY == 0:
                progress.tick()
                if read is not None:
                    read()
        if settings.transactional and global_seq % settings.txn_size == 0:
            txn_index += 1
            abort = math.floor(txn_index * settings.abort_ratio) > aborts_done
            _end_transaction(producer, ledger, txn_starts, partitions, abort, conn, log, notes)
            aborts_done += 1 if abort else 0
            txn_open = False
        if interval:
            next_send += interval
            pause = next_send - time.monotonic()
            if pause > 0:
                time.sleep(pause)
    if send_count:
        timeline.send(send_second, send_count)
    progress.sent = global_seq
    if settings.transactional and txn_open:
        # An interrupted run aborts its open transaction: nothing half-written is visible.
        abort = interrupted.is_set() or (
            math.floor((txn_index + 1) * settings.abort_ratio) > aborts_done)
        _end_transaction(producer, ledger, txn_starts, partitions, abort, conn, log, notes)
    progress.finish()
    produce_seconds = time.monotonic() - progress.started
    flush_deadline = time.monotonic() + DEFAULT_DELIVERY_TIMEOUT_MS / 1000 + 10
    remaining = len(producer)
    while remaining and time.monotonic() < flush_deadline:
        # Wait for the last answers, reading what is already there meanwhile.
        remaining = producer.flush(0.05 if read is not None else 1.0)
        if read is not None:
            read()
    flush_acks()
    if remaining:
        notes.append(f"{remaining} message(s) still unanswered after the flush timeout")
    return histogram, timeline, produce_seconds, errors


def _init_transactions(producer: Any, conn: ConnectionSettings,
                       collector: ErrorCollector) -> None:
    """init_transactions, retried while the error is retriable (a coordinator moving)."""
    deadline = time.monotonic() + max(3 * conn.timeout, 30)
    while True:
        try:
            producer.init_transactions(conn.timeout)
            return
        except client.KafkaException as exc:
            err = exc.args[0]
            if not err.retriable() or time.monotonic() >= deadline:
                raise _unreachable_from(conn, collector, exc) from None
            time.sleep(0.5)


def _end_transaction(producer: Any, ledger: Ledger, starts: dict[int, int],
                     partitions: list[int], abort: bool, conn: ConnectionSettings,
                     log: EventLog, notes: list[str]) -> None:
    ends = {p: ledger.next_seq_peek(p) for p in partitions}
    try:
        if abort:
            # Flush first: the aborted records then really reach the log (so a
            # read_committed reader has something to hide), and EndTxn cannot
            # race a pending AddPartitionsToTxn (Kafka 4 answers that race with
            # a fatal INVALID_TXN_STATE).
            producer.flush(conn.timeout * 3)
            producer.abort_transaction(conn.timeout * 3)
        else:
            producer.commit_transaction(conn.timeout * 3)
            return
    except client.KafkaException as exc:
        err = exc.args[0]
        notes.append(f"transaction {'abort' if abort else 'commit'} failed: {err.str()}")
        if not abort and err.txn_requires_abort():
            producer.abort_transaction(conn.timeout * 3)
        elif not abort:
            # Unknown outcome: those sends are neither surely aborted nor surely visible.
            return
    for p in partitions:
        ledger.mark_aborted(p, range(starts[p], ends[p]))
    log.add("note", "transaction aborted on purpose" if abort else "transaction aborted")


def _unreachable_from(conn: ConnectionSettings, collector: ErrorCollector,
                      exc: BaseException) -> Exception:
    from kaudit.errors import ConnectionFailure

    reason = collector.explain() or kafka_message(exc)
    return ConnectionFailure(f"cannot use Kafka at {conn.bootstrap_servers}: {reason}")


def _consumer(conn: ConnectionSettings, settings: ProbeSettings, group: str) -> Any:
    return new_consumer(conn, None, **{
        "group.id": group, "enable.auto.commit": False, "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed" if settings.transactional else "read_uncommitted",
        "fetch.max.bytes": 52428800,
    })


class _ReadPass:
    """One read-back pass: a fresh consumer reads every partition from where the run
    began, feeding the verifier, until each is read past its end (:meth:`drain`).

    :meth:`step` takes one batch of what the client has fetched; the live pass calls it
    from the send loop while the producer writes (one thread: the verifier and the
    ledger are never touched concurrently).
    """

    def __init__(self, conn: ConnectionSettings, settings: ProbeSettings, topic: str,
                 partitions: list[int], start_offsets: dict[int, int], verifier: Verifier,
                 run_id: bytes, pass_no: int) -> None:
        self.conn, self.topic, self.partitions = conn, topic, partitions
        self.start_offsets = start_offsets
        self.verifier, self.run_id, self.pass_no = verifier, run_id, pass_no
        self.consumer: Any = _consumer(conn, settings,
                                       f"kaudit-probe-verify-{run_id.hex()}-{pass_no}")
        # next offset to read per partition (from messages and end-of-partition events)
        self.position = dict(start_offsets)
        # the last end of partition reached, and when it was first reached
        self.reached_end: dict[int, tuple[int, float]] = {}
        self.consumer.assign([client.TopicPartition(topic, p, start_offsets[p])
                              for p in partitions])

    def step(self, timeout: float = 0.0, max_messages: int = READ_BATCH) -> int:
        """Observe one batch of fetched messages; return how many were data messages."""
        batch = self.consumer.consume(num_messages=max_messages, timeout=timeout)
        if not batch:
            return 0
        eof = client.KafkaError._PARTITION_EOF
        position = self.position
        observe = self.verifier.observe_sequence
        unpack = RUN_AND_SEQUENCE.unpack_from
        run_id, pass_no = self.run_id, self.pass_no
        data = 0
        for msg in batch:
            err = msg.error()
            if err is not None:
                if err.code() == eof:
                    p = msg.partition()
                    if msg.offset() > position.get(p, 0):
                        position[p] = msg.offset()
                    if self.reached_end.get(p, (-1, 0.0))[0] != msg.offset():
                        self.reached_end[p] = (msg.offset(), time.monotonic())
                continue
            data += 1
            p = msg.partition()
            offset = msg.offset()
            if offset >= position.get(p, 0):
                position[p] = offset + 1
            value = msg.value()
            if value is None or len(value) < HEADER_SIZE:
                continue
            magic, version, rid, seq = unpack(value)
            if magic == MAGIC and version == VERSION and rid == run_id:
                observe(p, offset, seq, pass_no)
        return data

    def drain(self, ends: dict[int, int]) -> bool:
        """Read on until every partition is read up to its end (see :func:`_read_ends`).
        Give up after the timeout (at least 10 s) without a message, or on a partition
        whose log has ended short of it for :data:`END_QUIET_S`. True when every
        partition got there."""
        position = self.position
        pending = [p for p in self.partitions if position[p] < ends[p]]
        idle_s = max(self.conn.timeout, 10)
        idle_deadline = time.monotonic() + idle_s
        short = False
        while pending and time.monotonic() < idle_deadline:
            if self.step(timeout=0.5, max_messages=10000):
                idle_deadline = time.monotonic() + idle_s
            pending = [p for p in pending if position[p] < ends[p]]
            # Read to the end of its log, and the end has not moved: offsets acknowledged
            # past it are not coming (a failover truncated them). Waiting out the idle
            # timeout would change nothing but the run's length.
            now = time.monotonic()
            ended = [p for p in pending if self.reached_end.get(p, (-1, now))[0] == position[p]
                     and now - self.reached_end[p][1] >= END_QUIET_S]
            if ended:
                short = True
                pending = [p for p in pending if p not in ended]
        return not pending and not short

    def close(self) -> None:
        """Close the consumer (idempotent)."""
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None


def _live_pass_doubt(session: AdminSession, topic: str, partitions: list[int],
                     log: EventLog, start_offsets: dict[int, int]) -> str | None:
    """Why the live pass may not show the log as it stands now; None when nothing can
    have rewritten it behind the reader. A clean leader change keeps what readers saw,
    an unclean one may not, and both look alike from here: any leader change counts."""
    changed = sorted({e.partition for e in log.events()
                      if e.kind == "leader-change" and e.partition is not None})
    if changed:
        return f"leadership changed in partition(s) {', '.join(map(str, changed))}"
    try:
        lows = session.list_offsets(topic, partitions, "earliest")
    except Exception as exc:  # cannot tell: read again rather than trust
        return f"could not read the log start offsets: {exc}"
    deleted = [p for p, low in sorted(lows.items()) if low > start_offsets.get(p, 0)]
    if deleted:
        return f"records were deleted from partition(s) {', '.join(map(str, deleted))}"
    return None


def _read_back(conn: ConnectionSettings, settings: ProbeSettings, topic: str,
               partitions: list[int], start_offsets: dict[int, int], ends: dict[int, int],
               verifier: Verifier, run_id: bytes, pass_no: int) -> bool:
    """Read every partition from its start offset past its last acked offset."""
    reader = _ReadPass(conn, settings, topic, partitions, start_offsets, verifier, run_id,
                       pass_no)
    try:
        return reader.drain(ends)
    finally:
        reader.close()


class _LatencyTail(threading.Thread):
    """Reads the topic while the probe writes it, for end-to-end latency only."""

    def __init__(self, conn: ConnectionSettings, topic: str, partitions: list[int],
                 start_offsets: dict[int, int], run_id: bytes) -> None:
        super().__init__(name="kaudit-latency-tail", daemon=True)
        self.conn, self.topic, self.partitions = conn, topic, partitions
        self.start_offsets, self.run_id = start_offsets, run_id
        self.histogram = LatencyHistogram()
        self._stopping = threading.Event()

    def run(self) -> None:
        consumer = new_consumer(self.conn, None, **{
            "group.id": f"kaudit-probe-tail-{self.run_id.hex()}", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "fetch.wait.max.ms": 10})
        try:
            consumer.assign([client.TopicPartition(self.topic, p, self.start_offsets[p])
                             for p in self.partitions])
            while not self._stopping.is_set():
                for msg in consumer.consume(num_messages=10000, timeout=0.2):
                    if msg.error() is None:
                        record = decode(msg.value())
                        if record is not None and record.run_id == self.run_id:
                            self.histogram.record((time.time_ns() - record.sent_ns) / 1e6)
        finally:
            consumer.close()

    def stop(self) -> None:
        """Stop reading."""
        self._stopping.set()
        self.join(timeout=10)
