"""``kaudit probe share``: what a share group (KIP-932) really delivers, record by record."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer

from kaudit.cli import options
from kaudit.cli.ending import end_run, first_of
from kaudit.cli.interrupt import graceful_interrupt
from kaudit.cli.options import FAULTS_PANEL, Expect
from kaudit.errors import InputError
from kaudit.probe.faults.registry import SHARE, fault_help
from kaudit.report.base import render
from kaudit.report.output import choose_format

GROUP = "Share group"
TOPIC = "Topic"
_INTERRUPTED = ("kaudit probe share: interrupted; stopping the workers and accounting for "
                "what they did (Ctrl-C again to abandon)")


class OffsetReset(StrEnum):
    """Where a new share group starts."""

    earliest = "earliest"
    latest = "latest"


def _share(value: float, option: str) -> float:
    if not 0.0 <= value <= 1.0:
        raise InputError(f"{option} {value:g}: a share of the records, from 0 to 1")
    return value


@options.with_connection
def share(
    workers: Annotated[int, typer.Option(min=1, max=64, rich_help_panel=GROUP,
                                         help="Worker processes in the share group.")] = 3,
    release: Annotated[float, typer.Option(
        rich_help_panel=GROUP, help="Share of the records released on their first delivery "
                                    "(each must come back and be processed).")] = 0.0,
    reject: Annotated[float, typer.Option(
        rich_help_panel=GROUP, help="Share of the records rejected (each must never come "
                                    "back).")] = 0.0,
    poison: Annotated[float, typer.Option(
        rich_help_panel=GROUP, help="Share of the records released on every delivery (each "
                                    "must be archived after exactly the delivery count "
                                    "limit).")] = 0.0,
    auto_offset_reset: Annotated[OffsetReset, typer.Option(
        rich_help_panel=GROUP,
        help="share.auto.offset.reset of the run's group. Kafka's default is latest: a new "
             "group never delivers what was written before it first fetched (the run then "
             "says so, record by record).")] = OffsetReset.earliest,
    processing_ms: Annotated[int, typer.Option(
        min=0, max=600_000, rich_help_panel=GROUP,
        help="Milliseconds each worker takes over each record it processes (spreads the run "
             "over time, so that --fault strikes while records are in hand).")] = 0,
    delivery_limit: Annotated[int | None, typer.Option(
        min=2, rich_help_panel=GROUP,
        help="share.delivery.count.limit of the run's group (Kafka 4.3) [default: the "
             "brokers'].")] = None,
    lock_ms: Annotated[int | None, typer.Option(
        min=1000, rich_help_panel=GROUP,
        help="share.record.lock.duration.ms of the run's group, within the brokers' "
             "group.share.min/max.record.lock.duration.ms [default: the brokers'].")] = None,
    settle: Annotated[float, typer.Option(
        min=1.0, rich_help_panel=GROUP,
        help="Seconds the workers may take to bring every record to its end.")] = 120.0,
    count: Annotated[int, typer.Option(min=1, rich_help_panel=TOPIC,
                                       help="Records written to the topic.")] = 1000,
    partitions: Annotated[int, typer.Option(min=1, rich_help_panel=TOPIC,
                                            help="Partitions of the topic.")] = 3,
    replication_factor: Annotated[int, typer.Option(
        min=1, rich_help_panel=TOPIC, help="Replication factor of the topic.")] = 3,
    kill_worker: Annotated[bool, typer.Option(
        "--kill-worker", rich_help_panel=FAULTS_PANEL,
        help="One worker stops acknowledging after --hold-after processings, holding its "
             "records' locks, and is SIGKILLed: its records must come back to the others "
             "(after the lock duration).")] = False,
    slow_worker: Annotated[bool, typer.Option(
        "--slow-worker", rich_help_panel=FAULTS_PANEL,
        help="One worker holds a record it processed (after --hold-after processings) past "
             "its lock, until the broker has delivered it to another worker and that one "
             "processed it too (where no other worker reads its partition: for its lock and "
             "as long again, at least 10 s, after which the record comes back to the same "
             "worker): a duplicate processing (set --lock-ms low to see it soon).")] = False,
    hold_after: Annotated[int, typer.Option(
        min=1, rich_help_panel=FAULTS_PANEL,
        help="Processings before the killed or the slow worker holds.")] = 20,
    fault: Annotated[list[str] | None, typer.Option(
        metavar="SPEC", rich_help_panel=FAULTS_PANEL,
        autocompletion=options.complete_fault(SHARE),
        help=f"{fault_help(SHARE)}; repeatable. `man kaudit-probe` says what each "
             "does.")] = None,
    fault_at: options.FaultAtOption = "30%",
    fault_duration: options.FaultDurationOption = 10.0,
    lab_state_dir: options.FaultLabStateDir = None,
    expect: options.ExpectOption = None,
    keep: Annotated[bool, typer.Option(
        "--keep", help="Keep the topic, the group and the journals.")] = False,
    format: options.PageFormatOption = None,
    output: options.Output = None,
    connection: options.ConnectionOptions = options.NO_CONNECTION,
) -> int:
    """Run a share group over sequenced records that its workers accept, release, reject
    or always release (poison) by their sequence number, kill a worker that holds locks or
    keep one past its lock, kill brokers, and account for every record: processed,
    processed twice (and why), rejected, archived after N deliveries, never delivered.

    Exits 0 when the run shows --expect (at-least-once: nothing but rejected and poison
    records goes unprocessed, and every poison record is archived after exactly the limit;
    exactly-once: also nothing processed twice); 1 when it does not. At-most-once is
    refused: a share group delivers again what is released or whose lock expires.
    """
    from kaudit.probe.faults.registry import parse_fault_at, parse_faults
    from kaudit.probe.share.model import ShareSettings
    from kaudit.probe.share.runner import run_share
    from kaudit.probe.share.verify import Mix
    from kaudit.report import share as share_report

    if expect is Expect.at_most_once:
        raise InputError("--expect at-most-once has no meaning for a share group: it "
                         "delivers again what is released or whose lock expires; expect "
                         "at-least-once or exactly-once")
    try:
        mix = Mix(release=_share(release, "--release"), reject=_share(reject, "--reject"),
                  poison=_share(poison, "--poison"))
    except ValueError:
        raise InputError("--release, --reject and --poison add up to more than 1") from None
    settings = ShareSettings(
        count=count, partitions=partitions, replication_factor=replication_factor,
        workers=workers, mix=mix, auto_offset_reset=auto_offset_reset.value,
        processing_ms=processing_ms, kill_worker=kill_worker,
        slow_worker=slow_worker,
        hold_after=hold_after, lock_ms=lock_ms, delivery_limit=delivery_limit, settle_s=settle,
        expect=expect.value if expect else None, keep=keep,
        faults=parse_faults(fault, SHARE), fault_at=parse_fault_at(fault_at),
        fault_duration=fault_duration, lab_state_dir=lab_state_dir)
    conn = connection.settings()
    with graceful_interrupt(_INTERRUPTED) as interrupted:
        report = run_share(conn, settings, interrupted)
    code = end_run("probe share",
                   render(share_report.SHARE, report, choose_format(format, output, html=True)),
                   output, verdict=first_of(report.verdict, report.violations()),
                   interrupted=interrupted.is_set(), failed=report.verdict == "fail")
    if interrupted.is_set():
        print("kaudit probe share: interrupted", file=sys.stderr)
    return code
