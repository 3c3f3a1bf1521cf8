"""Coordinates mode: the sink stores each record's partition and offset."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import SparkSession

from tests.unit.reconcile.frames import T0, counts, rec, rows, run, sink_frame, topic_frame

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("each_shuffle")]

V = ("v",)


def test_coordinates_classes_with_exact_coordinates(spark: SparkSession) -> None:
    topic = topic_frame(spark, [
        rec(0, 0, "k0", 0), rec(0, 1, "k1", 1), rec(0, 2, "k2", 2),
        rec(0, 3, "k3", None, tomb=True), rec(0, 4, "k4", 4),
        rec(0, 5, "k0", 0),                      # same key again: fine in this mode
        rec(1, 0, "k5", 5), rec(1, 1, "k6", 6), rec(1, 2, "k7", 7),
    ], "v long", V)
    sink = sink_frame(spark, [
        (0, 0, "k0", 0), (0, 2, "k2", 2), (0, 2, "k2", 2), (0, 3, "k3", 3), (0, 4, "k4", 4),
        (0, 5, "k0", 0), (1, 0, "k5", 5), (1, 1, "k6", 60), (1, 2, "kX", 7), (1, 9, "k9", 9),
    ], "v long", V, coordinates=True)
    result = run(topic, sink, "coordinates", V)
    assert rows(result) == [
        ("duplicated_in_sink", "k2", 0, 2, 1, 2, None, None, None),
        ("extra_in_sink", "k3", 0, 3, 1, 1, None, "tombstoned", None),
        ("extra_in_sink", "k9", 1, 9, 0, 1, None, None, None),
        ("mismatched", "k6", 1, 1, 1, 1, "v", "6", "60"),
        ("mismatched", "k7", 1, 2, 1, 1, "key", "k7", "kX"),
        ("missing_in_sink", "k1", 0, 1, 1, 0, None, None, None),
    ]
    assert result.counts() == counts(missing_in_sink=1, extra_in_sink=2,
                                     duplicated_in_sink=1, mismatched=2)
    assert result.counts_by_partition() == {
        0: counts(missing_in_sink=1, extra_in_sink=1, duplicated_in_sink=1),
        1: counts(extra_in_sink=1, mismatched=2),
    }


def test_coordinates_truncated_source_and_grace(spark: SparkSession) -> None:
    topic = topic_frame(spark, [
        rec(0, 10, "a", 1), rec(0, 11, "b", 1), rec(0, 12, "c", 1, ts=T0 + timedelta(hours=1)),
        rec(1, 4, "d", 1),
    ], "v long", V)
    sink = sink_frame(spark, [
        (0, 5, "old", 1),      # below partition 0's first offset: retention took it
        (0, 10, "a", 1), (0, 11, "b", 1),
        (0, 20, "z", 1),       # after the first offset and not in the topic: extra
        (3, 1, "p3", 1),       # a partition the topic frame has nothing of
    ], "v long", V, coordinates=True)
    result = run(topic, sink, "coordinates", V, source_truncated=True,
                 grace_cutoff=T0 + timedelta(minutes=30))
    assert rows(result) == [
        ("extra_in_sink", "z", 0, 20, 0, 1, None, None, None),
        ("missing_in_sink", "d", 1, 4, 1, 0, None, None, None),
        ("pending", "c", 0, 12, 1, 0, None, None, None),
        ("unverifiable", "old", 0, 5, 0, 1, None, None, None),
        ("unverifiable", "p3", 3, 1, 0, 1, None, None, None),
    ]
    untruncated = run(topic, sink, "coordinates", V)
    assert untruncated.counts() == counts(extra_in_sink=3, missing_in_sink=2)
