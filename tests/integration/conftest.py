"""Fixtures of the integration tests beyond the session's ``lab`` (tests/conftest.py)."""

from tests.integration.audit_lab import audit_lab

__all__ = ["audit_lab"]
