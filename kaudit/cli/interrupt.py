"""Ctrl-C for long commands: the first asks the work to wind down, a second aborts.

SIGTERM is taken the same way: it is what a CI job's cancel, ``kill`` or a container stop
sends, and dying at once would leave a probe's topic, a consumer group and the report
behind.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


@contextmanager
def graceful_interrupt(message: str) -> Iterator[threading.Event]:
    """Set the yielded event on the first Ctrl-C or SIGTERM (printing ``message``); raise
    KeyboardInterrupt on the second, so a stuck clean-up can still be abandoned."""
    interrupted = threading.Event()

    def on_signal(_sig: int, _frame: FrameType | None) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt
        interrupted.set()
        print(message, file=sys.stderr)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield interrupted
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """In the block, SIGTERM raises KeyboardInterrupt as Ctrl-C does: for a command whose
    clean-up on an interrupt is an except clause (``lab up`` stops the nodes it started),
    not a wind-down. Python lets only the main thread set a handler: elsewhere (a test's
    runner thread) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(_sig: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
