"""KA507-KA509: who the ACL bindings let weaken durability.

A principal that may ALTER_CONFIGS a topic or the cluster can lower min.insync.replicas or
turn unclean election on; one that may DELETE a topic can delete it or its records
(DeleteRecords); one that may WRITE writes anything. These rules read every binding
(``ClusterSnapshot.acls``) with Kafka's own matching (:mod:`kaudit.cluster.acl`: LITERAL,
PREFIXED and the literal ``*``; ``User:*``; a DENY wins over an ALLOW). They skip a
snapshot whose ACLs were not read; check's header says why (no authorizer: KA503; not
allowed to describe them: KA002). Super users (KA505) bypass ACLs and are not judged here;
``allow.everyone.if.no.acl.found`` is KA504's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from kaudit.check.findings import Severity, Subject, SubjectKind
from kaudit.check.policy.model import ACL_OPERATIONS
from kaudit.check.rules.common import topic_subject
from kaudit.check.rules.registry import ClusterContext, TopicContext, Violation, rule
from kaudit.cluster.acl import (
    ALLOW,
    CLUSTER,
    CLUSTER_NAME,
    TOPIC,
    WILDCARD_NAME,
    WILDCARD_PRINCIPAL,
    AclBinding,
    overriding_deny,
)
from kaudit.cluster.model import ClusterSnapshot, Topic

TOPIC_OPERATIONS = ("WRITE", "DELETE", "ALTER_CONFIGS", "ALTER")
"""What weakens a topic: write anything, delete it or its records, change its configs,
add partitions."""
CLUSTER_OPERATIONS = ("ALTER_CONFIGS", "ALTER")
"""What weakens the cluster: change broker defaults; create ACLs, reassign partitions."""

_EFFECT = {
    (TOPIC, "WRITE"): "write anything into it",
    (TOPIC, "DELETE"): "delete it or its records",
    (TOPIC, "ALTER_CONFIGS"): "lower its min.insync.replicas or turn unclean election on",
    (TOPIC, "ALTER"): "add partitions to it",
    (CLUSTER, "ALTER_CONFIGS"): "change the brokers' defaults (min.insync.replicas, "
                                "unclean.leader.election.enable) for every topic",
    (CLUSTER, "ALTER"): "grant itself any ACL and reassign partitions",
}


@dataclass(frozen=True)
class Grant:
    """One operation an ALLOW binding gives, and the DENY that takes it away (if any)."""

    operation: str
    binding: AclBinding
    denied_by: AclBinding | None = None


def wildcard_grants(acls: Iterable[AclBinding], resource: tuple[str, str],
                    operations: Sequence[str]) -> list[Grant]:
    """What ``User:*`` (every principal) is allowed on ``resource`` (type, name), each
    with the ``User:*`` DENY that overrides it, if one does. A DENY for one principal does
    not take a grant to every principal away from the others."""
    acls = tuple(acls)
    out = []
    for binding in acls:
        if (binding.permission != ALLOW or binding.principal != WILDCARD_PRINCIPAL
                or not binding.matches(*resource)):
            continue
        for operation in operations:
            if binding.covers(operation):
                out.append(Grant(operation, binding,
                                 overriding_deny(acls, binding, operation, resource)))
    return out


def _held(grants: list[Grant]) -> tuple[list[str], list[AclBinding], str]:
    """The operations held, the bindings that give them, and what the DENYs took away."""
    held = [g for g in grants if g.denied_by is None]
    operations = list(dict.fromkeys(g.operation for g in held))
    bindings = list(dict.fromkeys(g.binding for g in held))
    taken = [g for g in grants if g.denied_by is not None]
    note = "".join(f" ({g.denied_by.shown} takes {g.operation} away)"
                   for g in taken if g.denied_by is not None)
    return operations, bindings, note


def _evidence(bindings: Iterable[AclBinding]) -> str:
    return "; ".join(b.shown for b in bindings)


@rule("KA507", "acl.wildcard-on-durable-topic", Severity.error,
      "Every principal (User:*) may write, delete or reconfigure a durability-critical topic.",
      scope="topic",
      what="For each topic whose profile requires `min_insync_replicas` of 2 or more, reads the "
           "ACL bindings and reports the operations WRITE, DELETE, ALTER_CONFIGS and ALTER "
           "(or ALL) that an ALLOW binding for the wildcard principal `User:*` gives on it: a "
           "LITERAL binding naming the topic or `*`, or a PREFIXED one its name starts with, "
           "unless a `User:*` DENY for that operation matches the topic too (a DENY wins). "
           "Each binding is named as evidence. Skipped when the ACLs were not read.",
      why="`User:*` is every client that can authenticate, and anonymous ones on a PLAINTEXT "
          "listener: any of them may then write into the topic, delete it or its records "
          "(DeleteRecords), or lower its min.insync.replicas and turn unclean election on, "
          "undoing the durability its profile demands. The secured lab (`kaudit lab up "
          "--security ...`) grants `User:alice` ALL on `TOPIC:*`: a named principal, so this "
          "rule says nothing there; KA509 judges it when a policy lists who may hold what.",
      example="`kafka-acls --add --allow-principal 'User:*' --operation Write --topic orders "
              "--resource-pattern-type prefixed` with `orders.payments` under `durable`.",
      fix="Remove the binding (`kafka-acls --remove ...`) and grant the operation to the "
          "principals that need it; a `User:*` DENY for the operation on the topic takes it "
          "away meanwhile.")
def wildcard_on_durable_topic(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """User:* ALLOW (not overridden) of a weakening operation on the topic."""
    acls = ctx.snapshot.acls
    floor = ctx.thresholds.min_insync_replicas
    if acls is None or floor < 2:
        return
    operations, bindings, note = _held(wildcard_grants(acls, (TOPIC, topic.name),
                                                       TOPIC_OPERATIONS))
    if not operations:
        return
    effects = "; ".join(f"{op}: {_EFFECT[(TOPIC, op)]}" for op in operations)
    yield Violation(topic_subject(topic),
                    f"Every principal ({WILDCARD_PRINCIPAL}) may {', '.join(operations)} topic "
                    f"{topic.name}, whose profile {ctx.profile.name} requires "
                    f"min.insync.replicas >= {floor} ({effects}), by {_evidence(bindings)}"
                    f"{note}.",
                    expected=f"no ALLOW for {WILDCARD_PRINCIPAL}",
                    actual=f"{WILDCARD_PRINCIPAL} may {', '.join(operations)}",
                    source=_evidence(bindings), topic=topic.name)


def _cluster_subject(snapshot: ClusterSnapshot) -> Subject:
    return Subject(SubjectKind.cluster, snapshot.cluster_id or "cluster")


@rule("KA508", "acl.wildcard-on-cluster", Severity.error,
      "Every principal (User:*) may change the cluster's configs or its ACLs.",
      scope="cluster",
      what="Reports ALLOW bindings for `User:*` of ALTER_CONFIGS or ALTER (or ALL) on the "
           "CLUSTER resource, unless a `User:*` DENY of that operation on the cluster "
           "overrides them. Skipped when the ACLs were not read.",
      why="ALTER_CONFIGS on the cluster changes the brokers' dynamic defaults, "
          "min.insync.replicas and unclean.leader.election.enable for every topic that "
          "inherits them; ALTER creates and deletes ACLs (so grants anything) and reassigns "
          "partitions. Given to every principal, any client can weaken every topic at once.",
      example="`kafka-acls --add --allow-principal 'User:*' --operation AlterConfigs "
              "--cluster`.",
      fix="Remove the binding and grant ALTER_CONFIGS and ALTER on the cluster to the "
          "operators' principals only (list them under the policy's `acls: {alter: [...]}`).")
def wildcard_on_cluster(ctx: ClusterContext) -> Iterator[Violation]:
    """User:* ALLOW (not overridden) of ALTER_CONFIGS / ALTER on the cluster."""
    acls = ctx.snapshot.acls
    if acls is None:
        return
    operations, bindings, note = _held(wildcard_grants(acls, (CLUSTER, CLUSTER_NAME),
                                                       CLUSTER_OPERATIONS))
    if not operations:
        return
    effects = "; ".join(f"{op}: {_EFFECT[(CLUSTER, op)]}" for op in operations)
    yield Violation(_cluster_subject(ctx.snapshot),
                    f"Every principal ({WILDCARD_PRINCIPAL}) may {', '.join(operations)} the "
                    f"cluster ({effects}), by {_evidence(bindings)}{note}.",
                    expected=f"no ALLOW for {WILDCARD_PRINCIPAL}",
                    actual=f"{WILDCARD_PRINCIPAL} may {', '.join(operations)}",
                    source=_evidence(bindings))


def _reach(binding: AclBinding, snapshot: ClusterSnapshot, operations: Sequence[str],
           acls: tuple[AclBinding, ...]) -> str:
    """Which topics a topic binding reaches now with one of ``operations`` (a DENY on a
    topic takes it out), in words."""
    if binding.resource_type != TOPIC:
        return "the cluster"
    names = [t.name for t in snapshot.topics if binding.matches(TOPIC, t.name)
             and any(overriding_deny(acls, binding, op, (TOPIC, t.name)) is None
                     for op in operations)]
    pattern = ("every topic" if binding.pattern_type == "LITERAL"
               and binding.resource_name == WILDCARD_NAME
               else f"topics starting with {binding.resource_name!r}"
               if binding.pattern_type == "PREFIXED" else f"topic {binding.resource_name}")
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"{pattern} ({len(names)} now{': ' + shown if names else ''})"


def _not_allowed(binding: AclBinding, ctx: ClusterContext,
                 acls: tuple[AclBinding, ...]) -> list[tuple[str, str]]:
    """(policy key, operation) pairs ``binding`` gives that the allow-list refuses and no
    DENY takes away from every resource the binding matches."""
    out = []
    for key, operations in ACL_OPERATIONS.items():
        if ctx.acl_allow.allows(key, binding.principal) is not False:
            continue
        for operation in operations:
            if binding.resource_type == CLUSTER and operation not in CLUSTER_OPERATIONS:
                continue
            if binding.covers(operation) and overriding_deny(acls, binding, operation) is None:
                out.append((key, operation))
    return out


@rule("KA509", "acl.principal-not-allowed", Severity.error,
      "A principal the policy does not list holds an ACL that can weaken durability.",
      scope="cluster",
      what="With a policy's `acls:` lists (`alter`: ALTER_CONFIGS and ALTER; `delete`: DELETE; "
           "`write`: WRITE), reports every ALLOW binding on a topic or the cluster that gives "
           "one of those operations (or ALL) to a named principal no glob of the list "
           "matches, unless a DENY takes the operation away from everything the binding "
           "matches. A list the policies leave out is not judged; `User:*` is KA507's and "
           "KA508's. Skipped when the ACLs were not read.",
      why="Whoever holds ALTER_CONFIGS can lower min.insync.replicas or turn unclean election "
          "on, DELETE removes acknowledged records, WRITE writes anything: a team that states "
          "who may hold them learns at once when a grant outgrows that list. The secured lab "
          "gives `User:alice` ALL on `TOPIC:*` (so also ALTER_CONFIGS, DELETE and WRITE): "
          "under a policy that does not list alice, that grant is reported, as it should "
          "be outside a lab.",
      example="`acls: {delete: [User:retention-job]}` and "
              "`kafka-acls --add --allow-principal User:etl --operation Delete --topic orders`.",
      fix="Remove the binding, narrow it (LITERAL instead of PREFIXED, the operation needed "
          "instead of ALL), or add the principal to the policy's list if it is meant to "
          "hold it.")
def principal_not_allowed(ctx: ClusterContext) -> Iterator[Violation]:
    """Named principals holding operations their acls: list does not give them."""
    acls = ctx.snapshot.acls
    if acls is None or not ctx.acl_allow.principals:
        return
    for binding in acls:
        if (binding.permission != ALLOW or binding.principal == WILDCARD_PRINCIPAL
                or binding.resource_type not in (TOPIC, CLUSTER)):
            continue
        refused = _not_allowed(binding, ctx, acls)
        if not refused:
            continue
        keys = list(dict.fromkeys(key for key, _ in refused))
        lists = ", ".join(f"acls.{k} ({ctx.acl_allow.origins.get(k, 'policy')})" for k in keys)
        held = list(dict.fromkeys(op for _, op in refused))
        operations = ", ".join(held)
        literal = (binding.resource_type == TOPIC and binding.pattern_type == "LITERAL"
                   and binding.resource_name != WILDCARD_NAME)
        subject = (Subject(SubjectKind.topic, binding.resource_name) if literal
                   else _cluster_subject(ctx.snapshot))
        yield Violation(subject,
                        f"{binding.principal} may {operations} on "
                        f"{_reach(binding, ctx.snapshot, held, acls)}, but the policy's "
                        f"{lists} does not list it: {binding.shown}.",
                        expected="; ".join(
                            f"acls.{k}: {', '.join(ctx.acl_allow.principals[k]) or 'nobody'}"
                            for k in keys),
                        actual=f"{binding.principal} may {operations}", source=binding.shown,
                        topic=binding.resource_name if literal else None)
