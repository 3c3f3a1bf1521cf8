"""ACL bindings as Kafka's authorizer reads them: the frozen model and how one matches.

A binding grants (ALLOW) or takes away (DENY) one operation on the resources its pattern
matches, for one principal from one host. Kafka's rules, which StandardAuthorizer and the
older AclAuthorizer share:

- a LITERAL pattern matches the resource of that name, and the literal name ``*`` every
  resource of its type; a PREFIXED pattern matches every name that starts with it;
- the principal ``User:*`` stands for every principal, the host ``*`` for every host;
- the operation ``ALL`` stands for every operation;
- a DENY that matches wins over any ALLOW: a principal may do something only when some
  ALLOW matches and no DENY does.

Names are Kafka's own (``CLUSTER``, ``ALTER_CONFIGS``), as ``kafka-acls.sh --list``
prints them, whatever the client library calls them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

WILDCARD_PRINCIPAL = "User:*"
"""The principal every principal matches."""
WILDCARD_NAME = "*"
"""A LITERAL resource name that matches every resource of its type; also the any-host."""
CLUSTER = "CLUSTER"
CLUSTER_NAME = "kafka-cluster"
"""The one cluster resource's name."""
TOPIC = "TOPIC"
ALLOW = "ALLOW"
DENY = "DENY"


@dataclass(frozen=True, order=True)
class AclBinding:
    """One ACL binding, as DescribeAcls returns it (ordered by resource, then principal)."""

    resource_type: str
    """Kafka's resource type name: TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID..."""
    resource_name: str
    pattern_type: str
    """LITERAL or PREFIXED."""
    principal: str
    """``User:alice``; ``User:*`` is every principal."""
    host: str
    """The client host it applies to; ``*`` is every host."""
    operation: str
    """Kafka's operation name: ALL, READ, WRITE, DELETE, ALTER, ALTER_CONFIGS..."""
    permission: str
    """ALLOW or DENY."""

    def matches(self, resource_type: str, name: str) -> bool:
        """Whether this binding's pattern matches the resource ``resource_type:name``."""
        if resource_type != self.resource_type:
            return False
        if self.pattern_type == "PREFIXED":
            return name.startswith(self.resource_name)
        return self.resource_name in (WILDCARD_NAME, name)

    def covers(self, operation: str) -> bool:
        """Whether this binding is about ``operation`` (ALL is about every one)."""
        return self.operation in ("ALL", operation)

    def concerns(self, principal: str) -> bool:
        """Whether this binding applies to ``principal`` (``User:*`` applies to all)."""
        return self.principal in (WILDCARD_PRINCIPAL, principal)

    def covers_pattern(self, other: AclBinding) -> bool:
        """Whether this binding's pattern matches every resource ``other``'s matches."""
        if other.resource_type != self.resource_type:
            return False
        if self.pattern_type == "LITERAL" and self.resource_name == WILDCARD_NAME:
            return True
        if other.pattern_type == "LITERAL" and other.resource_name == WILDCARD_NAME:
            return False
        if self.pattern_type == "PREFIXED":
            return other.resource_name.startswith(self.resource_name)
        return other.pattern_type == "LITERAL" and other.resource_name == self.resource_name

    @property
    def shown(self) -> str:
        """The binding in one line, in ``kafka-acls.sh``'s words."""
        return (f"{self.principal} {self.permission} {self.operation} on {self.resource_type} "
                f"{self.resource_name!r} ({self.pattern_type}) from host {self.host}")


def overriding_deny(acls: Iterable[AclBinding], grant: AclBinding, operation: str,
                    resource: tuple[str, str] | None = None) -> AclBinding | None:
    """A DENY that takes ``operation`` away from what ``grant`` allows, or None.

    With ``resource`` (type, name), the DENY need only match that one resource; without,
    it must match every resource ``grant``'s pattern does. It must apply to ``grant``'s
    principal (a DENY for ``User:*`` applies to everyone; a DENY for one principal does
    not take a ``User:*`` grant from the others) and to its host (or every host).
    """
    for deny in acls:
        if (deny.permission != DENY or not deny.covers(operation)
                or deny.host not in (WILDCARD_NAME, grant.host)
                or deny.principal not in (WILDCARD_PRINCIPAL, grant.principal)):
            continue
        if resource is not None and deny.matches(*resource):
            return deny
        if resource is None and deny.covers_pattern(grant):
            return deny
    return None


def acl_to_dict(acl: AclBinding) -> dict[str, str]:
    """A binding as the snapshot's JSON has it."""
    return {"resource_type": acl.resource_type, "resource_name": acl.resource_name,
            "pattern_type": acl.pattern_type, "principal": acl.principal, "host": acl.host,
            "operation": acl.operation, "permission": acl.permission}


def acl_from_dict(raw: Mapping[str, Any]) -> AclBinding:
    """A binding from the snapshot's JSON. Raises KeyError on a missing field."""
    return AclBinding(resource_type=str(raw["resource_type"]),
                      resource_name=str(raw["resource_name"]),
                      pattern_type=str(raw["pattern_type"]), principal=str(raw["principal"]),
                      host=str(raw["host"]), operation=str(raw["operation"]),
                      permission=str(raw["permission"]))
