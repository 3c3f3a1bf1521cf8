"""``--format html``: the check report as one self-contained page (no script, nothing fetched).

The page says first, in a sentence, what the findings mean for the topics, then shows the
findings and the guarantees as tables. Its parts read the ``kaudit.check/v1`` document, not
the result, so that a page can also be made from a stored ``check.json`` (the demo's page
does: :mod:`kaudit.report.demo_page`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kaudit.check.findings import CheckResult
from kaudit.check.rules.groups import duration
from kaudit.report.check.record import RenderOptions, check_document
from kaudit.report.html import escape, page

# Inline, not in a stylesheet: the shared page's style (kaudit.report.html) knows verdicts
# (pass, fail), not severities.
SEVERITY_STYLES = {
    "error": "color: #c62828; font-weight: bold",
    "warning": "color: #e65100; font-weight: bold",
    "info": "color: #00838f",
}
WAIVED_STYLE = "color: #757575"
AT_RISK_STYLE = "color: #c62828"
"""A guarantee's ``survives`` when one broker failure loses acknowledged writes or stops
acks=all writes."""

_RANK = {"error": 2, "warning": 1, "info": 0}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def at_risk(guarantee: Mapping[str, Any]) -> bool:
    """Whether one broker failure loses acknowledged writes, or stops (or already stopped)
    acks=all writes, under this guarantee."""
    return int(guarantee["loss_tolerance"]) <= 0 or int(guarantee["write_tolerance"]) <= 0


def counts_line(document: Mapping[str, Any]) -> str:
    """``8 errors, 4 warnings`` (infos and waived findings only when there are some)."""
    summary = document["summary"]
    parts = [_plural(summary["errors"], "error"), _plural(summary["warnings"], "warning")]
    if summary["infos"]:
        parts.append(_plural(summary["infos"], "info"))
    waived = sum(1 for f in document["findings"] if f["waived_by"] is not None)
    return ", ".join(parts) + (f" ({waived} waived)" if waived else "")


def summary_sentence(document: Mapping[str, Any]) -> str:
    """What the findings mean, in one sentence: ``8 errors, 4 warnings: 4 topics can lose
    acknowledged writes or stop taking them when one broker fails``."""
    guarantees = document["guarantees"]
    counts = counts_line(document)
    if not guarantees:
        return f"{counts}; no topic's guarantee was worked out"
    topics = {g["topic"] for g in guarantees if g["producer"] is None and at_risk(g)}
    # A sound topic can still lose what a producer writes to it (acks=1): counted apart, as
    # the producer's doing, not the topic's.
    through_producer = {g["topic"] for g in guarantees if g["producer"] is not None
                        and int(g["loss_tolerance"]) <= 0} - topics
    if topics:
        sentence = (f"{counts}: {_plural(len(topics), 'topic')} can lose acknowledged writes "
                    "or stop taking them when one broker fails")
    else:
        sentence = (f"{counts}: no topic can lose an acknowledged write or stop taking them "
                    "when one broker fails")
    if through_producer:
        n = len(through_producer)
        who = "more" if topics else ("topic" if n == 1 else "topics")
        whose = "its producer's" if n == 1 else "their producers'"
        sentence += f", and {n} {who} can lose acknowledged writes through {whose} settings"
    return sentence


def why(guarantee: Mapping[str, Any]) -> str:
    """The guarantee's reasons and its readers, as the text table says them."""
    reasons = list(guarantee["reasons"])
    if guarantee["readers"]:
        reasons.append("read by " + ", ".join(_reader(r) for r in guarantee["readers"]))
    return "; ".join(reasons) or "-"


def _reader(reader: Mapping[str, Any]) -> str:
    name = f"share group {reader['group']}" if reader.get("kind") == "share" \
        else reader["group"]
    if not reader["lag"]:
        return f"{name} (caught up)"
    age = reader["oldest_unread_age_ms"]
    oldest = f", oldest unread {duration(age)}" if age is not None else ""
    return f"{name} (lag {reader['lag']}{oldest})"


def _lines(*parts: str | None) -> str:
    """Escaped text, one part a line; a missing part is a dash."""
    return "<br>".join(escape("-" if p is None or p == "" else p) for p in parts)


