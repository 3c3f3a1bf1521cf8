"""``--format table``: what an operator reads in a terminal."""

from __future__ import annotations

import textwrap

from tabulate import tabulate

from kaudit.check.findings import CheckResult, Finding, Guarantee, Reader, Severity
from kaudit.check.rules.groups import duration
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


LOSS_WARNING = "one broker failure can lose acknowledged writes"


def _semantics(g: Guarantee) -> str:
    # A topic alone allows at best what its settings allow; the producer decides the rest.
    return g.semantics.value if g.producer is not None else f"best: {g.semantics.value}"


def _why(g: Guarantee) -> str:
    reasons = list(g.reasons)
    if g.loss_tolerance == 0 and not any("lose acknowledged" in r for r in reasons):
        reasons.append(LOSS_WARNING)
    if g.readers:
        reasons.append("read by " + ", ".join(_reader(r) for r in g.readers))
    return "; ".join(reasons) or "-"


def _reader(r: Reader) -> str:
    if not r.lag:
        return f"{r.group} (caught up)"
    age = f", oldest unread {duration(r.oldest_unread_age_ms)}" \
        if r.oldest_unread_age_ms is not None else ""
    return f"{r.group} (lag {r.lag}{age})"


def _guarantee_row(g: Guarantee) -> list[str]:
    return [
        g.topic,
        _dash(g.producer),
        _semantics(g),
        str(g.loss_tolerance),
        _tolerance(g.write_tolerance),
        _why(g),
    ]


# --- the layout that fits a terminal: fewer columns, details on lines of their own --------

_FLOOR = 24
"""The message (or guarantee) column never gets narrower than this."""


def _natural(rows: list[list[str]], headers: list[str]) -> list[int]:
    return [max(len(line) for cell in [h, *(r[i] for r in rows)] for line in cell.split("\n"))
            for i, h in enumerate(headers)]


def _fit(rows: list[list[str]], headers: list[str], caps: list[int], width: int) -> list[int]:
    """Column widths for a grid table ``width`` characters wide: each column its natural
    width up to its cap, the last one what is left (at least :data:`_FLOOR`)."""
    natural = _natural(rows, headers)
    widths = [min(n, c) for n, c in zip(natural[:-1], caps, strict=True)]
    rest = width - (3 * len(headers) + 1) - sum(widths)
    return [*widths, max(_FLOOR, min(natural[-1], rest))]


def _narrow_finding_row(f: Finding, color: bool) -> list[str]:
    severity, _rule, _subject, message, expected, actual, source = _finding_row(f, color)
    details = []
    if f.expected is not None or f.actual is not None:
        details.append(f"expected {expected}, actual {actual}")
    if f.source:
        details.append(f"source: {source}")
    return [severity, f"{f.rule}\n{f.name}\n{f.subject.kind.value} {f.subject.name}",
            "\n".join([message, *details])]


def _narrow_guarantee_row(g: Guarantee) -> list[str]:
    return [g.topic, _dash(g.producer),
            f"{_semantics(g)}, loss tolerance {g.loss_tolerance}, write tolerance "
            f"{_tolerance(g.write_tolerance)}\nwhy: {_why(g)}"]


def _table(rows: list[list[str]], headers: list[str], widths: list[int],
           width: int | None = None) -> str:
    def draw(widths: list[int]) -> str:
        return str(tabulate(rows, headers=headers, tablefmt=_TABLE_STYLE, maxcolwidths=widths,
                            disable_numparse=True))

    text = draw(widths)
    if width is not None:
        # tabulate pads short headers; take what it added off the last column.
        over = max(len(line) for line in text.splitlines()) - width
        if over > 0 and widths[-1] - over >= _FLOOR:
            text = draw([*widths[:-1], widths[-1] - over])
    return text


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
    headings = [f"{header}, policies: {policies}"]
    if result.features:
        headings.append("features: " + ", ".join(
            f"{k}={v}" for k, v in sorted(result.features.items())))
    elif result.features_unread:
        headings.append(f"features: not read ({result.features_unread})")
    if options.width is not None:
        headings = [textwrap.fill(h, options.width, subsequent_indent="  ",
                                  break_on_hyphens=False) for h in headings]
    lines = [*headings, ""]

    narrow = options.width is not None
    if result.findings and narrow:
        assert options.width is not None
        rows = [_narrow_finding_row(f, color) for f in sorted(result.findings, key=_sort_key)]
        headers = ["severity", "rule / subject", "message"]
        lines += ["Findings", _table(rows, headers, _fit(rows, headers, [9, 26],
                                                         options.width), options.width)]
    elif result.findings:
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

    if result.guarantees and narrow:
        assert options.width is not None
        rows = [_narrow_guarantee_row(g) for g in result.guarantees]
        headers = ["topic", "producer", "guarantee"]
        lines += ["Guarantees", _table(rows, headers, _fit(rows, headers, [24, 20],
                                                           options.width), options.width)]
    elif result.guarantees:
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
