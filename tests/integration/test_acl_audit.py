"""ACL bindings as kaudit reads them, against what Kafka's own AclCommand (`kafka-acls.sh
--list`) prints, on a secured lab (StandardAuthorizer) given a few bindings of our own; the
ACL rules fire on exactly the bindings made to break them. On the plaintext lab (no
authorizer) the ACLs are unread, with why, and no error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaudit.connection.properties import read_properties, translate_java_properties
from tests.conftest import Lab, run_kaudit, wait_for
from tests.integration.test_security import SecureLab, _secure_lab
from tests.kafka_tools import kafka_tool

pytestmark = pytest.mark.kafka

Binding = tuple[str, str, str, str, str, str, str]
"""(resource type, name, pattern type, principal, host, operation, permission)."""

OURS: list[Binding] = [
    # Broken: every principal may write every topic starting with acl-orders. (KA507).
    ("TOPIC", "acl-orders.", "PREFIXED", "User:*", "*", "WRITE", "ALLOW"),
    # Broken under the test's policy: dev is not in acls.alter (KA509).
    ("CLUSTER", "kafka-cluster", "LITERAL", "User:dev", "*", "ALTER_CONFIGS", "ALLOW"),
    # Not broken: a DENY for every principal takes the DELETE back.
    ("TOPIC", "acl-payments", "LITERAL", "User:*", "*", "DELETE", "ALLOW"),
    ("TOPIC", "acl-payments", "LITERAL", "User:*", "*", "DELETE", "DENY"),
    # Not broken: reading; and ops is in acls.alter.
    ("TOPIC", "*", "LITERAL", "User:*", "*", "READ", "ALLOW"),
    ("CLUSTER", "kafka-cluster", "LITERAL", "User:ops", "*", "ALTER_CONFIGS", "ALLOW"),
]
TOPICS = ("acl-orders.eu", "acl-payments")


def test_the_plaintext_lab_has_no_authorizer_so_its_acls_are_unread_not_an_error(
        lab: Lab, tmp_path: Path) -> None:
    out = tmp_path / "snapshot.json"
    taken = run_kaudit("snapshot", "-b", lab.bootstrap, "-o", str(out))
    assert taken.code == 0, taken.stderr
    doc = json.loads(out.read_text())
    assert doc["acls"] is None
    assert "no authorizer" in doc["acls_unread"] and "SECURITY_DISABLED" in doc["acls_unread"]
    assert not any("ACL" in item for item in doc["unreadable"]), doc["unreadable"]
    check = run_kaudit("check", "-b", lab.bootstrap, "--exit-zero", "-f", "json")
    assert check.code == 0, check.stderr
    result = json.loads(check.stdout)
    assert result["acls_unread"] == doc["acls_unread"]
    rules = {f["rule"] for f in result["findings"]}
    assert "KA503" in rules  # the missing authorizer is said once, by its own rule
    assert not rules & {"KA507", "KA508", "KA509"}
    assert not any("ACL" in f["message"] for f in result["findings"] if f["rule"] == "KA002")
    table = run_kaudit("check", "-b", lab.bootstrap, "--exit-zero", "-f", "table")
    assert "ACLs: not read (the cluster has no authorizer" in table.stdout


def super_admin(lab: SecureLab) -> Any:
    """An AdminClient of the lab's super user, admin."""
    from confluent_kafka.admin import AdminClient

    admin_props = read_properties(lab.security / "admin.properties")
    return AdminClient(translate_java_properties(admin_props)
                       | {"bootstrap.servers": lab.bootstrap})


