"""ACL bindings: Kafka's matching (pattern types, the wildcards, DENY over ALLOW), their
place in snapshot files, and the policy's ``acls:`` lists."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from kaudit.check.policy.loader import load_policies, load_policy
from kaudit.check.rules.acls import TOPIC_OPERATIONS, wildcard_grants
from kaudit.cluster.acl import AclBinding, overriding_deny
from kaudit.cluster.model import (
    ACLS_NOT_IN_SNAPSHOT,
    ClusterSnapshot,
    snapshot_from_dict,
    snapshot_to_dict,
)
from kaudit.errors import FileInputError


def acl(name: str, operation: str = "WRITE", *, pattern: str = "LITERAL",
        principal: str = "User:*", permission: str = "ALLOW", host: str = "*",
        rtype: str = "TOPIC") -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, operation, permission)


@pytest.mark.parametrize(("binding", "topic", "matches"), [
    (acl("orders"), "orders", True),
    (acl("orders"), "orders-dlq", False),
    (acl("*"), "anything", True),
    (acl("orders.", pattern="PREFIXED"), "orders.eu", True),
    (acl("orders.", pattern="PREFIXED"), "orders", False),
    (acl("*", pattern="PREFIXED"), "orders", False),  # a prefix "*" is no wildcard
    (acl("orders", rtype="GROUP"), "orders", False),
])
def test_a_pattern_matches_as_kafkas_authorizer_does(binding: AclBinding, topic: str,
                                                     matches: bool) -> None:
    assert binding.matches("TOPIC", topic) is matches


def test_all_covers_every_operation_and_the_wildcard_principal_every_principal() -> None:
    assert acl("t", "ALL").covers("DELETE") and not acl("t", "READ").covers("DELETE")
    assert acl("t").concerns("User:alice") and not acl("t", principal="User:bob").concerns(
        "User:alice")


def test_a_deny_wins_only_where_it_matches_the_same_principal_host_and_operation() -> None:
    grant = acl("orders.", "ALL", pattern="PREFIXED", principal="User:etl")
    deny_eu = acl("orders.eu", "DELETE", principal="User:etl", permission="DENY")
    assert overriding_deny([grant, deny_eu], grant, "DELETE", ("TOPIC", "orders.eu")) == deny_eu
    assert overriding_deny([grant, deny_eu], grant, "DELETE", ("TOPIC", "orders.us")) is None
    assert overriding_deny([grant, deny_eu], grant, "WRITE", ("TOPIC", "orders.eu")) is None
    # Pattern-wide, a literal DENY covers one topic, not everything the prefix grants.
    assert overriding_deny([grant, deny_eu], grant, "DELETE") is None
    wider = acl("orders", "ALL", pattern="PREFIXED", principal="User:*", permission="DENY")
    assert overriding_deny([grant, wider], grant, "DELETE") == wider
    # A DENY for another principal, or from one host, leaves an every-host grant alone.
    other = acl("*", "ALL", principal="User:bob", permission="DENY")
    one_host = acl("*", "ALL", principal="User:etl", permission="DENY", host="10.0.0.9")
    assert overriding_deny([grant, other, one_host], grant, "DELETE",
                           ("TOPIC", "orders.eu")) is None


def test_a_deny_for_one_principal_does_not_take_the_wildcards_grant_from_the_others() -> None:
    acls = [acl("*", "ALL"), acl("orders", "ALL", principal="User:mallory", permission="DENY"),
            acl("orders", "WRITE", permission="DENY")]
    grants = wildcard_grants(acls, ("TOPIC", "orders"), TOPIC_OPERATIONS)
    held = [g.operation for g in grants if g.denied_by is None]
    assert held == ["DELETE", "ALTER_CONFIGS", "ALTER"]
    assert [g.denied_by for g in grants if g.operation == "WRITE"] == [acls[2]]


def _snapshot() -> ClusterSnapshot:
    return ClusterSnapshot(cluster_id="c", controller_id=1, brokers=(), broker_configs={},
                           topics=(), taken_at="2026-06-01T00:00:00+00:00")


def test_acls_survive_a_snapshot_file_and_an_older_one_says_it_has_none() -> None:
    snap = replace(_snapshot(), acls=(acl("orders.", pattern="PREFIXED"),
                                      acl("kafka-cluster", "ALTER_CONFIGS", rtype="CLUSTER",
                                          principal="User:ops", host="10.0.0.1")))
    again = snapshot_from_dict(json.loads(json.dumps(snapshot_to_dict(snap))), "live")
    assert again == snap and again.acls_unread is None
    unread = replace(_snapshot(), acls_unread="not authorized")
    again = snapshot_from_dict(json.loads(json.dumps(snapshot_to_dict(unread))), "live")
    assert again.acls is None and again.acls_unread == "not authorized"
    doc = snapshot_to_dict(_snapshot())
    del doc["acls"], doc["acls_unread"]
    old = snapshot_from_dict(doc, "snapshot:old.json")
    assert old.acls is None and old.acls_unread == ACLS_NOT_IN_SNAPSHOT


def _write(tmp_path: Path, text: str, name: str = "policy.yaml") -> str:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return str(tmp_path / name)


def test_acls_lists_load_and_layer_key_by_key(tmp_path: Path) -> None:
    first = _write(tmp_path, "acls:\n  alter: [User:ops]\n  delete: ['User:job-*']\n", "a.yaml")
    second = _write(tmp_path, "acls:\n  delete: []\n  write: User:app\n", "b.yaml")
    policies = load_policies([first, second])
    assert dict(policies.acls.principals) == {"alter": ("User:ops",), "delete": (),
                                              "write": ("User:app",)}
    assert policies.acls.origins["delete"] == f"{second}:2"
    assert policies.acls.allows("alter", "User:ops") is True
    assert policies.acls.allows("delete", "User:job-7") is False  # the later list is empty
    assert load_policies([first]).acls.allows("delete", "User:job-7") is True
    assert load_policies([first]).acls.allows("write", "User:anyone") is None


@pytest.mark.parametrize(("text", "line", "message"), [
    ("acls:\n  alter: [User:ops, alice]\n", 2, "acls.alter: 'alice' is not a principal"),
    ("acls:\n  delet: [User:ops]\n", 2, "delet"),
    ("acls: [User:ops]\n", 1, "acls"),
])
def test_bad_acls_lists_name_file_and_line(tmp_path: Path, text: str, line: int,
                                           message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(FileInputError) as err:
        load_policy(path)
    assert err.value.line == line, str(err.value)
    assert message in str(err.value)
