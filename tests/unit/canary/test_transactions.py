"""The canary's transactions against a recording producer: when they end, how, and what
the books are told (the broker's side is the integration test's)."""

from __future__ import annotations

from typing import Any

import pytest

from kaudit.canary.transactions import OPEN_AT_MOST_S, Transactions
from kaudit.cluster import client
from tests.unit.canary.sample import a_canary_run


class Error:
    def __init__(self, *, retriable: bool = False, abort: bool = False) -> None:
        self._retriable, self._abort = retriable, abort

    def retriable(self) -> bool:
        return self._retriable

    def fatal(self) -> bool:
        return not self._retriable and not self._abort

    def txn_requires_abort(self) -> bool:
        return self._abort

    def code(self) -> int:
        return -1  # not _FATAL: fatal() says it

    def str(self) -> str:
        return "broken"


class Producer:
    def __init__(self, fail_commits: list[Error] | None = None,
                 fail_polls: list[Error] | None = None) -> None:
        self.calls: list[str] = []
        self.fail_commits = fail_commits or []
        self.fail_polls = fail_polls or []
        """Errors poll raises, one per call (librdkafka raises a fatal error from poll)."""

    def __getattr__(self, name: str) -> Any:
        def call(*_args: Any) -> None:
            self.calls.append(name)
            if name == "commit_transaction" and self.fail_commits:
                raise client.KafkaException(self.fail_commits.pop(0))
            if name == "poll" and self.fail_polls:
                raise client.KafkaException(self.fail_polls.pop(0))
        return call


def transactions(producer: Producer, size: int = 3, ratio: float = 0.0
                 ) -> tuple[Transactions, list[tuple[list[tuple[int, int]], bool]], list[str]]:
    settled: list[tuple[list[tuple[int, int]], bool]] = []
    notes: list[str] = []
    txn = Transactions(producer, lambda: Producer(), size, ratio, 1.0,
                       lambda members, aborted: settled.append((members, aborted)),
                       notes.append)
    return txn, settled, notes


def send(txn: Transactions, seqs: range, now: float = 0.0) -> None:
    for seq in seqs:
        assert txn.can_send(now)
        txn.sent(0, seq)


def test_a_transaction_ends_when_full_or_a_second_old() -> None:
    producer = Producer()
    txn, settled, _ = transactions(producer, size=3)
    send(txn, range(2))
    txn.turn(0.5)
    assert producer.calls == ["begin_transaction"]  # neither full nor old
    send(txn, range(2, 3))
    txn.turn(0.6)
    assert producer.calls[-2:] == ["commit_transaction", "poll"] and settled == []
    send(txn, range(3, 4), now=1.0)
    txn.turn(1.0 + OPEN_AT_MOST_S)
    assert producer.calls.count("commit_transaction") == 2 and txn.ended == 2


def test_every_nth_transaction_is_aborted_on_purpose_and_the_books_are_told() -> None:
    producer = Producer()
    txn, settled, _ = transactions(producer, size=1, ratio=0.5)
    for seq in range(4):
        send(txn, range(seq, seq + 1))
        txn.turn(0.0)
    assert [s for s in settled] == [([(0, 1)], True), ([(0, 3)], True)]
    assert producer.calls.count("abort_transaction") == 2
    assert producer.calls.count("flush") == 2  # the aborted records reach the log first


def test_a_commit_that_times_out_is_retried_and_nothing_is_sent_meanwhile() -> None:
    producer = Producer([Error(retriable=True)])
    txn, settled, notes = transactions(producer, size=1)
    send(txn, range(1))
    txn.turn(0.0)
    assert txn.committing and not txn.can_send(0.1)
    txn.turn(0.2)
    assert not txn.committing and txn.can_send(0.3) and settled == [] and notes == []


@pytest.mark.parametrize(("error", "aborted"), [(Error(abort=True), True), (Error(), False)])
def test_a_failed_commit_is_aborted_or_left_indeterminate(error: Error, aborted: bool
                                                          ) -> None:
    producer = Producer([error])
    txn, settled, notes = transactions(producer, size=1)
    send(txn, range(2))
    txn.turn(0.0)
    assert settled == [([(0, 0), (0, 1)], aborted)]
    assert notes[0].startswith("transaction commit failed: broken")
    # A fatal error: the session is over, a new producer takes over.
    assert (txn.producer is producer) == aborted


