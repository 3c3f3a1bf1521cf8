"""``shuffle="hashes"``: what it reads again, and the check that the second read found the
first's rows. (Every plan test runs with both shuffles: the ``each_shuffle`` fixture.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from kaudit.errors import SourceChanged
from tests.unit.reconcile.frames import counts, rec, rows, run, sink_frame, topic_frame

pytestmark = pytest.mark.spark

V = ("v",)


def test_hashes_read_again_only_the_suspects_records_and_rows(spark: SparkSession) -> None:
    # One key mismatched, one missing, one duplicated in the sink, 20 alike.
    topic = topic_frame(spark, [rec(0, i, f"k{i}", i) for i in range(23)], "v long", V)
    sink = sink_frame(spark, [(f"k{i}", i) for i in range(20)]
                      + [("k20", -1), ("k22", 22), ("k22", 22)], "v long", V)
    result = run(topic, sink, "append", V, shuffle="hashes")
    assert result.counts() == counts(mismatched=1, missing_in_sink=1, duplicated_in_sink=1)
    assert result._fetched is not None
    fetched = sorted(
        (r["_side"], r["_key"]) for r in result._fetched.select("_side", "_key").collect())
    # side 0: sink rows, side 1: topic records
    assert fetched == [(0, "k20"), (0, "k22"), (0, "k22"),
                       (1, "k20"), (1, "k21"), (1, "k22")]
    assert (result.topic_records(), result.sink_rows()) == (23, 23)
    result.unpersist()


def test_a_sink_that_changes_between_the_two_reads_is_refused(spark: SparkSession,
                                                              tmp_path: Path) -> None:
    # The sink's rows pass a filter that reads a file each time the sink is read: the
    # first read sees k1 once, the second (for the suspects' values) twice.
    listing = tmp_path / "copies"
    listing.write_text("1")
    copies = F.udf(lambda: int(listing.read_text()), "int").asNondeterministic()
    topic = topic_frame(spark, [rec(0, 0, "k0", 0), rec(0, 1, "k1", 1)], "v long", V)
    base = sink_frame(spark, [("k0", 0), ("k1", 5)], "v long", V)
    sink = base.withColumn("_n", F.when(F.col("key") == "k1", copies()).otherwise(1)) \
        .withColumn("_copy", F.explode(F.sequence(F.lit(1), F.col("_n")))) \
        .drop("_n", "_copy")
    result = run(topic, sink, "append", V, shuffle="hashes")  # the first read: now
    listing.write_text("2")
    with pytest.raises(SourceChanged, match="the sink changed while kaudit read it: the "
                       "suspect keys had 1 sink rows in the first read and 2 when read "
                       "again"):
        result.counts()
    result.unpersist()
    # Read once, the same sink gives a verdict.
    listing.write_text("1")
    once = run(topic, sink, "append", V, shuffle="values")
    assert rows(once)[0][:2] == ("mismatched", "k1")
