"""Share groups (KIP-932) on the lab: kaudit's share consumer (``new_share_consumer``) is a
member of a real share group, gets every record once with the delivery count the broker
keeps, and its acknowledgements are committed per partition."""

from __future__ import annotations

import time
import uuid

import pytest

from kaudit.cluster.client import new_share_consumer
from kaudit.connection.settings import ConnectionSettings
from tests.conftest import Lab
from tests.integration.test_lab import admin

pytestmark = pytest.mark.kafka

N = 30


def from_earliest(lab: Lab, group: str) -> None:
    """The group reads from the log's start: a share group's default is ``latest``."""
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[ConfigEntry(
        "share.auto.offset.reset", "earliest",
        incremental_operation=AlterConfigOpType.SET)])
    for future in admin(lab).incremental_alter_configs([resource]).values():
        future.result(30)


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
