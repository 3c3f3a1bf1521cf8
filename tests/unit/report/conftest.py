"""Fixtures for the check-format tests; the data lives in check_sample.py.

Secrets are forgotten around every test by the autouse fixture in tests/conftest.py.
"""

from __future__ import annotations

import pytest

from kaudit.check.findings import CheckResult
from tests.unit.report.check_sample import EMPTY, SAMPLE


@pytest.fixture
def sample() -> CheckResult:
    """The shared result: every severity and subject kind, one waived, one path:line source."""
    return SAMPLE


@pytest.fixture
def empty() -> CheckResult:
    """A run that evaluated nothing and found nothing."""
    return EMPTY
