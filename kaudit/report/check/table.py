"""``--format table``: what an operator reads in a terminal."""

from __future__ import annotations

from tabulate import tabulate

from kaudit.check.findings import CheckResult, Finding, Guarantee, Severity
from kaudit.report.check.record import RenderOptions, summary_line

# Column widths in characters; long messages and paths wrap inside their cell instead of
# pushing the table past a normal terminal width.
_FINDING_WIDTHS = [9, 26, 22, 44, 14, 14, 24]
_GUARANTEE_WIDTHS = [24, 24, 13, 9, 9, 44]
_TABLE_STYLE = "grid"  # row rules keep multi-line (wrapped) rows apart; plain ASCII

_RESET = "\x1b[0m"
_COLORS = {
    Severity.error: "\x1b[1;31m",
    Severity.warning: "\x1b[33m",
    Severity.info: "\x1b[36m",
}
_DIM = "\x1b[2m"


def _paint(text: str, code: str, color: bool) -> str:
    if not color:
        return text
    # Per line: tabulate splits multi-line cells, and a code left open would tint the borders.
    return "\n".join(f"{code}{line}{_RESET}" for line in text.split("\n"))


def _dash(value: str | None) -> str:
    return "-" if value is None or value == "" else value


def _finding_row(f: Finding, color: bool) -> list[str]:
    if f.waived_by is not None:
        severity = _paint(f"{f.severity.value}\n(waived)", _DIM, color)
        message = f"{f.message}\nWaived: {f.waived_by}"
    else:
        severity = _paint(f.severity.value, _COLORS[f.severity], color)
        message = f.message
    return [
        severity,
        f"{f.rule}\n{f.name}",  # id and name on their own lines: names wrap badly at hyphens
        f"{f.subject.kind.value} {f.subject.name}",
        message,
        _dash(f.expected),
        _dash(f.actual),
        _dash(f.source),
    ]


def _tolerance(n: int) -> str:
    # Negative write tolerance means acks=all writes fail already, with every broker up.
    return "blocked" if n < 0 else str(n)


def _guarantee_row(g: Guarantee) -> list[str]:
    return [
        g.topic,
        _dash(g.producer),
        g.semantics.value,
        str(g.loss_tolerance),
        _tolerance(g.write_tolerance),
        "; ".join(g.reasons) or "-",
    ]


def _sort_key(f: Finding) -> tuple[bool, int]:
    # Open findings first, worst first; the rules' own order is kept within a severity.
    return (f.waived_by is not None, -f.severity.rank)


def render_table(result: CheckResult, options: RenderOptions) -> str:
    """Findings table, guarantees table, then the one-line summary.

    Colour (ANSI) only when ``options.color``; otherwise the text has no escape codes.
    """
    color = options.color
    policies = ", ".join(result.policies) or "none"
    header = f"kaudit check: {result.origin}"
    if result.cluster_id:
        header += f", cluster {result.cluster_id}"
    lines = [f"{header}, policies: {policies}", ""]

    if result.findings:
        rows = [_finding_row(f, color) for f in sorted(result.findings, key=_sort_key)]
        lines.append("Findings")
        lines.append(
            tabulate(
                rows,
                headers=["severity", "rule", "subject", "message", "expected", "actual", "source"],
                tablefmt=_TABLE_STYLE,
                maxcolwidths=_FINDING_WIDTHS,
                disable_numparse=True,
            )
        )
    else:
        lines.append("Findings: none")
    lines.append("")

    if result.guarantees:
        lines.append("Guarantees")
        lines.append(
            tabulate(
                [_guarantee_row(g) for g in result.guarantees],
                headers=[
                    "topic",
                    "producer",
                    "semantics",
                    "loss\ntolerance",
                    "write\ntolerance",
                    "why",
                ],
                tablefmt=_TABLE_STYLE,
                maxcolwidths=_GUARANTEE_WIDTHS,
                disable_numparse=True,
            )
        )
    else:
        lines.append("Guarantees: none")
    lines.append("")

    summary = summary_line(result)
    counts = result.counts()
    if counts["errors"]:
        summary = _paint(summary, _COLORS[Severity.error], color)
    elif counts["warnings"]:
        summary = _paint(summary, _COLORS[Severity.warning], color)
    lines.append(summary)
    return "\n".join(lines) + "\n"
