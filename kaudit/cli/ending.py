"""How a command that writes a report ends: the report written, a line on stderr when it
went to a file, the exit code."""

from __future__ import annotations

import sys

from kaudit.errors import ExitCode
from kaudit.report.output import emit


def written(command: str, verdict: str, output: str | None) -> None:
    """Say the verdict and where the report went, on stderr, when it went to ``-o FILE``
    (on stdout the report says it itself)."""
    if output and output != "-":
        print(f"kaudit {command}: {verdict}; report written to {output}", file=sys.stderr)


def end_run(command: str, text: str, output: str | None, *, verdict: str,
            interrupted: bool, failed: bool) -> int:
    """How every long command ends: its report written (to -o FILE, said on stderr with the
    one-line ``verdict``, or stdout), then its exit code: 130 when interrupted (the report
    covers what ran), 1 when the run found what it looks for (a loss, an unconfirmed
    claim), else 0."""
    emit(text, output)
    written(command, f"interrupted; {verdict}" if interrupted else verdict, output)
    if interrupted:
        return ExitCode.INTERRUPTED
    return ExitCode.FINDINGS if failed else ExitCode.OK


def first_of(verdict: str, reasons: list[str]) -> str:
    """``fail: <the first reason> (+2 more)``, or the verdict alone without reasons."""
    if not reasons:
        return verdict
    more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return f"{verdict}: {reasons[0]}{more}"
