"""Policy files: valid ones load as documented; invalid ones fail with file:line."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from kaudit.check.findings import Severity
from kaudit.check.policy.builtin import builtin_names
from kaudit.check.policy.loader import load_policies, load_policy, parse_policy
from kaudit.errors import FileInputError, InputError


def _write(tmp_path: Path, text: str, name: str = "policy.yaml") -> str:
    file = tmp_path / name
    file.write_text(text, encoding="utf-8")
    return str(file)


def test_builtin_profiles_exist() -> None:
    assert {"durable", "exactly-once", "at-least-once", "best-effort"} <= set(builtin_names())


def test_builtin_profiles_say_what_the_design_says() -> None:
    durable = load_policy("durable").as_profile().thresholds
    assert (durable.min_replication_factor, durable.min_insync_replicas,
            durable.min_write_tolerance) == (3, 2, 1)
    assert durable.producer_acks == "all" and durable.producer_idempotence
    assert not durable.allow_unclean_leader_election
    eos = load_policy("exactly-once").as_profile().thresholds
    assert eos.producer_transactions and eos.consumer_read_committed
    assert eos.consumer_manual_commit and eos.min_insync_replicas == 2  # inherited from durable
    best = load_policy("best-effort").as_profile().thresholds
    assert best.loss_accepted and best.producer_acks == "0"


def test_full_policy_loads(tmp_path: Path) -> None:
    (tmp_path / "clients").mkdir()
    (tmp_path / "clients" / "orders.properties").write_text("acks=all\n")
    path = _write(tmp_path, """\
name: shop
extends: durable
thresholds:
  min_replication_factor: 4
profiles:
  audit-log:
    extends: durable
    thresholds: {min_insync_replicas: 3}
    disable: [KA110]
topics:
  - match: ["orders.*", "payments"]
    exclude: orders.tmp.*
    profile: exactly-once
  - match: '^metrics\\.[a-z]+$'
    regex: true
    profile: best-effort
  - match: "audit.*"
    profile: audit-log
  - match: "scratch.*"
    skip: true
rules:
  KA107: info
  topic.replicas-in-one-rack: {severity: error}
  KA306: {enabled: false}
disable: [broker.default-replication-factor]
waivers:
  - rule: KA101
    topic: "legacy.*"
    reason: moving to the new cluster
    expires: 2027-01-31
clients:
  - config: clients/orders.properties
    role: producer
    topics: ["orders.*"]
