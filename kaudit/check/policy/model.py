"""What a policy says, as frozen records: profiles, selectors, waivers, clients.

A *profile* is a named set of thresholds (``durable``, ``exactly-once``...)
plus rules it switches off. A *policy* maps topics to profiles with
selectors, overrides rule severities, switches rules off, waives findings
until a date, and names the client config files that write or read topics.
A :class:`PolicySet` is several policies layered in order (later wins); it is
what the engine evaluates.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import date
from functools import cached_property
from types import MappingProxyType
from typing import Any, Literal

from kaudit.check.clients import ClientConfig
from kaudit.check.findings import Severity

Acks = Literal["0", "1", "all"]
ACKS_ORDER: tuple[Acks, ...] = ("0", "1", "all")


@dataclass(frozen=True)
class Thresholds:
    """The numbers and switches a profile demands. Defaults are the ``durable`` profile's."""

    min_replication_factor: int = 3
    """Replicas every partition of a topic must have."""
    min_insync_replicas: int = 2
    """Lowest min.insync.replicas allowed (acked data survives min.isr - 1 broker losses)."""
    min_write_tolerance: int = 1
    """Broker losses acks=all writes must survive: RF - min.insync.replicas must reach this."""
    allow_unclean_leader_election: bool = False
    """Whether an out-of-sync replica may become leader (and truncate acked data)."""
    allow_auto_create_topics: bool = False
    """Whether brokers may create topics on first use with broker defaults."""
    producer_acks: Acks = "all"
    """The weakest producer acks allowed: 0 < 1 < all."""
    producer_idempotence: bool = True
    """Producers must be idempotent (no duplicates from retries)."""
    producer_transactions: bool = False
    """Producers must set a transactional.id."""
    consumer_read_committed: bool = False
    """Consumers must use isolation.level=read_committed."""
    consumer_manual_commit: bool = False
    """Consumers must set enable.auto.commit=false (commit after processing)."""
    loss_accepted: bool = False
    """The profile accepts losing acknowledged writes (logs, metrics); findings say so."""
    group_loss_horizon_hours: int = 6
    """Warn when retention deletes a consumer group's oldest unread record within this many
    hours, unless the group reads past it (0: never warn)."""
    max_open_transaction_seconds: int = 0
    """A transaction open longer than this holds read_committed readers back: an error
    (0: the brokers' transaction.max.timeout.ms, after which Kafka aborts it itself)."""
    share_min_delivery_attempts: int = 5
    """A share group delivers a record at most share.delivery.count.limit times, then
    archives it unprocessed: the profile demands at least this many attempts (0: any)."""
    share_idle_lag_minutes: int = 60
    """Warn when a share group with no members leaves a record undelivered longer than
    this many minutes (0: never warn)."""
    min_controller_voters: int = 3
    """Voters the KRaft controller quorum must have: N voters survive (N - 1) // 2
    controller failures (3: one, 5: two)."""
    max_controller_lag_records: int = 10000
    """Warn when a voter's metadata log trails the leader's by more than this many records
    (0: never warn)."""
    max_controller_caught_up_seconds: int = 30
    """Warn when a voter last held the leader's whole log more than this many seconds
    before the snapshot was taken (0: never warn)."""

    def with_overrides(self, overrides: Mapping[str, Any]) -> Thresholds:
        """A copy with some fields replaced (keys are field names, values validated)."""
        return replace(self, **dict(overrides))

    def acks_at_least(self, acks: Acks) -> bool:
        """True when ``acks`` is as strong as the profile demands."""
        return ACKS_ORDER.index(acks) >= ACKS_ORDER.index(self.producer_acks)


THRESHOLD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Thresholds))


def strictest(all_thresholds: list[Thresholds]) -> Thresholds:
    """The client-side demands of several profiles at once (a client writing many topics)."""
    if not all_thresholds:
        return Thresholds()
    first = all_thresholds[0]
    return replace(
        first,
        producer_acks=max((t.producer_acks for t in all_thresholds), key=ACKS_ORDER.index),
        producer_idempotence=any(t.producer_idempotence for t in all_thresholds),
        producer_transactions=any(t.producer_transactions for t in all_thresholds),
        consumer_read_committed=any(t.consumer_read_committed for t in all_thresholds),
        consumer_manual_commit=any(t.consumer_manual_commit for t in all_thresholds),
        loss_accepted=all(t.loss_accepted for t in all_thresholds),
    )


@dataclass(frozen=True)
class Profile:
    """A named set of thresholds that topics are audited against."""

    name: str
    settings: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """Thresholds chosen along the profile's ``extends`` chain; the rest keep their defaults."""
    description: str = ""
    disabled_rules: frozenset[str] = frozenset()
    """Rule ids that do not apply to topics under this profile."""

    @cached_property
    def thresholds(self) -> Thresholds:
        """The profile's effective thresholds (made once: every rule asks for them, for
        every topic)."""
        return Thresholds().with_overrides(self.settings)


