"""The send loop: sequenced messages to every partition, each outcome into the ledger.

It also keeps the per-second timeline and the ack latency, runs transactions when asked,
and hands the live read-back pass a turn now and then (:mod:`kaudit.probe.runner`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from kaudit.cluster import client
from kaudit.cluster.client import ErrorCollector, kafka_message, new_producer
from kaudit.connect.settings import ConnectionSettings
from kaudit.probe.faults import ProducerRestart
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

POLL_EVERY = 64
"""Sends between two producer polls (which serve delivery reports): one poll per
message costs more than the reports it serves."""
READ_EVERY = 2048
"""Sends between two turns of the live read-back pass."""


class SendProgress:
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
        """Share of the run done: of the count, or of the duration (0 with neither)."""
        s = self.settings
        if s.count:
            return self.sent / s.count
        if s.duration:
            return (time.monotonic() - self.started) / s.duration
        return 0.0

    def trigger(self) -> bool:
        """Whether the run is as far as ``fault_at``: the fault injector's cue."""
        kind, value = self.settings.fault_at
        if kind == "progress":
            return self.fraction() >= value
        return time.monotonic() - self.started >= value


Progress = Callable[[int, float, bool], None]
"""Called now and then while sending: messages sent so far, share of the run done (0..1),
and whether sending is over."""


def produce_messages(conn: ConnectionSettings, settings: ProbeSettings, topic: str,
                     partitions: list[int], run_id: bytes, ledger: Ledger,
                     progress: SendProgress, interrupted: threading.Event, log: EventLog,
                     notes: list[str], read: Callable[[], int] | None = None,
                     restart: ProducerRestart | None = None,
                     ) -> tuple[LatencyHistogram, Timeline, float, dict[str, int]]:
    """Send until the run's count or duration is reached (or ``interrupted``), then wait
    for the last answers; return the ack latency, the timeline, the seconds spent sending
    and the send errors by name. ``read`` takes one batch of the live read-back pass;
    ``restart`` asks for a new producer session mid-run (the ``restart-producer`` fault)."""
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
    # Sends are tallied per second like acks (the timeline's "sent" column).
    send_second = 0
    send_count = 0
    txn_open = False
    txn_index = 0
    txn_starts: dict[int, int] = {}
    aborts_done = 0.0
    dropped: list[Any] = []  # old sessions: kept, never polled again, closed at the end

    def new_session() -> None:
        """Drop the producer as a crash would, then re-send with a new one (see
        :class:`~kaudit.probe.faults.ProducerRestart`)."""
        nonlocal producer, produce, poll, txn_open, txn_starts
        assert restart is not None
        if settings.transactional:
            # The open transaction's writes reach the log; the commit never comes.
            producer.flush(conn.timeout * 3)
        producer.purge(in_queue=True, in_flight=True, blocking=False)
        producer.poll(0)  # serve the purged sends' reports: they become indeterminate
        dropped.append(producer)
        restart.dropped.set()
        restart.resume.wait(ProducerRestart.WAIT_S)
        producer = new_producer(conn, collector, **conf)
        produce, poll = producer.produce, producer.poll
        if settings.transactional:
            # Same transactional id: this fences the old session and aborts its open
            # transaction, whose sends are all sent again in the new session's first one.
            # Between a commit and the next begin nothing is open: nothing to send again
            # (the last transaction's start is stale then: re-sending it would duplicate a
            # committed transaction).
            _init_transactions(producer, conn, collector)
            producer.begin_transaction()
            if not txn_open:
                txn_starts = {p: ledger.next_seq_peek(p) for p in partitions}
            txn_open = True
            again = [(p, seq) for p in partitions
                     for seq in range(txn_starts[p], ledger.next_seq_peek(p))]
        else:
            again = [(p, seq) for p in partitions for seq in range(ledger.next_seq_peek(p))
                     if ledger.outcome(p, seq) is not SendOutcome.acked]
        for p, seq in again:
            while True:
                try:
                    produce(topic, encode_value(seq, global_seq, time_ns()), None, p,
                            headers=headers)
                    break
                except BufferError:
                    poll(0.005)
        log.add("note", f"new producer session re-sent {len(again)} message(s)")
        restart.done.set()

    while not interrupted.is_set():
        if restart is not None and restart.requested.is_set() and not restart.done.is_set():
            new_session()
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
        if second != send_second or global_seq == 0:
            if send_count:
                timeline.send(send_second, send_count)
            send_second, send_count = second, 0
            timeline.mark_sequences(second, {p: ledger.next_seq_peek(p) for p in partitions})
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
    dropped.clear()
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

