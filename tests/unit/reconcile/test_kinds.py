"""The type model's rules: what a Spark type is, what two sides compare as, exactly."""

from __future__ import annotations

import pytest

from kaudit.reconcile.kinds import (
    FLOAT,
    INTEGER,
    JSON_NUMBER,
    TEXT,
    Kind,
    TooWide,
    ValueType,
    compared_as,
    database_kind,
    json_number_type,
    kind_of,
)


def decimal(p: int, s: int) -> ValueType:
    return ValueType(Kind.DECIMAL, p, s)


@pytest.mark.parametrize(("spark", "expected"), [
    ("bigint", INTEGER), ("int", INTEGER), ("smallint", INTEGER), ("tinyint", INTEGER),
    ("decimal(12,2)", decimal(12, 2)), ("decimal(38, 18)", decimal(38, 18)),
    ("double", FLOAT), ("float", FLOAT), ("string", TEXT),
    ("boolean", ValueType(Kind.BOOLEAN)), ("date", ValueType(Kind.DATE)),
    ("timestamp", ValueType(Kind.TIMESTAMP)),
    ("timestamp_ntz", ValueType(Kind.LOCAL_TIMESTAMP)), ("binary", ValueType(Kind.BYTES)),
    ("struct<a:int>", TEXT), ("array<int>", TEXT),
])
def test_each_spark_type_has_its_kind(spark: str, expected: ValueType) -> None:
    assert kind_of(spark) == expected


def test_integers_compare_as_integers_never_through_a_double() -> None:
    both = compared_as(INTEGER, INTEGER)
    assert both == INTEGER and both.spark == "bigint"
    # 2^53 and 2^53 + 1 are one double: what the rule must never compare them as.
    assert float(2**53) == float(2**53 + 1)


def test_integer_and_decimal_compare_as_a_decimal_wide_enough_for_both() -> None:
    assert compared_as(INTEGER, decimal(12, 2)) == decimal(21, 2)  # 19 integer digits
    assert compared_as(decimal(12, 2), decimal(10, 4)).spark == "decimal(14,4)"
    assert compared_as(JSON_NUMBER, INTEGER) == decimal(38, 18)
    assert compared_as(JSON_NUMBER, decimal(12, 2)) == decimal(38, 18)


def test_decimals_too_wide_for_spark_are_said_not_cast() -> None:
    with pytest.raises(TooWide, match="38 integer digits and 18 decimal places"):
        compared_as(decimal(38, 0), decimal(38, 18))


def test_float_with_decimal_is_rounded_to_the_decimals_scale_and_floats_stay_floats() -> None:
    rounded = compared_as(FLOAT, decimal(12, 2))
    assert rounded.kind is Kind.FLOAT and rounded.round_to == 2 and rounded.spark == "double"
    assert compared_as(decimal(12, 3), FLOAT).round_to == 3
    assert compared_as(FLOAT, FLOAT) == FLOAT and compared_as(INTEGER, FLOAT) == FLOAT


def test_times_compare_as_the_finer_and_other_kinds_as_themselves_or_text() -> None:
    date, ts = ValueType(Kind.DATE), ValueType(Kind.TIMESTAMP)
    local = ValueType(Kind.LOCAL_TIMESTAMP)
    assert compared_as(date, date) == date and compared_as(date, ts) == ts
    assert compared_as(local, date) == local and compared_as(local, ts) == ts
    assert compared_as(TEXT, ts) == ts  # ISO text is read as a time, as before
    assert compared_as(ValueType(Kind.BOOLEAN), ValueType(Kind.BOOLEAN)).spark == "boolean"
    assert compared_as(TEXT, INTEGER) == TEXT and compared_as(INTEGER, TEXT) == TEXT


@pytest.mark.parametrize("kind", [Kind.TIME, Kind.UUID, Kind.JSON])
def test_time_uuid_and_json_read_text_as_themselves_and_nothing_else(kind: Kind) -> None:
    it = ValueType(kind)
    assert compared_as(it, TEXT) == it and compared_as(TEXT, it) == it
    assert compared_as(it, it) == it and it.spark == "string"
    assert compared_as(it, INTEGER) == TEXT  # a count is not a time without its encoding
    others = [k for k in (Kind.TIME, Kind.UUID, Kind.JSON) if k is not kind]
    assert all(compared_as(it, ValueType(k)) == TEXT for k in others)
    assert kind_of(kind.value) == it


def test_a_wide_decimal_reads_numbers_and_text_as_its_text() -> None:
    wide = ValueType(Kind.WIDE_DECIMAL)
    assert kind_of("number") == wide and wide.spark == "string"
    for other in (INTEGER, FLOAT, decimal(12, 2), TEXT, wide):
        assert compared_as(wide, other) == wide and compared_as(other, wide) == wide
    assert compared_as(wide, ValueType(Kind.DATE)) == TEXT


def test_nanoseconds_compare_exactly_as_longs_and_with_a_timestamp_at_its_microseconds() -> None:
    nanos, ts = ValueType(Kind.NANO_TIMESTAMP), ValueType(Kind.TIMESTAMP)
    assert kind_of("timestamp_ns") == nanos and nanos.spark == "bigint"
    assert compared_as(nanos, nanos) == nanos and compared_as(nanos, INTEGER) == nanos
    assert compared_as(INTEGER, nanos) == nanos  # a Parquet long of nanoseconds
    cut = compared_as(nanos, ts)
    assert cut.kind is Kind.TIMESTAMP and cut.from_nanos and cut.spark == "timestamp"
    assert str(cut) == "timestamp (nanoseconds cut to microseconds)"
    local = compared_as(ValueType(Kind.LOCAL_TIMESTAMP), nanos)
    assert local.kind is Kind.LOCAL_TIMESTAMP and local.from_nanos
    assert compared_as(nanos, TEXT) == TEXT and compared_as(nanos, FLOAT) == TEXT


@pytest.mark.parametrize(("database", "expected"), [
    ("jsonb", Kind.JSON), ("json", Kind.JSON), ("uuid", Kind.UUID),
    ("time without time zone", Kind.TIME), ("time(3) without time zone", Kind.TIME),
    ("TIME", Kind.TIME), ("time with time zone", None), ("numeric(12,2)", None),
    ("timestamp without time zone", None), ("text", None),
    ("numeric", Kind.WIDE_DECIMAL), ("numeric(39,2)", Kind.WIDE_DECIMAL),
    ("numeric(38,2)", None),
])
def test_database_types_spark_reads_as_text_name_their_kind(database: str,
                                                            expected: Kind | None) -> None:
    found = database_kind(database)
    assert (found.kind if found else None) == expected


@pytest.mark.parametrize(("target", "read_as"), [
    (INTEGER, decimal(38, 18)), (decimal(12, 2), decimal(38, 18)),
    (decimal(30, 2), decimal(38, 10)), (decimal(38, 30), decimal(38, 30)),
    (FLOAT, FLOAT), (TEXT, decimal(38, 18)),
])
def test_a_json_number_is_read_exactly_unless_its_sink_holds_a_float(
        target: ValueType, read_as: ValueType) -> None:
    assert json_number_type(target) == read_as
    # Read so, it always compares with its sink column without running out of digits.
    if target.kind in (Kind.INTEGER, Kind.DECIMAL):
        compared_as(read_as, target)
