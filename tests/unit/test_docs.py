"""The commands README and the guide give are the ones CI and users really run."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


FAST = 'python3 -m pytest -m "not kafka and not spark"'
SLOW = 'python3 -m pytest -m "kafka or spark"'
#: CI's three shares of the slow tier, run side by side on a lab each.
SHARES = ("probe", "kafka and not spark and not probe", "spark and not probe")


def test_ci_runs_the_readme_test_command_in_its_two_tiers_fast_first() -> None:
    readme = (ROOT / "README.md").read_text()
    development = (ROOT / "docs" / "development.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -e '.[dev]' && python3 -m pytest" in readme
    assert FAST in development and SLOW in development
    assert "python3 -m pip install -q --disable-pip-version-check -e '.[dev]'" in ci
    # The markers split the suite in two tiers: together they are the README's command.
    assert all(ci.index(FAST) < ci.index(f'"{share}"') for share in SHARES)
    assert "set -euo pipefail" in ci  # a failing fast tier stops the run
    # The guide is built as its test builds it, in strict mode, before the tiers.
    assert "python3 -m sphinx -W" in ci and ci.index("python3 -m sphinx -W") < ci.index(FAST)


def test_the_slow_tiers_shares_are_the_slow_tier_each_test_in_one() -> None:
    # Every marker combination a test can have: in exactly one share when it is in the
    # slow tier, in none when not (a probe test always needs Kafka).
    for kafka in (False, True):
        for spark in (False, True):
            for probe in (False, True) if kafka else (False,):
                names = {"kafka": kafka, "spark": spark, "probe": probe}
                picked = [eval(share, {}, names) for share in SHARES]
                assert sum(picked) == (1 if kafka or spark else 0), names


def test_every_probe_test_needs_kafka() -> None:
    # The probe marker picks a share out of the Kafka tests; without kafka a test marked
    # probe would be in the probes share yet not in the README's slow tier.
    for path in (ROOT / "tests" / "integration").glob("test_*.py"):
        text = path.read_text()
        if "pytest.mark.probe" in text:
            assert "pytest.mark.kafka" in text, path.name


def test_changelog_keeps_an_unreleased_section() -> None:
    assert "## [Unreleased]" in (ROOT / "CHANGELOG.md").read_text()
