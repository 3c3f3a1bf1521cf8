"""The commands README and the guide give are the ones CI and users really run."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


FAST = 'python3 -m pytest -m "not kafka and not spark"'
SLOW = 'python3 -m pytest -m "kafka or spark"'
#: CI's three shares of the slow tier, run side by side on a lab each.
SHARES = ("probe or probes_share", "kafka and not spark and not probe",
          "spark and not probe and not probes_share")


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
    # slow tier, in none when not (a probe test always needs Kafka, a probes_share test
    # Spark).
    for kafka in (False, True):
        for spark in (False, True):
            for probe in (False, True) if kafka else (False,):
                for moved in (False, True) if spark else (False,):
                    names = {"kafka": kafka, "spark": spark, "probe": probe,
                             "probes_share": moved}
                    picked = [eval(share, {}, names) for share in SHARES]
                    assert sum(picked) == (1 if kafka or spark else 0), names


def test_every_probe_test_needs_kafka() -> None:
    # The probe marker picks a share out of the Kafka tests; without kafka a test marked
    # probe would be in the probes share yet not in the README's slow tier.
    for path in (ROOT / "tests" / "integration").glob("test_*.py"):
        text = path.read_text()
        if "pytest.mark.probe" in text:
            assert "pytest.mark.kafka" in text, path.name


def _decorators(lines: list[str], i: int) -> list[str]:
    """The block of decorator lines that line ``i`` belongs to."""
    start, end = i, i
    while start > 0 and lines[start - 1].startswith("@"):
        start -= 1
    while end + 1 < len(lines) and lines[end + 1].startswith("@"):
        end += 1
    return [line.strip() for line in lines[start:end + 1]]


def test_every_test_moved_to_the_probes_share_needs_spark() -> None:
    # Without spark a test marked probes_share would be in the probes share yet, without
    # kafka, not in the README's slow tier: its decorators or its module's pytestmark
    # must name spark.
    for path in (ROOT / "tests").rglob("test_*.py"):
        lines = path.read_text().splitlines()
        module = " ".join(line for line in lines if line.startswith("pytestmark"))
        for i, line in enumerate(lines):
            if line.startswith("@pytest.mark.probes_share"):
                assert ("@pytest.mark.spark" in _decorators(lines, i)
                        or "mark.spark" in module), f"{path.name}:{i + 1}"


def test_changelog_keeps_an_unreleased_section() -> None:
    assert "## [Unreleased]" in (ROOT / "CHANGELOG.md").read_text()
