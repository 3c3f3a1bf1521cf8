"""The one registry of check rules, and the decorators rules register with.

A rule is a pure function over the models. What it looks at decides its
*scope*, and so its signature:

- ``topic``: ``(topic, TopicContext) -> violations``, once per audited topic;
- ``cluster``: ``(ClusterContext) -> violations``, once per run;
- ``client``: ``(ClientConfig, ClientContext) -> violations``, once per client file;
- ``pair``: ``(ClientConfig, Topic, TopicContext) -> violations``, per producer x topic;
- ``policy``: ``(PolicyContext) -> violations``, about the policies themselves.

Rules return :class:`Violation` records; the engine turns them into
:class:`~kaudit.check.findings.Finding` with the rule's id, name and
(possibly overridden) severity, and applies waivers.

Rule ids are stable: KA0xx policy and access, KA1xx topic durability,
KA2xx live partition state, KA3xx brokers, cluster and internal topics,
KA4xx clients and producer x topic pairs, KA5xx security, KA6xx consumer groups and
open transactions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from types import MappingProxyType
from typing import Literal, TypeVar

from kaudit.check.clients import ClientConfig
from kaudit.check.findings import RuleInfo, Severity, Subject
from kaudit.check.policy.model import AclAllowList, PolicySet, Profile, Thresholds
from kaudit.cluster.model import ClusterSnapshot, Topic

Scope = Literal["topic", "cluster", "client", "pair", "policy"]

_ID = re.compile(r"^KA\d{3}$")
_NAME = re.compile(r"^[a-z]+(\.[a-z0-9]+(-[a-z0-9]+)*)+$")


@dataclass(frozen=True)
class Violation:
    """What a rule found about one subject, before severity and waivers are applied."""

    subject: Subject
    message: str
    """One sentence in an operator's words."""
    expected: str | None = None
    actual: str | None = None
    source: str | None = None
    """A ConfigSource name or ``file:line``."""
    topic: str | None = None
    """The topic this is about, so topic waivers cover partition and producer findings."""
    declared_at: str | None = None
    """``file:line`` where the topic's manifest sets the value at fault, or names the topic
    when it leaves the value out (:meth:`Topic.setting_at`); None for topics not read from
    a manifest. CI annotations belong on that line, not on the document's first."""


@dataclass(frozen=True)
class TopicContext:
    """What a topic rule may look at besides the topic."""

    snapshot: ClusterSnapshot
    profile: Profile

    @property
    def thresholds(self) -> Thresholds:
        """The thresholds of the topic's profile."""
        return self.profile.thresholds


@dataclass(frozen=True)
class ClusterContext:
    """What a cluster rule may look at."""

    snapshot: ClusterSnapshot
    profile: Profile
    """The default profile (thresholds for broker defaults and internal topics)."""
    transactional_topics: tuple[str, ...] = ()
    """Audited topics whose profile demands transactional producers."""
    acl_allow: AclAllowList = field(default_factory=AclAllowList)
    """Who the policies let hold durability-weakening ACLs (``acls:``)."""

    @property
    def thresholds(self) -> Thresholds:
        """The default profile's thresholds."""
        return self.profile.thresholds


@dataclass(frozen=True)
class ClientContext:
    """What a client rule may look at: the demands of the profiles of its topics."""

    thresholds: Thresholds
    """The strictest client demands across the client's topics' profiles."""
    profiles: tuple[str, ...]
    """Names of those profiles, for messages."""
    topics: tuple[str, ...]
    """The topics the client writes or reads (may be empty without a snapshot match)."""

    @property
    def profile_label(self) -> str:
        """'durable' or 'durable, exactly-once'."""
        return ", ".join(self.profiles) or "default"


@dataclass(frozen=True)
class PolicyContext:
    """What a policy rule may look at."""

    policies: PolicySet
    today: date


