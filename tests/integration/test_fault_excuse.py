"""A fault is never an error: while a fault the run injected is in force, a missing leader
is waited out, not reported as an unreachable cluster (real brokers, a real kill)."""

from __future__ import annotations

import contextlib
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from kaudit.cluster.client import AdminSession
from kaudit.cluster.topics import TopicSpec, create_probe_topic, delete_probe_topic, partition_roles
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import ConnectionFailure
from kaudit.probe.faults.injector import FaultInjector, Targets
from kaudit.probe.faults.lab import LabControl
from kaudit.probe.faults.registry import parse_fault
from kaudit.probe.monitor import EventLog
from kaudit.waiting import wait_for
from tests.conftest import Lab

pytestmark = pytest.mark.kafka

DOWN_S = 20.0
"""How long the only replica stays down: twice list_offsets' own bound (the 10 s timeout),
so without the fault's excuse the read gives up every time while it is down."""


def test_a_leader_missing_while_a_fault_is_in_force_is_waited_out(
        lab: Lab, restore_brokers: None) -> None:
    # The probe's default timeout: an excused wait lasts until the fault's heal, plus the
    # settling time and one more timeout (20 s) for the partition to be led and answer again.
    conn = ConnectionSettings(lab.bootstrap, timeout=10)
    session = AdminSession(conn)
    topic = f"kaudit-test-excuse-{uuid.uuid4().hex[:8]}"
    # One replica: while its broker is down the partition has no leader at all.
    create_probe_topic(session, TopicSpec(topic, 1, 1, 1, None))
    log = EventLog(time.monotonic())
    injector = FaultInjector([parse_fault("kill-leader")], lambda: True, DOWN_S, log,
                             LabControl(Path(lab.state_dir)),
                             Targets(lambda: partition_roles(session, topic)),
                             settle_s=conn.timeout)
    try:
        injector.start()
        assert wait_for(lambda: any(e.kind == "fault" for e in log.events()), 60), \
            "the leader was not killed"
        # Without the excuse: the read gives up while the only replica is down (exit 3).
        unexcused = AdminSession(conn)
        with pytest.raises(ConnectionFailure, match="cannot reach Kafka"):
            unexcused.list_offsets(topic, [0], "latest")
        assert injector.is_alive(), "the fault ended before the unexcused read gave up"
        # With it: the same read is not given up while the fault is in force. It answers
        # once the broker is back, or, when the partition is still not led then, gives up
        # no sooner than the fault's settling time after the heal. (The broker held the only
        # replica: Kafka brings it back through an unclean election, whose recovery took
        # more than 20 s in two CI runs and under 3 s in every local one.)
        session.excused_until = injector.excused_until
        try:
            assert session.list_offsets(topic, [0], "latest") == {0: 0}
        except ConnectionFailure as exc:
            gave_up = time.monotonic()
            heals = [e for e in log.events() if e.kind == "heal"]
            assert heals, f"given up while the fault was in force: {exc}"
            healed = log.started + heals[0].at_s
            assert gave_up >= healed + conn.timeout, (
                f"given up {gave_up - healed:.1f}s after the heal, before the fault's "
                f"settling time ({conn.timeout:g}s): {exc}")
        injector.join(180)
        assert [e.kind for e in log.events()] == ["fault", "heal"]
    finally:
        injector.cancel()
        injector.join(180)
        injector.heal()
        delete_probe_topic(session, topic)


def test_offsets_read_after_the_leadership_moved_away_and_back(lab: Lab) -> None:
    # A long-lived client keeps the leader and its epoch from the first read. When the
    # leadership moves away and back (a restarted leader made preferred leader again), that
    # broker fences the old epoch with FENCED_LEADER_EPOCH, and librdkafka's admin client
    # sent it again and again: the probe's loss evidence was then never read.
    from confluent_kafka import ElectionType
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KafkaTopicPartition

    conn = ConnectionSettings(lab.bootstrap, timeout=10)
    operator, reader = AdminSession(conn), AdminSession(conn)
    moves = KafkaAdminClient(bootstrap_servers=lab.bootstrap)
    topic = f"kaudit-test-epoch-{uuid.uuid4().hex[:8]}"
    create_probe_topic(operator, TopicSpec(topic, 1, 3, 1, None))
    try:
        first, followers = partition_roles(operator, topic)
        assert len(followers) == 2, "the partition's followers are not all in sync"
        assert reader.list_offsets(topic, [0], "earliest") == {0: 0}
        for order in ([*followers, first], [first, *followers]):
            moves.alter_partition_reassignments({KafkaTopicPartition(topic, 0): order})
            leader = order[0]

            def led_by(broker: int = leader) -> bool:
                # Preferred election, asked until the new first replica leads.
                with contextlib.suppress(Exception):
                    operator.admin.elect_leaders(ElectionType.PREFERRED, [
                        ConfluentTopicPartition(topic, 0)]).result(timeout=5)
                return partition_roles(operator, topic)[0] == broker

            assert wait_for(led_by, 60), f"broker {leader} did not become the leader"
        assert reader.list_offsets(topic, [0], "earliest") == {0: 0}
        assert reader.list_offsets(topic, [0], "latest") == {0: 0}
    finally:
        moves.close()
        delete_probe_topic(operator, topic)
