"""``kaudit probe``: prove end-to-end delivery with sequenced messages, under faults."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from kaudit.cli import options
from kaudit.cli.clicompat import ParameterSource
from kaudit.cli.ending import end_run, first_of
from kaudit.cli.interrupt import graceful_interrupt
from kaudit.cli.options import FAULTS_PANEL, PRODUCER_PANEL
from kaudit.cli.progress import terminal_notes, with_progress_line
from kaudit.errors import ExitCode, InputError
from kaudit.probe.faults.registry import PRODUCER, fault_help, shortened_request_timeout
from kaudit.report.base import render
from kaudit.report.output import choose_format

_INTERRUPTED = "kaudit probe: interrupted; verifying what was sent (Ctrl-C again to abandon)"

TOPIC = "Probe topic"


class Acks(StrEnum):
    """Producer acks."""

    zero = "0"
    one = "1"
    all = "all"


class Side(StrEnum):
    """A half of the proof."""

    producer = "producer"
    consumer = "consumer"
    share = "share"


app = typer.Typer(rich_markup_mode=None)


@app.callback(invoke_without_command=True)
@options.with_connection
def probe(
    ctx: typer.Context,
    topic: Annotated[str | None, typer.Option(
        metavar="NAME", rich_help_panel=TOPIC, callback=options.topic_name,
        help="Topic to probe [default: a new kaudit-probe-<run id>, deleted afterwards].")
    ] = None,
    existing: Annotated[bool, typer.Option(
        "--existing", rich_help_panel=TOPIC,
        help="Probe the existing --topic (messages carry a kaudit-probe header).")] = False,
    partitions: Annotated[int, typer.Option(min=1, rich_help_panel=TOPIC,
                                            help="Partitions of the probe topic.")] = 3,
    replication_factor: Annotated[int, typer.Option(
        min=1, rich_help_panel=TOPIC, help="Replication factor of the probe topic.")] = 3,
    min_insync_replicas: Annotated[int | None, typer.Option(
        min=0, rich_help_panel=TOPIC,
        help="min.insync.replicas of the probe topic [default: 2, or the replication factor "
        "if lower; the broker's when 0].")
    ] = 2,
    unclean_leader_election: Annotated[bool | None, typer.Option(
        "--unclean-leader-election/--no-unclean-leader-election", rich_help_panel=TOPIC,
        help="unclean.leader.election.enable of the probe topic [default: the broker's].")
    ] = None,
    acks: Annotated[Acks, typer.Option(rich_help_panel=PRODUCER_PANEL, help="Producer acks.")
                    ] = Acks.all,
    idempotence: Annotated[bool, typer.Option(
        "--idempotence/--no-idempotence", rich_help_panel=PRODUCER_PANEL,
        help="enable.idempotence of the producer.")] = True,
    transactional: options.Transactional = False,
    txn_size: options.TxnSize = 100,
    abort_ratio: options.AbortRatio = 0.0,
    retries: Annotated[int | None, typer.Option(min=0, rich_help_panel=PRODUCER_PANEL,
                                                help="Producer retries.")] = None,
    max_in_flight: Annotated[int | None, typer.Option(
        min=1, rich_help_panel=PRODUCER_PANEL,
        help="max.in.flight.requests.per.connection.")] = None,
    linger_ms: Annotated[int | None, typer.Option(min=0, rich_help_panel=PRODUCER_PANEL,
                                                  help="Producer linger.ms.")] = None,
    compression: Annotated[str | None, typer.Option(
        rich_help_panel=PRODUCER_PANEL, help="compression.type (none, gzip, snappy, lz4, zstd).")
    ] = None,
    message_size: Annotated[int, typer.Option(min=40, rich_help_panel=PRODUCER_PANEL,
                                              help="Bytes per message value.")] = 100,
    rate: Annotated[float | None, typer.Option(
        min=1.0, rich_help_panel=PRODUCER_PANEL,
        help="Messages per second [default: as fast as possible].")] = None,
    count: Annotated[int | None, typer.Option(
        min=1, help="Messages to send [default: 10000 unless --duration].")] = None,
    duration: Annotated[float | None, typer.Option(
        min=0.1, metavar="SECONDS", help="Send for this long instead of --count.")] = None,
    producer_property: Annotated[list[str] | None, typer.Option(
        metavar="KEY=VALUE", rich_help_panel=PRODUCER_PANEL,
        help="Producer-only librdkafka property, e.g. request.timeout.ms=1000; repeatable "
             "(not one an option sets, such as acks or enable.idempotence).")
    ] = None,
    fault: Annotated[list[str] | None, typer.Option(
        metavar="SPEC", rich_help_panel=FAULTS_PANEL,
        autocompletion=options.complete_fault(PRODUCER),
        help=f"{fault_help(PRODUCER)}; repeatable; {shortened_request_timeout(PRODUCER)}. "
             "`man kaudit-probe` says what each does.")
    ] = None,
    fault_at: options.FaultAtOption = "40%",
    fault_duration: options.FaultDurationOption = 10.0,
    lab_state_dir: options.FaultLabStateDir = None,
    expect: options.ExpectOption = None,
    max_unavailable: Annotated[float | None, typer.Option(
        min=0.0, metavar="SECONDS",
        help="Exit 1 when writes were refused or unanswered for longer than this.")] = None,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the probe topic afterwards.")
                    ] = False,
    plot: Annotated[str | None, typer.Option(
        metavar="FILE.png", help="Also draw the run's timeline as a PNG.")] = None,
    e2e_latency: Annotated[bool, typer.Option(
        "--e2e-latency/--no-e2e-latency",
        help="Read the topic while writing it, to measure end-to-end latency.")] = True,
    format: options.PageFormatOption = None,
    output: options.Output = None,
    connection: options.ConnectionOptions = options.NO_CONNECTION,
) -> int:
    """Produce sequenced messages, read them back, and account for every one.

    Run `kaudit probe matrix` to compare settings side by side.
    """
    if ctx.invoked_subcommand is not None:
        return ExitCode.OK  # `kaudit probe matrix ...`: the subcommand runs instead
    from kaudit.connection.settings import parse_key_values
    from kaudit.probe.faults.registry import parse_fault_at, parse_faults
    from kaudit.probe.model import ProbeSettings
    from kaudit.probe.runner import run_probe
    from kaudit.report.probe import PROBE, probe_document

    if existing and not topic:
        raise InputError("--existing needs --topic NAME")
    options.check_transaction_options(ctx, transactional, acks.value)
    if ctx.get_parameter_source("min_insync_replicas") in (None, ParameterSource.DEFAULT):
        min_insync_replicas = min(min_insync_replicas or 2, replication_factor)
    elif not existing and (min_insync_replicas or 0) > replication_factor:
        # Kafka 4 caps it at the replica count, Kafka 3 refuses every acks=all write.
        raise InputError(f"--min-insync-replicas {min_insync_replicas} is more than "
                         f"--replication-factor {replication_factor}")
    if count is not None and duration is not None:
        raise InputError("give --count or --duration, not both")
    faults = parse_faults(fault, PRODUCER)
    settings = ProbeSettings(
        topic=topic, existing=existing, partitions=partitions,
        replication_factor=replication_factor,
        min_insync_replicas=min_insync_replicas or None,
        unclean_leader_election=unclean_leader_election, acks=acks.value,
        idempotence=idempotence, transactional=transactional, txn_size=txn_size,
        abort_ratio=abort_ratio, retries=retries, max_in_flight=max_in_flight,
        linger_ms=linger_ms, compression=compression, message_size=message_size, rate=rate,
        count=count, duration=duration, faults=faults, fault_at=parse_fault_at(fault_at),
        fault_duration=fault_duration, expect=expect.value if expect else None,
        max_unavailable=max_unavailable, keep=keep,
        lab_state_dir=lab_state_dir, e2e_latency=e2e_latency,
        producer_properties=parse_key_values(producer_property or [],
                                             "--producer-property"))
    if plot:
        from kaudit.report.plot import check_plot_target

        check_plot_target(plot)  # before the run: never fail after minutes of probing
    conn = connection.settings()
    with graceful_interrupt(_INTERRUPTED) as interrupted:
        report = with_progress_line(lambda show: run_probe(
            conn, settings, interrupted, show, terminal_notes("kaudit probe")))
    code = end_run("probe", render(PROBE, report, choose_format(format, output, html=True)),
                   output, verdict=first_of(report.verdict, report.violations()),
                   interrupted=report.interrupted, failed=report.verdict != "pass")
    if plot:
        from kaudit.report.plot import plot_timeline

        plot_timeline(probe_document(report), plot)
        print(f"kaudit probe: timeline drawn to {plot}", file=sys.stderr)
    return code


@app.command()
@options.with_connection
def matrix(
    acks: Annotated[str, typer.Option(metavar="LIST", help="acks values, e.g. 0,1,all.")
                    ] = "1,all",
    idempotence: Annotated[str, typer.Option(
        metavar="LIST", help="on,off (idempotent cells need acks=all).")] = "off,on",
    min_insync_replicas: Annotated[str, typer.Option(
        metavar="LIST", help="min.insync.replicas values, e.g. 1,2.")] = "2",
    unclean_leader_election: Annotated[str, typer.Option(
        metavar="LIST", help="off,on.")] = "off",
    fault: Annotated[str, typer.Option(
        autocompletion=options.complete_fault(PRODUCER, listed=True),
        metavar="LIST", rich_help_panel=FAULTS_PANEL,
        help="Faults to run each configuration under, comma-separated (none for no fault): "
             f"{fault_help(PRODUCER)}; {shortened_request_timeout(PRODUCER)}.")
    ] = "kill-leader,pause-follower",
    trials: Annotated[int, typer.Option(min=1, help="Runs per configuration.")] = 1,
    count: Annotated[int, typer.Option(min=1, help="Messages per run.")] = 50_000,
    rate: Annotated[float | None, typer.Option(
        min=1.0, help="Messages per second [default: as fast as possible].")] = None,
    partitions: Annotated[int, typer.Option(min=1, help="Partitions per probe topic.")] = 1,
    replication_factor: Annotated[int, typer.Option(min=1, help="Replication factor.")] = 3,
    message_size: Annotated[int, typer.Option(min=40, help="Bytes per message value.")] = 100,
    fault_at: options.FaultAtOption = "30%",
    fault_duration: options.FaultDurationOption = 6.0,
    producer_property: Annotated[list[str] | None, typer.Option(
        metavar="KEY=VALUE", help="Producer-only librdkafka property; repeatable (not one "
        "an option sets).")] = None,
    lab_state_dir: options.FaultLabStateDir = None,
    format: options.PageFormatOption = None,
    output: options.Output = None,
    connection: options.ConnectionOptions = options.NO_CONNECTION,
) -> int:
    """Run the probe over a grid of settings and print one verdict table."""
    from kaudit.connection.settings import parse_key_values
    from kaudit.probe.faults.registry import parse_fault_at
    from kaudit.probe.matrix import build_grid, parse_list, run_matrix
    from kaudit.probe.model import ProbeSettings
    from kaudit.report.matrix import MATRIX

    cells = build_grid(
        parse_list(acks, "--acks", ("0", "1", "all")),
        parse_list(idempotence, "--idempotence", ("on", "off")),
        [int(v) for v in parse_list(min_insync_replicas, "--min-insync-replicas",
                                    [str(n) for n in range(1, 10)])],
        parse_list(unclean_leader_election, "--unclean-leader-election", ("on", "off")),
        [f.strip() for f in fault.split(",") if f.strip()] or ["none"])
    base = ProbeSettings(count=count, rate=rate, partitions=partitions,
                         replication_factor=replication_factor, message_size=message_size,
                         fault_at=parse_fault_at(fault_at), fault_duration=fault_duration,
                         lab_state_dir=lab_state_dir, e2e_latency=False,
                         producer_properties=parse_key_values(producer_property or [],
                                             "--producer-property"))
    conn = connection.settings()
    with graceful_interrupt(_INTERRUPTED) as interrupted:
        rows = run_matrix(conn, base, cells, trials, interrupted,
                          lambda line: print(f"kaudit probe matrix: {line}", file=sys.stderr))
    # The matrix shows what each setting does; a cell that loses is a finding of the
    # settings, not a failure of the run.
    losing = sum(1 for row in rows if row.total("lost"))
    return end_run("probe matrix", render(MATRIX, rows, choose_format(format, output, html=True)),
                   output, verdict=f"{len(rows)} configuration(s) ran, {losing} lost "
                   "acknowledged writes", interrupted=interrupted.is_set(), failed=False)


@app.command()
@options.with_connection
def prove(
    count: Annotated[int, typer.Option(min=100, help="Messages per run.")] = 6000,
    rate: Annotated[float, typer.Option(min=1.0, help="Messages per second.")] = 2000.0,
    lab_state_dir: Annotated[Path | None, typer.Option(
        metavar="DIR", help="State directory of the lab whose brokers the schedules signal.")
    ] = None,
    only: Annotated[Side | None, typer.Option(
        help="Prove one part only [default: all three].")] = None,
    format: options.PageFormatOption = None,
    output: options.Output = None,
    connection: options.ConnectionOptions = options.NO_CONNECTION,
) -> int:
    """Show on the lab what each producer setting, each consumer commit strategy and a
    share group really deliver, claim by claim.

    Producer: one probe run per claim (acks, min.insync.replicas, unclean election,
    idempotence, transactions, the high watermark), each under a fault schedule that makes
    the failure happen every time. Consumer: one `probe consume` run per commit strategy
    (before-process, after-process, transactional, sink-offsets), its workers crashed
    between the strategy's two steps. Share: four short `probe share` runs (a worker killed
    holding its locks, poison records, a worker past its lock, a group starting at latest).
    Exits 0 when every claim is CONFIRMED, 1 otherwise. Takes about four and a half minutes
    on a 2-core machine (the share part alone, under a minute).
    """
    import time

    from kaudit.probe.prove import SIDES, base_settings, run_proof
    from kaudit.report.prove import PROVE, Proof

    base = base_settings(lab_state_dir, count, rate)
    settings = connection.settings()
    started = time.monotonic()
    with graceful_interrupt(_INTERRUPTED) as interrupted:
        rows, reports = run_proof(settings, base, interrupted,
                                  lambda line: print(f"kaudit probe prove: {line}",
                                                     file=sys.stderr),
                                  (only.value,) if only else SIDES)
    proof = Proof(rows, reports, time.monotonic() - started)
    unconfirmed = sum(1 for row in rows if not row.confirmed)
    return end_run("probe prove", render(PROVE, proof, choose_format(format, output,
                                                                      html=True)),
                   output, verdict=f"{proof.verdict} ({len(rows) - unconfirmed} of {len(rows)} "
                   "claims confirmed)", interrupted=interrupted.is_set(),
                   failed=proof.verdict != "confirmed")


# `kaudit probe consume` lives in its own module: the consumer half has its own options.
from kaudit.cli.consume import consume as _consume  # noqa: E402

app.command("consume")(_consume)

# `kaudit probe share`: the share-group half, in its own module too.
from kaudit.cli.share import share as _share  # noqa: E402

app.command("share")(_share)
