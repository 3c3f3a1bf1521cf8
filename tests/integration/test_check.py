"""`kaudit check` against the real lab: broken topics are found, clean ones are not."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab, run_kaudit
from tests.integration.test_lab import admin, partitions_of, wait_until

pytestmark = pytest.mark.kafka

# Each broken topic and the one durability rule it must trip (under `durable`).
BROKEN: dict[str, tuple[int, dict[str, str], str]] = {
    "rf1": (1, {"min.insync.replicas": "1", "unclean.leader.election.enable": "false"},
            "KA101"),
    "minisr1": (3, {"min.insync.replicas": "1", "unclean.leader.election.enable": "false"},
                "KA104"),
    "minisr-eq-rf": (3, {"min.insync.replicas": "3", "unclean.leader.election.enable": "false"},
                     "KA105"),
    "minisr-gt-rf": (3, {"min.insync.replicas": "4", "unclean.leader.election.enable": "false"},
                     "KA106"),
    "unclean": (3, {"min.insync.replicas": "2", "unclean.leader.election.enable": "true"},
                "KA108"),
    "inherited": (3, {"unclean.leader.election.enable": "false"}, "KA104"),
}
CLEAN = (3, {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"})


@pytest.fixture(scope="module")
def topics(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Create the broken and clean topics, and a policy that audits only them."""
    from confluent_kafka.admin import NewTopic

    prefix = f"chk-{uuid.uuid4().hex[:6]}"
    specs = {**BROKEN, "clean": (*CLEAN, "")}
    new = [NewTopic(f"{prefix}-{key}", 2, rf, config=config)
           for key, (rf, config, _) in specs.items()]
    for fut in admin(lab).create_topics(new).values():
        fut.result(timeout=30)
    for topic in new:
        wait_until(lambda t=topic.topic: all(p.leader >= 0 for p in partitions_of(lab, t)),
                   30, f"leaders of {topic.topic}")
    policy = tmp_path_factory.mktemp("policy") / "only-these.yaml"
    policy.write_text(f"extends: durable\ntopics:\n  - match: \"{prefix}-*\"\n"
                      "    profile: durable\n  - match: \"*\"\n    skip: true\n")
    yield {"prefix": prefix, "policy": str(policy)}
    admin(lab).delete_topics([t.topic for t in new])


def check_json(lab: Lab, *args: str) -> tuple[int, dict[str, Any], str]:
    result = run_kaudit("check", "-b", lab.bootstrap, "--format", "json", *args)
    return result.code, json.loads(result.stdout) if result.stdout else {}, result.stderr


def topic_findings(doc: dict[str, Any], topic: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"]
            if f["subject"]["name"] == topic or f["subject"]["name"].startswith(f"{topic}-")]


def test_durable_finds_every_broken_topic_and_nothing_on_the_clean_one(
        lab: Lab, topics: dict[str, Any]) -> None:
    code, doc, stderr = check_json(lab, "--policy", topics["policy"])
    assert code == 1, stderr
    assert doc["schema"] == "kaudit.check/v1"
    prefix = topics["prefix"]
    for key, (_, _, rule) in BROKEN.items():
        rules = {f["rule"] for f in topic_findings(doc, f"{prefix}-{key}")
                 if f["severity"] == "error"}
        assert rule in rules, f"{key}: expected {rule}, got {rules}"
    assert topic_findings(doc, f"{prefix}-clean") == []
    assert doc["summary"]["errors"] >= len(BROKEN)


