"""Run one probe: produce sequenced messages, read them back, account for every one.

The data flows one way: settings -> topic -> producer (ledger of send
outcomes) -> two read-back passes (verifier) -> :class:`ProbeReport`.
Faults and the leader/ISR monitor run beside the producer and write to the
shared event log. Whatever happens (Ctrl-C included), faults are healed, the
probe topic is deleted unless kept, and what was sent is still verified.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaudit.cluster.client import AdminSession, ErrorCollector, client_config, kafka_message
from kaudit.connect.settings import ConnectionSettings
from kaudit.errors import InputError
from kaudit.probe.faults import FaultInjector, FaultSpec, LabControl
from kaudit.probe.latency import LatencyHistogram, Timeline
from kaudit.probe.ledger import Ledger, SendOutcome, classify_error
from kaudit.probe.monitor import EventLog, LeaderMonitor, ProbeEvent
from kaudit.probe.payload import (
    PROBE_HEADER,
    decode,
    encode,
    header_value,
    sequence_and_time,
)
from kaudit.probe.topic import TopicSpec, create_probe_topic, delete_probe_topic, topic_partitions
from kaudit.probe.verifier import Verification, Verifier

DEFAULT_COUNT = 10_000
DEFAULT_DELIVERY_TIMEOUT_MS = 30_000


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
    start_offsets = _high_watermarks(conn, name, partitions)
    monitor = LeaderMonitor(session, name, log)
    monitor.sample()
    monitor.start()
    deleted = False
    ledger = Ledger(max(partitions) + 1)
    try:
        tracker = _Progress(settings, progress)
        injector = None
        if settings.faults:
            injector = FaultInjector(list(settings.faults), tracker.trigger,
                                     settings.fault_duration, log, lab,
                                     lambda: _roles(session, name))
            injector.start()
        tail = (_LatencyTail(conn, name, partitions, start_offsets, run_id)
                if settings.e2e_latency else None)
        if tail:
            tail.start()
        try:
            produced = _produce(conn, settings, name, partitions, run_id, ledger, tracker,
                                interrupted, log, notes)
        finally:
            if injector:
                injector.cancel()
                injector.join(timeout=settings.fault_duration + 150)
                injector.heal()
                notes.extend(injector.errors)
        ack_latency, timeline, produce_seconds, send_errors = produced
        ledger.finish()
        monitor.stop()
        verifier = Verifier(ledger, run_id)
        drain_complete = True
        for pass_no in (1, 2):
            complete = _read_back(conn, settings, name, partitions, start_offsets, ledger,
                                  verifier, run_id, pass_no)
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
        notes=notes)


def _replace(settings: ProbeSettings, **changes: Any) -> ProbeSettings:
    from dataclasses import replace

    return replace(settings, **changes)


def _roles(session: AdminSession, topic: str) -> tuple[int, list[int]]:
    """Partition 0's leader and its in-sync followers, fresh from metadata."""
    md = session.admin.list_topics(topic=topic, timeout=5)
    part = md.topics[topic].partitions[0]
    return part.leader, [b for b in part.isrs if b != part.leader]


def _high_watermark(consumer: Any, topic: str, partition: int,
                    conn: ConnectionSettings) -> int:
    """A partition's high watermark, waiting out a consumer that has not yet seen a
    topic created a moment ago (its metadata says "unknown partition")."""
    from confluent_kafka import KafkaError, KafkaException, TopicPartition

    from kaudit.errors import ConnectionFailure

    deadline = time.monotonic() + conn.timeout
    while True:
        try:
            return int(consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                      timeout=conn.timeout)[1])
        except KafkaException as exc:
            err = exc.args[0]
            transient = err.code() in (KafkaError._UNKNOWN_PARTITION,
                                       KafkaError._UNKNOWN_TOPIC) or err.retriable()
            if not transient or time.monotonic() >= deadline:
                raise ConnectionFailure(f"cannot read the offsets of {topic} [{partition}]: "
                                        f"{err.str()}") from None
            time.sleep(0.2)


def _high_watermarks(conn: ConnectionSettings, topic: str,
                     partitions: list[int]) -> dict[int, int]:
    from confluent_kafka import Consumer

    consumer = Consumer(client_config(conn, None, **{"group.id": "kaudit-probe-offsets"}))
    try:
        return {p: _high_watermark(consumer, topic, p, conn) for p in partitions}
    finally:
        consumer.close()


