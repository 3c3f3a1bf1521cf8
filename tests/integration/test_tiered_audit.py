"""Tiered storage (KIP-405) as kaudit reads and judges it, on a lab whose brokers run it
(`kaudit lab up --tiered-storage`: Kafka's LocalTieredStorage), against what Kafka's own
ConfigCommand (`kafka-configs.sh --describe --all`) prints for each tiered topic; the
tiered-storage rules fire on the topics set up to break them and not on the others.

They run on the session's audit lab (tests/integration/audit_lab.py, which has
``--tiered-storage``); ``KAUDIT_TEST_TIERED_BOOTSTRAP=HOST:PORT`` runs them against a tiered
lab started elsewhere (they create their own topics and change one cluster-wide default
there, put back afterwards).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_kaudit, wait_for
from tests.integration.audit_lab import AuditLab
from tests.kafka_tools import kafka_tool

pytestmark = pytest.mark.kafka

TIERED_NAMES = ("remote.storage.enable", "retention.ms", "local.retention.ms",
                "retention.bytes", "local.retention.bytes", "cleanup.policy",
                "remote.log.copy.disable", "remote.log.delete.on.disable")
"""The topic settings the tiered-storage rules read."""
WEEK_MS = 604_800_000
DAY_MS = 86_400_000
RUN = uuid.uuid4().hex[:6]
"""Our topics' names end with it: a lab used again (KAUDIT_TEST_TIERED_BOOTSTRAP) keeps
the topics of earlier runs, which these tests leave alone."""
GOOD, ARMED, INHERITS = f"ts-good-{RUN}", f"ts-armed-{RUN}", f"ts-inherits-{RUN}"
METADATA_TOPIC = "__remote_log_metadata"


@pytest.fixture(scope="module")
def tiered_lab(request: pytest.FixtureRequest) -> str:
    """The bootstrap of a lab whose brokers run tiered storage: the session's audit lab
    (tests/integration/audit_lab.py), unless KAUDIT_TEST_TIERED_BOOTSTRAP names another."""
    given = os.environ.get("KAUDIT_TEST_TIERED_BOOTSTRAP")
    if given:
        return given
    lab: AuditLab = request.getfixturevalue("audit_lab")
    assert lab.remote_storage is not None, "the audit lab runs without tiered storage"
    return lab.bootstrap


def kafka_configs(bootstrap: str, name: str, entity: str = "topics"
                  ) -> dict[str, tuple[str, str]]:
    """(value, source) of every setting of topic (or broker) ``name`` as `kafka-configs.sh
    --describe --all` prints it: the source is its first synonym's (the one in force)."""
    out = kafka_tool("kafka.admin.ConfigCommand", "--bootstrap-server", bootstrap,
                      "--describe", "--all", "--entity-type", entity,
                      "--entity-name", name).stdout
    found = {}
    for line in out.splitlines():
        entry = re.match(r"\s+([\w.]+)=(.*) sensitive=\w+ synonyms=\{(\w+):", line)
        if entry:
            found[entry.group(1)] = (entry.group(2), entry.group(3))
    assert found, out
    return found


def alter(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return kafka_tool("kafka.admin.ConfigCommand", "--bootstrap-server",
                       bootstrap, "--alter", *args, check=False)


def create(bootstrap: str, topic: str, *configs: str) -> subprocess.CompletedProcess[str]:
    args = [a for c in configs for a in ("--config", c)]
    return kafka_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap,
                       "--create", "--topic", topic, "--partitions", "1",
                       "--replication-factor", "3", *args, check=False)


