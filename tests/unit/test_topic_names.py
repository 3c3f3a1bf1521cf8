"""Kafka's topic-name rules, checked before any request (kaudit.cluster.model)."""

from __future__ import annotations

import pytest

from kaudit.cluster.model import topic_name_problem


@pytest.mark.parametrize("name", ["orders", "orders.v2", "__consumer_offsets", "a-b_c.d",
                                  "x" * 249, "..a", "0"])
def test_names_kafka_takes(name: str) -> None:
    assert topic_name_problem(name) is None


@pytest.mark.parametrize("name,problem", [
    ("", "'' cannot be a topic name"),
    (".", "'.' cannot be a topic name"),
    ("..", "'..' cannot be a topic name"),
    ("x" * 250, "a topic name has at most 249 characters, this one 250"),
    ("orders/v2", "'orders/v2' has characters Kafka does not allow in a topic name ('/')"),
    ("a b:c", "'a b:c' has characters Kafka does not allow in a topic name (' :')"),
    ("ordérs", "'ordérs' has characters Kafka does not allow in a topic name ('é')"),
])
def test_names_kafka_refuses_say_why(name: str, problem: str) -> None:
    found = topic_name_problem(name)
    assert found is not None and found.startswith(problem)
