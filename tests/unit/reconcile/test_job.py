"""How a reconcile run sizes its one shuffle."""

from __future__ import annotations

from kaudit.reconcile.job import (
    ROWS_PER_SHUFFLE_PARTITION,
    shuffle_partitions,
)
from kaudit.reconcile.source import OffsetRange


def ranges(*sizes: int) -> list[OffsetRange]:
    return [OffsetRange(partition=p, start=100, end=100 + n, log_start=0, requested_start=100)
            for p, n in enumerate(sizes)]


def test_small_topics_keep_eight_partitions() -> None:
    assert shuffle_partitions(ranges()) == 8
    assert shuffle_partitions(ranges(0, 0)) == 8
    assert shuffle_partitions(ranges(500_000, 500_000)) == 8


def test_big_topics_get_a_partition_per_quarter_million_rows_of_both_sides() -> None:
    assert ROWS_PER_SHUFFLE_PARTITION == 250_000
    assert shuffle_partitions(ranges(*[10_000_000 // 6] * 6, 4)) == 80
    assert shuffle_partitions(ranges(10_000_001)) == 81


def test_record_coordinates_are_found_where_icebergs_sink_keeps_them() -> None:
    from kaudit.reconcile.job import coordinate_column
    from kaudit.reconcile.request import ReconcileRequest

    iceberg = {"id", "_kafka_metadata_partition", "_kafka_metadata_offset",
               "_kafka_metadata_topic"}
    request = ReconcileRequest(topic="t", sink_uri="json:/dev/null", mode="coordinates")
    assert [coordinate_column(request, c, iceberg) for c in ("partition", "offset", "topic")] \
        == ["_kafka_metadata_partition", "_kafka_metadata_offset", "_kafka_metadata_topic"]
    # A column of the coordinate's own name, or one --map names, comes first.
    assert coordinate_column(request, "offset", iceberg | {"offset"}) == "offset"
    mapped = ReconcileRequest(topic="t", sink_uri="json:/dev/null", mode="coordinates",
                              column_map={"offset": "kafka_offset"})
    assert coordinate_column(mapped, "offset", iceberg) == "kafka_offset"
