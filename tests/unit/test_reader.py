"""Reading topic configs while topics come and go: a topic deleted between the metadata and
the DescribeConfigs answer is left out, not an unreachable cluster (exit 3)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import ResourceType

from kaudit.cluster import reader
from kaudit.cluster.client import AdminSession
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import ConnectionFailure
from kaudit.waiting import Deadline


class ChangingTopics:
    """Stands in for the AdminClient's describe_configs: ``answers[name]`` lists the outcome
    of each successive request for that topic (an error code, or None for its configs)."""

    def __init__(self, answers: dict[str, list[int | None]]) -> None:
        self.answers = answers
        self.asked: list[list[str]] = []

    def describe_configs(self, resources: list[Any], request_timeout: float) -> dict[Any, Any]:
        self.asked.append([r.name for r in resources])
        out = {}
        for resource in resources:
            future: Future[Any] = Future()
            code = self.answers[resource.name].pop(0)
            if code == SILENT:
                pass  # a frozen broker: the answer never comes
            elif code is None:
                future.set_result({})
            else:
                future.set_exception(KafkaException(KafkaError(code)))
            out[resource] = future
        return out

    def poll(self, timeout: float) -> int:
        return 0

    def list_topics(self, timeout: float) -> None:
        self.asked.append(["(metadata)"])


@pytest.fixture()
def session() -> Iterator[AdminSession]:
    # A real session (its waits and error mapping), with the broker's answers scripted.
    yield AdminSession(ConnectionSettings("127.0.0.1:1", timeout=2))


def describe(session: AdminSession, answers: dict[str, list[int | None]],
             restype: Any = ResourceType.TOPIC, unreadable: list[str] | None = None
             ) -> tuple[dict[str, Any], set[str], list[list[str]]]:
    admin = ChangingTopics(answers)
    session.admin = admin  # type: ignore[assignment]
    deleted: set[str] = set()
    configs = reader._describe_configs(session, restype, sorted(answers),
                                       [] if unreadable is None else unreadable,
                                       "topic" if restype == ResourceType.TOPIC else "broker",
                                       Deadline(session.settings.timeout), deleted)
    return configs, deleted, admin.asked


SILENT = -12345


UNKNOWN = KafkaError.UNKNOWN_TOPIC_OR_PART


def test_a_topic_deleted_while_being_read_is_left_out(session: AdminSession) -> None:
    configs, deleted, asked = describe(session, {"kept": [None], "gone": [UNKNOWN] * 3})
    assert set(configs) == {"kept"} and deleted == {"gone"}
    assert asked == [["gone", "kept"], ["gone"], ["gone"]]


def test_a_topic_not_yet_known_to_the_answering_broker_is_asked_for_again(
        session: AdminSession) -> None:
    configs, deleted, asked = describe(session, {"new": [UNKNOWN, None], "old": [None]})
    assert set(configs) == {"new", "old"} and deleted == set()
    assert asked == [["new", "old"], ["new"]]


def test_other_errors_still_mean_the_cluster_could_not_be_read(session: AdminSession) -> None:
    with pytest.raises(ConnectionFailure, match="cannot reach Kafka"):
        describe(session, {"t": [KafkaError.BROKER_NOT_AVAILABLE]})


def test_a_topic_batch_nobody_answers_is_asked_again_within_the_deadline() -> None:
    # A try lasts a quarter of the timeout (2 s at least): time is left for another.
    session = AdminSession(ConnectionSettings("127.0.0.1:1", timeout=8))
    unreadable: list[str] = []
    configs, _, asked = describe(session, {"t": [SILENT, None]}, unreadable=unreadable)
    # Fresh metadata in between: it may name another broker to ask.
    assert set(configs) == {"t"} and asked == [["t"], ["(metadata)"], ["t"]]
    assert unreadable == []


def test_a_broker_that_never_answers_is_unreadable_not_an_unreachable_cluster(
        session: AdminSession) -> None:
    unreadable: list[str] = []
    configs, _, asked = describe(session, {"1": [None], "2": [SILENT]}, ResourceType.BROKER,
                                 unreadable)
    assert set(configs) == {"1"} and asked == [["1"], ["2"]]
    assert unreadable == ["configs of broker 2: no answer within 2s"]
