"""``kaudit canary``'s summary: per-partition accounting, loss causes, anomalies, faults."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from kaudit.canary.result import CanaryResult
from kaudit.report.base import RenderOptions, Report, text_only

SCHEMA = "kaudit.canary/v1"

TABLE_COLUMNS = ("sent", "acked", "failed", "indeterminate", "read", "lost", "duplicated",
                 "reordered", "late", "acked_unread")


def canary_document(result: CanaryResult) -> dict[str, Any]:
    """The summary as one JSON-ready dict."""
    totals = {c: result.total(c) for c in (*TABLE_COLUMNS, "failed_present",
                                           "indeterminate_present", "indeterminate_absent",
                                           "reappeared", "beyond_window", "unanswered",
                                           "aborted", "aborted_visible", "redelivered")}
    return {
        "schema": SCHEMA, "topic": result.topic, "run_id": result.run_id,
        "settings": result.settings, "seconds": result.seconds,
        "verdict": result.verdict, "violations": result.violations(),
        "totals": totals, "lost_causes": result.lost_causes(),
        "partitions": result.partitions, "anomalies": result.anomalies,
        "events": result.events, "faults": result.faults,
        "leader_changes": result.leader_changes, "notes": result.notes,
    }


def canary_table(result: CanaryResult, _options: RenderOptions) -> str:
    rows = [[p["partition"], *(p[c] for c in TABLE_COLUMNS)] for p in result.partitions]
    rows.append(["all", *(result.total(c) for c in TABLE_COLUMNS)])
    lines = [f"kaudit canary: {result.topic}, {result.seconds:.0f}s, run {result.run_id[:8]}",
             "", tabulate(rows, headers=["partition", *TABLE_COLUMNS]), ""]
    if result.settings.get("transactional"):
        lines.append(f"aborted transactions held {result.total('aborted')} record(s); "
                     f"{result.total('aborted_visible')} of them were read")
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
    lines += [f"{f['kind']} at {f['at_s']:.1f}s: {_where(f)}{f['detail']}"
              for f in result.happenings()]
    lines += [f"note: {n}" for n in result.notes]
    lines.append(f"verdict: {result.verdict}")
    lines += [f"  {v}" for v in result.violations()]
    return "\n".join(lines) + "\n"


def _where(event: dict[str, Any]) -> str:
    return f"p{event['partition']} " if event.get("partition") is not None else ""


def canary_html(result: CanaryResult) -> str:
    """The summary as one page: the verdict and its reasons, the counts per partition, the
    losses by cause with their evidence, the last hour's timeline, then the events."""
    from kaudit.report import html

    n = html.number
    counts = html.table(["partition", *TABLE_COLUMNS],
                        [[p["partition"], *(n(p[c]) for c in TABLE_COLUMNS)]
                         for p in result.partitions]
                        + [["all", *(n(result.total(c)) for c in TABLE_COLUMNS)]])
    losses = [(f"p{first['partition']}", f"{first['seq']}-{last['seq']}", n(count),
               f"{first['offset']}-{last['offset']}", first["cause"], first["evidence"])
              for first, last, count in _lost_runs(result.events)]
    sections = [("Counts", counts)]
    if losses:
        sections.append(("Losses", html.table(
            ["partition", "sequences", "records", "offsets", "cause", "evidence"], losses)))
    sections.append(("Timeline", html.timeline(
        timeline_record(result), "the last hour, per second: records sent and acknowledged, "
                                 "ack latency; faults and leader changes marked")))
    if result.happenings():
        sections.append(("Events", html.table(
            ["at", "kind", "partition", "detail"],
            [(f"{f['at_s']:.1f}s", f["kind"], "-" if f.get("partition") is None
              else f["partition"], f["detail"]) for f in result.happenings()])))
    if result.notes:
        sections.append(("Notes", "<ul>" + "".join(f"<li>{html.escape(note)}</li>"
                                                   for note in result.notes) + "</ul>"))
    sections.append(("Settings", html.table(["setting", "value"],
                                            sorted(result.settings.items()))))
    violations = result.violations()
    reason = violations[0] if violations else (
        f"every one of {result.total('acked'):,} acknowledged record(s) was read back or is "
        "still in flight; nothing was lost")
    return html.page(f"kaudit canary {result.run_id[:12]} on {result.topic}", result.verdict,
                     "", sections, reason=reason, context=_context(result),
                     head=html.reasons(violations))


def _context(result: CanaryResult) -> str:
    s = result.settings
    faults = ", ".join(s.get("faults") or []) or "no fault"
    return (f"acks={s['acks']}, idempotence {'on' if s['idempotence'] else 'off'}, "
            f"{'transactional, ' if s.get('transactional') else ''}"
            f"{s['rate']:g} records/s, {faults}; "
            f"{'--expect ' + result.expect if result.expect else 'no --expect'}; "
            f"{result.seconds:.0f}s in all")


def timeline_record(result: CanaryResult) -> dict[str, Any]:
    """The run in the shape the timeline chart reads (a probe record's)."""
    return {"command": "canary", "run_id": result.run_id, "topic": result.topic,
            "settings": result.settings,
            "timeline": result.timeline, "events": result.happenings(),
            "verdict": result.verdict, "latency_ms": None,
            **{k: result.total(k) for k in ("sent", "acked", "lost", "duplicated", "reordered")}}


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


CANARY: Report[CanaryResult] = Report(name="canary", document=canary_document,
                                      renderers={"table": canary_table,
                                                 "html": text_only(canary_html)})
