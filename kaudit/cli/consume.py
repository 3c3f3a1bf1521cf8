"""``kaudit probe consume``: what a consumer group's commit strategy really delivers."""

from __future__ import annotations

import math
import sys
from enum import StrEnum
from typing import Annotated

import typer

from kaudit.cli import options
from kaudit.cli.ending import end_run, first_of
from kaudit.cli.interrupt import graceful_interrupt
from kaudit.cli.options import FAULTS_PANEL
from kaudit.errors import InputError
from kaudit.probe.faults.registry import CONSUMER, fault_help
from kaudit.report.base import render
from kaudit.report.output import choose_format

GROUP = "Consumer group"
TOPIC = "Input topic"
_INTERRUPTED = ("kaudit probe consume: interrupted; stopping the workers and counting what "
                "they processed (Ctrl-C again to abandon)")


class Commit(StrEnum):
    """When the workers commit their offsets."""

    before_process = "before-process"
    after_process = "after-process"
    auto = "auto"
    transactional = "transactional"
    sink_offsets = "sink-offsets"


class CrashPoint(StrEnum):
    """Where a crash lands."""

    between = "between"
    anywhere = "anywhere"


def parse_every(text: str, option: str) -> float:
    """``5s``, ``500ms``, ``2m`` or plain seconds."""
    raw = text.strip().lower()
    scale = 1.0
    for suffix, factor in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
        if raw.endswith(suffix):
            raw, scale = raw[: -len(suffix)], factor
            break
    try:
        value = float(raw) * scale
    except ValueError:
        raise InputError(f"{option} {text!r}: expected a duration such as 5s or 500ms") from None
    if not 0 < value < math.inf:  # float() also reads nan and inf
        raise InputError(f"{option} {text!r}: must be more than 0")
    return value


