"""``kaudit canary``: the probe that never stops."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kaudit.cli import options
from kaudit.cli.ending import end_run, first_of
from kaudit.cli.interrupt import graceful_interrupt
from kaudit.cli.options import FAULTS_PANEL, PRODUCER_PANEL
from kaudit.cli.probe import Acks
from kaudit.errors import InputError
from kaudit.probe.faults.registry import CANARY, fault_help, shortened_request_timeout
from kaudit.report.base import render
from kaudit.report.output import choose_format

if TYPE_CHECKING:
    from kaudit.canary.service import Canary, CanarySettings

_STOPPING = "kaudit canary: stopping; reading the last records back (Ctrl-C again to abandon)"

METRICS = "Metrics and events"


@options.with_connection
def canary(
    ctx: typer.Context,
    topic: Annotated[str, typer.Option(
        metavar="NAME", callback=options.topic_name,
        help="The canary's topic; created when missing (a partition per broker, RF min(3, "
             "brokers), min.insync.replicas min(2, RF)) and kept afterwards.")
    ] = "kaudit-canary",
    duration: Annotated[float | None, typer.Option(
        min=0.1, metavar="SECONDS", help="Stop after this long [default: run until SIGTERM "
                                         "or Ctrl-C].")] = None,
    rate: Annotated[float, typer.Option(min=1.0, rich_help_panel=PRODUCER_PANEL,
                                        help="Records per second, over all partitions.")
                    ] = 50.0,
    acks: Annotated[Acks, typer.Option(rich_help_panel=PRODUCER_PANEL, help="Producer acks.")
                    ] = Acks.all,
    idempotence: Annotated[bool, typer.Option(
        "--idempotence/--no-idempotence", rich_help_panel=PRODUCER_PANEL,
        help="enable.idempotence of the producer.")] = True,
    message_size: Annotated[int, typer.Option(min=40, rich_help_panel=PRODUCER_PANEL,
                                              help="Bytes per record value.")] = 100,
    transactional: options.Transactional = False,
    txn_size: options.TxnSize = 100,
    abort_ratio: options.AbortRatio = 0.0,
    producer_property: Annotated[list[str] | None, typer.Option(
        metavar="KEY=VALUE", rich_help_panel=PRODUCER_PANEL,
        help="Producer-only librdkafka property; repeatable (not one an option sets).")
    ] = None,
    window: Annotated[float, typer.Option(
        min=1.0, metavar="SECONDS",
        help="How long a settled record's sequence is remembered to catch its duplicates; "
             "also how long a failed or indeterminate send may still show up.")] = 300.0,
    late_after: Annotated[float, typer.Option(
        min=0.1, metavar="SECONDS",
        help="A record read later than this after its send is late (never lost).")] = 10.0,
    expect: options.ExpectOption = None,
    fault: Annotated[list[str] | None, typer.Option(
        metavar="SPEC", rich_help_panel=FAULTS_PANEL,
        autocompletion=options.complete_fault(CANARY),
        help=f"{fault_help(CANARY)}; repeatable; {shortened_request_timeout(CANARY)}. "
             "`man kaudit-canary` says what each does.")] = None,
    fault_at: options.FaultAtOption = "30",
    fault_duration: options.FaultDurationOption = 10.0,
    lab_state_dir: options.FaultLabStateDir = None,
    metrics_port: Annotated[int | None, typer.Option(
        min=0, max=65535, metavar="PORT", rich_help_panel=METRICS,
        help="Serve Prometheus metrics on this port [default: none].")] = None,
    metrics_address: Annotated[str, typer.Option(
        metavar="ADDRESS", rich_help_panel=METRICS,
        help="Address the metrics endpoint binds to.")] = "127.0.0.1",
    events: Annotated[Path | None, typer.Option(
        metavar="FILE", rich_help_panel=METRICS,
        help="Append each anomaly (lost, duplicated, reordered, late...) as a JSON line.")
    ] = None,
    format: options.PageFormatOption = None,
    output: options.Output = None,
    connection: options.ConnectionOptions = options.NO_CONNECTION,
) -> int:
    """Send sequenced records for ever, read them back, and account for every one per
    partition: lost (with its cause), duplicated, reordered, late, indeterminate, and in
    transactions aborted.

    A stop by SIGTERM or Ctrl-C is the normal end: exit 0 when nothing was wrong, 1 when
    a violation was seen, as `kaudit probe`. A cluster out of reach does not end it, nor
    a producer that can send no more (fenced by another with its transactional id): it
    waits, or starts a new producer session and says so in its notes.
    """
    from kaudit.canary.service import Canary, CanarySettings, result_of
    from kaudit.cluster.client import AdminSession
    from kaudit.connection.settings import parse_key_values
    from kaudit.probe.faults.registry import parse_fault_at, parse_faults
    from kaudit.probe.model import ProbeSettings
    from kaudit.report.canary import CANARY as SUMMARY

    options.check_transaction_options(ctx, transactional, acks.value)
    faults = parse_faults(fault, CANARY)
    at = parse_fault_at(fault_at)
    if faults and at[0] == "progress" and duration is None:
        raise InputError(f"--fault-at {fault_at} is a share of --duration: give --duration, "
                         "or seconds")
    if events is not None and not events.parent.is_dir():
        raise InputError(f"--events {events}: no such directory {events.parent}")
    if events is not None:
        try:  # appended to from the first event on: one that cannot be is found now
            events.open("a", encoding="utf-8").close()
        except OSError as exc:
            raise InputError(f"--events {events}: cannot write it: "
                             f"{exc.strerror or exc}") from None
    producer = ProbeSettings(
        acks=acks.value, idempotence=idempotence, message_size=message_size, rate=rate,
        transactional=transactional, txn_size=txn_size, abort_ratio=abort_ratio,
        faults=faults, fault_at=at, fault_duration=fault_duration,
        lab_state_dir=lab_state_dir, expect=expect.value if expect else None,
        producer_properties=parse_key_values(producer_property or [], "--producer-property"))
    settings = CanarySettings(producer=producer, topic=topic, duration=duration,
                              window_s=window, late_after_s=late_after, events=events)
    conn = connection.settings()

    def say(line: str) -> None:
        print(f"kaudit canary: {line}", file=sys.stderr)

    with graceful_interrupt(_STOPPING) as stop:
        run = Canary(conn, settings, AdminSession(conn), stop, say)
        server = _serve(run, metrics_address, metrics_port, settings) \
            if metrics_port is not None else None
        try:
            run.run()
        finally:
            if server is not None:
                server.shutdown()
    result = result_of(run.state)
    # A SIGTERM is how a service is told to stop: the run's verdict decides the exit code.
    page = render(SUMMARY, result, choose_format(format, output, html=True))
    return end_run("canary", page, output,
                   verdict=first_of(result.verdict, result.violations()), interrupted=False,
                   failed=result.verdict != "pass")


def _serve(run: Canary, address: str, port: int, settings: CanarySettings) -> Any:
    """The metrics endpoint, listening before the run starts: a port taken is exit 2."""
    from kaudit.canary.metrics import serve

    p = settings.producer
    info = {"acks": p.acks, "idempotence": str(p.idempotence or p.transactional).lower(),
            "transactional": str(p.transactional).lower(),
            "rate": f"{p.rate:g}", "message_size": str(p.message_size),
            "window_seconds": f"{settings.window_s:g}",
            "late_after_seconds": f"{settings.late_after_s:g}"}
    try:
        server = serve(run.state, address, port, info)
    except OSError as exc:
        raise InputError(f"--metrics-port {port}: cannot listen on {address}: "
                         f"{exc.strerror or exc}") from None
    print(f"kaudit canary: metrics on http://{address}:{server.server_port}/metrics",
          file=sys.stderr)
    return server
