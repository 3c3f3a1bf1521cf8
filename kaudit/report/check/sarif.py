"""``--format sarif``: SARIF 2.1.0 for GitHub code scanning and other SARIF viewers."""

from __future__ import annotations

import hashlib
from pathlib import PureWindowsPath
from typing import Any
from urllib.parse import quote

from kaudit.check.findings import CheckResult, RuleInfo, Severity
from kaudit.report.check.record import (
    PROJECT_URL,
    FindingRecord,
    RenderOptions,
    check_document,
    finding_text,
    rule_help_uri,
    rules_in_order,
    source_location,
)
from kaudit.report.output import to_json

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"

# SARIF has no "info" level; "note" is its equivalent.
_LEVEL = {Severity.error: "error", Severity.warning: "warning", Severity.info: "note"}


def _first_paragraph(markdown: str) -> str:
    for block in markdown.strip().split("\n\n"):
        text = " ".join(line.strip() for line in block.splitlines()).strip()
        if text and not text.startswith("#"):
            return text
    return ""


def _rule_descriptor(rule: RuleInfo) -> dict[str, Any]:
    help_markdown = rule.help_markdown.strip() or rule.summary
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": _first_paragraph(rule.help_markdown) or rule.summary},
        "help": {"text": help_markdown, "markdown": help_markdown},
        "helpUri": rule_help_uri(rule.id),
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
    }


def _artifact_uri(path: str) -> dict[str, str]:
    """A URI reference for a file path: relative to the checkout, or file:// when absolute."""
    if PureWindowsPath(path).drive:
        return {"uri": "file:///" + quote(path.replace("\\", "/"), safe="/:")}
    if path.startswith("/"):
        return {"uri": "file://" + quote(path, safe="/")}
    relative = path.replace("\\", "/").removeprefix("./")
    # %SRCROOT% is the conventional base id; GitHub resolves it to the repository root.
    return {"uri": quote(relative, safe="/"), "uriBaseId": "%SRCROOT%"}


def _locations(f: FindingRecord) -> list[dict[str, Any]]:
    where = source_location(f["source"])
    if where is not None:
        region: dict[str, int] = {"startLine": where.line}
        if where.column is not None:
            region["startColumn"] = where.column
        return [
            {
                "physicalLocation": {
                    "artifactLocation": _artifact_uri(where.path),
                    "region": region,
                }
            }
        ]
    subject = f["subject"]
    return [{"logicalLocations": [{"name": subject["name"], "kind": subject["kind"]}]}]


FINGERPRINT_KEY = "kauditFinding/v1"
"""The ``partialFingerprints`` key: a finding's identity, not where it was seen."""


def fingerprint(f: FindingRecord) -> str:
    """The same rule about the same subject (in the same file, when it came from one) gives
    the same fingerprint from run to run, wherever the line moved: code scanning then
    follows the finding instead of closing it and opening a new one."""
    where = source_location(f["source"])
    identity = "\0".join((f["rule"], f["subject"]["kind"], f["subject"]["name"],
                          where.path if where is not None else ""))
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()


def sarif_log(result: CheckResult, options: RenderOptions) -> dict[str, Any]:
    """The SARIF log as a dict (one run, one rule descriptor per evaluated rule)."""
    rules = rules_in_order(result)
    index = {rule.id: i for i, rule in enumerate(rules)}
    results: list[dict[str, Any]] = []
    for f in check_document(result)["findings"]:
        item: dict[str, Any] = {
            "ruleId": f["rule"],
            "ruleIndex": index[f["rule"]],
            "level": _LEVEL[Severity(f["severity"])],
            "message": {"text": finding_text(f)},
            "locations": _locations(f),
            "partialFingerprints": {FINGERPRINT_KEY: fingerprint(f)},
        }
        if f["waived_by"] is not None:
            item["suppressions"] = [{"kind": "external", "justification": f["waived_by"]}]
        results.append(item)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "kaudit",
                "version": options.tool_version,
                "informationUri": PROJECT_URL,
                "rules": [_rule_descriptor(rule) for rule in rules],
            }
        },
        "results": results,
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render_sarif(result: CheckResult, options: RenderOptions) -> str:
    """SARIF 2.1.0 JSON text."""
    return to_json(sarif_log(result, options))
