"""kaudit leaves none of its topics behind, also on brokers that create a topic for any
client that asks for it (auto.create.topics.enable=true, Kafka's default and the lab's)."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import replace

import pytest

from kaudit.cluster.client import AdminSession
from kaudit.cluster.topics import TopicSpec, create_probe_topic, delete_probe_topic
from kaudit.connection.settings import ConnectionSettings
from kaudit.waiting import wait_for
from tests.conftest import Lab, run_kaudit
from tests.integration.test_lab import admin

pytestmark = pytest.mark.kafka

STAYS_GONE_S = 30.0
"""How long a deleted topic must stay absent: a client that still asks for it (a metadata
refresh, a monitor's last sample) does so within seconds."""


def _auto_create_is_on(lab: Lab) -> bool:
    from confluent_kafka.admin import ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.BROKER, "1")
    configs = admin(lab).describe_configs([resource])[resource].result(timeout=30)
    return configs["auto.create.topics.enable"].value == "true"


def _still_there(lab: Lab, names: set[str]) -> set[str]:
    """Which of ``names`` the cluster lists (a metadata request naming no topic: it creates
    nothing)."""
    return names & set(admin(lab).list_topics(timeout=10).topics)


def _assert_gone_for_good(lab: Lab, names: set[str]) -> None:
    """Absent now (deletes reach every broker within seconds) and for STAYS_GONE_S after."""
    assert wait_for(lambda: not _still_there(lab, names), 30), "not deleted"
    until = time.monotonic() + STAYS_GONE_S
    while time.monotonic() < until:
        assert _still_there(lab, names) == set(), "re-created after the run deleted it"
        time.sleep(1.0)


def _asked_for_after_its_delete(lab: Lab) -> str:
    """A topic created, deleted, then named in a metadata request, as a monitor's late
    sample would: on these brokers that request alone would create it again."""
    session = AdminSession(replace(ConnectionSettings(lab.bootstrap), timeout=10))
    name = f"kaudit-test-gone-{uuid.uuid4().hex[:8]}"
    create_probe_topic(session, TopicSpec(name, 1, 3, 2, None))
    assert delete_probe_topic(session, name)
    assert wait_for(lambda: not _still_there(lab, {name}), 30), "not deleted"
    session.admin.list_topics(topic=name, timeout=10)
    return name


def test_no_topic_is_left_behind(lab: Lab, restore_brokers: None) -> None:
    # One watch of STAYS_GONE_S for every topic below: each has been gone since its run.
    assert _auto_create_is_on(lab), "the lab must create topics on request for this test"
    left = {_asked_for_after_its_delete(lab)}
    probe = run_kaudit("probe", "-b", lab.bootstrap, "--format", "json", "--count", "3000",
                       "--rate", "1000", "--fault", "kill-leader", "--fault-at", "30%",
                       "--fault-duration", "2", "--lab-state-dir", lab.state_dir, timeout=300)
    assert probe.stdout, probe.stderr
    left.add(json.loads(probe.stdout)["topic"])
    matrix = run_kaudit("probe", "matrix", "-b", lab.bootstrap, "--format", "json",
                        "--acks", "1", "--idempotence", "off", "--fault", "none",
                        "--count", "2000", timeout=300)
    assert matrix.code == 0, matrix.stderr
    left.update(run["topic"] for row in json.loads(matrix.stdout)["rows"]
                for run in row["runs"])
    consume = run_kaudit("probe", "consume", "-b", lab.bootstrap, "--format", "json",
                         "--commit", "transactional", "--count", "500", "--rate", "0",
                         timeout=300)
    assert consume.stdout, consume.stderr
    doc = json.loads(consume.stdout)
    left.update({doc["topic"], doc["output_topic"]})
    assert len(left) == 5 and all(name.startswith("kaudit-") for name in left), left
    _assert_gone_for_good(lab, left)
