"""The consume feed's delivery reports: where each partition's input ends."""

from __future__ import annotations

from dataclasses import dataclass

from kaudit.probe.consume.feed import Acks


@dataclass
class Report:
    """A delivery report's message as confluent-kafka hands it over (offset None when
    librdkafka knows none), for the feed's record ``number``."""
    part: int
    at: int | None
    number: int = 0

    def partition(self) -> int:
        return self.part

    def offset(self) -> int | None:
        return self.at

    def value(self) -> bytes:
        return b"kaudit-consume %d" % self.number


class Err:
    def str(self) -> str:
        return "Broker: Not enough in-sync replicas"


def test_ends_are_one_past_the_highest_acknowledged_offset():
    acks = Acks({0: 10, 1: 0})
    for part, at in [(0, 10), (0, 12), (0, 11), (1, 0)]:
        acks.delivered(None, Report(part, at))
    assert acks.ends == {0: 13, 1: 1}
    assert acks.unplaced() == [] and acks.errors == []


def test_an_acknowledgement_without_an_offset_leaves_its_partition_to_be_read():
    # A retried batch answered DUPLICATE_SEQUENCE_NUMBER is delivered with offset -1
    # (None in Python): written, but the report does not say where.
    acks = Acks({0: 0, 1: 0, 2: 0})
    acks.delivered(None, Report(0, 4, number=8))
    acks.delivered(None, Report(1, None, number=1))
    acks.delivered(None, Report(0, -1, number=10))  # after record 8: the end is unknown
    acks.delivered(None, Report(2, None, number=2))
    acks.delivered(None, Report(2, 7, number=5))  # a later record of 2 covers record 2
    assert acks.ends == {0: 5, 1: 0, 2: 8}
    assert acks.unplaced() == [0, 1]


def test_a_failed_delivery_is_an_error_not_an_end():
    acks = Acks({0: 3})
    acks.delivered(Err(), Report(0, None))
    assert acks.errors == ["Broker: Not enough in-sync replicas"]
    assert acks.ends == {0: 3} and acks.unplaced() == []
