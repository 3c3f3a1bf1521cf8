"""``kaudit probe share --format html``: the run on one page, its chart inside it.

Built from the ``kaudit.share/v1`` document (:func:`kaudit.report.share.share_document`),
in the order a probe page reads (:mod:`kaudit.report.html`): the verdict in a sentence and
each violation, the fates and the run's settings, a chart of the deliveries the workers
handled second by second (processed, released and rejected stacked; the redeliveries among
them as a line; failed acceptances as crosses; the run's faults, heals and notes as
labelled vertical lines), the event log, then every record that was not plainly processed
once (the first :data:`SHOWN` of them).

matplotlib is imported only when the chart is drawn, as :mod:`kaudit.report.plot` does, on
the same headless Agg canvas; the event labels are placed by its code.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kaudit.errors import InputError
from kaudit.report import html
from kaudit.report.plot import DPI, MISSING_MATPLOTLIB, STYLE, event_labels
from kaudit.report.timeline import Mark

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["SHOWN", "share_html", "share_png"]

SHOWN = 200
"""Records listed on the page before "... and N more"."""

_WIDTH_IN, _HEIGHT_IN = 12.0, 5.0
_HANDLED = (("processed", "#00897b"), ("released", "#ffb300"), ("rejected", "#8e24aa"))
"""What a delivery can end in within its second, stacked bottom up, with its colour."""
_DRAWN_AS = {"fault": "fault", "heal": "heal", "note": "isr-change"}
"""The style of :mod:`kaudit.report.plot` each event kind's line takes: a note a faint
dotted line, as the probe chart draws an ISR change."""
_LEGEND = {"fault": "fault", "heal": "heal", "note": "note"}
_LEGEND_ORDER = (*(f"{name}/s" for name, _ in _HANDLED), "of which redelivered/s",
                 "acceptance failed/s", "fault", "heal", "note")
_LABEL_CHARS, _LABEL_LINES = 28, 2
"""An event's label: its detail over at most this many lines of this many characters."""


def share_html(doc: Mapping[str, Any]) -> str:
    """The page of a ``kaudit.share/v1`` document: the verdict and why, the fates and the
    run, the chart, the events, the records that went otherwise than plainly processed
    once, the notes."""
    sections = [("Summary", html.side_by_side(_fates(doc), _run(doc))),
                ("Timeline", _chart(doc))]
    if doc["events"]:
        sections.append(("Events", html.table(
            ["at s", "kind", "detail"],
            [(f"{e['at_s']:.1f}", e["kind"], e["detail"]) for e in doc["events"]])))
    sections.append(("Records", _records(doc["records"])))
    if doc["notes"]:
        sections.append(("Notes", "<ul>" + "".join(f"<li>{html.escape(note)}</li>"
                                                   for note in doc["notes"]) + "</ul>"))
    return html.page(f"kaudit probe share {doc['run_id'][:12]} on {doc['topic']}",
                     doc["verdict"], "", sections, reason=_sentence(doc),
                     context=_context(doc), head=html.reasons(doc["violations"]))


def _counted(fates: Mapping[str, int]) -> str:
    return ", ".join(f"{n:,} {fate.replace('_', ' ')}" for fate, n in fates.items()
                     if n) or "none"


def _sentence(doc: Mapping[str, Any]) -> str:
    """The verdict's reason in one line: what broke the expectation, or what became of
    the records."""
    written, expect = doc["written"], doc["expect"]
    if doc["verdict"] == "fail":
        wrong = sum(1 for r in doc["records"] if r["wrong"])
        return (f"{wrong:,} of {written:,} records broke {expect}: "
                + "; ".join(doc["violations"]))
    fates = _counted(doc["fates"])
    if doc["verdict"] == "pass":
        return f"all {written:,} records kept {expect}: {fates}"
    return f"nothing was expected (no --expect); of {written:,} records: {fates}"


def _mix(s: Mapping[str, Any]) -> str:
    """``accept 83%, release 10%, reject 5%, poison 2%``."""
    shares = {"release": s["release"], "reject": s["reject"], "poison": s["poison"]}
    accept = max(0.0, 1.0 - sum(shares.values()))
    return ", ".join(f"{name} {share * 100:.3g}%" for name, share in
                     {"accept": accept, **shares}.items() if share)


