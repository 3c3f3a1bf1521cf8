"""The canary's loop: send sequenced records at a steady rate, read them back, keep the books.

One thread does the sending and the reading (librdkafka does the I/O in its own threads):
each turn sends what the rate allows, serves delivery reports, reads a batch, and about once
a second settles the books (losses, absences), looks at the topic (new partitions, leaders,
ISR) and the log start offsets that tell a deletion from a truncation. Faults, when asked
for, come from the probe's one fault model and are injected beside the loop.

The loop never ends on its own for a cluster that stops answering: availability goes to 0,
nothing is declared lost for lack of an answer, and it goes on when the cluster is back.
It ends on SIGTERM / Ctrl-C or after ``duration``; then it waits for the last answers and
reads until every acknowledged record is read or declared, within ``drain_s``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kaudit.canary.book import PartitionBook
from kaudit.canary.layout import canary_layout, layout_warnings
from kaudit.canary.result import CanaryResult, result_of
from kaudit.canary.state import EVENTS_KEPT, CanarySettings, CanaryState
from kaudit.canary.transactions import Transactions
from kaudit.canary.watcher import HOUSEKEEPING_S, Watcher
from kaudit.cluster import client
from kaudit.cluster.client import AdminSession, ErrorCollector, new_consumer, new_producer
from kaudit.cluster.topics import (
    TopicSpec,
    create_probe_topic,
    partition_roles,
    topic_layout,
)
from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.faults.injector import FaultInjector, ReaderStall, Targets, start_injector
from kaudit.probe.faults.lab import LabControl, lab_for
from kaudit.probe.faults.registry import fault_at_reached
from kaudit.probe.ledger import SendOutcome, classify_error
from kaudit.probe.payload import decode, encoder
from kaudit.probe.transactions import init_transactions
from kaudit.waiting import Deadline

TXN_CALL_S = 1.0
"""How long a commit or abort may hold the loop; one that times out is tried again."""
TICK_S = 0.01
"""The loop's shortest wait for records to read: the sends due meanwhile go out together.
(A wait for the sub-millisecond rest of a send interval is 0 ms to librdkafka: the loop
spun on it, ~0.5 ms of CPU a record at 500 records/s.)"""


class Canary:
    """One canary run: its clients and its loop, around the state its threads share."""

    def __init__(self, conn: ConnectionSettings, settings: CanarySettings,
                 session: AdminSession, stop: threading.Event,
                 say: Callable[[str], None]) -> None:
        self.conn, self.settings, self.session, self.stop = conn, settings, session, stop
        self.say = say
        self.state = CanaryState(settings)
        self.next_seq: dict[int, int] = {}
        self._faults_told = 0
        self.watcher = Watcher(self.state, conn)
        self.stall = ReaderStall()
        self.txn: Transactions | None = None
        producer = settings.producer
        self._ordered = producer.acks != "0" and (producer.idempotence or producer.transactional)
        """Each partition is written in sequence order (an idempotent producer)."""
        self._paused = False

    # --- setup -----------------------------------------------------------------------

    def prepare_topic(self) -> list[int]:
        """The canary topic's partitions, creating it (:func:`canary_layout`) when it does
        not exist; one that exists is used as it is, with a warning for each way it
        falls short of the canary's own."""
        _, _, brokers = self.session.describe_identity()
        found = topic_layout(self.session, self.settings.topic)
        if found is not None:
            for line in layout_warnings(self.settings.topic, found, [b.id for b in brokers]):
                self.say(line)
            return sorted(found.leaders)
        partitions, rf, min_isr = canary_layout(len(brokers))
        create_probe_topic(self.session, TopicSpec(self.settings.topic, partitions, rf,
                                                   min_isr, False))
        self.state.created = True
        self.say(f"created {self.settings.topic}: {partitions} partition(s), "
                 f"replication factor {rf}, min.insync.replicas {min_isr}")
        return list(range(partitions))

    def _add_partitions(self, partitions: list[int], consumer: Any, at: str) -> None:
        new = [p for p in partitions if p not in self.state.books]
        if not new:
            return
        offsets = self.session.list_offsets(self.settings.topic, new, "latest") \
            if at == "latest" else dict.fromkeys(new, 0)
        s = self.settings
        with self.state.lock:
            for p in new:
                self.state.books[p] = PartitionBook(p, s.window_s, s.late_after_s)
                self.state.positions[p] = offsets[p]
                self.next_seq[p] = 0
        consumer.incremental_assign([client.TopicPartition(s.topic, p, offsets[p])
                                     for p in new])
        if at != "latest":
            self.state.add_event({"kind": "partitions-added", "partitions": new})

    # --- the loop --------------------------------------------------------------------

    def run(self) -> None:
        s, p = self.settings, self.settings.producer
        lab = lab_for(p.faults, p.lab_state_dir)  # no lab is exit 2 before any topic
        partitions = self.prepare_topic()
        collector = ErrorCollector()
        conf = p.producer_config() | {"on_delivery": self._on_delivery}
        if p.transactional:
            conf["transactional.id"] = f"kaudit-canary-{self.state.run_id.hex()}"
        self._restart_producer: Callable[[], Any] = \
            lambda: self._new_producer(conf, collector)
        producer = self._restart_producer()
        consumer = new_consumer(self.conn, None, **{
            "group.id": f"kaudit-canary-{self.state.run_id.hex()}", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "fetch.wait.max.ms": 50,
            "isolation.level": "read_committed"})
        if p.transactional:
            self.txn = Transactions(producer, self._restart_producer,
                                    p.txn_size, p.abort_ratio, TXN_CALL_S,
                                    self._transaction_ended, self.state.notes.append)
        if s.events is not None:
            self.state.events_file = s.events.open("a", encoding="utf-8")
        injector = self._injector(lab) if p.faults else None
        try:
            self._add_partitions(partitions, consumer, "latest")
            self.watcher.start()
            self._loop(producer, consumer)
            if self.txn is not None:
                self.txn.turn(time.monotonic(), last=True)
                producer = self.txn.producer
            if injector is not None:
                injector.cancel()  # a fault still in force ends now: a stalled reader too
            self._drain(producer, consumer)
        finally:
            self.watcher.done.set()
            if injector is not None:
                self.state.notes.extend(injector.finish(p.fault_duration + 150))
            consumer.close()
            self.state.flush_late()
            if self.state.events_file is not None:
                self.state.events_file.close()

    def _new_producer(self, conf: dict[str, Any], collector: ErrorCollector) -> Any:
        producer = new_producer(self.conn, collector, **conf)
        if "transactional.id" in conf:
            init_transactions(producer, self.conn, collector)
        return producer

    def _serve(self, producer: Any, timeout: float = 0) -> Any:
        """Serve the delivery reports; returns the producer to go on with. librdkafka raises
        a fatal error from poll, not through error_cb: a new producer takes over."""
        if self.txn is not None:
            self.txn.serve(timeout)
            return self.txn.producer
        err = client.serve_reports(producer, timeout)
        if err is None:
            return producer
        self.state.notes.append(f"producer failed: {err.str()}; a new one took over")
        return self._restart_producer()

    def _transaction_ended(self, members: list[tuple[int, int]], aborted: bool) -> None:
        """An aborted transaction's records are never to be read; those of a commit with
        no known outcome are indeterminate."""
        now, found = time.monotonic(), []
        with self.state.lock:
            for part, seq in members:
                found += self.state.books[part].withdrawn(seq, now, aborted)
        for event in found:
            self.state.add_event(event)

    def _loop(self, producer: Any, consumer: Any) -> None:
        s = self.settings
        rate = s.producer.rate or 100.0
        encode = encoder(self.state.run_id, s.producer.message_size)
        interval, next_send = 1.0 / rate, time.monotonic()
        next_house = 0.0
        end = self.state.started + s.duration if s.duration else float("inf")
        sent = 0
        while not self.stop.is_set() and time.monotonic() < end:
            now = time.monotonic()
            if self.txn is not None:
                self.txn.turn(now)
                producer = self.txn.producer  # a new one after a fatal error
            while next_send <= now:
                order = sorted(self.state.books)
                part = order[sent % len(order)]
                # No send while a commit is pending: the record is skipped, not queued.
                if self.txn is None or self.txn.can_send(now):
                    producer = self.txn.producer if self.txn is not None else producer
                    self._send(producer, encode, part, sent)
                sent += 1
                next_send += interval
            producer = self._serve(producer)
            self._hold_reader(consumer)
            self._read(consumer, timeout=min(0.05, max(TICK_S, next_send - time.monotonic())))
            if now >= next_house:
                next_house = now + HOUSEKEEPING_S
                self._settle(now)
                if self.watcher.grown:
                    grown, self.watcher.grown = self.watcher.grown, []
                    # A partition added while the canary runs is read from its start.
                    self._add_partitions(grown, consumer, "earliest")

    def _hold_reader(self, consumer: Any) -> None:
        """Pause or resume the reader as ``stall-reader`` asks (its position is kept)."""
        held = self.stall.held.is_set()
        if held != self._paused:
            parts = [client.TopicPartition(self.settings.topic, p)
                     for p in sorted(self.state.books)]
            (consumer.pause if held else consumer.resume)(parts)
            self._paused = held

    def _send(self, producer: Any, encode: Callable[[int, int, int], bytes], part: int,
              global_seq: int) -> None:
        seq = self.next_seq[part]
        self.next_seq[part] = seq + 1
        now = time.monotonic()
        with self.state.lock:
            self.state.books[part].sent(seq, now)
            self.state.timeline.add("sent", now)
        value = encode(seq, global_seq, time.time_ns())
        try:
            producer.produce(self.settings.topic, value, None, part)
            if self.txn is not None:
                self.txn.sent(part, seq)
        except BufferError:
            self._answered(part, seq, "_QUEUE_FULL", None)
        except client.KafkaException as exc:
            self._answered(part, seq, exc.args[0].name() if exc.args else "_UNKNOWN", None)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        record = decode(msg.value())  # the record says its own sequence
        if record is not None:
            self._answered(msg.partition(), record.partition_seq,
                           err.name() if err is not None else None,
                           msg.offset() if err is None else None, _epoch(msg))

    def _answered(self, part: int, seq: int, error: str | None, offset: int | None,
                  epoch: int | None = None) -> None:
        now, state = time.monotonic(), self.state
        with state.lock:
            book = state.books[part]
            sent = book.open.get(seq)
            placed = offset is not None and offset >= 0
            # An idempotent producer's ack without an offset is a retry the broker already
            # had: acknowledged. With acks=0 there is no answer at all: nothing is promised.
            if error is None and (placed or self._ordered):
                book.acked(seq, offset if placed else None, now, epoch)
                state.health.last_ack = now
                state.timeline.add("acked", now)
                if sent is not None:
                    state.ack_latency(now - sent.sent_at)
                    state.timeline.ack_latency(now, now - sent.sent_at)
            else:
                indeterminate = classify_error(error or "_UNKNOWN") \
                    is SendOutcome.indeterminate
                book.not_acked(seq, now, indeterminate)
                state.timeline.add("indeterminate" if indeterminate else "failed", now)

    def _read(self, consumer: Any, timeout: float) -> None:
        messages = consumer.consume(num_messages=2000, timeout=timeout)
        if not messages:
            return
        now, state = time.monotonic(), self.state
        found: list[dict[str, Any]] = []
        with state.lock:
            for msg in messages:
                if msg.error() is not None:
                    continue
                part, offset = msg.partition(), msg.offset()
                state.positions[part] = max(state.positions.get(part, 0), offset + 1)
                record = decode(msg.value())
                if record is None or record.run_id != state.run_id or part not in state.books:
                    continue  # foreign: another run's, or not a canary record
                found += state.books[part].read(record.partition_seq, offset, now, _epoch(msg))
                state.health.last_read, state.health.last_read_wall = now, time.time()
                state.e2e_latency(max(0.0, time.time() - record.sent_ns / 1e9))
        for event in found:
            state.add_event(event)

    def _settle(self, now: float) -> None:
        """Declare what the reader had passed when the watcher last read the log starts,
        settle what the window has, and pass faults and heals on to ``--events``."""
        found: list[dict[str, Any]] = []
        # Faults and heals go to --events too, in order with the anomalies they explain.
        for fault in self.state.log.events()[self._faults_told:]:
            self._faults_told += 1
            found.append({"kind": fault.kind, "detail": fault.detail}
                         | ({"partition": fault.partition} if fault.partition is not None
                            else {}))
        seen, self.watcher.seen = self.watcher.seen, None
        with self.state.lock:
            for part, book in self.state.books.items():
                if seen is not None and part in seen.starts:
                    found += book.passed(seen.positions.get(part, 0), seen.starts[part], now)
                if seen is not None and part in seen.ends:
                    found += book.past_end(seen.ends[part], now)
                found += book.expire(now)
        for event in found:
            self.state.add_event(event)
        self.state.flush_late(time.time())

    def _drain(self, producer: Any, consumer: Any) -> None:
        """Wait for the last answers, then read until every acknowledged record is read or
        declared, within ``drain_s``."""
        deadline = Deadline(self.settings.drain_s)
        self.watcher.draining.set()
        while len(producer) and not deadline.expired():
            producer = self._serve(producer, 0.1)
            self._read(consumer, 0)
        while not deadline.expired():
            self._hold_reader(consumer)
            self._read(consumer, 0.2)
            self._settle(time.monotonic())
            if not any(b.unsettled()["acked_unread"] for b in self.state.books.values()):
                break
        self._serve(producer)

    # --- faults and events -------------------------------------------------------------

    def _injector(self, lab: LabControl | None) -> FaultInjector:
        p, duration = self.settings.producer, self.settings.duration

        def trigger() -> bool:
            # As probe's faults do, wait for partition 0's first acknowledged write too:
            # on a slow cluster a new topic can take seconds to take writes, and a fault
            # aimed at partition 0 before then meets a leader with nothing to lose.
            elapsed = time.monotonic() - self.state.started
            book = self.state.books.get(0)
            return fault_at_reached(p.fault_at, elapsed / duration if duration else 0.0,
                                    elapsed) and book is not None and book.counts["acked"] > 0

        return start_injector(p, lab, trigger, self.state.log,
                              Targets(lambda: partition_roles(self.session, self.settings.topic),
                                      reader=self.stall),
                              self.session, self.conn.timeout)


def _epoch(msg: Any) -> int | None:
    """The leader epoch a message was written in, when librdkafka says (-1 or None: not)."""
    epoch = msg.leader_epoch()
    return int(epoch) if epoch is not None and epoch >= 0 else None


__all__ = ["EVENTS_KEPT", "Canary", "CanaryResult", "CanarySettings", "result_of"]
