"""Options shared by several commands, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kaudit.connect.settings import ConnectionSettings, resolve_connection
from kaudit.lab.state import default_state_dir
from kaudit.report.output import OutputFormat, output_problem

CONNECTION = "Connection"

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
        help="Upper bound for every network wait [default: 10].",
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


def connection(
    bootstrap_server: str | None,
    command_config: str | None,
    properties: list[str] | None,
    context: str | None,
    timeout: float | None,
) -> ConnectionSettings:
    """Resolve the connection options of a command."""
    return resolve_connection(
        bootstrap_server=bootstrap_server,
        command_config=command_config,
        properties=properties or (),
        context=context,
        timeout=timeout,
    )


def state_dir(value: Path | None) -> Path:
    """The lab state directory to use."""
    return (value or default_state_dir()).expanduser().resolve()
