"""A share group's configs, set and read (IncrementalAlterConfigs and DescribeConfigs on a
GROUP resource), for the runs that make their own share group."""

from __future__ import annotations

from kaudit.cluster import client
from kaudit.cluster.client import AdminSession, kafka_message
from kaudit.cluster.model import Broker, ConfigSource, ConfigValue, SharePartition
from kaudit.cluster.share_configs import effective
from kaudit.errors import ConnectionFailure, InputError
from kaudit.waiting import Deadline, wait_for


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
    return {name: str(v.value) for name, v in _described(session, group).items()
            if v.value is not None}


def _described(session: AdminSession, group: str) -> dict[str, ConfigValue]:
    resource = client.ConfigResource(client.ResourceType.GROUP, group)
    timeout = session.settings.timeout
    try:
        future = session.admin.describe_configs([resource], request_timeout=timeout)[resource]
        found = session.outcome(future, timeout + 1)
    except (client.KafkaException, ConnectionFailure):
        return {}
    default = int(client.ConfigSource.DEFAULT_CONFIG.value)
    return {name: ConfigValue(name, None if entry.value is None else str(entry.value),
                              ConfigSource.DEFAULT_CONFIG if int(entry.source) == default
                              else ConfigSource.GROUP_CONFIG)
            for name, entry in found.items()}


def delivery_limit(session: AdminSession, group: str) -> int:
    """How many times the group delivers a record before it archives it."""
    return int(_effective(session, group, "share.delivery.count.limit"))


def lock_duration_ms(session: AdminSession, group: str) -> int:
    """How long the group's members hold a record they were delivered."""
    return int(_effective(session, group, "share.record.lock.duration.ms"))


def _effective(session: AdminSession, group: str, name: str) -> str:
    """Group config ``name`` by the one precedence
    :func:`~kaudit.cluster.share_configs.effective` gives (the group's, the brokers',
    Kafka's)."""

    def broker(synonym: str) -> ConfigValue | None:
        found = session.broker_values((synonym,)).get(synonym)
        return None if found is None else ConfigValue(synonym, found, ConfigSource.UNKNOWN_CONFIG)

    return str(effective(name, _described(session, group).get(name), broker).value)


def _live_brokers(session: AdminSession) -> list[Broker]:
    brokers = session.list_topics().brokers.values()
    return sorted((Broker(b.id, b.host, b.port) for b in brokers), key=lambda b: b.id)


def group_offsets(session: AdminSession, group: str) -> list[SharePartition]:
    """Each share-partition of ``group`` as its coordinator says now: its start offset and
    the records left to deliver or acknowledge (lag); raises when it cannot be read."""
    from kaudit.cluster.protocol_share import share_offsets

    return share_offsets(session.settings, _coordinator_of(session, group), group,
                         Deadline(session.settings.timeout))


def group_coordinator(session: AdminSession, group: str) -> int:
    """The broker id that coordinates share group ``group`` (its members' heartbeats and
    assignments); a failed lookup raises."""
    return _coordinator_of(session, group).id


def _coordinator_of(session: AdminSession, group: str) -> Broker:
    from kaudit.cluster.protocol_share import GROUP_KEY, find_coordinator

    return find_coordinator(session.settings, _live_brokers(session), GROUP_KEY, group,
                            Deadline(session.settings.timeout))


def share_coordinator(session: AdminSession, group: str, topic: str, partition: int) -> int:
    """The share coordinator of ``group``'s share-partition ``topic``-``partition``: the
    leader of the ``__share_group_state`` partition that persists its delivery state; a
    failed lookup raises."""
    from kaudit.cluster.protocol_share import SHARE_KEY, find_coordinator, share_state_key

    found = session.admin.describe_topics(client.TopicCollection([topic]))[topic]
    topic_id = str(session.wait(found).topic_id)
    return find_coordinator(session.settings, _live_brokers(session), SHARE_KEY,
                            share_state_key(group, topic_id, partition),
                            Deadline(session.settings.timeout)).id
