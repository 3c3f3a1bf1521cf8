"""The demo's one page: each step in order, what it shows and why its result is the point.

``kaudit demo`` is built to make things fail: unsound topics for ``check`` to find, a leader
killed under acks=1 for ``probe matrix`` to lose writes, a sink with faults put in for
``reconcile`` to find. Each report on its own says ``fail`` and stops there; this page says
beside each result that the failure is what the step is for, and whether the step showed
what it was built to show.

A pure function of the documents the demo writes (``kaudit.check/v1``,
``kaudit.probe-matrix/v1``, ``kaudit.reconcile/v1``), so the page can be made, and tested,
from stored JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaudit.report.check.html_format import findings_table, guarantees_table, summary_sentence
from kaudit.report.html import escape, page, table, verdict_class

Document = Mapping[str, Any]

SINK_FAULTS: tuple[tuple[str, str, str], ...] = (
    ("missing_in_sink", "missing", "on the topic, never written to the sink"),
    ("extra_in_sink", "extra", "in the sink, never on the topic"),
    ("duplicated_in_sink", "duplicated", "written to the sink more than once"),
    ("mismatched", "changed", "in the sink with another value than on the topic"),
)
"""The reconcile classes the demo's faulty sink is built with: class, the word an operator
says, what it means for an order."""


@dataclass(frozen=True)
class Step:
    """One step's section: its heading, what it shows, why its result is the point, and
    whether this run showed it."""

    heading: str
    shown: bool
    summary: str
    """One line for the top of the page."""
    html: str


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _p(label: str, text: str) -> str:
    return f"<p><strong>{escape(label)}</strong> {escape(text)}</p>"


def _result(shown: bool, text: str) -> str:
    """This run's result in a sentence, marked as the point (or not) in the verdict colours."""
    mark = "pass" if shown else "fail"
    word = "Shown:" if shown else "Not shown this time:"
    return f'<p><strong class="{mark}">{word}</strong> {escape(text)}</p>'


# --- check ----------------------------------------------------------------------------------


def check_step(check: Document) -> Step:
    """The check step: the findings in a sentence, the guarantees, then the findings."""
    sentence = summary_sentence(check)
    errors = check["summary"]["errors"]
    shown = errors > 0
    findings = len(check["findings"])
    html = "".join([
        _p("What it shows:", "the demo created topics with sound and unsound durability "
           "settings, a policy that holds them to the built-in durable profile, and an "
           "acks=1 producer for its orders topic. check reads their settings, not their "
           "traffic, and works out what each topic survives, before any broker fails."),
        _p("Why its result is the point:", "every error is an unsound setting the demo made on "
           "purpose (min.insync.replicas=1, unclean leader election, replication factor 1, "
           "min.insync.replicas equal to the replication factor, acks=1), found from the "
           "configuration alone. As a CI step, kaudit check would exit 1 here and stop the "
           "change before it reached the cluster."),
        _result(shown, sentence if shown else f"{sentence}: no error was found, though the "
                "demo's topics are built to have some"),
        # A heading under the step's own: no bigger than it (h3 is, in the shared style).
        '<h3 style="font-size: 1em">Guarantees: what each topic survives</h3>',
        guarantees_table(check),
        f"<details><summary>The {findings} finding{'' if findings == 1 else 's'}"
        "</summary>", findings_table(check), "</details>",
    ])
    return Step("check: does the configuration give the guarantee we think it does?",
                shown, f"check: {sentence}", html)


# --- probe matrix ---------------------------------------------------------------------------


def _configuration(row: Document) -> str:
    return (f"acks={row['acks']}, idempotence {'on' if row['idempotence'] else 'off'}, "
            f"min.insync.replicas={row['min_insync_replicas']}, unclean leader election "
            f"{'on' if row['unclean_leader_election'] else 'off'}, "
            f"fault {row['fault'] or 'none'}")


