"""`kaudit probe` against the real lab: every message accounted for, faults included."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab, run_kaudit
from tests.integration.test_lab import admin, create_topic, produce, restore_brokers

pytestmark = pytest.mark.kafka
__all__ = ["restore_brokers"]


def probe(lab: Lab, *args: str, timeout: float = 300) -> tuple[int, dict[str, Any], str]:
    result = run_kaudit("probe", "-b", lab.bootstrap, "--format", "json", *args,
                        timeout=timeout)
    doc = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.code, doc, result.stderr


def topic_exists(lab: Lab, name: str) -> bool:
    return name in admin(lab).list_topics(timeout=10).topics


def test_clean_run_accounts_for_every_message(lab: Lab) -> None:
    code, doc, stderr = probe(lab, "--count", "20000", "--expect", "exactly-once")
    assert code == 0, stderr
    assert doc["schema"] == "kaudit.probe/v1"
    assert (doc["sent"], doc["acked"], doc["failed"], doc["indeterminate"]) == (20000, 20000, 0, 0)
    for cls in ("lost", "duplicated", "reordered", "aborted_visible", "inconsistent_offsets"):
        assert doc[cls] == 0, cls
    assert doc["verdict"] == "pass" and doc["drain_complete"]
    assert sum(p["acked"] for p in doc["partitions"]) == 20000
    assert doc["latency_ms"]["p50"] is not None and doc["latency_ms"]["max"] >= doc[
        "latency_ms"]["p50"]
    assert doc["topic_deleted"] and not topic_exists(lab, doc["topic"])


def test_leader_kill_with_min_isr_2_loses_nothing(lab: Lab, restore_brokers: None) -> None:
    code, doc, stderr = probe(
        lab, "--count", "30000", "--rate", "3000", "--acks", "all", "--min-insync-replicas", "2",
        "--no-unclean-leader-election", "--fault", "kill-leader", "--fault-at", "30%",
        "--fault-duration", "4", "--lab-state-dir", lab.state_dir, "--expect", "at-least-once")
    assert code == 0, stderr + json.dumps(doc.get("violations"))
    assert doc["lost"] == 0 and doc["sent"] == 30000
    kinds = [e["kind"] for e in doc["events"]]
    assert "fault" in kinds and "heal" in kinds, (doc["notes"], doc["events"])
    assert "leader-change" in kinds  # the kill moved leadership, and the report shows it
    fault = next(e for e in doc["events"] if e["kind"] == "fault")
    assert fault["detail"].startswith("SIGKILL leader")


def test_records_deleted_behind_the_probes_back_are_lost(lab: Lab, tmp_path: Path) -> None:
    topic = f"probe-del-{uuid.uuid4().hex[:8]}"
    script = tmp_path / "delete_records.py"
    script.write_text(
        "import sys\n"
        "from confluent_kafka import TopicPartition\n"
        "from confluent_kafka.admin import AdminClient\n"
        "bootstrap, topic = sys.argv[1:3]\n"
        "admin = AdminClient({'bootstrap.servers': bootstrap})\n"
        "tp = TopicPartition(topic, 0, -1)  # -1: up to the high watermark\n"
        "admin.delete_records([tp])[tp].result(30)\n")
    code, doc, _ = probe(
        lab, "--topic", topic, "--partitions", "1", "--count", "20000", "--rate", "4000",
        "--fault", f"exec:'{sys.executable} {script} {lab.bootstrap} {topic}'",
        "--fault-at", "50%", "--fault-duration", "0", "--expect", "at-least-once")
    assert code == 1
    assert doc["lost"] > 0 and doc["lost"] < 20000
    assert doc["acked"] == 20000  # every write was acknowledged; the log lost them later
    assert any(v.startswith("lost:") for v in doc["violations"])
    assert doc["samples"]["lost"][0]["partition"] == 0
    assert any(e["kind"] == "fault" and "exec" in e["detail"] for e in doc["events"])


def test_transactions_with_aborts_hide_aborted_messages(lab: Lab) -> None:
    code, doc, stderr = probe(lab, "--transactional", "--count", "6000", "--txn-size", "200",
                              "--abort-ratio", "0.25", "--expect", "exactly-once")
    assert code == 0, stderr + json.dumps(doc.get("violations"))
    assert doc["aborted"] > 0
    assert doc["aborted_visible"] == 0 and doc["lost"] == 0 and doc["duplicated"] == 0


def test_existing_topic_is_probed_without_mixing_up_other_data(lab: Lab) -> None:
    topic = create_topic(lab, partitions=2, rf=3, **{"min.insync.replicas": "2"})
    assert produce(lab, topic, 500)[0] == 500  # someone else's data
    code, doc, stderr = probe(lab, "--topic", topic, "--existing", "--count", "3000")
    assert code == 0, stderr
    assert doc["sent"] == doc["acked"] == 3000 and doc["lost"] == 0 and doc["unexpected"] == 0
    assert topic_exists(lab, topic)  # an existing topic is never deleted


def test_existing_topic_is_not_reused_without_existing(lab: Lab) -> None:
    topic = create_topic(lab, partitions=1, rf=1)
    code, _, stderr = probe(lab, "--topic", topic, "--count", "10")
    assert code == 2 and "--existing" in stderr


def test_missing_topic_with_existing_and_bad_options(lab: Lab) -> None:
    name = f"nope-{uuid.uuid4().hex[:8]}"
    code, _, stderr = probe(lab, "--topic", name, "--existing", "--count", "10")
    assert code == 2 and "does not exist" in stderr
    assert not topic_exists(lab, name)  # looking must not auto-create it
    assert probe(lab, "--fault", "kill-everything")[0] == 2
    assert probe(lab, "--fault-at", "soon", "--fault", "kill-leader")[0] == 2
    assert probe(lab, "--count", "5", "--duration", "5")[0] == 2


def test_unreachable_cluster_is_exit_3() -> None:
    result = run_kaudit("probe", "-b", "127.0.0.1:1", "--timeout", "2", "--count", "10")
    assert result.code == 3 and "cannot reach Kafka" in result.stderr


def test_ctrl_c_still_verifies_reports_cleans_up_and_exits_130(lab: Lab) -> None:
    import os
    import signal
    import subprocess
    import time

    env = {k: v for k, v in os.environ.items() if not k.startswith("KAUDIT_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kaudit", "probe", "-b", lab.bootstrap, "--duration", "60",
         "--rate", "2000", "--format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(6)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    doc = json.loads(stdout)
    assert doc["interrupted"] and doc["sent"] > 0 and doc["lost"] == 0
    assert doc["sent"] == doc["acked"] + doc["failed"] + doc["indeterminate"]
    assert doc["topic_deleted"] and not topic_exists(lab, doc["topic"])


def test_matrix_shows_losses_and_duplicates_from_real_runs(lab: Lab,
                                                           restore_brokers: None) -> None:
    def matrix(*args: str) -> dict[tuple[str, bool, str], dict[str, Any]]:
        result = run_kaudit("probe", "matrix", "-b", lab.bootstrap, "--lab-state-dir",
                            lab.state_dir, "--format", "json", *args, timeout=900)
        assert result.code == 0, result.stderr
        return {(r["acks"], r["idempotence"], r["fault"]): r
                for r in json.loads(result.stdout)["rows"]}

    # acks=1 under a hard leader kill can lose acknowledged writes: whether it does
    # depends on how far the followers lag at that instant, so three trials.
    risky = matrix("--acks", "1", "--idempotence", "off", "--fault", "kill-leader",
                   "--trials", "3", "--count", "100000", "--message-size", "512")
    assert risky[("1", False, "kill-leader")]["lost"] > 0
    # acks=all + min.insync.replicas=2 loses nothing; a frozen follower makes acks=all
    # requests time out, and only without idempotence do the retries duplicate.
    rows = matrix("--acks", "all", "--idempotence", "off,on", "--min-insync-replicas", "2",
                  "--fault", "kill-leader,pause-follower", "--count", "40000")
    assert len(rows) == 4
    assert all(r["lost"] == 0 for r in rows.values())
    assert rows[("all", False, "pause-follower")]["duplicated"] > 0
    assert rows[("all", True, "pause-follower")]["duplicated"] == 0
    assert rows[("all", True, "kill-leader")]["duplicated"] == 0
