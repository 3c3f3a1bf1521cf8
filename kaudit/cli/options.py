"""Options shared by several commands, declared once."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kaudit.report.output import OutputFormat, PageFormat, output_problem

if TYPE_CHECKING:
    # Read only when a command runs: --help and shell completion never resolve a connection.
    from kaudit.connection.settings import ConnectionSettings

CONNECTION = "Connection"
FAULTS_PANEL = "Faults"
PRODUCER_PANEL = "Producer"
"""Help-panel titles of the options of the commands that inject faults and produce."""


class Expect(StrEnum):
    """Delivery semantics a run must demonstrate."""

    at_most_once = "at-most-once"
    at_least_once = "at-least-once"
    exactly_once = "exactly-once"


ExpectOption = Annotated[Expect | None, typer.Option(
    help="Semantics the run must show; exit 1 when it does not [default: fail on loss only].")]
"""``--expect`` of probe and probe consume."""
FaultLabStateDir = Annotated[Path | None, typer.Option(
    metavar="DIR", rich_help_panel=FAULTS_PANEL,
    help="State directory of the lab whose brokers the faults signal [default: the default "
         "lab].")]
"""``--lab-state-dir`` of probe, probe matrix, probe consume and canary (lab faults)."""
FaultAtOption = Annotated[str, typer.Option(
    "--fault-at", metavar="SECONDS|PCT%", rich_help_panel=FAULTS_PANEL,
    help="When to inject: seconds from the start, or a share of the run (40%): of --count "
         "or --duration (probe consume: of the input committed; probe share: of the records "
         "processed); never before partition 0's first acknowledged write. A run that ends "
         "first says in its notes that the fault never struck.")]
"""``--fault-at`` of every command that takes faults (each with its own default)."""
FaultDurationOption = Annotated[float, typer.Option(
    "--fault-duration", min=0.0, metavar="SECONDS", rich_help_panel=FAULTS_PANEL,
    help="How long before the fault is healed (a killed broker restarted, a frozen one "
         "resumed).")]
"""``--fault-duration`` of every command that takes faults (each with its own default)."""

Transactional = Annotated[bool, typer.Option(
    "--transactional", rich_help_panel=PRODUCER_PANEL,
    help="Produce in transactions; read back with read_committed.")]
TxnSize = Annotated[int, typer.Option(min=1, rich_help_panel=PRODUCER_PANEL,
                                      help="Messages per transaction.")]
AbortRatio = Annotated[float, typer.Option(
    min=0.0, max=1.0, rich_help_panel=PRODUCER_PANEL,
    help="Fraction of transactions aborted on purpose.")]
"""``--transactional``, ``--txn-size`` and ``--abort-ratio`` of probe and canary."""


def check_transaction_options(ctx: typer.Context, transactional: bool, acks: str) -> None:
    """--txn-size and --abort-ratio describe transactions: refused without them (a run
    without the transactions they describe would be silent about it); and a transactional
    producer writes with acks=all only."""
    from kaudit.cli.clicompat import ParameterSource
    from kaudit.errors import InputError

    if transactional:
        if acks != "all":
            raise InputError(f"--transactional needs --acks all (a transactional producer "
                             f"is idempotent), not --acks {acks}")
        return
    given = [f"--{name.replace('_', '-')}" for name in ("txn_size", "abort_ratio")
             if ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)]
    if given:
        raise InputError(f"{' and '.join(given)} "
                         f"{'need' if len(given) > 1 else 'needs'} --transactional")

BootstrapServer = Annotated[
    str | None,
    typer.Option(
        "--bootstrap-server",
        "-b",
        metavar="HOST:PORT[,...]",
        rich_help_panel=CONNECTION,
        help="Brokers to bootstrap from [env KAUDIT_BOOTSTRAP_SERVERS].",
    ),
]
CommandConfig = Annotated[
    str | None,
    typer.Option(
        "--command-config",
        "-F",
        metavar="FILE",
        rich_help_panel=CONNECTION,
        help="Java client.properties or librdkafka properties file [env KAUDIT_COMMAND_CONFIG].",
    ),
]
Property = Annotated[
    list[str] | None,
    typer.Option(
        "--property",
        "-X",
        metavar="KEY=VALUE",
        rich_help_panel=CONNECTION,
        help="librdkafka client property; repeatable; overrides -F.",
    ),
]
Context = Annotated[
    str | None,
    typer.Option(
        "--context",
        metavar="NAME",
        rich_help_panel=CONNECTION,
        help="Named context from ~/.config/kaudit/config.yaml [env KAUDIT_CONFIG for the file].",
    ),
]
Timeout = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        rich_help_panel=CONNECTION,
        help="Upper bound for every network wait, at most 86400 (a day) [default: 10].",
    ),
]

Format = Annotated[
    OutputFormat | None,
    typer.Option(
        "--format",
        "-f",
        case_sensitive=False,
        help="Output format [default: table on a terminal, json otherwise].",
    ),
]
#: For the reports that also make a self-contained web page (probe, matrix, prove, reconcile).
PageFormatOption = Annotated[
    PageFormat | None,
    typer.Option(
        "--format",
        "-f",
        case_sensitive=False,
        help="Output format; html is one page with the pictures in it [default: html for "
             "-o FILE.html, table on a terminal, json otherwise].",
    ),
]
#: For commands whose plain output is already what scripts read (the bootstrap line of
#: ``lab up``, the exports of ``lab env``): JSON only when asked for, also when piped.
PlainFormat = Annotated[
    OutputFormat,
    typer.Option(
        "--format",
        "-f",
        case_sensitive=False,
        help="json for a JSON document on stdout [default: table, also when piped].",
    ),
]
def _writable_output(value: str | None) -> str | None:
    """Refuse an -o the report could never be written to before the work starts: a probe
    or a reconcile runs for minutes, and its report would be lost at the end."""
    problem = output_problem(value) if value is not None else None
    if problem:
        raise typer.BadParameter(problem)
    return value


def complete_fault(command: str, *, listed: bool = False
                   ) -> Callable[[str], list[tuple[str, str]]]:
    """Shell completion of ``--fault`` for ``command`` (a registry name: PRODUCER,
    CONSUMER or CANARY): the faults it takes, each with what it does (zsh and fish show it).

    ``listed``: the value is a comma-separated list (``probe matrix --fault``); the item
    after the last comma is completed, and ``none`` is one of the choices.
    """

    def complete(incomplete: str) -> list[tuple[str, str]]:
        import textwrap

        from kaudit.probe.faults.registry import faults_of

        done, comma, item = incomplete.rpartition(",") if listed else ("", "", incomplete)
        # One short line each: typer renders a help with rich, which wraps it at 80
        # columns (fish would read each wrapped line as one more choice) and reads ":ID:"
        # as an emoji.
        choices = [(f.name, textwrap.shorten(f"{f.usage()} - {f.description}" if f.argument
                                             else f.description, 72, placeholder="..."))
                   for f in faults_of(command)]
        if listed:
            choices.append(("none", "no fault"))
        given = {part.strip() for part in done.split(",")}
        # The shell replaces the whole word, so each choice carries the items before it.
        return [(f"{done}{comma}{name}", help) for name, help in choices
                if name.startswith(item) and name not in given]

    return complete


def topic_name(value: str | None) -> str | None:
    """Refuse a --topic Kafka would refuse, with the reason (the broker only says "Invalid
    topic")."""
    from kaudit.cluster.model import topic_name_problem

    problem = topic_name_problem(value) if value is not None else None
    if problem:
        raise typer.BadParameter(problem)
    return value


Output = Annotated[
    str | None,
    typer.Option(
        "--output", "-o", metavar="FILE", callback=_writable_output,
        help="Write the report to FILE instead of stdout.",
    ),
]

StateDir = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        metavar="DIR",
        help="Lab state directory [default: ~/.local/state/kaudit/lab, env KAUDIT_LAB_DIR].",
    ),
]


