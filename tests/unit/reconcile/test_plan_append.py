"""Append mode: both sides are multisets of keys."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from pyspark.sql import DataFrame, SparkSession

from tests.unit.reconcile.frames import T0, counts, rec, rows, run, sink_frame, topic_frame

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("each_shuffle")]

V = ("v",)


def _scenario(spark: SparkSession) -> tuple[DataFrame, DataFrame]:
    topic = topic_frame(spark, [
        rec(0, 0, "same", 1),
        rec(0, 1, "gone", 2), rec(1, 4, "gone", 2),
        rec(0, 2, "partial", 3), rec(0, 5, "partial", 3), rec(0, 9, "partial", 3),
        rec(1, 0, "dup", 4),
        rec(1, 1, "tomb", None, tomb=True),
    ], "v long", V)
    sink = sink_frame(spark, [
        ("same", 1), ("partial", 3), ("extra", 7), ("extra", 7),
        ("dup", 4), ("dup", 4), ("dup", 4),
    ], "v long", V)
    return topic, sink


def test_append_classes_with_exact_keys_offsets_and_counts(spark: SparkSession) -> None:
    result = run(*_scenario(spark), "append", V)
    assert rows(result) == [
        ("duplicated_in_sink", "dup", 1, 0, 1, 3, None, None, None),
        ("duplicated_in_topic", "gone", 1, 4, 2, 0, None, None, None),
        ("duplicated_in_topic", "partial", 0, 9, 3, 1, None, None, None),
        ("extra_in_sink", "extra", None, None, 0, 2, None, None, None),
        # no sink row: every record of the key is missing, each at its own offset
        ("missing_in_sink", "gone", 0, 1, 2, 0, None, None, None),
        ("missing_in_sink", "gone", 1, 4, 2, 0, None, None, None),
        # 1 sink row for 3 records: the 2 highest offsets are the missing ones
        ("missing_in_sink", "partial", 0, 5, 3, 1, None, None, None),
        ("missing_in_sink", "partial", 0, 9, 3, 1, None, None, None),
    ]
    assert result.counts() == counts(missing_in_sink=4, extra_in_sink=1,
                                     duplicated_in_sink=1, duplicated_in_topic=2)
    assert result.counts_by_partition() == {
        0: counts(missing_in_sink=3, duplicated_in_topic=1),
        1: counts(missing_in_sink=1, duplicated_in_sink=1, duplicated_in_topic=1),
    }


def test_samples_are_small_ordered_and_cover_every_class(spark: SparkSession) -> None:
    result = run(*_scenario(spark), "append", V)
    samples = result.samples(per_class=1)
    assert set(samples) == set(counts())
    assert [len(v) for v in samples.values()] == [1, 1, 1, 1, 0, 0, 0, 0]
    first_missing = samples["missing_in_sink"][0]
    assert (first_missing["key"], first_missing["partition"], first_missing["offset"]) == (
        "gone", 0, 1)
    assert first_missing["class"] == "missing_in_sink"
    assert set(first_missing) == {"class", "key", "key_hash", "partition", "offset",
                                  "topic_count", "sink_count", "column", "topic_value",
                                  "sink_value"}
    assert samples["extra_in_sink"][0]["key"] == "extra"
    assert [s["offset"] for s in result.samples(per_class=3)["missing_in_sink"]] == [1, 5, 9]
    assert all(v == [] for v in result.samples(per_class=0).values())


def test_mismatched_per_column_is_null_safe(spark: SparkSession) -> None:
    cols = ("name", "amount", "note")
    fields = "name string, amount long, note string"
    topic = topic_frame(spark, [
        rec(0, 0, "k1", "a", 1, None),
        rec(0, 1, "k2", "x", 2, None),
        rec(0, 2, "k3", "x", 3, None),
        rec(1, 0, "k4", "x", 4, "n"),
        rec(1, 1, "k5", None, 6, "n"),
    ], fields, cols)
    sink = sink_frame(spark, [
        ("k1", "b", 1, None),
        ("k2", "x", 2, None),     # null vs null: equal
        ("k3", "x", 3, "n"),      # null vs value: differs
        ("k4", "y", 5, "n"),
        ("k5", "z", 6, "n"),
    ], fields, cols)
    result = run(topic, sink, "append", cols)
    assert rows(result) == [
        ("mismatched", "k1", 0, 0, 1, 1, "name", "a", "b"),
        ("mismatched", "k3", 0, 2, 1, 1, "note", None, "n"),
        ("mismatched", "k4", 1, 0, 1, 1, "amount", "4", "5"),
        ("mismatched", "k4", 1, 0, 1, 1, "name", "x", "y"),
        ("mismatched", "k5", 1, 1, 1, 1, "name", None, "z"),
    ]
    assert result.counts() == counts(mismatched=5)


def test_mismatch_rule_with_several_records_per_key(spark: SparkSession) -> None:
    topic = topic_frame(spark, [
        rec(0, 1, "m", 1), rec(0, 2, "m", 9),   # sink v=5 matches neither
        rec(0, 3, "h", 1), rec(0, 4, "h", 2),   # sink v=2 is one of them
        rec(0, 5, "q", 1),                      # two sink rows, one intact
    ], "v long", V)
    sink = sink_frame(spark, [("m", 5), ("h", 2), ("q", 1), ("q", 8)], "v long", V)
    assert rows(run(topic, sink, "append", V)) == [
        ("duplicated_in_sink", "q", 0, 5, 1, 2, None, None, None),
        ("duplicated_in_topic", "h", 0, 4, 2, 1, None, None, None),
        ("duplicated_in_topic", "m", 0, 2, 2, 1, None, None, None),
        # the latest record not reported missing (offset 1) against the sink row
        ("mismatched", "m", 0, 1, 2, 1, "v", "1", "5"),
        ("missing_in_sink", "h", 0, 4, 2, 1, None, None, None),
        ("missing_in_sink", "m", 0, 2, 2, 1, None, None, None),
    ]


def test_numeric_tolerance_across_numeric_types(spark: SparkSession) -> None:
    cols = ("amount", "qty")
    topic = topic_frame(spark, [
        rec(0, 0, "t1", 1.0, 5), rec(0, 1, "t2", 1.0, 5), rec(0, 2, "t3", 2.0, 7),
    ], "amount double, qty long", cols)
    sink = sink_frame(spark, [
        ("t1", Decimal("1.004"), 5), ("t2", Decimal("1.5"), 5), ("t3", Decimal("2"), 8),
    ], "amount decimal(10,3), qty int", cols)
    tolerant = run(topic, sink, "append", cols, numeric_tolerance=0.01)
    assert rows(tolerant) == [
        ("mismatched", "t2", 0, 1, 1, 1, "amount", "1.0", "1.500"),
        ("mismatched", "t3", 0, 2, 1, 1, "qty", "7", "8"),
    ]
    strict = run(topic, sink, "append", cols)
    assert [(r[1], r[6]) for r in rows(strict)] == [
        ("t1", "amount"), ("t2", "amount"), ("t3", "qty")]


def test_string_sink_values_are_converted_before_comparing(spark: SparkSession) -> None:
    topic = topic_frame(spark, [
        rec(0, 0, "ok", 12), rec(0, 1, "bad", 12), rec(0, 2, "nulls", None),
        rec(0, 3, "null-vs-text", None),
    ], "qty long", ("qty",))
    sink = sink_frame(spark, [
        ("ok", "12"), ("bad", "abc"), ("nulls", None), ("null-vs-text", "abc"),
    ], "qty string", ("qty",))
    assert rows(run(topic, sink, "append", ("qty",))) == [
        ("mismatched", "bad", 0, 1, 1, 1, "qty", "12", "abc"),
        ("mismatched", "null-vs-text", 0, 3, 1, 1, "qty", None, "abc"),
    ]


@pytest.mark.parametrize(("precision", "mismatched"), [
    ("us", ["k1", "k2", "k3"]), ("ms", ["k2", "k3"]), ("s", ["k3"]),
])
def test_timestamp_precision(spark: SparkSession, precision: str,
                             mismatched: list[str]) -> None:
    base = datetime(2024, 5, 1, 12, 0, 0)
    topic = topic_frame(spark, [
        rec(0, 0, "k1", base + timedelta(microseconds=123456)),
        rec(0, 1, "k2", base + timedelta(milliseconds=500)),
        rec(0, 2, "k3", base + timedelta(seconds=1)),
    ], "at timestamp", ("at",))
    sink = sink_frame(spark, [
        ("k1", base + timedelta(microseconds=123000)),
        ("k2", base + timedelta(milliseconds=900)),
        ("k3", base + timedelta(seconds=2)),
    ], "at timestamp", ("at",))
    result = run(topic, sink, "append", ("at",), timestamp_precision=precision)
    assert [r[1] for r in rows(result)] == mismatched


def test_grace_turns_recent_missing_records_into_pending(spark: SparkSession) -> None:
    late = T0 + timedelta(hours=1)
    topic = topic_frame(spark, [
        rec(0, 0, "old", 1),
        rec(0, 1, "new", 1, ts=late),
        rec(1, 0, "half", 1), rec(1, 1, "half", 1, ts=late),
        rec(1, 2, "oldpair", 1), rec(1, 3, "oldpair", 1),
    ], "v long", V)
    sink = sink_frame(spark, [("half", 1)], "v long", V)
    result = run(topic, sink, "append", V, grace_cutoff=T0 + timedelta(minutes=30))
    assert [r[:4] for r in rows(result) if r[0] in ("missing_in_sink", "pending")] == [
        ("missing_in_sink", "old", 0, 0),
        ("missing_in_sink", "oldpair", 1, 2),
        ("missing_in_sink", "oldpair", 1, 3),
        ("pending", "half", 1, 1),
        ("pending", "new", 0, 1),
    ]
    assert result.counts() == counts(missing_in_sink=3, pending=2, duplicated_in_topic=2)


def test_truncated_source_makes_unmatched_sink_keys_unverifiable(spark: SparkSession) -> None:
    topic = topic_frame(spark, [rec(0, 7, "kept", 1)], "v long", V)
    sink = sink_frame(spark, [("expired", 1), ("kept", 1), ("kept", 1)], "v long", V)
    result = run(topic, sink, "append", V, source_truncated=True)
    assert rows(result) == [
        ("duplicated_in_sink", "kept", 0, 7, 1, 2, None, None, None),
        ("unverifiable", "expired", None, None, 0, 1, None, None, None),
    ]
