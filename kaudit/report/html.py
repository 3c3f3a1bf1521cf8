"""``--format html``: one self-contained page per report, pictures embedded.

A page holds the report's terminal summary, its tables and, for probe runs, each run's
timeline (acknowledged, failed, lost and duplicated messages per second, ack latency, the
faults and the leader and ISR changes) as a PNG inside the file (``data:`` URI): the page can
be mailed or attached to a ticket and opened anywhere, with nothing beside it.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from typing import Any

from kaudit.connect.redact import redact

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #212121; max-width: 1400px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 2em; }
pre { background: #f5f5f5; padding: 1em; overflow-x: auto; font-size: 0.85em; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #bdbdbd; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #eeeeee; }
.pass, .confirmed { color: #2e7d32; font-weight: bold; }
.fail, .not-confirmed, .inconclusive { color: #c62828; font-weight: bold; }
img { max-width: 100%; border: 1px solid #e0e0e0; }
"""


def escape(value: Any) -> str:
    """Text for HTML, secrets masked first."""
    return html.escape(str(redact(str(value))))


def verdict_class(verdict: str) -> str:
    """The CSS class a verdict is shown with."""
    return verdict.lower().replace(" ", "-")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]],
          verdict_column: int | None = None) -> str:
    """An HTML table; the cells of ``verdict_column`` are coloured by their value."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            css = f' class="{verdict_class(str(cell))}"' if i == verdict_column else ""
            cells.append(f"<td{css}>{escape(cell)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


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


def page(title: str, verdict: str, summary: str, sections: Sequence[tuple[str, str]]) -> str:
    """The whole page: title and verdict, the terminal summary, then each (heading, html)."""
    parts = [f"<h1>{escape(title)}</h1>",
             f'<p>Verdict: <span class="{verdict_class(verdict)}">{escape(verdict)}</span></p>',
             f"<pre>{escape(summary)}</pre>"]
    parts += [f"<h2>{escape(heading)}</h2>{content}" for heading, content in sections]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>\n"
            + "\n".join(parts) + "\n</body></html>\n")
