"""``kaudit demo``: check, probe and reconcile on the local lab, in a few minutes."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import typer

from kaudit.cli import options
from kaudit.errors import ExitCode
from kaudit.report.output import emit


def demo(state_dir: options.StateDir = None) -> None:
    """Show what kaudit is for on the local lab: check, probe matrix and reconcile.

    Starts the lab in the state directory (or reuses the running one), creates
    topics with sound and unsound settings, audits them, kills a partition
    leader under acks=1 and acks=all, and reconciles a topic with a Parquet
    sink that has rows missing, duplicated and changed. Reports go to
    STATE_DIR/demo/. Exits 0 when every step ran: the findings, losses and
    discrepancies it shows are the point.
    """
    from kaudit.demo import run_demo

    directory = options.state_dir(state_dir)
    color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    with _interruptible() as interrupted:
        run_demo(directory, out=emit, interrupted=interrupted, color=color,
                 say=lambda line: typer.echo(f"kaudit demo: {line}", err=True))
    if interrupted.is_set():
        raise typer.Exit(int(ExitCode.INTERRUPTED))


@contextmanager
def _interruptible() -> Iterator[threading.Event]:
    """The first Ctrl-C lets a running probe heal its fault and clean up; a second aborts."""
    interrupted = threading.Event()

    def on_sigint(_sig: int, _frame: FrameType | None) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt
        interrupted.set()
        print("kaudit demo: interrupted; cleaning up (Ctrl-C again to abandon)",
              file=sys.stderr)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)
