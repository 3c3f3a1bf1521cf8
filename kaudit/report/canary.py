"""``kaudit canary``'s summary: per-partition accounting, loss causes, anomalies, faults."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from kaudit.canary.result import CanaryResult
from kaudit.report.base import RenderOptions, Report

SCHEMA = "kaudit.canary/v1"

TABLE_COLUMNS = ("sent", "acked", "failed", "indeterminate", "read", "lost", "duplicated",
                 "reordered", "late", "acked_unread")


def canary_document(result: CanaryResult) -> dict[str, Any]:
    """The summary as one JSON-ready dict."""
    totals = {c: result.total(c) for c in (*TABLE_COLUMNS, "failed_present",
                                           "indeterminate_present", "indeterminate_absent",
                                           "reappeared", "beyond_window", "unanswered")}
    return {
        "schema": SCHEMA, "topic": result.topic, "run_id": result.run_id,
        "settings": result.settings, "seconds": result.seconds,
        "verdict": result.verdict, "violations": result.violations(),
        "totals": totals, "lost_causes": result.lost_causes(),
        "partitions": result.partitions, "anomalies": result.anomalies,
        "events": result.events, "faults": result.faults, "notes": result.notes,
    }


def canary_table(result: CanaryResult, _options: RenderOptions) -> str:
    rows = [[p["partition"], *(p[c] for c in TABLE_COLUMNS)] for p in result.partitions]
    rows.append(["all", *(result.total(c) for c in TABLE_COLUMNS)])
    lines = [f"kaudit canary: {result.topic}, {result.seconds:.0f}s, run {result.run_id[:8]}",
             "", tabulate(rows, headers=["partition", *TABLE_COLUMNS]), ""]
    causes = result.lost_causes()
    if causes:
        lines.append("lost by cause: " + ", ".join(f"{c} {n}" for c, n in sorted(causes.items())))
    runs = _lost_runs(result.events)
    for first, last, count in runs[:10]:
        seqs = f"seq {first['seq']}" if count == 1 else f"seq {first['seq']}-{last['seq']}"
        offsets = f"offset {first['offset']}" if count == 1 else \
            f"offsets {first['offset']}-{last['offset']}"
        lines.append(f"  lost p{first['partition']} {seqs} ({count}), {offsets}: "
                     f"{first['cause']}: {first['evidence']}")
    if len(runs) > 10:
        lines.append("  ... (every loss is in --format json and --events)")
    lines += [f"{f['kind']} at {f['at_s']:.1f}s: {f['detail']}" for f in result.faults]
    lines += [f"note: {n}" for n in result.notes]
    lines.append(f"verdict: {result.verdict}")
    lines += [f"  {v}" for v in result.violations()]
    return "\n".join(lines) + "\n"


def _lost_runs(events: list[dict[str, Any]]
               ) -> list[tuple[dict[str, Any], dict[str, Any], int]]:
    """Losses of consecutive sequences on one partition with one cause, as (first, last,
    count): a truncation is one line, not hundreds."""
    runs: list[tuple[dict[str, Any], dict[str, Any], int]] = []
    for event in (e for e in events if e["kind"] == "lost"):
        if runs:
            first, last, count = runs[-1]
            if (event["partition"], event["cause"]) == (last["partition"], last["cause"]) \
                    and event["seq"] == last["seq"] + 1:
                runs[-1] = (first, event, count + 1)
                continue
        runs.append((event, event, 1))
    return runs


CANARY: Report[CanaryResult] = Report(name="canary", schema=SCHEMA, document=canary_document,
                                      renderers={"table": canary_table})
