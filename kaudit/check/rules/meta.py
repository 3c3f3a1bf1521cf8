"""KA0xx: the policies themselves and what kaudit could not see."""

from __future__ import annotations

from collections.abc import Iterator

from kaudit.check.findings import Severity, Subject, SubjectKind
from kaudit.check.rules.registry import ClusterContext, PolicyContext, Violation, rule


@rule("KA001", "policy.waiver-expired", Severity.warning,
      "A waiver in a policy has expired.", scope="policy",
      what="Reports every waiver whose `expires` date has passed. An expired waiver no longer "
           "covers anything: the findings it used to waive count again.",
      why="Waivers are promises to fix something by a date; an expired one means the promise "
          "was not kept, or the waiver is stale and hides nothing any more.",
      example="`waivers: [{rule: KA101, topic: legacy.*, reason: migration, "
              "expires: 2024-01-31}]` checked in February 2024.",
      fix="Fix what the waiver covered and delete it, or extend `expires` with a new reason.")
def waiver_expired(ctx: PolicyContext) -> Iterator[Violation]:
    """Waivers whose expiry date has passed."""
    for waiver in ctx.policies.waivers:
        if not waiver.active(ctx.today):
            scope = f" for topics {waiver.topic}" if waiver.topic else ""
            yield Violation(Subject(SubjectKind.cluster, f"waiver {waiver.origin}"),
                            f"The waiver of {waiver.rule}{scope} at {waiver.origin} "
                            f"(\"{waiver.reason}\") expired on {waiver.expires.isoformat()}.",
                            expected=f"expires >= {ctx.today.isoformat()}",
                            actual=waiver.expires.isoformat(), source=waiver.origin,
                            topic=None)


@rule("KA002", "cluster.unreadable", Severity.warning,
      "kaudit could not read part of the cluster (usually missing ACLs).", scope="cluster",
      what="Reports every part of the cluster the reader was not allowed or able to read, "
           "such as topic configs without DescribeConfigs permission.",
      why="Rules cannot judge what they cannot see: a clean report with unreadable parts is "
          "not a clean cluster.",
      example="The audit principal lacks `DescribeConfigs` on the cluster resource.",
      fix="Grant the audit principal Describe and DescribeConfigs on the cluster and topics "
          "(read-only ACLs), then run the check again.")
def unreadable(ctx: ClusterContext) -> Iterator[Violation]:
    """One finding per unreadable item of the snapshot."""
    for item in ctx.snapshot.unreadable:
        yield Violation(Subject(SubjectKind.cluster, ctx.snapshot.cluster_id or "cluster"),
                        f"kaudit could not read {item}, so findings that depend on it are "
                        "missing.",
                        expected="readable", actual="not readable", source=item)