@options.with_connection
def consume(
    commit: Annotated[Commit, typer.Option(
        rich_help_panel=GROUP,
        help="before-process: commit, then process (a crash between loses the batch: at "
             "most once). after-process: process, then commit (a crash between processes "
             "it again: at least once). auto: enable.auto.commit (neither). transactional: "
             "consume-transform-produce with the offsets in the producer's transaction, "
             "read back read_committed (exactly once). sink-offsets: results and offsets "
             "in one database transaction, seek to the stored offsets on start (exactly "
             "once).")] = Commit.after_process,
    workers: Annotated[int, typer.Option(min=1, max=64, rich_help_panel=GROUP,
                                         help="Worker processes in the group.")] = 2,
    batch: Annotated[int, typer.Option(min=1, rich_help_panel=GROUP,
                                       help="Most records a worker takes per poll.")] = 50,
    process_ms: Annotated[float, typer.Option(
        min=0.0, rich_help_panel=GROUP, help="Simulated work per batch, in milliseconds.")
    ] = 20.0,
    auto_commit_ms: Annotated[int, typer.Option(
        min=1, rich_help_panel=GROUP, help="auto.commit.interval.ms for --commit auto.")
    ] = 1000,
    sink: Annotated[str | None, typer.Option(
        metavar="URI", rich_help_panel=GROUP,
        help="The database of --commit sink-offsets: sqlite:PATH or "
             "postgresql://USER@HOST:PORT/DB (password from the URI, PGPASSWORD or "
             "~/.pgpass; needs kaudit[postgres]). The run's two tables are dropped at the "
             "end unless --keep [default: a SQLite file of the run's own].")] = None,
    static_membership: Annotated[bool, typer.Option(
        "--static-membership/--no-static-membership", rich_help_panel=GROUP,
        help="Workers keep their group.instance.id across restarts, as a StatefulSet "
             "would; without it every restart is a new member and a rebalance.")] = True,
    session_timeout_ms: Annotated[int, typer.Option(
        min=1, max=3600000, rich_help_panel=GROUP,  # librdkafka's own bounds
        help="session.timeout.ms of the workers (the brokers' group.min/max.session."
             "timeout.ms bound it too).")] = 6000,
    count: Annotated[int, typer.Option(min=1, rich_help_panel=TOPIC,
                                       help="Records written to the input topic.")] = 5000,
    rate: Annotated[float, typer.Option(
        min=0.0, rich_help_panel=TOPIC,
        help="Records written per second while the workers read, as a live topic is (0: "
             "the whole input first, then the workers start).")] = 250.0,
    partitions: Annotated[int, typer.Option(min=1, rich_help_panel=TOPIC,
                                            help="Partitions of the input topic.")] = 3,
    replication_factor: Annotated[int, typer.Option(
        min=1, rich_help_panel=TOPIC, help="Replication factor of the input topic.")] = 3,
    min_insync_replicas: Annotated[int | None, typer.Option(
        min=0, rich_help_panel=TOPIC,
        help="min.insync.replicas of the input topic (0: the broker's).")] = 2,
    crash_worker: Annotated[str | None, typer.Option(
        metavar="EVERY", rich_help_panel=FAULTS_PANEL,
        help="SIGKILL a worker (chosen with --seed) every EVERY (5s, 500ms); it is "
             "restarted at once.")] = None,
    crash_point: Annotated[CrashPoint, typer.Option(
        rich_help_panel=FAULTS_PANEL,
        help="between: the crash lands between the strategy's two steps (after the commit "
             "before processing, after processing before the commit...), every time; "
             "anywhere: whatever the worker is doing.")] = CrashPoint.between,
    max_crashes: Annotated[int | None, typer.Option(
        min=0, rich_help_panel=FAULTS_PANEL, help="Stop crashing workers after this many.")] = None,
    rebalance: Annotated[str | None, typer.Option(
        metavar="EVERY", rich_help_panel=FAULTS_PANEL,
        help="An extra worker (a dynamic member) joins the group, and leaves it EVERY later "
             "once it has polled a batch, again and again.")
    ] = None,
    fault: Annotated[list[str] | None, typer.Option(
        metavar="SPEC", rich_help_panel=FAULTS_PANEL,
        autocompletion=options.complete_fault(CONSUMER),
        help=f"{fault_help(CONSUMER)}; repeatable. `man kaudit-probe` says what "
             "each does.")] = None,
    fault_at: options.FaultAtOption = "40%",
    fault_duration: options.FaultDurationOption = 10.0,
    lab_state_dir: options.FaultLabStateDir = None,
    seed: Annotated[int, typer.Option(help="Seed of the choice of the worker to crash.")] = 0,
    expect: options.ExpectOption = None,
    keep: Annotated[bool, typer.Option(
        "--keep", help="Keep the topics, the group, the journals and the sink.")] = False,
    format: options.Format = None,
    output: options.Output = None,
    connection: options.ConnectionOptions = options.NO_CONNECTION,
) -> int:
    """Run a consumer group over sequenced records, crash its workers, and count how often
    each record was processed: lost, duplicated, reordered, and which crash did it.

    Each worker is a process that journals what it polled, processed and committed; a
    crashed worker is restarted at once, as an orchestrator would. Exits 0 when the run
    shows --expect (by default: nothing lost); 1 when it does not, or when crashes were
    asked for and none landed on a batch (inconclusive).
    """
    from kaudit.probe.consume.model import ConsumeSettings
    from kaudit.probe.consume.runner import run_consume
    from kaudit.probe.faults.registry import parse_fault_at, parse_faults
    from kaudit.report.consume import CONSUME

    if sink is not None and commit is not Commit.sink_offsets:
        raise InputError("--sink is the database of --commit sink-offsets; the other "
                         "strategies keep their ledgers in the run's journals")
    faults = parse_faults(fault, CONSUMER)
    settings = ConsumeSettings(
        strategy=commit.value, workers=workers, count=count, rate=rate, partitions=partitions,
        replication_factor=replication_factor,
        min_insync_replicas=min_insync_replicas or None, batch=batch, process_ms=process_ms,
        auto_commit_ms=auto_commit_ms,
        crash_every=parse_every(crash_worker, "--crash-worker") if crash_worker else None,
        crash_point=crash_point.value, max_crashes=max_crashes,
        rebalance_every=parse_every(rebalance, "--rebalance") if rebalance else None,
        static_membership=static_membership, faults=faults,
        fault_at=parse_fault_at(fault_at), fault_duration=fault_duration,
        lab_state_dir=lab_state_dir, expect=expect.value if expect else None, keep=keep,
        sink=sink,
        seed=seed, session_timeout_ms=session_timeout_ms)
    conn = connection.settings()
    with graceful_interrupt(_INTERRUPTED) as interrupted:
        report = run_consume(conn, settings, interrupted)
    code = end_run("probe consume", render(CONSUME, report, choose_format(format, output)),
                   output, verdict=first_of(report.verdict, report.violations()),
                   interrupted=report.interrupted, failed=report.verdict != "pass")
    if report.interrupted:
        print("kaudit probe consume: interrupted", file=sys.stderr)
    return code
