"""The guarantee calculator against the table in its docstring (ARCHITECTURE.md, "Contracts")."""

from __future__ import annotations

from typing import Any

import pytest
from kaudit_rule_cases import build_snapshot

from kaudit.check.clients import ClientConfig, parse_client_config
from kaudit.check.findings import Semantics
from kaudit.check.guarantees import pair_guarantee, producer_semantics, topic_guarantee


def _topic(rf: int, min_isr: int | None, unclean: bool = False,
           broker_min_isr: int | None = None, kafka: str | None = None) -> tuple[Any, Any]:
    configs: dict[str, Any] = {"unclean.leader.election.enable": unclean}
    if min_isr is not None:
        configs["min.insync.replicas"] = min_isr
    case: dict[str, Any] = {"brokers": 5, "topics": [
        {"name": "t", "replication_factor": rf, "configs": configs}]}
    if broker_min_isr is not None:
        case["broker_configs"] = {"min.insync.replicas": broker_min_isr}
    if kafka is not None:
        case["features"] = {"metadata.version": kafka}
    snap = build_snapshot(case)
    return snap.topics[0], snap


def _client(text: str, role: str = "producer", path: str = "p.properties") -> ClientConfig:
    return parse_client_config(text, path, role)  # type: ignore[arg-type]


# rf, min.isr, unclean, metadata.version -> loss_tolerance, write_tolerance, semantics at best
TOPIC_TABLE = [
    (3, 2, False, None, 1, 1, Semantics.exactly_once),   # the durable baseline
    (3, 3, False, None, 2, 0, Semantics.exactly_once),   # min.isr == RF: any broker down blocks
    # min.isr > RF: Kafka 3.7+ enforces min(min.isr, RF) (assumed when metadata.version
    # does not prove 3.7+: brokers may run 3.7+ with an older metadata.version)
    (3, 4, False, None, 2, 0, Semantics.exactly_once),
    (3, 4, False, "4.3-IV0", 2, 0, Semantics.exactly_once),
    (3, 4, False, "3.6-IV2", 2, 0, Semantics.exactly_once),
    (3, 2, True, None, 0, 1, Semantics.exactly_once),    # unclean election truncates acked data
    (1, 1, False, None, 0, 0, Semantics.exactly_once),   # a single copy
    (2, 1, False, None, 0, 1, Semantics.exactly_once),   # ISR may shrink to the leader
    (5, 3, False, None, 2, 2, Semantics.exactly_once),
    (1, 2, False, None, 0, 0, Semantics.exactly_once),
    (1, 2, False, "3.6-IV2", 0, 0, Semantics.exactly_once),
]


@pytest.mark.parametrize(("rf", "min_isr", "unclean", "kafka", "loss", "write", "semantics"),
                         TOPIC_TABLE)
def test_topic_guarantee(rf: int, min_isr: int, unclean: bool, kafka: str | None, loss: int,
                         write: int, semantics: Semantics) -> None:
    topic, snap = _topic(rf, min_isr, unclean, kafka=kafka)
    g = topic_guarantee(topic, snap)
    assert (g.loss_tolerance, g.write_tolerance, g.semantics) == (loss, write, semantics)
    assert g.producer is None
    assert f"min.insync.replicas={min_isr}" in g.reasons


def test_min_isr_above_rf_says_what_the_brokers_enforce() -> None:
    topic, snap = _topic(3, 4, kafka="4.3-IV0")
    reasons = topic_guarantee(topic, snap).reasons
    assert "the brokers enforce min(min.insync.replicas, RF)=3 (Kafka 3.7+)" in reasons
    assert "any broker down blocks acks=all writes" in reasons
    for kafka in (None, "3.6-IV2"):  # not proven by metadata.version: assumed, and said so
        topic, snap = _topic(3, 4, kafka=kafka)
        assert any("assumed: metadata.version does not prove it; older brokers refuse every "
                   "acks=all write" in r for r in topic_guarantee(topic, snap).reasons)


