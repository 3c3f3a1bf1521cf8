"""Every mode: equal sides, hash collisions, hashing helpers, input checks, plan shape."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kaudit.reconcile.plan import (
    DISCREPANCY_COLUMNS,
    DISCREPANCY_SCHEMA,
    CompareOptions,
    compare,
    key_hash_column,
    payload_hash_column,
)
from tests.unit.reconcile.frames import (
    counts,
    local_frame,
    rec,
    rows,
    run,
    sink_frame,
    topic_frame,
)

pytestmark = pytest.mark.spark
# Only the tests that run a comparison take each shuffle: the hashing helpers, the input
# checks and the plan shape (of the values plan) are the same either way.
EACH_SHUFFLE = pytest.mark.usefixtures("each_shuffle")

COLS = ("name", "amount")
FIELDS = "name string, amount double"


@EACH_SHUFFLE
@pytest.mark.parametrize("mode", ["append", "upsert", "coordinates"])
def test_equal_sides_give_all_zeros(spark: SparkSession, mode: str) -> None:
    topic = topic_frame(spark, [
        rec(0, 0, "a", "x", 1.5), rec(0, 1, "b", None, None), rec(1, 0, "c", "z", -2.0),
        rec(1, 1, None, "nokey", 0.0),
    ], FIELDS, COLS)
    sink = sink_frame(spark, [
        (1, 0, "c", "z", -2.0), (0, 1, "b", None, None), (0, 0, "a", "x", 1.5),
        (1, 1, None, "nokey", 0.0),
    ], FIELDS, COLS, coordinates=True)
    result = run(topic, sink, mode, COLS)
    assert result.counts() == counts()
    assert result.counts_by_partition() == {}
    assert rows(result) == []
    assert result.discrepancies.columns == list(DISCREPANCY_COLUMNS)
    assert result.discrepancies.schema == DISCREPANCY_SCHEMA


@EACH_SHUFFLE
@pytest.mark.parametrize("mode", ["append", "upsert"])
def test_colliding_key_hashes_are_not_paired(spark: SparkSession, mode: str) -> None:
    # a and b share key_hash 7; c has 8 on both sides; the null keys pair with each other
    topic = topic_frame(spark, [
        rec(0, 0, "a", 7, 1), rec(0, 1, "c", 8, 1), rec(0, 2, None, 9, 1),
    ], "v long", ("v",), key_hash=False)
    sink = sink_frame(spark, [("b", 7, 1), ("c", 8, 1), (None, 9, 1)], "v long", ("v",),
                      key_hash=False)
    assert rows(run(topic, sink, mode, ("v",))) == [
        ("extra_in_sink", "b", None, None, 0, 1, None, None, None),
        ("missing_in_sink", "a", 0, 0, 1, 0, None, None, None),
    ]


def test_payload_hash_is_null_safe_and_type_blind(spark: SparkSession) -> None:
    frame = local_frame(spark,
        [(None, 1, "1"), (1, None, None)], "a long, b int, c string")
    got = frame.select(
        payload_hash_column(["a", "b"]).alias("ab"),
        payload_hash_column(["b", "a"]).alias("ba"),
        payload_hash_column(["b"]).alias("b"),
        payload_hash_column(["c"]).alias("c"),
        payload_hash_column([]).alias("none"),
        key_hash_column(F.col("c")).alias("k"),
        F.xxhash64(F.col("c")).alias("x"),
    ).collect()
    first, second = got
    assert first["ab"] != second["ab"]         # (null, 1) vs (1, null)
    assert first["ab"] == second["ba"]
    assert first["b"] == first["c"]            # int 1 and string "1" hash alike
    assert first["none"] == second["none"] == 0
    assert [r["k"] for r in got] == [r["x"] for r in got]


def test_bad_input_is_a_value_error(spark: SparkSession) -> None:
    topic = topic_frame(spark, [rec(0, 0, "a", 1)], "v long", ("v",))
    sink = sink_frame(spark, [("a", 1)], "v long", ("v",))
    with pytest.raises(ValueError, match=r"sink frame has no column\(s\): w"):
        compare(topic.withColumn("w", F.lit(1)), sink,
                CompareOptions(mode="append", compare=("w",)))
    with pytest.raises(ValueError, match=r"sink frame has no column.*partition, offset"):
        compare(topic, sink, CompareOptions(mode="coordinates", compare=("v",)))
    with pytest.raises(ValueError, match="timestamp clash"):
        compare(topic, sink, CompareOptions(mode="append", compare=("timestamp",)))
    with pytest.raises(ValueError, match="unknown reconcile mode"):
        compare(topic, sink, CompareOptions(mode="merge", compare=()))  # type: ignore[arg-type]


def _scanned_rdds(frame: DataFrame) -> list[Any]:
    """The RDDs under the frame's plan's leaves (LogicalRDD scans), as JVM objects."""
    leaves = frame._jdf.queryExecution().analyzed().collectLeaves()
    return [leaves.apply(i).rdd() for i in range(leaves.size())]


@pytest.mark.parametrize("mode", ["append", "upsert", "coordinates"])
def test_one_pass_over_each_side_one_bulk_shuffle_no_sort(spark: SparkSession,
                                                          mode: str) -> None:
    topic = topic_frame(spark, [rec(0, 0, "a", 1), rec(0, 1, "b", 2)], "v long", ("v",))
    sink = sink_frame(spark, [(0, 0, "a", 1), (0, 1, "b", 3)], "v long", ("v",),
                      coordinates=True)
    result = run(topic, sink, mode, ("v",), shuffle="values")
    plan = result.discrepancies._jdf.queryExecution().executedPlan().toString()
    # Nothing sorts the rows: no window, no sort-merge join, no sort.
    for node in ("Window", "SortMergeJoin", "Sort [", "SortAggregate"):
        assert node not in plan, plan
    assert "ShuffledHashJoin" in plan, plan
    # The kept set reads two RDDs: the shuffled rows (by the detail) and the summary of
    # the first pass (by the detail's suspects and by the totals, the same RDD twice).
    rows_rdd, summary_rdd, again = _scanned_rdds(result._kept)
    assert again.id() == summary_rdd.id()
    # The summary is computed from the same RDD of shuffled rows (not a second plan of the
    # sides), and that RDD ends in the one shuffle of both sides, which read each side
    # once (one scan of each of the two local frames).
    assert f"[{rows_rdd.id()}]" in summary_rdd.toDebugString()
    lineage = rows_rdd.toDebugString()
    assert lineage.count("ShuffledRowRDD") == 1, lineage
    assert lineage.count("ParallelCollectionRDD") == 2, lineage
    assert result.counts() == counts(mismatched=1)
    assert (result.topic_records(), result.sink_rows()) == (2, 2)


@EACH_SHUFFLE
def test_the_kept_set_takes_at_most_40_shuffle_partitions_a_task(spark: SparkSession) -> None:
    # 100 partitions of the one shuffle: 3 tasks of the kept set, not one per core (each
    # task frees the suspects' hash relations of its partitions only when it ends).
    topic = topic_frame(spark, [rec(0, i, str(i), "x", 1.0) for i in range(30)], FIELDS, COLS)
    sink = sink_frame(spark, [(str(i), "x", 1.0) for i in range(1, 30)],
                      FIELDS, COLS)
    result = run(topic, sink, "append", COLS, shuffle_partitions=100)
    assert result._kept.rdd.getNumPartitions() == 3
    assert (result.counts()["missing_in_sink"], result.counts()["mismatched"]) == (1, 0)