@pytest.fixture(scope="module")
def tiered_topics(tiered_lab: str) -> Iterator[str]:
    """Our topics on the tiered lab: one set up well, one whose remote data a config
    change would delete (KA113), one that inherits a local retention longer than its own
    retention (KA111, through a cluster-wide default changed after it was created: Kafka
    refuses it on the topic itself)."""
    made = [
        create(tiered_lab, GOOD, "remote.storage.enable=true",
               f"retention.ms={WEEK_MS}", f"local.retention.ms={DAY_MS}"),
        # With copying off, Kafka wants the local retention to be the whole retention.
        create(tiered_lab, ARMED, "remote.storage.enable=true",
               f"retention.ms={WEEK_MS}", f"local.retention.ms={WEEK_MS}",
               "remote.log.copy.disable=true", "remote.log.delete.on.disable=true"),
        create(tiered_lab, INHERITS, "remote.storage.enable=true",
               f"retention.ms={DAY_MS}"),
    ]
    for run in made:
        assert run.returncode == 0, run.stdout + run.stderr
    default = alter(tiered_lab, "--entity-type", "brokers", "--entity-default",
                    "--add-config", f"log.local.retention.ms={WEEK_MS}")
    assert default.returncode == 0, default.stderr
    try:
        assert wait_for(lambda: kafka_configs(tiered_lab, INHERITS)[
            "local.retention.ms"][0] == str(WEEK_MS), 60)
        yield tiered_lab
    finally:
        alter(tiered_lab, "--entity-type", "brokers", "--entity-default",
              "--delete-config", "log.local.retention.ms")


def snapshot(bootstrap: str, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "snapshot.json"
    taken = run_kaudit("snapshot", "-b", bootstrap, "-o", str(out))
    assert taken.code == 0, taken.stderr
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def test_kaudit_reads_each_tiered_topics_settings_as_kafka_configs_prints_them(
        tiered_topics: str, tmp_path: Path) -> None:
    doc = snapshot(tiered_topics, tmp_path)
    for name in (GOOD, ARMED, INHERITS, METADATA_TOPIC):
        theirs = kafka_configs(tiered_topics, name)
        ours = next(t for t in doc["topics"] if t["name"] == name)["configs"]
        for key in (*TIERED_NAMES, "min.insync.replicas"):
            if key in theirs:
                assert (ours[key]["value"], ours[key]["source"]) == theirs[key], (name, key)
    assert all(c["remote.log.storage.system.enable"]["value"] == "true"
               for c in doc["broker_configs"].values())


def test_kafka_refuses_a_compacted_tiered_topic_as_ka112_says(tiered_topics: str) -> None:
    refused = create(tiered_topics, f"ts-compacted-{RUN}", "remote.storage.enable=true",
                     "cleanup.policy=compact")
    assert refused.returncode != 0
    assert "only supports topics with cleanup.policy=delete" in refused.stdout + refused.stderr


def test_the_tiered_rules_fire_on_exactly_the_broken_topics(tiered_topics: str) -> None:
    run = run_kaudit("check", "-b", tiered_topics, "--exit-zero", "-f", "json")
    assert run.code == 0, run.stderr
    ours = (GOOD, ARMED, INHERITS, METADATA_TOPIC)
    found = [(f["rule"], f["subject"]["name"]) for f in json.loads(run.stdout)["findings"]
             if f["rule"] in ("KA111", "KA112", "KA113", "KA114", "KA320", "KA321")
             and f["subject"]["name"] in ours]
    # INHERITS breaks KA111 for ms only; the lab creates __remote_log_metadata with
    # three replicas and min.insync.replicas 2.
    assert sorted(found) == [("KA111", INHERITS), ("KA113", ARMED)], found


def test_ka321_fires_when_remote_log_metadata_accepts_one_acknowledgement(
        tiered_topics: str) -> None:
    topic = METADATA_TOPIC
    lowered = alter(tiered_topics, "--entity-type", "topics", "--entity-name", topic,
                    "--add-config", "min.insync.replicas=1")
    assert lowered.returncode == 0, lowered.stderr
    try:
        assert wait_for(lambda: kafka_configs(tiered_topics, topic)["min.insync.replicas"]
                        == ("1", "DYNAMIC_TOPIC_CONFIG"), 60)
        run = run_kaudit("check", "-b", tiered_topics, "--exit-zero", "-f", "json")
        ka321 = [f for f in json.loads(run.stdout)["findings"] if f["rule"] == "KA321"]
        assert [(f["actual"], f["source"]) for f in ka321] == [("1", "DYNAMIC_TOPIC_CONFIG")]
    finally:
        alter(tiered_topics, "--entity-type", "topics", "--entity-name", topic,
              "--add-config", "min.insync.replicas=2")


def metadata_replicas(bootstrap: str) -> dict[int, tuple[list[int], list[int]]]:
    """Each partition of __remote_log_metadata: its replicas and in-sync replicas, as
    `kafka-topics.sh --describe` prints them."""
    out = kafka_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap,
                     "--describe", "--topic", METADATA_TOPIC).stdout
    found = {}
    for line in out.splitlines():
        row = re.search(r"Partition: (\d+)\s.*Replicas: ([\d,]+)\s+Isr: ([\d,]+)", line)
        if row:
            found[int(row[1])] = ([int(b) for b in row[2].split(",")],
                                  [int(b) for b in row[3].split(",")])
    assert found, out
    return found