def _row_verdict(row: Document) -> str:
    return "pass" if all(r["verdict"] == "pass" for r in row["runs"]) else "fail"


def _by_acks(matrix: Document, acks: str) -> Document | None:
    return next((row for row in matrix["rows"] if row["acks"] == acks), None)


def _matrix_lines(matrix: Document) -> list[str]:
    """What each configuration did, in this run's numbers."""
    lines = []
    for row in matrix["rows"]:
        line = (f"acks={row['acks']}: {_n(row['lost'])} of {_n(row['acked'])} acknowledged "
                f"writes lost (verdict {_row_verdict(row)})")
        extra = [f"{_n(row[k])} {k}" for k in ("duplicated", "reordered") if row[k]]
        lines.append(line + (f", {', '.join(extra)}" if extra else "") + ".")
    return lines


def matrix_step(matrix: Document) -> Step:
    """The probe matrix step: its verdicts, and acks=1's loss explained as the point."""
    acks1, acks_all = _by_acks(matrix, "1"), _by_acks(matrix, "all")
    shown = (acks1 is not None and acks1["lost"] > 0
             and acks_all is not None and acks_all["acked"] > 0 and acks_all["lost"] == 0)
    rows = [(_configuration(row), _n(row["trials"]), *(_n(row[k]) for k in (
        "sent", "acked", "lost", "duplicated", "reordered", "unavailable_seconds")),
             _row_verdict(row)) for row in matrix["rows"]]
    verdicts = table(["configuration", "trials", "sent", "acked", "lost", "duplicated",
                      "reordered", "unavailable s", "verdict"], rows, verdict_column=8)
    if shown:
        result = " ".join(_matrix_lines(matrix))
    elif acks1 is not None and not acks1["lost"]:
        result = ("acks=1 lost nothing this time: no write was acknowledged while the "
                  "followers were frozen (the run may have ended first). Run the demo again.")
    else:
        result = " ".join(_matrix_lines(matrix)) or "the matrix ran no configuration."
    html = "".join([
        _p("What it shows:", "the same writes under acks=1 and under acks=all with "
           "min.insync.replicas=2, while the fault lag-then-kill-leader freezes the "
           "partition's followers (they stay in the in-sync replicas), lets the leader "
           "acknowledge writes alone for a few seconds, kills it and resumes them: a "
           "follower becomes leader cleanly, without those writes."),
        _p("Why its result is the point:", "under acks=1 a write is acknowledged as soon as "
           "the leader alone has it. When that leader dies before its followers have copied "
           "it, the new leader never had it, and a write the producer was told is stored is "
           "gone. acks=1's fail verdict is that loss, and showing it happen, on purpose and "
           "every time, is what this step is for. Under acks=all a write is acknowledged "
           "only once a second replica has it, so the same failure loses none; without "
           "idempotence its retries in the failover may still duplicate or reorder writes."),
        _result(shown, result), verdicts,
    ])
    summary = "probe matrix: " + (" ".join(_matrix_lines(matrix)) or "no configuration ran")
    return Step("probe matrix: what acks=1 and acks=all lose when the leader dies before "
                "its followers have its writes", shown, summary, html)


# --- reconcile ------------------------------------------------------------------------------


def _keys(reconcile: Document, cls: str, found: int) -> str:
    keys = [str(row.get("key")) for row in reconcile["samples"].get(cls, [])]
    more = ", ..." if len(keys) < found else ""
    return ", ".join(keys) + more if keys else "-"


def _found_line(reconcile: Document, injected: Mapping[str, int]) -> str:
    counts = reconcile["counts"]
    said = [f"{_n(counts.get(cls, 0))} {word}" for cls, word, _ in SINK_FAULTS]
    line = f"found {', '.join(said)} (of {_n(counts['topic_records'])} orders on the topic)"
    if all(counts.get(cls, 0) == injected.get(cls, 0) for cls, _, _ in SINK_FAULTS):
        return line + ": every fault put into the sink, and nothing else"
    put = ", ".join(f"{_n(injected.get(cls, 0))} {word}" for cls, word, _ in SINK_FAULTS)
    return f"{line}; the sink was built with {put}"


