"""Decoding a topic's JSON values: no present value is ever read as null.

Each test builds raw Kafka records (partition, offset, timestamp, key, value), decodes them
for a sink whose column types are given, and compares them with that sink, as a run does.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from kaudit.errors import InputError
from kaudit.reconcile.decode import decode_topic
from kaudit.reconcile.job import hashed, read_types, shape_sink
from kaudit.reconcile.kinds import display_scales
from kaudit.reconcile.request import ReconcileRequest
from tests.unit.reconcile.frames import counts, local_frame, rows, run

pytestmark = pytest.mark.spark

T0 = datetime(2024, 1, 1)


def raw(spark: SparkSession, values: list[Any]) -> DataFrame:
    """Records at partition 0, offsets 0.., the value as given (a dict is JSON-encoded;
    None is a tombstone)."""
    data = [(0, i, T0, None if v is None else str(i).encode(),
             None if v is None else (json.dumps(v) if isinstance(v, dict) else v).encode())
            for i, v in enumerate(values)]
    return local_frame(spark, data, "partition int, offset long, timestamp timestamp, "
                                    "key binary, value binary")


def reconcile(spark: SparkSession, values: list[Any], sink_rows: list[tuple[Any, ...]],
              sink_ddl: str, mode: str = "append", key: str = "id",
              compare: tuple[str, ...] = ("amount",), schema: str | None = None,
              envelope: str = "none", value_types: str | None = None,
              sink_types: dict[str, str] | None = None) -> Any:
    request = ReconcileRequest(topic="t", sink_uri="json:/dev/null", key=key,  # type: ignore[arg-type]
                               compare=compare, mode=mode, schema=schema, envelope=envelope,
                               value_types=value_types)
    sink = local_frame(spark, sink_rows, sink_ddl)
    topic = decode_topic(raw(spark, values), request, read_types(request, sink))
    sink = shape_sink(sink, request)
    compared = [request.sink_column(c) for c in compare]
    topic, sink, fields = hashed(topic, sink, compared, request.declared_kinds(), sink_types)
    return run(topic, sink, mode, compared,
               display_scales=display_scales({f.column: f.sink_type for f in fields}))


def test_an_integer_field_that_later_carries_decimals_is_read_as_the_sink_type(
        spark: SparkSession) -> None:
    # 1,200 whole amounts, then the same keys rewritten with decimals; the sink holds the
    # latest state, 7 rows of it stale.
    first = [{"id": i, "amount": i} for i in range(1200)]
    later = [{"id": i, "amount": i + 0.5} for i in range(1200)]
    sink = [(i, float(i) + (0.0 if i < 7 else 0.5)) for i in range(1200)]
    result = reconcile(spark, first + later, sink, "id long, amount double", mode="upsert")
    assert result.counts() == counts(mismatched=7)
    assert rows(result)[0] == ("mismatched", "0", 0, 1200, 2, 1, "amount", "0.5", "0.0")
    # append: each key has 2 records (the topic carries it twice), one sink row that
    # matches the later one (or, for the 7 stale ones, the first).
    result = reconcile(spark, first + later, sink, "id long, amount double")
    assert result.counts() == counts(missing_in_sink=1200, duplicated_in_topic=1200)


def test_a_field_that_first_appears_late_is_compared(spark: SparkSession) -> None:
    values: list[Any] = [{"id": i} for i in range(1500)]
    values += [{"id": i, "note": {"code": f"c{i}"}} for i in range(1500, 1503)]
    sink = [(i, None) for i in range(1500)] + [(1500, "c1500"), (1501, "c1501"), (1502, "x")]
    result = reconcile(spark, values, sink, "id long, note_code string",
                       compare=("note.code",))
    assert result.counts() == counts(mismatched=1)
    assert rows(result) == [("mismatched", "1502", 0, 1502, 1, 1, "note_code", "c1502", "x")]


def test_two_dozen_compared_fields_are_planned_and_each_change_found(
        spark: SparkSession) -> None:
    # The plan once derived the constraints of every decoded field's expressions, a cost
    # that grew several times over with each four fields: 16 fields took 29 s here, 20
    # failed after 10 minutes.
    names = [f"f{k}" for k in range(24)]

    def value(i: int, k: int) -> Any:
        return f"t{i}-{k}" if k % 2 else i * k

    def stored(i: int, k: int) -> Any:  # the sink: record 7's last field and 10's changed
        return {(7, 23): "x", (10, 22): 0}.get((i, k), value(i, k))

    values = [{"id": i, **{f: value(i, k) for k, f in enumerate(names)}} for i in range(30)]
    sink = [(i, *[stored(i, k) for k in range(24)]) for i in range(30) if i != 4]
    ddl = "id long, " + ", ".join(
        f"{f} {'string' if k % 2 else 'long'}" for k, f in enumerate(names))
    result = reconcile(spark, values, sink, ddl, compare=tuple(names))
    assert result.counts() == counts(missing_in_sink=1, mismatched=2)
    assert [(r[0], r[1], r[6], r[7], r[8]) for r in rows(result)] == [
        ("mismatched", "10", "f22", "220", "0"),
        ("mismatched", "7", "f23", "t7-23", "x"),
        ("missing_in_sink", "4", None, None, None)]


def test_a_string_where_the_sink_has_a_number_is_undecodable(spark: SparkSession) -> None:
    values = [{"id": 1, "amount": 10}, {"id": 2, "amount": "12abc"}, {"id": 3, "amount": 3}]
    sink = [(1, 10.0), (2, 12.0), (3, 4.0)]
    for mode in ("append", "upsert"):
        result = reconcile(spark, values, sink, "id long, amount double", mode=mode)
        assert result.counts() == counts(undecodable=1, mismatched=1), mode
        assert rows(result) == [
            ("mismatched", "3", 0, 2, 1, 1, "amount", "3.0", "4.0"),
            ("undecodable", "2", 0, 1, 1, 1, "amount", '{"id": 2, "amount": "12abc"}', None),
        ], mode


def test_a_text_field_reads_any_json_value_as_its_text_and_never_stands_for_a_bad_number(
        spark: SparkSession) -> None:
    # A text column takes whatever the field holds as its text (nothing to convert, so
    # nothing to check); the number beside it is still checked, by either decoder: record
    # 4 is read by the text decoder (its amount is quoted), record 5 by the fast one.
    values: list[Any] = [{"id": 1, "note": 12, "amount": 1}, {"id": 2, "note": True, "amount": 2},
                         {"id": 3, "note": {"a": [1]}, "amount": 3},
                         {"id": 4, "note": "x", "amount": "4x"},
                         {"id": 5, "note": None, "amount": {"n": 5}}, {"id": 6, "amount": 6}]
    sink = [(1, "12", 1.0), (2, "true", 2.0), (3, '{"a":[1]}', 3.0), (4, "x", 4.0),
            (5, None, 5.0), (6, None, 6.0)]
    result = reconcile(spark, values, sink, "id long, note string, amount double",
                       compare=("note", "amount"))
    assert result.counts() == counts(undecodable=2)
    assert [(r[0], r[1], r[6]) for r in rows(result)] == [
        ("undecodable", "4", "amount"), ("undecodable", "5", "amount")]


def test_numbers_as_text_and_other_types_read_exactly_as_the_text_decoder(
        spark: SparkSession) -> None:
    # The fast decoder reads numbers as DOUBLE; a record it cannot read alike (a number
    # in quotes, a boolean where a number belongs, a value that is not an object) is read
    # by the text decoder, so quoted numbers still compare equal to the sink's numbers.
    values: list[Any] = [{"id": 1, "amount": "12.5"}, {"id": 2, "amount": 7},
                         {"id": 3, "amount": "1e1"}, {"id": 4, "amount": 2.25},
                         {"id": 5, "amount": True}, {"id": 6, "amount": None}, {"id": 7}]
    sink = [(1, 12.5), (2, 7.0), (3, 10.0), (4, 2.25), (5, 1.0), (6, None), (7, None)]
    for mode in ("append", "upsert"):
        result = reconcile(spark, values, sink, "id long, amount double", mode=mode)
        assert result.counts() == counts(undecodable=1), mode
        assert [(r[0], r[1], r[6]) for r in rows(result)] == [
            ("undecodable", "5", "amount")], mode


def test_integers_beyond_a_double_are_compared_exactly(spark: SparkSession) -> None:
    # 2^53 + 1 and 2^53 + 2 differ by one, and 2^53 + 1 is no double: read through a
    # double, rows 1 and 2 would both be equal. 10.5 is no integer: never 10 or 11.
    big = 2**53 + 1
    values = [f'{{"id": 1, "amount": {big}}}', f'{{"id": 2, "amount": {big}}}',
              f'{{"id": 3, "amount": {2**63 - 1}}}', '{"id": 4, "amount": 7.0}',
              '{"id": 5, "amount": 1e1}', '{"id": 6, "amount": 10.5}',
              f'{{"id": 7, "amount": "{-(2**63)}"}}']  # quoted: the text decoder's
    sink = [(1, big), (2, big + 1), (3, 2**63 - 1), (4, 7), (5, 10), (6, 10), (7, -(2**63))]
    for mode in ("append", "upsert"):
        result = reconcile(spark, values, sink, "id long, amount long", mode=mode)
        assert result.counts() == counts(mismatched=2), mode
        assert [(r[1], r[7], r[8]) for r in rows(result)] == [
            ("2", str(big), str(big + 1)), ("6", "10.5", "10")], mode


def test_decimals_are_compared_at_their_scale(spark: SparkSession) -> None:
    from decimal import Decimal

    values = ['{"id": 1, "amount": 12.50}', '{"id": 2, "amount": 12.50}',
              '{"id": 3, "amount": 10}', '{"id": 4, "amount": "12.5"}',
              '{"id": 5, "amount": 0.1}', '{"id": 6, "amount": 12.505}']
    sink = [(1, Decimal("12.50")), (2, Decimal("12.51")), (3, Decimal("10.00")),
            (4, Decimal("12.50")), (5, Decimal("0.10")), (6, Decimal("12.51"))]
    result = reconcile(spark, values, sink, "id long, amount decimal(12,2)", mode="upsert")
    assert result.counts() == counts(mismatched=2)
    assert [(r[1], r[7], r[8]) for r in rows(result)] == [
        ("2", "12.50", "12.51"), ("6", "12.505", "12.51")]


def test_json_documents_are_compared_structurally(spark: SparkSession) -> None:
    # The sink is a jsonb column (Spark reads it as text); the topic carries the document
    # as an object (1-4) or, as Debezium's io.debezium.data.Json does, as a string (5).
    values = [{"id": 1, "attrs": {"b": 1, "a": [1, 2.50, {"y": 1, "x": 9007199254740993}]}},
              {"id": 2, "attrs": {"a": 1, "b": 2}}, {"id": 3, "attrs": {"a": "x\u00a0y"}},
              {"id": 4, "attrs": {"a": 9007199254740993}}, {"id": 5, "attrs": '{"b":2,"a":1}'}]
    sink = [(1, '{"a": [1, 2.5, {"x": 9007199254740993, "y": 1}], "b": 1}'),
            (2, '{"a": 1, "b": 3}'), (3, '{"a": "x y"}'), (4, '{"a": 9007199254740994}'),
            (5, '{"a": 1, "b": 2}')]
    result = reconcile(spark, values, sink, "id long, attrs string", mode="upsert",
                       compare=("attrs",), sink_types={"attrs": "jsonb"})
    # Key order, whitespace and 2.50 for 2.5 are equal; a value, a no-break space for a
    # space, and the last digit of a long above 2^53 are not.
    assert result.counts() == counts(mismatched=3)
    assert [(r[1], r[7], r[8]) for r in rows(result)] == [
        ("2", '{"a":1,"b":2}', '{"a":1,"b":3}'), ("3", '{"a":"x\u00a0y"}', '{"a":"x y"}'),
        ("4", '{"a":9007199254740993}', '{"a":9007199254740994}')]
    # Declared JSON against a text sink: compared structurally all the same.
    declared = reconcile(spark, values[:2], sink[:2], "id long, attrs string", mode="upsert",
                         compare=("attrs",), schema="id BIGINT, attrs JSON")
    assert declared.counts() == counts(mismatched=1)


def test_uuids_are_compared_in_any_case(spark: SparkSession) -> None:
    values = [{"id": 1, "ref": "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"},
              {"id": 2, "ref": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12"}]
    sink = [(1, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
            (2, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13")]
    result = reconcile(spark, values, sink, "id long, ref string", mode="upsert",
                       compare=("ref",), sink_types={"ref": "uuid"})
    assert result.counts() == counts(mismatched=1)
    assert [r[1] for r in rows(result)] == ["2"]
    # As text (no uuid column, nothing declared) the case differs: both are mismatched.
    as_text = reconcile(spark, values, sink, "id long, ref string", mode="upsert",
                        compare=("ref",))
    assert as_text.counts() == counts(mismatched=2)


def test_times_of_day_are_compared_exactly_from_counts_and_text(spark: SparkSession) -> None:
    # The sink is a PostgreSQL time column, read as its text (as the run reads it).
    values = [{"id": 1, "opens": 28800123456}, {"id": 2, "opens": 28800123457},
              {"id": 3, "opens": 0}, {"id": 4, "opens": 86400000000},
              {"id": 5, "opens": 86400000001}, {"id": 6, "opens": "8:00"},
              {"id": 7, "opens": -1}]
    sink = [(1, "08:00:00.123456"), (2, "08:00:00.123456"), (3, "00:00:00"),
            (4, "24:00:00"), (5, "00:00:00"), (6, "08:00:00"), (7, "23:59:59.999999")]
    result = reconcile(spark, values, sink, "id long, opens string", mode="upsert",
                       compare=("opens",), sink_types={"opens": "time without time zone"},
                       value_types="`opens` TIME MICROS")
    # 1 µs apart is different; a count outside the day, or text where a count belongs, is
    # no time at all: undecodable, never equal to anything.
    assert result.counts() == counts(mismatched=1, undecodable=3)
    assert [(r[0], r[1], r[7], r[8]) for r in rows(result) if r[0] == "mismatched"] == [
        ("mismatched", "2", "08:00:00.123457", "08:00:00.123456")]
    assert [(r[1], r[3], r[6]) for r in rows(result) if r[0] == "undecodable"] == [
        ("5", 4, "opens"), ("6", 5, "opens"), ("7", 6, "opens")]


@pytest.mark.parametrize(("declared", "counted", "expected"), [
    ("TIME MILLIS", 28800123, "08:00:00.123"), ("TIME NANOS", 28800123456789,
                                                "08:00:00.123456789"),
    ("TIME MICROS", 86399999999, "23:59:59.999999"), ("TIME", "8:00:00.120", "08:00:00.12"),
])
def test_each_time_unit_reads_as_the_same_text(spark: SparkSession, declared: str,
                                               counted: Any, expected: str) -> None:
    result = reconcile(spark, [{"id": 1, "t": counted}], [(1, "00:00:00")],
                       "id long, t string", mode="upsert", compare=("t",),
                       schema=f"id BIGINT, t {declared}")
    assert [(r[7], r[8]) for r in rows(result)] == [(expected, "00:00:00")]


def test_nanoseconds_since_the_epoch_exactly_as_longs_and_cut_to_a_timestamps_micros(
        spark: SparkSession) -> None:
    ns = 1764316800046993123  # 2025-11-28T08:00:00.046993123Z
    values = [{"id": 1, "at": ns}, {"id": 2, "at": ns}, {"id": 3, "at": -1},
              {"id": 4, "at": -1001}, {"id": 5, "at": 2**63 - 1}]
    at = datetime(2025, 11, 28, 8, 0, 0, 46993)
    # A timestamp sink holds microseconds: the nanoseconds are cut to them (floored: -1 ns
    # is the last microsecond of 1969), and the report says so.
    sink = [(1, at), (2, datetime(2025, 11, 28, 8, 0, 0, 46994)),
            (3, datetime(1969, 12, 31, 23, 59, 59, 999999)),
            (4, datetime(1969, 12, 31, 23, 59, 59, 999998)),
            (5, datetime(2262, 4, 11, 23, 47, 16, 854775))]
    result = reconcile(spark, values, sink, "id long, at timestamp", mode="upsert",
                       compare=("at",), value_types="`at` TIMESTAMP NANOS")
    assert result.counts() == counts(mismatched=1)
    assert [(r[1], r[7], r[8]) for r in rows(result)] == [
        ("2", "2025-11-28 08:00:00.046993", "2025-11-28 08:00:00.046994")]
    # A long of nanoseconds (Parquet's): compared exactly, to the last digit.
    longs = [(1, ns), (2, ns + 1), (3, -1), (4, -1001), (5, 2**63 - 1)]
    exact = reconcile(spark, values, longs, "id long, at long", mode="upsert",
                      compare=("at",), schema="id BIGINT, at TIMESTAMP NANOS")
    assert [(r[1], r[7], r[8]) for r in rows(exact)] == [("2", str(ns), str(ns + 1))]


def test_a_numeric_wider_than_sparks_decimals_is_compared_by_every_digit(
        spark: SparkSession) -> None:
    # PostgreSQL's bare numeric, read as its text (Spark would round it to 18 places). A
    # fraction this wide is exact in JSON as a string (a number's passes through a double:
    # the field check refuses those, see test_hints), an integer of any size as a number.
    wide = "123456789012345678901234567890123456789012.123456789012345678901"
    big = "123456789012345678901234567890123456789012345"
    values = ['{"id": 1, "n": 12.50}', f'{{"id": 2, "n": "{wide}"}}', f'{{"id": 3, "n": "{wide}"}}',
              '{"id": 4, "n": 1.25e1}', '{"id": 5, "n": -0.0}', '{"id": 6, "n": "0.1000"}',
              '{"id": 7, "n": 1e-30}', f'{{"id": 8, "n": {big}}}', f'{{"id": 9, "n": {big}}}']
    sink = [(1, "12.5"), (2, wide), (3, wide[:-1] + "2"), (4, "12.50"), (5, "0"),
            (6, "0.1"), (7, "0.000000000000000000000000000001"), (8, big + ".000"),
            (9, big[:-1] + "6")]
    result = reconcile(spark, values, sink, "id long, n string", mode="upsert",
                       compare=("n",), sink_types={"n": "numeric"})
    assert result.counts() == counts(mismatched=2)
    assert [(r[1], r[7], r[8]) for r in rows(result)] == [
        ("3", wide, wide[:-1] + "2"), ("9", big, big[:-1] + "6")]


def test_debeziums_variable_scale_decimals_are_read_by_every_digit(
        spark: SparkSession) -> None:
    def variable(unscaled: int, scale: int) -> dict[str, Any]:
        return {"scale": scale, "value": connect_decimal(unscaled)}

    values = [{"id": 1, "n": variable(1250, 2)}, {"id": 2, "n": variable(-1, 30)},
              {"id": 3, "n": variable(10**37 + 1, 0)}, {"id": 4, "n": variable(12, -3)},
              {"id": 5, "n": variable(1250, 2)}, {"id": 6, "n": {"scale": 1, "value": "!"}}]
    sink = [(1, "12.50"), (2, "-0.000000000000000000000000000001"), (3, str(10**37 + 1)),
            (4, "12000"), (5, "12.51"), (6, "0")]
    result = reconcile(spark, values, sink, "id long, n string", mode="upsert",
                       compare=("n",), sink_types={"n": "numeric"},
                       value_types="`n` NUMBER VARIABLE")
    assert result.counts() == counts(mismatched=1, undecodable=1)
    assert [(r[0], r[1], r[7], r[8]) for r in rows(result)] == [
        ("mismatched", "5", "12.5", "12.51"),
        ("undecodable", "6", '{"id": 6, "n": {"scale": 1, "value": "!"}}', None)]


def test_a_date_column_is_compared_as_dates_and_a_time_of_day_is_no_date(
        spark: SparkSession) -> None:
    from datetime import date

    values = [{"id": 1, "day": "2024-02-29"}, {"id": 2, "day": "2024-02-29"},
              {"id": 3, "day": "2024-02-29T00:00:00Z"}, {"id": 4, "day": 86400},
              {"id": 5, "day": "2024-02-29T10:00:00"}]
    # 86400 is a day of seconds since the epoch, never the year 86400.
    sink = [(1, date(2024, 2, 29)), (2, date(2024, 3, 1)), (3, date(2024, 2, 29)),
            (4, date(1970, 1, 2)), (5, date(2024, 2, 29))]
    result = reconcile(spark, values, sink, "id long, day date", mode="upsert",
                       compare=("day",))
    # 10:00 on a day is not that day: undecodable (its text shown), never cut to the date.
    assert result.counts() == counts(mismatched=1, undecodable=1)
    assert [(r[0], r[1], r[7], r[8]) for r in rows(result)] == [
        ("mismatched", "2", "2024-02-29", "2024-03-01"),
        ("undecodable", "5", '{"id": 5, "day": "2024-02-29T10:00:00"}', None)]


def test_a_time_field_reads_iso_text_as_a_time_and_a_number_as_seconds_even_at_a_years_start(
        spark: SparkSession) -> None:
    from datetime import timedelta

    epoch = datetime(1970, 1, 1)
    # Text Spark also casts as a time (a sign and digits: the start of that year) is a
    # number of seconds all the same; ISO text at a year's start stays that time.
    cases = [("2026-12-05T10:00:00.123456Z", datetime(2026, 12, 5, 10, 0, 0, 123456)),
             ("2026-01-01T00:00:00Z", datetime(2026, 1, 1)), ("2026-01-01", datetime(2026, 1, 1)),
             ("2026", epoch + timedelta(seconds=2026)), (" 86400 ", datetime(1970, 1, 2)),
             ("+86400", datetime(1970, 1, 2)), ("-1", epoch - timedelta(seconds=1)),
             ("86400.5", datetime(1970, 1, 2, 0, 0, 0, 500000)),
             ("1e5", epoch + timedelta(seconds=100000)), (2026, epoch + timedelta(seconds=2026)),
             ("2027", datetime(2027, 1, 1)), ("not a time", datetime(2026, 1, 1))]
    values = [{"id": i, "at": text} for i, (text, _) in enumerate(cases)]
    sink = [(i, at) for i, (_, at) in enumerate(cases)]
    result = reconcile(spark, values, sink, "id long, at timestamp", mode="upsert",
                       compare=("at",))
    # "2027" is 2027 seconds, never the year 2027; "not a time" reads as nothing.
    assert result.counts() == counts(mismatched=1, undecodable=1)
    assert [(r[0], r[1], r[7], r[8]) for r in rows(result)] == [
        ("mismatched", "10", "1970-01-01 00:33:47", "2027-01-01 00:00:00"),
        ("undecodable", "11", '{"id": 11, "at": "not a time"}', None)]


def connect_decimal(unscaled: int) -> str:
    """Connect's Decimal as its JSON converter writes it: base64 of the big-endian
    two's-complement bytes of the unscaled value."""
    import base64

    size = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


