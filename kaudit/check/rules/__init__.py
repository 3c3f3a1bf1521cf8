"""Check rules: one registry, one module per rule family.

Importing this package registers every rule; use :func:`all_rules` and
:func:`get_rule` to reach them. (The registry imports no rule module: they import it.)
"""

from __future__ import annotations

from collections.abc import Mapping

from kaudit.check.rules import (
    acls,
    client,
    cluster,
    drift,
    features,
    groups,
    live,
    meta,
    quorum,
    security,
    share,
    tiered,
    topic,
)
from kaudit.check.rules.registry import (
    Rule,
    RuleDoc,
    Violation,
    registered,
    registered_names,
)


def all_rules() -> tuple[Rule, ...]:
    """Every rule, by id."""
    rules = registered()
    return tuple(rules[k] for k in sorted(rules))


def get_rule(id_or_name: str) -> Rule | None:
    """The rule with this id (``KA101``) or name (``topic.replication-factor-floor``)."""
    key, rules = id_or_name.strip(), registered()
    return rules.get(key.upper()) or rules.get(registered_names().get(key, ""))


def rule_names() -> Mapping[str, str]:
    """Every rule id and name, mapped to the id (for lookups and did-you-mean)."""
    return {**{k: k for k in registered()}, **registered_names()}


__all__ = [
    "Rule",
    "RuleDoc",
    "Violation",
    "acls",
    "all_rules",
    "client",
    "cluster",
    "drift",
    "features",
    "get_rule",
    "groups",
    "live",
    "meta",
    "quorum",
    "rule_names",
    "security",
    "share",
    "tiered",
    "topic",
]
