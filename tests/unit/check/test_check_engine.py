"""The engine: profiles per topic, internal topics, clients, waivers, ordering."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
from kaudit_rule_cases import run_case

from kaudit.check.findings import Severity, SubjectKind
from kaudit.check.rules import all_rules
from kaudit.check.rules.registry import rule
from kaudit.cluster.model import is_internal_topic

BROKEN = {
    "broker_configs": {"min.insync.replicas": 1, "offsets.topic.replication.factor": 3,
                       "auto.create.topics.enable": False, "default.replication.factor": 3},
    "topics": [
        {"name": "orders", "replication_factor": 2},
        {"name": "payments", "configs": {"min.insync.replicas": 2,
                                         "unclean.leader.election.enable": False}},
        {"name": "__consumer_offsets", "internal": True, "replication_factor": 3,
         "partitions": [{"leader": None, "replicas": [1, 2, 3], "isr": []}]},
    ],
}


def _rules(result: Any, subject: str) -> set[str]:
    return {f.rule for f in result.findings if f.subject.name == subject}


def test_findings_are_sorted_worst_first(tmp_path: Path) -> None:
    result = run_case({**BROKEN, "producer": {"acks": 1}}, tmp_path)
    ranks = [Severity(f.severity).rank for f in result.findings]
    assert ranks == sorted(ranks, reverse=True)
    for a, b in zip(result.findings, result.findings[1:], strict=False):
        if a.severity == b.severity:
            assert a.rule <= b.rule
    assert result == run_case({**BROKEN, "producer": {"acks": 1}}, tmp_path)  # deterministic


def test_internal_topics_get_only_live_state_rules(tmp_path: Path) -> None:
    result = run_case(BROKEN, tmp_path)
    assert _rules(result, "__consumer_offsets") == set()
    assert _rules(result, "__consumer_offsets-0") == {"KA204"}
    assert {g.topic for g in result.guarantees} == {"orders", "payments"}


def test_the_live_state_rules_are_the_ones_run_on_internal_topics() -> None:
    flagged = {r.id for r in all_rules() if r.internal_topics}
    assert flagged == {"KA201", "KA202", "KA203", "KA204", "KA205", "KA206"}
    assert {r.scope for r in all_rules() if r.internal_topics} == {"topic"}


def test_only_topic_rules_can_ask_for_internal_topics() -> None:
    with pytest.raises(ValueError, match="only topic rules"):
        rule("KA999", "cluster.never-registered", Severity.info, "x", scope="cluster",
             what="", why="", example="", fix="", internal_topics=True)


@pytest.mark.parametrize("name,internal", [
    ("__consumer_offsets", True), ("__transaction_state", True),
    ("__remote_log_metadata", True), ("_confluent-metrics", False), ("orders__v2", False),
])
def test_internal_topics_are_named_with_two_underscores(name: str, internal: bool) -> None:
    assert is_internal_topic(name) is internal


def test_clean_durable_topic_has_no_findings(tmp_path: Path) -> None:
    result = run_case({
        "broker_configs": {"min.insync.replicas": 2, "auto.create.topics.enable": False,
                           "default.replication.factor": 3,
                           "unclean.leader.election.enable": False},
        "topics": [{"name": "orders", "configs": {"min.insync.replicas": 2,
                                                  "unclean.leader.election.enable": False}}],
        "producer": {"acks": "all", "enable.idempotence": True},
    }, tmp_path)
    assert result.findings == ()
    assert result.counts() == {"errors": 0, "warnings": 0, "infos": 0}
    assert [(g.topic, g.producer is None, g.loss_tolerance, g.write_tolerance)
            for g in result.guarantees] == [("orders", True, 1, 1), ("orders", False, 1, 1)]


def test_skipped_topics_are_not_audited(tmp_path: Path) -> None:
    result = run_case({**BROKEN, "policy": {"extends": "durable",
                                            "topics": [{"match": "orders", "skip": True}]}},
                      tmp_path)
    assert _rules(result, "orders") == set()
    assert "orders" not in {g.topic for g in result.guarantees}


def test_disabled_rules_do_not_run_and_are_not_listed(tmp_path: Path) -> None:
    result = run_case({**BROKEN, "policy": {"extends": "durable",
                                            "disable": ["KA101", "topic.inherited-default"]}},
                      tmp_path)
    assert not {"KA101", "KA107"} & {f.rule for f in result.findings}
    assert not {"KA101", "KA107"} & {r.id for r in result.rules}
    assert "KA104" in {r.id for r in result.rules}


def test_waivers_mark_findings_and_expired_waivers_are_findings(tmp_path: Path) -> None:
    policy = {"extends": "durable", "waivers": [
        {"rule": "KA101", "topic": "ord*", "reason": "moving", "expires": "2026-12-31"},
        {"rule": "KA104", "topic": "orders", "reason": "old", "expires": "2026-01-01"},
    ]}
    result = run_case({**BROKEN, "policy": policy, "today": date(2026, 6, 1)}, tmp_path)
    by_rule = {f.rule: f for f in result.findings if f.subject.name == "orders"}
    assert by_rule["KA101"].waived_by is not None and "moving" in by_rule["KA101"].waived_by
    assert by_rule["KA104"].waived_by is None
    expired = [f for f in result.findings if f.rule == "KA001"]
    assert len(expired) == 1 and "KA104" in expired[0].message
    errors = sum(1 for f in result.findings
                 if f.severity == "error" and f.waived_by is None)
    assert result.counts()["errors"] == errors


def test_policy_clients_apply_to_their_topics_only(tmp_path: Path) -> None:
    policy = {"extends": "durable",
              "clients": [{"config": "w.properties", "role": "producer", "topics": ["pay*"]}]}
    result = run_case({**BROKEN, "policy": policy, "files": {"w.properties": "acks=1\n"}},
                      tmp_path)
    pairs = [(g.topic, Path(g.producer).name) for g in result.guarantees if g.producer]
    assert pairs == [("payments", "w.properties")]
    acks = [f for f in result.findings if f.rule == "KA401"]
    assert len(acks) == 1 and acks[0].source == f"{tmp_path}/w.properties:1"


def test_command_line_producers_apply_to_every_audited_topic(tmp_path: Path) -> None:
    result = run_case({**BROKEN, "producer": {"acks": "all"}}, tmp_path)
    assert sorted(g.topic for g in result.guarantees if g.producer) == ["orders", "payments"]
    hollow = [f for f in result.findings if f.rule == "KA409"]
    assert [f.subject.name.split(" -> ")[1] for f in hollow] == ["orders"]
    assert hollow[0].subject.kind is SubjectKind.client


def test_result_carries_policies_and_origin(tmp_path: Path) -> None:
    result = run_case({**BROKEN, "policy": ["durable", "best-effort"]}, tmp_path)
    assert result.policies == ("durable", "best-effort")
    assert result.origin == "live" and result.cluster_id == "test-cluster"
    assert {f.rule for f in result.findings if f.subject.name == "orders"} == {"KA109"}