def merge_profiles(name: str, description: str, parents: tuple[Profile, ...],
                   settings: Mapping[str, Any], disabled: frozenset[str]) -> Profile:
    """A profile built on ``parents`` (in order, later wins key by key), then ``settings``."""
    merged: dict[str, Any] = {}
    off: set[str] = set(disabled)
    for parent in parents:
        merged.update(parent.settings)
        off |= parent.disabled_rules
    merged.update(settings)
    if not description and parents:
        description = parents[-1].description
    return Profile(name=name, settings=MappingProxyType(merged), description=description,
                   disabled_rules=frozenset(off))


def _glob_or_regex(pattern: str, regex: bool) -> re.Pattern[str]:
    return re.compile(pattern if regex else fnmatch.translate(pattern))


@dataclass(frozen=True)
class TopicSelector:
    """Topics matched by name (glob or regex), minus exclusions, mapped to a profile."""

    match: tuple[str, ...]
    regex: bool
    exclude: tuple[str, ...]
    profile: Profile | None
    """None: matched topics are not audited (``skip: true``)."""
    origin: str
    """``file:line`` of the selector, for messages."""

    def matches(self, topic: str) -> bool:
        """True when ``topic`` is selected: a match pattern fits it and no exclusion does."""
        # Regexes must match the whole name, like globs do: "orders" is not "orders-dlq".
        if not any(_glob_or_regex(p, self.regex).fullmatch(topic) for p in self.match):
            return False
        return not any(_glob_or_regex(p, self.regex).fullmatch(topic) for p in self.exclude)


@dataclass(frozen=True)
class Waiver:
    """A finding accepted until a date, with the reason it is accepted."""

    rule: str
    """Rule id (names are resolved at load time)."""
    reason: str
    expires: date
    origin: str
    """``file:line`` of the waiver."""
    topic: str | None = None
    """Glob on the topic the finding is about (partition and producer findings too)."""
    subject: str | None = None
    """Glob on the finding's subject name (brokers, clients, the cluster)."""

    def active(self, today: date) -> bool:
        """True until the end of the expiry day."""
        return today <= self.expires

    def covers(self, rule: str, subject: str, topic: str | None) -> bool:
        """True when this waiver is about that rule and that subject or topic."""
        if rule != self.rule:
            return False
        if self.topic is not None and (topic is None or not fnmatch.fnmatchcase(topic,
                                                                                self.topic)):
            return False
        return self.subject is None or fnmatch.fnmatchcase(subject, self.subject)

    def label(self) -> str:
        """How a waived finding names its waiver."""
        return f"{self.reason} (waiver at {self.origin}, until {self.expires.isoformat()})"


@dataclass(frozen=True)
class ClientBinding:
    """A client config file and the topics it writes (producer) or reads (consumer)."""

    client: ClientConfig
    topics: tuple[str, ...]
    """Globs on topic names; empty means every audited topic."""
    origin: str

    def matches(self, topic: str) -> bool:
        """True when this client writes or reads ``topic``."""
        return not self.topics or any(fnmatch.fnmatchcase(topic, g) for g in self.topics)


ACL_OPERATIONS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "alter": ("ALTER_CONFIGS", "ALTER"),
    "delete": ("DELETE",),
    "write": ("WRITE",),
})
"""The keys of a policy's ``acls:`` and the Kafka operations each one names: what can
weaken a topic's durability or the cluster's (change configs, grant ACLs, add
partitions), remove acknowledged records (DeleteTopics, DeleteRecords), or write."""


@dataclass(frozen=True)
class AclAllowList:
    """Which principals a policy lets hold each group of operations (``acls:``)."""

    principals: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: MappingProxyType({}))
    """Principal globs (``User:ops-*``) by key of :data:`ACL_OPERATIONS`; a key the
    policies leave out is not judged."""
    origins: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """``file:line`` of each key, for findings."""

    def allows(self, key: str, principal: str) -> bool | None:
        """Whether ``principal`` may hold ``key``'s operations; None when no policy says."""
        globs = self.principals.get(key)
        if globs is None:
            return None
        return any(fnmatch.fnmatchcase(principal, g) for g in globs)

    def over(self, earlier: AclAllowList) -> AclAllowList:
        """This list layered over ``earlier``: key by key, this one wins."""
        return AclAllowList(MappingProxyType({**earlier.principals, **self.principals}),
                            MappingProxyType({**earlier.origins, **self.origins}))


@dataclass(frozen=True)
class RuleSetting:
    """What a policy says about one rule."""

    severity: Severity | None = None
    enabled: bool | None = None