def test_declared_encodings_read_epoch_numbers_and_connect_decimals_exactly(
        spark: SparkSession) -> None:
    from datetime import date, timedelta
    from decimal import Decimal

    micros = 1764316800046993  # 2025-11-28T08:00:00.046993Z
    at = datetime(1970, 1, 1) + timedelta(microseconds=micros)
    day = 20420
    on = date(1970, 1, 1) + timedelta(days=day)
    unscaled = [1250, -1250, 0, 999999999999, -999999999999, 127, 128, -128, -129, 1250]
    values = [{"id": i, "ts": micros, "ms": micros // 1000, "day": day,
               "amount": connect_decimal(u)} for i, u in enumerate(unscaled)]
    sink = [(i, at, at.replace(microsecond=at.microsecond // 1000 * 1000), on,
             Decimal(u).scaleb(-2)) for i, u in enumerate(unscaled)]
    # Sessions run in UTC: the sink's naive datetimes are UTC wall clocks. One step off in
    # each: 1 us, 1 ms, a day, 0.01.
    sink[1] = (*sink[1][:1], at + timedelta(microseconds=1), *sink[1][2:])
    sink[2] = (*sink[2][:2], sink[2][2] + timedelta(milliseconds=1), *sink[2][3:])
    sink[3] = (*sink[3][:3], on + timedelta(days=1), sink[3][4])
    sink[9] = (*sink[9][:4], Decimal("12.51"))
    result = reconcile(spark, values, sink,
                       "id long, ts timestamp, ms timestamp, day date, amount decimal(12,2)",
                       mode="upsert", compare=("ts", "ms", "day", "amount"),
                       schema="id BIGINT, ts TIMESTAMP MICROS, ms TIMESTAMP MILLIS, "
                              "day DATE DAYS, amount DECIMAL(12,2) BASE64")
    assert result.counts() == counts(mismatched=4)
    assert sorted((r[1], r[6]) for r in rows(result)) == [
        ("1", "ts"), ("2", "ms"), ("3", "day"), ("9", "amount")]


def test_types_the_values_own_schema_gives_are_read_so_unless_declared(
        spark: SparkSession) -> None:
    from decimal import Decimal

    # Connect's wrapper, as its JSON converter writes it with schemas.enable=true; the
    # field check found the payload's semantic types (value_types) in a sample.
    def wrapped(i: int, unscaled: int) -> str:
        return json.dumps({"schema": {"type": "struct"}, "payload": {
            "id": i, "amount": connect_decimal(unscaled), "day": 20420}})

    values = [wrapped(i, 1250 + i) for i in range(3)]
    sink = [(i, Decimal(1250 + i).scaleb(-2), 20420) for i in range(3)]
    sink[2] = (2, Decimal("99.99"), 20420)
    result = reconcile(spark, values, sink, "id long, amount decimal(12,2), day int",
                       mode="upsert", compare=("amount", "day"), envelope="connect",
                       value_types="amount DECIMAL(12,2) BASE64")
    assert result.counts() == counts(mismatched=1)
    assert [(r[1], r[6], r[7], r[8]) for r in rows(result)] == [
        ("2", "amount", "12.52", "99.99")]


def test_integer_keys_read_alike_by_both_decoders(spark: SparkSession) -> None:
    # A key the sink holds as an integer is parsed to BIGINT by the fast decoder; a record
    # it cannot read (a quoted key or amount, a key beyond BIGINT) goes to the text
    # decoder, whose key text must be the same (it writes -0 as 0 too).
    values: list[Any] = [{"id": 1, "amount": 1}, {"id": "2", "amount": 2},
                         '{"id": -0, "amount": 3}', '{"id": -3, "amount": "3"}',
                         '{"id": 12345678901234567890, "amount": 5}']
    sink = [(1, 1.0), (2, 2.0), (0, 3.0), (-3, 3.0)]
    for mode in ("append", "upsert"):
        result = reconcile(spark, values, sink, "id long, amount double", mode=mode)
        assert result.counts() == counts(missing_in_sink=1), mode
        assert rows(result)[0][:4] == ("missing_in_sink", "12345678901234567890", 0, 4), mode
    slow_minus_zero = reconcile(spark, ['{"id": -0, "amount": "6"}'], [(0, 6.0)],
                                "id int, amount double")
    assert slow_minus_zero.counts() == counts()


def test_values_that_are_not_json_are_undecodable_not_missing(spark: SparkSession) -> None:
    values: list[Any] = [{"id": i, "amount": i} for i in range(1000)]
    values += ["not json", "", "42", '[{"id": 1}]', '{"id": 5, "amount":']
    sink = [(i, float(i)) for i in range(1000)]
    for mode in ("append", "upsert"):
        result = reconcile(spark, values, sink, "id long, amount double", mode=mode)
        assert result.counts() == counts(undecodable=5), mode
        found = rows(result)
        assert [(r[1], r[3], r[6], r[7]) for r in found] == [
            (None, 1000, None, "not json"), (None, 1001, None, ""), (None, 1002, None, "42"),
            (None, 1003, None, '[{"id": 1}]'), (None, 1004, None, '{"id": 5, "amount":'),
        ], mode
        assert result.topic_records() == 1005


def test_a_debezium_value_that_is_not_json_is_undecodable_as_a_whole(
        spark: SparkSession) -> None:
    values: list[Any] = [{"op": "c", "before": None, "after": {"id": i, "amount": i}}
                         for i in range(3)]
    values += ["not json", "42", '{"id": 9, "amount": 9}']  # the last: JSON, but no op
    sink = [(i, float(i)) for i in range(3)]
    result = reconcile(spark, values, sink, "id long, amount double", mode="upsert",
                       envelope="debezium")
    assert result.counts() == counts(undecodable=3)
    assert [(r[3], r[6]) for r in rows(result)] == [(3, None), (4, None), (5, "op")]


def test_an_undecodable_record_keeps_its_message_key(spark: SparkSession) -> None:
    # Key "a": a valid record, then a poison one, its latest. By message key, the poison
    # record stands as "a"'s latest state: "a"'s row is not compared with the older one
    # (which the sink no longer matches) but reported undecodable with its key.
    data = [(0, 0, T0, b"a", b'{"amount": 1}'), (0, 1, T0, b"a", b"not json"),
            (0, 2, T0, b"b", b'{"amount": 2}')]
    frame = local_frame(spark, data, "partition int, offset long, timestamp timestamp, "
                                     "key binary, value binary")
    request = ReconcileRequest(topic="t", sink_uri="json:/dev/null", key="@key",
                               compare=("amount",), mode="upsert")
    sink = local_frame(spark, [("a", 5.0), ("b", 2.0)], "key string, amount double")
    topic = decode_topic(frame, request, read_types(request, sink))
    topic, sink, _ = hashed(topic, shape_sink(sink, request), ["amount"])
    result = run(topic, sink, "upsert", ["amount"])
    assert result.counts() == counts(undecodable=1)
    assert [(r[0], r[1], r[3]) for r in rows(result)] == [("undecodable", "a", 1)]


def test_a_key_that_does_not_convert_is_an_undecodable_record_of_its_own(
        spark: SparkSession) -> None:
    values = [{"id": 1, "amount": 1}, {"id": "one", "amount": 1}, {"id": "one", "amount": 2}]
    result = reconcile(spark, values, [(1, 1.0)], "id long, amount double")
    # Two records whose key could not be read: not one key "" twice, not missing.
    assert result.counts() == counts(undecodable=2)
    assert [(r[0], r[1], r[3], r[6]) for r in rows(result)] == [
        ("undecodable", None, 1, "id"), ("undecodable", None, 2, "id")]


def test_a_nested_field_under_a_value_that_is_not_an_object(spark: SparkSession) -> None:
    values = [{"id": 1, "o": {"v": 1}}, {"id": 2, "o": 5}, {"id": 3}]
    result = reconcile(spark, values, [(1, 1), (2, 2), (3, None)], "id long, o_v long",
                       compare=("o.v",))
    # o is 5 in record 2: o.v cannot be read; record 3 simply has no o (null on both sides).
    assert result.counts() == counts(undecodable=1)
    assert rows(result)[0][:7] == ("undecodable", "2", 0, 1, 1, 1, "o.v")


def test_schema_names_the_types_instead_of_the_sink(spark: SparkSession) -> None:
    values = [{"id": 1, "amount": "10.50"}, {"id": 2, "amount": "x"}]
    result = reconcile(spark, values, [(1, "10.5"), (2, "x")], "id long, amount string",
                       schema="id BIGINT, amount DOUBLE")
    assert result.counts() == counts(undecodable=1)  # "x" is no DOUBLE
    with pytest.raises(InputError, match="--schema has no field 'amount'"):
        reconcile(spark, values, [(1, "1")], "id long, amount string", schema="id BIGINT")


def test_a_bad_schema_is_one_line_naming_sparks_reason(spark: SparkSession) -> None:
    # Spark's parse errors start with a blank line; the message must still say why.
    with pytest.raises(InputError) as caught:
        reconcile(spark, [{"id": 1}], [(1, 1.0)], "id long, amount double",
                  schema="id BIGINT, amount DECIMAL(12")
    message = str(caught.value)
    assert message.startswith("--schema: not a valid DDL schema: [PARSE_SYNTAX_ERROR]"), message
    assert "\n" not in message
