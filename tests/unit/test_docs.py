"""The README's commands are the ones CI and users really run."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -e '.[dev]' && python3 -m pytest" in readme
    assert "python3 -m pip install -q --disable-pip-version-check -e '.[dev]'" in ci
    assert ci.rstrip().endswith("python3 -m pytest")


def test_changelog_keeps_an_unreleased_section() -> None:
    assert "## [Unreleased]" in (ROOT / "CHANGELOG.md").read_text()
