"""``kaudit probe``: prove end-to-end delivery with sequenced messages, under faults."""

from __future__ import annotations

import signal
import sys
import threading
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from kaudit.cli import options
from kaudit.errors import ExitCode, InputError
from kaudit.report.output import OutputFormat, default_format, emit

PRODUCER = "Producer"
TOPIC = "Probe topic"
FAULTS = "Faults"


class Acks(StrEnum):
    """Producer acks."""

    zero = "0"
    one = "1"
    all = "all"


class Expect(StrEnum):
    """Delivery semantics a run must demonstrate."""

    at_most_once = "at-most-once"
    at_least_once = "at-least-once"
    exactly_once = "exactly-once"


def _producer_properties(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--producer-property {item!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def probe(
    topic: Annotated[str | None, typer.Option(
        metavar="NAME", rich_help_panel=TOPIC,
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
        min=1, rich_help_panel=TOPIC,
        help="min.insync.replicas of the probe topic [default: 2; the broker's when 0].")
    ] = 2,
    unclean_leader_election: Annotated[bool | None, typer.Option(
        "--unclean-leader-election/--no-unclean-leader-election", rich_help_panel=TOPIC,
        help="unclean.leader.election.enable of the probe topic [default: the broker's].")
    ] = None,
    acks: Annotated[Acks, typer.Option(rich_help_panel=PRODUCER, help="Producer acks.")
                    ] = Acks.all,
    idempotence: Annotated[bool, typer.Option(
        "--idempotence/--no-idempotence", rich_help_panel=PRODUCER,
        help="enable.idempotence of the producer.")] = True,
    transactional: Annotated[bool, typer.Option(
        "--transactional", rich_help_panel=PRODUCER,
        help="Produce in transactions; read back with read_committed.")] = False,
    txn_size: Annotated[int, typer.Option(min=1, rich_help_panel=PRODUCER,
                                          help="Messages per transaction.")] = 100,
    abort_ratio: Annotated[float, typer.Option(
        min=0.0, max=1.0, rich_help_panel=PRODUCER,
        help="Fraction of transactions aborted on purpose.")] = 0.0,
    retries: Annotated[int | None, typer.Option(min=0, rich_help_panel=PRODUCER,
                                                help="Producer retries.")] = None,
    max_in_flight: Annotated[int | None, typer.Option(
        min=1, rich_help_panel=PRODUCER,
        help="max.in.flight.requests.per.connection.")] = None,
    linger_ms: Annotated[int | None, typer.Option(min=0, rich_help_panel=PRODUCER,
                                                  help="Producer linger.ms.")] = None,
    compression: Annotated[str | None, typer.Option(
        rich_help_panel=PRODUCER, help="compression.type (none, gzip, snappy, lz4, zstd).")
    ] = None,
    message_size: Annotated[int, typer.Option(min=40, rich_help_panel=PRODUCER,
                                              help="Bytes per message value.")] = 100,
    rate: Annotated[float | None, typer.Option(
        min=1.0, rich_help_panel=PRODUCER,
        help="Messages per second [default: as fast as possible].")] = None,
    count: Annotated[int | None, typer.Option(
        min=1, help="Messages to send [default: 10000 unless --duration].")] = None,
    duration: Annotated[float | None, typer.Option(
        min=0.1, metavar="SECONDS", help="Send for this long instead of --count.")] = None,
    producer_property: Annotated[list[str] | None, typer.Option(
        metavar="KEY=VALUE", rich_help_panel=PRODUCER,
        help="Producer-only librdkafka property, e.g. request.timeout.ms=1000; repeatable.")
    ] = None,
    fault: Annotated[list[str] | None, typer.Option(
        metavar="SPEC", rich_help_panel=FAULTS,
        help="kill-leader, stop-leader, pause-leader, pause-follower, kill-broker:ID, "
             "bounce-leader:N (lab), exec:'CMD', exec-heal:'CMD' (any cluster); repeatable.")
    ] = None,
    fault_at: Annotated[str, typer.Option(
        metavar="PCT%|SECONDS", rich_help_panel=FAULTS,
        help="When to inject: share of the run (40%) or seconds from the start.")] = "40%",
    fault_duration: Annotated[float, typer.Option(
        min=0.0, metavar="SECONDS", rich_help_panel=FAULTS,
        help="How long before the fault is healed.")] = 10.0,
    lab_state_dir: Annotated[Path | None, typer.Option(
        metavar="DIR", rich_help_panel=FAULTS,
        help="State directory of the lab whose brokers lab faults signal "
             "[default: the default lab].")] = None,
    expect: Annotated[Expect | None, typer.Option(
        help="Semantics the run must show; exit 1 when it does not "
             "[default: fail on loss only].")] = None,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the probe topic afterwards.")
                    ] = False,
    e2e_latency: Annotated[bool, typer.Option(
        "--e2e-latency/--no-e2e-latency",
        help="Read the topic while writing it, to measure end-to-end latency.")] = True,
    format: options.Format = None,
    output: options.Output = None,
    bootstrap_server: options.BootstrapServer = None,
    command_config: options.CommandConfig = None,
    property: options.Property = None,
    context: options.Context = None,
    timeout: options.Timeout = None,
) -> int:
    """Produce sequenced messages, read them back, and account for every one."""
    from kaudit.probe.faults import parse_fault, parse_fault_at
    from kaudit.probe.report import probe_document, probe_table
    from kaudit.probe.runner import ProbeSettings, run_probe

    if existing and not topic:
        raise InputError("--existing needs --topic NAME")
    if count is not None and duration is not None:
        raise InputError("give --count or --duration, not both")
    faults = tuple(parse_fault(f) for f in fault or [])
    if any(f.kind == "exec-heal" for f in faults) and not any(f.kind == "exec" for f in faults):
        raise InputError("--fault exec-heal:'CMD' needs an exec:'CMD' fault to heal")
    settings = ProbeSettings(
        topic=topic, existing=existing, partitions=partitions,
        replication_factor=replication_factor,
        min_insync_replicas=min_insync_replicas or None,
        unclean_leader_election=unclean_leader_election, acks=acks.value,
        idempotence=idempotence, transactional=transactional, txn_size=txn_size,
        abort_ratio=abort_ratio, retries=retries, max_in_flight=max_in_flight,
        linger_ms=linger_ms, compression=compression, message_size=message_size, rate=rate,
        count=count, duration=duration, faults=faults, fault_at=parse_fault_at(fault_at),
        fault_duration=fault_duration, expect=expect.value if expect else None, keep=keep,
        lab_state_dir=lab_state_dir, e2e_latency=e2e_latency,
        producer_properties=_producer_properties(producer_property))
    conn = options.connection(bootstrap_server, command_config, property, context, timeout)

    # Ctrl-C stops producing; what was sent is still verified and reported.
    interrupted = threading.Event()

    def on_sigint(_sig: int, _frame: FrameType | None) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt
        interrupted.set()
        print("kaudit probe: interrupted; verifying what was sent (Ctrl-C again to abandon)",
              file=sys.stderr)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        report = run_probe(conn, settings, interrupted)
    finally:
        signal.signal(signal.SIGINT, previous)
    fmt = default_format(format)
    emit(probe_document(report) if fmt is OutputFormat.json else probe_table(report), output)
    if report.interrupted:
        return int(ExitCode.INTERRUPTED)
    return int(ExitCode.OK if report.verdict == "pass" else ExitCode.FINDINGS)
