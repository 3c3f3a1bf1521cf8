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
