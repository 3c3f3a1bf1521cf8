"""Spark columns that read a JSON field written as ``--schema`` says (an epoch number, a
Connect decimal's base64 bytes) as the type it is compared as; exactly: never through a
double, null only where the text does not read (reported undecodable)."""

from __future__ import annotations

from typing import Any

from kaudit.reconcile.canonical import canonical, time_from_count
from kaudit.reconcile.declared import Encoding
from kaudit.reconcile.kinds import Kind

#: Nanoseconds in each unit a time of day is counted in.
_TIME_UNITS = {Encoding.MILLIS: 1_000_000, Encoding.MICROS: 1_000, Encoding.NANOS: 1}


def decoded(text: Any, target: Any, encoding: Encoding) -> Any:
    """``text`` (a field's JSON text) read as ``encoding`` into ``target``; a TIME, whose
    target is text (Spark has no TIME), as its canonical text."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    if isinstance(target, StringType) and encoding in _TIME_UNITS:
        return time_from_count(text, _TIME_UNITS[encoding])
    if encoding is Encoding.NANOS:  # since the epoch: the count is compared as it is
        return text.try_cast("bigint")
    if encoding is Encoding.VARIABLE:
        return variable_scale_decimal(text)
    if encoding is Encoding.SECONDS:
        return F.timestamp_seconds(text.try_cast("decimal(38,9)")).cast(target)
    if encoding is Encoding.MILLIS:
        return F.timestamp_millis(text.try_cast("bigint")).cast(target)
    if encoding is Encoding.MICROS:
        return F.timestamp_micros(text.try_cast("bigint")).cast(target)
    if encoding is Encoding.DAYS:
        return F.date_from_unix_date(text.try_cast("int"))
    return decimal_from_base64(text, target)


def decimal_from_base64(text: Any, target: Any) -> Any:
    """Connect's Decimal: the base64 of the unscaled value's big-endian two's-complement
    bytes, at ``target``'s scale. Built as the decimal's text (sign, digits, exponent), so no
    arithmetic rounds it; a value too wide for ``target`` is null."""
    from pyspark.sql import functions as F

    raw = F.try_to_binary(text, F.lit("base64"))
    sign, digits = _unscaled(raw)
    # The digits with an exponent: the cast places the point, exactly, at any scale.
    written = F.concat(sign, digits, F.lit(f"e-{target.scale}"))
    return F.when(raw.isNotNull(), written.try_cast(target))


def _unscaled(raw: Any) -> tuple[Any, Any]:
    """Big-endian two's-complement bytes as a sign (``-`` or nothing) and the digits of
    their magnitude; null digits past 38 of them."""
    from pyspark.sql import functions as F

    size = F.length(raw)

    def byte(i: Any) -> Any:
        return F.conv(F.hex(F.substring(raw, i, F.lit(1))), 16, 10).cast("int")

    def folded(value: Any) -> Any:
        """The bytes (each through ``value``) as one unsigned big-endian number."""
        return F.aggregate(F.sequence(F.lit(1), size), F.lit(0).cast("decimal(38,0)"),
                           lambda acc, i: (acc * 256 + value(byte(i))).cast("decimal(38,0)"))

    # A negative value's magnitude is its bytes inverted, plus one: 256^16 itself would not
    # fit in 38 digits.
    negative = byte(F.lit(1)) >= 128
    magnitude = F.when(size == 0, F.lit(0).cast("decimal(38,0)")).when(
        negative, folded(lambda b: 255 - b) + 1).otherwise(folded(lambda b: b))
    sign = F.when(negative & (size > 0), F.lit("-")).otherwise(F.lit(""))
    return sign, magnitude.cast("string")


def variable_scale_decimal(text: Any) -> Any:
    """Debezium's VariableScaleDecimal, ``{"scale": s, "value": base64}`` (a bare numeric
    in its default precise mode), as a wide decimal's canonical text; null where it does
    not read."""
    from pyspark.sql import functions as F

    return variable_decimal(F.get_json_object(text, "$.scale").try_cast("int"),
                            F.try_to_binary(F.get_json_object(text, "$.value"), F.lit("base64")))


def variable_decimal(scale: Any, raw: Any) -> Any:
    """A decimal of its own scale (Debezium's VariableScaleDecimal: ``raw``, the unscaled
    value's big-endian two's-complement bytes, and ``scale``) as a wide decimal's canonical
    text; null where either is missing or the bytes are too wide."""
    from pyspark.sql import functions as F

    sign, digits = _unscaled(raw)
    # The digits with an exponent: the canonical text moves the point, any scale.
    written = F.concat(sign, digits, F.lit("e"), (-scale).cast("string"))
    return F.when(raw.isNotNull() & scale.isNotNull() & digits.isNotNull(),
                  canonical(written, Kind.WIDE_DECIMAL))