def test_a_session_that_cannot_be_restarted_yet_sends_nothing_and_is_tried_again() -> None:
    restarts: list[int] = []

    def restart() -> Producer:
        restarts.append(1)
        if len(restarts) == 1:
            raise RuntimeError("the cluster is out of reach")
        return Producer()

    producer = Producer([Error()])  # a fatal error
    settled: list[tuple[list[tuple[int, int]], bool]] = []
    notes: list[str] = []
    txn = Transactions(producer, restart, 1, 0.0, 1.0,
                       lambda members, aborted: settled.append((members, aborted)),
                       notes.append)
    send(txn, range(1))
    txn.turn(0.0)
    assert settled == [([(0, 0)], False)]  # outcome unknown: indeterminate
    assert txn.broken and txn.producer is producer and "out of reach" in notes[-1]
    assert txn.can_send(1.0)  # the second try starts a new session
    assert not txn.broken and txn.producer is not producer and len(restarts) == 2


def test_an_abort_that_times_out_is_tried_again_and_counted_once() -> None:
    class SlowAbort(Producer):
        def __init__(self) -> None:
            super().__init__()
            self.aborts = 0

        def abort_transaction(self, *_args: Any) -> None:
            self.aborts += 1
            if self.aborts == 1:
                raise client.KafkaException(Error(retriable=True))

    producer = SlowAbort()
    txn, settled, _ = transactions(producer, size=1, ratio=1.0)
    send(txn, range(1))
    txn.turn(0.0)
    assert settled == [] and not txn.can_send(0.1)  # the abort is under way
    txn.turn(0.2)
    assert settled == [([(0, 0)], True)] and txn.aborted_on_purpose == 1


Settled = list[tuple[list[tuple[int, int]], bool]]


def restarting(producer: Producer, size: int = 1
               ) -> tuple[Transactions, Settled, list[str], list[Producer]]:
    started: list[Producer] = []

    def restart() -> Producer:
        started.append(Producer())
        return started[-1]

    settled: Settled = []
    notes: list[str] = []
    txn = Transactions(producer, restart, size, 0.0, 1.0,
                       lambda members, aborted: settled.append((members, aborted)),
                       notes.append)
    return txn, settled, notes, started


def test_a_fatal_commit_raised_again_by_poll_starts_one_new_session() -> None:
    """librdkafka raises a commit's fatal error from the next poll too (seen in CI: the
    canary ended with INVALID_TXN_STATE as an internal error)."""
    fatal = Error()
    txn, settled, notes, started = restarting(Producer([fatal], fail_polls=[fatal]))
    send(txn, range(2))
    txn.turn(0.0)
    assert settled == [([(0, 0), (0, 1)], False)]  # no known outcome: indeterminate
    assert len(started) == 1 and txn.producer is started[0] and not txn.broken
    assert notes == ["transaction commit failed: broken"]


def test_a_fatal_error_raised_by_poll_ends_the_session_and_its_open_transaction() -> None:
    txn, settled, notes, started = restarting(Producer(fail_polls=[Error()]), size=5)
    send(txn, range(3))
    txn.serve()
    assert settled == [([(0, 0), (0, 1), (0, 2)], False)]
    assert notes == ["transactional producer failed: broken"]
    assert len(started) == 1 and txn.producer is started[0]
    assert txn.can_send(0.1) and txn.producer.calls == ["begin_transaction"]


def test_a_fatal_error_after_a_commit_leaves_the_commit_committed() -> None:
    producer = Producer(fail_polls=[Error()])
    txn, settled, notes, started = restarting(producer)
    send(txn, range(1))
    txn.turn(0.0)  # committed; the poll after it raises a fatal error
    assert settled == [] and txn.ended == 1
    assert notes == ["transactional producer failed: broken"] and len(started) == 1


def test_poll_raising_anything_but_a_fatal_error_is_a_bug_not_an_outcome() -> None:
    txn, settled, _, started = restarting(Producer(fail_polls=[Error(retriable=True)]))
    send(txn, range(1))
    with pytest.raises(client.KafkaException):
        txn.serve()
    assert settled == [] and started == []


def test_a_canary_without_transactions_replaces_a_producer_that_failed_fatally() -> None:
    canary = a_canary_run()
    failed, fresh = Producer(fail_polls=[Error()]), Producer()
    canary._restart_producer = lambda: fresh
    assert canary._serve(fresh) is fresh and fresh.calls == ["poll"]
    assert canary._serve(failed) is fresh
    assert canary.state.notes == ["producer failed: broken; a new one took over"]
    with pytest.raises(client.KafkaException):  # anything else from poll is a bug
        canary._serve(Producer(fail_polls=[Error(retriable=True)]))
