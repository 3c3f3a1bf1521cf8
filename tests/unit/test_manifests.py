"""Checking topic definitions before they are applied: manifests, snapshots, the hook."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from kaudit.cluster.manifests import load_manifests, load_snapshot_file
from kaudit.cluster.model import ConfigSource
from kaudit.errors import FileInputError, InputError
from tests.conftest import run_in_process

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "data" / "manifests" / "topics.yaml"


def test_kafkatopics_are_read_and_other_kinds_skipped() -> None:
    snap = load_manifests([str(SAMPLE)])
    assert (snap.live, snap.origin) == (False, "manifests")
    orders, payments = snap.topics
    assert (orders.name, orders.partition_count, orders.replication_factor) == ("orders", 12, 3)
    assert payments.name == "payments"  # spec.topicName wins over metadata.name
    assert payments.config("unclean.leader.election.enable").value == "true"  # type: ignore
    assert payments.config("min.insync.replicas").source is ConfigSource.MANIFEST  # type: ignore
    assert payments.declared_at == f"{SAMPLE}:19"


def test_directories_are_walked(tmp_path: Path) -> None:
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "t.yml").write_text(SAMPLE.read_text())
    assert [t.name for t in load_manifests([str(tmp_path)]).topics] == ["orders", "payments"]


@pytest.mark.parametrize("body,line,message", [
    ("kind: KafkaTopic\nmetadata: {name: x}\nspec:\n  partitions: 3\n", 4, "no spec.replicas"),
    ("kind: KafkaTopic\nmetadata: {name: x}\nspec:\n  partitions: three\n  replicas: 3\n",
     4, "spec.partitions must be an integer"),
    ("kind: KafkaTopic\nmetadata: {name: x}\nspec:\n  partitions: 3\n  replicas: 3\n"
     "  confg: {}\n", 6, "did you mean 'config'"),
    ("kind: KafkaTopic\nmetadata: {name: x}\nspec: [\n", 4, "invalid YAML"),
])
def test_bad_manifests_name_file_and_line(tmp_path: Path, body: str, line: int,
                                          message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(body)
    with pytest.raises(FileInputError) as err:
        load_manifests([str(path)])
    assert err.value.line == line, str(err.value)
    assert message in str(err.value)


def test_duplicate_topic_across_files(tmp_path: Path) -> None:
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text(SAMPLE.read_text())
    with pytest.raises(FileInputError, match="declared twice"):
        load_manifests([str(tmp_path)])


def test_no_topics_is_an_error_unless_allowed(tmp_path: Path) -> None:
    path = tmp_path / "other.yaml"
    path.write_text("a: b\n")
    with pytest.raises(InputError, match="no KafkaTopic"):
        load_manifests([str(path)])
    assert load_manifests([str(path)], allow_empty=True).topics == ()
    with pytest.raises(InputError, match="no such file"):
        load_manifests([str(tmp_path / "missing")])


def test_check_manifests_reports_at_the_manifest_line() -> None:
    result = run_in_process("check", "--manifests", str(SAMPLE), "--format", "json")
    assert result.code == 1, result.stderr
    doc = json.loads(result.stdout)
    assert doc["origin"] == "manifests"
    payments = {f["rule"] for f in doc["findings"] if f["subject"]["name"] == "payments"}
    assert {"KA101", "KA104", "KA108"} <= payments
    # Each at the line of its setting: spec.replicas, min.insync.replicas, unclean election.
    lines = {f["rule"]: f["source"] for f in doc["findings"]
             if f["subject"]["name"] == "payments"}
    assert (lines["KA101"], lines["KA104"], lines["KA108"]) == (
        f"{SAMPLE}:26", f"{SAMPLE}:28", f"{SAMPLE}:29")
    assert not [f for f in doc["findings"] if f["subject"]["name"] == "orders"]


def test_snapshot_file_is_checked_offline_and_bad_ones_rejected(tmp_path: Path) -> None:
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"schema": "kaudit.snapshot/v1", "taken_at": "2026-01-01",
                                "brokers": [], "broker_configs": {}, "topics": [
                                    {"name": "t", "internal": False, "partition_count": 1,
                                     "replication_factor": 1, "configs": {},
                                     "partitions": []}]}))
    result = run_in_process("check", "--snapshot", str(snap), "-f", "json")
    assert result.code == 1 and json.loads(result.stdout)["origin"] == f"snapshot:{snap}"
    snap.write_text('{"schema": "other"}')
    bad = run_in_process("check", "--snapshot", str(snap))
    assert bad.code == 2 and "not a kaudit snapshot" in bad.stderr
    snap.write_text("{\n  nope")
    assert f"{snap}:2:" in run_in_process("check", "--snapshot", str(snap)).stderr


@pytest.mark.parametrize("document,kind", [("[]", "an array"), ('"x"', "a string"),
                                           ("null", "null"), ("3", "a number")])
def test_a_snapshot_that_is_not_an_object_says_what_it_is(tmp_path: Path, document: str,
                                                          kind: str) -> None:
    # It said "'list' object has no attribute 'get'".
    snap = tmp_path / "snap.json"
    snap.write_text(document)
    with pytest.raises(FileInputError, match=f"not a kaudit snapshot: the document is {kind}, "
                                             "not an object"):
        load_snapshot_file(str(snap))


def test_pre_commit_hook_entry_runs_as_pre_commit_would(tmp_path: Path) -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "kaudit-check")
    entry = shlex.split(hook["entry"])
    assert entry[0] == "kaudit"
    unrelated = tmp_path / "values.yaml"
    unrelated.write_text("replicaCount: 2\n")
    # pre-commit appends the staged files' names to the entry
    failing = run_in_process(*entry[1:], str(unrelated), str(SAMPLE))
    assert failing.code == 1 and "payments" in failing.stdout
    passing = run_in_process(*entry[1:], str(unrelated))
    assert passing.code == 0, passing.stderr


def test_a_report_written_to_a_file_says_its_verdict_and_where_on_stderr(
        tmp_path: Path) -> None:
    target = tmp_path / "check.txt"
    result = run_in_process("check", "--manifests", str(SAMPLE), "-o", str(target))
    assert result.code == 1 and result.stdout == ""
    assert target.read_text(encoding="utf-8").strip()
    line, = result.stderr.strip().splitlines()
    assert line.startswith("kaudit check: ") and line.endswith(f"; report written to {target}")
    assert "error" in line  # the verdict: how many errors, warnings, infos


def test_a_report_on_stdout_adds_nothing_on_stderr() -> None:
    result = run_in_process("check", "--manifests", str(SAMPLE))
    assert result.code == 1 and "report written" not in result.stderr


def test_each_setting_keeps_its_own_manifest_line() -> None:
    # Findings land on the key to change; a setting left out is missing at metadata.name.
    payments = load_manifests([str(SAMPLE)]).topics[1]
    assert dict(payments.settings_at) == {
        "name": f"{SAMPLE}:22", "partition_count": f"{SAMPLE}:25",
        "replication_factor": f"{SAMPLE}:26", "min.insync.replicas": f"{SAMPLE}:28",
        "unclean.leader.election.enable": f"{SAMPLE}:29"}
    assert payments.setting_at("retention.ms") == f"{SAMPLE}:22"
    assert payments.declared_at == f"{SAMPLE}:19"  # the topic itself: its document
