"""The canary's per-second timeline: bounded, quiet seconds kept, late answers placed."""

from __future__ import annotations

from kaudit.canary.timeline import Timeline


def test_counts_land_in_their_second_and_quiet_seconds_are_kept() -> None:
    t = Timeline(started=100.0)
    t.add("sent", 100.2)
    t.add("acked", 100.3)
    t.ack_latency(100.3, 0.012)
    t.add("sent", 103.5)
    rows = t.rows()
    assert [r["second"] for r in rows] == [0, 1, 2, 3]
    assert (rows[0]["sent"], rows[0]["acked"], rows[0]["ack_latency_max_ms"]) == (1, 1, 12.0)
    assert rows[1]["sent"] == rows[2]["sent"] == 0 and rows[3]["sent"] == 1


def test_an_answer_for_an_earlier_second_is_counted_where_it_came() -> None:
    t = Timeline(started=0.0)
    t.add("sent", 0.5)
    t.add("sent", 2.5)
    t.add("failed", 1.2)  # a delivery report handled after a later send
    assert [r["failed"] for r in t.rows()] == [0, 1, 0]


def test_only_the_last_seconds_are_kept_however_long_the_run() -> None:
    t = Timeline(started=0.0, kept_s=60)
    for second in range(10_000):
        t.add("sent", second + 0.1)
    rows = t.rows()
    assert len(rows) == 60 and rows[0]["second"] == 9940 and rows[-1]["second"] == 9999
    t.add("acked", 5.0)  # too old to be kept: dropped, never misplaced
    assert sum(r["acked"] for r in t.rows()) == 0
    t.add("sent", 1_000_000.0)  # a jump far ahead never builds a long run of ticks
    assert len(t.rows()) == 60 and t.rows()[-1]["second"] == 1_000_000


def test_a_second_is_unavailable_only_when_no_ack_came_near_it() -> None:
    t = Timeline(started=0.0)
    for second in range(6):
        t.add("sent", second + 0.9)
    t.add("acked", 1.05)  # an ack landing just past second 0's end
    t.add("acked", 5.5)
    states = [r["state"] for r in t.rows()]
    assert states == ["available", "available", "available", "unavailable", "available",
                      "available"]


def test_its_memory_is_allocated_at_the_start_and_stays_flat() -> None:
    import tracemalloc

    tracemalloc.start()
    try:
        t = Timeline(started=0.0, kept_s=600)
        before = tracemalloc.get_traced_memory()[0]
        for second in range(3000):  # five times the seconds kept
            t.add("sent", second + 0.1, 50)
            t.ack_latency(second + 0.2, 0.01)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 1024, grown
    assert len(t.rows()) == 600
