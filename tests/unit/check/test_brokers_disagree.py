"""A broker setting the brokers disagree on: one value stands for all only when they agree;
otherwise the weakest for durability (or the lowest-id broker's), naming its broker."""

from __future__ import annotations

from types import MappingProxyType

from kaudit.check.rules.common import broker_value, broker_values, provenance, topic_value
from kaudit.cluster.model import (
    Broker,
    ClusterSnapshot,
    ConfigSource,
    ConfigValue,
    Topic,
    freeze_configs,
)

STATIC, DYNAMIC = ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DYNAMIC_BROKER_CONFIG


def _snapshot(per_broker: dict[int, dict[str, tuple[str, ConfigSource]]]) -> ClusterSnapshot:
    return ClusterSnapshot(
        cluster_id="c", controller_id=1,
        brokers=tuple(Broker(i, "h", 9000 + i) for i in per_broker),
        broker_configs=MappingProxyType({i: freeze_configs({
            name: ConfigValue(name, value, source) for name, (value, source) in cfg.items()})
            for i, cfg in per_broker.items()}),
        topics=(), taken_at="2026-06-01T00:00:00+00:00")


def test_brokers_that_agree_give_their_value_whatever_its_source() -> None:
    snap = _snapshot({1: {"min.insync.replicas": ("2", STATIC)},
                      2: {"min.insync.replicas": ("2", DYNAMIC)}})
    assert broker_value(snap, "min.insync.replicas") == ConfigValue(
        "min.insync.replicas", "2", STATIC)


def test_brokers_that_disagree_give_the_weakest_naming_its_broker() -> None:
    snap = _snapshot({1: {"min.insync.replicas": ("2", STATIC),
                          "unclean.leader.election.enable": ("false", STATIC),
                          "transaction.max.timeout.ms": ("900000", STATIC),
                          "log.flush.interval.ms": ("1000", STATIC)},
                      2: {"min.insync.replicas": ("1", DYNAMIC),
                          "unclean.leader.election.enable": ("false", STATIC),
                          "transaction.max.timeout.ms": ("3600000", DYNAMIC),
                          "log.flush.interval.ms": ("5", DYNAMIC)},
                      3: {"min.insync.replicas": ("3", STATIC),
                          "unclean.leader.election.enable": ("true", DYNAMIC),
                          "transaction.max.timeout.ms": ("900000", STATIC),
                          "log.flush.interval.ms": ("1000", STATIC)}})
    weakest = {name: (v.value, v.broker) for name in (
        "min.insync.replicas", "unclean.leader.election.enable", "transaction.max.timeout.ms",
        "log.flush.interval.ms") for v in [broker_value(snap, name)]}
    assert weakest == {"min.insync.replicas": ("1", 2),
                       "unclean.leader.election.enable": ("true", 3),
                       "transaction.max.timeout.ms": ("3600000", 2),
                       # no known direction: the lowest-id broker's, still named
                       "log.flush.interval.ms": ("1000", 1)}
    said = provenance(broker_value(snap, "min.insync.replicas"))
    assert said == ("inherited from a per-broker dynamic config of broker 2, where the "
                    "brokers disagree (the weakest of their values)")
    assert provenance(broker_value(snap, "log.flush.interval.ms")).endswith(
        "of broker 1, where the brokers disagree")
    # The per-broker rules still say each broker's own.
    assert [(s.name, v.value) for s, v in broker_values(snap, "min.insync.replicas")] == [
        ("1", "2"), ("2", "1"), ("3", "3")]


def test_a_topic_described_with_one_brokers_default_takes_the_weakest() -> None:
    snap = _snapshot({1: {"min.insync.replicas": ("2", STATIC)},
                      2: {"min.insync.replicas": ("1", DYNAMIC)}})
    inherited = Topic("t", False, 1, 3, configs=freeze_configs({
        "min.insync.replicas": ConfigValue("min.insync.replicas", "2", STATIC)}))
    own = Topic("t", False, 1, 3, configs=freeze_configs({
        "min.insync.replicas": ConfigValue("min.insync.replicas", "2",
                                           ConfigSource.DYNAMIC_TOPIC_CONFIG)}))
    assert (topic_value(inherited, snap, "min.insync.replicas").value,
            topic_value(inherited, snap, "min.insync.replicas").broker) == ("1", 2)
    assert topic_value(own, snap, "min.insync.replicas").value == "2"
