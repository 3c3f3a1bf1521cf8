"""The audit lab is what it says, as Kafka's own tools see it: three voters in a dynamic
quorum (kraft.version 1), broker 2 alone with its own replica.lag.time.max.ms, a tiered
topic's segments in remote storage beside an untiered topic that works as before, and a
voter killed and started again that comes back as a voter and catches up."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import lab_admin, wait_for
from tests.integration.audit_lab import LAG_TIME_MS, LAGGING_BROKER, AuditLab, running_lab

pytestmark = pytest.mark.kafka

QUORUM_TOOL = "org.apache.kafka.tools.MetadataQuorumCommand"
FEATURE_TOOL = "org.apache.kafka.tools.FeatureCommand"


def quorum_status(lab: AuditLab) -> dict[str, Any]:
    """`kafka-metadata-quorum describe --status`, its fields by name (voters and observers
    parsed from the JSON it prints)."""
    done = lab.kafka_tool(QUORUM_TOOL, "--bootstrap-controller", lab.bootstrap_controllers,
                          "describe", "--status")
    assert done.returncode == 0, done.stderr[-1000:]
    fields = dict(re.findall(r"^(\w+):\s+(.*)$", done.stdout, re.MULTILINE))
    for name in ("CurrentVoters", "CurrentObservers"):
        fields[name] = json.loads(fields[name])
    return fields


def quorum_replication(lab: AuditLab) -> dict[int, dict[str, str]]:
    """`kafka-metadata-quorum describe --replication`: each node's row by node id."""
    done = lab.kafka_tool(QUORUM_TOOL, "--bootstrap-controller", lab.bootstrap_controllers,
                          "describe", "--replication")
    assert done.returncode == 0, done.stderr[-1000:]
    header, *rows = [ln.split() for ln in done.stdout.splitlines() if ln.strip()]
    return {int(r[0]): dict(zip(header, r, strict=False)) for r in rows}


def kraft_version(lab: AuditLab) -> int:
    """The finalized kraft.version as `kafka-features describe` prints it."""
    done = lab.kafka_tool(FEATURE_TOOL, "--bootstrap-server", lab.bootstrap, "describe")
    assert done.returncode == 0, done.stderr[-1000:]
    found = re.search(r"Feature: kraft\.version\s.*FinalizedVersionLevel: (\d+)", done.stdout)
    assert found, done.stdout
    return int(found.group(1))


def broker_lag_times(lab: AuditLab) -> dict[int, tuple[str, str]]:
    """Each broker's replica.lag.time.max.ms and its source, by DescribeConfigs."""
    from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

    admin = lab_admin(lab.bootstrap)
    found = {}
    for broker in (1, 2, 3):
        resource = ConfigResource(ResourceType.BROKER, str(broker))
        configs = admin.describe_configs([resource])[resource].result(timeout=30)
        entry = configs["replica.lag.time.max.ms"]
        found[broker] = (entry.value, ConfigSource(entry.source).name)
    return found


