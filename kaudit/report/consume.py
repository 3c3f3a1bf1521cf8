"""Render ``kaudit probe consume``: the account of every input record, the crashes that
cost something, and ``kaudit.consume/v1`` JSON."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from kaudit.probe.consume.journal import ranges_text
from kaudit.probe.consume.model import PROMISES, ConsumeReport
from kaudit.report.base import Report, text_only
from kaudit.report.check.table import wrap

SCHEMA = "kaudit.consume/v1"
#: Offsets shown per partition in a table cell before "...".
_CELL_OFFSETS = 40
_TABLE_WIDTH = 100
"""The crash table wraps its long cells when one line per crash is wider than this."""
_POINT_WIDTH = 19  # after-send-offsets- / before-commit: two lines
_OFFSETS_WIDTH = 18  # with the columns that never wrap, the table is at most 100 wide


def _ranges(offsets: dict[int, list[int]]) -> dict[str, str]:
    return {str(p): ranges_text(v) for p, v in sorted(offsets.items())}


def consume_document(report: ConsumeReport) -> dict[str, Any]:
    """Every count, every crash with what it cost, the events."""
    v = report.verification
    started = report.started_ns
    return {
        "schema": SCHEMA,
        "run_id": report.run_id, "topic": report.topic, "output_topic": report.output_topic,
        "group": report.group, "sink": report.sink, "settings": report.settings.describe(),
        "records": v.records, "processed": v.processed, "processings": v.processings,
        "lost": v.lost, "duplicated": v.duplicated,
        "extra_processings": v.extra_processings, "reordered": v.reordered,
        "outside_input": v.outside_input,
        "processed_by_worker": {str(w): n for w, n in v.by_worker.items()},
        "times": {str(k): n for k, n in v.times.items()},
        "delivered": v.delivered(), "promised": PROMISES[report.settings.strategy],
        "lost_offsets": _ranges(v.lost_offsets),
        "duplicated_offsets": _ranges(v.duplicated_offsets),
        "crashes": [{"worker": c.worker, "incarnation": c.incarnation,
                     "at_s": round((c.killed_ns - started) / 1e9, 3), "point": c.point,
                     "in_flight": {str(p): r for p, r in c.in_flight.items()},
                     "lost": c.lost_count(), "duplicated": c.duplicated_count(),
                     "lost_offsets": _ranges(c.lost),
                     "duplicated_offsets": _ranges(c.duplicated)} for c in v.crashes],
        "unattributed": {"lost": sum(map(len, v.unattributed_lost.values())),
                         "duplicated": sum(map(len, v.unattributed_duplicated.values())),
                         "lost_offsets": _ranges(v.unattributed_lost),
                         "duplicated_offsets": _ranges(v.unattributed_duplicated)},
        "restarts": report.restarts,
        "events": [{"at_s": e.at_s, "kind": e.kind, "detail": e.detail}
                   for e in report.events],
        "finished": report.finished, "interrupted": report.interrupted,
        "fill_seconds": round(report.fill_seconds, 2),
        "consume_seconds": round(report.consume_seconds, 2),
        "seconds": round(report.total_seconds, 2),
        "per_worker_rate": round(report.per_worker_rate, 1),
        "topics_deleted": report.topics_deleted, "notes": report.notes,
        "violations": report.violations(), "verdict": report.verdict,
    }


def _cell(offsets: dict[int, list[int]]) -> str:
    if not offsets:
        return "-"
    text = " ".join(f"p{p}:{ranges_text(v)}" for p, v in sorted(offsets.items()))
    return text if len(text) <= _CELL_OFFSETS else text[:_CELL_OFFSETS - 3] + "..."


def _crash_table(report: ConsumeReport, wrapped: bool = False) -> str:
    """One row per crash: when, where, what it had in hand and what that cost; its long
    cells wrapped (a crash point at its hyphens, offset ranges between partitions, then at
    their commas) only when one line per crash is wider than :data:`_TABLE_WIDTH`."""
    def cell(text: str, width: int, breaks: str) -> str:
        return wrap(text, width, breaks=breaks) if wrapped else text

    table = str(tabulate(
        [(f"{c.worker}.{c.incarnation}", f"{(c.killed_ns - report.started_ns) / 1e9:.1f}",
          cell(c.point, _POINT_WIDTH, "-"),
          cell(" ".join(f"p{p}:{r}" for p, r in c.in_flight.items()) or "-", _OFFSETS_WIDTH,
               ","),
          c.lost_count(), c.duplicated_count(),
          cell(_cell(c.lost) if c.lost else _cell(c.duplicated), _OFFSETS_WIDTH, ","))
         for c in report.verification.crashes],
        headers=["crash", "at s", "point", "in flight", "lost", "duplicated", "offsets"],
        disable_numparse=[0]))  # "1.10" is worker 1's tenth start, not 1.1
    if wrapped or max(len(line) for line in table.split("\n")) <= _TABLE_WIDTH:
        return table
    return _crash_table(report, wrapped=True)


def consume_table(report: ConsumeReport) -> str:
    """The heading, the counts, a row per crash, the verdict."""
    s, v = report.settings, report.verification
    crash = (f"a crash every {s.crash_every:g} s ({s.crash_point})" if s.crash_every
             else "no crashes")
    faults = f"; faults {', '.join(f.label() for f in s.faults)}" if s.faults else ""
    lines = [f"kaudit probe consume: --commit {s.strategy}, {s.workers} worker(s), "
             f"{v.records:,} records in {s.partitions} partition(s) of {report.topic}; "
             f"{crash}{faults}", ""]
    # delivered and promised on a line of their own: as two more columns the counts are
    # 119 characters wide
    lines += [tabulate(
        [(v.records, v.processed, v.lost, v.duplicated, v.extra_processings, v.reordered,
          len(v.crashes), report.restarts)],
        headers=["records", "processed", "lost", "duplicated", "extra", "reordered",
                 "crashes", "restarts"]),
        f"delivered {v.delivered()}, promised {PROMISES[s.strategy]}"]
    if v.crashes:
        lines += ["", _crash_table(report)]
    shown = [f"{e.at_s:.1f} s {e.detail}" for e in report.events
             if e.kind in ("fault", "heal", "rebalance")]
    if shown:
        lines += ["", "events: " + "; ".join(shown)]
    unattributed = (sum(map(len, v.unattributed_lost.values())),
                    sum(map(len, v.unattributed_duplicated.values())))
    if any(unattributed):
        lines += ["", f"not explained by a crash: {unattributed[0]} lost, "
                      f"{unattributed[1]} duplicated"]
    lines += ["", *[f"note: {n}" for n in report.notes], *([""] if report.notes else [])]
    verdict = report.verdict.upper()
    why = report.violations()
    lines.append(f"verdict: {verdict}" + (f" ({'; '.join(why)})" if why else "")
                 + f"; {report.per_worker_rate:,.0f} records/s per worker, "
                   f"{report.total_seconds:.1f} s in all")
    return "\n".join(line for line in lines) + "\n"


CONSUME: Report[ConsumeReport] = Report(name="probe consume", document=consume_document,
                                        renderers={"table": text_only(consume_table)})
"""The ``kaudit probe consume`` report."""
