"""Load and validate policy files and built-in profiles.

Everything is checked before anything is evaluated: unknown keys (with a
did-you-mean), wrong types, bad regexes, bad dates, unknown rules and
profiles, and the client config files a policy names. Every problem is a
:class:`~kaudit.errors.FileInputError` naming ``file:line`` (exit 2).

The schema is documented in ``docs/policy.md``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from yaml.nodes import Node

from kaudit.check.clients import LIBRARIES, ROLES, Role, load_client_config
from kaudit.check.findings import Severity
from kaudit.check.policy.builtin import builtin_names, builtin_path
from kaudit.check.policy.model import (
    ACL_OPERATIONS,
    THRESHOLD_NAMES,
    AclAllowList,
    ClientBinding,
    Policy,
    PolicySet,
    Profile,
    RuleSetting,
    TopicSelector,
    Waiver,
    layer,
    merge_profiles,
)
from kaudit.errors import InputError
from kaudit.yamlnodes import NodeReader, compose_text, did_you_mean, read_text

POLICY_KEYS = ("name", "description", "extends", "thresholds", "profiles", "topics", "rules",
               "disable", "waivers", "clients", "acls")
PROFILE_KEYS = ("extends", "description", "thresholds", "disable")
SELECTOR_KEYS = ("match", "regex", "exclude", "profile", "skip")
RULE_KEYS = ("severity", "enabled")
WAIVER_KEYS = ("rule", "topic", "subject", "reason", "expires")
CLIENT_KEYS = ("config", "role", "topics", "library")
SEVERITIES = tuple(s.value for s in Severity)
DEFAULT_PROFILE = "durable"

_INT_THRESHOLDS = {"min_replication_factor": 1, "min_insync_replicas": 1,
                   "min_write_tolerance": 0, "group_loss_horizon_hours": 0,
                   "max_open_transaction_seconds": 0, "share_min_delivery_attempts": 0,
                   "share_idle_lag_minutes": 0, "min_controller_voters": 1,
                   "max_controller_lag_records": 0, "max_controller_caught_up_seconds": 0}
_ACKS_CHOICES = ("0", "1", "all", "-1")


def load_policy(path_or_builtin_name: str) -> Policy:
    """Load a policy file, or a built-in profile by name (``durable``, ``exactly-once``...)."""
    return _Loader().load(path_or_builtin_name)


def load_policies(paths_or_names: Sequence[str]) -> PolicySet:
    """Load several policies and layer them in order (later ones win).

    With no policy at all, topics are audited against the ``durable`` profile.
    """
    loader = _Loader()
    policies = [loader.load(item) for item in paths_or_names]
    return layer(policies, loader.builtin_profile(DEFAULT_PROFILE, None, None))


def parse_policy(text: str, path: str) -> Policy:
    """Validate policy text as if read from ``path`` (client paths resolve against it)."""
    return _Loader().parse(text, path, name=Path(path).stem, label=path)


def is_builtin_reference(value: str) -> bool:
    """True when ``value`` names a built-in profile rather than a file."""
    return value in builtin_names() and os.sep not in value and "/" not in value


class _Loader:
    """One load run: caches built-in profiles and detects ``extends`` cycles."""

    def __init__(self) -> None:
        self._builtins: dict[str, Policy] = {}
        self._loading: list[str] = []

    def load(self, item: str) -> Policy:
        if is_builtin_reference(item):
            return self._builtin_policy(item, None, None)
        if not Path(item).expanduser().exists() and not item.endswith((".yaml", ".yml")):
            hint = did_you_mean(item, builtin_names())
            raise InputError(f"{item}: no such policy file or built-in profile",
                             hint=hint or f"built-in profiles: {', '.join(builtin_names())}")
        return self.parse(read_text(item), str(item), name=Path(item).stem, label=str(item))

    def _builtin_policy(self, name: str, reader: NodeReader | None, node: Node | None) -> Policy:
        if name in self._builtins:
            return self._builtins[name]
        if name in self._loading:
            chain = " -> ".join([*self._loading, name])
            if reader is not None:
                raise reader.fail(node, f"profiles extend each other in a cycle: {chain}")
            raise InputError(f"built-in profiles extend each other in a cycle: {chain}")
        file = builtin_path(name)
        if file is None:
            raise InputError(f"built-in profile {name} is missing from the installation")
        self._loading.append(name)
        try:
            policy = self.parse(read_text(file), str(file), name=name, label=f"builtin:{name}")
        finally:
            self._loading.pop()
        self._builtins[name] = policy
        return policy

    def builtin_profile(self, name: str, reader: NodeReader | None, node: Node | None) -> Profile:
        """A built-in profile by name."""
        return self._builtin_policy(name, reader, node).as_profile()

    # -- one document ---------------------------------------------------------

    def parse(self, text: str, path: str, *, name: str, label: str) -> Policy:
        reader = NodeReader(path)
        root = compose_text(text, path)
        if root is None:
            return Policy(name=name, path=label)
        top = reader.mapping(root, "the policy", POLICY_KEYS)

        def value(key: str) -> Node | None:
            entry = top.get(key)
            return entry[1] if entry is not None else None

        if (node := value("name")) is not None:
            name = reader.text(node, "name")
        description = ""
        if (node := value("description")) is not None:
            description = reader.text(node, "description")
        extends: tuple[Profile, ...] = ()
        if (node := value("extends")) is not None:
            extends = self._extends(reader, node, {})
        overrides: Mapping[str, Any] = MappingProxyType({})
        if (node := value("thresholds")) is not None:
            overrides = self._thresholds(reader, node)
        profiles: dict[str, Profile] = {}
        if (node := value("profiles")) is not None:
            profiles = self._profiles(reader, node)
        selectors: tuple[TopicSelector, ...] = ()
        if (node := value("topics")) is not None:
            selectors = self._selectors(reader, node, profiles)
        rules: dict[str, RuleSetting] = {}
        if (node := value("rules")) is not None:
            rules = self._rules(reader, node)
        disabled: frozenset[str] = frozenset()
        if (node := value("disable")) is not None:
            disabled = self._disable(reader, node)
        waivers: tuple[Waiver, ...] = ()
        if (node := value("waivers")) is not None:
            waivers = self._waivers(reader, node)
        clients: tuple[ClientBinding, ...] = ()
        if (node := value("clients")) is not None:
            clients = self._clients(reader, node)
        acls = AclAllowList() if (node := value("acls")) is None else _acls(reader, node)
        return Policy(name=name, path=label, description=description, extends=extends,
                      threshold_overrides=overrides, profiles=MappingProxyType(profiles),
                      selectors=selectors, rules=MappingProxyType(rules), disabled=disabled,
                      waivers=waivers, clients=clients, acls=acls)

    def _profile_ref(self, reader: NodeReader, node: Node, local: Mapping[str, Profile],
                     what: str) -> Profile:
        name = reader.text(node, what)
        if name in local:
            return local[name]
        if name in builtin_names():
            return self.builtin_profile(name, reader, node)
        known = [*local, *builtin_names()]
        raise reader.fail(node, f"unknown profile '{name}'",
                          hint=did_you_mean(name, known) or f"known profiles: {', '.join(known)}")

    def _extends(self, reader: NodeReader, node: Node,
                 local: Mapping[str, Profile]) -> tuple[Profile, ...]:
        return tuple(self._profile_ref(reader, item, local, "extends")
                     for _, item in reader.text_list(node, "extends"))

    def _thresholds(self, reader: NodeReader, node: Node) -> Mapping[str, Any]:
        out: dict[str, Any] = {}
        for key, (_, value) in reader.mapping(node, "thresholds", THRESHOLD_NAMES).items():
            what = f"thresholds.{key}"
            if key in _INT_THRESHOLDS:
                out[key] = reader.integer(value, what, minimum=_INT_THRESHOLDS[key])
            elif key == "producer_acks":
                acks = reader.choice(value, what, _ACKS_CHOICES)
                out[key] = "all" if acks == "-1" else acks
            else:
                out[key] = reader.boolean(value, what)
        return MappingProxyType(out)

    def _profiles(self, reader: NodeReader, node: Node) -> dict[str, Profile]:
        out: dict[str, Profile] = {}
        for name, (key_node, body) in reader.mapping(node, "profiles").items():
            if name in builtin_names():
                raise reader.fail(key_node, f"profile '{name}' would hide the built-in profile "
                                  "of that name; choose another name")
            entries = reader.mapping(body, f"profile '{name}'", PROFILE_KEYS)
            parents: tuple[Profile, ...] = ()
            if "extends" in entries:
                parents = self._extends(reader, entries["extends"][1], out)
            settings: Mapping[str, Any] = {}
            if "thresholds" in entries:
                settings = self._thresholds(reader, entries["thresholds"][1])
            description = ""
            if "description" in entries:
                description = reader.text(entries["description"][1], "description")
            disabled: frozenset[str] = frozenset()
            if "disable" in entries:
                disabled = self._disable(reader, entries["disable"][1])
            out[name] = merge_profiles(name, description, parents, settings, disabled)
        return out

    def _selectors(self, reader: NodeReader, node: Node,
                   profiles: Mapping[str, Profile]) -> tuple[TopicSelector, ...]:
        out: list[TopicSelector] = []
        for item in reader.sequence(node, "topics"):
            entries = reader.mapping(item, "a topic selector", SELECTOR_KEYS, required=("match",))
            regex = False
            if "regex" in entries:
                regex = reader.boolean(entries["regex"][1], "regex")
            patterns = self._patterns(reader, entries["match"][1], "match", regex)
            exclude: tuple[str, ...] = ()
            if "exclude" in entries:
                exclude = self._patterns(reader, entries["exclude"][1], "exclude", regex)
            skip = "skip" in entries and reader.boolean(entries["skip"][1], "skip")
            if skip and "profile" in entries:
                raise reader.fail(entries["skip"][0], "a selector with skip: true takes no "
                                  "profile")
            if not skip and "profile" not in entries:
                raise reader.fail(item, "a topic selector needs 'profile' (or skip: true)")
            profile = (None if skip else
                       self._profile_ref(reader, entries["profile"][1], profiles, "profile"))
            out.append(TopicSelector(match=patterns, regex=regex, exclude=exclude,
                                     profile=profile,
                                     origin=f"{reader.path}:{item.start_mark.line + 1}"))
        return tuple(out)

    def _patterns(self, reader: NodeReader, node: Node, what: str,
                  regex: bool) -> tuple[str, ...]:
        out: list[str] = []
        for pattern, item in reader.text_list(node, what):
            if regex:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise reader.fail(item, f"{what} is not a valid regular expression: "
                                      f"'{pattern}' ({exc})") from None
            out.append(pattern)
        return tuple(out)

    def _rule_id(self, reader: NodeReader, node: Node, what: str) -> str:
        # Lazy: the rules depend on the policy model, not the other way round; only
        # a policy that names a rule needs the registry (and every rule module loaded).
        from kaudit.check.rules import get_rule, rule_names

        ref = reader.text(node, what)
        found = get_rule(ref)
        if found is None:
            raise reader.fail(node, f"unknown rule '{ref}'",
                              hint=did_you_mean(ref, rule_names()) or
                              "rules are named by id (KA101) or name "
                              "(topic.replication-factor-floor)")
        return found.id

    def _rules(self, reader: NodeReader, node: Node) -> dict[str, RuleSetting]:
        out: dict[str, RuleSetting] = {}
        for _, (key_node, body) in reader.mapping(node, "rules").items():
            rule_id = self._rule_id(reader, key_node, "a rule")
            if rule_id in out:
                raise reader.fail(key_node, f"rule {rule_id} is configured twice (by id and "
                                  "by name)")
            if isinstance(body.value, str) and body.tag.endswith(":str"):
                severity = Severity(reader.choice(body, "severity", SEVERITIES))
                out[rule_id] = RuleSetting(severity=severity)
                continue
            entries = reader.mapping(body, f"rule {rule_id}", RULE_KEYS)
            setting = RuleSetting()
            if "severity" in entries:
                setting = RuleSetting(Severity(reader.choice(entries["severity"][1], "severity",
                                                             SEVERITIES)))
            if "enabled" in entries:
                setting = RuleSetting(setting.severity,
                                      reader.boolean(entries["enabled"][1], "enabled"))
            out[rule_id] = setting
        return out

    def _disable(self, reader: NodeReader, node: Node) -> frozenset[str]:
        return frozenset(self._rule_id(reader, item, "disable")
                         for _, item in reader.text_list(node, "disable", allow_empty=True))

    def _waivers(self, reader: NodeReader, node: Node) -> tuple[Waiver, ...]:
        out: list[Waiver] = []
        for item in reader.sequence(node, "waivers"):
            entries = reader.mapping(item, "a waiver", WAIVER_KEYS,
                                     required=("rule", "reason", "expires"))
            out.append(Waiver(
                rule=self._rule_id(reader, entries["rule"][1], "rule"),
                reason=reader.text(entries["reason"][1], "reason"),
                expires=reader.day(entries["expires"][1], "expires"),
                origin=f"{reader.path}:{item.start_mark.line + 1}",
                topic=(reader.text(entries["topic"][1], "topic")
                       if "topic" in entries else None),
                subject=(reader.text(entries["subject"][1], "subject")
                         if "subject" in entries else None),
            ))
        return tuple(out)

    def _clients(self, reader: NodeReader, node: Node) -> tuple[ClientBinding, ...]:
        out: list[ClientBinding] = []
        base = Path(reader.path).parent
        for item in reader.sequence(node, "clients"):
            entries = reader.mapping(item, "a client", CLIENT_KEYS, required=("config", "role"))
            config_node = entries["config"][1]
            config = reader.text(config_node, "config")
            role: Role = "producer" if reader.choice(entries["role"][1], "role",
                                                     ROLES) == "producer" else "consumer"
            library = "auto"
            if "library" in entries:
                library = reader.choice(entries["library"][1], "library", LIBRARIES)
            topics: tuple[str, ...] = ()
            if "topics" in entries:
                topics = tuple(t for t, _ in reader.text_list(entries["topics"][1], "topics"))
            file = Path(config).expanduser()
            if not file.is_absolute():
                file = base / file
            if not file.is_file():
                raise reader.fail(config_node, f"client config {config} not found "
                                  f"(looked for {file})")
            out.append(ClientBinding(client=load_client_config(file, role, library),
                                     topics=topics,
                                     origin=f"{reader.path}:{item.start_mark.line + 1}"))
        return tuple(out)



def _acls(reader: NodeReader, node: Node) -> AclAllowList:
    """``acls: {alter: [PRINCIPAL...], delete: [...], write: [...]}``: principal globs, each
    ``Type:name`` as Kafka writes principals (``User:alice``, ``User:ops-*``)."""
    principals: dict[str, tuple[str, ...]] = {}
    origins: dict[str, str] = {}
    for key, (key_node, body) in reader.mapping(node, "acls", tuple(ACL_OPERATIONS)).items():
        found: list[str] = []
        for principal, item in reader.text_list(body, f"acls.{key}", allow_empty=True):
            kind, sep, who = principal.partition(":")
            if not (sep and kind.strip() and who.strip()):
                raise reader.fail(item, f"acls.{key}: '{principal}' is not a principal",
                                  hint=f"write it as Kafka does: User:{who or kind or 'NAME'}")
            found.append(principal)
        principals[key] = tuple(found)
        origins[key] = f"{reader.path}:{key_node.start_mark.line + 1}"
    return AclAllowList(MappingProxyType(principals), MappingProxyType(origins))