def _cell(content: str, style: str = "", css: str = "") -> str:
    klass = f' class="{css}"' if css else ""
    styled = f' style="{style}"' if style else ""
    return f"<td{klass}{styled}>{content}</td>"


def _html_table(headers: Sequence[str], rows: Sequence[str]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    # A row a line: the page's source (and its golden file's diff) reads row by row.
    return "\n".join([f"<table><tr>{head}</tr>", *rows, "</table>"])


def _finding_row(f: Mapping[str, Any]) -> str:
    severity = f["severity"]
    if f["waived_by"] is not None:
        first = _cell(_lines(severity, "(waived)"), WAIVED_STYLE, f"severity-{severity} waived")
        message = _lines(f["message"], f"Waived: {f['waived_by']}")
    else:
        first = _cell(_lines(severity), SEVERITY_STYLES.get(severity, ""), f"severity-{severity}")
        message = _lines(f["message"])
    subject = f["subject"]
    return "<tr>" + "".join([
        first, _cell(_lines(f["rule"], f["name"])),
        _cell(_lines(f"{subject['kind']} {subject['name']}")), _cell(message),
        _cell(_lines(f["expected"])), _cell(_lines(f["actual"])), _cell(_lines(f["source"])),
    ]) + "</tr>"


def findings_table(document: Mapping[str, Any]) -> str:
    """The findings, open ones first and worst first (the rules' order kept within a
    severity), each severity in its colour; a paragraph when there are none."""
    findings = sorted(document["findings"],
                      key=lambda f: (f["waived_by"] is not None, -_RANK.get(f["severity"], 0)))
    if not findings:
        return "<p>No findings.</p>"
    return _html_table(["severity", "rule", "subject", "message", "expected", "actual",
                        "source"], [_finding_row(f) for f in findings])


def _guarantee_row(g: Mapping[str, Any]) -> str:
    survives = _cell(_lines(g["survives"]), AT_RISK_STYLE if at_risk(g) else "",
                     "at-risk" if at_risk(g) else "")
    return "<tr>" + "".join([
        _cell(_lines(g["topic"])), _cell(_lines(g["producer"])),
        _cell(_lines(g["producer_gives"])), survives, _cell(_lines(why(g))),
    ]) + "</tr>"


def guarantees_table(document: Mapping[str, Any]) -> str:
    """Each topic's (and producer -> topic pair's) guarantee: what the producer side gets,
    what survives (in red when one broker failure is too many), and why."""
    if not document["guarantees"]:
        return "<p>No guarantees: no topic was audited.</p>"
    return _html_table(["topic", "producer", "producer side", "survives", "why"],
                       [_guarantee_row(g) for g in document["guarantees"]])


def check_verdict(document: Mapping[str, Any]) -> str:
    """``fail`` when an unwaived error was found (what exits 1 by default), else ``pass``."""
    return "fail" if document["summary"]["errors"] else "pass"


def check_page(document: Mapping[str, Any]) -> str:
    """The whole page from a ``kaudit.check/v1`` document."""
    title = f"kaudit check: {document['origin']}"
    if document["cluster_id"]:
        title += f", cluster {document['cluster_id']}"
    lines = [f"policies: {', '.join(document['policies']) or 'none'}"]
    if document.get("features"):
        lines.append("features: " + ", ".join(f"{k}={v}"
                                              for k, v in document["features"].items()))
    elif document.get("features_unread"):
        lines.append(f"features: not read ({document['features_unread']})")
    if document.get("elr_unread"):
        lines.append(f"eligible leader replicas: not read ({document['elr_unread']})")
    if document.get("quorum_unread"):
        lines.append(f"controller quorum: not read ({document['quorum_unread']})")
    if document.get("acls_unread"):
        lines.append(f"ACLs: not read ({document['acls_unread']})")
    # The sentence first; the policies and features on a line under it (a <pre> of them
    # ran off the page's side).
    return page(title, check_verdict(document), "",
                [("Findings", findings_table(document)),
                 ("Guarantees", guarantees_table(document))],
                reason=summary_sentence(document), context="; ".join(lines))


def render_html(result: CheckResult, options: RenderOptions) -> str:
    """The check report's page (``options`` has nothing for it: no colour, no width)."""
    return check_page(dict(check_document(result)))
