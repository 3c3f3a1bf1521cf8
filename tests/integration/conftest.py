"""Fixtures of the integration tests beyond the session's ``lab`` (tests/conftest.py)."""

from typing import Any

from tests.integration.audit_lab import audit_lab

__all__ = ["audit_lab"]

ON_THE_AUDIT_LAB = {"audit_lab", "tiered_lab"}
"""Fixtures that start the audit lab (``tiered_lab`` asks for it by name, unless
KAUDIT_TEST_TIERED_BOOTSTRAP names another lab)."""


def pytest_collection_modifyitems(items: list[Any]) -> None:
    """The tests on the audit lab run last, in their own order: the lab starts with the
    first of them and stops with the session, so its six JVMs (about a tenth of a core
    idle) do not idle through the other tests."""
    items.sort(key=lambda item: bool(ON_THE_AUDIT_LAB & set(getattr(item, "fixturenames", ()))))
