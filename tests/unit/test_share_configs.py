"""A share group's effective config: its own where it set one, the brokers' synonym, then
Kafka's default (one precedence for check's rules and probe share)."""

from __future__ import annotations

from collections.abc import Callable

from kaudit.cluster.model import ConfigSource, ConfigValue
from kaudit.cluster.share_configs import effective

LIMIT = "share.delivery.count.limit"


def _broker(values: dict[str, str]) -> Callable[[str], ConfigValue | None]:
    return lambda name: (ConfigValue(name, values[name], ConfigSource.STATIC_BROKER_CONFIG)
                         if name in values else None)


def test_the_groups_own_value_wins_a_described_default_does_not() -> None:
    own = ConfigValue(LIMIT, "3", ConfigSource.GROUP_CONFIG)
    described_default = ConfigValue(LIMIT, "5", ConfigSource.DEFAULT_CONFIG)
    brokers = _broker({"group.share.delivery.count.limit": "8"})
    assert effective(LIMIT, own, brokers).value == "3"
    # DescribeConfigs gives every group config, its default too: the brokers' setting wins
    assert effective(LIMIT, described_default, brokers) == ConfigValue(
        "group.share.delivery.count.limit", "8", ConfigSource.STATIC_BROKER_CONFIG)
    assert effective(LIMIT, described_default, _broker({})) == ConfigValue(
        "group.share.delivery.count.limit", "5", ConfigSource.DEFAULT_CONFIG)


def test_a_config_without_a_broker_synonym_falls_back_to_kafkas_default() -> None:
    reset = "share.auto.offset.reset"
    assert effective(reset, None, _broker({})).value == "latest"
    described = ConfigValue(reset, "latest", ConfigSource.DEFAULT_CONFIG)
    assert effective(reset, described, _broker({})) is described
