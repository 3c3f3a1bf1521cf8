"""The lab's view of its live brokers replaces a client that may have lost every broker
(librdkafka drops them all after a metadata answer naming none: a resumed broker's stale
view), and keeps one that answers."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kaudit.lab import manager


class _Client:
    """Answers metadata requests from a fixed script, one answer per request."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers

    def list_topics(self, timeout: float) -> Any:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return SimpleNamespace(brokers={i: object() for i in answer})


def _scripted(monkeypatch: pytest.MonkeyPatch, scripts: list[list[Any]],
              renew_every_s: float = 0.0) -> list[_Client]:
    """Each new client answers from the next script; returns the clients made."""
    made: list[_Client] = []

    def new_admin(config: dict[str, Any]) -> _Client:
        made.append(_Client(scripts.pop(0)))
        return made[-1]

    monkeypatch.setattr(manager, "new_admin", new_admin)
    monkeypatch.setattr(manager.BrokerView, "RENEW_EVERY_S", renew_every_s)
    return made


def test_an_answer_naming_no_broker_gets_a_new_client(monkeypatch: pytest.MonkeyPatch) -> None:
    clients = _scripted(monkeypatch, [[set()], [{1, 2}, {1, 2}]])
    view = manager.BrokerView({"bootstrap.servers": "127.0.0.1:1"})
    assert view.live() == set()
    assert len(clients) == 2 and view.admin is clients[1]
    assert view.live() == {1, 2}
    assert view.live() == {1, 2}
    assert len(clients) == 2, "a client that names brokers is kept"


def test_a_client_that_does_not_answer_is_replaced_too(monkeypatch: pytest.MonkeyPatch) -> None:
    clients = _scripted(monkeypatch, [[RuntimeError("timed out")], [{3}]])
    view = manager.BrokerView({})
    assert view.live() == set()
    assert len(clients) == 2
    assert view.live() == {3}


def test_renewal_waits_its_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _scripted(monkeypatch, [[set()] * 5], renew_every_s=3600.0)
    view = manager.BrokerView({})
    for _ in range(5):
        assert view.live() == set()
    assert len(made) == 1, "at most one new client per interval"
