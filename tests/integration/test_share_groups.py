"""Share groups (KIP-932) on the lab: kaudit's share consumer (``new_share_consumer``) is a
member of a real share group, gets every record once with the delivery count the broker
keeps, and its acknowledgements are committed per partition; ``check`` and ``snapshot``
say of share groups what Kafka's own ShareGroupCommand says, and the KA61x rules fail on
a group set up to break each and pass on one that breaks none."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from kaudit.cluster import share_admin
from kaudit.cluster.client import AdminSession, new_share_consumer
from kaudit.cluster.model import Broker
from kaudit.cluster.protocol_share import read_share_groups
from kaudit.connection.settings import ConnectionSettings
from kaudit.waiting import Deadline
from tests.conftest import Lab, run_kaudit, wait_for
from tests.integration.test_lab import admin
from tests.kafka_tools import kafka_tool

pytestmark = pytest.mark.kafka

N = 30
TWO_HOURS_MS = 2 * 3600 * 1000


def set_group_configs(lab: Lab, group: str, **configs: str) -> None:
    """Set group configs (``share_auto_offset_reset`` is ``share.auto.offset.reset``), and
    wait until the brokers describe them (kaudit's own way, as its runs do)."""
    share_admin.set_group_configs(AdminSession(ConnectionSettings(lab.bootstrap)), group,
                                  {name.replace("_", "."): v for name, v in configs.items()})


def from_earliest(lab: Lab, group: str) -> None:
    """The group reads from the log's start: a share group's default is ``latest``."""
    set_group_configs(lab, group, share_auto_offset_reset="earliest")


def test_a_share_consumer_gets_every_record_once_and_its_acceptances_commit(lab: Lab) -> None:
    from confluent_kafka import AcknowledgeType, Producer
    from confluent_kafka.admin import NewTopic

    topic, group = f"share-{uuid.uuid4().hex[:8]}", f"kaudit-test-share-{uuid.uuid4().hex[:8]}"
    admin(lab).create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for i in range(N):
        producer.produce(topic, key=str(i), value=str(i))
    assert producer.flush(30) == 0
    from_earliest(lab, group)
    consumer = new_share_consumer(ConnectionSettings(lab.bootstrap), group)
    try:
        consumer.subscribe([topic])
        seen: dict[int, int] = {}
        deadline = time.monotonic() + 60
        while len(seen) < N:
            assert time.monotonic() < deadline, f"{len(seen)} of {N} records within 60 s"
            for msg in consumer.poll(1.0):
                assert msg.error() is None, msg.error()
                seen[int(msg.value())] = msg.delivery_count()
                consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
        assert seen == dict.fromkeys(range(N), 1)
        results = consumer.commit_sync(30)
        assert all(error is None for error in results.values()), results
    finally:
        consumer.close()
        admin(lab).delete_topics([topic])


def share_group_command(lab: Lab, group: str, *view: str) -> list[list[str]]:
    """The rows (whitespace-split, header and blank lines left out) Kafka's own
    kafka-share-groups.sh --describe prints for ``group``."""
    out = kafka_tool("org.apache.kafka.tools.consumer.group.ShareGroupCommand",
                     "--bootstrap-server", lab.bootstrap, "--describe", "--group", group,
                     *view).stdout
    return [line.split() for line in out.splitlines()
            if line.strip() and not line.startswith("GROUP")]


def share_state(lab: Lab, group: str) -> dict[int, tuple[int | None, int | None]]:
    """The group's (start offset, lag) per partition, as its coordinator says now."""
    brokers = tuple(Broker(id=b.id, host=b.host, port=b.port)
                    for b in admin(lab).list_topics(timeout=10).brokers.values())
    read = read_share_groups(ConnectionSettings(lab.bootstrap), brokers, Deadline(10))
    return {s.partition: (s.start_offset, s.lag) for g in read.groups if g.group_id == group
            for s in g.partitions}


def _produce(lab: Lab, topic: str, partition: int, n: int, age_ms: int = 0) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    stamp = int(time.time() * 1000) - age_ms
    for i in range(n):
        producer.produce(topic, value=str(i), partition=partition, timestamp=stamp)
    assert producer.flush(30) == 0


def _end(lab: Lab, topic: str, partition: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": lab.bootstrap, "group.id": "kaudit-test-ends"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), 10)[1])
    finally:
        consumer.close()


def _findings(doc: dict[str, Any], group: str) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for f in doc["findings"]:
        if f["subject"]["name"].startswith(f"{group}@"):
            found.setdefault(f["rule"], []).append(f)
    return found


def test_check_sees_share_groups_as_kafkas_own_tool_and_each_rule_fails_only_the_broken_group(
        lab: Lab, tmp_path: Path) -> None:
    from confluent_kafka import AcknowledgeType, TopicPartition
    from confluent_kafka.admin import NewTopic

    topic = f"share-{uuid.uuid4().hex[:8]}"
    good, broken = (f"kaudit-test-share-{name}-{uuid.uuid4().hex[:6]}"
                    for name in ("good", "broken"))
    admin(lab).create_topics([NewTopic(topic, 2, 3)])[topic].result(30)
    for p in (0, 1):
        _produce(lab, topic, p, 10)
    # broken: Kafka's defaults (latest, read_uncommitted) and 2 deliveries. It starts at the
    # log end, so the 20 records already there are skipped; it accepts one record written
    # after it joined on each partition (its start offsets are kept from then on), and
    # leaves.
    set_group_configs(lab, broken, share_delivery_count_limit="2")
    late = new_share_consumer(ConnectionSettings(lab.bootstrap), broken)
    try:
        late.subscribe([topic])
        got: set[int] = set()

        def one_each() -> bool:  # written two hours ago, by their timestamps
            for p in {0, 1} - got:
                _produce(lab, topic, p, 1, age_ms=TWO_HOURS_MS)
            for msg in late.poll(1.0):
                assert msg.error() is None, msg.error()
                late.acknowledge(msg, AcknowledgeType.ACCEPT)
                got.add(msg.partition())
            return got == {0, 1}

        assert wait_for(one_each, 60), f"the broken group got records of {got} only"
        assert all(e is None for e in late.commit_sync(30).values())
    finally:
        late.close()
    # Kafka keeps a start offset for it from now on (it moves it lazily: where the group
    # began, not past what it accepted).
    assert wait_for(lambda: all(share_state(lab, broken).get(p, (None,))[0] is not None
                                for p in (0, 1)), 30), share_state(lab, broken)
    # The broken group leaves these waiting.
    for p in (0, 1):
        _produce(lab, topic, p, 10, age_ms=TWO_HOURS_MS)
    set_group_configs(lab, good, share_auto_offset_reset="earliest",
                      share_isolation_level="read_committed")
    member = new_share_consumer(ConnectionSettings(lab.bootstrap), good)
    try:
        member.subscribe([topic])
        ends = {p: _end(lab, topic, p) for p in (0, 1)}
        read = 0
        deadline = time.monotonic() + 60
        while read < sum(ends.values()):
            assert time.monotonic() < deadline, f"{read} of {sum(ends.values())} in 60 s"
            for msg in member.poll(1.0):
                assert msg.error() is None, msg.error()
                member.acknowledge(msg, AcknowledgeType.ACCEPT)
                read += 1
        assert all(e is None for e in member.commit_sync(30).values())
        assert wait_for(lambda: [s[1] for s in share_state(lab, good).values()] == [0, 0],
                        30), share_state(lab, good)
        # Retention's work, by hand: partition 0 keeps its last 5 records; the broken group
        # had 10 to go there (the good one none).
        cut = TopicPartition(topic, 0, ends[0] - 5)
        admin(lab).delete_records([cut])[cut].result(30)

        snap_file = tmp_path / "snap.json"
        run = run_kaudit("snapshot", "-b", lab.bootstrap, "-o", str(snap_file))
        assert run.code == 0, run.stderr
        shares = {g["group_id"]: g for g in json.loads(snap_file.read_text())["share_groups"]}
        for group in (good, broken):
            ours = sorted([group, s["topic"], str(s["partition"]),
                           "-" if s["start_offset"] is None else str(s["start_offset"]),
                           "-" if s["lag"] is None else str(s["lag"])]
                          for s in shares[group]["partitions"])
            assert ours == sorted(share_group_command(lab, group, "--offsets")), group
        # Kafka says: good is done with everything, broken has the old records to go (and
        # any it was handed but had not accepted when it left).
        assert [s["lag"] for s in shares[good]["partitions"]] == [0, 0]
        assert all(s["lag"] >= 10 for s in shares[broken]["partitions"])
        lag0 = shares[broken]["partitions"][0]["lag"]
        start0 = shares[broken]["partitions"][0]["start_offset"]
        (row,) = share_group_command(lab, good, "--members")
        (m,) = shares[good]["members"]
        assert row == [good, m["member_id"], "/" + m["host"], m["client_id"], "2",
                       f"{topic}:0,1"]
        for group in (good, broken):
            (state,) = share_group_command(lab, group, "--state")
            g = shares[group]
            assert [state[0], state[2], state[3], state[4]] == [
                group, f"({g['coordinator']})", g["state"], str(len(g["members"]))]

        policy = tmp_path / "share.yaml"
        policy.write_text(f"profiles:\n  audited: {{extends: exactly-once}}\n"
                          f"topics:\n  - match: [\"{topic}\"]\n    profile: audited\n"
                          "  - match: \"*\"\n    skip: true\n")
        run = run_kaudit("check", "-b", lab.bootstrap, "-p", str(policy), "--format", "json",
                         "--exit-zero")
        assert run.code == 0, run.stderr
        doc = json.loads(run.stdout)
        assert _findings(doc, good) == {}, _findings(doc, good)
        bad = _findings(doc, broken)
        assert sorted(bad) == ["KA611", "KA612", "KA613", "KA614", "KA615"], bad
        assert bad["KA611"][0]["subject"]["name"] == f"{broken}@{topic}-0"
        # 5 records left in the log: at least lag - 5 were deleted undelivered, at most
        # those between the start offset and the new log start.
        least, most = lag0 - 5, min(lag0, ends[0] - 5 - start0)
        told = f"{least} records" if least == most else \
            f"at least {least} records (at most {most})"
        assert bad["KA611"][0]["actual"] == f"lag {lag0} ({told} deleted undelivered)"
        assert bad["KA614"][0]["actual"] == "share.delivery.count.limit 2"
        assert bad["KA615"][0]["subject"]["name"] == f"{broken}@{topic}-1"
        lag1 = shares[broken]["partitions"][1]["lag"]
        assert f"{lag1} records wait" in bad["KA615"][0]["message"]
        assert "written 2 h ago" in bad["KA615"][0]["message"]
    finally:
        member.close()
        admin(lab).delete_topics([topic])
