"""The send loop: sequenced messages to every partition, each outcome into the ledger.

It also keeps the per-second timeline and the ack latency, runs transactions when asked,
and hands the live read-back pass a turn now and then (:mod:`kaudit.probe.runner`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kaudit.cluster import client
from kaudit.cluster.client import ErrorCollector, new_producer
from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.faults.injector import ProducerRestart
from kaudit.probe.faults.registry import fault_at_reached
from kaudit.probe.latency import LatencyHistogram, Timeline, bucket_of_us
from kaudit.probe.ledger import Ledger, SendOutcome, classify_error
from kaudit.probe.model import DEFAULT_DELIVERY_TIMEOUT_MS, ProbeSettings
from kaudit.probe.monitor import EventLog
from kaudit.probe.payload import (
    PROBE_HEADER,
    SEQUENCE_AND_TIME,
    SEQUENCE_OFFSET,
    encoder,
    header_value,
)
from kaudit.probe.transactions import TransactionState, end_transaction, init_transactions
from kaudit.waiting import Deadline

POLL_EVERY = 64
"""Sends between two producer polls (which serve delivery reports): one poll per
message costs more than the reports it serves."""
READ_EVERY = 2048
"""Sends between two turns of the live read-back pass."""
TRANSACTION_UNKNOWN = "transaction outcome unknown"
"""Why an acknowledged send is indeterminate after all (see ``SendLoop.unknown``)."""


ProgressDisplay = Callable[[int, float, bool], None]
"""Called now and then while sending: messages sent so far, share of the run done (0..1),
and whether sending is over."""


class SendTracker:
    """How far the sends are: shared by the send loop, the fault trigger and the display."""

    def __init__(self, settings: ProbeSettings, display: ProgressDisplay | None = None) -> None:
        self.settings = settings
        self.sent = 0
        self.started = time.monotonic()
        self._display = display
        self._next_display = 0.0
        self.hold: Callable[[], bool] = lambda: False
        """True while the run must not end yet (a fault schedule is under way)."""

    def tick(self) -> None:
        """Tell the display how far the run is, at most a few times a second."""
        now = time.monotonic()
        if self._display is not None and now >= self._next_display:
            self._next_display = now + 0.25
            self._display(self.sent, min(self.fraction(), 1.0), False)

    def finish(self) -> None:
        """Sending is over: the display shows where it stopped and ends its line."""
        if self._display is not None:
            self._display(self.sent, min(self.fraction(), 1.0), True)

    def fraction(self) -> float:
        """Share of the run done: of the count, or of the duration (0 with neither)."""
        s = self.settings
        if s.count:
            return self.sent / s.count
        if s.duration:
            return (time.monotonic() - self.started) / s.duration
        return 0.0

    def trigger(self) -> bool:
        """Whether the run is as far as ``fault_at``: the fault injector's cue."""
        return fault_at_reached(self.settings.fault_at, self.fraction(),
                                time.monotonic() - self.started)


@dataclass
class Sent:
    """What the send loop measured."""

    ack_latency: LatencyHistogram
    timeline: Timeline
    produce_seconds: float
    """From the start until the last send (the wait for the last answers not counted)."""
    held_seconds: float
    """Of which the run was held open after its last send while a fault schedule ran to
    its end (no sends then: not part of the send rate)."""
    errors: dict[str, int]
    """Send errors by name."""


@dataclass
class SendTarget:
    """Where the sends go and what they are part of."""

    topic: str
    partitions: list[int]
    run_id: bytes
    ledger: Ledger
    log: EventLog
    notes: list[str]


