"""Exit codes and the one exception hierarchy that maps onto them.

Every command ends through :func:`kaudit.cli.app.main`, which turns a
:class:`KauditError` into one line on stderr and its ``exit_code``. Nothing
else in kaudit chooses an exit code.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """The exit codes shared by every kaudit command (ARCHITECTURE.md, "Contracts")."""

    OK = 0
    """Ran, nothing at or above the failure threshold."""
    FINDINGS = 1
    """Ran, and found findings, delivery violations or discrepancies."""
    USAGE = 2
    """Usage or input error: bad option, invalid policy or manifest, unreadable file."""
    UNREACHABLE = 3
    """Cannot reach or authenticate to the cluster, the sink, or the Java/Spark runtime."""
    INTERRUPTED = 130
    """Interrupted (Ctrl-C or SIGTERM) after cleaning up."""
    INTERNAL = 70
    """An unexpected error inside kaudit (a bug); -v prints the traceback."""


class KauditError(Exception):
    """Base of every error kaudit reports to the user as one line."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class InputError(KauditError):
    """Bad input: an option value, a file, a policy. Exit 2."""

    exit_code = ExitCode.USAGE


class FileInputError(InputError):
    """Bad content in a file, reported as ``file:line: message``."""

    def __init__(self, path: str, line: int | None, message: str, *, hint: str | None = None):
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {message}", hint=hint)
        self.path = path
        self.line = line


def unreadable(path: object, exc: OSError | UnicodeDecodeError, encoding: str = "UTF-8"
               ) -> InputError:
    """The one line for a file that could not be read: what the system said, or where the
    text stops being ``encoding`` (a binary or wrongly encoded file)."""
    if isinstance(exc, UnicodeDecodeError):
        line = exc.object[:exc.start].count(b"\n") + 1
        return FileInputError(str(path), line, f"not {encoding} text (byte "
                                               f"0x{exc.object[exc.start]:02x})")
    return InputError(f"{path}: cannot read: {exc.strerror or exc.__class__.__name__}")


class ConnectionFailure(KauditError):
    """The cluster (or sink) cannot be reached or refuses our credentials. Exit 3."""

    exit_code = ExitCode.UNREACHABLE


class RuntimeUnavailable(KauditError):
    """Java, Maven, Kafka jars or Spark cannot be found or started. Exit 3."""

    exit_code = ExitCode.UNREACHABLE


class SourceChanged(KauditError):
    """A side (topic or sink) read twice in one run gave different rows: no verdict can be
    drawn from the two. Exit 3, as for a sink that cannot be read."""

    exit_code = ExitCode.UNREACHABLE


class LabError(KauditError):
    """The local lab cluster failed to start or to do what was asked. Exit 3."""

    exit_code = ExitCode.UNREACHABLE


class LabStateError(InputError):
    """The lab state directory is not in a state that allows the request. Exit 2."""
