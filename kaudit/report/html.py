"""``--format html``: one self-contained page per report, pictures embedded.

A probe page reads top down in the order a reader needs it: the verdict in one sentence
with its reason (:mod:`kaudit.report.explain`), each reason for a failing verdict with what
it means and what to do, the counts as tables, the timeline chart (acknowledged, failed,
lost and duplicated messages per second, ack latency, the faults and the leader and ISR
changes) as a PNG inside the file (``data:`` URI), then the event log; the matrix and
proof pages have the same shape. Pages given no sentence (reconcile, check, demo) show
"Verdict: ..." and their terminal summary. No script, nothing fetched: a page can be
mailed or attached to a ticket and opened anywhere.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterable, Sequence
from typing import Any

from kaudit.connection.redact import redact

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #212121; max-width: 1400px; }
h1 { font-size: 1.4em; margin-bottom: 0.4em; } h2 { font-size: 1.1em; margin-top: 1.8em; }
pre { background: #f5f5f5; padding: 1em; overflow-x: auto; font-size: 0.85em; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0 0 1em 0; }
caption { text-align: left; font-weight: bold; padding: 0.2em 0; white-space: nowrap; }
th, td { border: 1px solid #bdbdbd; padding: 0.3em 0.6em; text-align: left; vertical-align: top;
         overflow-wrap: anywhere; min-width: 8ch; }
th { background: #eeeeee; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.flag td { color: #c62828; font-weight: bold; }
.pass, .confirmed { color: #2e7d32; font-weight: bold; }
.fail, .not-confirmed, .inconclusive { color: #c62828; font-weight: bold; }
.inconclusive { color: #a15c00; }
p.verdict { font-size: 1.2em; line-height: 1.45; margin: 0.4em 0 0.6em 0; padding: 0.6em 0.9em;
            border-left: 6px solid #2e7d32; background: #edf7ee; max-width: 75em; }
p.verdict-fail, p.verdict-not-confirmed { border-color: #c62828; background: #fdecea; }
p.verdict-inconclusive { border-color: #a15c00; background: #fff4e5; }
p.context { color: #555555; margin: 0 0 1em 0; }
ul.reasons { max-width: 75em; padding-left: 1.2em; line-height: 1.4; }
ul.reasons li { margin-bottom: 0.6em; }
.tables { display: flex; flex-wrap: wrap; gap: 0 2em; align-items: flex-start; }
img { max-width: 100%; border: 1px solid #e0e0e0; }
figure { margin: 0; }
"""


_NUMERIC = re.compile(r"-|-?[\d,]+(\.\d+)?")


def escape(value: Any) -> str:
    """Text for HTML, secrets masked first."""
    return html.escape(str(redact(str(value))))


def verdict_class(verdict: str) -> str:
    """The CSS class a verdict is shown with."""
    return verdict.lower().replace(" ", "-")


def number(value: Any) -> str:
    """A count as a reader scans it: 20,000; anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-" if value is None else str(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:,.6g}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]],
          verdict_column: int | None = None, *, caption: str | None = None,
          flagged: Iterable[int] = ()) -> str:
    """An HTML table; the cells of ``verdict_column`` are coloured by their value, the rows
    at the indexes ``flagged`` are shown in red, and numbers are right-aligned (a count
    is given as :func:`number` shows it; an offset or a partition as it is)."""
    flag = set(flagged)
    head = "".join(f"<th>{escape(h)}</th>" for h in headers) if headers else ""
    body = []
    for n, row in enumerate(rows):
        cells = []
        for i, cell in enumerate(row):
            css = (verdict_class(str(cell)) if i == verdict_column
                   else "num" if _NUMERIC.fullmatch(str(cell)) else "")
            shown = "-" if cell is None else cell
            cells.append(f'<td class="{css}">' if css else "<td>")
            cells.append(f"{escape(shown)}</td>")
        body.append(('<tr class="flag">' if n in flag else "<tr>") + "".join(cells) + "</tr>")
    top = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{top}{f'<tr>{head}</tr>' if head else ''}{''.join(body)}</table>"


def side_by_side(*parts: str) -> str:
    """Small tables next to each other, wrapping on a narrow window."""
    return f'<div class="tables">{"".join(parts)}</div>'


def reasons(lines: Sequence[str | tuple[str, str]]) -> str:
    """Each reason for a verdict, with what it means and what to do where that is known
    (once per kind of reason: a matrix's runs repeat them). A (where, reason) pair is shown
    as "where: reason"."""
    from kaudit.report.explain import explain

    items, told = [], []
    for line in lines:
        where, reason = line if isinstance(line, tuple) else ("", line)
        shown = f"{where}: {reason}" if where else reason
        found = explain(reason)
        more = ""
        if found is not None and found not in told:
            told.append(found)
            more = (f"<br><em>What it means:</em> {escape(found.means)}"
                    f"<br><em>What to do:</em> {escape(found.to_do)}")
        items.append(f"<li><strong>{escape(shown)}</strong>{more}</li>")
    return f'<ul class="reasons">{"".join(items)}</ul>' if items else ""


def image(png: bytes, caption: str) -> str:
    """A PNG embedded in the page."""
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img alt="{escape(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{escape(caption)}</figcaption></figure>")


def timeline(document: dict[str, Any], caption: str) -> str:
    """A probe run's timeline, or a line saying why there is none."""
    from kaudit.errors import InputError
    from kaudit.report.plot import timeline_png

    try:
        return image(timeline_png(document), caption)
    except InputError as exc:  # matplotlib missing, or nothing to draw
        return f"<p>No timeline: {escape(exc)}</p>"


def verdict_line(verdict: str, reason: str) -> str:
    """The page's first line: the verdict, then the sentence that gives its reason."""
    css = verdict_class(verdict)
    return (f'<p class="verdict verdict-{css}"><strong class="{css}">'
            f"{escape(verdict[:1].upper() + verdict[1:])}</strong> &mdash; {escape(reason)}</p>")


def page(title: str, verdict: str, summary: str, sections: Sequence[tuple[str, str]], *,
         reason: str | None = None, context: str = "", head: str = "") -> str:
    """The whole page: the title, then the verdict, then each (heading, html) section.

    With ``reason`` (:mod:`kaudit.report.explain`) the verdict is a sentence, ``context``
    a line under it (the run's settings) and ``head`` what comes before the first
    section (the reasons explained); a ``summary`` (the terminal text) is shown only
    where it is given, in a ``<pre>``, as pages without a sentence still do.
    """
    if reason is None:
        parts = [f'<p>Verdict: <span class="{verdict_class(verdict)}">{escape(verdict)}'
                 "</span></p>"]
    else:
        parts = [verdict_line(verdict, reason)]
        parts += [f'<p class="context">{escape(context)}</p>'] if context else []
        parts += [head] if head else []
    parts = [f"<h1>{escape(title)}</h1>", *parts]
    parts += [f"<pre>{escape(summary)}</pre>"] if summary else []
    parts += [f"<h2>{escape(heading)}</h2>{content}" for heading, content in sections]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>\n"
            + "\n".join(parts) + "\n</body></html>\n")
