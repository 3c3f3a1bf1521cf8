"""The timeline PNG's layout: nothing overlaps the legend and no text is cut off.

Measured with matplotlib's own extents on the figure ``timeline_png`` saves: the texts
actually drawn are caught as they are drawn, then each one's window extent is compared with
the legend's, the panels' and the figure's boxes.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kaudit.report.plot import timeline_png

pytest.importorskip("matplotlib")

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "probe-sample.json"

# Every entry the legend can have, in the order the chart lists them.
EVERY_LEGEND_ENTRY = ("sent/s", "acked/s", "failed/s", "indeterminate/s", "unavailable",
                      "fault", "heal", "leader change", "ISR change", "ack latency max/s",
                      "run p50", "run p99", "lost (by send second)",
                      "duplicated (by send second)")

# The injector's longest event details (kaudit/probe/faults/injector.py).
LONG_DETAILS = {
    "fault": ["SIGSTOP followers 1,2 for 3s (still in the ISR)",
              "restarted stale follower 1 (it lacks the writes the leader took alone): only "
              "an unclean election can make it leader",
              "SIGSTOP followers 1,2 for 3s: acks=all requests time out after the leader "
              "appended them"],
    "heal": ["broker 3 restarted", "broker 1 resumed"],
    "leader-change": ["leader 3 -> 1"],
    "isr-change": ["ISR [1, 2, 3] -> [3]"],
}


def _sample() -> dict[str, Any]:
    record: dict[str, Any] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return record


def _second(s: int, *, down: range, sent: int = 1000) -> dict[str, Any]:
    return {"second": s, "sent": sent, "acked": 0 if s in down else sent,
            "failed": 30 if s == down.stop else 0,
            "indeterminate": 5 if s == down.stop + 1 else 0,
            "ack_latency_max_ms": None if s in down else (4000.0 if s == down.stop else 3.0),
            "state": "unavailable" if s in down else "available",
            "lost": 7 if s == down.start - 1 else 0,
            "duplicated": 2 if s == down.stop + 2 else 0}


def crowded() -> dict[str, Any]:
    """Many events with long details, up to the right edge, a long topic and settings."""
    record = _sample()
    down = range(5, 8)
    record["topic"] = "orders.payments.settlement-eu-west-1.audit-probe-2024-q3-" + "x" * 40
    record["settings"].update(transactional=True, unclean_leader_election=False,
                              faults=["lag-then-kill-leader:3", "pause-follower",
                                      "exec", "exec-heal", "shrink-isr-then-kill-leader:2"])
    record["timeline"] = [_second(s, down=down) for s in range(20)]
    record["availability"] = {"unavailable_windows": [{"start": 5, "seconds": 3}]}
    events = []
    for i in range(18):
        for kind, details in LONG_DETAILS.items():
            events.append({"at_s": 0.3 + 1.1 * i, "kind": kind,
                           "detail": details[i % len(details)], "partition": i % 3})
    # Just before the point where today's chart turns labels to the left, and at the end.
    for at in (15.7, 19.95):
        events.append({"at_s": at, "kind": "fault", "detail": LONG_DETAILS["fault"][1],
                       "partition": 0})
    record["events"] = events
    record.update(lost=7, duplicated=2, verdict="fail")
    return record


def every_legend_entry() -> dict[str, Any]:
    """A run that fills the legend: bars, lost and duplicated, a window, every event kind."""
    record = _sample()
    down = range(4, 6)
    record["timeline"] = [_second(s, down=down, sent=5000) for s in range(12)]
    record["availability"] = {"unavailable_windows": [{"start": 4, "seconds": 2}]}
    record["events"] = [
        {"at_s": 3.6, "kind": "fault", "detail": "SIGSTOP followers 1,2 for 3s (still in "
                                                 "the ISR)", "partition": 0},
        {"at_s": 6.2, "kind": "heal", "detail": "broker 2 restarted", "partition": 0},
        {"at_s": 6.9, "kind": "leader-change", "detail": "leader 2 -> 3", "partition": 0},
        {"at_s": 7.0, "kind": "isr-change", "detail": "ISR [1, 2, 3] -> [1, 3]",
         "partition": 0},
        {"at_s": 11.8, "kind": "fault", "detail": "SIGKILL leader 3", "partition": 1},
    ]
    record.update(lost=7, duplicated=2, verdict="fail")
    return record


RECORDS = {"sample": _sample, "crowded": crowded, "every legend entry": every_legend_entry}


@dataclass
class Drawn:
    """What was on the saved PNG, with a renderer to measure it."""

    fig: Figure
    texts: list[Text]
    """Every text drawn: titles, legend entries, annotations, tick and axis labels."""

    def box(self, artist: Any) -> Bbox:
        box: Bbox = artist.get_window_extent(self.fig.canvas.get_renderer())
        return box

    def text(self, starts: str) -> Text:
        found = [t for t in self.texts if t.get_text().startswith(starts)]
        assert len(found) == 1, f"no single figure text starting {starts!r}"
        return found[0]

    @property
    def panels(self) -> list[Axes]:
        return list(self.fig.axes)

    @property
    def annotations(self) -> list[Annotation]:
        return [t for t in self.texts if isinstance(t, Annotation)]


def draw(record: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Drawn:
    """Run ``timeline_png`` and catch the figure it saves and every text it draws."""
    saved: list[Figure] = []
    drawn: list[Text] = []
    save, draw_text = Figure.savefig, Text.draw

    def spy_save(fig: Figure, *args: Any, **kwargs: Any) -> None:
        saved.append(fig)
        save(fig, *args, **kwargs)

    def spy_draw(text: Text, renderer: Any) -> None:
        if text.get_visible() and text.get_text().strip():
            drawn.append(text)
        draw_text(text, renderer)

    monkeypatch.setattr(Figure, "savefig", spy_save)
    monkeypatch.setattr(Text, "draw", spy_draw)
    timeline_png(record)
    monkeypatch.undo()
    assert len(saved) == 1
    return Drawn(saved[0], list(dict.fromkeys(drawn)))


@pytest.fixture(params=sorted(RECORDS))
def drawn(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Drawn:
    return draw(RECORDS[request.param](), monkeypatch)


def test_the_legend_covers_no_title_line_nor_annotation(drawn: Drawn) -> None:
    legend = drawn.box(drawn.fig.legends[0])
    for starts in ("kaudit probe", "acks=", "sent "):
        assert not legend.overlaps(drawn.box(drawn.text(starts))), starts
    assert "verdict" in drawn.text("sent ").get_text()
    for note in drawn.annotations:
        assert not legend.overlaps(drawn.box(note)), note.get_text()


def test_title_block_and_legend_sit_above_the_panels(drawn: Drawn) -> None:
    top = max(drawn.box(ax).y1 for ax in drawn.panels)
    for artist in (drawn.fig.legends[0], drawn.text("kaudit probe"), drawn.text("acks="),
                   drawn.text("sent ")):
        assert drawn.box(artist).y0 >= top, artist


def test_every_text_lies_inside_the_figure(drawn: Drawn) -> None:
    figure = drawn.fig.bbox
    assert drawn.texts
    outside = [t.get_text() for t in drawn.texts if not _inside(drawn.box(t), figure)]
    assert outside == []


def test_annotations_stay_in_their_panel_and_apart(drawn: Drawn) -> None:
    boxes = [(drawn.box(n), drawn.box(n.axes)) for n in drawn.annotations]  # type: ignore[arg-type]
    assert boxes
    for box, panel in boxes:
        assert _inside(box, panel)
    for i, (a, _) in enumerate(boxes):
        assert not any(a.overlaps(b) for b, _ in boxes[i + 1:])


def test_every_legend_entry_is_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn = draw(every_legend_entry(), monkeypatch)
    labels = [t.get_text() for t in drawn.fig.legends[0].get_texts()]
    assert len(labels) == len(EVERY_LEGEND_ENTRY)
    for want in EVERY_LEGEND_ENTRY:
        assert any(label.startswith(want) for label in labels), want


def test_annotations_keep_the_whole_detail(monkeypatch: pytest.MonkeyPatch) -> None:
    """A detail of a few dozen characters is shown whole (wrapped), not cut short."""
    drawn = draw(every_legend_entry(), monkeypatch)
    shown = {" ".join(n.get_text().split()) for n in drawn.annotations}
    assert "p0 SIGSTOP followers 1,2 for 3s (still in the ISR)" in shown


def test_crowded_labels_that_do_not_fit_are_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Their lines stay; the labels shown still fit (the tests above)."""
    record = crowded()
    drawn = draw(copy.deepcopy(record), monkeypatch)
    labelled = [e for e in record["events"] if e["kind"] != "isr-change"]
    assert 0 < len(drawn.annotations) < len(labelled)


def _inside(box: Bbox, outer: Bbox) -> bool:
    # Half a pixel for rounding at the very edge.
    return (box.x0 >= outer.x0 - 0.5 and box.x1 <= outer.x1 + 0.5
            and box.y0 >= outer.y0 - 0.5 and box.y1 <= outer.y1 + 0.5)