def test_zero_loss_tolerance_says_what_one_failure_does() -> None:
    from kaudit.report.check.words import producer_gives, survives

    topic, snap = _topic(3, 2, unclean=True)
    g = topic_guarantee(topic, snap)
    assert any("truncate" in r for r in g.reasons)
    # Said apart, so "exactly-once" never stands beside "loss tolerance 0" as one label.
    assert producer_gives(g) == ("exactly-once at best, with an idempotent or transactional "
                                 "producer")
    assert survives(g) == ("no broker failure: one can lose acknowledged writes; acks=all "
                           "writes go on with 1 broker down")


def test_min_isr_inherited_from_the_brokers() -> None:
    topic, snap = _topic(3, None, broker_min_isr=2)
    g = topic_guarantee(topic, snap)
    assert (g.loss_tolerance, g.write_tolerance) == (1, 1)
    topic, snap = _topic(3, None)  # Kafka's default 1
    assert topic_guarantee(topic, snap).loss_tolerance == 0


# producer properties -> semantics, pair loss_tolerance on an RF=3/min.isr=2 topic
PAIR_TABLE = [
    ("", Semantics.exactly_once, 1),                                  # Java defaults
    ("acks=1\n", Semantics.at_least_once, 0),
    ("acks=0\n", Semantics.at_most_once, 0),
    ("acks=all\nretries=0\n", Semantics.at_most_once, 1),
    ("enable.idempotence=false\n", Semantics.at_least_once, 1),
    ("transactional.id=tx-1\n", Semantics.exactly_once, 1),
    ("max.in.flight.requests.per.connection=10\n", Semantics.at_least_once, 1),
    ("request.required.acks=-1\n", Semantics.at_least_once, 1),      # librdkafka: off
    ("request.required.acks=-1\nenable.idempotence=true\n", Semantics.exactly_once, 1),
]


@pytest.mark.parametrize(("props", "semantics", "loss"), PAIR_TABLE)
def test_pair_guarantee(props: str, semantics: Semantics, loss: int) -> None:
    topic, snap = _topic(3, 2)
    g = pair_guarantee(_client(props), topic, snap)
    assert (g.semantics, g.loss_tolerance, g.write_tolerance) == (semantics, loss, 1)
    assert g.producer == "p.properties"


def test_acks_one_producer_loses_on_a_durable_topic() -> None:
    topic, snap = _topic(5, 3)
    g = pair_guarantee(_client("acks=1\n"), topic, snap)
    assert g.loss_tolerance == 0
    assert any("acks=1" in r for r in g.reasons)


def test_exactly_once_end_to_end_depends_on_consumers() -> None:
    topic, snap = _topic(3, 2)
    producer = _client("transactional.id=tx\n")
    committed = _client("isolation.level=read_committed\n", "consumer", "c.properties")
    uncommitted = _client("group.id=g\n", "consumer", "c2.properties")
    assert any("consumers read_committed" in r
               for r in pair_guarantee(producer, topic, snap, [committed]).reasons)
    assert any("not exactly-once end to end" in r
               for r in pair_guarantee(producer, topic, snap, [committed, uncommitted]).reasons)
    assert any("end to end only with read_committed" in r
               for r in pair_guarantee(producer, topic, snap).reasons)


def test_idempotence_silently_off_is_named_in_the_reasons() -> None:
    semantics, reasons = producer_semantics(_client("acks=1\n"))
    assert semantics is Semantics.at_least_once
    assert any("silently off because of acks=1 at p.properties:1" in r for r in reasons)


def test_the_canarys_topic_is_audited_and_named_for_what_it_is() -> None:
    snap = build_snapshot({"brokers": 3, "topics": [
        {"name": "kaudit-canary", "replication_factor": 3,
         "configs": {"min.insync.replicas": 2}},
        {"name": "orders", "replication_factor": 3, "configs": {"min.insync.replicas": 2}}]})
    canary, orders = (topic_guarantee(t, snap) for t in snap.topics)
    assert canary.reasons[0] == "kaudit canary's own topic, kept on purpose"
    assert (canary.loss_tolerance, canary.write_tolerance) == (1, 1)  # audited all the same
    assert not any("canary" in r for r in orders.reasons)
