"""`kaudit check` reads consumer groups and open transactions on the real lab (KA6xx)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab, run_kaudit
from tests.integration.test_lab import admin, create_topic, delete_records_before, wait_until

pytestmark = pytest.mark.kafka

DAY_MS = 24 * 3600 * 1000


def _policy(tmp_path: Path, topics: list[str], thresholds: str = "{}") -> str:
    """A policy that audits only ``topics``, under durable with ``thresholds`` changed."""
    path = tmp_path / "groups.yaml"
    matches = ", ".join(f'"{t}"' for t in topics)
    path.write_text(f"profiles:\n  audited: {{extends: durable, thresholds: {thresholds}}}\n"
                    f"topics:\n  - match: [{matches}]\n    profile: audited\n"
                    "  - match: \"*\"\n    skip: true\n")
    return str(path)


def _check(lab: Lab, policy: str, *args: str) -> list[dict[str, Any]]:
    result = run_kaudit("check", "-b", lab.bootstrap, "--format", "json", "-p", policy,
                        "--exit-zero", *args)
    assert result.code == 0, result.stderr
    return [f for f in json.loads(result.stdout)["findings"] if f["rule"].startswith("KA6")]


def _produce(lab: Lab, topic: str, count: int, timestamp_ms: int = 0) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    when = {"timestamp": timestamp_ms} if timestamp_ms else {}  # else: now
    for i in range(count):
        producer.produce(topic, str(i).encode(), partition=0, **when)
    assert producer.flush(30) == 0


def _commit(lab: Lab, group: str, topic: str, offset: int) -> None:
    """Commit ``offset`` for ``group``; while the group's coordinator is still being chosen
    or loaded (the first groups of a lab create __consumer_offsets), ask again."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": lab.bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    committed: list[bool] = []

    def commit() -> bool:
        try:
            consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
        except KafkaException as exc:
            if not exc.args[0].retriable():
                raise
            return False
        committed.append(True)
        return True

    try:
        wait_until(commit, 60, f"the commit of {group}")
    finally:
        consumer.close()
    assert committed


@pytest.fixture()
def topic(lab: Lab) -> Iterator[str]:
    name = create_topic(lab, partitions=1, rf=3, **{"retention.ms": str(DAY_MS)})
    yield name
    admin(lab).delete_topics([name])


def test_a_group_below_a_deleted_log_start_is_told_how_many_records_it_lost(
        lab: Lab, topic: str, tmp_path: Path) -> None:
    from confluent_kafka import TopicPartition

    _produce(lab, topic, 100)
    group = f"billing-{uuid.uuid4().hex[:6]}"
    _commit(lab, group, topic, 30)
    policy = _policy(tmp_path, [topic])
    assert _check(lab, policy) == []  # committed, nothing deleted yet, nothing old
    # What retention does to old segments, done at once: everything before offset 80 goes.
    delete_records_before(lab, TopicPartition(topic, 0, 80))
    found = _check(lab, policy)
    assert [(f["rule"], f["subject"]["name"], f["actual"]) for f in found] == [
        ("KA601", f"{group}@{topic}-0", "committed 30 (50 records deleted unread)")]
    # The snapshot carries the groups: the offline audit says the same.
    snap = tmp_path / "snap.json"
    assert run_kaudit("snapshot", "-b", lab.bootstrap, "-o", str(snap)).code == 0
    offline = run_kaudit("check", "--snapshot", str(snap), "--format", "json", "-p", policy,
                         "--exit-zero")
    assert [(f["rule"], f["actual"]) for f in json.loads(offline.stdout)["findings"]
            if f["rule"].startswith("KA6")] == [("KA601", "committed 30 (50 records deleted "
                                                          "unread)")]
    assert _check(lab, policy, "--no-groups") == []


def test_a_group_whose_oldest_unread_record_retention_deletes_soon_is_warned(
        lab: Lab, topic: str, tmp_path: Path) -> None:
    # Records written (by their timestamps) 23 h ago, under a retention of 24 h: the group,
    # at offset 10, loses them in about an hour unless it reads on (the horizon is 6 h).
    _produce(lab, topic, 20, timestamp_ms=int(time.time() * 1000) - 23 * 3600 * 1000)
    group = f"audit-{uuid.uuid4().hex[:6]}"
    _commit(lab, group, topic, 10)
    found = _check(lab, _policy(tmp_path, [topic]))
    assert [(f["rule"], f["subject"]["name"], f["severity"]) for f in found] == [
        ("KA602", f"{group}@{topic}-0", "warning")]
    assert "lags 10 records" in found[0]["message"]
    assert found[0]["actual"] in ("deleted in about 59 min", "deleted in about 1 h")


_HANG = """
import os, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": sys.argv[3],
              "transaction.timeout.ms": 15000})
p.init_transactions(60)
p.begin_transaction()
for i in range(5):
    p.produce(sys.argv[2], b"open", partition=0)
assert p.flush(30) == 0
print("open", flush=True)
os.kill(os.getpid(), 9)  # dies mid-transaction: nobody commits or aborts it
"""


def test_a_transaction_left_open_is_reported_until_kafka_aborts_it(
        lab: Lab, topic: str, tmp_path: Path) -> None:
    _produce(lab, topic, 3)
    proc = subprocess.run([sys.executable, "-c", _HANG, lab.bootstrap, topic,
                           f"hang-{uuid.uuid4().hex[:6]}"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == -signal.SIGKILL and "open" in proc.stdout, proc.stderr
    policy = _policy(tmp_path, [topic], "{max_open_transaction_seconds: 1}")
    seen: list[dict[str, Any]] = []

    def reported() -> bool:
        seen[:] = _check(lab, policy)
        return bool(seen)

    wait_until(reported, 30, "KA603 for the open transaction")
    assert [(f["rule"], f["subject"]["name"]) for f in seen] == [("KA603", f"{topic}-0")]
    assert "last stable offset 3 < high watermark 8" in seen[0]["actual"]
    # transaction.timeout.ms (15 s) later the coordinator aborts it; the report clears.
    wait_until(lambda: not reported(), 120, "the transaction's abort by Kafka")


def test_a_member_without_committed_offsets_is_noted(lab: Lab, topic: str,
                                                     tmp_path: Path) -> None:
    from confluent_kafka import Consumer

    group = f"fresh-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": lab.bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "latest"})
    stop = threading.Event()
    consumer.subscribe([topic])
    wait_until(lambda: bool(consumer.poll(0.2) or consumer.assignment()), 60, "assignment")

    def keep_polling() -> None:  # stays a live member while the check reads the group
        while not stop.is_set():
            consumer.poll(0.2)

    poller = threading.Thread(target=keep_polling)
    poller.start()
    try:
        found = _check(lab, _policy(tmp_path, [topic]))
    finally:
        stop.set()
        poller.join()
        consumer.close()
    assert [(f["rule"], f["subject"]["name"], f["severity"]) for f in found] == [
        ("KA604", f"{group}@{topic}-0", "info")]
