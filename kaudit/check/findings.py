"""What check produces: findings and guarantees, as frozen records.

One record form feeds every output format (table, json, junit, sarif, github).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    """How bad a finding is; ``--fail-on`` compares against this order."""

    info = "info"
    warning = "warning"
    error = "error"

    @property
    def rank(self) -> int:
        """0 for info, 1 for warning, 2 for error."""
        return ("info", "warning", "error").index(self.value)


class SubjectKind(StrEnum):
    """What a finding is about."""

    cluster = "cluster"
    broker = "broker"
    topic = "topic"
    partition = "partition"  # type: ignore[assignment]  # shadows str.partition
    client = "client"
    group = "group"
    """A consumer group on one partition: ``billing@orders-3``."""


@dataclass(frozen=True)
class Subject:
    """The thing a finding is about, e.g. topic ``orders`` or partition ``orders-3``."""

    kind: SubjectKind
    name: str


@dataclass(frozen=True)
class Finding:
    """One rule violation (or note) about one subject."""

    rule: str
    """Stable rule id, e.g. ``KA101``."""
    name: str
    """Stable dotted rule name, e.g. ``topic.min-isr-floor``."""
    severity: Severity
    subject: Subject
    message: str
    """One sentence an operator can act on."""
    expected: str | None = None
    actual: str | None = None
    source: str | None = None
    """Where the actual value came from (a ConfigSource name, a file:line)."""
    waived_by: str | None = None
    """Set when a waiver covers this finding; waived findings never fail a run."""


class Semantics(StrEnum):
    """Delivery semantics, weakest first."""

    at_most_once = "at-most-once"
    at_least_once = "at-least-once"
    exactly_once = "exactly-once"


@dataclass(frozen=True)
class Reader:
    """A consumer group or share group that reads a topic, and whether it keeps up."""

    group: str
    lag: int
    """Records between its committed offsets (a share group: its start offsets) and the high
    watermarks (all partitions)."""
    oldest_unread_age_ms: int | None = None
    """Age of its oldest unread record when the cluster was read (None: none, or unknown)."""
    kind: str = "consumer"
    """``consumer`` (a consumer group) or ``share`` (a share group, KIP-932)."""


@dataclass(frozen=True)
class Guarantee:
    """The delivery guarantee a topic (or producer -> topic pair) really has."""

    topic: str
    semantics: Semantics
    loss_tolerance: int
    """Broker failures survived without losing an acknowledged write."""
    write_tolerance: int
    """Broker failures survived while acks=all writes stay possible (negative: never)."""
    producer: str | None = None
    """The producer config this pair is about; None for the topic alone (acks=all assumed)."""
    reasons: tuple[str, ...] = ()
    """Short clauses explaining the numbers, e.g. 'min.insync.replicas=1'."""
    readers: tuple[Reader, ...] = ()
    """The consumer groups that read the topic (topic guarantees, when groups were read)."""
    within_session: bool = False
    """Exactly-once holds within one producer session only (idempotent, not transactional):
    a restarted producer can duplicate."""


@dataclass(frozen=True)
class RuleInfo:
    """What output formats need to know about a rule (SARIF rule descriptors, docs)."""

    id: str
    name: str
    severity: Severity
    """Default severity (a policy may override it)."""
    summary: str
    """One line: what the rule checks."""
    help_markdown: str
    """The full rule documentation (what, why, example, fix) as Markdown."""


@dataclass(frozen=True)
class CheckResult:
    """Everything one `kaudit check` run found, ready for any output format."""

    findings: tuple[Finding, ...]
    guarantees: tuple[Guarantee, ...]
    rules: tuple[RuleInfo, ...]
    """The rules that were evaluated."""
    policies: tuple[str, ...]
    """Names or paths of the policies applied."""
    origin: str
    """``live``, ``snapshot:FILE`` or ``manifests``."""
    cluster_id: str | None = None
    features: Mapping[str, str] | None = None
    """The cluster's finalized features, when they were read."""
    features_unread: str | None = None
    """Why they were not read, when a live cluster's were not."""
    elr_unread: str | None = None
    """Why the partitions' eligible leader replicas were not read, when they were not."""
    quorum_unread: str | None = None
    """Why the controller quorum was not read, when a live cluster's (or a snapshot's) was
    not: the quorum rules (KA312-KA315) then said nothing."""
    acls_unread: str | None = None
    """Why the ACL bindings were not read, when they were not (the ACL rules then skip)."""

    def counts(self) -> dict[str, int]:
        """Unwaived findings per severity, as the JSON ``summary`` has them."""
        out = {"errors": 0, "warnings": 0, "infos": 0}
        for f in self.findings:
            if f.waived_by is None:
                out[{"error": "errors", "warning": "warnings", "info": "infos"}[f.severity]] += 1
        return out
