"""Spark columns for the kinds Spark 4.0 has no type for (:data:`kaudit.reconcile.kinds.
TEXT_KINDS`), each written as one canonical text, so that two values are equal exactly when
their texts are:

- a time of day: ``HH:MM:SS`` and the fraction's digits without trailing zeros
  (``08:00:00``, ``08:00:00.5``, ``23:59:59.999999999``), from a time's text or from a
  count of milliseconds, microseconds or nanoseconds since midnight;
- a UUID: lower case, without surrounding blanks;
- a decimal wider than Spark's: its digits, no leading zeros before the point nor trailing
  ones after it, no exponent, ``-`` only before a value other than zero (``012.50``,
  ``12.5``, ``1.25e1`` all write ``12.5``);
- JSON: as Spark's VARIANT writes it, keys sorted, no whitespace, a number by its value
  (``2.50`` as ``2.5``; a 64-bit integer keeps every digit).

A value that does not read as its kind keeps its own text: it then equals only the same
text, never a null.
"""

from __future__ import annotations

from typing import Any

from kaudit.reconcile.kinds import Kind

_NUMBER_TEXT = r"^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,4}))?\s*$"
#: The largest exponent written out in digits; beyond it a number keeps its own text.
_MAX_EXPONENT = 1000
NANOS_PER_SECOND = 1_000_000_000
NANOS_PER_DAY = 86_400 * NANOS_PER_SECOND
_TIME_TEXT = r"^\s*(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?\s*$"


def canonical(column: Any, kind: Kind) -> Any:
    """``column`` (text) as the canonical text of ``kind``; other kinds unchanged."""
    from pyspark.sql import functions as F

    if kind is Kind.JSON:
        return F.coalesce(F.to_json(F.try_parse_json(column)), column)
    if kind is Kind.UUID:
        return F.lower(F.trim(column))
    if kind is Kind.TIME:
        return F.coalesce(_time_from_text(column), column)
    if kind is Kind.WIDE_DECIMAL:
        return F.coalesce(_number_text(column), column)
    return column


def time_from_count(count: Any, nanos_per_unit: int) -> Any:
    """A count of units since midnight (an integer column) as a time of day's canonical
    text; null outside the day (24:00:00 included, as PostgreSQL allows it)."""
    from pyspark.sql import functions as F

    nanos = count.try_cast("bigint") * F.lit(nanos_per_unit)
    seconds = F.floor(nanos / NANOS_PER_SECOND)
    text = _time_text(seconds / 3600, seconds / 60 % 60, seconds % 60,
                      F.lpad((nanos % NANOS_PER_SECOND).cast("string"), 9, "0"))
    return F.when((nanos >= 0) & (nanos <= NANOS_PER_DAY), text)


def _time_from_text(text: Any) -> Any:
    """``H:MM[:SS[.fraction]]`` as the canonical text; null when it is not a time of day."""
    from pyspark.sql import functions as F

    parts = F.struct(*(F.regexp_extract(text, _TIME_TEXT, i).alias(f"p{i}")
                       for i in range(1, 5)))

    def checked(p: Any) -> Any:  # each part read once, not once per use
        hours, minutes = p["p1"].cast("int"), p["p2"].cast("int")
        seconds = F.when(p["p3"] == "", F.lit(0)).otherwise(p["p3"].cast("int"))
        valid = (p["p1"] != "") & (minutes < 60) & (seconds < 60) & (
            (hours < 24) | ((hours == 24) & (minutes == 0) & (seconds == 0)
                            & ~p["p4"].rlike("[1-9]")))
        return F.when(valid, _time_text(hours, minutes, seconds, F.rpad(p["p4"], 9, "0")))

    return let(parts, checked)


def _time_text(hours: Any, minutes: Any, seconds: Any, nine_digits: Any) -> Any:
    """``HH:MM:SS``, then ``.`` and the nine fraction digits without trailing zeros."""
    from pyspark.sql import functions as F

    whole = F.format_string("%02d:%02d:%02d", hours.cast("int"), minutes.cast("int"),
                            seconds.cast("int"))
    fraction = F.regexp_replace(nine_digits, "0+$", "")
    return F.when(fraction == "", whole).otherwise(F.concat(whole, F.lit("."), fraction))


def let(value: Any, body: Any) -> Any:
    """``body(v)`` with ``value`` computed once: each use of ``v`` reads it, where each use
    of ``value`` itself would copy its whole expression (Spark inlines columns)."""
    from pyspark.sql import functions as F

    return F.aggregate(F.array(F.lit(0)), value, lambda acc, _: acc, body)


def _number_text(text: Any) -> Any:
    """A number's text (digits, a point, an exponent) as the canonical text; null when it
    is not one."""
    from pyspark.sql import functions as F

    def part(i: int) -> Any:
        return F.regexp_extract(text, _NUMBER_TEXT, i)

    exponent = F.when(part(4) == "", F.lit(0)).otherwise(part(4).cast("int"))
    parsed = F.struct(part(1).alias("sign"), F.concat(part(2), part(3)).alias("digits"),
                      (F.length(part(2)) + exponent).alias("point"),
                      (text.rlike(_NUMBER_TEXT) & (F.abs(exponent) <= _MAX_EXPONENT))
                      .alias("valid"))

    def written(n: Any) -> Any:
        digits, point, size = n["digits"], n["point"], F.length(n["digits"])
        # The digits before and after the point, once the exponent has moved it.
        before = F.when(point <= 0, F.lit("")).when(point >= size, F.concat(
            digits, F.repeat(F.lit("0"), point - size))).otherwise(
            F.substring(digits, F.lit(1), point))
        after = F.when(point <= 0, F.concat(F.repeat(F.lit("0"), -point), digits)).when(
            point >= size, F.lit("")).otherwise(F.substring(digits, point + 1, size))
        return let(F.struct(F.regexp_replace(before, "^0+", "").alias("before"),
                            F.regexp_replace(after, "0+$", "").alias("after")),
                   lambda t: _signed(n["sign"], t["before"], t["after"],
                                     n["valid"] & (size > 0)))

    return let(parsed, written)


def _signed(sign: Any, before: Any, after: Any, valid: Any) -> Any:
    from pyspark.sql import functions as F

    magnitude = F.when(before == "", F.lit("0")).otherwise(before)
    body = F.when(after == "", magnitude).otherwise(F.concat(magnitude, F.lit("."), after))
    negative = (sign == "-") & (body != "0")
    return F.when(valid, F.concat(F.when(negative, F.lit("-")).otherwise(F.lit("")), body))
