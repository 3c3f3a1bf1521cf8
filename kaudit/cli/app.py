"""The ``kaudit`` command: the one place errors become exit codes."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Annotated

import typer

from kaudit import __version__
from kaudit.cli import canary, check, cluster, demo, lab, probe, reconcile, snapshot
from kaudit.cli.clicompat import ClickException
from kaudit.cli.root import Interrupted, KauditGroup, prepared
from kaudit.connection.redact import redact
from kaudit.errors import ExitCode, KauditError

app = typer.Typer(
    name="kaudit",
    cls=KauditGroup,
    help="Audit what an Apache Kafka cluster really delivers: check its configuration, "
    "probe its behaviour, reconcile its sinks.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(lab.app, name="lab")
app.command("canary")(canary.canary)
app.command("check")(check.check)
app.command("cluster")(cluster.cluster)
app.command("demo")(demo.demo)
app.add_typer(probe.app, name="probe")
app.command("reconcile")(reconcile.reconcile)
app.command("snapshot")(snapshot.snapshot)


class _RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return str(redact(super().format(record)))


def configure_logging(verbosity: int) -> None:
    """Logs go to stderr, redacted; librdkafka's own chatter only with -vv."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_RedactingFormatter("kaudit: %(levelname)s: %(message)s"))
    root = logging.getLogger("kaudit")
    root.handlers[:] = [handler]
    root.propagate = False
    root.setLevel(
        logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    )
    logging.getLogger("kaudit.librdkafka").setLevel(
        logging.DEBUG if verbosity >= 2 else logging.CRITICAL + 1
    )


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kaudit {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    verbose: Annotated[
        int,
        typer.Option(
            "--verbose", "-v", count=True, help="More logging on stderr; -vv adds librdkafka's."
        ),
    ] = 0,
) -> None:
    """Audit what an Apache Kafka cluster really delivers."""
    configure_logging(verbose)


def error_line(exc: KauditError) -> str:
    """The one line printed for an error, redacted."""
    return f"kaudit: error: {redact(str(exc))}"


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app and map every outcome to an exit code."""
    configure_logging(0)
    try:
        command = prepared(typer.main.get_command(app))
        result = command.main(args=argv, prog_name="kaudit", standalone_mode=False)
        code = result if isinstance(result, int) else ExitCode.OK
    except KauditError as exc:
        print(error_line(exc), file=sys.stderr)
        code = exc.exit_code
    except typer.Abort:
        print("kaudit: interrupted", file=sys.stderr)
        code = ExitCode.INTERRUPTED
    except (KeyboardInterrupt, Interrupted):
        print("kaudit: interrupted", file=sys.stderr)
        code = ExitCode.INTERRUPTED
    except ClickException as exc:
        exc.show()
        code = ExitCode.USAGE if exc.exit_code == 2 else exc.exit_code
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); stop quietly like other Unix tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = ExitCode.OK
    except Exception as exc:  # a bug: still one line, never a bare traceback
        if logging.getLogger("kaudit").isEnabledFor(logging.INFO):
            import traceback

            traceback.print_exc()
        print(redact(f"kaudit: internal error: {exc.__class__.__name__}: {exc} "
                     "(a bug in kaudit; run with -v for the traceback)"), file=sys.stderr)
        code = ExitCode.INTERNAL
    sys.exit(int(code))


def run() -> None:
    """The process entry point (console script and ``python -m kaudit``): :func:`main`,
    then an exit that skips interpreter teardown.

    librdkafka clients that a failed request left in reference cycles (the client keeps
    its futures in C, out of the garbage collector's sight) would otherwise be destroyed
    during teardown, and their callbacks then run in a half-finalised interpreter: a CI
    run saw ``kaudit cluster`` print its exit-3 line and die of SIGSEGV. Everything kaudit
    writes is written and closed before :func:`main` returns; only the standard streams
    and logging are flushed here.
    """
    try:
        main()
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        # A reader that went away, or a closed stream: nothing more can be said.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