def _produce(conn: ConnectionSettings, settings: ProbeSettings, topic: str,
             partitions: list[int], run_id: bytes, ledger: Ledger, progress: _Progress,
             interrupted: threading.Event, log: EventLog,
             notes: list[str]) -> tuple[LatencyHistogram, Timeline, float, dict[str, int]]:
    from confluent_kafka import KafkaException, Producer

    collector = ErrorCollector()
    conf = client_config(conn, collector, **settings.producer_config())
    if settings.transactional:
        conf["transactional.id"] = f"kaudit-probe-{run_id.hex()}"
    histogram = LatencyHistogram()
    timeline = Timeline()
    errors: dict[str, int] = {}
    t0_ns = time.time_ns()
    headers: list[tuple[str, str | bytes | None]] | None = (
        [(PROBE_HEADER, header_value(run_id))] if settings.existing else None)

    def on_delivery(err: Any, msg: Any) -> None:
        seq, sent_ns = sequence_and_time(msg.value())
        now = time.time_ns()
        second = int((now - t0_ns) / 1e9)
        partition = msg.partition()
        if err is None:
            ledger.acked(partition, seq, msg.offset())
            latency_ms = (now - sent_ns) / 1e6
            histogram.record(latency_ms)
            timeline.ack(second, latency_ms)
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
    try:
        producer = Producer(conf)
    except (KafkaException, ValueError, TypeError) as exc:
        raise InputError(f"invalid producer configuration: {kafka_message(exc)}") from None
    if settings.transactional:
        _init_transactions(producer, conn, collector)

    count = settings.count
    deadline = (progress.started + settings.duration) if settings.duration else math.inf
    interval = 1.0 / settings.rate if settings.rate else 0.0
    next_send = time.monotonic()
    global_seq = 0
    n_parts = len(partitions)
    size = settings.message_size
    txn_open = False
    txn_index = 0
    txn_starts: dict[int, int] = {}
    aborts_done = 0.0
    while not interrupted.is_set():
        if count is not None and global_seq >= count:
            break
        if global_seq % 256 == 0 and time.monotonic() >= deadline:
            break
        if settings.transactional and not txn_open:
            producer.begin_transaction()
            txn_open = True
            txn_starts = {p: ledger.next_seq_peek(p) for p in partitions}
        partition = partitions[global_seq % n_parts]
        seq = ledger.next_seq(partition)
        value = encode(run_id, seq, global_seq, time.time_ns(), size)
        second = int((time.time_ns() - t0_ns) / 1e9)
        while True:
            try:
                producer.produce(topic, value, partition=partition, headers=headers)
                break
            except BufferError:
                producer.poll(0.01)  # local queue full: let deliveries drain
            except KafkaException as exc:
                name = exc.args[0].name() if exc.args else "_UNKNOWN"
                errors[name] = errors.get(name, 0) + 1
                ledger.failed(partition, seq, name)
                timeline.failure(second)
                break
        timeline.send(second)
        global_seq += 1
        progress.sent = global_seq
        if global_seq % 1024 == 0:
            progress.tick()
        producer.poll(0)
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
    if settings.transactional and txn_open:
        # An interrupted run aborts its open transaction: nothing half-written is visible.
        abort = interrupted.is_set() or (
            math.floor((txn_index + 1) * settings.abort_ratio) > aborts_done)
        _end_transaction(producer, ledger, txn_starts, partitions, abort, conn, log, notes)
    progress.finish()
    produce_seconds = time.monotonic() - progress.started
    remaining = producer.flush(DEFAULT_DELIVERY_TIMEOUT_MS / 1000 + 10)
    if remaining:
        notes.append(f"{remaining} message(s) still unanswered after the flush timeout")
    return histogram, timeline, produce_seconds, errors


def _init_transactions(producer: Any, conn: ConnectionSettings,
                       collector: ErrorCollector) -> None:
    """init_transactions, retried while the error is retriable (a coordinator moving)."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + max(3 * conn.timeout, 30)
    while True:
        try:
            producer.init_transactions(conn.timeout)
            return
        except KafkaException as exc:
            err = exc.args[0]
            if not err.retriable() or time.monotonic() >= deadline:
                raise _unreachable_from(conn, collector, exc) from None
            time.sleep(0.5)


def _end_transaction(producer: Any, ledger: Ledger, starts: dict[int, int],
                     partitions: list[int], abort: bool, conn: ConnectionSettings,
                     log: EventLog, notes: list[str]) -> None:
    from confluent_kafka import KafkaException

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
    except KafkaException as exc:
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
    from confluent_kafka import Consumer

    return Consumer(client_config(conn, None, **{
        "group.id": group, "enable.auto.commit": False, "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed" if settings.transactional else "read_uncommitted",
        "fetch.max.bytes": 52428800,
    }))


def _read_back(conn: ConnectionSettings, settings: ProbeSettings, topic: str,
               partitions: list[int], start_offsets: dict[int, int], ledger: Ledger,
               verifier: Verifier, run_id: bytes, pass_no: int) -> bool:
    """Read every partition from its start offset past its last acked offset."""
    from confluent_kafka import KafkaError, TopicPartition

    consumer = _consumer(conn, settings, f"kaudit-probe-verify-{run_id.hex()}-{pass_no}")
    try:
        ends = {}
        for p in partitions:
            high = _high_watermark(consumer, topic, p, conn)
            ends[p] = max(high, ledger.last_acked_offset(p) + 1)
        pending = {p for p in partitions if ends[p] > start_offsets[p]}
        consumer.assign([TopicPartition(topic, p, start_offsets[p]) for p in pending])
        idle_deadline = time.monotonic() + max(conn.timeout, 10)
        while pending and time.monotonic() < idle_deadline:
            batch = consumer.consume(num_messages=10000, timeout=0.5)
            for msg in batch:
                p = msg.partition()
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF and msg.offset() >= ends.get(p, 0):
                        pending.discard(p)
                    continue
                idle_deadline = time.monotonic() + max(conn.timeout, 10)
                offset = msg.offset()
                record = decode(msg.value())
                if record is not None and record.run_id == run_id:
                    verifier.observe(p, offset, record, pass_no)
                if offset >= ends[p] - 1:
                    pending.discard(p)
        return not pending
    finally:
        consumer.close()


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
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(client_config(self.conn, None, **{
            "group.id": f"kaudit-probe-tail-{self.run_id.hex()}", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "fetch.wait.max.ms": 10}))
        try:
            consumer.assign([TopicPartition(self.topic, p, self.start_offsets[p])
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
