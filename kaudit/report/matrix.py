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
                      "send_errors": rep.send_errors,
                      "lost_causes": None if rep.loss_causes is None
                      else rep.loss_causes.to_dict(), "verdict": rep.verdict}
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
    """One page: the verdict in a sentence, each failing run's reasons explained, a table of
    the configurations and one of the runs, then each run's timeline."""
    from kaudit.report import html
    from kaudit.report.explain import configuration, matrix_sentence
    from kaudit.report.probe import probe_document

    doc = matrix_document(rows)
    runs = [(configuration(row), r, rep) for row, matrix_row in zip(doc["rows"], rows,
                                                                     strict=True)
            for r, rep in zip(row["runs"], matrix_row.reports, strict=True)]
    failing = any(r["verdict"] != "pass" for _, r, _ in runs)
    n = html.number
    table = html.table(
        ["configuration", "trials", "sent", "acked", "lost", "duplicated", "reordered",
         "unavailable s", "verdict"],
        [(configuration(row), row["trials"], *(n(row[k]) for k in (
            "sent", "acked", "lost", "duplicated", "reordered")), n(row["unavailable_seconds"]),
          "pass" if all(r["verdict"] == "pass" for r in row["runs"]) else "fail")
         for row in doc["rows"]], verdict_column=8,
        flagged=[i for i, row in enumerate(doc["rows"]) if row["lost"]])
    run_table = html.table(
        ["configuration", "run", "acked", "lost", "duplicated", "verdict", "reasons"],
        [(label, r["run_id"][:12], n(r["acked"]), n(r["lost"]), n(r["duplicated"]),
          r["verdict"], "; ".join(rep.violations()) or "none") for label, r, rep in runs],
        verdict_column=5)
    explained = html.reasons([(f"{label}, run {r['run_id'][:12]}", reason)
                              for label, r, rep in runs for reason in rep.violations()])
    return html.page(
        "kaudit probe matrix", "fail" if failing else "pass", "",
        [("Configurations", table), ("Runs", run_table),
         *((f"{label}: run {r['run_id'][:12]}, verdict {r['verdict']}",
            html.timeline(probe_document(rep), label)) for label, r, rep in runs)],
        reason=matrix_sentence(doc),
        context=f"{len(rows)} configuration(s), {len(runs)} run(s)", head=explained)


MATRIX: Report[list[MatrixRow]] = Report(name="probe matrix", document=matrix_document,
                                         renderers={"table": text_only(matrix_table),
                                                    "html": text_only(matrix_html)})
"""The ``kaudit probe matrix`` report."""