class AckTally:
    """The delivery reports: each acknowledged send into the ledger and the latency
    histogram, each failed one as failed or indeterminate.

    Acks are tallied per second and handed to the timeline when the second changes: one
    timeline call per second instead of one per message. Latencies go straight into the
    histogram's buckets; their count, sum and extremes follow once per second (the
    callback runs for every message, so its state is plain fields).
    """

    def __init__(self, ledger: Ledger, timeline: Timeline, histogram: LatencyHistogram,
                 t0_ns: int) -> None:
        self.ledger, self.timeline, self.histogram, self.t0_ns = ledger, timeline, histogram, t0_ns
        self.errors: dict[str, int] = {}
        self.second = 0
        self._reset()

    def _reset(self) -> None:
        self.count, self.total_ns = 0, 0
        self.least, self.most = math.inf, -math.inf

    def flush(self) -> None:
        """Hand the current second's acks to the timeline and the histogram."""
        if self.count:
            self.timeline.acks(self.second, self.count, self.least, self.most)
            self.histogram.absorb(self.count, self.total_ns / 1e6, self.least, self.most)
        self._reset()

    def on_delivery(self, err: Any, msg: Any) -> None:
        """librdkafka's delivery report for one message."""
        seq, sent_ns = SEQUENCE_AND_TIME.unpack_from(msg.value(), SEQUENCE_OFFSET)
        now = time.time_ns()
        second = (now - self.t0_ns) // 1_000_000_000
        partition = msg.partition()
        if err is None:
            # The leader epoch names the leader that acknowledged it, should the log be cut
            # below it (librdkafka 2.x reports none to a producer: None, kept as unknown).
            self.ledger.acked(partition, seq, msg.offset(), msg.leader_epoch())
            latency_ns = now - sent_ns
            self.histogram.bucket_counts[bucket_of_us(latency_ns // 1000)] += 1
            latency_ms = latency_ns / 1e6
            if second != self.second:
                self.flush()
                self.second = second
            self.count += 1
            self.total_ns += latency_ns
            if latency_ms < self.least:
                self.least = latency_ms
            if latency_ms > self.most:
                self.most = latency_ms
            return
        self.failed(partition, seq, err.name(), second)

    def failed(self, partition: int, seq: int, name: str, second: int) -> None:
        """A send that failed (or whose outcome is unknown), by the error's name."""
        self.errors[name] = self.errors.get(name, 0) + 1
        if classify_error(name) is SendOutcome.failed:
            self.ledger.failed(partition, seq, name)
            self.timeline.failure(second)
        else:
            self.ledger.indeterminate(partition, seq, name)
            self.timeline.indeterminate(second)


def produce_messages(conn: ConnectionSettings, settings: ProbeSettings, target: SendTarget,
                     tracker: SendTracker, interrupted: threading.Event,
                     read: Callable[[], int] | None = None,
                     restart: ProducerRestart | None = None) -> Sent:
    """Send until the run's count or duration is reached (or ``interrupted``), then wait
    for the last answers. ``read`` takes one batch of the live read-back pass;
    ``restart`` asks for a new producer session mid-run (the ``restart-producer`` fault)."""
    return SendLoop(conn, settings, target, tracker, read, restart).run(interrupted)


class SendLoop:
    """One run's sends: the producer session, the sequence, the open transaction."""

    def __init__(self, conn: ConnectionSettings, settings: ProbeSettings, target: SendTarget,
                 tracker: SendTracker, read: Callable[[], int] | None,
                 restart: ProducerRestart | None) -> None:
        self.conn, self.settings, self.target, self.tracker = conn, settings, target, tracker
        self.read, self.restart = read, restart
        self.timeline = Timeline()
        self.tally = AckTally(target.ledger, self.timeline, LatencyHistogram(), time.time_ns())
        self.collector = ErrorCollector()
        self.conf = settings.producer_config()
        if settings.transactional:
            self.conf["transactional.id"] = f"kaudit-probe-{target.run_id.hex()}"
        # One delivery callback for every message, set once (cheaper than per produce()).
        self.conf["on_delivery"] = self.tally.on_delivery
        self.headers: list[tuple[str, str | bytes | None]] | None = (
            [(PROBE_HEADER, header_value(target.run_id))] if settings.existing else None)
        self.encode = encoder(target.run_id, settings.message_size)
        self.producer: Any = None
        self.dropped: list[Any] = []  # old sessions: kept, never polled again, closed at the end
        self.sent = 0
        """Messages handed to the producer so far (the global sequence)."""
        self.send_second, self.send_count = 0, 0
        """Sends are tallied per second like acks (the timeline's "sent" column)."""
        self.txn = TransactionState()
        self.held = 0.0
        """Seconds held open after the last send, for a fault schedule to end."""
        self.fatal: Any = None
        """The fatal error that ended the producer (librdkafka raises it from poll, flush
        and the transaction calls): nothing more is sent after it."""
        self.unknown: list[dict[int, range]] = []
        """The sends of transactions whose outcome is unknown, per partition."""

    def run(self, interrupted: threading.Event) -> Sent:
        self.producer = new_producer(self.conn, self.collector, **self.conf)
        if self.settings.transactional:
            init_transactions(self.producer, self.conn, self.collector)
        try:
            self._send_all(interrupted)
            if self.settings.transactional and self.txn.open:
                # An interrupted run aborts its open transaction: nothing half-written is
                # visible.
                self._end_transaction(last=True, interrupted=interrupted.is_set())
        except client.KafkaException as exc:
            self._failed(exc)
            if self.txn.open:  # no end can come now: the broker aborts it, or a fencer did
                self.unknown.append(self._open_sends())
                self.txn.open = False
        if self.send_count:
            self.timeline.send(self.send_second, self.send_count)
        self.tracker.sent = self.sent
        self.tracker.finish()
        produce_seconds = time.monotonic() - self.tracker.started
        self._wait_for_answers()
        self._settle_unknown()
        self.dropped.clear()
        return Sent(self.tally.histogram, self.timeline, produce_seconds, self.held,
                    self.tally.errors)

    def _failed(self, exc: Exception) -> None:
        """A fatal error ends the producer, and with it the sends: what was sent is still
        accounted for. Anything else raised here is a bug, not an outcome."""
        err = client.fatal_error(exc)
        if err is None:
            raise exc
        if self.fatal is None:
            self.fatal = err
            self.target.notes.append(f"the producer failed: {err.str()}; no message was "
                                     f"sent after the first {self.sent}")

    def _open_sends(self) -> dict[int, range]:
        ledger = self.target.ledger
        return {p: range(self.txn.starts[p], ledger.next_seq_peek(p))
                for p in self.target.partitions}

    def _settle_unknown(self) -> None:
        """An acknowledged send of a transaction with no known outcome may never become
        visible: indeterminate, like a send with no answer (the read says what it became)."""
        ledger = self.target.ledger
        for sends in self.unknown:
            for p, seqs in sends.items():
                for seq in seqs:
                    if ledger.outcome(p, seq) is SendOutcome.acked:
                        ledger.indeterminate(p, seq, TRANSACTION_UNKNOWN)

    def _send_all(self, interrupted: threading.Event) -> None:
        s, tracker, read, restart = self.settings, self.tracker, self.read, self.restart
        count = s.count
        deadline = (tracker.started + s.duration) if s.duration else math.inf
        interval = 1.0 / s.rate if s.rate else 0.0
        next_send = time.monotonic()
        partitions = self.target.partitions
        n_parts = len(partitions)
        next_seq = self.target.ledger.next_seq
        while not interrupted.is_set():
            if restart is not None and restart.requested.is_set() and not restart.done.is_set():
                self._new_session()
            seq_no = self.sent
            if (count is not None and seq_no >= count) or (
                    seq_no % 256 == 0 and time.monotonic() >= deadline):
                if not tracker.hold():
                    break
                # A fault schedule is still being injected (bounces, a freeze): the run
                # stays open until it is done, so it is never cut short by how fast the
                # sends went.
                holding = time.monotonic()
                if read is not None:
                    read()
                self.producer.poll(0.05)
                self.held += time.monotonic() - holding
                continue
            if s.transactional and not self.txn.open:
                self._begin_transaction()
            partition = partitions[seq_no % n_parts]
            self._send(partition, next_seq(partition))
            self.sent = seq_no = seq_no + 1
            if seq_no % POLL_EVERY == 0 or interval:
                self.producer.poll(0)
                tracker.sent = seq_no
                if seq_no % READ_EVERY == 0:
                    tracker.tick()
                    if read is not None:
                        read()
            if s.transactional and seq_no % s.txn_size == 0:
                self._end_transaction()
            if interval:
                next_send += interval
                pause = next_send - time.monotonic()
                if pause > 0:
                    time.sleep(pause)

    def _send(self, partition: int, seq: int) -> None:
        """Hand one message to the producer, waiting while its local queue is full."""
        now = time.time_ns()
        second = (now - self.tally.t0_ns) // 1_000_000_000
        if second != self.send_second or self.sent == 0:
            if self.send_count:
                self.timeline.send(self.send_second, self.send_count)
            self.send_second, self.send_count = second, 0
            ledger = self.target.ledger
            self.timeline.mark_sequences(second, {p: ledger.next_seq_peek(p)
                                                  for p in self.target.partitions})
        value = self.encode(seq, self.sent, now)
        while True:
            try:
                if self.headers is None:  # the keyword alone costs 0.4 us a message
                    self.producer.produce(self.target.topic, value, None, partition)
                else:
                    self.producer.produce(self.target.topic, value, None, partition,
                                          headers=self.headers)
                break
            except BufferError:
                # Local queue full: let deliveries drain, and read meanwhile.
                if self.read is not None:
                    self.read()
                self.producer.poll(0.005)
            except client.KafkaException as exc:
                name = exc.args[0].name() if exc.args else "_UNKNOWN"
                self.tally.errors[name] = self.tally.errors.get(name, 0) + 1
                self.target.ledger.failed(partition, seq, name)
                self.timeline.failure(second)
                break
        self.send_count += 1

    def _wait_for_answers(self) -> None:
        """Wait for the last answers, reading what is already there meanwhile."""
        deadline = Deadline(DEFAULT_DELIVERY_TIMEOUT_MS / 1000 + 10)
        remaining = len(self.producer)
        while remaining and not deadline.expired():
            try:
                remaining = self.producer.flush(0.05 if self.read is not None else 1.0)
            except client.KafkaException as exc:
                self._failed(exc)
                remaining = len(self.producer)
            if self.read is not None:
                self.read()
        self.tally.flush()
        if remaining:
            self.target.notes.append(f"{remaining} message(s) still unanswered after the "
                                     "flush timeout")

    def _begin_transaction(self) -> None:
        self.producer.begin_transaction()
        self.txn.open = True
        ledger = self.target.ledger
        self.txn.starts = {p: ledger.next_seq_peek(p) for p in self.target.partitions}

    def _end_transaction(self, last: bool = False, interrupted: bool = False) -> None:
        """Commit the open transaction, or abort it: on purpose (``--abort-ratio``: the
        n-th transaction is aborted when floor(n * ratio) passes the aborts so far), or
        because the run was interrupted."""
        txn, s = self.txn, self.settings
        index = txn.index + 1
        abort = interrupted or math.floor(index * s.abort_ratio) > txn.aborts
        ended = end_transaction(self.producer, self.target.ledger, txn.starts,
                                self.target.partitions, abort, self.conn, self.target.log,
                                self.target.notes)
        if not ended.known:
            self.unknown.append(self._open_sends())
        if not last:
            txn.index = index
            txn.aborts += 1 if abort else 0
        txn.open = False
        if ended.fatal is not None:
            raise ended.fatal  # the producer can send nothing more: run() ends the sends

    def _new_session(self) -> None:
        """Drop the producer as a crash would, then re-send with a new one (see
        :class:`~kaudit.probe.faults.injector.ProducerRestart`)."""
        restart, ledger, partitions = self.restart, self.target.ledger, self.target.partitions
        assert restart is not None
        if self.settings.transactional:
            # The open transaction's writes reach the log; the commit never comes.
            self.producer.flush(self.conn.timeout * 3)
        self.producer.purge(in_queue=True, in_flight=True, blocking=False)
        self.producer.poll(0)  # serve the purged sends' reports: they become indeterminate
        self.dropped.append(self.producer)
        restart.dropped.set()
        restart.resume.wait(ProducerRestart.WAIT_S)
        self.producer = new_producer(self.conn, self.collector, **self.conf)
        if self.settings.transactional:
            # Same transactional id: this fences the old session and aborts its open
            # transaction, whose sends are all sent again in the new session's first one.
            # Between a commit and the next begin nothing is open: nothing to send again
            # (the last transaction's start is stale then: re-sending it would duplicate a
            # committed transaction).
            init_transactions(self.producer, self.conn, self.collector)
            was_open, starts = self.txn.open, self.txn.starts
            self._begin_transaction()
            if was_open:
                self.txn.starts = starts
            again = [(p, seq) for p in partitions
                     for seq in range(self.txn.starts[p], ledger.next_seq_peek(p))]
        else:
            again = [(p, seq) for p in partitions for seq in range(ledger.next_seq_peek(p))
                     if ledger.outcome(p, seq) is not SendOutcome.acked]
        for p, seq in again:
            while True:
                try:
                    self.producer.produce(self.target.topic,
                                          self.encode(seq, self.sent, time.time_ns()), None,
                                          p, headers=self.headers)
                    break
                except BufferError:
                    self.producer.poll(0.005)
        self.target.log.add("note", f"new producer session re-sent {len(again)} message(s)")
        restart.done.set()