@dataclass(frozen=True)
class RuleDoc:
    """A rule's documentation in the fixed template."""

    what: str
    """What the rule checks."""
    why: str
    """Why it matters: what goes wrong otherwise."""
    example: str
    """A configuration that triggers it."""
    fix: str
    """What to do instead."""

    def markdown(self, rule_id: str, name: str, summary: str, severity: Severity) -> str:
        """The rule reference page in Markdown."""
        return (f"## {rule_id} `{name}`\n\n{summary}\n\nDefault severity: **{severity}**\n\n"
                f"### What it does\n\n{self.what}\n\n### Why it matters\n\n{self.why}\n\n"
                f"### Example\n\n{self.example}\n\n### Fix\n\n{self.fix}\n")


TopicCheck = Callable[[Topic, TopicContext], Iterable[Violation]]
ClusterCheck = Callable[[ClusterContext], Iterable[Violation]]
ClientCheck = Callable[[ClientConfig, ClientContext], Iterable[Violation]]
PairCheck = Callable[[ClientConfig, Topic, TopicContext], Iterable[Violation]]
PolicyCheck = Callable[[PolicyContext], Iterable[Violation]]
AnyCheck = TopicCheck | ClusterCheck | ClientCheck | PairCheck | PolicyCheck


@dataclass(frozen=True)
class Rule:
    """A registered rule: identity, documentation, and the check function."""

    id: str
    name: str
    severity: Severity
    summary: str
    doc: RuleDoc
    scope: Scope
    check: AnyCheck
    role: Literal["producer", "consumer", "any"] = "any"
    """For client and pair rules: which client files the rule reads."""
    internal_topics: bool = False
    """For topic rules: also run on Kafka's internal topics, under the default profile.
    Their durability is the brokers' business (KA3xx), so only rules about their live
    state say anything useful about them."""

    def info(self) -> RuleInfo:
        """The record output formats need (SARIF descriptors, rule reference)."""
        return RuleInfo(id=self.id, name=self.name, severity=self.severity, summary=self.summary,
                        help_markdown=self.doc.markdown(self.id, self.name, self.summary,
                                                        self.severity))


_RULES: dict[str, Rule] = {}
_BY_NAME: dict[str, str] = {}

F = TypeVar("F", bound=Callable[..., Iterable[Violation]])


def rule(rule_id: str, name: str, severity: Severity, summary: str, *, scope: Scope,
         what: str, why: str, example: str, fix: str,
         role: Literal["producer", "consumer", "any"] = "any",
         internal_topics: bool = False) -> Callable[[F], F]:
    """Register the decorated function as a rule. Ids and names must be unique.

    ``internal_topics=True`` (topic rules only) runs the rule on Kafka's internal
    topics too; other rules never see them.
    """
    if not _ID.match(rule_id):
        raise ValueError(f"rule id {rule_id!r} is not KAnnn")
    if not _NAME.match(name):
        raise ValueError(f"rule name {name!r} is not dotted lower-case words")
    if internal_topics and scope != "topic":
        raise ValueError(f"rule {rule_id}: only topic rules can run on internal topics")

    def register(func: F) -> F:
        if rule_id in _RULES or name in _BY_NAME:
            raise ValueError(f"rule {rule_id} / {name} registered twice")
        _RULES[rule_id] = Rule(id=rule_id, name=name, severity=severity, summary=summary,
                               doc=RuleDoc(what=what, why=why, example=example, fix=fix),
                               scope=scope, check=func, role=role,
                               internal_topics=internal_topics)
        _BY_NAME[name] = rule_id
        return func

    return register


def registered() -> Mapping[str, Rule]:
    """The rules registered so far, by id. ``kaudit.check.rules`` imports every rule module
    first: reach the rules through it."""
    return MappingProxyType(_RULES)


def registered_names() -> Mapping[str, str]:
    """The registered rules' names, mapped to their ids."""
    return MappingProxyType(_BY_NAME)
