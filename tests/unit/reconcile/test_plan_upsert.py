"""Upsert mode: the latest record per key is the truth; a tombstone means absent."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import SparkSession

from tests.unit.reconcile.frames import T0, counts, rec, rows, run, sink_frame, topic_frame

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("each_shuffle")]

V = ("v",)


def test_upsert_classes_with_exact_keys_offsets_and_counts(spark: SparkSession) -> None:
    topic = topic_frame(spark, [
        rec(0, 1, "a", 1), rec(0, 5, "a", 2),
        rec(0, 2, "b", 1), rec(0, 6, "b", None, tomb=True),
        rec(1, 0, "c", 3),
        rec(1, 1, "e", 5),
        rec(0, 3, "f", 1), rec(0, 7, "f", 3),
        rec(1, 2, "g", 1), rec(1, 3, "g", None, tomb=True),
        rec(1, 4, "h", None, tomb=True), rec(1, 5, "h", 6),
        rec(0, 8, "i", 1), rec(1, 8, "i", 2),          # same offset: partition 1 wins
        rec(0, 9, "j", None, tomb=True),
    ], "v long", V)
    sink = sink_frame(spark, [
        ("a", 2), ("b", 1), ("d", 4), ("e", 5), ("e", 5), ("f", 1), ("h", 6), ("i", 1),
        ("j", 0), ("j", 0),
    ], "v long", V)
    result = run(topic, sink, "upsert", V)
    assert rows(result) == [
        ("duplicated_in_sink", "e", 1, 1, 1, 2, None, None, None),
        ("extra_in_sink", "b", 0, 6, 2, 1, None, "tombstoned", None),
        ("extra_in_sink", "d", None, None, 0, 1, None, None, None),
        ("extra_in_sink", "j", 0, 9, 1, 2, None, "tombstoned", None),
        ("mismatched", "f", 0, 7, 2, 1, "v", "3", "1"),
        ("mismatched", "i", 1, 8, 2, 1, "v", "2", "1"),
        ("missing_in_sink", "c", 1, 0, 1, 0, None, None, None),
    ]
    # keys repeat in an upsert topic by design: never duplicated_in_topic
    assert result.counts() == counts(missing_in_sink=1, extra_in_sink=3,
                                     duplicated_in_sink=1, mismatched=2)
    assert result.counts_by_partition() == {
        0: counts(extra_in_sink=2, mismatched=1),
        1: counts(missing_in_sink=1, duplicated_in_sink=1, mismatched=1),
    }


def test_upsert_grace_and_truncated_source(spark: SparkSession) -> None:
    topic = topic_frame(spark, [
        rec(0, 0, "old", 1),
        rec(0, 1, "new", 1), rec(0, 2, "new", 2, ts=T0 + timedelta(hours=1)),
        rec(0, 3, "gone", None, tomb=True, ts=T0 + timedelta(hours=1)),
    ], "v long", V)
    sink = sink_frame(spark, [("expired", 1), ("gone", 1)], "v long", V)
    result = run(topic, sink, "upsert", V, grace_cutoff=T0 + timedelta(minutes=30),
                 source_truncated=True)
    assert rows(result) == [
        # a recent tombstone still applied is extra: grace only spares missing records
        ("extra_in_sink", "gone", 0, 3, 1, 1, None, "tombstoned", None),
        ("missing_in_sink", "old", 0, 0, 1, 0, None, None, None),
        ("pending", "new", 0, 2, 2, 0, None, None, None),
        ("unverifiable", "expired", None, None, 0, 1, None, None, None),
    ]
