"""Evaluate a cluster snapshot and client configs against a policy set. Pure: no I/O.

Steps: resolve each topic's profile from the selectors (Kafka's internal
topics are judged by the KA3xx rules, and as topics only by the rules
registered with ``internal_topics=True``: the live-state ones), run the
enabled rules, apply severity overrides and waivers, report expired waivers,
compute the guarantees, and sort everything deterministically.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import cast

from kaudit.check.clients import ClientConfig
from kaudit.check.findings import CheckResult, Finding, Guarantee, Severity, SubjectKind
from kaudit.check.guarantees import pair_guarantee, topic_guarantee
from kaudit.check.policy.model import ClientBinding, PolicySet, Profile, strictest
from kaudit.check.rules import all_rules
from kaudit.check.rules.common import is_internal
from kaudit.check.rules.registry import (
    ClientCheck,
    ClientContext,
    ClusterCheck,
    ClusterContext,
    PairCheck,
    PolicyCheck,
    PolicyContext,
    Rule,
    TopicCheck,
    TopicContext,
    Violation,
)
from kaudit.cluster.model import ClusterSnapshot, Topic


@dataclass(frozen=True)
class AuditedTopic:
    """A topic and the profile it is audited under."""

    topic: Topic
    profile: Profile


def audited_topics(snapshot: ClusterSnapshot, policies: PolicySet) -> list[AuditedTopic]:
    """Non-internal topics with their profiles; topics a selector skips are left out."""
    out: list[AuditedTopic] = []
    for topic in snapshot.topics:
        if is_internal(topic):
            continue
        profile, _ = policies.profile_for(topic.name)
        if profile is not None:
            out.append(AuditedTopic(topic, profile))
    return out


def evaluate(snapshot: ClusterSnapshot, policies: PolicySet,
             producer_configs: Sequence[ClientConfig] = (),
             consumer_configs: Sequence[ClientConfig] = (),
             today: date | None = None) -> CheckResult:
    """Audit ``snapshot`` and client configs against ``policies``.

    ``producer_configs`` and ``consumer_configs`` (from the command line) apply
    to every audited topic; the policies' ``clients:`` entries apply to the
    topics they match. ``today`` decides which waivers have expired.
    """
    today = today or date.today()
    rules = all_rules()
    audited = audited_topics(snapshot, policies)
    internal = [t for t in snapshot.topics if is_internal(t)]
    default = policies.default_profile
    transactional = tuple(item.topic.name for item in audited
                          if item.profile.thresholds.producer_transactions)
    raw: list[tuple[Rule, Violation]] = []

    def run(rule: Rule, violations: Iterable[Violation]) -> None:
        raw.extend((rule, v) for v in violations)

    for rule in rules:
        if rule.scope == "topic":
            check = cast(TopicCheck, rule.check)
            for item in audited:
                if policies.rule_enabled(rule.id, item.profile):
                    run(rule, check(item.topic, TopicContext(snapshot, item.profile)))
            if rule.internal_topics and policies.rule_enabled(rule.id, default):
                for topic in internal:
                    run(rule, check(topic, TopicContext(snapshot, default)))
        elif rule.scope == "cluster" and policies.rule_enabled(rule.id, default):
            run(rule, cast(ClusterCheck, rule.check)(ClusterContext(
                snapshot, default, transactional, policies.acls)))
        elif rule.scope == "policy" and policies.rule_enabled(rule.id):
            run(rule, cast(PolicyCheck, rule.check)(PolicyContext(policies, today)))

    bindings = _bindings(policies, producer_configs, consumer_configs)
    by_name = {item.topic.name: item for item in audited}
    for binding in bindings:
        topics = [item for item in audited if binding.matches(item.topic.name)]
        profiles = [item.profile for item in topics] or [default]
        names = tuple(dict.fromkeys(p.name for p in profiles))
        ctx = ClientContext(thresholds=strictest([p.thresholds for p in profiles]),
                            profiles=names, topics=tuple(i.topic.name for i in topics))
        for rule in rules:
            if rule.role not in ("any", binding.client.role) or not policies.rule_enabled(rule.id):
                continue
            if rule.scope == "client":
                run(rule, cast(ClientCheck, rule.check)(binding.client, ctx))
            elif rule.scope == "pair":
                for item in topics:
                    if policies.rule_enabled(rule.id, item.profile):
                        run(rule, cast(PairCheck, rule.check)(
                            binding.client, item.topic, TopicContext(snapshot, item.profile)))

    findings = _finish(raw, policies, today, snapshot)
    guarantees = _guarantees(snapshot, audited, bindings, by_name)
    evaluated = tuple(r.info() for r in rules if policies.rule_enabled(r.id))
    return CheckResult(findings=findings, guarantees=guarantees, rules=evaluated,
                       policies=policies.names, origin=snapshot.origin,
                       cluster_id=snapshot.cluster_id, features=snapshot.features,
                       features_unread=snapshot.features_unread,
                       elr_unread=snapshot.elr_unread,
                       quorum_unread=snapshot.quorum_unread,
                       acls_unread=snapshot.acls_unread)


def _bindings(policies: PolicySet, producers: Sequence[ClientConfig],
              consumers: Sequence[ClientConfig]) -> list[ClientBinding]:
    # Command-line clients apply to every audited topic (no globs).
    cli = [ClientBinding(client=c, topics=(), origin="command line")
           for c in (*producers, *consumers)]
    out: list[ClientBinding] = []
    seen: set[tuple[str, str, tuple[str, ...]]] = set()
    for binding in (*cli, *policies.clients):
        key = (binding.client.path, binding.client.role, binding.topics)
        if key not in seen:
            seen.add(key)
            out.append(binding)
    return out


def _finish(raw: list[tuple[Rule, Violation]], policies: PolicySet,
            today: date, snapshot: ClusterSnapshot) -> tuple[Finding, ...]:
    findings: dict[tuple[str, str, str, str], Finding] = {}
    # A topic declared in a manifest is reported at the line of the setting at fault
    # (else at its file:line), so CI annotations (SARIF, GitHub) land on the line to change.
    declared = {t.name: t.declared_at for t in snapshot.topics if t.declared_at}
    for rule, v in raw:
        severity = policies.severities.get(rule.id, rule.severity)
        waiver = next((w for w in policies.waivers
                       if w.active(today) and w.covers(rule.id, v.subject.name, v.topic)), None)
        finding = Finding(rule=rule.id, name=rule.name, severity=severity, subject=v.subject,
                          message=v.message, expected=v.expected, actual=v.actual,
                          source=v.declared_at or declared.get(v.topic or "", v.source)
                          if v.subject.kind in (SubjectKind.topic, SubjectKind.partition)
                          else v.source,
                          waived_by=waiver.label() if waiver else None)
        # The same client file can be bound twice (command line and policy): report once.
        key = (rule.id, v.subject.kind.value, v.subject.name, v.message)
        findings.setdefault(key, finding)
    return tuple(sorted(findings.values(), key=finding_order))


def finding_order(f: Finding) -> tuple[int, str, str, str, str]:
    """Severity (worst first), then rule id, subject and message."""
    return (-Severity(f.severity).rank, f.rule, f.subject.kind.value, f.subject.name, f.message)


def _guarantees(snapshot: ClusterSnapshot, audited: list[AuditedTopic],
                bindings: list[ClientBinding],
                by_name: dict[str, AuditedTopic]) -> tuple[Guarantee, ...]:
    out = [topic_guarantee(item.topic, snapshot) for item in audited]
    producers = [b for b in bindings if b.client.role == "producer"]
    consumers = [b for b in bindings if b.client.role == "consumer"]
    seen: set[tuple[str, str]] = set()
    for binding in producers:
        for name, item in by_name.items():
            if not binding.matches(name) or (binding.client.path, name) in seen:
                continue
            seen.add((binding.client.path, name))
            readers = [c.client for c in consumers if c.matches(name)]
            out.append(pair_guarantee(binding.client, item.topic, snapshot, readers))
    return tuple(sorted(out, key=lambda g: (g.topic, g.producer or "")))
