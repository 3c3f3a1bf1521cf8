"""Every rule's pass and fail cases from tests/rules/*.yaml, run through the engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kaudit_rule_cases import finding_view, load_case_files, mismatches, run_case

from kaudit.check.rules import all_rules, get_rule

CASE_FILES = load_case_files()


def _cases() -> list[Any]:
    out = []
    for rule_id, content in CASE_FILES.items():
        for kind in ("pass", "fail"):
            for i, case in enumerate(content.get(kind) or []):
                label = str(case.get("name", i)).replace(" ", "-")
                out.append(pytest.param(rule_id, kind, case, id=f"{rule_id}-{kind}-{label}"))
    return out


@pytest.mark.parametrize(("rule_id", "kind", "case"), _cases())
def test_rule_case(rule_id: str, kind: str, case: dict[str, Any], tmp_path: Path) -> None:
    rule = get_rule(rule_id)
    assert rule is not None, f"tests/rules/{rule_id}.yaml names no registered rule"
    result = run_case(case, tmp_path)
    found = [finding_view(f, tmp_path) for f in result.findings if f.rule == rule_id]
    if kind == "pass":
        assert found == [], f"{rule_id} should not fire: {found}"
        return
    expected = case.get("expect") or []
    assert expected, f"fail case {case.get('name')} of {rule_id} lists no expected findings"
    assert len(found) == len(expected), f"expected {len(expected)} findings, got {found}"
    for want, got in zip(expected, found, strict=True):
        assert not mismatches(want, got), (mismatches(want, got), got)
        # Every finding explains itself: expected, actual and where the value came from.
        assert got["expected"] and got["actual"] and got["source"] and got["message"]
        assert got["message"].endswith("."), got["message"]


def test_every_rule_has_pass_and_fail_cases() -> None:
    for rule in all_rules():
        content = CASE_FILES.get(rule.id)
        assert content is not None, f"no tests/rules/{rule.id}.yaml"
        assert content.get("rule") in (rule.id, rule.name), f"{rule.id}.yaml names another rule"
        assert content.get("pass"), f"{rule.id} has no pass case"
        assert content.get("fail"), f"{rule.id} has no fail case"


def test_no_case_file_for_an_unknown_rule() -> None:
    known = {r.id for r in all_rules()}
    assert set(CASE_FILES) <= known, set(CASE_FILES) - known


def test_every_rule_is_documented_in_the_template() -> None:
    for rule in all_rules():
        for part in ("what", "why", "example", "fix"):
            assert len(getattr(rule.doc, part).strip()) > 10, f"{rule.id} {part} is empty"
        assert rule.summary.endswith("."), rule.id
        info = rule.info()
        for heading in ("### What it does", "### Why it matters", "### Example", "### Fix"):
            assert heading in info.help_markdown, (rule.id, heading)
        assert get_rule(rule.name) is rule and get_rule(rule.id) is rule
