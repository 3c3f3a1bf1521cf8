"""The record-time reads behind KA602/KA603, with a stand-in for the one call they make
(the reads themselves are proven on the lab in tests/integration/test_check_groups.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kaudit.cluster import groups
from kaudit.cluster.groups import PEEK_ROUNDS
from kaudit.connection.properties import properties_text
from kaudit.waiting import Deadline


def times_at(session: Any, *args: Any) -> Any:
    return groups.times_at(session, *args, Deadline(60))


class _Peeks:
    """record_times by position: a time per (topic, partition, offset), or no answer."""

    def __init__(self, times: dict[tuple[str, int, int], int | None],
                 silent: frozenset[tuple[str, int]] = frozenset()) -> None:
        self.settings = SimpleNamespace(timeout=1.0)
        self.times, self.silent = times, silent
        self.calls: list[dict[Any, int]] = []

    def record_times(self, positions: dict[tuple[str, int], int],
                     within: float) -> dict[tuple[str, int], int | None]:
        self.calls.append(dict(positions))
        return {(t, p): self.times[(t, p, o)] for (t, p), o in positions.items()
                if (t, p) not in self.silent}


def test_two_groups_on_one_partition_each_get_the_time_of_their_own_offset() -> None:
    peeks = _Peeks({("orders", 0, 100): 1_000, ("orders", 0, 900): 9_000})
    unreadable: list[str] = []
    times = times_at(peeks, {("orders", 0, 100), ("orders", 0, 900)}, unreadable, "x")
    assert times == {("orders", 0, 100): 1_000, ("orders", 0, 900): 9_000}
    assert len(peeks.calls) == 2 and unreadable == []  # one offset per partition per round


def test_positions_that_give_no_answer_are_said_not_read() -> None:
    peeks = _Peeks({("orders", 0, 5): 1, ("audit", 1, 7): 2}, silent=frozenset({("audit", 1)}))
    unreadable: list[str] = []
    times = times_at(peeks, {("orders", 0, 5), ("audit", 1, 7)}, unreadable, "a lagging group")
    assert times == {("orders", 0, 5): 1}
    assert unreadable == ["the record times of 1 position(s), e.g. audit-1 at offset 7 "
                          "(a lagging group): no answer within 5s"]


def test_a_partition_that_ends_at_the_position_has_no_time_and_no_complaint() -> None:
    unreadable: list[str] = []
    assert times_at(_Peeks({("t", 0, 3): None}), {("t", 0, 3)}, unreadable, "x") == {}
    assert unreadable == []


def test_more_offsets_on_a_partition_than_rounds_are_said_not_read() -> None:
    wanted = {("t", 0, o) for o in range(PEEK_ROUNDS + 2)}
    unreadable: list[str] = []
    times = times_at(_Peeks(dict.fromkeys(wanted, 5)), wanted, unreadable, "x")
    assert len(times) == PEEK_ROUNDS
    assert unreadable and "2 more position(s)" in unreadable[0]


def test_the_java_clients_settings_are_escaped_for_a_latin1_properties_file() -> None:
    text = properties_text({"sasl.jaas.config": 'p="pä\\ss"\n', "a": "b"})
    assert text == 'a=b\nsasl.jaas.config=p="p\\u00e4\\\\ss"\\n\n'
    assert text.isascii()
