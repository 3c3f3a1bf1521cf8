"""How the probe's send loop ends a transaction when the commit fails: aborted when it can
be, and otherwise an unknown outcome, never taken as committed (the broker's side is
test_probe.py's fenced run)."""

from __future__ import annotations

import time
from typing import Any

from kaudit.cluster import client
from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.ledger import Ledger
from kaudit.probe.monitor import EventLog
from kaudit.probe.transactions import Ended, end_transaction


class Error:
    def __init__(self, text: str, *, abort: bool = False, retriable: bool = False,
                 fatal: bool = False) -> None:
        self.text, self.abort, self._retriable, self._fatal = text, abort, retriable, fatal

    def fatal(self) -> bool:
        return self._fatal

    def code(self) -> int:
        return -1

    def retriable(self) -> bool:
        return self._retriable

    def txn_requires_abort(self) -> bool:
        return self.abort

    def str(self) -> str:
        return self.text


class Producer:
    def __init__(self, *commits: Error, abort: Error | None = None) -> None:
        self.commits, self.abort, self.aborted = list(commits), abort, False

    def commit_transaction(self, _timeout: float) -> None:
        if self.commits:
            raise client.KafkaException(self.commits.pop(0))

    def abort_transaction(self, _timeout: float) -> None:
        if self.abort is not None:
            raise client.KafkaException(self.abort)
        self.aborted = True


def end(producer: Producer) -> tuple[Ended, Ledger, list[str]]:
    ledger = Ledger(1)
    for _ in range(3):
        ledger.acked(0, ledger.next_seq(0), 0)
    notes: list[str] = []
    ended = end_transaction(producer, ledger, {0: 1}, [0], False,
                            ConnectionSettings("127.0.0.1:1"), EventLog(time.monotonic()),
                            notes)
    return ended, ledger, notes


def aborted(ledger: Ledger) -> list[bool]:
    return [ledger.is_aborted(0, seq) for seq in range(3)]


def test_a_commit_that_requires_an_abort_is_aborted() -> None:
    producer: Any = Producer(Error("abortable", abort=True))
    ended, ledger, notes = end(producer)
    assert ended == Ended(True) and producer.aborted and aborted(ledger) == [False, True, True]
    assert notes == ["transaction commit failed: abortable"]


def test_a_commit_that_failed_otherwise_has_no_known_outcome() -> None:
    ended, ledger, notes = end(Producer(Error("not enough replicas")))
    assert ended == Ended(False) and aborted(ledger) == [False] * 3
    assert notes == ["transaction commit failed: not enough replicas"]


def test_a_fatal_commit_has_no_known_outcome_and_ends_the_producer() -> None:
    """Seen on the lab: a fenced producer's commit fails fatally, and the next
    begin_transaction is refused with a non-fatal _CONFLICT."""
    ended, ledger, _ = end(Producer(Error("fenced", fatal=True)))
    assert not ended.known and ended.fatal is not None and aborted(ledger) == [False] * 3


def test_an_abort_that_fails_after_a_failed_commit_leaves_the_outcome_unknown() -> None:
    ended, ledger, notes = end(Producer(Error("abortable", abort=True),
                                        abort=Error("fatal", fatal=True)))
    assert not ended.known and ended.fatal is not None and aborted(ledger) == [False] * 3
    assert notes == ["transaction commit failed: abortable", "transaction abort failed: fatal"]


def test_a_commit_that_timed_out_is_called_again_until_it_is_done() -> None:
    """Any other transaction call while a commit is under way is refused (_CONFLICT): a
    fenced probe once ended as an internal error so."""
    producer: Any = Producer(Error("timed out", retriable=True))
    ended, _, notes = end(producer)
    assert ended == Ended(True) and not producer.commits and notes == []
