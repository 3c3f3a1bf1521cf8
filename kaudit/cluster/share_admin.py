"""A share group's configs, set and read (IncrementalAlterConfigs and DescribeConfigs on a
GROUP resource), for the runs that make their own share group."""

from __future__ import annotations

from kaudit.cluster import client
from kaudit.cluster.client import AdminSession, kafka_message
from kaudit.errors import ConnectionFailure, InputError
from kaudit.waiting import wait_for

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
    # A group config travels through the metadata log: the broker that answers next may
    # not have it yet, and a member that fetches before it does starts at the log end.
    if not wait_for(lambda: all(group_configs(session, group).get(k) == v
                                for k, v in configs.items()), timeout):
        raise ConnectionFailure(f"the share group {group}'s configs {configs} were not "
                                f"applied within {timeout:g}s")


def group_configs(session: AdminSession, group: str) -> dict[str, str]:
    """The group's configs as one broker describes them now ({} when it does not answer)."""
    resource = client.ConfigResource(client.ResourceType.GROUP, group)
    timeout = session.settings.timeout
    try:
        future = session.admin.describe_configs([resource], request_timeout=timeout)[resource]
        found = session.outcome(future, timeout + 1)
    except (client.KafkaException, ConnectionFailure):
        return {}
    return {name: str(entry.value) for name, entry in found.items() if entry.value is not None}


def delivery_limit(session: AdminSession, group: str) -> int:
    """How many times the group delivers a record before it archives it: the group's
    ``share.delivery.count.limit`` (Kafka 4.3), else the brokers'
    ``group.share.delivery.count.limit``, else Kafka's default."""
    own = group_configs(session, group).get("share.delivery.count.limit")
    if own is not None:
        return int(own)
    found = session.broker_values(("group.share.delivery.count.limit",))
    return int(found.get("group.share.delivery.count.limit", DEFAULT_DELIVERY_LIMIT))
