"""``--format table``: what an operator reads in a terminal."""

from __future__ import annotations

import re

from tabulate import tabulate

from kaudit.check.findings import CheckResult, Finding, Guarantee, Reader, Severity
from kaudit.check.rules.groups import duration
from kaudit.report.check.record import RenderOptions, summary_line
from kaudit.report.check.words import producer_gives, survives

# Column widths in characters; long messages and paths wrap inside their cell instead of
# pushing the table past a normal terminal width. A column is widened to its longest word
# (or path component) rather than cut through it.
_FINDING_WIDTHS = [9, 26, 22, 44, 14, 14, 24]
_GUARANTEE_WIDTHS = [24, 24, 22, 30, 44]
_TABLE_STYLE = "grid"  # row rules keep multi-line (wrapped) rows apart; plain ASCII
_HEADER_PAD = 2  # tabulate makes every column at least its header plus this

BREAK_MARK = "\\"
"""Ends a line where a word longer than its column was cut (no space or ``/`` to wrap at)."""

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


def _why(g: Guarantee) -> str:
    reasons = list(g.reasons)
    if g.readers:
        reasons.append("read by " + ", ".join(_reader(r) for r in g.readers))
    return "; ".join(reasons) or "-"


def _reader(r: Reader) -> str:
    name = f"share group {r.group}" if r.kind == "share" else r.group
    if not r.lag:
        return f"{name} (caught up)"
    age = f", oldest unread {duration(r.oldest_unread_age_ms)}" \
        if r.oldest_unread_age_ms is not None else ""
    return f"{name} (lag {r.lag}{age})"


def _guarantee_row(g: Guarantee) -> list[str]:
    return [
        g.topic,
        _dash(g.producer),
        producer_gives(g),
        survives(g),
        _why(g),
    ]


# --- wrapping: at spaces, then after a path's "/", inside a word only when it cannot fit ---

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _visible(text: str) -> int:
    return len(_ANSI.sub("", text))


def _parts(word: str, breaks: str = "/") -> list[str]:
    """``/tmp/lab/orders.properties`` -> ``/``, ``tmp/``, ``lab/``, ``orders.properties``."""
    return [part for part in re.split(f"(?<=[{re.escape(breaks)}])", word) if part]


def wrap(text: str, width: int, indent: str = "", breaks: str = "/") -> str:
    """``text`` in lines of at most ``width``: a word that does not fit goes to the next line
    whole; one longer than a line is split after one of ``breaks`` (a path's ``/``), and only
    a part longer than a line is cut, ending in :data:`BREAK_MARK`. Lines it adds start with
    ``indent``."""
    return "\n".join(out for line in text.split("\n")
                     for out in _wrap_line(line, width, indent, breaks))


def _wrap_line(line: str, width: int, indent: str, breaks: str) -> list[str]:
    if _visible(line) <= width:  # also keeps colour codes, which only short cells carry
        return [line]
    lines: list[str] = []
    current, prefix = "", ""  # the line being filled; the indent it will get

    def fits(text: str) -> bool:
        return len(prefix + current + text) <= width

    def new_line() -> None:
        nonlocal current, prefix
        if current:
            lines.append(prefix + current)
            current, prefix = "", indent

    for word in line.split():
        space = " " if current else ""
        if fits(space + word):
            current += space + word
        elif len(indent + word) <= width:
            new_line()
            current = word
        else:
            for n, part in enumerate(_parts(word, breaks)):
                space = " " if current and n == 0 else ""
                if fits(space + part):
                    current += space + part
                elif len(indent + part) <= width:
                    new_line()
                    current = part
                else:  # longer than any line: cut, starting where this line has room
                    current += space
                    while len(prefix + current + part) > width:
                        cut = width - len(prefix + current) - len(BREAK_MARK)
                        if cut < 1 and current:
                            current = current.rstrip()
                            new_line()
                            continue
                        cut = max(1, cut)
                        lines.append(prefix + current + part[:cut] + BREAK_MARK)
                        current, prefix, part = "", indent, part[cut:]
                    current += part
    new_line()
    return lines


