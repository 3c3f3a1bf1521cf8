"""Findings about Strimzi manifests: on the line of the setting at fault, in the words of
an offline check (kaudit cannot know the cluster's defaults)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

from kaudit_rule_cases import run_case

from kaudit.check.policy.loader import load_policies
from kaudit.check.rules import get_rule
from kaudit.check.rules.registry import TopicCheck, TopicContext
from kaudit.cluster.manifests import load_manifests
from tests.conftest import run_in_process

MULTI = Path(__file__).resolve().parents[2] / "data" / "manifests" / "strimzi-multi.yaml"

# Where each finding belongs in strimzi-multi.yaml: the key to change, or metadata.name
# (line 4) for a setting audit-log leaves out. Before, every finding sat on its document's
# first line: 1 for audit-log, 10 for payments.
LINES = {
    ("KA101", "audit-log"): 8,   # spec.replicas: 1
    ("KA104", "audit-log"): 4,   # no min.insync.replicas: metadata.name
    ("KA105", "audit-log"): 4,   # RF 1 with min.insync.replicas (missing) 1
    ("KA107", "audit-log"): 4,   # neither durability config set
    ("KA105", "payments"): 18,   # spec.config.min.insync.replicas: 3
    ("KA108", "payments"): 19,   # spec.config.unclean.leader.election.enable: true
}


def test_the_fixture_has_its_settings_on_the_lines_the_tests_expect() -> None:
    lines = MULTI.read_text(encoding="utf-8").splitlines()
    assert lines[4 - 1].strip() == "name: audit-log"
    assert lines[8 - 1].strip() == "replicas: 1"
    assert lines[10 - 1].startswith("apiVersion:")
    assert lines[18 - 1].strip() == "min.insync.replicas: 3"
    assert lines[19 - 1].strip() == "unclean.leader.election.enable: true"


def test_rules_name_the_line_of_the_setting_at_fault() -> None:
    snap = load_manifests([str(MULTI)])
    profile = load_policies(["durable"]).default_profile
    found = {}
    for topic in snap.topics:
        for rule_id in ("KA101", "KA104", "KA105", "KA107", "KA108"):
            rule = get_rule(rule_id)
            assert rule is not None
            check = cast(TopicCheck, rule.check)
            for v in check(topic, TopicContext(snap, profile)):
                found[(rule_id, topic.name)] = v.declared_at
    assert found == {key: f"{MULTI}:{line}" for key, line in LINES.items()}


def test_live_topics_carry_no_manifest_line(tmp_path: Path) -> None:
    result = run_case({"topics": [{"name": "orders", "replication_factor": 1}]}, tmp_path)
    sources = {f.rule: f.source for f in result.findings}
    assert sources["KA101"] == "replication factor"
    assert sources["KA104"] == "DEFAULT_CONFIG"


def _check(fmt: str) -> str:
    result = run_in_process("check", "--manifests", str(MULTI), "--format", fmt)
    assert result.code == 1, result.stderr
    return result.stdout


def _expected() -> list[tuple[str, str, int]]:
    # KA107 fires twice for audit-log (min.insync.replicas and unclean election).
    return sorted([(rule, topic, line) for (rule, topic), line in LINES.items()]
                  + [("KA107", "audit-log", 4)])


def test_json_findings_point_at_the_setting_line() -> None:
    doc = json.loads(_check("json"))
    got = sorted((f["rule"], f["subject"]["name"], int(f["source"].rpartition(":")[2]))
                 for f in doc["findings"])
    assert all(f["source"].startswith(f"{MULTI}:") for f in doc["findings"])
    assert got == _expected()


def test_github_annotations_point_at_the_setting_line() -> None:
    pattern = re.compile(r"^::(?:error|warning|notice) file=(?P<file>[^,]+),line=(?P<line>\d+),"
                         r"title=(?P<rule>KA\d+) [^:]+::topic (?P<topic>[^:]+):")
    got = []
    for line in _check("github").splitlines()[:-1]:  # the last line is the summary
        m = pattern.match(line)
        assert m, line
        assert m["file"] == str(MULTI).replace(":", "%3A").replace(",", "%2C")
        got.append((m["rule"], m["topic"], int(m["line"])))
    assert sorted(got) == _expected()


def test_sarif_regions_start_at_the_setting_line() -> None:
    results: list[dict[str, Any]] = json.loads(_check("sarif"))["runs"][0]["results"]
    got = []
    for item in results:
        location = item["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"].endswith("/strimzi-multi.yaml")
        topic = item["message"]["text"].split(":", 1)[0].removeprefix("topic ")
        got.append((item["ruleId"], topic, location["region"]["startLine"]))
    assert sorted(got) == _expected()


# --- offline wording: the manifest does not set it, the cluster's default applies --------

def test_an_unset_min_isr_in_a_manifest_is_the_clusters_default_as_kaudit_assumes() -> None:
    doc = json.loads(_check("json"))
    messages = {(f["rule"], f["subject"]["name"]): f["message"] for f in doc["findings"]}
    assert ("(not set in the manifest: the cluster's default applies; kaudit assumes 1, "
            "Kafka's built-in default)") in messages[("KA104", "audit-log")]
    inherited = [f for f in doc["findings"] if f["rule"] == "KA107"]
    assert [f["message"] for f in inherited] == [
        "Topic audit-log does not set min.insync.replicas in its manifest: the cluster's "
        "default applies (kaudit assumes 1, Kafka's built-in default).",
        "Topic audit-log does not set unclean.leader.election.enable in its manifest: the "
        "cluster's default applies (kaudit assumes false, Kafka's built-in default).",
    ]
    assert {f["expected"] for f in inherited} == {"set in the manifest (spec.config)"}
    assert not any("built-in default" in f["message"] and "inherited" in f["message"]
                   for f in doc["findings"])


def test_a_live_cluster_keeps_its_wording(tmp_path: Path) -> None:
    result = run_case({"topics": [{"name": "orders"}]}, tmp_path)
    messages = {f.message for f in result.findings if f.rule in ("KA104", "KA107")}
    assert messages and all("inherited from Kafka's built-in default" in m for m in messages)
    assert not any("manifest" in m for m in messages)


def test_a_manifest_checked_against_brokers_that_report_the_value_keeps_its_wording(
        tmp_path: Path) -> None:
    # The brokers' own value is known then (a snapshot file next to the manifests).
    result = run_case({"live": False, "broker_configs": {"min.insync.replicas": 1},
                       "topics": [{"name": "orders"}]}, tmp_path)
    ka104, = (f for f in result.findings if f.rule == "KA104")
    assert "(inherited from the brokers' server.properties)" in ka104.message
