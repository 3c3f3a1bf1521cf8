"""The field check's hint: sampled values that the sink column's type would misread (epoch
counts, days, counts since midnight, Connect's base64 decimals) refuse the run with the
``--schema`` word that reads them."""

from __future__ import annotations

import json

import pytest

from kaudit.errors import InputError
from kaudit.reconcile.hints import encoding_hint, field_values, refuse_misread
from kaudit.reconcile.kinds import Kind, ValueType
from kaudit.reconcile.request import ReconcileRequest

TS, DATE, TIME = ValueType(Kind.TIMESTAMP), ValueType(Kind.DATE), ValueType(Kind.TIME)
PRICE = ValueType(Kind.DECIMAL, 12, 2)


def test_sampled_values_are_kept_per_field_nested_ones_too() -> None:
    rows = [json.dumps({"id": i, "o": {"at": i * 10}}) for i in range(60)] + [
        "not json", None, '{"id": null}', "[1]"]
    kept = field_values(rows, ["id", "o.at", "absent"])
    assert kept["id"] == tuple(range(50)) and kept["o.at"][:2] == (0, 10)
    assert "absent" not in kept


@pytest.mark.parametrize(("values", "word", "when"), [
    ((1764316800046,), "TIMESTAMP MILLIS", "2025-11-28T08:00:00.046000Z"),
    ((1764316800046993, 1), "TIMESTAMP MICROS", "2025-11-28T08:00:00.046993Z"),
    ((-631152000000,), "TIMESTAMP MILLIS", "1950-01-01T00:00:00Z"),  # before 1970
])
def test_epoch_counts_finer_than_seconds_are_named_with_their_unit(
        values: tuple[int, ...], word: str, when: str | None) -> None:
    hint = encoding_hint("created_at", values, TS, "created")
    assert hint is not None and f"'created_at {word}'" in hint and "created" in hint
    assert when is None or when in hint


def test_what_reads_as_it_is_gets_no_hint() -> None:
    assert encoding_hint("t", (1764316800, 0), TS, "t") is None  # seconds: read so already
    assert encoding_hint("t", ("2025-11-28T08:00:00Z",), TS, "t") is None
    assert encoding_hint("t", (1764316800046, "x"), TS, "t") is None  # mixed: no guess
    assert encoding_hint("t", (True,), TS, "t") is None
    assert encoding_hint("a", ("12.50", "1234"), PRICE, "a") is None
    assert encoding_hint("a", (1764316800046,), PRICE, "a") is None
    assert encoding_hint("a", (), TS, "a") is None


def test_nanoseconds_since_the_epoch_name_every_digit() -> None:
    hint = encoding_hint("t", (1764316800046993123,), TS, "t")
    assert hint is not None and "count nanoseconds since the epoch" in hint
    assert "(2025-11-28T08:00:00.046993123Z): 't TIMESTAMP NANOS'" in hint


def test_days_times_of_day_and_base64_decimals() -> None:
    day = encoding_hint("day", (20420,), DATE, "day")
    assert day is not None and "'day DATE DAYS'" in day and "(2025-11-28)" in day
    opens = encoding_hint("opens", (28800123456,), TIME, "opens")
    assert opens is not None and "'opens TIME MICROS'" in opens
    assert "'o TIME MILLIS'" in (encoding_hint("o", (28800123,), TIME, "o") or "")
    assert encoding_hint("o", (-1,), TIME, "o") is None
    price = encoding_hint("amount", ("BOI=", "AQ=="), PRICE, "amount")
    assert price is not None and "'amount DECIMAL(12,2) BASE64'" in price


def test_the_run_is_refused_unless_a_declaration_names_the_field() -> None:
    base = {"topic": "t", "sink_uri": "json:/dev/null", "key": "id",
            "compare": ("created_at",), "column_map": {"created_at": "created"},
            "sampled": {"id": (1,), "created_at": (1764316800046993,)}}
    with pytest.raises(InputError, match="'created_at TIMESTAMP MICROS'"):
        refuse_misread(ReconcileRequest(**base), {"id": "bigint", "created_at": "timestamp"},
                       {})
    for declared in ({"schema": "id BIGINT, created_at TIMESTAMP MICROS"},
                     {"value_types": "`created_at` TIMESTAMP MICROS"}):
        refuse_misread(ReconcileRequest(**base, **declared),
                       {"id": "bigint", "created_at": "timestamp"}, {})
    # The database's own type: a time column Spark reads as text.
    times = dict(base, sampled={"created_at": (28800123456,)})
    with pytest.raises(InputError, match="'created_at TIME MICROS'"):
        refuse_misread(ReconcileRequest(**times), {"created_at": "string"},
                       {"created": TIME})


def test_a_fraction_wider_than_a_double_for_a_wide_numeric_is_refused() -> None:
    from decimal import Decimal

    rows = ['{"n": 1.25}', '{"n": 123456789012345678901234567890.5}', '{"n": "1.5"}']
    values = field_values(rows, ["n"])["n"]
    assert values[1] == Decimal("123456789012345678901234567890.5")  # every digit kept
    wide = ValueType(Kind.WIDE_DECIMAL)
    hint = encoding_hint("n", values, wide, "n")
    assert hint is not None and "(123456789012345678901234567890.5 has 31" in hint
    assert "Write such numbers as JSON strings" in hint
    # Integers of any size, short fractions and strings are read exactly.
    assert encoding_hint("n", (10**50, Decimal("1.25"), "1.5"), wide, "n") is None
