"""A share group's configs, set and read (IncrementalAlterConfigs and DescribeConfigs on a
GROUP resource), for the runs that make their own share group."""

from __future__ import annotations

from kaudit.cluster import client
from kaudit.cluster.client import AdminSession, kafka_message
from kaudit.errors import InputError

DEFAULT_DELIVERY_LIMIT = 5
"""Kafka's group.share.delivery.count.limit."""


def set_group_configs(session: AdminSession, group: str, configs: dict[str, str]) -> None:
    """Set ``configs`` on share group ``group`` (it need not exist yet); a value the brokers
    refuse is exit 2 with their reason."""
    resource = client.ConfigResource(client.ResourceType.GROUP, group, incremental_configs=[
        client.ConfigEntry(name, value, incremental_operation=client.AlterConfigOpType.SET)
        for name, value in configs.items()])
    timeout = session.settings.timeout
    for future in session.admin.incremental_alter_configs(
            [resource], request_timeout=timeout).values():
        try:
            session.outcome(future, timeout + 1)
        except client.KafkaException as exc:
            raise InputError(f"the brokers refused the share group's configs "
                             f"{configs}: {kafka_message(exc)}") from None


def delivery_limit(session: AdminSession, group: str) -> int:
    """How many times the group delivers a record before it archives it: the group's
    ``share.delivery.count.limit`` (Kafka 4.3), else the brokers'
    ``group.share.delivery.count.limit``, else Kafka's default."""
    resource = client.ConfigResource(client.ResourceType.GROUP, group)
    timeout = session.settings.timeout
    try:
        future = session.admin.describe_configs([resource], request_timeout=timeout)[resource]
        own = session.outcome(future, timeout + 1).get("share.delivery.count.limit")
    except client.KafkaException:
        own = None
    if own is not None and own.value is not None:
        return int(own.value)
    found = session.broker_values(("group.share.delivery.count.limit",))
    return int(found.get("group.share.delivery.count.limit", DEFAULT_DELIVERY_LIMIT))
