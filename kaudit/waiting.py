"""Waiting for a condition until a deadline: the one way kaudit bounds a wait.

A loop that asks again and again (is the broker registered, has the ISR shrunk, is the
topic's leader known) keeps a :class:`Deadline` instead of its own ``time.monotonic()``
sums; :func:`wait_for` is the whole loop when there is nothing else to do meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Deadline:
    """A moment ``seconds`` from now on the monotonic clock."""

    def __init__(self, seconds: float, clock: Callable[[], float] | None = None) -> None:
        # Looked up at each call, not bound here: a test's fake clock patches time.monotonic.
        self._clock: Callable[[], float] = clock or (lambda: time.monotonic())
        self.seconds = seconds
        self.at = self._clock() + seconds

    def left(self) -> float:
        """Seconds until the deadline, never below 0."""
        return max(0.0, self.at - self._clock())

    def expired(self) -> bool:
        return self._clock() >= self.at

    def extend(self, seconds: float) -> None:
        """Move the deadline to ``seconds`` from now (an idle timeout after progress)."""
        self.at = self._clock() + seconds

    def slice(self, most: float) -> float:
        """A wait of at most ``most`` seconds that does not pass the deadline."""
        return min(most, self.left())


def wait_for(condition: Callable[[], T], within: float, *, every: float = 0.2,
             cancel: threading.Event | None = None) -> T | None:
    """Ask ``condition`` every ``every`` seconds until it returns something truthy (which
    is returned) or ``within`` seconds have passed, or ``cancel`` is set (None then)."""
    deadline = Deadline(within)
    while True:
        value = condition()
        if value:
            return value
        if deadline.expired() or (cancel is not None and cancel.is_set()):
            return None
        pause = deadline.slice(every)
        if cancel is not None:
            cancel.wait(pause)
        else:
            time.sleep(pause)
