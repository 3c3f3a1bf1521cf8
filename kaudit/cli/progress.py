"""The progress line a long command draws on a terminal, and the log records it holds back.

Under ``-v`` log records go to stderr too, and one written while a ``\\r`` progress line is
on screen is glued onto the half-drawn line. So while the line is on screen, records meant
for that stream are held (as pip-audit does with a ``logging.handlers.MemoryHandler``) and
written, in order, once the line is cleared for a redraw, ended, or the display closed.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TextIO, TypeVar

T = TypeVar("T")

Show = Callable[[int, float, bool], None]
"""Messages sent so far, share of the run done (0..1), and whether sending is over."""

HOLD_AT_MOST = 500
"""Records held before the line is cleared to write them anyway (-vv is chatty, and a run
that waits out a fault schedule does not redraw its line)."""

_LOGGERS = ("kaudit", "")  # kaudit's own (it does not propagate) and the root logger


class ProgressLine:
    """``kaudit probe: [######    ] 40% 1,234 sent`` redrawn in place on a terminal.

    A context manager: inside it, the handlers writing to the line's stream get their
    records only when no line is on screen; leaving it (an error or Ctrl-C too) ends a
    line left open and writes what was held. Nothing is drawn or held when the stream is
    not a terminal or under CI (the value of ``with`` is None then).
    """

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.active = self.stream.isatty() and not os.environ.get("CI")
        # One lock for drawing and holding: records come from other threads too
        # (the fault injector, librdkafka's log queue).
        self._lock = threading.RLock()
        self._text = ""
        self._drawn = 0  # width of the line on screen; 0 when none is
        self._held: list[tuple[logging.Handler, logging.LogRecord]] = []

    def __enter__(self) -> ProgressLine | None:
        if not self.active:
            return None
        for name in _LOGGERS:
            logger = logging.getLogger(name)
            # A new list, not edited in place: another thread may be walking the old one.
            logger.handlers = [_Held(handler, self) if self._writes_here(handler) else handler
                               for handler in logger.handlers]
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if not self.active:
            return
        with self._lock:
            self._end()
            for name in _LOGGERS:
                logger = logging.getLogger(name)
                logger.handlers = [handler.target if isinstance(handler, _Held)
                                   and handler.line is self else handler
                                   for handler in logger.handlers]

    def __call__(self, sent: int, done: float, final: bool) -> None:
        """Draw the line; ``final`` ends it with "; verifying..." and a newline."""
        if not self.active:
            return
        bar = "#" * int(done * 30)
        text = (f"{self.label}: [{bar:<30}] {done:4.0%} {sent:,} sent"
                + ("; verifying..." if final else ""))
        with self._lock:
            if self._held and not final:
                self._clear()  # the held records go above the new line
                self._write_held()
            self._draw(text)
            if final:
                self._end()

    def hold_or_write(self, target: logging.Handler, record: logging.LogRecord) -> None:
        """``target``'s record: held while a line is on screen, else written now."""
        with self._lock:
            if not self._drawn:
                target.handle(record)
                return
            self._held.append((target, record))
            if len(self._held) >= HOLD_AT_MOST:
                self._clear()
                self._write_held()
                self._draw(self._text)

    def _writes_here(self, handler: logging.Handler) -> bool:
        return getattr(handler, "stream", None) is self.stream

    def _draw(self, text: str) -> None:
        # Padded to the old width: a shorter line would leave the old one's tail.
        self.stream.write("\r" + text.ljust(self._drawn))
        self.stream.flush()
        self._text, self._drawn = text, len(text)

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r" + " " * self._drawn + "\r")
            self._drawn = 0

    def _end(self) -> None:
        """The line stays as drawn, and the records held meanwhile follow it."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = 0
        self._write_held()

    def _write_held(self) -> None:
        held, self._held = self._held, []
        for target, record in held:
            target.handle(record)


class _Held(logging.Handler):
    """Stands in for ``target`` (a handler writing to the line's stream) while the line
    is shown; like ``logging.handlers.MemoryHandler``, whose import costs 10 ms (socket,
    pickle) that ``kaudit --help`` would pay."""

    def __init__(self, target: logging.Handler, line: ProgressLine) -> None:
        super().__init__(target.level)
        self.target = target
        self.line = line

    def emit(self, record: logging.LogRecord) -> None:
        self.line.hold_or_write(self.target, record)


def with_progress_line(run: Callable[[Show | None], T], label: str = "kaudit probe") -> T:
    """``run(show)`` inside a :class:`ProgressLine`: ``show`` draws it (None where nothing
    is drawn), and the line is ended and held records written however ``run`` ends."""
    with ProgressLine(label) as show:
        return run(show)


def terminal_notes(label: str) -> Callable[[str], None] | None:
    """A function that says what a long step is doing, as ``label: message`` lines on a
    terminal (the progress line's rule: nothing when piped or under CI)."""
    if not sys.stderr.isatty() or os.environ.get("CI"):
        return None
    return lambda message: print(f"{label}: {message}", file=sys.stderr, flush=True)