""")
    policy = load_policy(path)
    assert policy.name == "shop"
    assert policy.threshold_overrides == {"min_replication_factor": 4}
    assert policy.profiles["audit-log"].thresholds.min_insync_replicas == 3
    assert policy.profiles["audit-log"].disabled_rules == {"KA110"}
    assert policy.rules["KA110"].severity is Severity.error
    assert policy.rules["KA306"].enabled is False
    assert policy.disabled == {"KA304"}
    assert policy.waivers[0].expires == date(2027, 1, 31)
    assert policy.waivers[0].origin == f"{path}:27"
    assert policy.clients[0].client.acks == "all"
    assert policy.clients[0].client.role == "producer"
    pset = load_policies([path])
    assert pset.default_profile.thresholds.min_replication_factor == 4
    assert pset.profile_for("orders.eu")[0].name == "exactly-once"  # type: ignore[union-attr]
    assert pset.profile_for("orders.tmp.x")[0].name == "shop"  # type: ignore[union-attr]
    assert pset.profile_for("metrics.cpu")[0].name == "best-effort"  # type: ignore[union-attr]
    assert pset.profile_for("metrics.cpu.x")[0].name == "shop"  # type: ignore[union-attr]
    assert pset.profile_for("scratch.1")[0] is None
    assert not pset.rule_enabled("KA306") and not pset.rule_enabled("KA304")


def test_later_policies_win(tmp_path: Path) -> None:
    first = _write(tmp_path, "extends: durable\ntopics: [{match: 'a*', profile: durable}]\n"
                   "rules: {KA101: warning}\ndisable: [KA306]\n", "first.yaml")
    second = _write(tmp_path, "thresholds: {min_replication_factor: 2}\n"
                    "topics: [{match: 'ab*', profile: best-effort}]\n"
                    "rules: {KA101: {severity: info}, KA306: {enabled: true}}\n", "second.yaml")
    pset = load_policies([first, second])
    assert pset.default_profile.thresholds.min_replication_factor == 2
    assert pset.default_profile.thresholds.min_insync_replicas == 2  # from the first
    assert pset.severities["KA101"] is Severity.info
    assert pset.rule_enabled("KA306")
    assert pset.profile_for("abc")[0].name == "best-effort"  # type: ignore[union-attr]
    assert pset.profile_for("axe")[0].name == "durable"  # type: ignore[union-attr]
    assert load_policies([second, first]).severities["KA101"] is Severity.warning


def test_no_policy_means_durable() -> None:
    assert load_policies([]).default_profile.name == "durable"


BAD = [
    ("extends: durable\nthresholdz: {}\n", 2, "unknown key 'thresholdz'",
     "did you mean 'thresholds'?"),
    ("thresholds:\n  min_insync_replica: 2\n", 2, "unknown key 'min_insync_replica'",
     "did you mean 'min_insync_replicas'?"),
    ("thresholds:\n  min_replication_factor: three\n", 2, "must be an integer", None),
    ("thresholds:\n  min_replication_factor: 0\n", 2, "at least 1", None),
    ("thresholds:\n  producer_acks: 2\n", 2, "producer_acks must be one of", None),
    ("thresholds:\n  loss_accepted: maybe\n", 2, "must be true or false", None),
    ("topics: {match: x}\n", 1, "topics must be a list, not a mapping", None),
    ("topics:\n  - match: 'orders('\n    regex: true\n    profile: durable\n", 2,
     "not a valid regular expression", None),
    ("topics:\n  - match: orders\n", 2, "needs 'profile'", None),
    ("topics:\n  - match: orders\n    profile: exactly-one\n", 3, "unknown profile 'exactly-one'",
     "did you mean 'exactly-once'?"),
    ("extends: durible\n", 1, "unknown profile 'durible'", "did you mean 'durable'?"),
    ("waivers:\n  - rule: KA101\n    reason: r\n    expires: 2027-02-30\n", 4,
     "not a real date", None),
    ("waivers:\n  - rule: KA101\n    reason: r\n    expires: next month\n", 4,
     "YYYY-MM-DD", None),
    ("waivers:\n  - rule: KA101\n    expires: 2027-01-01\n", 2, "needs 'reason'", None),
    ("rules:\n  KA999: {severity: error}\n", 2, "unknown rule 'KA999'", None),
    ("disable:\n  - topic.min-isr-flor\n", 2, "unknown rule 'topic.min-isr-flor'",
     "did you mean 'topic.min-isr-floor'?"),
    ("rules:\n  KA101: {severity: critical}\n", 2, "severity must be one of", None),
    ("rules:\n  KA101: {severty: error}\n", 2, "unknown key 'severty'", "did you mean 'severity'?"),
    ("rules:\n  KA101: warning\n  topic.replication-factor-floor: info\n", 3,
     "configured twice", None),
    ("extends: durable\nextends: best-effort\n", 2, "sets 'extends' twice", None),
    ("clients:\n  - config: missing.properties\n    role: producer\n", 2,
     "client config missing.properties not found", None),
    ("clients:\n  - config: c.properties\n    role: admin\n", 3, "role must be one of", None),
    ("- just\n- a list\n", 1, "the policy must be a mapping", None),
    ("extends: durable\n  bad: indent\n", 2, "invalid YAML", None),
    ("profiles:\n  durable: {}\n", 2, "hide the built-in profile", None),
]


@pytest.mark.parametrize(("text", "line", "message", "hint"), BAD)
def test_bad_policy_names_file_and_line(tmp_path: Path, text: str, line: int, message: str,
                                        hint: str | None) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(FileInputError) as err:
        load_policy(path)
    assert err.value.path == path
    assert err.value.line == line, str(err.value)
    assert message in err.value.message
    if hint is not None:
        assert err.value.hint == hint
    assert str(err.value).startswith(f"{path}:{line}: ")


def test_unknown_builtin_name_suggests_one() -> None:
    with pytest.raises(InputError) as err:
        load_policy("durabel")
    assert err.value.hint == "did you mean 'durable'?"


def test_missing_policy_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_policy(str(tmp_path / "nope.yaml"))


def test_bad_client_file_fails_at_load_time_with_its_own_line(tmp_path: Path) -> None:
    (tmp_path / "p.properties").write_text("# writer\nacks=2\n")
    path = _write(tmp_path, "clients:\n  - {config: p.properties, role: producer}\n")
    with pytest.raises(FileInputError) as err:
        load_policy(path)
    assert err.value.path == str(tmp_path / "p.properties") and err.value.line == 2


def test_empty_policy_is_empty(tmp_path: Path) -> None:
    policy = parse_policy("", str(tmp_path / "empty.yaml"))
    assert policy.name == "empty" and not policy.selectors and not policy.extends


def test_policy_docs_list_every_rule_and_threshold() -> None:
    from kaudit.check.policy.model import THRESHOLD_NAMES
    from kaudit.check.rules import all_rules

    text = (Path(__file__).resolve().parents[3] / "docs" / "policy.md").read_text()
    for rule in all_rules():
        assert f"| {rule.id} | {rule.name} | {rule.severity} |" in text, rule.id
    for name in THRESHOLD_NAMES:
        assert f"`{name}`" in text, name


@pytest.mark.parametrize("escape", ["\\U7fffffff", "\\UFFFFFFFFFFFFFFFFFFFF"])
def test_an_escape_beyond_unicode_is_one_yaml_error_line(escape: str) -> None:
    # Found by tests/unit/check/test_policy_fuzz.py: PyYAML raised a bare ValueError or
    # OverflowError for these, which reached the user as an internal error.
    with pytest.raises(FileInputError, match="invalid YAML: a bad escape sequence"):
        parse_policy(f'profiles:\n  p:\n    rules: "{escape}"\n', "policy.yaml")