@dataclass(frozen=True)
class ConnectionOptions:
    """The five connection options of a command, as given (resolved on demand: a command
    that works offline, like ``check --snapshot``, never reads a context or the env)."""

    bootstrap_server: str | None = None
    command_config: str | None = None
    property: list[str] | None = None
    context: str | None = None
    timeout: float | None = None

    def settings(self) -> ConnectionSettings:
        """Resolve flags, environment and context into connection settings."""
        from kaudit.connection.settings import resolve_connection

        return resolve_connection(
            bootstrap_server=self.bootstrap_server,
            command_config=self.command_config,
            properties=self.property or (),
            context=self.context,
            timeout=self.timeout,
        )


NO_CONNECTION = ConnectionOptions()
"""The placeholder default of a command's ``connection`` parameter (see :func:`with_connection`)."""

_CONNECTION_OPTIONS = {
    "bootstrap_server": BootstrapServer,
    "command_config": CommandConfig,
    "property": Property,
    "context": Context,
    "timeout": Timeout,
}


def with_connection(command: Callable[..., int]) -> Callable[..., int]:
    """Give ``command`` the connection options, in place of its ``connection`` parameter.

    Typer reads a command's options from its signature; the wrapper's signature has the
    five options where ``connection: ConnectionOptions`` stood, and the command gets them
    back as one :class:`ConnectionOptions`.
    """
    signature = inspect.signature(command, eval_str=True)
    parameters: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        if parameter.name == "connection":
            parameters += [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                             default=None, annotation=annotation)
                           for name, annotation in _CONNECTION_OPTIONS.items()]
        else:
            parameters.append(parameter)

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> int:
        given = {name: kwargs.pop(name, None) for name in _CONNECTION_OPTIONS}
        return command(*args, connection=ConnectionOptions(**given), **kwargs)

    wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {
        **{name: p.annotation for name, p in signature.parameters.items() if name != "connection"},
        **_CONNECTION_OPTIONS,
        "return": signature.return_annotation,
    }
    return wrapper


def state_dir(value: Path | None) -> Path:
    """The lab state directory to use."""
    from kaudit.lab.state import default_state_dir

    return (value or default_state_dir()).expanduser().resolve()
