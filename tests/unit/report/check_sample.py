"""The one shared set of findings every check-format test (and golden file) is built from.

A module of its own (not conftest) so tests can import it by a name no other test tree uses.
"""

from __future__ import annotations

from kaudit.check.findings import (
    CheckResult,
    Finding,
    Guarantee,
    RuleInfo,
    Semantics,
    Severity,
    Subject,
    SubjectKind,
)

TOOL_VERSION = "1.2.3-test"

RULES = (
    RuleInfo(
        id="KA101",
        name="topic.min-isr-floor",
        severity=Severity.error,
        summary="min.insync.replicas is at least 2 on durable topics.",
        help_markdown=(
            "## What it checks\n\n"
            "That `min.insync.replicas` is at least 2 on topics a durable profile covers.\n\n"
            "## Why\n\n"
            "With `min.insync.replicas=1`, `acks=all` is acknowledged by the leader alone.\n\n"
            "## Fix\n\n"
            "`kafka-configs --alter --entity-type topics --entity-name T "
            "--add-config min.insync.replicas=2`\n"
        ),
    ),
    RuleInfo(
        id="KA110",
        name="topic.unclean-leader-election",
        severity=Severity.error,
        summary="unclean.leader.election.enable is false on durable topics.",
        help_markdown="## What it checks\n\nThat an out-of-sync replica can never become leader.\n",
    ),
    RuleInfo(
        id="KA140",
        name="broker.auto-create-topics",
        severity=Severity.warning,
        summary="auto.create.topics.enable is false.",
        help_markdown="## What it checks\n\nThat a mistyped topic name is not silently created.\n",
    ),
    RuleInfo(
        id="KA201",
        name="producer.idempotence",
        severity=Severity.warning,
        summary="Producers writing durable topics enable idempotence.",
        help_markdown="## What it checks\n\nThat `enable.idempotence=true` for producers.\n",
    ),
)
"""KA110 has no findings (a passing JUnit case); KA160 is missing on purpose: a finding of a
rule the result does not list must still get a SARIF descriptor and a JUnit suite."""

FINDINGS = (
    Finding(
        rule="KA101",
        name="topic.min-isr-floor",
        severity=Severity.error,
        subject=Subject(SubjectKind.topic, "orders"),
        message=(
            "min.insync.replicas=1 lets the leader alone acknowledge an acks=all write, so "
            "losing that one broker loses acknowledged records."
        ),
        expected=">= 2",
        actual="1",
        source="DEFAULT_CONFIG",
    ),
    Finding(
        rule="KA201",
        name="producer.idempotence",
        severity=Severity.warning,
        subject=Subject(SubjectKind.client, "orders-writer"),
        message="enable.idempotence=false: a retried send can write the same record twice.",
        expected="true",
        actual="false",
        source="clients/orders-writer.properties:7",
    ),
    Finding(
        rule="KA160",
        name="partition.at-min-isr",
        severity=Severity.warning,
        subject=Subject(SubjectKind.partition, "orders-3"),
        message=(
            'ISR [1,2] equals min.insync.replicas: one more failure blocks "acks=all" '
            "& <all> 100% of writes."
        ),
        expected="ISR > 2",
        actual="ISR [1,2]",
        source="live metadata",
    ),
    Finding(
        rule="KA140",
        name="broker.auto-create-topics",
        severity=Severity.info,
        subject=Subject(SubjectKind.broker, "1"),
        message="auto.create.topics.enable=true: a mistyped topic name creates a new topic.",
        expected="false",
        actual="true",
        source="STATIC_BROKER_CONFIG",
    ),
    Finding(
        rule="KA101",
        name="topic.min-isr-floor",
        severity=Severity.error,
        subject=Subject(SubjectKind.topic, "payments"),
        message="min.insync.replicas=1 lets the leader alone acknowledge an acks=all write.",
        expected=">= 2",
        actual="1",
        source="DYNAMIC_TOPIC_CONFIG",
        waived_by="INC-4211: migration, owner payments-team, expires 2025-09-30",
    ),
)

GUARANTEES = (
    Guarantee(
        topic="orders",
        semantics=Semantics.at_least_once,
        loss_tolerance=0,
        write_tolerance=2,
        reasons=("replication.factor=3", "min.insync.replicas=1 (DEFAULT_CONFIG)"),
    ),
    Guarantee(
        topic="orders",
        producer="clients/orders-writer.properties",
        semantics=Semantics.at_least_once,
        loss_tolerance=0,
        write_tolerance=2,
        reasons=("acks=all", "enable.idempotence=false: retries can duplicate"),
    ),
    Guarantee(
        topic="payments",
        semantics=Semantics.at_least_once,
        loss_tolerance=1,
        write_tolerance=1,
        reasons=("replication.factor=3", "min.insync.replicas=2"),
    ),
    Guarantee(
        topic="metrics",
        semantics=Semantics.at_most_once,
        loss_tolerance=0,
        write_tolerance=-1,
        reasons=("replication.factor=1", "min.insync.replicas=2 > replication.factor"),
    ),
)

SAMPLE = CheckResult(
    findings=FINDINGS,
    guarantees=GUARANTEES,
    rules=RULES,
    policies=("durable", "policies/team-orders.yaml"),
    origin="snapshot:prod-eu.json",
    cluster_id="lkc-7Hq2xYzA",
)

EMPTY = CheckResult(findings=(), guarantees=(), rules=(), policies=(), origin="live")