@dataclass(frozen=True)
class Policy:
    """One policy file (or built-in profile), validated."""

    name: str
    path: str
    """The file; built-in profiles have ``builtin:NAME``."""
    description: str = ""
    extends: tuple[Profile, ...] = ()
    threshold_overrides: Mapping[str, Any] = field(
        default_factory=lambda: MappingProxyType({}))
    """Only the thresholds this file sets itself."""
    profiles: Mapping[str, Profile] = field(default_factory=lambda: MappingProxyType({}))
    """Profiles defined in this file's ``profiles:`` section."""
    selectors: tuple[TopicSelector, ...] = ()
    rules: Mapping[str, RuleSetting] = field(default_factory=lambda: MappingProxyType({}))
    """By rule id."""
    disabled: frozenset[str] = frozenset()
    """Rule ids from ``disable:``."""
    waivers: tuple[Waiver, ...] = ()
    clients: tuple[ClientBinding, ...] = ()
    acls: AclAllowList = field(default_factory=AclAllowList)
    """Who may hold which durability-weakening ACLs (``acls:``)."""

    @property
    def is_builtin(self) -> bool:
        """True for the profiles shipped with kaudit."""
        return self.path.startswith("builtin:")

    def as_profile(self) -> Profile:
        """This policy used as a profile (``extends:``): its parents, then its thresholds."""
        return merge_profiles(self.name, self.description, self.extends,
                              self.threshold_overrides, self.disabled)


@dataclass(frozen=True)
class PolicySet:
    """Policies layered in command-line order: later ones win where they disagree."""

    policies: tuple[Policy, ...]
    default_profile: Profile
    """The profile of topics that no selector matches."""
    selectors: tuple[TopicSelector, ...]
    """Later policies' selectors first; within a file in order; first match wins."""
    severities: Mapping[str, Severity]
    """Severity overrides by rule id."""
    disabled: frozenset[str]
    """Rule ids switched off for everything."""
    waivers: tuple[Waiver, ...]
    clients: tuple[ClientBinding, ...]
    acls: AclAllowList = field(default_factory=AclAllowList)
    """The policies' ``acls:`` layered key by key, later winning."""

    @property
    def names(self) -> tuple[str, ...]:
        """Names (built-ins) or paths of the policies, in order; the default profile's
        name when no policy was given, so a report always says what it was judged by."""
        if not self.policies:
            return (f"{self.default_profile.name} (default)",)
        return tuple(p.name if p.is_builtin else p.path for p in self.policies)

    def profile_for(self, topic: str) -> tuple[Profile | None, str | None]:
        """The profile ``topic`` is audited under, and the selector that chose it.

        ``(None, origin)`` means a selector says not to audit the topic.
        """
        for selector in self.selectors:
            if selector.matches(topic):
                return selector.profile, selector.origin
        return self.default_profile, None

    def rule_enabled(self, rule: str, profile: Profile | None = None) -> bool:
        """False when a policy (or ``profile``) switched ``rule`` off."""
        if rule in self.disabled:
            return False
        return profile is None or rule not in profile.disabled_rules


def layer(policies: list[Policy], fallback: Profile) -> PolicySet:
    """Combine policies in order, later winning key by key.

    The default profile starts as ``fallback``; each policy's ``extends`` and
    then its own thresholds are merged on top. ``disable:`` lists add up;
    ``rules: {X: {enabled: ...}}`` and severities: the last word wins.
    Selectors of later policies are tried first; waivers and clients add up.
    """
    default = fallback
    severities: dict[str, Severity] = {}
    disabled: set[str] = set()
    for policy in policies:
        # A built-in given on the command line is the profile itself: its
        # ``disable:`` belongs to the profile, not to every topic.
        parents = (policy.as_profile(),) if policy.is_builtin else policy.extends
        overrides = {} if policy.is_builtin else policy.threshold_overrides
        if parents or overrides:
            # A policy that only extends keeps the profile's name: findings then
            # say "durable", not the policy's file name.
            name = policy.name if overrides else parents[-1].name
            # Extending replaces the rules the previous profile switched off,
            # as it replaces its thresholds.
            base = replace(default, disabled_rules=frozenset()) if parents else default
            default = merge_profiles(name, policy.description, (base, *parents), overrides,
                                     frozenset())
        if not policy.is_builtin:
            disabled |= policy.disabled
        for rule, setting in policy.rules.items():
            if setting.severity is not None:
                severities[rule] = setting.severity
            if setting.enabled is True:
                disabled.discard(rule)
            elif setting.enabled is False:
                disabled.add(rule)
    selectors = tuple(s for policy in reversed(policies) for s in policy.selectors)
    acls = AclAllowList()
    for policy in policies:
        acls = policy.acls.over(acls)
    return PolicySet(
        policies=tuple(policies),
        default_profile=default,
        selectors=selectors,
        severities=MappingProxyType(severities),
        disabled=frozenset(disabled),
        waivers=tuple(w for p in policies for w in p.waivers),
        clients=tuple(c for p in policies for c in p.clients),
        acls=acls,
    )