def reconcile_step(reconcile: Document, injected: Mapping[str, int]) -> Step:
    """The reconcile step: the faults put into the sink, and the ones found."""
    counts = reconcile["counts"]
    shown = all(counts.get(cls, 0) == injected.get(cls, 0) for cls, _, _ in SINK_FAULTS)
    rows = [(word, meaning, _n(injected.get(cls, 0)), _n(counts.get(cls, 0)),
             _keys(reconcile, cls, int(counts.get(cls, 0))))
            for cls, word, meaning in SINK_FAULTS]
    faults = table(["orders", "meaning", "put into the sink", "found", "keys found"], rows)
    others = [f"{_n(v)} {k}" for k, v in counts.items()
              if k not in {c for c, _, _ in SINK_FAULTS} | {"topic_records", "sink_rows"} and v]
    html = "".join([
        _p("What it shows:", f"the demo wrote {_n(counts['topic_records'])} orders to "
           f"{reconcile['source']['topic']} and a Parquet sink from them, built wrong on "
           "purpose, as a faulty consumer would have written it. reconcile compares the two "
           "record by record, by key, and names every order that differs."),
        _p("Why its result is the point:", "the sink's faults were put there, so reconcile's "
           f"verdict is {reconcile['verdict']}: a sink that matched its topic would pass. "
           "What matters is that it found each fault put in, and nothing else."),
        _result(shown, _found_line(reconcile, injected)),
        faults,
        _p("Also found:", ", ".join(others)) if others else "",
        f'<p>Verdict: <span class="{verdict_class(reconcile["verdict"])}">'
        f"{escape(reconcile['verdict'])}</span>; {_n(counts['sink_rows'])} rows in "
        f"{escape(reconcile['sink']['uri'])}.</p>",
    ])
    return Step("reconcile: did every order reach the sink, once and unchanged?", shown,
                f"reconcile: {_found_line(reconcile, injected)}", html)


# --- the page -------------------------------------------------------------------------------

INTRO = ("kaudit demo started (or reused) a local three-broker Kafka cluster, created topics "
         "with sound and unsound durability settings, then ran check, probe matrix and "
         "reconcile on them. Each step is built to make something fail: the failures below "
         "are what the demo is there to show, and it exits 0 when every step ran.")


def demo_page(check: Document, matrix: Document, reconcile: Document,
              injected: Mapping[str, int], files: Sequence[tuple[str, str]] = ()) -> str:
    """The demo's page from its three documents; ``injected``: how many orders of each
    :data:`SINK_FAULTS` class the sink was built with; ``files``: the reports beside the
    page (name, what it holds)."""
    steps = [check_step(check), matrix_step(matrix), reconcile_step(reconcile, injected)]
    missed = [s.heading.split(":", 1)[0] for s in steps if not s.shown]
    verdict = "fail" if missed else "pass"
    reason = ("every step showed what it was built to show; the failures it reports are the "
              "point." if not missed else
              f"{', '.join(missed)} did not show what it was built to show this time.")
    # Each step's outcome in a line under the sentence (a <pre> ran off the page's side).
    shown = "".join(f"<li>{escape(s.summary)}</li>" for s in steps)
    sections = [("What the demo did", f"<p>{escape(INTRO)}</p>")]
    sections += [(f"{n}. {s.heading}", s.html) for n, s in enumerate(steps, 1)]
    if files:
        items = "".join(f"<li><code>{escape(name)}</code>: {escape(what)}</li>"
                        for name, what in files)
        sections.append(("The reports beside this page", f"<ul>{items}</ul>"))
    return page("kaudit demo: what each step showed", verdict, "", sections, reason=reason,
                head=f"<ul>{shown}</ul>")
