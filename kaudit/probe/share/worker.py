"""One share group member of ``kaudit probe share`` (``python -m`` this module).

It reads its settings as one JSON object on stdin (the connection's secrets never reach
argv or the environment), joins the share group, and treats every record as its sequence
number says (:func:`~kaudit.probe.share.verify.treatment`): processes and accepts it,
releases it (on its first delivery only, or always for a poison record) or rejects it. Each
step is a journal line written before the acknowledgement it announces, straight to the
file (a SIGKILL loses nothing journaled); an acceptance is journaled again once the commit
that carries it succeeded. Until SIGTERM.

With ``hold_after``, the first worker of the run to have processed that many records stops
acknowledging and says so in a ``.holding`` file: it holds their locks, as a member that
hangs does, until the runner kills it. With ``slow_after``, the first worker to have
processed that many records holds the last one past its lock, as a slow member does: it
finishes and commits the rest of its batch first (so that only that record's lock runs
out), waits until another worker has processed the record too (the broker delivered it
again when the lock expired), then acknowledges it, too late. The other worker answers for
its delivery only once that late acknowledgement has met its answer, as a member still
processing the record would: which of the two acknowledgements reaches the broker first is
then fixed, and so is what the broker says to the late one.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kaudit.cluster.client import AcknowledgeType, new_share_consumer
from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.share.verify import (
    Action,
    Event,
    Mix,
    Treatment,
    journal_line,
    parse_event,
    treatment,
)
from kaudit.waiting import wait_for

POLL_S = 0.5
SLOW_LOOK_S = 0.2
"""How often a worker looks in the other journals for what it waits on."""
PAST_LOCK_S = 10.0
"""The least time past its lock a slow worker waits for another worker to process its
record again. The record's partition may be read by no other worker (each worker can be
given partitions of its own): then the record comes back to the slow worker itself, once
it gives up and polls again."""
HELD_NAME = "slow.held"
"""The run's file that names the record the slow worker holds (its sequence number)."""


def journal_name(worker: int, incarnation: int) -> str:
    return f"w{worker}-i{incarnation}.journal"


def holding_name(worker: int, incarnation: int) -> str:
    return f"w{worker}-i{incarnation}.holding"


def record_value(run: str, seq: int) -> bytes:
    """A probe record's value: the run it belongs to and its sequence number."""
    return f"kaudit-share {run} {seq}".encode()


def parse_value(value: bytes | None, run: str) -> int | None:
    """The sequence number of one of this run's records, else None."""
    parts = (value or b"").split()
    if len(parts) != 3 or parts[0] != b"kaudit-share" or parts[1].decode(errors="replace") != run:
        return None
    try:
        return int(parts[2])
    except ValueError:
        return None


def error_name(error: Any) -> str:
    """A commit's per-partition error by Kafka's (or librdkafka's) name."""
    inner = error.args[0] if isinstance(error, Exception) and error.args else error
    return str(inner.name()) if hasattr(inner, "name") else type(error).__name__


