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
lines. The title carries the topic, the settings that decide delivery and the outcome.

matplotlib is a dependency of kaudit (installed with it). It is imported only when a
plot is drawn, with the headless Agg backend, so no other command pays for it.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaudit.errors import InputError
from kaudit.report.output import write_file

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

__all__ = ["MISSING_MATPLOTLIB", "check_plot_target", "plot_timeline", "timeline_png"]

MISSING_MATPLOTLIB = "drawing needs matplotlib, which kaudit depends on: pip install matplotlib"

_WIDTH_IN, _HEIGHT_IN, _DPI = 12.0, 7.0, 110
_LOG_RATIO = 30.0
"""Use a log latency axis when the slowest second is this many times the fastest."""
_SHADE = "#f4a6a6"
_STYLE: dict[str, tuple[str, str, float]] = {
    # kind: (colour, linestyle, linewidth)
    "fault": ("#c62828", "-", 1.6),
    "heal": ("#2e7d32", "-", 1.6),
    "leader-change": ("#ef6c00", "--", 1.3),
    "isr-change": ("#9e9e9e", ":", 0.9),
}
_LABELLED = ("fault", "heal", "leader-change")


@dataclass(frozen=True)
class _Second:
    second: int
    sent: int
    acked: int
    failed: int
    indeterminate: int
    latency_ms: float | None
    state: str
    lost: int = 0
    duplicated: int = 0


@dataclass(frozen=True)
class _Mark:
    """One vertical line: events of one kind that fall (almost) at the same time."""

    at_s: float
    kind: str
    label: str


@dataclass(frozen=True)
class _Run:
    """What the plot shows, checked and converted before anything is drawn."""

    seconds: list[_Second]
    marks: list[_Mark]
    windows: list[tuple[float, float]]
    title: tuple[str, str, str]
    references: list[tuple[str, float]]
    """The run's ack latency p50 and p99, when known."""
    bad: bool
    """The verdict failed or messages were lost: the outcome line is red."""


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
        run = _parse(record)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"cannot plot: malformed probe record ({_describe(exc)})") from None

    # Default DejaVu fonts and sizes, whatever the user's matplotlibrc says.
    with matplotlib.rc_context({"font.family": "DejaVu Sans", "font.size": 9,
                                "legend.fontsize": 8, "xtick.labelsize": 8,
                                "ytick.labelsize": 8, "axes.labelsize": 9}):
        fig = Figure(figsize=(_WIDTH_IN, _HEIGHT_IN), dpi=_DPI)
        FigureCanvasAgg(fig)  # attaches itself: text is measured and drawn by Agg
        _draw(fig, run)
        buf = io.BytesIO()
        # No timestamp or version in the metadata: the same record gives the same bytes.
        fig.savefig(buf, format="png", dpi=_DPI, metadata={"Software": None})
    return buf.getvalue()


# -- the record ------------------------------------------------------------------------------


def _parse(record: Mapping[str, Any]) -> _Run:
    seconds = _seconds(record)
    summary = record.get("latency_ms") or {}
    references = [(key, float(summary[key])) for key in ("p50", "p99")
                  if summary.get(key) is not None]
    bad = (str(record.get("verdict") or "").lower() == "fail"
           or _count(record.get("lost", 0), "lost") > 0)
    return _Run(seconds, _marks(record), _windows(record, seconds), _title(record),
                references, bad)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing key {exc.args[0]!r}" if exc.args else "missing key"
    return str(exc) or type(exc).__name__


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} is not a number: {value!r}")
    return int(value)


def _seconds(record: Mapping[str, Any]) -> list[_Second]:
    out = []
    timeline = record["timeline"]
    if not isinstance(timeline, Sequence) or isinstance(timeline, str):
        raise ValueError("timeline is not a list")
    for row in timeline:
        latency = row.get("ack_latency_max_ms")
        out.append(_Second(
            second=_count(row["second"], "second"),
            sent=_count(row["sent"], "sent"),
            acked=_count(row["acked"], "acked"),
            failed=_count(row.get("failed", 0), "failed"),
            indeterminate=_count(row.get("indeterminate", 0), "indeterminate"),
            latency_ms=None if latency is None else float(latency),
            state=str(row.get("state", "available")),
            lost=_count(row.get("lost", 0), "lost"),
            duplicated=_count(row.get("duplicated", 0), "duplicated"),
        ))
    return sorted(out, key=lambda s: s.second)


