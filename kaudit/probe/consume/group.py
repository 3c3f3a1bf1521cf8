"""The run's consumer group as the brokers see it: the session timeout they allow, its
coordinator, and its deletion at the end."""

from __future__ import annotations

from kaudit.cluster.client import AdminSession
from kaudit.errors import InputError
from kaudit.waiting import wait_for


def check_session_timeout(session: AdminSession, session_timeout_ms: int) -> None:
    """Refuse a session timeout the brokers would refuse: the workers' JoinGroup would fail
    with INVALID_SESSION_TIMEOUT, over and over, and the group never consume."""
    names = ("group.min.session.timeout.ms", "group.max.session.timeout.ms")
    values = session.broker_values(names)
    if len(values) == 2 and not int(values[names[0]]) <= session_timeout_ms <= int(
            values[names[1]]):
        raise InputError(f"--session-timeout-ms {session_timeout_ms} is outside what the "
                         f"brokers allow ({names[0]} {values[names[0]]} to {names[1]} "
                         f"{values[names[1]]})")


def coordinator(session: AdminSession, group: str) -> int:
    """The broker id of the group's coordinator (a failed lookup raises)."""
    described = session.admin.describe_consumer_groups([group])
    return int(session.wait(described[group]).coordinator.id)


def delete_group(session: AdminSession, group: str, session_timeout_ms: int) -> None:
    """Delete the group once its static members have timed out (best effort)."""

    def deleted() -> bool:
        try:
            session.wait(session.admin.delete_consumer_groups([group])[group])
            return True
        except Exception:  # NON_EMPTY_GROUP until the members time out
            return False

    wait_for(deleted, session_timeout_ms / 1000 + 10, every=1.0)
