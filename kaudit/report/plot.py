"""``kaudit probe --plot FILE.png``: the run's timeline as a picture.

Drawn from the probe's JSON record form (:func:`kaudit.report.probe.probe_document`), so a
saved ``--format json`` document can be plotted again later. Two panels share the x axis
(seconds since the run started):

1. throughput: messages sent and acknowledged per second (lines), failed and indeterminate
   sends per second (bars);
2. the slowest acknowledgement of each second, in ms (log scale when the range is wide),
   with the run's p50 and p99 as reference lines.

Unavailability windows are shaded in both panels; faults (red), heals (green) and leader
changes (orange, dashed) are vertical lines with small labels, ISR changes faint dotted
lines. The title carries the topic, the settings that decide delivery and the outcome; the
legend sits beside it when there is room, else in its own row under it, and the panels start
below both. Everything is placed by measuring the drawn text, so no text covers another or
runs off the picture, however long the topic, the settings or an event's detail.

matplotlib is a dependency of kaudit (installed with it). It is imported only when a
plot is drawn, with the headless Agg backend, so no other command pays for it.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kaudit.errors import InputError
from kaudit.report.output import write_file
from kaudit.report.timeline import LABELLED, ChartSecond, Mark, Run, describe_error, parse_record

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

__all__ = ["MISSING_MATPLOTLIB", "check_plot_target", "plot_timeline", "timeline_png"]

MISSING_MATPLOTLIB = "drawing needs matplotlib, which kaudit depends on: pip install matplotlib"

_WIDTH_IN, _HEIGHT_IN, DPI = 12.0, 7.0, 110
_LOG_RATIO = 30.0
"""Use a log latency axis when the slowest second is this many times the fastest."""
_SHADE = "#f4a6a6"
STYLE: dict[str, tuple[str, str, float]] = {
    # kind: (colour, linestyle, linewidth)
    "fault": ("#c62828", "-", 1.6),
    "heal": ("#2e7d32", "-", 1.6),
    "leader-change": ("#ef6c00", "--", 1.3),
    "isr-change": ("#9e9e9e", ":", 0.9),
}
_LABEL_DEPTH = 0.4
"""Event labels hang at most this fraction of the throughput panel down from its top."""
_EDGE_PX, _GAP_PX = 12.0, 8.0
"""Room kept at the figure's edges, and between the title block, the legend and the panels."""


def check_plot_target(path: str | Path) -> None:
    """Fail fast, before a run: matplotlib is installed and ``path`` can be written.

    Finds matplotlib without importing it. Raises :class:`~kaudit.errors.InputError`.
    """
    import importlib.util

    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # ValueError: sys.modules["matplotlib"] is None
        found = False
    if not found:
        raise InputError(MISSING_MATPLOTLIB)
    _check_target(Path(path).expanduser(), str(path))


def plot_timeline(record: Mapping[str, Any], path: str | Path) -> None:
    """Draw the run in ``record`` (a probe JSON record) as a PNG at ``path``.

    The PNG is rendered in memory first, then written atomically (a temporary file in the
    same directory, then :func:`os.replace`), so a failed plot never leaves a partial file.
    A target that exists but is not a regular file (``/dev/null``, a FIFO) is written into
    directly. Raises :class:`~kaudit.errors.InputError` when matplotlib is missing, the
    record is malformed, or the target cannot be written.
    """
    target = Path(path).expanduser()
    _check_target(target, str(path))
    write_file(target, timeline_png(record), f"--plot {path}")


