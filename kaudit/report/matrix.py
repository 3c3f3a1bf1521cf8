"""Render a probe matrix: one verdict table, and ``kaudit.probe-matrix/v1`` JSON."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from kaudit.probe.matrix import MatrixRow
from kaudit.probe.outcomes import ANOMALIES, SEND_OUTCOMES
from kaudit.report.base import Report, text_only

SCHEMA = "kaudit.probe-matrix/v1"
# The matrix never runs transactions: nothing is aborted on purpose.
_COUNTS = (*(name for name in SEND_OUTCOMES if name != "aborted"), *ANOMALIES)


def matrix_document(rows: list[MatrixRow]) -> dict[str, Any]:
    """Rows with settings, per-trial counts and totals."""
    return {
        "schema": SCHEMA,
        "rows": [{
            "acks": r.cell.acks,
            "idempotence": r.cell.idempotence,
            "min_insync_replicas": r.cell.min_insync_replicas,
            "unclean_leader_election": r.cell.unclean_leader_election,
            "fault": r.cell.fault.label() if r.cell.fault else None,
            "trials": len(r.reports),
            **{name: r.total(name) for name in _COUNTS},
            "unavailable_seconds": r.unavailable_seconds,
            "runs": [{"run_id": rep.run_id, "topic": rep.topic,
                      **{name: int(getattr(rep.verification, name)) for name in _COUNTS},
                      "send_errors": rep.send_errors, "verdict": rep.verdict}
                     for rep in r.reports],
        } for r in rows],
    }


def matrix_table(rows: list[MatrixRow]) -> str:
    """Two lines per configuration: its settings as the progress lines name them, then what
    its trials lost, duplicated, reordered and how long they were unavailable.

    A column per setting makes a line 146 characters wide (a fault's name alone can be 29);
    with the settings on a line of their own the table fits 100 columns.
    """
    counts = tabulate([(len(r.reports), r.total("sent"), r.total("acked"), r.total("lost"),
                        r.total("duplicated"), r.total("reordered"), r.unavailable_seconds)
                       for r in rows],
                      headers=["trials", "sent", "acked", "lost", "duplicated", "reordered",
                               "unavailable s"]).split("\n")
    head, lines = counts[:2], counts[2:]
    return "\n".join([*head, *(line for r, counted in zip(rows, lines, strict=True)
                               for line in (r.cell.label(), counted))]) + "\n"


def matrix_html(rows: list[MatrixRow]) -> str:
    """One page: the verdict table, then each run's timeline."""
    from kaudit.report import html
    from kaudit.report.probe import probe_document

    runs = [(f"acks={r.cell.acks}, idempotence {'on' if r.cell.idempotence else 'off'}, "
             f"min.isr={r.cell.min_insync_replicas}, "
             f"fault {r.cell.fault.label() if r.cell.fault else 'none'}", rep)
            for r in rows for rep in r.reports]
    failing = any(rep.verdict != "pass" for _, rep in runs)
    return html.page("kaudit probe matrix", "fail" if failing else "pass", matrix_table(rows),
                     [(f"{label}: run {rep.run_id[:12]}, verdict {rep.verdict}",
                       html.timeline(probe_document(rep), label)) for label, rep in runs])


MATRIX: Report[list[MatrixRow]] = Report(name="probe matrix", schema=SCHEMA,
                                         document=matrix_document,
                                         renderers={"table": text_only(matrix_table),
                                                    "html": text_only(matrix_html)})
"""The ``kaudit probe matrix`` report."""
