"""Check rules: one registry, one module per rule family.

Importing this package registers every rule; use :func:`all_rules` and
:func:`get_rule` to reach them.
"""

from kaudit.check.rules import (
    client,
    cluster,
    features,
    groups,
    live,
    meta,
    security,
    topic,
)
from kaudit.check.rules.registry import (
    Rule,
    RuleDoc,
    Violation,
    all_rules,
    get_rule,
    rule_names,
)

__all__ = [
    "Rule",
    "RuleDoc",
    "Violation",
    "all_rules",
    "client",
    "cluster",
    "features",
    "get_rule",
    "groups",
    "live",
    "meta",
    "rule_names",
    "security",
    "topic",
]