def _windows(record: Mapping[str, Any], seconds: list[_Second]) -> list[tuple[float, float]]:
    """Unavailability windows as (start, end) seconds: from the record, else the timeline."""
    availability = record.get("availability") or {}
    listed = availability.get("unavailable_windows")
    if listed is not None:
        return [(float(w["start"]), float(w["start"]) + float(w["seconds"])) for w in listed]
    out: list[tuple[float, float]] = []
    for s in seconds:
        if s.state != "unavailable":
            continue
        if out and out[-1][1] == s.second:
            out[-1] = (out[-1][0], s.second + 1.0)
        else:
            out.append((float(s.second), s.second + 1.0))
    return out


def _marks(record: Mapping[str, Any]) -> list[_Mark]:
    """Events grouped per kind and 0.25 s, so a change on many partitions is one line."""
    groups: dict[tuple[str, float], list[Mapping[str, Any]]] = {}
    for event in record.get("events") or ():
        kind = str(event["kind"])
        if kind not in _STYLE:
            continue
        at = float(event["at_s"])
        key = next((k for k in groups if k[0] == kind and abs(k[1] - at) <= 0.25), (kind, at))
        groups.setdefault(key, []).append(event)
    marks = []
    for (kind, at), events in groups.items():
        first = events[0]
        part = first.get("partition")
        label = f"p{part} {first['detail']}" if part is not None else str(first["detail"])
        if len(label) > 28:
            label = label[:27] + "\u2026"
        if len(events) > 1:
            label += f" (+{len(events) - 1})"
        marks.append(_Mark(at, kind, label))
    return sorted(marks, key=lambda m: (m.at_s, _LABELLED.index(m.kind)
                                        if m.kind in _LABELLED else len(_LABELLED)))


def _flag(value: Any) -> str:
    return "-" if value is None else str(value).lower()


def _title(record: Mapping[str, Any]) -> tuple[str, str, str]:
    s = record.get("settings") or {}
    run_id = str(record.get("run_id") or "")[:12]
    head = f"kaudit probe {run_id} on {record['topic']}".replace("  ", " ")
    parts = [f"acks={s.get('acks', '-')}", f"idempotence={_flag(s.get('idempotence'))}"]
    if s.get("transactional"):
        parts.append("transactional")
    if s.get("replication_factor") is not None:
        parts.append(f"RF={s['replication_factor']}")
    parts.append(f"min.isr={s.get('min_insync_replicas') or 'default'}")
    if s.get("unclean_leader_election") is not None:
        parts.append(f"unclean={_flag(s['unclean_leader_election'])}")
    faults = s.get("faults") or []
    if faults:
        fault = ",".join(str(f) for f in faults)
        if s.get("fault_at"):
            fault += f" at {s['fault_at']}"
        if s.get("fault_duration") is not None:
            fault += f" for {s['fault_duration']:g}s"
        parts.append(f"fault={fault}")
    else:
        parts.append("no fault")
    outcome = ", ".join(f"{name} {_count(record[name], name):,}" for name in
                        ("sent", "acked", "lost", "duplicated", "reordered"))
    verdict = record.get("verdict")
    if verdict:
        outcome += f"  \u2192  verdict {str(verdict).upper()}"
    return head, "  ".join(parts), outcome


# -- drawing ---------------------------------------------------------------------------------