def produce(lab: AuditLab, topic: str, count: int, size: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": lab.bootstrap, "acks": "all",
                         "linger.ms": 20, "batch.size": 256 * 1024})
    failed: list[str] = []
    for i in range(count):
        producer.produce(topic, value=f"{i:08d}".encode() * (size // 8),
                         on_delivery=lambda err, _m: failed.append(str(err)) if err else None)
        producer.poll(0)
    assert producer.flush(60) == 0 and failed == []


def create_topic(lab: AuditLab, config: dict[str, str] | None = None) -> str:
    from confluent_kafka.admin import NewTopic

    name = f"audit-{uuid.uuid4().hex[:8]}"
    admin = lab_admin(lab.bootstrap)
    rf = min(3, len(admin.list_topics(timeout=10).brokers))
    admin.create_topics([NewTopic(name, 1, rf, config=config or {})])[name].result(timeout=60)
    assert wait_for(lambda: admin.list_topics(name, timeout=5).topics[name]
                    .partitions[0].leader >= 0, 30), f"{name} has no leader"
    return name


def remote_segments(lab: AuditLab, topic: str) -> list[str]:
    """The segment files LocalTieredStorage holds for ``topic``'s partition 0."""
    assert lab.remote_storage is not None
    return sorted(f.name for d in lab.remote_storage.glob(f"{topic}-0-*")
                  for f in d.glob("*.log"))


def test_the_audit_lab_as_kafkas_tools_see_it(audit_lab: AuditLab) -> None:
    lab = audit_lab
    # (a) The quorum built: three voters, each with its own directory id, kraft.version 1.
    status = quorum_status(lab)
    voters = {v["id"]: v for v in status["CurrentVoters"]}
    assert sorted(voters) == list(lab.controllers) == [100, 101, 102]
    assert len({v["directoryId"] for v in voters.values()}) == 3
    assert "AAAAAAAAAAAAAAAAAAAAAA" not in {v["directoryId"] for v in voters.values()}
    assert sorted(o["id"] for o in status["CurrentObservers"]) == [1, 2, 3]
    assert int(status["LeaderId"]) in voters
    assert kraft_version(lab) == 1

    # (b) Broker 2 alone has its own replica.lag.time.max.ms; 1 and 3 keep Kafka's default.
    lag_times = broker_lag_times(lab)
    assert lag_times[LAGGING_BROKER] == (str(LAG_TIME_MS), "STATIC_BROKER_CONFIG")
    assert {lag_times[1], lag_times[3]} == {(lag_times[1][0], "DEFAULT_CONFIG")}
    assert lag_times[1][0] != str(LAG_TIME_MS)

    # (c) A tiered topic's rolled segments reach remote storage; an untiered one works as
    # before and has none there.
    tiered = create_topic(lab, {"remote.storage.enable": "true", "segment.bytes": "1048576",
                                "local.retention.bytes": "1048576"})
    plain = create_topic(lab, {"segment.bytes": "1048576"})
    for topic in (tiered, plain):
        produce(lab, topic, 300, 10_000)  # 3 MB: two segments rolled, one active
    assert wait_for(lambda: len(remote_segments(lab, tiered)) >= 2, 60), (
        f"no remote segments of {tiered} in {lab.remote_storage}")
    assert remote_segments(lab, plain) == []
    topics = lab_admin(lab.bootstrap).list_topics(timeout=10).topics
    assert "__remote_log_metadata" in topics

    # (d) A voter that is not the leader killed and started again is the same voter.
    assert_voter_comes_back(lab)
    after = quorum_status(lab)
    assert {v["id"]: v["directoryId"] for v in after["CurrentVoters"]} == {
        i: v["directoryId"] for i, v in voters.items()}


def assert_voter_comes_back(lab: AuditLab) -> None:
    """Kill a voter that is not the leader: the quorum still takes metadata changes; `lab
    start` brings it back as a voter that catches up with the leader."""
    leader = int(quorum_status(lab)["LeaderId"])
    victim = next(c for c in lab.controllers if c != leader)
    killed = lab.kaudit("kill", str(victim), "-f", "json")
    assert killed.code == 0, killed.stderr
    assert {c["id"]: c["state"] for c in json.loads(killed.stdout)["controllers"]}[victim] \
        == "down"
    create_topic(lab)  # two voters of three are a majority
    started = lab.kaudit("start", str(victim))
    assert started.code == 0 and "restarted" in started.stderr, started.stderr

    def caught_up() -> bool:
        rows = quorum_replication(lab)
        # Within a few records of the leader: the quorum writes a no-op record every
        # half second, so an exact match is a race.
        return (rows[victim]["Status"] == "Follower"
                and int(rows[victim]["LogEndOffset"]) >= int(rows[leader]["LogEndOffset"]) - 5)

    assert wait_for(caught_up, 60), quorum_replication(lab)
    assert sorted(v["id"] for v in quorum_status(lab)["CurrentVoters"]) == list(lab.controllers)


@pytest.fixture(scope="module")
def static_quorum_lab() -> Iterator[AuditLab]:
    """Three controllers in a static quorum (the default kind), one broker."""
    with running_lab("--controllers", "3", "--brokers", "1") as lab:
        yield lab


def test_a_static_quorum_of_three_as_kafkas_tools_see_it(static_quorum_lab: AuditLab) -> None:
    lab = static_quorum_lab
    status = quorum_status(lab)
    assert sorted(v["id"] for v in status["CurrentVoters"]) == [100, 101, 102]
    # A static quorum's voters have no directory id (Kafka prints none, or the zero id).
    assert {v.get("directoryId", "AAAAAAAAAAAAAAAAAAAAAA") for v in status["CurrentVoters"]
            } == {"AAAAAAAAAAAAAAAAAAAAAA"}
    assert kraft_version(lab) == 0
    assert lab.remote_storage is None
    assert_voter_comes_back(lab)
