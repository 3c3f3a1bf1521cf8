"""Render the demo: the story of its probe matrix, its closing lines and its
``kaudit.demo/v1`` document."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaudit.demo.model import PROBE_PAGE, DemoResult
from kaudit.report.base import Report

if TYPE_CHECKING:
    from kaudit.probe.matrix import MatrixRow

SCHEMA = "kaudit.demo/v1"


def matrix_story(rows: list[MatrixRow]) -> str:
    """What the matrix showed, in the operator's words, from this run's numbers."""
    lines = []
    for row in rows:
        line = (f"acks={row.cell.acks}: {row.total('lost'):,} of {row.total('acked'):,} "
                "acknowledged writes lost")
        if row.total("duplicated"):
            line += f", {row.total('duplicated'):,} duplicated"
        if row.total("reordered"):
            line += f", {row.total('reordered'):,} reordered"
        if row.total("indeterminate"):
            line += (f", {row.total('indeterminate'):,} sends never answered "
                     "(indeterminate: not counted as lost)")
        lines.append(line + ".")
    by_acks = {row.cell.acks: row for row in rows}
    acks1, acks_all = by_acks.get("1"), by_acks.get("all")
    if acks1 is not None and acks1.total("lost"):
        lines.append("acks=1 is acknowledged by the leader alone: its followers were frozen "
                     "(still in the ISR) while it wrote, and when it died one of them was "
                     "elected cleanly without those writes. They are gone, every time.")
    elif acks1 is not None:
        lines.append("acks=1 lost nothing: no write was acknowledged while the followers "
                     "were frozen (the run may have ended first).")
    if acks_all is not None and acks_all.total("acked") and not acks_all.total("lost"):
        lines.append("acks=all with min.insync.replicas=2 is acknowledged only once a "
                     "second replica has the write, so the leader's death lost none of them.")
    if acks_all is not None and (acks_all.total("duplicated") or acks_all.total("reordered")):
        lines.append("Its duplicates and reorderings come from retries in the failover "
                     "(a lost answer, several requests in flight); an idempotent producer "
                     "(--idempotence on) prevents both.")
    return "\n".join(lines) + "\n"


def summary(result: DemoResult) -> str:
    """The closing lines: where the reports are, how to go on, how to stop the lab."""
    r = result.reports
    lab = shlex.join(["--state-dir", str(result.state_dir)])
    lines = ["", f"== done in {result.seconds:.0f}s. Reports in {r.directory}:",
             f"  check        {r.check_json}  (SARIF: {r.check_sarif.name})",
             f"  probe        {r.probe_json}",
             f"  probe page   {r.directory / PROBE_PAGE}  (open it in a browser)"]
    if r.probe_plot is not None:
        lines.append(f"  probe plot   {r.probe_plot}")
    lines.append(f"  reconcile    {r.reconcile_json}")
    lines += [f"  discrepancies {path}" for path in r.discrepancies]
    lines += [f"  policy       {r.policy}  (edit it and run check again)",
              "",
              f"The lab is still running: eval \"$(kaudit lab env {lab})\" and try the "
              "commands above.",
              f"Stop it with: kaudit lab down {lab}   (add --purge to delete its data)", ""]
    return "\n".join(lines)


def demo_document(result: DemoResult) -> dict[str, Any]:
    """The ``kaudit.demo/v1`` document: where everything went, and the check, probe
    matrix and reconcile documents the demo wrote (read back from its reports)."""
    r = result.reports

    def report(path: Path) -> Any:
        return json.loads(path.read_text(encoding="utf-8"))

    return {
        "schema": SCHEMA,
        "state_dir": str(result.state_dir),
        "bootstrap": result.bootstrap,
        "started_lab": result.started_lab,
        "seconds": round(result.seconds, 1),
        "reports": {
            "directory": str(r.directory), "policy": str(r.policy),
            "check": str(r.check_json), "check_sarif": str(r.check_sarif),
            "probe_matrix": str(r.probe_json),
            "probe_plot": str(r.probe_plot) if r.probe_plot is not None else None,
            "probe_page": str(r.directory / PROBE_PAGE),
            "reconcile": str(r.reconcile_json), "sink": str(r.sink),
            "discrepancies": list(r.discrepancies),
        },
        "check": report(r.check_json),
        "probe_matrix": report(r.probe_json),
        "reconcile": report(r.reconcile_json),
    }


DEMO: Report[DemoResult] = Report(name="demo", document=demo_document)
"""``kaudit demo --format json``: JSON only (the table is the steps' own output)."""
