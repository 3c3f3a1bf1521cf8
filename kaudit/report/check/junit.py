"""``--format junit``: JUnit XML for GitLab (``artifacts:reports:junit``) and Jenkins.

One ``<testsuite>`` per rule, not per subject kind: a rule is what a reader fixes and what
"passed" means, and a rule with no findings becomes one passing test case, so a clean run
shows every rule that was checked instead of an empty report. Inside a suite, one test case
per finding: ``<failure type="error|warning">`` for open errors and warnings, ``<skipped>``
for waived findings (visible, never failing), and a passing case with ``<system-out>`` for
infos.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from kaudit.check.findings import CheckResult, RuleInfo
from kaudit.report.check.record import (
    FindingRecord,
    RenderOptions,
    check_document,
    rules_in_order,
)

# Characters XML 1.0 cannot carry at all, even escaped; ElementTree would write them as-is
# and produce a file every JUnit parser rejects.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_text(text: str) -> str:
    return _XML_ILLEGAL.sub("\ufffd", text)


def _details(f: FindingRecord) -> str:
    lines = [
        f"{f['subject']['kind']} {f['subject']['name']}: {f['message']}",
        f"expected: {f['expected'] if f['expected'] is not None else '-'}",
        f"actual: {f['actual'] if f['actual'] is not None else '-'}",
        f"source: {f['source'] if f['source'] is not None else '-'}",
    ]
    return _xml_text("\n".join(lines))


def _classname(rule: RuleInfo) -> str:
    # Jenkins splits classname at dots into package and class: kaudit.topic / min-isr-floor.
    return f"kaudit.{rule.name}"


def _testcase(suite: ET.Element, rule: RuleInfo, f: FindingRecord) -> str:
    """Append one finding's test case; return its outcome (failure/skipped/passed)."""
    case = ET.SubElement(
        suite,
        "testcase",
        name=_xml_text(f"{f['subject']['kind']} {f['subject']['name']}"),
        classname=_classname(rule),
    )
    if f["waived_by"] is not None:
        ET.SubElement(case, "skipped", message=_xml_text(f"waived: {f['waived_by']}"))
        ET.SubElement(case, "system-out").text = _details(f)
        return "skipped"
    if f["severity"] in ("error", "warning"):
        failure = ET.SubElement(
            case, "failure", type=f["severity"], message=_xml_text(f["message"])
        )
        failure.text = _details(f)
        return "failure"
    ET.SubElement(case, "system-out").text = _details(f)
    return "passed"


def render_junit(result: CheckResult, options: RenderOptions) -> str:
    """The result as a ``<testsuites>`` document (UTF-8, with XML declaration)."""
    findings = check_document(result)["findings"]
    root = ET.Element("testsuites", name="kaudit check")
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for rule in rules_in_order(result):
        suite = ET.SubElement(root, "testsuite", name=_xml_text(f"{rule.id} {rule.name}"))
        counts = {"tests": 0, "failures": 0, "skipped": 0}
        for f in findings:
            if f["rule"] != rule.id:
                continue
            outcome = _testcase(suite, rule, f)
            counts["tests"] += 1
            if outcome == "failure":
                counts["failures"] += 1
            elif outcome == "skipped":
                counts["skipped"] += 1
        if counts["tests"] == 0:
            ET.SubElement(suite, "testcase", name="no findings", classname=_classname(rule))
            counts["tests"] = 1
        suite.set("tests", str(counts["tests"]))
        suite.set("failures", str(counts["failures"]))
        suite.set("errors", "0")
        suite.set("skipped", str(counts["skipped"]))
        for key in totals:
            totals[key] += counts[key]
    if totals["tests"] == 0:
        # No rules at all (e.g. every rule switched off): Jenkins fails a build on a report
        # without test cases, so say plainly that nothing was evaluated.
        suite = ET.SubElement(
            root,
            "testsuite",
            name="kaudit check",
            tests="1",
            failures="0",
            errors="0",
            skipped="0",
        )
        ET.SubElement(suite, "testcase", name="no rules evaluated", classname="kaudit")
        totals["tests"] = 1
    root.set("tests", str(totals["tests"]))
    root.set("failures", str(totals["failures"]))
    root.set("errors", "0")
    root.set("skipped", str(totals["skipped"]))
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
