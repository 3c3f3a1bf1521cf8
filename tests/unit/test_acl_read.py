"""Reading the ACL bindings: Kafka's names kept (the cluster is CLUSTER, not confluent-kafka's
BROKER), and each refusal turned into why they are unread, never an error. (The lab test
tests/integration/test_acl_audit.py proves the same against Kafka.)"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from kaudit.cluster import reader
from kaudit.cluster.acl import AclBinding as Binding
from kaudit.cluster.client import AdminSession
from kaudit.connection.settings import ConnectionSettings
from kaudit.waiting import Deadline


class ScriptedAcls:
    """Stands in for the AdminClient's describe_acls: one answer, bindings or an error."""

    def __init__(self, answer: list[Any] | int) -> None:
        self.answer = answer
        self.filters: list[Any] = []

    def describe_acls(self, acl_filter: Any, request_timeout: float) -> Future[Any]:
        self.filters.append(acl_filter)
        future: Future[Any] = Future()
        if isinstance(self.answer, int):
            future.set_exception(KafkaException(KafkaError(self.answer)))
        else:
            future.set_result(self.answer)
        return future

    def poll(self, timeout: float) -> int:
        return 0


@pytest.fixture()
def session() -> Iterator[AdminSession]:
    yield AdminSession(ConnectionSettings("127.0.0.1:1", timeout=2))


def read(session: AdminSession, answer: list[Any] | int) -> tuple[Any, Any, ScriptedAcls]:
    admin = ScriptedAcls(answer)
    session.admin = admin
    acls, why = reader.read_acls(session, (), Deadline(2))
    return acls, why, admin


def test_every_binding_is_asked_for_and_kept_in_kafkas_names(session: AdminSession) -> None:
    answer = [
        AclBinding(ResourceType.TOPIC, "orders.", ResourcePatternType.PREFIXED, "User:*", "*",
                   AclOperation.WRITE, AclPermissionType.ALLOW),
        AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL,
                   "User:ops", "10.0.0.1", AclOperation.ALTER_CONFIGS, AclPermissionType.DENY),
    ]
    acls, why, admin = read(session, answer)
    assert why is None
    assert acls == (
        Binding("CLUSTER", "kafka-cluster", "LITERAL", "User:ops", "10.0.0.1",
                "ALTER_CONFIGS", "DENY"),
        Binding("TOPIC", "orders.", "PREFIXED", "User:*", "*", "WRITE", "ALLOW"),
    )
    asked = admin.filters[0]
    assert (asked.restype, asked.name, asked.resource_pattern_type, asked.principal,
            asked.operation, asked.permission_type) == (
        ResourceType.ANY, None, ResourcePatternType.ANY, None, AclOperation.ANY,
        AclPermissionType.ANY)


@pytest.mark.parametrize(("code", "why"), [
    (KafkaError.SECURITY_DISABLED, reader.NO_AUTHORIZER),
    (KafkaError.CLUSTER_AUTHORIZATION_FAILED,
     "not authorized (DescribeAcls needs DESCRIBE on the cluster)"),
    (KafkaError.INVALID_REQUEST, "Kafka answered INVALID_REQUEST: "),
])
def test_a_refusal_is_why_the_acls_are_unread(session: AdminSession, code: int,
                                              why: str) -> None:
    acls, said, _ = read(session, code)
    assert acls is None and said.startswith(why)



@pytest.mark.parametrize(("kafka_says", "read"), [
    ((None, None), ((), None)),  # Kafka answered, without an error: there are none
    (("SECURITY_DISABLED", None), (None, reader.NO_AUTHORIZER)),
    (("CLUSTER_AUTHORIZATION_FAILED", None),
     (None, "not authorized (DescribeAcls needs DESCRIBE on the cluster)")),
    ((None, "broker 1 gave no answer within 2s"),
     (None, "no binding was returned, and Kafka could not be asked why: broker 1 gave no "
            "answer within 2s")),
])
def test_no_bindings_is_believed_only_once_kafka_says_so_itself(
        session: AdminSession, monkeypatch: pytest.MonkeyPatch,
        kafka_says: tuple[str | None, str | None], read: tuple[Any, Any]) -> None:
    # librdkafka hands back no bindings for SECURITY_DISABLED and
    # CLUSTER_AUTHORIZATION_FAILED too (seen on the lab): kafka-python asks again.
    monkeypatch.setattr(reader, "describe_acls_error", lambda *_: kafka_says)
    session.admin = ScriptedAcls([])
    assert reader.read_acls(session, (), Deadline(2)) == read
