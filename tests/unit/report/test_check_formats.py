"""Behaviour of the check formats beyond the golden files: contracts, validity, secrets."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kaudit.check.findings import CheckResult, Finding, Severity, Subject, SubjectKind
from kaudit.connection.redact import MASK, redact, register_secret
from kaudit.report import base
from kaudit.report.check import CHECK, CHECK_FORMATTERS, CheckFormat
from kaudit.report.check.github import escape_data, escape_property
from kaudit.report.check.record import (
    RULES_DOC_URL,
    SourceLocation,
    check_document,
    source_location,
)
from kaudit.report.output import OutputFormat
from tests.unit.report.check_sample import SAMPLE, TOOL_VERSION


def render(result: CheckResult, fmt: CheckFormat, *, color: bool = False) -> str:
    options = base.RenderOptions(tool_version=TOOL_VERSION, color=color)
    return base.render(CHECK, result, fmt, options)


def open_findings(result: CheckResult, *severities: Severity) -> list[Finding]:
    return [f for f in result.findings if f.waived_by is None and f.severity in severities]


# --- registry -------------------------------------------------------------------------------


def test_every_format_has_a_formatter() -> None:
    assert set(CHECK_FORMATTERS) == set(CheckFormat)


def test_common_formats_keep_their_names() -> None:
    # --format table/json mean the same on check as on every other command.
    assert {f.value for f in OutputFormat} <= {f.value for f in CheckFormat}


@pytest.mark.parametrize("fmt", list(CheckFormat), ids=str)
def test_every_format_renders_the_sample_and_an_empty_result(
    sample: CheckResult, empty: CheckResult, fmt: CheckFormat
) -> None:
    for result in (sample, empty):
        text = render(result, fmt)
        assert text.endswith("\n")
        assert text.strip()


# --- json -----------------------------------------------------------------------------------

TOP_LEVEL_KEYS = {
    "schema", "summary", "findings", "guarantees", "policies", "origin", "cluster_id",
}  # fmt: skip
SUMMARY_KEYS = {"errors", "warnings", "infos"}
FINDING_KEYS = {
    "rule", "name", "severity", "subject", "message", "expected", "actual", "source", "waived_by",
}  # fmt: skip
SUBJECT_KEYS = {"kind", "name"}
GUARANTEE_KEYS = {
    "topic", "producer", "semantics", "loss_tolerance", "write_tolerance", "reasons",
}  # fmt: skip


def _assert_contract(doc: dict[str, Any]) -> None:
    assert doc.keys() >= TOP_LEVEL_KEYS
    assert doc["schema"] == "kaudit.check/v1"
    assert set(doc["summary"]) == SUMMARY_KEYS
    assert all(isinstance(v, int) for v in doc["summary"].values())
    for f in doc["findings"]:
        assert f.keys() >= FINDING_KEYS
        assert set(f["subject"]) == SUBJECT_KEYS
        assert f["severity"] in {"error", "warning", "info"}
        assert f["subject"]["kind"] in {"cluster", "broker", "topic", "partition", "client"}
        for key in ("rule", "name", "message"):
            assert isinstance(f[key], str) and f[key]
        for key in ("expected", "actual", "source", "waived_by"):
            assert f[key] is None or isinstance(f[key], str)
    for g in doc["guarantees"]:
        assert g.keys() >= GUARANTEE_KEYS
        assert g["semantics"] in {"at-most-once", "at-least-once", "exactly-once"}
        assert isinstance(g["loss_tolerance"], int)
        assert isinstance(g["write_tolerance"], int)
        assert all(isinstance(r, str) for r in g["reasons"])
    assert all(isinstance(p, str) for p in doc["policies"])


def test_json_has_the_contract_fields(sample: CheckResult, empty: CheckResult) -> None:
    for result in (sample, empty):
        _assert_contract(json.loads(render(result, CheckFormat.json)))


def test_json_summary_leaves_out_waived_findings(sample: CheckResult) -> None:
    doc = json.loads(render(sample, CheckFormat.json))
    assert doc["summary"] == {"errors": 1, "warnings": 2, "infos": 1}
    assert len(doc["findings"]) == len(sample.findings)  # waived ones are still listed
    assert [f["waived_by"] is not None for f in doc["findings"]].count(True) == 1


def test_json_is_the_record_form(sample: CheckResult) -> None:
    assert json.loads(render(sample, CheckFormat.json)) == check_document(sample)


# --- sarif ----------------------------------------------------------------------------------


def test_sarif_structure(sample: CheckResult) -> None:
    log = json.loads(render(sample, CheckFormat.sarif))
    assert {"$schema", "version", "runs"} <= log.keys()
    assert log["version"] == "2.1.0"
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "kaudit"
    assert driver["version"] == TOOL_VERSION
    assert driver["informationUri"]
    rules = driver["rules"]
    for rule in rules:
        assert {
            "id", "name", "shortDescription", "fullDescription", "help", "helpUri",
            "defaultConfiguration",
        } <= rule.keys()  # fmt: skip
        assert rule["helpUri"] == f"{RULES_DOC_URL}#{rule['id'].lower()}"
        assert {"text", "markdown"} <= rule["help"].keys()
        assert rule["defaultConfiguration"]["level"] in {"error", "warning", "note"}
    assert len({r["id"] for r in rules}) == len(rules)
    results = log["runs"][0]["results"]
    assert len(results) == len(sample.findings)
    for res in results:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] in {"error", "warning", "note"}
        assert res["message"]["text"]
        assert res["locations"]


def test_sarif_locations_and_suppressions(sample: CheckResult) -> None:
    results = json.loads(render(sample, CheckFormat.sarif))["runs"][0]["results"]
    by_source = dict(zip((f.source for f in sample.findings), results, strict=True))
    physical = by_source["clients/orders-writer.properties:7"]["locations"][0]
    assert physical["physicalLocation"]["artifactLocation"]["uri"] == (
        "clients/orders-writer.properties"
    )
    assert physical["physicalLocation"]["region"] == {"startLine": 7}
    logical = by_source["DEFAULT_CONFIG"]["locations"][0]
    assert logical == {"logicalLocations": [{"name": "orders", "kind": "topic"}]}
    suppressed = [r for r in results if "suppressions" in r]
    assert len(suppressed) == 1
    assert suppressed[0]["suppressions"][0]["kind"] == "external"
    assert suppressed[0]["suppressions"][0]["justification"].startswith("INC-4211")


def test_sarif_empty_is_valid(empty: CheckResult) -> None:
    log = json.loads(render(empty, CheckFormat.sarif))
    assert log["version"] == "2.1.0"
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["tool"]["driver"]["rules"] == []


def test_sarif_absolute_paths_become_file_uris() -> None:
    finding = replace(SAMPLE.findings[1], source="/etc/kafka/producer client.properties:3:5")
    result = replace(SAMPLE, findings=(finding,))
    loc = json.loads(render(result, CheckFormat.sarif))["runs"][0]["results"][0]["locations"][0]
    assert loc["physicalLocation"]["artifactLocation"] == {
        "uri": "file:///etc/kafka/producer%20client.properties"
    }
    assert loc["physicalLocation"]["region"] == {"startLine": 3, "startColumn": 5}


# --- junit ----------------------------------------------------------------------------------


def test_junit_counts_match_findings(sample: CheckResult) -> None:
    root = ET.fromstring(render(sample, CheckFormat.junit).encode())
    assert root.tag == "testsuites"
    failures = root.findall(".//testcase/failure")
    expected = open_findings(sample, Severity.error, Severity.warning)
    assert len(failures) == len(expected) == int(root.get("failures", "-1"))
    assert sorted(f.get("type", "") for f in failures) == sorted(f.severity for f in expected)
    skipped = root.findall(".//testcase/skipped")
    assert len(skipped) == 1 == int(root.get("skipped", "-1"))
    cases = root.findall(".//testcase")
    assert len(cases) == int(root.get("tests", "-1"))
    for suite in root.findall("testsuite"):
        assert int(suite.get("tests", "-1")) == len(suite.findall("testcase"))
        assert int(suite.get("failures", "-1")) == len(suite.findall("testcase/failure"))


def test_junit_rule_without_findings_passes(sample: CheckResult) -> None:
    root = ET.fromstring(render(sample, CheckFormat.junit).encode())
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    clean = suites["KA110 topic.unclean-leader-election"]
    [case] = clean.findall("testcase")
    assert list(case) == []  # no failure, no skipped: a pass
    # A rule that a finding names but the result does not list still gets a suite.
    assert "KA160 partition.at-min-isr" in suites


def test_junit_clean_run_is_not_empty(sample: CheckResult, empty: CheckResult) -> None:
    clean = replace(sample, findings=())
    root = ET.fromstring(render(clean, CheckFormat.junit).encode())
    assert int(root.get("tests", "0")) == len(sample.rules)
    assert int(root.get("failures", "-1")) == 0
    root = ET.fromstring(render(empty, CheckFormat.junit).encode())
    assert int(root.get("tests", "0")) == 1
    assert len(root.findall(".//testcase")) == 1


# --- github ---------------------------------------------------------------------------------


def test_github_one_command_per_open_finding(sample: CheckResult) -> None:
    lines = render(sample, CheckFormat.github).splitlines()
    open_ = [f for f in sample.findings if f.waived_by is None]
    assert len(lines) == len(open_) + 1
    assert [line.split(" ", 1)[0] for line in lines[:-1]] == [
        {"error": "::error", "warning": "::warning", "info": "::notice"}[f.severity] for f in open_
    ]
    assert lines[-1] == "kaudit check: 1 error, 2 warnings, 1 info (1 waived)"
    with_file = [line for line in lines if "file=" in line]
    assert with_file == [line for line in lines if "line=" in line]
    assert len(with_file) == 1
    assert with_file[0].startswith(
        "::warning file=clients/orders-writer.properties,line=7,title=KA201 producer.idempotence::"
    )


def test_github_escaping() -> None:
    assert escape_data("100%\r\nnext") == "100%25%0D%0Anext"
    assert escape_property("a,b:c%\n") == "a%2Cb%3Ac%25%0A"


def test_github_message_cannot_inject_a_command() -> None:
    finding = replace(SAMPLE.findings[0], message="bad\n::error::injected, 100%")
    text = render(replace(SAMPLE, findings=(finding,)), CheckFormat.github)
    lines = text.splitlines()
    assert len(lines) == 2
    assert "bad%0A::error::injected, 100%25" in lines[0]


# --- source locations -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("DYNAMIC_TOPIC_CONFIG", None),
        ("DEFAULT_CONFIG:1", None),  # a config source name, not a file
        ("live metadata", None),
        (None, None),
        ("policies/durable.yaml", None),
        ("policies/durable.yaml:0", None),
        ("policies/durable.yaml:12", SourceLocation("policies/durable.yaml", 12)),
        ("client.properties:4:9", SourceLocation("client.properties", 4, 9)),
        ("C:\\kafka\\client.properties:3", SourceLocation("C:\\kafka\\client.properties", 3)),
        ("./topics/orders.yaml:40", SourceLocation("./topics/orders.yaml", 40)),
    ],
)
def test_source_location(source: str | None, expected: SourceLocation | None) -> None:
    assert source_location(source) == expected


# --- table ----------------------------------------------------------------------------------


def test_table_without_color_has_no_escape_codes(sample: CheckResult) -> None:
    assert "\x1b" not in render(sample, CheckFormat.table, color=False)


def test_table_with_color_paints_severities(sample: CheckResult) -> None:
    text = render(sample, CheckFormat.table, color=True)
    assert "\x1b[1;31merror\x1b[0m" in text
    # Colour reaches the table only; machine formats are identical either way.
    for fmt in CheckFormat:
        if fmt is not CheckFormat.table:
            assert render(sample, fmt, color=True) == render(sample, fmt, color=False)


def test_table_wraps_long_messages(sample: CheckResult) -> None:
    finding = replace(sample.findings[0], message=" ".join(["replication"] * 40))
    text = render(replace(sample, findings=(finding,)), CheckFormat.table)
    widest = max(len(line) for line in text.splitlines())
    assert widest < 200
    assert text.count("replication ") >= 10


def test_table_summary_line(sample: CheckResult, empty: CheckResult) -> None:
    assert render(sample, CheckFormat.table).splitlines()[-1] == (
        "1 error, 2 warnings, 1 info (1 waived)"
    )
    assert render(empty, CheckFormat.table).splitlines()[-1] == "0 errors, 0 warnings, 0 infos"


# --- secrets --------------------------------------------------------------------------------

# Characters every format escapes differently (%, comma, colon, <, &, quote), and long enough
# that the table wraps it: only masking before formatting catches every variant.
SECRET = 'hunter2-S3cr%t,pw:<&>"' + "x" * 60


def _secret_result() -> CheckResult:
    leaky = Finding(
        rule="KA201",
        name="producer.idempotence",
        severity=Severity.error,
        subject=Subject(SubjectKind.client, f"writer-{SECRET}"),
        message=f"sasl.jaas.config leaked {SECRET} in the message",
        expected=SECRET,
        actual=SECRET,
        source=f"clients/{SECRET}.properties:3",
        waived_by=None,
    )
    waived = replace(leaky, waived_by=f"reason {SECRET}")
    guarantee = replace(SAMPLE.guarantees[1], producer=SECRET, reasons=(SECRET,))
    return replace(
        SAMPLE,
        findings=(*SAMPLE.findings, leaky, waived),
        guarantees=(*SAMPLE.guarantees, guarantee),
        policies=(*SAMPLE.policies, SECRET),
        cluster_id=SECRET,
    )


@pytest.mark.parametrize("fmt", list(CheckFormat), ids=str)
def test_no_secret_in_any_format(fmt: CheckFormat) -> None:
    register_secret(SECRET)
    text = render(_secret_result(), fmt, color=True)
    # No fragment survives, whether escaped (%25, &amp;, \") or split by wrapping.
    for fragment in ("hunter2", "S3cr", "x" * 20):
        assert fragment not in text
    assert MASK in text
    assert redact(text) == text


# --- robustness -----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(message=st.text(min_size=1), source=st.one_of(st.none(), st.text()))
def test_any_text_keeps_every_format_valid(message: str, source: str | None) -> None:
    finding = replace(SAMPLE.findings[1], message=message, source=source)
    result = replace(SAMPLE, findings=(finding,))
    ET.fromstring(render(result, CheckFormat.junit).encode())
    json.loads(render(result, CheckFormat.sarif))
    assert json.loads(render(result, CheckFormat.json))["findings"][0]["message"] == redact(message)
    # The Actions runner reads commands line by line at "\n" (str.splitlines also splits at
    # \x1e, \u2028 and others, which the runner does not).
    assert render(result, CheckFormat.github).count("\n") == 2
    render(result, CheckFormat.table)


def test_sarif_fingerprints_follow_a_finding_not_its_line() -> None:
    from kaudit.report.check.sarif import FINGERPRINT_KEY, sarif_log

    def prints(result: CheckResult) -> list[str]:
        log = sarif_log(result, base.RenderOptions(tool_version=TOOL_VERSION))
        return [r["partialFingerprints"][FINGERPRINT_KEY] for r in log["runs"][0]["results"]]

    def shifted(f: Finding) -> Finding:
        if f.source and f.source.rsplit(":", 1)[-1].isdigit():
            path, line = f.source.rsplit(":", 1)
            return replace(f, source=f"{path}:{int(line) + 7}")
        return f

    before = prints(SAMPLE)
    after = prints(replace(SAMPLE, findings=tuple(shifted(f) for f in SAMPLE.findings)))
    assert any(f.source and f.source[-1].isdigit() for f in SAMPLE.findings)
    assert before == after
    # Distinct findings keep distinct identities.
    keys = {(f.rule, f.subject, (f.source or "").rsplit(":", 1)[0]) for f in SAMPLE.findings}
    assert len(set(before)) == len(keys)


def test_sarif_matches_the_schema_of_what_kaudit_writes() -> None:
    import jsonschema

    from kaudit.report.check.sarif import sarif_log

    schema = json.loads((Path(__file__).resolve().parents[2] / "data"
                         / "sarif-2.1.0-kaudit.schema.json").read_text(encoding="utf-8"))
    located = replace(SAMPLE, findings=tuple(
        replace(f, source="manifests/topics.yaml:12:3") for f in SAMPLE.findings))
    for result in (SAMPLE, located):
        jsonschema.validate(sarif_log(result, base.RenderOptions(tool_version=TOOL_VERSION)),
                            schema)
    wrong = sarif_log(SAMPLE, base.RenderOptions(tool_version=TOOL_VERSION))
    wrong["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(wrong, schema)
