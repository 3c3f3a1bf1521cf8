"""Ctrl-C for long commands: the first asks the work to wind down, a second aborts."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


@contextmanager
def graceful_interrupt(message: str) -> Iterator[threading.Event]:
    """Set the yielded event on the first Ctrl-C (printing ``message``); raise
    KeyboardInterrupt on the second, so a stuck clean-up can still be abandoned."""
    interrupted = threading.Event()

    def on_sigint(_sig: int, _frame: FrameType | None) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt
        interrupted.set()
        print(message, file=sys.stderr)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)