def timeline_png(record: Mapping[str, Any]) -> bytes:
    """The picture :func:`plot_timeline` draws, as PNG bytes (an HTML report embeds it)."""
    try:
        # The object API on the Agg canvas, never pyplot: headless whatever the default
        # backend, no global figure registry to leak into, no backend switch for the caller.
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise InputError(MISSING_MATPLOTLIB) from None

    try:
        run = parse_record(record)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"cannot plot: malformed probe record ({describe_error(exc)})") from None

    # Default DejaVu fonts and sizes, whatever the user's matplotlibrc says.
    with matplotlib.rc_context({"font.family": "DejaVu Sans", "font.size": 9,
                                "legend.fontsize": 8, "xtick.labelsize": 8,
                                "ytick.labelsize": 8, "axes.labelsize": 9}):
        fig = Figure(figsize=(_WIDTH_IN, _HEIGHT_IN), dpi=DPI)
        # Attaches itself: text is measured (get_window_extent) and drawn by Agg, at the
        # PNG's own dpi.
        FigureCanvasAgg(fig)
        _draw(fig, run)
        buf = io.BytesIO()
        # No timestamp or version in the metadata: the same record gives the same bytes.
        fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


# -- drawing ---------------------------------------------------------------------------------


def _draw(fig: Figure, run: Run) -> None:
    seconds, marks, windows = run.seconds, run.marks, run.windows
    tp, lat = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    fig.subplots_adjust(left=0.075, right=0.985, top=0.875, bottom=0.075, hspace=0.08)
    end = max([s.second + 1 for s in seconds] + [m.at_s for m in marks]
              + [w[1] for w in windows] + [1.0])
    for ax in (tp, lat):
        ax.set_xlim(0, math.ceil(end))
        ax.grid(True, axis="y", color="#e0e0e0", linewidth=0.6)
        ax.set_axisbelow(True)
        for start, stop in windows:
            ax.axvspan(start, stop, color=_SHADE, alpha=0.35, linewidth=0, zorder=0)

    _throughput(tp, seconds)
    _latency(lat, seconds, run.references)
    _event_lines(tp, lat, marks)
    if windows:
        tp.axvspan(0, 0, color=_SHADE, alpha=0.35, linewidth=0, label="unavailable")
    lat.set_xlabel("seconds since start")
    # The panels' top is known once the title block and the legend are placed; the event
    # labels are placed last, measured against the panels' final size.
    header = _header(fig, run)
    fig.subplots_adjust(top=(header - _GAP_PX) / fig.bbox.height)
    event_labels(tp, [m for m in marks if m.kind in LABELLED])


def _header(fig: Figure, run: Run) -> float:
    """The title block at the top left and the legend beside it, or in its own row under it
    when they would touch. Returns the lowest pixel either reaches."""
    left, right = _EDGE_PX, fig.bbox.width - _EDGE_PX
    head, settings, outcome = run.title
    lines = [
        fig.suptitle(head, x=0, y=0, ha="left", va="top", fontsize=11, fontweight="bold"),
        fig.text(0, 0, settings, ha="left", va="top", fontsize=9, color="#333333"),
        fig.text(0, 0, outcome, ha="left", va="top", fontsize=9,
                 color="#c62828" if run.bad else "#1b5e20", fontweight="bold"),
    ]
    top = fig.bbox.height - _EDGE_PX * 0.75
    for line in lines:
        _fit_width(line, right - left)
        line.set_position((left / fig.bbox.width, top / fig.bbox.height))
        top = line.get_window_extent().y0 - 3
    block = max(line.get_window_extent().x1 for line in lines)

    handles, labels = _legend_entries(fig)
    if not labels:
        return top
    beside = _legend(fig, handles, labels, math.ceil(len(labels) / 3), "upper right",
                     (right, fig.bbox.height - _EDGE_PX * 0.5))
    box = beside.get_window_extent()
    if box.x0 >= block + 2 * _GAP_PX:
        return min(top, float(box.y0))
    beside.remove()
    # Its own row: as few lines of entries as the width allows.
    for ncols in range(len(labels), 0, -1):
        row = _legend(fig, handles, labels, ncols, "upper left", (left, top - _GAP_PX / 2))
        box = row.get_window_extent()
        if box.width <= right - left or ncols == 1:
            return float(box.y0)
        row.remove()
    raise AssertionError("unreachable: one column always returns")


def _fit_width(text: Text, width: float) -> None:
    """Wrap ``text`` onto more lines until it is no wider than ``width`` pixels."""
    words = text.get_text()
    chars = len(words)
    while chars > 8 and text.get_window_extent().width > width:
        measured = text.get_window_extent().width
        chars = min(chars - 1, int(chars * width / measured))
        text.set_text(textwrap.fill(words, chars, break_on_hyphens=False))