def _faults(s: Mapping[str, Any]) -> str:
    if not s["faults"]:
        return "none"
    return f"{', '.join(s['faults'])} at {s['fault_at']} for {s['fault_duration']:g}s"


def _context(doc: Mapping[str, Any]) -> str:
    """The run in one line, under the verdict."""
    s = doc["settings"]
    return (f"{s['workers']} worker(s), {doc['written']:,} records in {s['partitions']} "
            f"partition(s); {_mix(s)}; delivery count limit {doc['delivery_limit']}; "
            f"faults: {_faults(s)}; "
            f"{'--expect ' + doc['expect'] if doc['expect'] else 'no --expect'}; "
            f"{'settled' if doc['settled'] else 'not settled'}; {doc['seconds']:g}s in all")


def _fates(doc: Mapping[str, Any]) -> str:
    """Records per fate; a fate that holds a record breaking the expectation in red."""
    wrong = {r["fate"] for r in doc["records"] if r["wrong"]}
    fates = list(doc["fates"].items())
    return html.table(["fate", "records"], [(fate.replace("_", " "), html.number(n))
                                            for fate, n in fates],
                      caption="Fates", flagged=[i for i, (fate, _) in enumerate(fates)
                                                if fate in wrong])


def _worker(held: bool, s: Mapping[str, Any], killed: Sequence[str] = ()) -> str:
    if killed:
        return "; ".join(killed)
    return f"yes, after {s['hold_after']} processings" if held else "no"


def _run(doc: Mapping[str, Any]) -> str:
    """What the run was asked to do and how long it took."""
    s, n = doc["settings"], html.number
    rows = [
        ("topic", doc["topic"] + (" (deleted)" if doc["topic_deleted"] else "")),
        ("share group", doc["group"]),
        ("workers", n(s["workers"])),
        ("records written", n(doc["written"])),
        ("partitions", n(s["partitions"])),
        ("acknowledgements", _mix(s)),
        ("delivery count limit",
         n(doc["delivery_limit"]) + (" (the brokers')" if s["delivery_limit"] is None else "")),
        ("lock ms", "the brokers'" if s["lock_ms"] is None else n(s["lock_ms"])),
        ("faults", _faults(s)),
        ("killed worker", _worker(s["kill_worker"], s, doc["killed"])),
        ("slow worker", _worker(s["slow_worker"], s)),
        ("expect", doc["expect"] or "nothing (no --expect)"),
        ("settled", "yes" if doc["settled"]
         else f"no: not every record reached its end within {s['settle_s']:g}s"),
        ("seconds", n(doc["seconds"])),
    ]
    return html.table([], rows, caption="The run")


def _records(records: Sequence[Mapping[str, Any]]) -> str:
    """The first :data:`SHOWN` records that were not plainly processed once."""
    if not records:
        return "<p>Every record was processed once, as expected.</p>"
    keys = ("seq", "treatment", "fate", "deliveries", "processings", "why", "wrong")
    shown = records[:SHOWN]
    text = html.table(["record", *keys[1:]], [[r[k] for k in keys] for r in shown],
                      flagged=[i for i, r in enumerate(shown) if r["wrong"]])
    if len(records) > SHOWN:
        text += f"<p>... and {len(records) - SHOWN:,} more (the JSON lists them all)</p>"
    return text


# -- the chart -------------------------------------------------------------------------------


def _chart(doc: Mapping[str, Any]) -> str:
    """The chart, or a sentence saying why there is none."""
    if not doc["timeline"]:
        return "<p>No chart: the workers handled no delivery while the run lasted.</p>"
    try:
        png = share_png(doc)
    except InputError as exc:  # matplotlib missing
        return f"<p>No chart: {html.escape(exc)}</p>"
    return html.image(png, "deliveries the workers handled per second: processed, released "
                           "and rejected, the redeliveries among them and failed "
                           "acceptances; the run's faults, heals and notes marked")


