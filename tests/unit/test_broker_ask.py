"""Asking brokers on their own clients: the first answer is kept, a silent broker is said so
at the deadline without holding the caller, and every client is closed once its thread is
done. The questions here are plain functions on stand-in clients (what they ask of Kafka is
proven on the lab: tests/integration); the silent broker is a real socket."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kaudit.cluster import broker_ask
from kaudit.cluster.broker_ask import (
    Unanswered,
    ask_brokers,
    every_answer,
    first_answer,
    first_in_turn,
    unanswered,
)
from kaudit.cluster.model import Broker
from kaudit.waiting import Deadline
from tests.silent_broker import silent_broker

WAIT = 10.0
"""How long a test waits on a thread it expects to finish at once."""
ONE, TWO, THREE = Broker(1, "h1", 9092), Broker(2, "h2", 9092), Broker(3, "h3", 9092)


class _Client:
    """A stand-in for one broker's kafka-python client: it only records being closed."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.closed = threading.Event()

    def close(self) -> None:
        self.closed.set()


@pytest.fixture()
def clients(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[int, _Client]]:
    """Every client made, by broker id."""
    made: dict[int, _Client] = {}

    def client_of(broker: Broker, config: dict[str, Any], deadline: Deadline) -> _Client:
        made[broker.id] = _Client(broker)
        return made[broker.id]

    monkeypatch.setattr(broker_ask, "client_of", client_of)
    yield made


def test_the_first_answer_wins_and_a_broker_still_asking_does_not_hold_it(
        clients: dict[int, _Client]) -> None:
    release = threading.Event()

    def ask(client: _Client, broker: Broker, deadline: Deadline) -> str:
        if broker.id == 1:
            release.wait(WAIT)  # a broker slower than the others
        if broker.id == 3:
            raise RuntimeError("refused")
        return f"answer of {broker.id}"

    try:
        with ask_brokers([ONE, TWO, THREE], {}, Deadline(WAIT), ask, "test") as asks:
            ready = first_answer(asks, Deadline(WAIT))
            assert ready is not None and (ready.broker, ready.answer) == (TWO, "answer of 2")
            release.set()
            asks[0].done.wait(WAIT)
            # Broker 1 answered meanwhile; 2 was tried, and 3 failed.
            again = first_answer(asks, Deadline(WAIT), tried={2})
            assert again is not None and again.answer == "answer of 1"
            assert first_answer(asks, Deadline(WAIT), tried={1, 2}) is None
            assert unanswered(asks, Deadline(1))[2] == "broker 3: RuntimeError: refused"
    finally:
        release.set()


def test_a_silent_broker_is_said_so_at_the_deadline_and_holds_no_one() -> None:
    with silent_broker(7) as broker:
        started = time.monotonic()
        deadline = Deadline(1.0)
        with ask_brokers([broker], {}, deadline, lambda *_: "never", "test") as asks:
            assert first_answer(asks, deadline) is None
            whys = unanswered(asks, deadline)
            (each, answer), = every_answer(asks, deadline)
        assert time.monotonic() - started < 5
    assert answer is None
    assert whys == [each.why(deadline)] == [
        f"broker 7 (127.0.0.1:{broker.port}) gave no answer within 1s"]


def test_every_answer_waits_for_each_and_says_why_for_the_others(
        clients: dict[int, _Client]) -> None:
    def ask(client: _Client, broker: Broker, deadline: Deadline) -> list[int]:
        if broker.id == 2:
            raise TimeoutError
        return [broker.id]

    deadline = Deadline(WAIT)
    with ask_brokers([ONE, TWO], {}, deadline, ask, "test") as asks:
        said = [(each.broker.id, answer if answer is not None else each.why(deadline))
                for each, answer in every_answer(asks, deadline)]
    assert said == [(1, [1]), (2, "broker 2 (h2:9092) gave no answer within 10s")]


def test_refused_says_the_callers_own_words_and_leaves_the_rest_to_why_not_read(
        clients: dict[int, _Client]) -> None:
    class Old(Exception):
        pass

    def ask(client: _Client, broker: Broker, deadline: Deadline) -> str:
        raise Old("too old") if broker.id == 1 else ValueError("bad\nsecond line")

    def refused(exc: Exception, broker: Broker) -> str | None:
        return f"broker {broker.id} is {exc}" if isinstance(exc, Old) else None

    deadline = Deadline(WAIT)
    with ask_brokers([ONE, TWO], {}, deadline, ask, "test", refused) as asks:
        assert first_answer(asks, deadline) is None
        assert unanswered(asks, deadline) == ["broker 1 is too old",
                                              "broker 2: ValueError: bad"]


def test_each_client_is_closed_once_its_thread_is_done_and_the_caller_has_left(
        clients: dict[int, _Client]) -> None:
    release = threading.Event()

    def ask(client: _Client, broker: Broker, deadline: Deadline) -> str:
        if broker.id == 2:
            release.wait(WAIT)  # a frozen broker, until released
        return "yes"

    try:
        with ask_brokers([ONE, TWO], {}, Deadline(WAIT), ask, "test") as asks:
            asks[0].done.wait(WAIT)
            assert not clients[1].closed.is_set()  # the caller may still use it
        assert clients[1].closed.wait(WAIT)
        assert not clients[2].closed.is_set()  # its thread is still asking
        release.set()
        assert clients[2].closed.wait(WAIT)
    finally:
        release.set()


def test_in_turn_the_first_to_answer_is_kept_and_every_client_closed(
        clients: dict[int, _Client]) -> None:
    def ask(client: _Client, broker: Broker, deadline: Deadline) -> int:
        if broker.id == 1:
            raise RuntimeError("NOT_COORDINATOR")
        return broker.id

    assert first_in_turn([ONE, TWO, THREE], {}, Deadline(WAIT), ask) == 2
    assert sorted(clients) == [1, 2]  # three was never asked
    assert all(c.closed.is_set() for c in clients.values())  # closed before it returned
    with pytest.raises(Unanswered) as none:
        first_in_turn([ONE], {}, Deadline(WAIT), ask)
    assert str(none.value) == "broker 1: RuntimeError: NOT_COORDINATOR"


def test_in_turn_each_broker_has_its_turn_and_none_is_asked_past_the_deadline(
        clients: dict[int, _Client]) -> None:
    turns: list[float] = []

    def ask(client: _Client, broker: Broker, deadline: Deadline) -> int:
        turns.append(deadline.seconds)
        raise TimeoutError

    deadline = Deadline(0.2)
    with pytest.raises(Unanswered) as none:
        first_in_turn([ONE, TWO], {}, deadline, ask, turn=0.1)
    assert turns[0] <= 0.1
    assert none.value.whys[0] == f"broker 1 (h1:9092) gave no answer within {turns[0]:g}s"
    with pytest.raises(Unanswered) as late:
        first_in_turn([ONE, TWO], {}, Deadline(0.0), ask, turn=0.1)
    assert len(late.value.whys) == 1  # the deadline passed during broker 1's turn