def test_findings_explain_expected_actual_and_source(lab: Lab, topics: dict[str, Any]) -> None:
    _, doc, _ = check_json(lab, "--policy", topics["policy"])
    prefix = topics["prefix"]
    inherited = next(f for f in topic_findings(doc, f"{prefix}-inherited") if f["rule"] == "KA104")
    # KRaft records the cluster's min.insync.replicas as a dynamic cluster-wide default.
    assert (inherited["expected"], inherited["actual"]) == (">= 2", "1")
    assert inherited["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    own = next(f for f in topic_findings(doc, f"{prefix}-minisr1") if f["rule"] == "KA104")
    assert own["source"] == "DYNAMIC_TOPIC_CONFIG"
    unclean = next(f for f in topic_findings(doc, f"{prefix}-unclean") if f["rule"] == "KA108")
    assert (unclean["actual"], unclean["source"]) == ("true", "DYNAMIC_TOPIC_CONFIG")


def test_guarantees_follow_the_settings(lab: Lab, topics: dict[str, Any]) -> None:
    _, doc, _ = check_json(lab, "--policy", topics["policy"])
    prefix = topics["prefix"]
    by_topic = {g["topic"]: g for g in doc["guarantees"] if g["producer"] is None}
    expected = {  # (loss_tolerance, write_tolerance), check/guarantees.py
        "clean": (1, 1), "minisr1": (0, 2), "minisr-eq-rf": (2, 0), "unclean": (0, 1),
        "rf1": (0, 0), "inherited": (0, 2),
    }
    for key, tolerances in expected.items():
        g = by_topic[f"{prefix}-{key}"]
        assert (g["loss_tolerance"], g["write_tolerance"]) == tolerances, key
    # min.insync.replicas=4 > RF=3: the lab's Kafka (4.3) enforces min(4, 3) = 3.
    capped = by_topic[f"{prefix}-minisr-gt-rf"]
    assert (capped["loss_tolerance"], capped["write_tolerance"]) == (2, 0)
    assert "the brokers enforce min(min.insync.replicas, RF)=3 (Kafka 3.7+)" in capped["reasons"]


def test_min_isr_above_rf_is_judged_as_the_brokers_enforce_it(
        lab: Lab, tmp_path: Path) -> None:
    """What KA106 says is what the lab does: an RF=2 topic with min.insync.replicas=3
    takes acks=all writes while both replicas are in sync."""
    from tests.integration.test_lab import create_topic, produce

    topic = create_topic(lab, partitions=1, rf=2, **{"min.insync.replicas": "3"})
    try:
        acked, errors = produce(lab, topic, 5, acks="all")
        assert (acked, errors) == (5, [])
        policy = tmp_path / "one.yaml"
        policy.write_text(f'topics:\n  - match: "{topic}"\n    profile: durable\n'
                          '  - match: "*"\n    skip: true\n')
        _, doc, stderr = check_json(lab, "--policy", str(policy))
        found = {f["rule"]: f for f in doc["findings"] if f["subject"]["name"] == topic}
        assert "brokers enforce min.insync.replicas=2" in found["KA106"]["message"], stderr
        assert "older than 3.7" not in found["KA106"]["message"]  # the version was read
        assert not any(f["rule"] in ("KA202", "KA308", "KA309") for f in doc["findings"])
        guarantee = next(g for g in doc["guarantees"] if g["topic"] == topic)
        assert (guarantee["write_tolerance"], guarantee["semantics"]) == (0, "exactly-once")
    finally:
        admin(lab).delete_topics([topic])


def test_the_labs_features_are_read(lab: Lab, tmp_path: Path) -> None:
    snap = tmp_path / "snap.json"
    result = run_kaudit("snapshot", "-b", lab.bootstrap, "-o", str(snap))
    assert result.code == 0, result.stderr
    doc = json.loads(snap.read_text())
    features = doc["features"]
    assert features["metadata.version"].startswith("4.3")
    # A new 4.3 cluster runs ELR and KIP-890 transactions.
    assert (features["eligible.leader.replicas.version"], features["transaction.version"]) \
        == ("1", "2")
    assert not any("features" in u for u in doc["unreadable"])


def test_acks_1_producer_loses_the_guarantee(lab: Lab, topics: dict[str, Any],
                                             tmp_path: Path) -> None:
    producer = tmp_path / "producer.properties"
    producer.write_text("acks=1\nenable.idempotence=false\n")
    code, doc, _ = check_json(lab, "--policy", topics["policy"],
                              "--producer-config", str(producer))
    assert code == 1
    clean = f"{topics['prefix']}-clean"
    pair = next(g for g in doc["guarantees"] if g["topic"] == clean and g["producer"])
    assert pair["loss_tolerance"] == 0
    assert any(f["rule"] == "KA401" and f["source"].startswith(str(producer))
               for f in doc["findings"])


def test_killed_broker_shows_live_state_findings(lab: Lab, topics: dict[str, Any],
                                                 restore_brokers: None) -> None:
    prefix = topics["prefix"]
    assert lab.kaudit("kill", "3").code == 0
    clean = f"{prefix}-clean"
    wait_until(lambda: all(3 not in p.isrs for p in partitions_of(lab, clean)
                           if 3 in p.replicas), 60, "broker 3 to leave the ISR")
    _, doc, _ = check_json(lab, "--policy", topics["policy"])
    clean_rules = {f["rule"] for f in topic_findings(doc, clean)}
    # RF=3, min.isr=2, one replica gone: under-replicated and one failure from blocked writes.
    assert {"KA201", "KA203"} <= clean_rules
    assert "KA202" not in clean_rules
    eq_rules = {f["rule"] for f in topic_findings(doc, f"{prefix}-minisr-eq-rf")}
    assert "KA202" in eq_rules  # min.isr=3 with two in sync: writes are blocked now
    assert any(f["rule"] == "KA205" for f in doc["findings"])  # replicas on broker 3


def test_snapshot_then_offline_check_agrees_with_live(lab: Lab, topics: dict[str, Any],
                                                      tmp_path: Path) -> None:
    snap = tmp_path / "snap.json"
    taken = run_kaudit("snapshot", "-b", lab.bootstrap, "-o", str(snap))
    assert taken.code == 0, taken.stderr
    assert json.loads(snap.read_text())["schema"] == "kaudit.snapshot/v1"
    offline = run_kaudit("check", "--snapshot", str(snap), "--policy", topics["policy"],
                         "-f", "json")
    live = run_kaudit("check", "-b", lab.bootstrap, "--policy", topics["policy"], "-f", "json")
    def rules(out: str) -> set[tuple[str, str]]:
        return {(f["rule"], f["subject"]["name"]) for f in json.loads(out)["findings"]
                if f["subject"]["name"].startswith(topics["prefix"])}
    assert offline.code == live.code == 1
    assert rules(offline.stdout) == rules(live.stdout)


def test_broken_policy_is_exit_2_naming_the_line(lab: Lab, tmp_path: Path) -> None:
    policy = tmp_path / "bad.yaml"
    policy.write_text("extends: durable\nthresholds:\n  min_replication_factr: 3\n")
    result = run_kaudit("check", "-b", lab.bootstrap, "--policy", str(policy))
    assert result.code == 2
    assert f"{policy}:3:" in result.stderr and "min_replication_factor" in result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr


def test_unreachable_cluster_is_exit_3() -> None:
    result = run_kaudit("check", "-b", "127.0.0.1:1", "--timeout", "2")
    assert result.code == 3 and "cannot reach Kafka" in result.stderr


@pytest.mark.parametrize("fmt", ["junit", "sarif", "github", "table"])
def test_every_format_renders_a_live_audit(lab: Lab, topics: dict[str, Any], fmt: str) -> None:
    result = run_kaudit("check", "-b", lab.bootstrap, "--policy", topics["policy"],
                        "--format", fmt)
    assert result.code == 1, result.stderr
    assert f"{topics['prefix']}-rf1" in result.stdout


def test_fail_on_and_exit_zero(lab: Lab, topics: dict[str, Any]) -> None:
    assert run_kaudit("check", "-b", lab.bootstrap, "--policy", topics["policy"],
                      "--exit-zero", "-f", "json").code == 0