def test_ka320_fires_when_remote_log_metadata_is_kept_on_one_replica(
        tiered_topics: str) -> None:
    from kafka import KafkaAdminClient, TopicPartition

    before = metadata_replicas(tiered_topics)
    assert all(len(replicas) == 3 for replicas, _ in before.values()), before
    moves = KafkaAdminClient(bootstrap_servers=tiered_topics)

    def reassign(to: dict[int, list[int]]) -> None:
        moves.alter_partition_reassignments(
            {TopicPartition(METADATA_TOPIC, p): replicas for p, replicas in to.items()})

    try:
        # Each partition down to its first replica, as a setup with one broker leaves it.
        reassign({p: replicas[:1] for p, (replicas, _) in before.items()})
        assert wait_for(lambda: all(len(r) == 1 for r, _ in
                                    metadata_replicas(tiered_topics).values()), 60)
        run = run_kaudit("check", "-b", tiered_topics, "--exit-zero", "-f", "json")
        ka320 = [(f["subject"]["name"], f["actual"]) for f in
                 json.loads(run.stdout)["findings"] if f["rule"] == "KA320"]
        assert ka320 == [(METADATA_TOPIC, "1")], run.stdout[-2000:]
    finally:
        reassign({p: replicas for p, (replicas, _) in before.items()})
        assert wait_for(lambda: all(len(r) == len(i) == 3 for r, i in
                                    metadata_replicas(tiered_topics).values()), 120)
        moves.close()


@pytest.fixture()
def tiered_off_on_one_broker(tiered_topics: str, request: pytest.FixtureRequest
                             ) -> Iterator[int]:
    """The audit lab's broker 3 restarted with remote.log.storage.system.enable=false, as a
    partial rollout leaves a broker (Kafka refuses to create a tiered topic then, but one
    that exists stays, its broker logging that it cannot apply the topic's settings);
    restarted with its own file afterwards."""
    from kaudit.probe.faults.lab import LabControl

    if os.environ.get("KAUDIT_TEST_TIERED_BOOTSTRAP"):
        pytest.skip("restarts a broker: the audit lab's only")
    lab: AuditLab = request.getfixturevalue("audit_lab")
    broker, control = 3, LabControl(Path(lab.state_dir))
    properties = Path(lab.state_dir) / f"broker-{broker}" / "server.properties"
    kept = properties.read_text()
    setting = "remote.log.storage.system.enable=true"
    assert setting in kept.splitlines()
    try:
        control.kill(broker, "TERM")
        properties.write_text(kept.replace(setting, "remote.log.storage.system.enable=false"))
        control.start(broker)
        yield broker
    finally:
        control.kill(broker, "TERM")
        properties.write_text(kept)
        control.start(broker)
        assert wait_for(lambda: all(len(r) == len(i) for r, i in
                                    metadata_replicas(tiered_topics).values()), 120)


def test_ka114_names_the_broker_restarted_with_tiered_storage_off(
        tiered_topics: str, tiered_off_on_one_broker: int) -> None:
    broker = tiered_off_on_one_broker
    assert kafka_configs(tiered_topics, str(broker), "brokers")[
        "remote.log.storage.system.enable"] == ("false", "STATIC_BROKER_CONFIG")
    run = run_kaudit("check", "-b", tiered_topics, "--exit-zero", "-f", "json")
    ka114 = {f["subject"]["name"]: f for f in json.loads(run.stdout)["findings"]
             if f["rule"] == "KA114"}
    # Every tiered topic of ours, each naming that broker alone, from its static file.
    assert set(ka114) >= {GOOD, ARMED, INHERITS}, sorted(ka114)
    for topic in (GOOD, ARMED, INHERITS):
        assert (ka114[topic]["actual"], ka114[topic]["source"]) == (
            f"false on broker {broker}", "STATIC_BROKER_CONFIG"), ka114[topic]