def _longest_part(cells: list[str]) -> int:
    """The widest a column must be for nothing in it to be cut inside a word."""
    return max((len(part) for cell in cells for word in _ANSI.sub("", cell).split()
                for part in _parts(word)), default=0)


def _wrap_rows(rows: list[list[str]], widths: list[int]) -> list[list[str]]:
    return [[wrap(cell, w) for cell, w in zip(row, widths, strict=True)] for row in rows]


# --- the layout that fits a terminal: fewer columns, details on lines of their own --------

_FLOOR = 24
"""The message (or guarantee) column never gets narrower than this."""


def _natural(rows: list[list[str]], headers: list[str]) -> list[int]:
    return [max(_visible(line) for r in rows for line in r[i].split("\n"))
            for i in range(len(headers))]


def _header_width(header: str) -> int:
    return max(len(line) for line in header.split("\n")) + _HEADER_PAD


def _fit(rows: list[list[str]], headers: list[str], caps: list[int], width: int) -> list[int]:
    """Column widths for a grid table ``width`` characters wide: each column its natural
    width up to its cap (or up to its longest word, while the last column keeps
    :data:`_FLOOR`), the last one what is left (at least :data:`_FLOOR`)."""
    natural = _natural(rows, headers)
    borders = 3 * len(headers) + 1
    widths = [max(_header_width(h), min(n, c))
              for h, n, c in zip(headers[:-1], natural[:-1], caps, strict=True)]
    for i, column in enumerate(list(zip(*rows, strict=True))[:-1]):
        wider = max(widths[i], min(natural[i], _longest_part(list(column))))
        if width - borders - sum(widths) - (wider - widths[i]) >= _FLOOR:
            widths[i] = wider
    rest = width - borders - sum(widths)
    return [*widths, max(_FLOOR, min(natural[-1], rest))]


def _widen(rows: list[list[str]], caps: list[int]) -> list[int]:
    """The wide layout's widths: each cap, or the column's longest word if that is wider."""
    return [max(cap, _longest_part(list(column)))
            for cap, column in zip(caps, zip(*rows, strict=True), strict=True)]


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
            f"producer side: {producer_gives(g)}\nsurvives: {survives(g)}\nwhy: {_why(g)}"]


def _table(rows: list[list[str]], headers: list[str], widths: list[int]) -> str:
    # Wrapped here, not by tabulate's maxcolwidths: it cuts paths and names mid-word.
    return str(tabulate(_wrap_rows(rows, widths), headers=headers, tablefmt=_TABLE_STYLE,
                        disable_numparse=True))


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
    if result.elr_unread:
        headings.append(f"eligible leader replicas: not read ({result.elr_unread})")
    if result.quorum_unread:
        headings.append(f"controller quorum: not read ({result.quorum_unread})")
    if result.acls_unread:
        headings.append(f"ACLs: not read ({result.acls_unread})")
    if options.width is not None:
        headings = [wrap(h, options.width, indent="  ") for h in headings]
    lines = [*headings, ""]

    narrow = options.width is not None
    if result.findings and narrow:
        assert options.width is not None
        rows = [_narrow_finding_row(f, color) for f in sorted(result.findings, key=_sort_key)]
        headers = ["severity", "rule / subject", "message"]
        lines += ["Findings", _table(rows, headers, _fit(rows, headers, [9, 26],
                                                         options.width))]
    elif result.findings:
        rows = [_finding_row(f, color) for f in sorted(result.findings, key=_sort_key)]
        headers = ["severity", "rule", "subject", "message", "expected", "actual", "source"]
        lines += ["Findings", _table(rows, headers, _widen(rows, _FINDING_WIDTHS))]
    else:
        lines.append("Findings: none")
    lines.append("")

    if result.guarantees and narrow:
        assert options.width is not None
        rows = [_narrow_guarantee_row(g) for g in result.guarantees]
        headers = ["topic", "producer", "guarantee"]
        lines += ["Guarantees", _table(rows, headers, _fit(rows, headers, [24, 20],
                                                           options.width))]
    elif result.guarantees:
        rows = [_guarantee_row(g) for g in result.guarantees]
        headers = ["topic", "producer", "producer side", "survives", "why"]
        lines += ["Guarantees", _table(rows, headers, _widen(rows, _GUARANTEE_WIDTHS))]
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