class ShareWorker:
    """The poll-treat-acknowledge-commit loop of one incarnation."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.worker, self.incarnation = int(cfg["worker"]), int(cfg["incarnation"])
        self.run, self.topic, self.group = cfg["run"], cfg["topic"], cfg["group"]
        self.mix = Mix(**cfg["mix"])
        self.hold_after: int | None = cfg.get("hold_after")
        self.slow_after: int | None = cfg.get("slow_after")
        self.slow_max_s = float(cfg.get("slow_max_s", 120.0))
        self.lock_s = float(cfg.get("lock_ms", 30000)) / 1000
        self.processing_s = float(cfg.get("processing_ms", 0)) / 1000
        self.conn = ConnectionSettings(cfg["bootstrap"], dict(cfg["properties"]),
                                       float(cfg["timeout"]))
        self.run_dir = Path(cfg["run_dir"])
        self.fd = os.open(self.run_dir / journal_name(self.worker, self.incarnation),
                          os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.stopping = False
        self.processed = 0

    def note(self, seq: int, delivery: int, action: Action, error: str = "") -> None:
        line = journal_line(Event(seq, self.worker, self.incarnation, delivery, action,
                                  int(time.time() * 1000), error))
        os.write(self.fd, line.encode())

    def loop(self, consumer: Any) -> None:
        consumer.subscribe([self.topic])
        while not self.stopping:
            accepted: list[tuple[int, int, int]] = []
            held: tuple[Any, int, int] | None = None
            for msg in consumer.poll(POLL_S):
                if msg.error() is not None:
                    continue
                seq = parse_value(msg.value(), self.run)
                if seq is None:  # not this run's: nothing to account for
                    consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
                    continue
                delivery = msg.delivery_count() or 1
                kind = treatment(seq, self.mix)
                if kind == Treatment.reject:
                    self.note(seq, delivery, Action.rejected)
                    consumer.acknowledge(msg, AcknowledgeType.REJECT)
                elif kind == Treatment.poison or (kind == Treatment.release and delivery == 1):
                    self.note(seq, delivery, Action.released)
                    consumer.acknowledge(msg, AcknowledgeType.RELEASE)
                elif self.process(seq, delivery) and held is None:
                    held = (msg, seq, delivery)  # acknowledged after the batch, too late
                else:
                    consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
                    accepted.append((msg.partition(), seq, delivery))
            self.commit(consumer, accepted)
            if held is not None:
                self.acknowledge_late(consumer, *held)

    def process(self, seq: int, delivery: int) -> bool:
        """Process one delivery of record ``seq``; whether it is the one this worker holds
        past its lock (``slow_after``). Where ``hold_after`` is reached it holds every lock
        until killed; where it is the redelivery of the record the slow worker holds, it
        waits for that one's late acknowledgement to be answered first."""
        self.note(seq, delivery, Action.processed)
        self.processed += 1
        if self.processing_s:
            time.sleep(self.processing_s)  # the work a real consumer does
        if self.hold_after is not None and self.processed >= self.hold_after:
            self.hold_after = None
            if self.first_to("hold"):
                self.hold()
        if self.slow_after is not None and self.processed >= self.slow_after:
            self.slow_after = None
            if self.first_to("slow"):
                (self.run_dir / HELD_NAME).write_text(str(seq))
                return True
        if delivery > 1 and self.held_elsewhere() == seq:
            self.await_late_answer(seq, delivery)
        return False

    def acknowledge_late(self, consumer: Any, msg: Any, seq: int, delivery: int) -> None:
        """Hold ``msg`` past its lock, then acknowledge it and commit."""
        self.outlive_lock(seq, delivery)
        consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
        self.commit(consumer, [(msg.partition(), seq, delivery)])

    def commit(self, consumer: Any, accepted: list[tuple[int, int, int]]) -> None:
        """Commit the batch's acknowledgements; journal each ACCEPT as committed, or as
        failed with the error its partition answered."""
        if not accepted:
            return
        results = consumer.commit_sync(self.conn.timeout)
        failed = {tp.partition: error_name(error) for tp, error in results.items()
                  if error is not None}
        for partition, seq, delivery in accepted:
            if partition in failed:
                self.note(seq, delivery, Action.ack_failed, failed[partition])
            else:
                self.note(seq, delivery, Action.accepted)

    def first_to(self, what: str) -> bool:
        """Whether this worker is the run's one to ``what`` (hold, slow): the first to get
        there, whichever the records went to."""
        try:
            os.close(os.open(self.run_dir / f"{what}.claim", os.O_CREAT | os.O_EXCL, 0o600))
            return True
        except FileExistsError:
            return False

    def outlive_lock(self, seq: int, delivery: int) -> None:
        """Hold record ``seq`` until another worker has processed a later delivery of it
        (its lock expired and the broker delivered it again), at most its lock and as long
        again (:data:`PAST_LOCK_S` at least, ``slow_max_s`` at most); journal the hold. (A
        delivery before this one does not count: on a slow host the other worker's own
        lock can expire first, and it has processed the record already.)"""
        at_most = min(self.slow_max_s, self.lock_s + max(self.lock_s, PAST_LOCK_S))
        self.wait_in_journals(lambda e: e.seq == seq and e.action == Action.processed
                              and e.delivery_count > delivery, at_most)
        self.note(seq, delivery, Action.held)

    def held_elsewhere(self) -> int | None:
        """The record the run's slow worker holds, if another worker holds one."""
        try:
            return int((self.run_dir / HELD_NAME).read_text())
        except (OSError, ValueError):  # none held (yet)
            return None

    def await_late_answer(self, seq: int, delivery: int) -> None:
        """Wait until the slow worker's late acknowledgement of an earlier delivery of
        ``seq`` has met its answer (committed or failed), at most half this delivery's
        lock: past that, this worker's own lock would run out too."""
        self.wait_in_journals(lambda e: e.seq == seq and e.delivery_count < delivery
                              and e.action in (Action.accepted, Action.ack_failed),
                              self.lock_s / 2)

    def wait_in_journals(self, found: Callable[[Event], bool], at_most_s: float) -> None:
        """Wait until another incarnation's journal has a line ``found`` accepts, at most
        ``at_most_s`` (or until SIGTERM)."""
        mine = journal_name(self.worker, self.incarnation)
        wait_for(lambda: self.stopping or any(
            e is not None and found(e)
            for path in self.run_dir.glob("*.journal") if path.name != mine
            for e in map(parse_event, path.read_text().splitlines())),
            at_most_s, every=SLOW_LOOK_S)

    def hold(self) -> None:
        """Hold every lock it has until killed: say so, then wait."""
        (self.run_dir / holding_name(self.worker, self.incarnation)).touch()
        while True:
            time.sleep(3600)


def main(read: Callable[[], str] = sys.stdin.read) -> int:
    """Read the settings from stdin, run until SIGTERM."""
    worker = ShareWorker(json.loads(read()))
    signal.signal(signal.SIGTERM, lambda *_: setattr(worker, "stopping", True))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner handles Ctrl-C
    consumer = new_share_consumer(worker.conn, worker.group)
    try:
        worker.loop(consumer)
    finally:
        consumer.close()
        os.close(worker.fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