def acl_bindings(bindings: list[Binding]) -> list[Any]:
    """confluent-kafka's AclBinding of each of ``bindings``."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    rtypes = {"TOPIC": ResourceType.TOPIC, "CLUSTER": ResourceType.BROKER}
    return [AclBinding(rtypes[rtype], name, ResourcePatternType[pattern], principal, host,
                       AclOperation[op], AclPermissionType[permission])
            for rtype, name, pattern, principal, host, op, permission in bindings]


@pytest.fixture(scope="module")
def acl_lab() -> Iterator[SecureLab]:
    """A secured lab with our topics and bindings (made by its super user, admin)."""
    from confluent_kafka.admin import NewTopic

    for secured in _secure_lab("sasl_ssl"):
        admin = super_admin(secured)
        for future in admin.create_topics([NewTopic(t, 1, 1) for t in TOPICS]).values():
            future.result(60)
        for future in admin.create_acls(acl_bindings(OURS), request_timeout=30).values():
            future.result(60)
        yield secured


def kafka_acls(lab: SecureLab) -> set[Binding]:
    """Every binding as `kafka-acls.sh --list` prints it (as alice, who may describe them)."""
    out = kafka_tool("org.apache.kafka.tools.AclCommand", "--bootstrap-server", lab.bootstrap,
                     "--command-config", str(lab.properties), "--list").stdout
    found: set[Binding] = set()
    resource: tuple[str, str, str] | None = None
    for line in out.splitlines():
        pattern = re.search(r"ResourcePattern\(resourceType=(\w+), name=(.*), "
                            r"patternType=(\w+)\)", line)
        if pattern:
            resource = (pattern.group(1), pattern.group(2), pattern.group(3))
            continue
        entry = re.search(r"\(principal=(.+), host=(.+), operation=(\w+), "
                          r"permissionType=(\w+)\)", line)
        if entry:
            assert resource is not None, out
            found.add((*resource, *entry.groups()))  # type: ignore[arg-type]
    return found


def kaudit_acls(doc: dict[str, Any]) -> set[Binding]:
    return {(a["resource_type"], a["resource_name"], a["pattern_type"], a["principal"],
             a["host"], a["operation"], a["permission"]) for a in doc["acls"]}


def test_kaudit_reads_every_binding_as_kafka_acls_lists_it(acl_lab: SecureLab,
                                                           tmp_path: Path) -> None:
    # Bindings reach the broker's authorizer through the metadata log: wait until Kafka's
    # own tool lists ours, then both must agree on the whole set.
    assert wait_for(lambda: set(OURS) <= kafka_acls(acl_lab), 60), kafka_acls(acl_lab)
    theirs = kafka_acls(acl_lab)
    out = tmp_path / "snapshot.json"
    taken = acl_lab.run("snapshot", "-o", str(out))
    assert taken.code == 0, taken.stderr
    doc = json.loads(out.read_text())
    assert doc["acls_unread"] is None
    assert kaudit_acls(doc) == theirs
    # The lab's own grants to alice are there too (ALL on every topic among them).
    assert ("TOPIC", "*", "LITERAL", "User:alice", "*", "ALL", "ALLOW") in theirs
    # The same snapshot judged offline finds what the live check finds.
    offline = acl_lab.run("check", "--exit-zero", "-f", "json", "--snapshot", str(out))
    assert {f["rule"] for f in json.loads(offline.stdout)["findings"]} >= {"KA507"}


def _check(lab: SecureLab, tmp_path: Path, acls: str) -> list[dict[str, Any]]:
    policy = tmp_path / "team.yaml"
    policy.write_text(f"acls:\n{acls}", encoding="utf-8")
    run = lab.run("check", "--exit-zero", "-f", "json", "--policy", str(policy))
    assert run.code == 0, run.stderr
    findings: list[dict[str, Any]] = json.loads(run.stdout)["findings"]
    return [f for f in findings if f["rule"] in ("KA507", "KA508", "KA509")]


def test_the_acl_rules_fire_on_exactly_the_broken_bindings(acl_lab: SecureLab,
                                                            tmp_path: Path) -> None:
    assert wait_for(lambda: set(OURS) <= kafka_acls(acl_lab), 60)
    found = _check(acl_lab, tmp_path, "  alter: [User:admin, User:ops, User:alice]\n"
                                      "  delete: [User:admin, User:alice]\n")
    assert [(f["rule"], f["subject"]) for f in found] == [
        ("KA507", {"kind": "topic", "name": "acl-orders.eu"}),
        ("KA509", {"kind": "cluster", "name": found[1]["subject"]["name"]}),
    ], found
    wildcard, dev = found
    assert wildcard["actual"] == "User:* may WRITE"
    assert wildcard["source"] == ("User:* ALLOW WRITE on TOPIC 'acl-orders.' (PREFIXED) "
                                  "from host *")
    assert dev["actual"] == "User:dev may ALTER_CONFIGS"
    assert dev["expected"] == "acls.alter: User:admin, User:ops, User:alice"
    assert "team.yaml:2" in dev["message"]


def test_the_labs_own_grant_to_alice_is_reported_only_when_a_policy_leaves_her_out(
        acl_lab: SecureLab, tmp_path: Path) -> None:
    assert wait_for(lambda: set(OURS) <= kafka_acls(acl_lab), 60)
    found = _check(acl_lab, tmp_path, "  alter: [User:admin, User:ops]\n")
    ka509 = sorted((f["actual"], f["source"]) for f in found if f["rule"] == "KA509")
    assert ka509 == [
        ("User:alice may ALTER_CONFIGS, ALTER",
         "User:alice ALLOW ALL on TOPIC '*' (LITERAL) from host *"),
        ("User:dev may ALTER_CONFIGS",
         "User:dev ALLOW ALTER_CONFIGS on CLUSTER 'kafka-cluster' (LITERAL) from host *"),
    ], found
    alice = next(f for f in found if f["actual"].startswith("User:alice"))
    assert "on every topic" in alice["message"] and "acl-orders.eu" in alice["message"]


WILDCARD_ALTER_CONFIGS: Binding = ("CLUSTER", "kafka-cluster", "LITERAL", "User:*", "*",
                                   "ALTER_CONFIGS", "ALLOW")
WILDCARD_DENY: Binding = ("CLUSTER", "kafka-cluster", "LITERAL", "User:*", "*",
                          "ALTER_CONFIGS", "DENY")


def test_every_principal_allowed_to_alter_the_clusters_configs_is_ka508_until_a_deny(
        acl_lab: SecureLab, tmp_path: Path) -> None:
    """KA508 fires on a User:* grant of ALTER_CONFIGS on the cluster made to break it, and
    not once a User:* DENY of the same takes it back; the bindings go again afterwards, so
    the other tests see only OURS."""
    from confluent_kafka.admin import AclBindingFilter

    admin = super_admin(acl_lab)
    policy = "  alter: [User:admin, User:ops, User:alice, User:dev]\n"

    def ka508() -> list[dict[str, Any]]:
        return [f for f in _check(acl_lab, tmp_path, policy) if f["rule"] == "KA508"]

    def change(create: list[Binding], listed: set[Binding]) -> None:
        for future in admin.create_acls(acl_bindings(create), request_timeout=30).values():
            future.result(60)
        assert wait_for(lambda: listed <= kafka_acls(acl_lab), 60), kafka_acls(acl_lab)

    assert wait_for(lambda: set(OURS) <= kafka_acls(acl_lab), 60)
    assert ka508() == []
    try:
        change([WILDCARD_ALTER_CONFIGS], {WILDCARD_ALTER_CONFIGS})
        (found,) = ka508()
        assert found["subject"]["kind"] == "cluster"
        assert found["actual"] == "User:* may ALTER_CONFIGS"
        assert found["source"] == ("User:* ALLOW ALTER_CONFIGS on CLUSTER 'kafka-cluster' "
                                   "(LITERAL) from host *")
        change([WILDCARD_DENY], {WILDCARD_ALTER_CONFIGS, WILDCARD_DENY})
        assert ka508() == []
    finally:
        for binding in acl_bindings([WILDCARD_ALTER_CONFIGS, WILDCARD_DENY]):
            filter_ = AclBindingFilter(binding.restype, binding.name,
                                       binding.resource_pattern_type, binding.principal,
                                       binding.host, binding.operation,
                                       binding.permission_type)
            for future in admin.delete_acls([filter_], request_timeout=30).values():
                future.result(60)
    assert wait_for(lambda: not {WILDCARD_ALTER_CONFIGS, WILDCARD_DENY} & kafka_acls(acl_lab),
                    60), kafka_acls(acl_lab)
