"""The record form of a check result: the one dict shape every machine format starts from.

``check_document`` is the ``kaudit.check/v1`` JSON document (ARCHITECTURE.md,
"Contracts"); SARIF, JUnit and GitHub annotations read the same :class:`FindingRecord`
dicts, so a field renamed or added here reaches every format at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TypedDict

from kaudit.check.findings import (
    CheckResult,
    Finding,
    Guarantee,
    RuleInfo,
    Subject,
)
from kaudit.connection.redact import redact
from kaudit.report.base import RenderOptions
from kaudit.report.check.words import producer_gives, survives

SCHEMA = "kaudit.check/v1"

PROJECT_URL = "https://github.com/kaudit/kaudit"
"""Where kaudit lives; SARIF ``informationUri``."""

RULES_DOC_URL = f"{PROJECT_URL}/blob/main/docs/rules.md"
"""The generated rule reference. Every rule gets an anchor named after its lowercased id
(``#ka101``), so the reference generator must emit ``<a id="ka101"></a>`` per rule."""


def rule_help_uri(rule_id: str) -> str:
    """The documentation link of one rule (the only place help links are built)."""
    return f"{RULES_DOC_URL}#{rule_id.lower()}"


class SubjectRecord(TypedDict):
    """``findings[].subject`` of the JSON contract."""

    kind: str
    name: str


class FindingRecord(TypedDict):
    """``findings[]`` of the JSON contract."""

    rule: str
    name: str
    severity: str
    subject: SubjectRecord
    message: str
    expected: str | None
    actual: str | None
    source: str | None
    waived_by: str | None


class ReaderRecord(TypedDict):
    """``guarantees[].readers[]``: a consumer group reading the topic."""

    group: str
    kind: str
    lag: int
    oldest_unread_age_ms: int | None


class GuaranteeRecord(TypedDict):
    """``guarantees[]`` of the JSON contract."""

    topic: str
    producer: str | None
    semantics: str
    loss_tolerance: int
    write_tolerance: int
    producer_gives: str
    survives: str
    reasons: list[str]
    readers: list[ReaderRecord]


class SummaryRecord(TypedDict):
    """``summary`` of the JSON contract: unwaived findings per severity."""

    errors: int
    warnings: int
    infos: int


class CheckDocument(TypedDict):
    """The whole ``kaudit.check/v1`` document."""

    schema: str
    summary: SummaryRecord
    findings: list[FindingRecord]
    guarantees: list[GuaranteeRecord]
    policies: list[str]
    origin: str
    cluster_id: str | None
    features: dict[str, str] | None
    features_unread: str | None
    elr_unread: str | None
    quorum_unread: str | None
    acls_unread: str | None


def finding_record(finding: Finding) -> FindingRecord:
    """One finding as a JSON-ready dict."""
    return {
        "rule": finding.rule,
        "name": finding.name,
        "severity": finding.severity.value,
        "subject": {"kind": finding.subject.kind.value, "name": finding.subject.name},
        "message": finding.message,
        "expected": finding.expected,
        "actual": finding.actual,
        "source": finding.source,
        "waived_by": finding.waived_by,
    }


def guarantee_record(guarantee: Guarantee) -> GuaranteeRecord:
    """One topic's (or producer -> topic pair's) guarantee as a JSON-ready dict."""
    return {
        "topic": guarantee.topic,
        "producer": guarantee.producer,
        "semantics": guarantee.semantics.value,
        "loss_tolerance": guarantee.loss_tolerance,
        "write_tolerance": guarantee.write_tolerance,
        # The same in words, said apart: what the producer side can get, what survives.
        "producer_gives": producer_gives(guarantee),
        "survives": survives(guarantee),
        "reasons": list(guarantee.reasons),
        "readers": [{"group": r.group, "kind": r.kind, "lag": r.lag,
                     "oldest_unread_age_ms": r.oldest_unread_age_ms} for r in guarantee.readers],
    }


def check_document(result: CheckResult) -> CheckDocument:
    """The ``kaudit.check/v1`` document: the record form all machine formats share."""
    counts = result.counts()
    return {
        "schema": SCHEMA,
        "summary": {
            "errors": counts["errors"],
            "warnings": counts["warnings"],
            "infos": counts["infos"],
        },
        "findings": [finding_record(f) for f in result.findings],
        "guarantees": [guarantee_record(g) for g in result.guarantees],
        "policies": list(result.policies),
        "origin": result.origin,
        "cluster_id": result.cluster_id,
        "features": None if result.features is None else dict(sorted(result.features.items())),
        "features_unread": result.features_unread,
        "elr_unread": result.elr_unread,
        "quorum_unread": result.quorum_unread,
        "acls_unread": result.acls_unread,
    }


def finding_text(f: FindingRecord) -> str:
    """One line for annotations: subject, message, then expected/actual/source if known."""
    subject = f["subject"]
    text = f"{subject['kind']} {subject['name']}: {f['message']}"
    details = [
        f"{label} {value}"
        for label, value in (
            ("expected", f["expected"]),
            ("actual", f["actual"]),
            ("source", f["source"]),
        )
        if value is not None
    ]
    return f"{text} ({', '.join(details)})" if details else text


def waived_count(result: CheckResult) -> int:
    """Findings a waiver covers (not in ``summary``, shown beside it)."""
    return sum(1 for f in result.findings if f.waived_by is not None)


def summary_line(result: CheckResult) -> str:
    """``3 errors, 1 warning, 0 infos (2 waived)``: the closing line of human formats."""
    counts = result.counts()
    parts = [
        _plural(counts["errors"], "error"),
        _plural(counts["warnings"], "warning"),
        _plural(counts["infos"], "info"),
    ]
    line = ", ".join(parts)
    waived = waived_count(result)
    return f"{line} ({waived} waived)" if waived else line


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def rules_in_order(result: CheckResult) -> list[RuleInfo]:
    """The evaluated rules, plus a stand-in for any rule a finding names but ``rules`` lacks.

    Findings can come from rules the policy did not list (an expired waiver is reported by a
    rule of its own); SARIF ``ruleIndex`` and JUnit suites must still cover them.
    """
    rules = list(result.rules)
    known = {r.id for r in rules}
    for f in result.findings:
        if f.rule not in known:
            known.add(f.rule)
            rules.append(RuleInfo(f.rule, f.name, f.severity, f.name, ""))
    return rules


@dataclass(frozen=True)
class SourceLocation:
    """A finding's source when it is a place in a file (``policies/durable.yaml:12``)."""

    path: str
    line: int
    column: int | None = None


# path:line or path:line:col, where path looks like a file (has a dot or a slash), so that
# ConfigSource names such as DYNAMIC_TOPIC_CONFIG never count as files.
_PATH_LINE = re.compile(r"^(?P<path>[^:\n]*[./][^:\n]*):(?P<line>[1-9]\d*)(?::(?P<col>[1-9]\d*))?$")
_WINDOWS_DRIVE = re.compile(r"^(?P<drive>[A-Za-z]:)(?P<rest>[\\/].*)$")


def source_location(source: str | None) -> SourceLocation | None:
    """Parse ``path:line[:col]``; None for config-source names and anything else."""
    if not source:
        return None
    drive = ""
    text = source.strip()
    windows = _WINDOWS_DRIVE.match(text)
    if windows:  # C:\x\client.properties:4 - the drive colon is not a line separator
        drive, text = windows["drive"], windows["rest"]
    m = _PATH_LINE.match(text)
    if not m:
        return None
    col = int(m["col"]) if m["col"] else None
    return SourceLocation(drive + m["path"], int(m["line"]), col)


def redacted_result(result: CheckResult) -> CheckResult:
    """A copy of ``result`` with every free-text field passed through :func:`redact`.

    Formatters escape (GitHub ``%25``, XML ``&amp;``, JSON ``\\"``) and wrap (table columns),
    which would hide a secret from a redaction pass over the finished text; masking the
    inputs first means no format can leak one, whatever it does to the text afterwards.
    """

    def text(value: str) -> str:
        out: str = redact(value)
        return out

    def maybe(value: str | None) -> str | None:
        return None if value is None else text(value)

    findings = tuple(
        replace(
            f,
            subject=Subject(f.subject.kind, text(f.subject.name)),
            message=text(f.message),
            expected=maybe(f.expected),
            actual=maybe(f.actual),
            source=maybe(f.source),
            waived_by=maybe(f.waived_by),
        )
        for f in result.findings
    )
    guarantees = tuple(
        replace(
            g,
            topic=text(g.topic),
            producer=maybe(g.producer),
            reasons=tuple(text(r) for r in g.reasons),
            readers=tuple(replace(r, group=text(r.group)) for r in g.readers),
        )
        for g in result.guarantees
    )
    rules = tuple(
        replace(r, summary=text(r.summary), help_markdown=text(r.help_markdown))
        for r in result.rules
    )
    return replace(
        result,
        findings=findings,
        guarantees=guarantees,
        rules=rules,
        policies=tuple(text(p) for p in result.policies),
        origin=text(result.origin),
        cluster_id=maybe(result.cluster_id),
        features=None if result.features is None else {
            text(k): text(v) for k, v in result.features.items()},
        features_unread=maybe(result.features_unread),
        elr_unread=maybe(result.elr_unread),
        quorum_unread=maybe(result.quorum_unread),
        acls_unread=maybe(result.acls_unread),
    )


__all__ = [
    "PROJECT_URL",
    "RULES_DOC_URL",
    "SCHEMA",
    "CheckDocument",
    "FindingRecord",
    "GuaranteeRecord",
    "RenderOptions",
    "SourceLocation",
    "SubjectRecord",
    "SummaryRecord",
    "check_document",
    "finding_record",
    "finding_text",
    "guarantee_record",
    "redacted_result",
    "rule_help_uri",
    "rules_in_order",
    "source_location",
    "summary_line",
    "waived_count",
]
