"""Where rendered output goes: stdout or ``-o FILE``, always redacted.

Files are written to a temporary name beside the target and renamed into
place, so an interrupted run never leaves a half-written report.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from enum import StrEnum
from pathlib import Path
from typing import Any

from kaudit.connection.redact import redact
from kaudit.errors import InputError


class OutputFormat(StrEnum):
    """Formats every command offers (check adds junit, sarif and github)."""

    table = "table"
    json = "json"


class PageFormat(StrEnum):
    """Formats of the reports that also make a web page (probe, matrix, prove, reconcile)."""

    table = "table"
    json = "json"
    html = "html"


class CheckFormat(StrEnum):
    """Values of ``kaudit check --format`` (declared here, with no formatter imported, so
    that ``--help`` does not load them); ``html`` is also chosen by ``-o FILE.html``."""

    table = "table"
    json = "json"
    junit = "junit"
    sarif = "sarif"
    github = "github"
    html = "html"


def choose_format(explicit: str | None, output: str | None = None, *,
                  html: bool = False) -> str:
    """The ``--format`` to use: the one given, else ``html`` for ``-o FILE.html`` (when the
    report has a page), else ``table`` on a terminal and ``json`` when stdout is piped (a
    script reads it)."""
    if explicit is not None:
        return str(explicit)
    if html and output and output.lower().endswith((".html", ".htm")):
        return PageFormat.html.value
    return OutputFormat.table.value if sys.stdout.isatty() else OutputFormat.json.value


NOT_A_TERMINAL_WIDTH = 100
"""The width tables fit when stdout is not a terminal and ``COLUMNS`` is not set."""


def table_width(output: str | None = None) -> int:
    """The width a table must fit: ``COLUMNS``, else the terminal's, else 100 (a file, a
    pipe, a CI log)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if not output and sys.stdout.isatty():
        return shutil.get_terminal_size((NOT_A_TERMINAL_WIDTH, 24)).columns
    return NOT_A_TERMINAL_WIDTH


def use_color(fmt: str, output: str | None) -> bool:
    """ANSI colours only in a table on a terminal, never in a file or with ``NO_COLOR``."""
    return (str(fmt) == OutputFormat.table and not output and sys.stdout.isatty()
            and "NO_COLOR" not in os.environ)


def to_json(document: dict[str, Any]) -> str:
    """Serialise a report document with secret-looking keys masked.

    Secrets inside free text are masked by :func:`emit`, which every report
    passes through; doing it here too would only do the same work twice.
    """
    return json.dumps(redact(document, text=False), indent=2, default=str) + "\n"


def _is_device(target: Path) -> bool:
    return target.exists() and not target.is_file() and not target.is_dir()


def output_problem(output: str) -> str | None:
    """Why a report could not be written to ``-o output`` (None: it can be), checked by the
    option before a command starts its work and again by :func:`emit`."""
    if output == "-":
        return None
    target = Path(output).expanduser()
    if target.is_dir():
        return f"{output} is a directory"
    if not target.parent.is_dir():
        return f"directory {target.parent} does not exist"
    # A file is written beside its target and renamed over it; a device is written in place.
    writable = target if _is_device(target) else target.parent
    if not os.access(writable, os.W_OK):
        return f"{writable} is not writable"
    return None


def emit(text: str, output: str | None = None) -> None:
    """Write ``text`` (redacted) to ``output`` atomically, or to stdout."""
    text = redact(text)
    if not output or output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    problem = output_problem(output)
    if problem:
        raise InputError(f"-o {output}: {problem}")
    target = Path(output).expanduser()
    write_file(target, text.encode("utf-8"), f"-o {output}")


def write_file(target: Path, data: bytes, shown: str) -> None:
    """Write ``data`` to ``target``: beside it and renamed over it, so a failed or
    interrupted write never leaves a half-written file. A device, FIFO or socket
    (/dev/null, /dev/stderr, a named pipe) is written in place: a rename would replace it.
    A replaced file keeps its mode; a new one gets the usual 0644 (mkstemp's is 0600).
    Any OSError is one line (``shown: cannot write: ...``), exit 2."""
    try:
        if _is_device(target):
            with open(target, "wb") as fh:
                fh.write(data)
            return
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                   dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        # What the checks before the run could not foresee: a full disk, a read-only or
        # pseudo file system (/proc), a quota. An old file is left as it was.
        raise InputError(f"{shown}: cannot write: {exc.strerror or exc}") from None
