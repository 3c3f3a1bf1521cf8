"""A probe's JSON record read into what its timeline chart draws: the seconds, the event
marks, the unavailability windows and the title lines, checked and converted before
anything is drawn (:mod:`kaudit.report.plot` draws them)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DRAWN = ("fault", "heal", "leader-change", "isr-change")
"""The event kinds the chart marks with a line."""
LABELLED = ("fault", "heal", "leader-change")
"""Of which those whose line carries a label."""
LABEL_CHARS, LABEL_LINES = 34, 4
"""An event label wraps at this many characters and is cut short after this many lines."""


@dataclass(frozen=True)
class ChartSecond:
    """One second of the chart, read back from a record's ``timeline`` row."""

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
class Mark:
    """One vertical line: events of one kind that fall (almost) at the same time."""

    at_s: float
    kind: str
    label: str


@dataclass(frozen=True)
class Run:
    """What the plot shows, checked and converted before anything is drawn."""

    seconds: list[ChartSecond]
    marks: list[Mark]
    windows: list[tuple[float, float]]
    title: tuple[str, str, str]
    references: list[tuple[str, float]]
    """The run's ack latency p50 and p99, when known."""
    bad: bool
    """The verdict failed or messages were lost: the outcome line is red."""


def parse_record(record: Mapping[str, Any]) -> Run:
    seconds = _seconds(record)
    summary = record.get("latency_ms") or {}
    references = [(key, float(summary[key])) for key in ("p50", "p99")
                  if summary.get(key) is not None]
    bad = (str(record.get("verdict") or "").lower() == "fail"
           or count(record.get("lost", 0), "lost") > 0)
    return Run(seconds, _marks(record), _windows(record, seconds), _title(record),
                references, bad)


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing key {exc.args[0]!r}" if exc.args else "missing key"
    return str(exc) or type(exc).__name__


def count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} is not a number: {value!r}")
    return int(value)


def _seconds(record: Mapping[str, Any]) -> list[ChartSecond]:
    out = []
    timeline = record["timeline"]
    if not isinstance(timeline, Sequence) or isinstance(timeline, str):
        raise ValueError("timeline is not a list")
    for row in timeline:
        latency = row.get("ack_latency_max_ms")
        out.append(ChartSecond(
            second=count(row["second"], "second"),
            sent=count(row["sent"], "sent"),
            acked=count(row["acked"], "acked"),
            failed=count(row.get("failed", 0), "failed"),
            indeterminate=count(row.get("indeterminate", 0), "indeterminate"),
            latency_ms=None if latency is None else float(latency),
            state=str(row.get("state", "available")),
            lost=count(row.get("lost", 0), "lost"),
            duplicated=count(row.get("duplicated", 0), "duplicated"),
        ))
    return sorted(out, key=lambda s: s.second)


def _windows(record: Mapping[str, Any], seconds: list[ChartSecond]) -> list[tuple[float, float]]:
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


def _marks(record: Mapping[str, Any]) -> list[Mark]:
    """Events grouped per kind and 0.25 s, so a change on many partitions is one line."""
    groups: dict[tuple[str, float], list[Mapping[str, Any]]] = {}
    for event in record.get("events") or ():
        kind = str(event["kind"])
        if kind not in DRAWN:
            continue
        at = float(event["at_s"])
        key = next((k for k in groups if k[0] == kind and abs(k[1] - at) <= 0.25), (kind, at))
        groups.setdefault(key, []).append(event)
    marks = []
    for (kind, at), events in groups.items():
        first = events[0]
        part = first.get("partition")
        label = f"p{part} {first['detail']}" if part is not None else str(first["detail"])
        marks.append(Mark(at, kind, _wrap_label(label, len(events) - 1)))
    return sorted(marks, key=lambda m: (m.at_s, LABELLED.index(m.kind)
                                        if m.kind in LABELLED else len(LABELLED)))


def _wrap_label(label: str, more: int) -> str:
    """The whole detail over a few short lines; only a very long one is cut, and the count
    of events it stands for is kept."""
    lines = textwrap.wrap(label, LABEL_CHARS, max_lines=LABEL_LINES, placeholder=" \u2026",
                          break_on_hyphens=False) or [""]
    if more:
        lines[-1] += f" (+{more})"
    return "\n".join(lines)


def _flag(value: Any) -> str:
    return "-" if value is None else str(value).lower()


def _title(record: Mapping[str, Any]) -> tuple[str, str, str]:
    s = record.get("settings") or {}
    run_id = str(record.get("run_id") or "")[:12]
    command = record.get("command", "probe")
    head = f"kaudit {command} {run_id} on {record['topic']}".replace("  ", " ")
    parts = [f"acks={s.get('acks', '-')}", f"idempotence={_flag(s.get('idempotence'))}"]
    if s.get("transactional"):
        parts.append("transactional")
    if s.get("replication_factor") is not None:
        parts.append(f"RF={s['replication_factor']}")
    if "min_insync_replicas" in s:  # a canary's topic is its own: no such setting
        parts.append(f"min.isr={s['min_insync_replicas'] or 'default'}")
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
    outcome = ", ".join(f"{name} {count(record[name], name):,}" for name in
                        ("sent", "acked", "lost", "duplicated", "reordered"))
    verdict = record.get("verdict")
    if verdict:
        outcome += f"  \u2192  verdict {str(verdict).upper()}"
    return head, "  ".join(parts), outcome