def _legend_entries(fig: Figure) -> tuple[list[Artist], list[str]]:
    handles: list[Artist] = []
    labels: list[str] = []
    for ax in fig.axes:
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    order = sorted(range(len(labels)), key=lambda i: _legend_rank(labels[i]))
    return [handles[i] for i in order], [labels[i] for i in order]


def _legend(fig: Figure, handles: list[Artist], labels: list[str], ncols: int,
            loc: Literal["upper right", "upper left"],
            anchor_px: tuple[float, float]) -> Legend:
    at = (anchor_px[0] / fig.bbox.width, anchor_px[1] / fig.bbox.height)
    return fig.legend(handles, labels, loc=loc, bbox_to_anchor=at, borderaxespad=0,
                      ncols=ncols, frameon=False, columnspacing=1.2, handlelength=2.2)


_LEGEND_ORDER = ("sent/s", "acked/s", "failed/s", "indeterminate/s", "unavailable", "fault",
                 "heal", "leader change", "ISR change", "ack latency", "run p50", "run p99")


def _legend_rank(label: str) -> int:
    return next((i for i, p in enumerate(_LEGEND_ORDER) if label.startswith(p)),
                len(_LEGEND_ORDER))


def _throughput(ax: Axes, seconds: list[ChartSecond]) -> None:
    from matplotlib.ticker import MaxNLocator
    x = [s.second + 0.5 for s in seconds]
    size = _marker_size(seconds)
    ax.plot(x, [s.sent for s in seconds], color="#1565c0", marker="o", markersize=size,
            linewidth=1.4, label="sent/s")
    ax.plot(x, [s.acked for s in seconds], color="#00897b", marker="s", markersize=size,
            linewidth=1.4, label="acked/s")
    failed = [s.failed for s in seconds]
    indeterminate = [s.indeterminate for s in seconds]
    if seconds:  # an empty bar set would still get a legend entry, in the wrong colour
        ax.bar(x, failed, width=0.8, color="#d32f2f", alpha=0.85, label="failed/s")
        ax.bar(x, indeterminate, width=0.8, bottom=failed, color="#8e24aa", alpha=0.85,
               label="indeterminate/s")
    # What the verifier found, placed at the second each message was sent.
    for name, colour, marker in (("lost", "#b71c1c", "X"), ("duplicated", "#ff8f00", "D")):
        values = [getattr(s, name) for s in seconds]
        if any(values):
            ax.plot(x, values, color=colour, marker=marker, markersize=size + 1,
                    linewidth=1.8, label=f"{name} (by send second)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("messages / s")
    top = max([s.sent for s in seconds] + [s.acked for s in seconds]
              + [f + i for f, i in zip(failed, indeterminate, strict=True)] + [1])
    ax.set_ylim(0, top * 1.12)  # _events adds headroom for its labels
    if not seconds:
        ax.text(0.5, 0.5, "no timeline: the run recorded no seconds", transform=ax.transAxes,
                ha="center", va="center", color="#757575")


def _latency(ax: Axes, seconds: list[ChartSecond], refs: list[tuple[str, float]]) -> None:
    # A second without acknowledgements is a gap (NaN), not a line across the outage.
    x = [s.second + 0.5 for s in seconds]
    y = [math.nan if s.latency_ms is None else s.latency_ms for s in seconds]
    values = [v for v in y if not math.isnan(v)] + [v for _, v in refs]
    positive = [v for v in values if v > 0]
    log = bool(positive) and max(positive) / min(positive) >= _LOG_RATIO
    if log:
        ax.set_yscale("log")
        floor = min(positive) / 2
        y = [v if math.isnan(v) else max(v, floor) for v in y]
    if values:
        ax.plot(x, y, color="#5d4037", marker="o", markersize=_marker_size(seconds),
                linewidth=1.3, label="ack latency max/s")
    for (name, value), style in zip(refs, (":", "--"), strict=False):
        if value > 0 or not log:
            ax.axhline(value, color="#616161", linestyle=style, linewidth=0.9,
                       label=f"run {name} {value:,.0f} ms")
    ax.set_ylabel("ack latency max (ms)")
    if not log:
        ax.set_ylim(0, max([*values, 1.0]) * 1.15)
    if not values:
        ax.text(0.5, 0.5, "no acknowledgements", transform=ax.transAxes, ha="center",
                va="center", color="#757575")


_KIND_LABEL = {"fault": "fault", "heal": "heal", "leader-change": "leader change",
               "isr-change": "ISR change"}


def _event_lines(tp: Axes, lat: Axes, marks: list[Mark]) -> None:
    legend: set[str] = set()
    for mark in marks:
        colour, style, width = STYLE[mark.kind]
        for ax in (tp, lat):
            label = _KIND_LABEL[mark.kind] if ax is tp and mark.kind not in legend else None
            legend.add(mark.kind)
            ax.axvline(mark.at_s, color=colour, linestyle=style, linewidth=width, zorder=3,
                       label=label)


def event_labels(ax: Axes, marks: list[Mark]) -> None:
    """Labels hang from the top of the panel beside their line: right of it, or left of it
    where the panel ends first. Each sits as high as it can without covering another label;
    one that would hang lower than _LABEL_DEPTH of the panel is left out (its line stays).
    The y range then grows to keep the data under the labels."""
    panel = ax.get_window_extent()
    pt = DPI / 72  # pixels per point: offsets are in points, measures in pixels
    floor = panel.y1 - _LABEL_DEPTH * panel.height
    placed: list[Bbox] = []
    for mark in marks:
        text = ax.annotate(mark.label, xy=(mark.at_s, 1.0), xycoords=("data", "axes fraction"),
                           xytext=(0, 0), textcoords="offset points", ha="left", va="top",
                           fontsize=7.5, color=STYLE[mark.kind][0], zorder=4,
                           bbox={"boxstyle": "round,pad=0.15", "facecolor": "white",
                                 "edgecolor": "none", "alpha": 0.8})
        size = text.get_window_extent()
        line = ax.transData.transform((mark.at_s, 0))[0]
        x0 = line + 3 * pt
        if x0 + size.width > panel.x1 - 2 * pt:
            x0 = line - 3 * pt - size.width
        x0 = min(max(x0, panel.x0 + 2 * pt), panel.x1 - 2 * pt - size.width)
        top = _free_top(x0, size.width, size.height, panel.y1 - 4 * pt, placed)
        if top - size.height < floor:
            text.remove()
            continue
        text.set_position(((x0 - line) / pt, (top - panel.y1) / pt))
        placed.append(text.get_window_extent())
    if placed:
        used = (panel.y1 - min(box.y0 for box in placed) + 2 * pt) / panel.height
        bottom, ceiling = ax.get_ylim()
        ax.set_ylim(bottom, ceiling / max(1 - used, 0.3))


def _free_top(x0: float, width: float, height: float, highest: float,
              placed: list[Bbox]) -> float:
    """The highest top, at or under ``highest``, where a box clears every placed label, with
    room for the labels' white backgrounds and a gap so two labels do not read as one."""
    pad, gap = 3.0, 8.0
    beside = [b for b in placed if b.x0 - gap < x0 + width and x0 < b.x1 + gap]
    for top in sorted([highest] + [float(b.y0) - pad for b in beside if b.y0 - pad < highest],
                      reverse=True):
        if not any(b.y0 - pad < top and top - height < b.y1 + pad for b in beside):
            return top
    return highest  # unreachable: the lowest candidate clears every label


def _marker_size(seconds: list[ChartSecond]) -> float:
    return 3.0 if len(seconds) <= 60 else 1.2


# -- the file --------------------------------------------------------------------------------


def _check_target(target: Path, shown: str) -> None:
    if target.is_dir():
        raise InputError(f"--plot {shown}: is a directory")
    if not target.exists() and not target.parent.is_dir():
        raise InputError(f"--plot {shown}: directory {target.parent} does not exist")
