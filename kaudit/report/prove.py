"""Render ``kaudit probe prove``: one row per claim, and ``kaudit.prove/v1`` JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tabulate import tabulate

from kaudit.probe.consume.model import ConsumeReport
from kaudit.probe.model import ProbeReport
from kaudit.probe.prove import ProofRow, RunReport
from kaudit.probe.share.model import ShareReport
from kaudit.report.base import Report, text_only
from kaudit.report.check.table import wrap

SCHEMA = "kaudit.prove/v1"


@dataclass(frozen=True)
class Proof:
    """The rows of a proof and the probe runs they read."""

    rows: list[ProofRow]
    reports: dict[str, RunReport]
    seconds: float

    @property
    def verdict(self) -> str:
        """``confirmed`` when every claim was confirmed."""
        return "confirmed" if self.rows and all(r.confirmed for r in self.rows) else "not confirmed"


def _verdict(row: ProofRow) -> str:
    return "CONFIRMED" if row.confirmed else "NOT CONFIRMED"


def prove_document(proof: Proof) -> dict[str, Any]:
    """The ``kaudit.prove/v1`` document: every claim with its evidence, every run."""
    return {
        "schema": SCHEMA,
        "seconds": round(proof.seconds, 1),
        "rows": [{"claim": r.claim.claim, "settings": r.settings, "schedule": r.schedule,
                  "expected": r.claim.expected, "observed": r.observed,
                  "runs": list(r.claim.experiments), "verdict": _verdict(r)}
                 for r in proof.rows],
        "runs": {name: _run(rep) for name, rep in proof.reports.items()},
        "verdict": proof.verdict,
    }


def _run(rep: RunReport) -> dict[str, Any]:
    """One run's counts (a consumer run: its ``kaudit.consume/v1`` counts and crashes; a
    share-group run: its records by fate, never delivered as lost and processed twice as
    duplicated)."""
    if isinstance(rep, ShareReport):
        from kaudit.report.share import share_document

        doc = share_document(rep)
        fates = doc["fates"]
        return {**{k: doc[k] for k in ("run_id", "topic", "group", "settings", "written",
                                        "delivery_limit", "fates", "killed", "events",
                                        "settled", "verdict")},
                "processed": fates["processed"] + fates["processed_twice"],
                "lost": fates["never_delivered"], "duplicated": fates["processed_twice"]}
    if isinstance(rep, ConsumeReport):
        from kaudit.report.consume import consume_document

        doc = consume_document(rep)
        return {k: doc[k] for k in (
            "run_id", "topic", "settings", "records", "processed", "lost", "duplicated",
            "extra_processings", "reordered", "delivered", "promised", "crashes",
            "unattributed", "finished", "events", "verdict")}
    return {"run_id": rep.run_id, "topic": rep.topic, "settings": rep.settings.describe(),
            **{k: getattr(rep.verification, k) for k in (
                "sent", "acked", "failed", "indeterminate", "aborted", "lost", "duplicated",
                "reordered", "aborted_visible")},
            "read_then_lost": rep.read_then_lost,
            "lost_causes": None if rep.loss_causes is None else rep.loss_causes.to_dict(),
            "read_then_lost_causes": None if rep.read_then_lost_causes is None
            else rep.read_then_lost_causes.to_dict(),
            "unavailable_seconds": rep.timeline.summary()["unavailable_seconds"],
            "events": [{"at_s": e.at_s, "kind": e.kind, "detail": e.detail,
                        "partition": e.partition} for e in rep.events],
            "notes": list(rep.notes), "verdict": rep.verdict}


def prove_table(proof: Proof) -> str:
    """One row per claim: the claim, its settings and schedule, what was expected and what
    was observed, the verdict; a blank line between claims (their cells wrap)."""
    # A column each for settings, schedule, expected and observed is 161 characters wide;
    # paired in two columns the table fits 100. 27 keeps shrink-isr-then-kill-leader whole.
    rows = [(wrap(r.claim.claim, 25), wrap(f"{r.settings}\nunder {r.schedule}", 27),
             wrap(f"expected: {r.claim.expected}\nobserved: {r.observed}", 28, "  "),
             _verdict(r))
            for r in proof.rows]
    lines = tabulate(rows, headers=["claim", "settings", "expected / observed", "verdict"],
                     disable_numparse=True).split("\n")
    table, body = lines[:2], lines[2:]
    for n, row in enumerate(rows):
        height = max(cell.count("\n") + 1 for cell in row)
        table += [*([""] if n else []), *body[:height]]
        body = body[height:]
    confirmed = sum(r.confirmed for r in proof.rows)
    return ("\n".join(table) + f"\n\n{confirmed} of {len(proof.rows)} claims confirmed in "
            f"{proof.seconds:.0f}s\n")


def prove_html(proof: Proof) -> str:
    """One page: the verdict in a sentence, a row per claim, a row per run, then each
    producer run's timeline."""
    from kaudit.report import html
    from kaudit.report.explain import prove_sentence, unjudged_claim
    from kaudit.report.probe import probe_document

    doc = prove_document(proof)
    claims = html.table(["claim", "settings", "schedule", "expected", "observed", "verdict"],
                        [(r.claim.claim, r.settings, r.schedule, r.claim.expected,
                          r.observed, _verdict(r)) for r in proof.rows], verdict_column=5,
                        # A claim the runs contradicted, not one left without a run.
                        flagged=[i for i, r in enumerate(doc["rows"])
                                 if r["verdict"] != "CONFIRMED" and not unjudged_claim(r)])
    n = html.number
    runs = html.table(
        ["run", "fault", "acked or processed", "lost", "duplicated", "verdict"],
        [(name, ", ".join(run["settings"].get("faults") or []) or "-",
          n(run.get("acked", run.get("processed"))), n(run["lost"]), n(run["duplicated"]),
          run["verdict"]) for name, run in doc["runs"].items()], verdict_column=5)
    charts = [(f"run {name}: {', '.join(rep.settings.describe()['faults']) or 'no fault'}, "
               f"verdict {rep.verdict}", html.timeline(probe_document(rep), name))
              for name, rep in proof.reports.items() if isinstance(rep, ProbeReport)]
    return html.page("kaudit probe prove", proof.verdict, "",
                     [("Claims", claims), *([("Runs", runs)] if doc["runs"] else []), *charts],
                     reason=prove_sentence(doc),
                     context=f"{len(proof.rows)} claim(s) judged on {len(doc['runs'])} run(s)")


PROVE: Report[Proof] = Report(name="probe prove", document=prove_document,
                              renderers={"table": text_only(prove_table),
                                         "html": text_only(prove_html)})
"""The ``kaudit probe prove`` report."""
