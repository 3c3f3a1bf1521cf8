"""A configuration value as Kafka reports it: its value, where it came from (Kafka's
ConfigSource names) and whether it is secret; and its form in a snapshot file.

Topics, brokers and groups carry their configs as these (:mod:`kaudit.cluster.model`
re-exports them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any


class ConfigSource(StrEnum):
    """Where an effective configuration value came from (Kafka's ConfigSource names)."""

    DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"
    DYNAMIC_BROKER_CONFIG = "DYNAMIC_BROKER_CONFIG"
    DYNAMIC_DEFAULT_BROKER_CONFIG = "DYNAMIC_DEFAULT_BROKER_CONFIG"
    STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"
    DEFAULT_CONFIG = "DEFAULT_CONFIG"
    DYNAMIC_BROKER_LOGGER_CONFIG = "DYNAMIC_BROKER_LOGGER_CONFIG"
    GROUP_CONFIG = "GROUP_CONFIG"
    """Set on a group (kafka-configs.sh --entity-type groups)."""
    UNKNOWN_CONFIG = "UNKNOWN_CONFIG"
    MANIFEST = "MANIFEST"
    """Declared in a manifest (e.g. a Strimzi KafkaTopic) that is not applied yet."""
    CLIENT_CONFIG = "CLIENT_CONFIG"
    """Set in a client configuration file."""
    CLIENT_DEFAULT = "CLIENT_DEFAULT"
    """Not set in the client file; the client library's default applies."""

    @property
    def is_default(self) -> bool:
        """True when nobody chose this value for the topic itself (it was inherited)."""
        return self is not ConfigSource.DYNAMIC_TOPIC_CONFIG and self is not ConfigSource.MANIFEST


@dataclass(frozen=True)
class ConfigValue:
    """One effective configuration entry."""

    name: str
    value: str | None
    """The value as Kafka reports it (strings); None when unset or hidden."""
    source: ConfigSource
    sensitive: bool = False
    """Kafka marks passwords and keys sensitive; their values are never stored."""
    broker: int | None = None
    """The broker this value is the setting of, when the brokers disagree on it and one
    broker's value stands for all (:meth:`ClusterSnapshot.broker_config`); else None."""


ConfigMap = Mapping[str, ConfigValue]


def freeze_configs(entries: Mapping[str, ConfigValue]) -> ConfigMap:
    """An immutable view of a config mapping."""
    return MappingProxyType(dict(entries))


def config_to_dict(cfg: ConfigMap) -> dict[str, Any]:
    return {
        name: {"value": None if c.sensitive else c.value, "source": c.source.value,
               **({"sensitive": True} if c.sensitive else {})}
        for name, c in sorted(cfg.items())
    }


def config_from_dict(raw: Mapping[str, Any]) -> ConfigMap:
    return freeze_configs({
        name: ConfigValue(name=name, value=entry.get("value"),
                          source=ConfigSource(entry.get("source", "UNKNOWN_CONFIG")),
                          sensitive=bool(entry.get("sensitive", False)))
        for name, entry in raw.items()
    })
