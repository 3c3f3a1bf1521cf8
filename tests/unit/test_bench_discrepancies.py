"""bench/reconcile's injected discrepancies: which ids the sink gets wrong, and how many of
each kind, exactly (the benchmark checks kaudit's counts against them)."""

from __future__ import annotations

import pytest

from tests.unit.test_bench_spark_jobs import _bench

BENCH = _bench()


def _brute(wrong: object, kind: str, records: int) -> int:
    low, high = wrong.band(kind)  # type: ignore[attr-defined]
    return sum(1 for i in range(records) if low <= i % wrong.modulus < high)  # type: ignore[attr-defined]


def test_the_default_is_the_benchs_own_ids_1_2_and_3_modulo_1000() -> None:
    wrong = BENCH.Discrepancies()
    for records in (0, 1, 2, 3, 4, 999, 1000, 1001, 1003, 1004, 123_457):
        assert BENCH.injected(records, wrong) == {
            "missing": len(range(1, records, 1000)),
            "duplicated": len(range(2, records, 1000)),
            "changed": len(range(3, records, 1000))}


@pytest.mark.parametrize("fraction", [0.01, 0.3, 0.00003, 0.5])
def test_a_fraction_of_the_ids_is_wrong_a_third_of_each_kind(fraction: float) -> None:
    wrong = BENCH.Discrepancies.of_fraction(fraction)
    assert wrong.fraction == pytest.approx(fraction)
    for records in (0, 5, 299_999, 300_000, 300_001, 301_234, 1_000_000):
        counts = BENCH.injected(records, wrong)
        assert counts == {k: _brute(wrong, k, records) for k in BENCH.KINDS}
    counts = BENCH.injected(3_000_000, wrong)
    assert sum(counts.values()) == round(3_000_000 * fraction)
    assert len(set(counts.values())) == 1
    expected = BENCH.expected_kaudit(3_000_000, wrong)
    assert expected["sink_rows"] == 3_000_000 - counts["missing"] + counts["duplicated"]


@pytest.mark.parametrize("fraction", [0.0, -0.01, 0.000001, 0.000015, 1.0, 2.0])
def test_a_fraction_that_cannot_be_made_exactly_is_refused(fraction: float) -> None:
    with pytest.raises(ValueError, match="--discrepant"):
        BENCH.Discrepancies.of_fraction(fraction)


def test_the_verdicts_target_follows_the_discrepancies() -> None:
    assert BENCH.shuffle_target(1_000_000, BENCH.Discrepancies()) is None
    assert BENCH.shuffle_target(10_000_000, BENCH.Discrepancies()) == \
        BENCH.TARGET_SHUFFLE_RATIO_10M
    assert BENCH.shuffle_target(10_000_000, BENCH.Discrepancies.of_fraction(0.01)) == \
        BENCH.TARGET_SHUFFLE_RATIO_DISCREPANT_10M
