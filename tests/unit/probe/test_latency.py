"""Latency histogram accuracy against a sorted list, and the availability timeline."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kaudit.probe.latency import LatencyHistogram, Timeline, Window, bucket_of_us

PERCENTILES = (0, 1, 25, 50, 90, 99, 99.9, 99.99, 100)


def _exact(values: list[float], p: float) -> float:
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def _check(values: list[float]) -> None:
    hist = LatencyHistogram()
    for v in values:
        hist.record(v)
    for p in PERCENTILES:
        got, want = hist.percentile(p), _exact(values, p)
        assert got is not None
        assert abs(got - want) <= 0.02 * want, (p, got, want)


def test_percentiles_within_two_percent_lognormal() -> None:
    rng = random.Random(4)
    # ack latencies: mostly a few ms, a long tail up to seconds (a leader failover)
    values = [rng.lognormvariate(1.0, 1.2) for _ in range(50_000)]
    values += [rng.uniform(2_000, 30_000) for _ in range(50)]
    _check(values)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(min_value=0.001, max_value=3_600_000), min_size=1, max_size=300))
def test_percentiles_within_two_percent_any_values(values: list[float]) -> None:
    _check(values)


def test_summary_and_exact_extremes() -> None:
    hist = LatencyHistogram()
    assert hist.summary() == {"p50": None, "p99": None, "p999": None, "max": None}
    assert hist.percentile(50) is None and hist.max is None and hist.count == 0
    for v in (1.0, 2.0, 3.0, 4.0, 1234.5678):
        hist.record(v)
    summary = hist.summary()
    assert list(summary) == ["p50", "p99", "p999", "max"]
    assert summary["max"] == 1234.568
    assert hist.max == 1234.5678 and hist.min == 1.0 and hist.count == 5
    assert hist.mean == pytest.approx((10 + 1234.5678) / 5)
    assert summary["p50"] == pytest.approx(3.0, rel=0.01)


def test_out_of_range_values() -> None:
    hist = LatencyHistogram()
    hist.record(-3.0)  # clock skew between producer and consumer clocks
    hist.record(0.0001)
    hist.record(10 * 3_600_000.0)  # ten hours: beyond the buckets, max still exact
    assert hist.count == 3
    assert hist.percentile(0) == 0.0
    assert hist.max == 36_000_000.0
    assert hist.percentile(100) == 36_000_000.0
    with pytest.raises(ValueError):
        hist.percentile(101)


def test_merge() -> None:
    a, b, both = LatencyHistogram(), LatencyHistogram(), LatencyHistogram()
    rng = random.Random(1)
    for i in range(2000):
        v = rng.expovariate(0.1)
        (a if i % 2 else b).record(v)
        both.record(v)
    a.merge(b)
    assert a.summary() == both.summary() and a.count == both.count


def test_timeline_availability_and_windows() -> None:
    t = Timeline()
    for _ in range(10):
        t.send(0)
    for latency in (3.0, 5.0, 4.0, 2.0, 9.0):
        t.ack(0, latency)
    for _ in range(10):
        t.send(1)  # the leader dies: sends continue, nothing is acknowledged
    t.indeterminate(2, 2)  # 2 timeouts, still nothing acked (producer blocked, no sends)
    for _ in range(13):
        t.ack(3, 150.0)  # the new leader answers the rest
    # second 4: idle
    t.send(5, 3)  # another stall, cut short by the end of the run
    seconds = t.seconds()
    assert [s.state for s in seconds] == [
        "available", "unavailable", "unavailable", "available", "idle", "unavailable"]
    assert [s.waiting for s in seconds] == [0, 5, 15, 13, 0, 0]
    assert (seconds[0].ack_latency_min_ms, seconds[0].ack_latency_max_ms) == (2.0, 9.0)
    assert seconds[1].ack_latency_min_ms is None
    assert t.unavailable_windows() == [Window(1, 2), Window(5, 1)]
    assert t.unavailable_seconds() == 3
    assert t.availability() == pytest.approx(2 / 5)
    assert t.summary() == {
        "seconds": 6, "availability": 0.4, "unavailable_seconds": 3,
        "unavailable_windows": [{"start": 1, "seconds": 2}, {"start": 5, "seconds": 1}],
        "longest_unavailable_seconds": 2}


@given(st.lists(st.integers(min_value=-5, max_value=2**40), min_size=1, max_size=200))
def test_bucketing_whole_microseconds_equals_record(values_us: list[int]) -> None:
    """The producer's path (bucket_of_us + absorb) builds the same histogram as record()."""
    recorded, bucketed = LatencyHistogram(), LatencyHistogram()
    for us in values_us:
        recorded.record(us / 1000.0)
        bucketed.bucket_counts[bucket_of_us(us)] += 1
    ms = [max(us, 0) / 1000.0 for us in values_us]
    bucketed.absorb(len(ms), sum(ms), min(ms), max(ms))
    assert bucketed.summary() == recorded.summary()
    assert bucketed.count == recorded.count and bucketed.mean == pytest.approx(recorded.mean)


def test_timeline_acks_in_bulk_equal_one_by_one() -> None:
    one, bulk = Timeline(), Timeline()
    for latency in (3.0, 5.0, 4.0):
        one.ack(2, latency)
    one.ack(3, 7.0)
    bulk.acks(2, 2, 3.0, 5.0)  # a second handed over in two tallies
    bulk.acks(2, 1, 4.0, 4.0)
    bulk.acks(3, 1, 7.0, 7.0)
    bulk.acks(4, 0, math.inf, -math.inf)  # an empty tally adds nothing
    assert bulk.seconds() == one.seconds() and len(bulk) == 4


def test_timeline_failures_alone_are_unavailable() -> None:
    t = Timeline()
    t.send(0, 5)
    t.failure(0, 5)  # NOT_ENOUGH_REPLICAS for everything
    assert [s.state for s in t.seconds()] == ["unavailable"]
    assert t.availability() == 0.0


def test_timeline_edges() -> None:
    t = Timeline()
    assert t.seconds() == [] and t.availability() is None and t.unavailable_windows() == []
    t.ack(-2, 1.0)  # a clock step backwards lands in second 0
    assert len(t) == 1
    with pytest.raises(ValueError):
        t.send(Timeline.MAX_SECONDS)
