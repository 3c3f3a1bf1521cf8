"""A share group's effective configs, one precedence for ``check``'s rules and for the runs
that make a share group: the group's own where it set one, else the brokers' synonym (the
delivery limit and the lock duration are group configs from Kafka 4.3, broker ones before),
else Kafka's default. Pure: it reads values already read."""

from __future__ import annotations

from collections.abc import Callable

from kaudit.cluster.model import ConfigSource, ConfigValue

GROUP_DEFAULTS = {"share.auto.offset.reset": "latest",
                  "share.isolation.level": "read_uncommitted"}
"""Kafka's defaults for the group configs that have no broker synonym."""
BROKER_SYNONYMS = {"share.delivery.count.limit": ("group.share.delivery.count.limit", "5"),
                   "share.record.lock.duration.ms": ("group.share.record.lock.duration.ms",
                                                     "30000")}
"""The broker synonym of a group config that has one, with Kafka's default."""


def effective(name: str, own: ConfigValue | None,
              broker: Callable[[str], ConfigValue | None]) -> ConfigValue:
    """Group config ``name`` as the group gets it: ``own`` (the group's, as described;
    DescribeConfigs gives every group config, a default one too), else what ``broker``
    says of the broker synonym, else Kafka's default."""
    if own is not None and own.value is not None and own.source != ConfigSource.DEFAULT_CONFIG:
        return own
    if name in BROKER_SYNONYMS:
        synonym, default = BROKER_SYNONYMS[name]
        found = broker(synonym)
        if found is not None and found.value is not None:
            return found
        return ConfigValue(name=synonym, value=default, source=ConfigSource.DEFAULT_CONFIG)
    if own is not None and own.value is not None:
        return own
    return ConfigValue(name=name, value=GROUP_DEFAULTS.get(name),
                       source=ConfigSource.DEFAULT_CONFIG)
