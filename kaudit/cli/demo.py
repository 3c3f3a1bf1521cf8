"""``kaudit demo``: check, probe and reconcile on the local lab, in a few minutes."""

from __future__ import annotations

import typer

from kaudit.cli import options
from kaudit.cli.interrupt import graceful_interrupt
from kaudit.errors import ExitCode
from kaudit.report.base import render
from kaudit.report.output import OutputFormat, emit, use_color


def demo(
    state_dir: options.StateDir = None,
    format: options.PlainFormat = OutputFormat.table,
    output: options.Output = None,
) -> int:
    """Show what kaudit is for on the local lab: check, probe matrix and reconcile.

    Starts the lab in the state directory (or reuses the running one), creates
    topics with sound and unsound settings, audits them, kills a partition
    leader whose followers it froze, under acks=1 and acks=all (acks=1 loses
    writes every run), and reconciles a topic with a Parquet
    sink that has rows missing, duplicated and changed. Reports go to
    STATE_DIR/demo/, and every step, with what it shows, to one page:
    STATE_DIR/demo/index.html. Exits 0 when every step ran: the findings, losses and
    discrepancies it shows are the point. With --format json, one document at the
    end: the report paths and the check, probe matrix and reconcile documents.
    """
    from kaudit.demo import DEMO, run_demo

    directory = options.state_dir(state_dir)
    streamed = format is OutputFormat.table and not output
    color = use_color(format, output)
    # On stdout the sections appear as each step ends; a report file is written once,
    # whole, at the end (written step by step it would be half a report on Ctrl-C).
    sections: list[str] = []
    with graceful_interrupt(
            "kaudit demo: interrupted; cleaning up (Ctrl-C again to abandon)") as interrupted:
        result = run_demo(directory, out=emit if streamed else sections.append,
                          interrupted=interrupted, color=color,
                          say=lambda line: typer.echo(f"kaudit demo: {line}", err=True))
    if interrupted.is_set():
        return ExitCode.INTERRUPTED
    if format is OutputFormat.json:
        emit(render(DEMO, result, "json"), output)
    elif output:
        emit("".join(sections), output)
    return ExitCode.OK


