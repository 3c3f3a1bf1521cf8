"""``kaudit demo``: check, probe and reconcile on the local lab, in a few minutes."""

from __future__ import annotations

import os
import sys

import typer

from kaudit.cli import options
from kaudit.cli.interrupt import graceful_interrupt
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
    with graceful_interrupt(
            "kaudit demo: interrupted; cleaning up (Ctrl-C again to abandon)") as interrupted:
        run_demo(directory, out=emit, interrupted=interrupted, color=color,
                 say=lambda line: typer.echo(f"kaudit demo: {line}", err=True))
    if interrupted.is_set():
        raise typer.Exit(int(ExitCode.INTERRUPTED))


