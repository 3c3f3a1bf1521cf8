"""The segment reader's accounting: which records it yields, when a partition is done,
and what is left when the deadline comes first (the client is scripted; the readers built
on it are proven against the lab in the integration tier)."""

from __future__ import annotations

from typing import Any

from kaudit.cluster import client
from kaudit.cluster.segments import SegmentReader
from kaudit.waiting import Deadline


class _Msg:
    def __init__(self, partition: int, offset: int, eof: bool = False) -> None:
        self._p, self._o, self._eof = partition, offset, eof

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def error(self) -> Any:
        return client.KafkaError(client.KafkaError._PARTITION_EOF) if self._eof else None


class _Consumer:
    """Hands out its batches in order, then nothing; records what was assigned and paused."""

    def __init__(self, batches: list[list[_Msg]]) -> None:
        self.batches, self.assigned, self.paused = batches, [], []

    def assign(self, parts: list[Any]) -> None:
        self.assigned = [(tp.partition, tp.offset) for tp in parts]

    def resume(self, parts: list[Any]) -> None:
        pass

    def pause(self, parts: list[Any]) -> None:
        self.paused += [tp.partition for tp in parts]

    def consume(self, n: int, timeout: float) -> list[_Msg]:
        return self.batches.pop(0) if self.batches else []


def _read(consumer: _Consumer, segments: dict[int, tuple[int, int]], within: float = 5.0,
          **kw: Any) -> tuple[list[tuple[int, int]], SegmentReader]:
    reader = SegmentReader(consumer, "t", segments, **kw)
    got = [(m.partition(), m.offset()) for m in reader.records(Deadline(within))]
    return got, reader


def test_records_inside_the_segments_only_and_each_partition_done_at_its_end() -> None:
    consumer = _Consumer([[_Msg(0, 5), _Msg(1, 0), _Msg(0, 6)], [_Msg(0, 7), _Msg(1, 1)]])
    got, reader = _read(consumer, {0: (5, 7), 1: (0, 2)})
    assert consumer.assigned == [(0, 5), (1, 0)]
    assert got == [(0, 5), (1, 0), (0, 6), (1, 1)], "offset 7 lies past partition 0's end"
    assert reader.left == {} and consumer.paused == [0, 1]


def test_a_log_that_ends_short_of_the_segment_ends_it() -> None:
    # A transaction's marker took the last offset: the log ends without a record at 9.
    consumer = _Consumer([[_Msg(0, 8), _Msg(0, 10, eof=True)]])
    got, reader = _read(consumer, {0: (8, 10)})
    assert got == [(0, 8)] and reader.left == {}


def test_a_log_end_below_the_end_is_not_the_end_when_the_log_may_still_grow() -> None:
    consumer = _Consumer([[_Msg(0, 0), _Msg(0, 1, eof=True)], [_Msg(0, 1), _Msg(0, 2, eof=True)]])
    got, reader = _read(consumer, {0: (0, 3)}, within=0.5, done_at_log_end=False)
    assert got == [(0, 0), (0, 1)]
    assert reader.left == {0: 3}, "never reached offset 2: left unread when the time ran out"


def test_what_the_deadline_cuts_short_is_left_and_empty_segments_are_not_read() -> None:
    consumer = _Consumer([[_Msg(0, 0)]])
    got, reader = _read(consumer, {0: (0, 5), 1: (4, 4)}, within=0.3)
    assert got == [(0, 0)]
    assert consumer.assigned == [(0, 0)]
    assert reader.left == {0: 5}
