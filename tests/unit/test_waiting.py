"""The one wait helper: a condition asked until it holds, a deadline, or a cancel."""

from __future__ import annotations

import threading

from kaudit.waiting import Deadline, wait_for


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_deadline_counts_down_and_never_goes_below_zero() -> None:
    clock = FakeClock()
    deadline = Deadline(5, clock)
    assert deadline.left() == 5 and not deadline.expired()
    clock.now += 3
    assert deadline.left() == 2 and deadline.slice(0.25) == 0.25
    clock.now += 4
    assert deadline.left() == 0 and deadline.expired() and deadline.slice(0.25) == 0
    deadline.extend(1)
    assert deadline.left() == 1 and not deadline.expired()


def test_wait_for_returns_the_first_truthy_answer() -> None:
    answers = iter([None, 0, "leader 2"])
    assert wait_for(lambda: next(answers), 5, every=0.001) == "leader 2"


def test_wait_for_gives_up_at_the_deadline_and_asks_once_more_at_it() -> None:
    asked = []
    assert wait_for(lambda: asked.append(1), 0.05, every=0.01) is None
    assert len(asked) >= 2


def test_wait_for_stops_when_cancelled() -> None:
    cancel = threading.Event()
    cancel.set()
    assert wait_for(lambda: False, 60, cancel=cancel) is None
