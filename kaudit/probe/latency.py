"""Latency histogram and per-second timeline. Pure, fixed or per-second memory.

:class:`LatencyHistogram` is HDR-like: values are kept in microseconds in log buckets, 128
linear sub-buckets per power of two from 1 us to 2**32 us (about 71 minutes), so any
percentile is within 0.4% of the exact one (nearest-rank definition), in 32 KiB whatever
the number of values. Values below 1 us share one bucket; values above the range share the
last one; the exact minimum and maximum are kept, and percentiles are clamped to them.

:class:`Timeline` counts, per second since the start of the run (the caller computes the
second), sends, acks, failures and indeterminate outcomes, with the minimum and maximum ack
latency. Sends are bucketed when sent, outcomes when their report arrived, so a second in
which the cluster acknowledged nothing stands out. A second is

- *unavailable* when it acknowledged nothing although the producer was sending or still
  had messages waiting for an answer (sent before and not yet answered: a producer blocked
  on a full queue sends nothing, yet the cluster is not available);
- *idle* when nothing was sent or waiting;
- *available* otherwise.

Consecutive unavailable seconds form an unavailability window.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

_SUB = 128  # linear sub-buckets per power of two
_EXPONENTS = 32  # 1 us .. 2**32 us
_BUCKETS = _EXPONENTS * _SUB + 2  # + underflow (< 1 us) and overflow
_OVERFLOW = _BUCKETS - 1


def _index(value_us: float) -> int:
    if value_us < 1.0:
        return 0
    mantissa, exponent = math.frexp(value_us)  # value = mantissa * 2**exponent, m in [.5, 1)
    if exponent > _EXPONENTS:
        return _OVERFLOW
    return (exponent - 1) * _SUB + int((mantissa - 0.5) * (2 * _SUB)) + 1


def bucket_of_us(value_us: int) -> int:
    """The bucket of a whole number of microseconds: the same as for the float value,
    in integer operations only (the producer's per-ack path inlines this arithmetic)."""
    if value_us < 1:
        return 0
    exponent = value_us.bit_length()  # value in [2**(exponent-1), 2**exponent)
    if exponent > _EXPONENTS:
        return _OVERFLOW
    # int((mantissa - 0.5) * 2 * _SUB) with mantissa = value / 2**exponent (2 * _SUB = 2**8)
    return (exponent - 1) * _SUB + ((value_us << 8) >> exponent) - _SUB + 1


def _midpoint_us(index: int) -> float:
    if index == 0:
        return 0.5
    if index == _OVERFLOW:
        return float(2 ** _EXPONENTS)
    exponent, sub = divmod(index - 1, _SUB)
    exponent += 1
    width = math.ldexp(1.0, exponent) / (2 * _SUB)
    lower = math.ldexp(0.5, exponent) + sub * width
    return lower + width / 2


class LatencyHistogram:
    """Latencies in milliseconds, ~0.4% relative precision, fixed memory."""

    __slots__ = ("_buckets", "_count", "_max", "_min", "_sum")

    def __init__(self) -> None:
        self._buckets = array("q", bytes(8 * _BUCKETS))
        self._count = 0
        self._sum = 0.0
        self._min = math.inf
        self._max = -math.inf

    def record(self, value_ms: float) -> None:
        """Add one latency, in milliseconds (negative values, clock skew, count as 0)."""
        if value_ms < 0.0:
            value_ms = 0.0
        self._buckets[_index(value_ms * 1000.0)] += 1
        self._count += 1
        self._sum += value_ms
        if value_ms > self._max:
            self._max = value_ms
        if value_ms < self._min:
            self._min = value_ms

    @property
    def bucket_counts(self) -> array[int]:
        """The live bucket counts, for a caller that buckets values itself with
        :func:`bucket_of_us` and then reports the totals with :meth:`absorb`."""
        return self._buckets

    def absorb(self, count: int, total_ms: float, min_ms: float, max_ms: float) -> None:
        """Add the count, sum and extremes of values already counted in
        :attr:`bucket_counts` by the caller."""
        if count <= 0:
            return
        self._count += count
        self._sum += total_ms
        self._min = min(self._min, max(min_ms, 0.0))
        self._max = max(self._max, max(max_ms, 0.0))

    def merge(self, other: LatencyHistogram) -> None:
        """Add every value of ``other``."""
        for index, n in enumerate(other._buckets):
            if n:
                self._buckets[index] += n
        self._count += other._count
        self._sum += other._sum
        self._min = min(self._min, other._min)
        self._max = max(self._max, other._max)

    @property
    def count(self) -> int:
        """Number of values recorded."""
        return self._count

    @property
    def max(self) -> float | None:
        """The exact largest value (ms), ``None`` when empty."""
        return self._max if self._count else None

    @property
    def min(self) -> float | None:
        """The exact smallest value (ms), ``None`` when empty."""
        return self._min if self._count else None

    @property
    def mean(self) -> float | None:
        """The exact mean (ms), ``None`` when empty."""
        return self._sum / self._count if self._count else None

    def percentile(self, p: float) -> float | None:
        """The ``p``-th percentile (0-100, nearest rank) in ms; ``None`` when empty.

        0 and 100 give the exact minimum and maximum.
        """
        if not 0.0 <= p <= 100.0:
            raise ValueError(f"percentile must be within 0..100, got {p}")
        if not self._count:
            return None
        if p >= 100.0:
            return self._max
        if p <= 0.0:
            return self._min
        rank = max(1, math.ceil(p / 100.0 * self._count))
        seen = 0
        for index, n in enumerate(self._buckets):
            seen += n
            if seen >= rank:
                value = _midpoint_us(index) / 1000.0
                return min(max(value, self._min), self._max)
        return self._max  # pragma: no cover - counts always add up

    def summary(self) -> dict[str, float | None]:
        """``p50``, ``p99``, ``p999``, ``max`` in ms (3 decimals), ``None`` when empty."""
        def ms(value: float | None) -> float | None:
            return None if value is None else round(value, 3)

        return {"p50": ms(self.percentile(50)), "p99": ms(self.percentile(99)),
                "p999": ms(self.percentile(99.9)), "max": ms(self.max)}


State = Literal["available", "unavailable", "idle"]


@dataclass(frozen=True, slots=True)
class TimelineSecond:
    """One second of the probe run's timeline: what was sent and answered in it."""

    second: int
    sent: int
    acked: int
    failed: int
    indeterminate: int
    waiting: int
    """Messages sent before this second and not answered when it began."""
    ack_latency_min_ms: float | None
    ack_latency_max_ms: float | None
    state: State
    lost: int = 0
    """Messages sent in this second that the verifier found lost."""
    duplicated: int = 0
    """Messages sent in this second that the log holds more than once."""


class Window(NamedTuple):
    """Consecutive unavailable seconds: the first one and how many."""

    start: int
    seconds: int


class Timeline:
    """Per-second counts; index = whole seconds since the run started (caller's clock)."""

    MAX_SECONDS = 7 * 24 * 3600
    """Longest run a timeline accepts (a week: 6 arrays of 8 bytes per second)."""

    def __init__(self) -> None:
        self._sent = array("q")
        self._acked = array("q")
        self._failed = array("q")
        self._indeterminate = array("q")
        self._lat_min = array("d")
        self._lat_max = array("d")
        self._lost: dict[int, int] = {}
        self._duplicated: dict[int, int] = {}
        # (second, the next sequence of each partition when that second's sends began)
        self._boundaries: list[tuple[int, dict[int, int]]] = []

    def mark_sequences(self, second: int, next_seqs: dict[int, int]) -> None:
        """The send loop entered ``second`` with these next sequences per partition: from
        them :meth:`second_of` finds when any message was sent."""
        self._boundaries.append((int(second), dict(next_seqs)))

    def seconds_of(self, partition: int, seqs: list[int]) -> dict[int, int]:
        """How many of ``seqs`` (of ``partition``) were first sent in each second."""
        starts = [b.get(partition, 0) for _, b in self._boundaries]
        seconds = [second for second, _ in self._boundaries]
        out: dict[int, int] = {}
        for seq in seqs:
            i = bisect_right(starts, seq) - 1
            second = seconds[i] if i >= 0 else 0
            out[second] = out.get(second, 0) + 1
        return out

    def outcomes(self, lost: dict[int, int], duplicated: dict[int, int]) -> None:
        """What became of each second's sends: lost and duplicated counts by second."""
        self._lost, self._duplicated = dict(lost), dict(duplicated)

    def _slot(self, second: int) -> int:
        second = max(int(second), 0)  # a clock step backwards lands in the first second
        if second >= len(self._sent):
            if second >= self.MAX_SECONDS:
                raise ValueError(f"second {second} is beyond the timeline's "
                                 f"{self.MAX_SECONDS} seconds")
            grow = second + 1 - len(self._sent)
            zeros = bytes(8 * grow)
            for column in (self._sent, self._acked, self._failed, self._indeterminate):
                column.frombytes(zeros)
            self._lat_min.fromlist([math.inf] * grow)
            self._lat_max.fromlist([-math.inf] * grow)
        return second

    def send(self, second: int, n: int = 1) -> None:
        """``n`` messages were handed to the client during ``second``."""
        self._sent[self._slot(second)] += n

    def ack(self, second: int, latency_ms: float) -> None:
        """One acknowledgement arrived during ``second``, ``latency_ms`` after its send."""
        i = self._slot(second)
        self._acked[i] += 1
        if latency_ms < self._lat_min[i]:
            self._lat_min[i] = latency_ms
        if latency_ms > self._lat_max[i]:
            self._lat_max[i] = latency_ms

    def acks(self, second: int, n: int, latency_min_ms: float, latency_max_ms: float) -> None:
        """``n`` acknowledgements arrived during ``second``, with these extreme latencies
        (the producer tallies a second's acks and hands them over at once)."""
        if n <= 0:
            return
        i = self._slot(second)
        self._acked[i] += n
        if latency_min_ms < self._lat_min[i]:
            self._lat_min[i] = latency_min_ms
        if latency_max_ms > self._lat_max[i]:
            self._lat_max[i] = latency_max_ms

    def failure(self, second: int, n: int = 1) -> None:
        """``n`` definite failures were reported during ``second``."""
        self._failed[self._slot(second)] += n

    def indeterminate(self, second: int, n: int = 1) -> None:
        """``n`` indeterminate outcomes were reported during ``second``."""
        self._indeterminate[self._slot(second)] += n

    def __len__(self) -> int:
        return len(self._sent)

    def seconds(self) -> list[TimelineSecond]:
        """Every second from 0 to the last one recorded."""
        out: list[TimelineSecond] = []
        waiting = 0
        for i in range(len(self._sent)):
            sent, acked = self._sent[i], self._acked[i]
            failed, indeterminate = self._failed[i], self._indeterminate[i]
            state: State
            if acked:
                state = "available"
            elif sent or waiting > 0:
                state = "unavailable"
            else:
                state = "idle"
            lo, hi = self._lat_min[i], self._lat_max[i]
            out.append(TimelineSecond(i, sent, acked, failed, indeterminate, max(waiting, 0),
                              lo if acked else None, hi if acked else None, state,
                              self._lost.get(i, 0), self._duplicated.get(i, 0)))
            waiting += sent - acked - failed - indeterminate
        return out

    def unavailable_windows(self) -> list[Window]:
        """Every run of consecutive unavailable seconds, in order."""
        windows: list[Window] = []
        start = -1
        for sec in self.seconds():
            if sec.state == "unavailable":
                if start < 0:
                    start = sec.second
            elif start >= 0:
                windows.append(Window(start, sec.second - start))
                start = -1
        if start >= 0:
            windows.append(Window(start, len(self._sent) - start))
        return windows

    def unavailable_seconds(self) -> int:
        """Seconds in which the cluster acknowledged nothing while it had work."""
        return sum(w.seconds for w in self.unavailable_windows())

    def availability(self) -> float | None:
        """Available seconds / non-idle seconds; ``None`` when every second was idle."""
        states = [sec.state for sec in self.seconds()]
        busy = sum(1 for s in states if s != "idle")
        if not busy:
            return None
        return states.count("available") / busy

    def summary(self) -> dict[str, Any]:
        """JSON-ready: seconds, availability, unavailable seconds and windows."""
        windows = self.unavailable_windows()
        availability = self.availability()
        return {
            "seconds": len(self._sent),
            "availability": None if availability is None else round(availability, 6),
            "unavailable_seconds": sum(w.seconds for w in windows),
            "unavailable_windows": [{"start": w.start, "seconds": w.seconds}
                                    for w in windows],
            "longest_unavailable_seconds": max((w.seconds for w in windows), default=0),
        }