def _draw(fig: Figure, run: _Run) -> None:
    seconds, marks, windows = run.seconds, run.marks, run.windows
    tp, lat = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    # Fix the layout first: label placement below measures text against the final axes.
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
    _events(tp, lat, marks)
    if windows:
        tp.axvspan(0, 0, color=_SHADE, alpha=0.35, linewidth=0, label="unavailable")
    handles, labels = [], []
    for ax in (tp, lat):
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    order = sorted(range(len(labels)), key=lambda i: _legend_rank(labels[i]))
    handles, labels = [handles[i] for i in order], [labels[i] for i in order]
    fig.legend(handles, labels, loc="upper right", bbox_to_anchor=(0.985, 0.995),
               ncols=math.ceil(len(labels) / 3), frameon=False, columnspacing=1.2,
               handlelength=2.2)

    lat.set_xlabel("seconds since start")
    head, settings, outcome = run.title
    fig.suptitle(head, x=0.01, y=0.985, ha="left", fontsize=11, fontweight="bold")
    fig.text(0.01, 0.945, settings, ha="left", va="center", fontsize=9, color="#333333")
    fig.text(0.01, 0.915, outcome, ha="left", va="center", fontsize=9,
             color="#c62828" if run.bad else "#1b5e20", fontweight="bold")


_LEGEND_ORDER = ("sent/s", "acked/s", "failed/s", "indeterminate/s", "unavailable", "fault",
                 "heal", "leader change", "ISR change", "ack latency", "run p50", "run p99")


def _legend_rank(label: str) -> int:
    return next((i for i, p in enumerate(_LEGEND_ORDER) if label.startswith(p)),
                len(_LEGEND_ORDER))


def _throughput(ax: Axes, seconds: list[_Second]) -> None:
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


def _latency(ax: Axes, seconds: list[_Second], refs: list[tuple[str, float]]) -> None:
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


def _events(tp: Axes, lat: Axes, marks: list[_Mark]) -> None:
    legend: set[str] = set()
    for mark in marks:
        colour, style, width = _STYLE[mark.kind]
        for ax in (tp, lat):
            label = _KIND_LABEL[mark.kind] if ax is tp and mark.kind not in legend else None
            legend.add(mark.kind)
            ax.axvline(mark.at_s, color=colour, linestyle=style, linewidth=width, zorder=3,
                       label=label)
    _event_labels(tp, [m for m in marks if m.kind in _LABELLED])


def _event_labels(ax: Axes, marks: list[_Mark]) -> None:
    """Labels hang in rows from the top of the panel, beside their line (left of it near the
    right edge). Each goes in the first row where it overlaps no other label; labels that fit
    in no row are left out (their lines stay). The y range grows to keep data under them."""
    right = ax.get_xlim()[1]
    rows: list[list[Bbox]] = []
    for mark in marks:
        left_side = mark.at_s > 0.8 * right
        colour = _STYLE[mark.kind][0]
        text = ax.annotate(mark.label, xy=(mark.at_s, 1.0), xycoords=("data", "axes fraction"),
                           xytext=(0, 0), textcoords="offset points",
                           ha="right" if left_side else "left", va="top", fontsize=7.5,
                           color=colour, zorder=4,
                           bbox={"boxstyle": "round,pad=0.15", "facecolor": "white",
                                 "edgecolor": "none", "alpha": 0.8})
        for row in range(_LABEL_ROWS):
            text.set_position((-3 if left_side else 3, -4 - _ROW_PT * row))
            box = text.get_window_extent().expanded(1.04, 1.0)
            if row == len(rows):
                rows.append([])
            if not any(box.overlaps(other) for other in rows[row]):
                rows[row].append(box)
                break
        else:
            text.remove()
    if rows:
        height_pt = ax.get_window_extent().height * 72 / _DPI
        used = (6 + _ROW_PT * len(rows)) / height_pt
        bottom, top = ax.get_ylim()
        ax.set_ylim(bottom, top / max(1 - used, 0.3))


_LABEL_ROWS, _ROW_PT = 6, 11.0


def _marker_size(seconds: list[_Second]) -> float:
    return 3.0 if len(seconds) <= 60 else 1.2


# -- the file --------------------------------------------------------------------------------


def _check_target(target: Path, shown: str) -> None:
    if target.is_dir():
        raise InputError(f"--plot {shown}: is a directory")
    if not target.exists() and not target.parent.is_dir():
        raise InputError(f"--plot {shown}: directory {target.parent} does not exist")
