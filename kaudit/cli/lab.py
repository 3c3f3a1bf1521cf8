"""``kaudit lab``: a real local Apache Kafka cluster to try kaudit on and to break."""

from __future__ import annotations

import contextlib
import os
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from kaudit.cli import options
from kaudit.cli.interrupt import sigterm_as_interrupt
from kaudit.errors import ExitCode, LabStateError
from kaudit.lab.runtime import DEFAULT_KAFKA_VERSION, kafka_runtime
from kaudit.lab.security import Security
from kaudit.report.output import OutputFormat, choose_format, emit

if TYPE_CHECKING:
    from kaudit.lab.state import LabState

app = typer.Typer(
    help="Run a real local Apache Kafka cluster (KRaft, loopback) to try kaudit on and "
    "to break on purpose.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


class Signal(StrEnum):
    """Signals ``lab kill`` can send."""

    TERM = "TERM"
    KILL = "KILL"
    STOP = "STOP"


def _say(message: str) -> None:
    typer.echo(f"kaudit lab: {message}", err=True)


MANY_BROKERS = 9
"""Above this, ``lab up`` says what the user asked of the machine before it starts."""


def _warn_if_many(brokers: int | None) -> None:
    if brokers is not None and brokers > MANY_BROKERS:
        from kaudit.lab.layout import BROKER_HEAP

        _say(f"warning: {brokers} brokers are {brokers} JVMs (heap {BROKER_HEAP} each) on "
             f"{os.cpu_count() or 1} CPU core(s); a lab of 3 shows every fault kaudit injects")


NodeId = Annotated[
    int, typer.Argument(metavar="NODE_ID", help="Broker id (1..N), controller id (100..) or "
                                                "the Kafka Connect worker (200).")
]


@app.command()
def up(
    brokers: Annotated[int | None, typer.Option(
        show_default=False, help="Number of brokers [default: 3; a stopped lab's own on "
                                 "restart].")] = None,
    controllers: Annotated[int | None, typer.Option(
        show_default=False, help="Number of dedicated KRaft controllers [default: 1; a "
                                 "stopped lab's own on restart].")] = None,
    kafka_version: Annotated[
        str, typer.Option(help="Apache Kafka version resolved from Maven Central.")
    ] = DEFAULT_KAFKA_VERSION,
    kafka_home: Annotated[
        str | None,
        typer.Option(metavar="DIR", help="Use an existing Kafka installation instead of Maven."),
    ] = None,
    broker_config: Annotated[
        list[str] | None,
        typer.Option(
            metavar="[ID:]KEY=VALUE",
            help="Broker setting for every broker, or with ID: for broker ID only (e.g. "
            "2:replica.lag.time.max.ms=60000, brokers that disagree as after a partial "
            "rollout); repeatable; {port} in VALUE is the broker's own port.",
        ),
    ] = None,
    dynamic_quorum: Annotated[bool | None, typer.Option(
        "--dynamic-quorum/--static-quorum", show_default=False,
        help="The controllers' KRaft quorum: dynamic (KIP-853: controllers formatted with "
             "--initial-controllers, found through controller.quorum.bootstrap.servers, "
             "kraft.version 1; voters can be added and removed) or static "
             "(controller.quorum.voters, kraft.version 0). [default: static for a new lab, "
             "so that the default lab stays the one every earlier release and test ran; "
             "a stopped lab's own on restart]")] = None,
    tiered_storage: Annotated[bool, typer.Option(
        "--tiered-storage",
        help="Run tiered storage on the brokers with Kafka's LocalTieredStorage (its test "
             "jars, fetched with mvn once); remote segments go to STATE_DIR/tiered-storage. "
             "A topic tiers with remote.storage.enable=true. Plaintext labs only.")] = False,
    wait: Annotated[
        float, typer.Option(metavar="SECONDS", help="How long to wait for the cluster to be ready.")
    ] = 180,
    security: Annotated[
        Security | None,
        typer.Option(
            case_sensitive=False,
            show_default=False,
            help="plaintext, sasl_ssl (SCRAM-SHA-512 or PLAIN over TLS, with ACLs), mtls "
            "(client certificates) or oauthbearer (unsigned test tokens over TLS, with ACLs: "
            "for trying token clients); secured labs write client properties under "
            "STATE_DIR/security [default: plaintext for a new lab, the lab's own on "
            "restart].",
        ),
    ] = None,
    connect: Annotated[bool, typer.Option(
        "--connect", help="Also run a Kafka Connect worker (node 200, distributed mode) with "
                          "Debezium's PostgreSQL source and JDBC sink and Iceberg's sink; "
                          "adds one to a lab that has none.")] = False,
    connect_config: Annotated[list[str] | None, typer.Option(
        metavar="KEY=VALUE", help="Kafka Connect worker setting (e.g. "
                                  "offset.flush.interval.ms=600000); repeatable.")] = None,
    state_dir: options.StateDir = None,
    format: options.PlainFormat = OutputFormat.table,
    output: options.Output = None,
) -> int:
    """Start the lab (or restart a stopped one) and print its bootstrap servers.

    With --format json, print the lab's status document (as `lab status -f json`).
    """
    from kaudit.connection.settings import parse_key_values
    from kaudit.lab import manager
    from kaudit.lab.brokerconfig import parse_broker_config
    from kaudit.lab.quorum import Quorum

    directory = options.state_dir(state_dir)
    _warn_if_many(brokers)
    extra = parse_broker_config(broker_config or [])
    quorum = None if dynamic_quorum is None else (
        Quorum.dynamic if dynamic_quorum else Quorum.static)
    worker = parse_key_values(connect_config or [], "--connect-config")
    if worker and not connect:
        raise LabStateError("--connect-config is for the Kafka Connect worker: add --connect")
    # A CI job's cancel or a `kill` mid-start stops the nodes this start launched, as
    # Ctrl-C does, rather than leaving them running unready.
    with sigterm_as_interrupt():
        state = manager.lab_up(
            directory,
            lambda: kafka_runtime(kafka_version, kafka_home),
            brokers=brokers,
            controllers=controllers,
            broker_config=extra,
            wait_s=wait,
            security=security,
            connect=worker if connect else None,
            quorum=quorum,
            tiered=tiered_storage,
            say=_say,
        )
    _say(f"ready: {len(state.brokers)} brokers, Kafka {state.kafka_version}, state in {directory}")
    if state.client_properties is not None:
        _say(f"{state.security}: client settings in {state.client_properties}; "
             'eval "$(kaudit lab env)" to use them')
    _emit_state(state, format, output, plain=state.bootstrap + "\n")
    return ExitCode.OK


def _emit_state(state: LabState, format: OutputFormat, output: str | None, plain: str,
                purged: bool | None = None) -> None:
    """What a lab action prints: its plain line(s), or the lab's status document."""
    from kaudit.report.base import render
    from kaudit.report.lab import LAB_STATUS, LabStatus

    if format is OutputFormat.json:
        emit(render(LAB_STATUS, LabStatus(state, purged), "json"), output)
    elif plain or output:
        emit(plain, output)


@app.command()
def status(
    state_dir: options.StateDir = None, format: options.Format = None, output: options.Output = None
) -> int:
    """Show each node's pid, port and state, and the bootstrap servers."""
    from kaudit.lab.state import LabState
    from kaudit.report.base import render
    from kaudit.report.lab import LAB_STATUS, LabStatus

    state = LabState.load(options.state_dir(state_dir))
    emit(render(LAB_STATUS, LabStatus(state), choose_format(format)), output)
    return ExitCode.OK


@app.command()
def kill(
    node_id: NodeId,
    signal: Annotated[
        Signal,
        typer.Option(
            "--signal",
            "-s",
            case_sensitive=False,
            help="TERM: controlled shutdown; KILL: crash; STOP: freeze (resume with start).",
        ),
    ] = Signal.KILL,
    state_dir: options.StateDir = None,
    format: options.PlainFormat = OutputFormat.table,
    output: options.Output = None,
) -> int:
    """Stop one node the way a failure would.

    With --format json, print the lab's status document afterwards.
    """
    from kaudit.lab import manager
    from kaudit.lab.state import LabState

    directory = options.state_dir(state_dir)
    node = manager.lab_kill(directory, node_id, signal.value)
    verb = "paused" if signal is Signal.STOP else "stopped"
    _say(f"{node.role} {node.id} {verb} (SIG{signal.value})")
    _emit_state(LabState.load(directory), format, output, plain="")
    return ExitCode.OK


@app.command()
def start(
    node_id: NodeId,
    wait: Annotated[
        float, typer.Option(metavar="SECONDS", help="How long to wait for it to register.")
    ] = 120,
    state_dir: options.StateDir = None,
    format: options.PlainFormat = OutputFormat.table,
    output: options.Output = None,
) -> int:
    """Restart a killed node, or resume a paused one.

    With --format json, print the lab's status document afterwards.
    """
    from kaudit.lab import manager
    from kaudit.lab.state import LabState

    directory = options.state_dir(state_dir)
    node, done = manager.lab_start(directory, node_id, wait_s=wait)
    _say(f"{node.role} {node.id} {done}")
    _emit_state(LabState.load(directory), format, output, plain="")
    return ExitCode.OK


@app.command()
def down(
    purge: Annotated[bool, typer.Option(help="Also delete all data and logs.")] = False,
    state_dir: options.StateDir = None,
    format: options.PlainFormat = OutputFormat.table,
    output: options.Output = None,
) -> int:
    """Stop every node; with --purge also delete the lab's data.

    With --format json, print the lab's status document as it was left (every node
    down), with "purged".
    """
    from kaudit.lab import manager
    from kaudit.lab.state import LabState

    directory = options.state_dir(state_dir)
    before = None
    if format is OutputFormat.json:
        with contextlib.suppress(LabStateError):  # lab_down says what is wrong
            before = LabState.load(directory)
    state = manager.lab_down(directory, purge=purge, say=_say)
    _say(f"stopped{' and deleted' if purge else ''} the lab in {directory}")
    left = state or before
    if left is not None:
        # Purged: the nodes of the state loaded before, whose processes are gone now.
        _emit_state(left, format, output, plain="", purged=purge)
    return ExitCode.OK


@app.command()
def env(
    state_dir: options.StateDir = None,
    format: options.PlainFormat = OutputFormat.table,
    output: options.Output = None,
) -> int:
    """Print shell exports that point kaudit at the lab: eval "$(kaudit lab env)".

    With --format json, the same variables as a JSON object (null: unset it).
    """
    from kaudit.lab.state import LabState
    from kaudit.report.base import render
    from kaudit.report.lab import LAB_ENV

    state = LabState.load(options.state_dir(state_dir))
    emit(render(LAB_ENV, state, format.value), output)
    return ExitCode.OK
