"""A share consumer is made from the same settings as every client, less what a share
consumer refuses; a setting librdkafka refuses is one line, exit 2."""

from __future__ import annotations

import pytest

from kaudit.cluster.client import SHARE_CONSUMER_REFUSES, client_config, new_share_consumer
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import InputError


def test_a_classic_consumers_settings_are_left_out_not_refused() -> None:
    # A properties file written for classic consumers: every one of these would make
    # librdkafka refuse the share consumer outright.
    settings = ConnectionSettings("127.0.0.1:1", properties={
        "isolation.level": "read_committed", "auto.offset.reset": "earliest",
        "enable.auto.commit": "false", "client.id": "audit"})
    assert {"isolation.level", "allow.auto.create.topics"} <= client_config(settings).keys()
    consumer = new_share_consumer(settings, "orders-workers")
    consumer.close()


def test_what_librdkafka_refuses_is_one_line() -> None:
    settings = ConnectionSettings("127.0.0.1:1", properties={"max.poll.records": "0"})
    with pytest.raises(InputError) as err:
        new_share_consumer(settings, "g")
    assert err.value.message.startswith("invalid share consumer configuration: ")
    assert "\n" not in err.value.message


def test_the_refused_settings_are_consumer_settings_only() -> None:
    assert "bootstrap.servers" not in SHARE_CONSUMER_REFUSES
    assert "group.id" not in SHARE_CONSUMER_REFUSES
