"""Each partition's eligible leader replicas, read with kafka-python (no JVM), against what
Kafka's own TopicCommand prints, in three states: healthy, two followers frozen until the
ISR is the leader alone, and restored. And the reads stay bounded while brokers are frozen.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab, run_kaudit, wait_for
from tests.integration.test_lab import admin, create_topic, wait_until
from tests.kafka_tools import kafka_tool

pytestmark = pytest.mark.kafka

TIMEOUT = 20
"""--timeout of the reads made while brokers are frozen."""
BOUND = TIMEOUT + 5
"""What ``--timeout 20`` promises for the whole command, its Python start and its report
included: the reads end at the deadline, a thread still waiting gets a second of grace."""


def topic_command(lab: Lab, topic: str, bootstrap: str) -> tuple[int | None, list[int],
                                                                   list[int], list[int]]:
    """(leader, ISR, ELR, last known ELR) of partition 0 as `kafka-topics --describe` says."""
    out = kafka_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap,
                     "--describe", "--topic", topic).stdout
    line = next(ln for ln in out.splitlines() if "Partition: 0" in ln)

    def ids(field: str) -> list[int]:
        found = re.search(rf"\b{field}: ([\d,]*)", line)
        assert found, line
        return sorted(int(i) for i in found.group(1).split(",") if i)

    found = re.search(r"Leader: (-?\d+|none)", line)
    assert found, line
    leader = int(found.group(1).replace("none", "-1"))
    return (leader if leader >= 0 else None), ids("Isr"), ids("Elr"), ids("LastKnownElr")


def isr_of(bootstrap: str, topic: str) -> list[int]:
    """Partition 0's ISR, asked through a new client of ``bootstrap`` (the shared one may
    keep asking a frozen broker, each time for its whole timeout)."""
    from confluent_kafka.admin import AdminClient

    client = AdminClient({"bootstrap.servers": bootstrap})
    return sorted(client.list_topics(topic, timeout=5).topics[topic].partitions[0].isrs)


def kaudit_state(snapshot: dict[str, Any], topic: str) -> tuple[int | None, list[int],
                                                                  list[int], list[int]]:
    part = next(t for t in snapshot["topics"] if t["name"] == topic)["partitions"][0]
    return part["leader"], sorted(part["isr"]), sorted(part["elr"]), \
        sorted(part["last_known_elr"])


def snapshot(lab: Lab, tmp_path: Path, *args: str, env: dict[str, str] | None = None
             ) -> tuple[dict[str, Any], float]:
    out = tmp_path / f"snap-{time.monotonic_ns()}.json"
    started = time.monotonic()
    result = run_kaudit("snapshot", "-b", lab.bootstrap, "-o", str(out), *args, env=env)
    took = time.monotonic() - started
    assert result.code == 0, result.stderr
    return json.loads(out.read_text()), took


def agree(lab: Lab, tmp_path: Path, topic: str, bootstrap: str) -> tuple[Any, ...]:
    """kaudit's ELR equals what TopicCommand prints right after it (both asked again while
    they differ: the controller may change the ELR between the two reads)."""
    seen: list[Any] = []

    def same() -> bool:
        try:
            doc, _ = snapshot(lab, tmp_path)
            theirs = topic_command(lab, topic, bootstrap)
            seen.append((kaudit_state(doc, topic), theirs, doc["elr_unread"]))
        except Exception as exc:
            seen.append(repr(exc)[:300])
            raise
        return doc["elr_unread"] is None and kaudit_state(doc, topic) == theirs

    if not wait_for(same, 90):
        raise AssertionError(f"kaudit and TopicCommand disagree on {topic}-0: {seen[-3:]}")
    return seen[-1][1]  # type: ignore[no-any-return]


def test_elr_agrees_with_kafkas_topic_command_healthy_frozen_and_restored(
        lab: Lab, tmp_path: Path, restore_brokers: None) -> None:
    topic = create_topic(lab, partitions=1, rf=3, **{"min.insync.replicas": "2"})
    try:
        leader, isr, elr, last = agree(lab, tmp_path, topic, lab.bootstrap)
        assert (sorted(isr), elr, last) == ([1, 2, 3], [], [])
        assert leader is not None
        followers = [b for b in (1, 2, 3) if b != leader]
        brokers: list[dict[str, Any]] = lab.status()["brokers"]  # type: ignore[assignment]
        address = {b["id"]: f"127.0.0.1:{b['port']}" for b in brokers}
        for broker in followers:
            assert lab.kaudit("kill", str(broker), "--signal", "STOP").code == 0
        # While they are frozen yet still registered: bounded, and what went unanswered said.
        just_frozen = _timed_snapshot(lab, tmp_path)
        wait_until(lambda: isr_of(address[leader], topic) == [leader], 120,
                   f"the ISR of {topic}-0 to shrink to its leader {leader}")
        leader2, isr2, elr2, last2 = agree(lab, tmp_path, topic, address[leader])
        assert (leader2, isr2) == (leader, [leader]) and elr2, (elr2, last2)
        frozen_check = _timed_check(lab, tmp_path)
        found = {f["rule"]: f for f in frozen_check["doc"]["findings"]
                 if f["subject"]["name"] == f"{topic}-0"}
        assert found["KA202"]["actual"].startswith(f"ISR [{leader}], ELR [")
        assert "can still take over without losing acknowledged writes" in \
            found["KA202"]["message"]
        for broker in followers:
            assert lab.kaudit("start", str(broker)).code == 0
        wait_until(lambda: isr_of(lab.bootstrap, topic) == [1, 2, 3], 120, "the full ISR")
        _, isr3, elr3, _ = agree(lab, tmp_path, topic, lab.bootstrap)
        assert (sorted(isr3), elr3) == ([1, 2, 3], [])
        print(f"\nsnapshot --timeout {TIMEOUT}, followers {followers} just frozen: "
              f"{just_frozen['took']:.1f}s (unread: {just_frozen['doc']['unreadable']}); "
              f"check with the ISR down to {leader}: {frozen_check['took']:.1f}s")
    finally:
        admin(lab).delete_topics([topic])


def _timed_check(lab: Lab, tmp_path: Path) -> dict[str, Any]:
    started = time.monotonic()
    result = run_kaudit("check", "-b", lab.bootstrap, "--timeout", str(TIMEOUT), "-f", "json",
                        "--exit-zero", timeout=4 * TIMEOUT)
    took = time.monotonic() - started
    assert result.code == 0, result.stderr
    doc = json.loads(result.stdout)
    # Within the bound; the features come from the broker that answers.
    assert took < BOUND, f"check took {took:.1f}s with --timeout {TIMEOUT}"
    assert doc["features"] is not None, doc["features_unread"]
    return {"doc": doc, "took": took}


def _timed_snapshot(lab: Lab, tmp_path: Path) -> dict[str, Any]:
    doc, took = snapshot(lab, tmp_path, "--timeout", str(TIMEOUT))
    assert took < BOUND, f"snapshot took {took:.1f}s with --timeout {TIMEOUT}"
    assert doc["features"] is not None, doc["features_unread"]
    assert doc["elr_unread"] is None
    # Every registered broker's configs are read, or said to be unanswered: never guessed.
    for broker in doc["brokers"]:
        if str(broker["id"]) not in doc["broker_configs"]:
            assert f"configs of broker {broker['id']}: no answer within {TIMEOUT}s" \
                in doc["unreadable"], doc["unreadable"]
    return {"doc": doc, "took": took}


def test_a_snapshot_without_java_on_path_has_the_features_and_elr(
        lab: Lab, tmp_path: Path) -> None:
    python_only = str(Path(sys.executable).parent)
    assert shutil.which("java", path=python_only) is None
    doc, _ = snapshot(lab, tmp_path, env={"PATH": python_only,
                                          "JAVA_HOME": str(tmp_path / "no-java")})
    assert doc["features"]["metadata.version"].startswith("4.3"), doc["features_unread"]
    assert doc["features"]["eligible.leader.replicas.version"] == "1"
    assert doc["elr_unread"] is None
    assert all(p["elr"] is not None for t in doc["topics"] for p in t["partitions"])
