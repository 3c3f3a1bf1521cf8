"""A guarantee in words: the producer side and what survives, never one label."""

from __future__ import annotations

import pytest

from kaudit.check.findings import Guarantee, Semantics
from kaudit.report.check.words import producer_gives, survives


def _pair(semantics: Semantics, within_session: bool = False) -> Guarantee:
    return Guarantee("t", semantics, 1, 1, producer="p.properties",
                     within_session=within_session)


@pytest.mark.parametrize("g,words", [
    (Guarantee("t", Semantics.exactly_once, 0, 0),
     "exactly-once at best, with an idempotent or transactional producer"),
    (_pair(Semantics.exactly_once, within_session=True),
     "exactly-once within one producer session (a restart can duplicate)"),
    (_pair(Semantics.exactly_once), "exactly-once (transactions)"),
    (_pair(Semantics.at_least_once), "at-least-once (a retry can duplicate)"),
    (_pair(Semantics.at_most_once), "at-most-once (a failed send is not sent again)"),
])
def test_the_producer_side(g: Guarantee, words: str) -> None:
    assert producer_gives(g) == words


@pytest.mark.parametrize("loss,write,words", [
    (0, 0, "no broker failure: one can lose acknowledged writes; acks=all writes stop while "
           "any broker is down"),
    (1, 1, "1 broker failure without losing an acknowledged write; acks=all writes go on "
           "with 1 broker down"),
    (2, 2, "2 broker failures without losing an acknowledged write; acks=all writes go on "
           "with 2 brokers down"),
    (0, -1, "no broker failure: one can lose acknowledged writes; acks=all writes are "
            "refused even with every broker up"),
])
def test_what_survives(loss: int, write: int, words: str) -> None:
    assert survives(Guarantee("t", Semantics.exactly_once, loss, write)) == words