def share_png(doc: Mapping[str, Any]) -> bytes:
    """The chart of a ``kaudit.share/v1`` document's timeline and events, as PNG bytes.

    Raises :class:`~kaudit.errors.InputError` when matplotlib is missing."""
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise InputError(MISSING_MATPLOTLIB) from None
    with matplotlib.rc_context({"font.family": "DejaVu Sans", "font.size": 9,
                                "legend.fontsize": 8, "xtick.labelsize": 8,
                                "ytick.labelsize": 8, "axes.labelsize": 9}):
        fig = Figure(figsize=(_WIDTH_IN, _HEIGHT_IN), dpi=DPI)
        FigureCanvasAgg(fig)  # text is measured to place the event labels
        _draw(fig, doc["timeline"], doc["events"])
        out = io.BytesIO()
        fig.savefig(out, format="png", dpi=DPI, metadata={"Software": None})
    return out.getvalue()


def _draw(fig: Figure, seconds: Sequence[Mapping[str, Any]],
          events: Sequence[Mapping[str, Any]]) -> None:
    from matplotlib.ticker import MaxNLocator

    ax = fig.subplots()
    fig.subplots_adjust(left=0.06, right=0.985, top=0.9, bottom=0.2)
    marks = [Mark(float(e["at_s"]), _DRAWN_AS.get(e["kind"], "isr-change"),
                  "\n".join(textwrap.wrap(str(e["detail"]), _LABEL_CHARS,
                                          max_lines=_LABEL_LINES, placeholder=" \u2026")))
             for e in events]
    end = max([int(s["second"]) + 1 for s in seconds] + [m.at_s for m in marks] + [1.0])
    ax.set_xlim(0, math.ceil(end))
    ax.grid(True, axis="y", color="#e0e0e0", linewidth=0.6)
    ax.set_axisbelow(True)
    top = _bars(ax, seconds)
    for kind, mark in zip((e["kind"] for e in events), marks, strict=True):
        colour, style, width = STYLE[mark.kind]
        legend = _LEGEND.get(kind, "note")
        shown = legend in ax.get_legend_handles_labels()[1]
        ax.axvline(mark.at_s, color=colour, linestyle=style, linewidth=width, zorder=3,
                   label=None if shown else legend)
    ax.set_ylim(0, top * 1.12)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("deliveries / s")
    ax.set_xlabel("seconds since start")
    fig.suptitle("Deliveries the workers handled per second", x=0.06, ha="left",
                 fontsize=11, fontweight="bold")
    handles, labels = ax.get_legend_handles_labels()
    if labels:  # in the order drawn: matplotlib lists the bars last
        order = sorted(range(len(labels)), key=lambda i: _LEGEND_ORDER.index(labels[i]))
        fig.legend([handles[i] for i in order], [labels[i] for i in order],
                   loc="lower center", bbox_to_anchor=(0.5, 0.0), ncols=min(len(labels), 8),
                   frameon=False)
    event_labels(ax, sorted(marks, key=lambda m: m.at_s))


def _bars(ax: Axes, seconds: Sequence[Mapping[str, Any]]) -> float:
    """Deliveries per second stacked by what they ended in, the redeliveries among them,
    failed acceptances; returns the highest value drawn (at least 1)."""
    x = [int(s["second"]) + 0.5 for s in seconds]
    size = 3.0 if len(seconds) <= 60 else 1.2
    bottom = [0] * len(seconds)
    if seconds:  # an empty bar set would still get a legend entry
        for name, colour in _HANDLED:
            values = [int(s[name]) for s in seconds]
            ax.bar(x, values, width=0.8, bottom=bottom, color=colour, alpha=0.9,
                   label=f"{name}/s")
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    redelivered = [int(s["redelivered"]) for s in seconds]
    if any(redelivered):
        ax.plot(x, redelivered, color="#1565c0", marker="o", markersize=size, linewidth=1.4,
                label="of which redelivered/s")
    failed = [int(s["ack_failed"]) for s in seconds]
    if any(failed):
        ax.plot([p for p, f in zip(x, failed, strict=True) if f], [f for f in failed if f],
                linestyle="none", color="#c62828", marker="X", markersize=size + 4,
                label="acceptance failed/s")
    if not seconds:
        ax.text(0.5, 0.5, "no deliveries", transform=ax.transAxes, ha="center",
                va="center", color="#757575")
    return float(max([*bottom, *failed, 1]))
