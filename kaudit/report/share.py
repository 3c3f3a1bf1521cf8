"""Render ``kaudit probe share``: every record's fate in a share group, the records that
broke the expected semantics with why, and ``kaudit.share/v1`` JSON."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tabulate import tabulate

from kaudit.probe.share.model import ShareReport
from kaudit.probe.share.verify import Account, Fate
from kaudit.report.base import Report, text_only
from kaudit.report.check.table import wrap
from kaudit.report.share_page import share_html

SCHEMA = "kaudit.share/v1"
SHOWN = 10
"""Records listed per table before "... and N more"."""
WHY_WIDTH = 62
"""The causes' why column's width: the table then fits 100 columns."""


def share_document(report: ShareReport) -> dict[str, Any]:
    """The counts by fate, every record that is not plainly processed, the verdict."""
    v = report.verification
    return {
        "schema": SCHEMA, "run_id": report.run_id, "topic": report.topic,
        "group": report.group, "settings": report.settings.describe(),
        "written": report.written, "delivery_limit": report.delivery_limit,
        "fates": {f.value: v.counts.get(f.value, 0) for f in Fate},
        "records": [{"seq": a.seq, "treatment": a.treatment.value, "fate": a.fate.value,
                     "deliveries": a.deliveries, "delivery_count": a.top_count,
                     "acknowledgements": dict(a.acknowledgements),
                     "processings": a.processings,
                     "why": a.why or None, "wrong": a.wrong or None}
                    for a in v.accounts if a.fate != Fate.processed or a.wrong],
        "killed": report.killed, "settled": report.settled, "expect": v.expect,
        "violations": report.violations(), "verdict": report.verdict,
        "notes": report.notes, "seconds": round(report.seconds, 2),
        "topic_deleted": report.topic_deleted,
        "events": [{"at_s": e.at_s, "kind": e.kind, "detail": e.detail}
                   for e in report.events],
        "timeline": [{"second": t.second, "processed": t.processed, "released": t.released,
                      "rejected": t.rejected, "redelivered": t.redelivered,
                      "ack_failed": t.ack_failed} for t in report.timeline],
    }


def share_table(report: ShareReport) -> str:
    """The heading, the fates, the records that went wrong, the verdict."""
    s, v = report.settings, report.verification
    mix = ", ".join(f"{name} {share:.0%}" for name, share in (
        ("release", s.mix.release), ("reject", s.mix.reject), ("poison", s.mix.poison))
        if share) or "accept all"
    lines = [f"kaudit probe share: {s.workers} worker(s), {report.written:,} records in "
             f"{s.partitions} partition(s) of {report.topic}; {mix}; delivery count limit "
             f"{report.delivery_limit}" + ("; one worker killed holding its locks"
                                           if s.kill_worker else "")
             + ("; one worker held a record past its lock" if s.slow_worker else "")
             + (f"; faults {', '.join(f.label() for f in s.faults)}" if s.faults else ""),
             ""]
    lines.append(tabulate([[v.counts.get(f.value, 0) for f in Fate]],
                          headers=[f.value.replace("_", " ") for f in Fate]))
    odd = [a for a in v.accounts if a.wrong or a.fate in (
        Fate.processed_twice, Fate.never_delivered, Fate.unsettled)]
    if odd:
        causes = _causes(odd)
        lines += ["", tabulate([(n, count, fate, wrap(why, WHY_WIDTH))
                                for (fate, why), (n, count) in causes.items() if n <= SHOWN],
                               headers=["cause", "records", "fate", "why"])]
        if len(causes) > SHOWN:
            lines.append(f"... and {len(causes) - SHOWN} more causes (--format json gives "
                         "each record's)")
        rows = [(a.seq, a.treatment.value, a.fate.value, a.deliveries, a.processings,
                 causes[(a.fate.value, a.why or a.wrong)][0]) for a in odd[:SHOWN]]
        lines += ["", tabulate(rows, headers=["record", "treatment", "fate", "deliveries",
                                              "processings", "cause"])]
        if len(odd) > SHOWN:
            lines.append(f"... and {len(odd) - SHOWN} more (--format json lists them all)")
    if report.events:
        lines += ["", *[f"{e.at_s:7.1f}s  {e.kind:<5}  {e.detail}" for e in report.events]]
    lines += ["", *[f"note: {n}" for n in report.notes], *([""] if report.notes else [])]
    why = report.violations()
    lines.append(f"verdict: {report.verdict.upper()}"
                 + (f" (expected {v.expect})" if v.expect else "")
                 + (f": {'; '.join(why)}" if why else "") + f"; {report.seconds:.1f} s")
    return "\n".join(lines) + "\n"


def share_page(report: ShareReport) -> str:
    """The HTML page (:func:`~kaudit.report.share_page.share_html`)."""
    return share_html(share_document(report))


def _causes(odd: list[Account]) -> dict[tuple[str, str], tuple[int, int]]:
    """Each distinct (fate, why), most records first: its number and how many share it."""
    counted = Counter((a.fate.value, a.why or a.wrong) for a in odd)
    return {key: (n, count) for n, (key, count) in enumerate(counted.most_common(), 1)}


SHARE: Report[ShareReport] = Report(name="probe share", document=share_document,
                                    renderers={"table": text_only(share_table),
                                               "html": text_only(share_page)})
"""The ``kaudit probe share`` report."""
