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
hangs does, until the runner kills it.
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
from kaudit.probe.share.verify import Action, Event, Mix, Treatment, journal_line, treatment

POLL_S = 0.5


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


class ShareWorker:
    """The poll-treat-acknowledge-commit loop of one incarnation."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.worker, self.incarnation = int(cfg["worker"]), int(cfg["incarnation"])
        self.run, self.topic, self.group = cfg["run"], cfg["topic"], cfg["group"]
        self.mix = Mix(**cfg["mix"])
        self.hold_after: int | None = cfg.get("hold_after")
        self.conn = ConnectionSettings(cfg["bootstrap"], dict(cfg["properties"]),
                                       float(cfg["timeout"]))
        self.run_dir = Path(cfg["run_dir"])
        self.fd = os.open(self.run_dir / journal_name(self.worker, self.incarnation),
                          os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.stopping = False
        self.processed = 0

    def note(self, seq: int, delivery: int, action: Action) -> None:
        line = journal_line(Event(seq, self.worker, self.incarnation, delivery, action,
                                  int(time.time() * 1000)))
        os.write(self.fd, line.encode())

    def loop(self, consumer: Any) -> None:
        consumer.subscribe([self.topic])
        while not self.stopping:
            accepted: list[tuple[int, int, int]] = []
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
                else:
                    self.note(seq, delivery, Action.processed)
                    self.processed += 1
                    if self.hold_after is not None and self.processed >= self.hold_after \
                            and self.first_to_hold():
                        self.hold()
                    consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
                    accepted.append((msg.partition(), seq, delivery))
            if not accepted:
                continue
            results = consumer.commit_sync(self.conn.timeout)
            failed = {tp.partition for tp, error in results.items() if error is not None}
            for partition, seq, delivery in accepted:
                if partition not in failed:
                    self.note(seq, delivery, Action.accepted)

    def first_to_hold(self) -> bool:
        """Whether this worker is the one that holds (the first to get there: one run kills
        one worker, whichever the records went to)."""
        try:
            os.close(os.open(self.run_dir / "hold.claim", os.O_CREAT | os.O_EXCL, 0o600))
            return True
        except FileExistsError:
            self.hold_after = None
            return False

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
