"""What a compared value is, and what two sides are compared as, so that equal means equal.

Every compared field is a value of one :class:`Kind`, each exact in its own terms: an
integer to 64 bits, a decimal at its scale, a float as IEEE doubles (``--tolerance``
applies). A pair of sides is compared as the kind that loses nothing of either
(:func:`compared_as`): integer with integer as integers; integer or decimal with decimal as a
decimal at the larger scale; float with decimal at the decimal's scale (the precision the
decimal side keeps); never a 64-bit integer through a double. Where exact decimals would
need more than Spark's 38 digits, :func:`compared_as` says so (:class:`TooWide`) rather
than compare them through a cast that loses them.

Pure: Spark's types are read by their SQL names (``DataType.simpleString()``), so this
module imports nothing of Spark and every rule is unit-tested without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """What a compared value is."""

    INTEGER = "integer"
    DECIMAL = "decimal"
    FLOAT = "float"
    BOOLEAN = "boolean"
    DATE = "date"
    TIMESTAMP = "timestamp"
    """An instant (Spark's TIMESTAMP)."""
    LOCAL_TIMESTAMP = "local timestamp"
    """A wall-clock time without a zone (Spark's TIMESTAMP_NTZ)."""
    NANO_TIMESTAMP = "timestamp_ns"
    """An instant to the nanosecond, carried as nanoseconds since the epoch (a long:
    1677-09-21 to 2262-04-11): Spark's timestamps hold microseconds."""
    BYTES = "bytes"
    TEXT = "text"
    TIME = "time"
    """A time of day, carried as its canonical text (``08:00:00.123456``): Spark 4.0 has
    no TIME type, and text keeps every digit down to nanoseconds."""
    UUID = "uuid"
    """A UUID, carried as its lower-case text (a database writes it so; a producer may
    not)."""
    WIDE_DECIMAL = "wide decimal"
    """A decimal no Spark decimal holds (PostgreSQL's bare ``numeric``, ``numeric(p,s)``
    above 38 digits), carried as its canonical text: every digit, no trailing zeros."""
    JSON = "json"
    """A JSON document, compared structurally: key order, whitespace and a number's
    spelling (``2.50``, ``2.5``) never matter."""


#: The largest decimal precision Spark holds.
MAX_PRECISION = 38
#: Digits a signed 64-bit integer needs.
LONG_DIGITS = 19
#: The scale a JSON number is read at when it is compared exactly: 20 integer digits are
#: left, enough for any 64-bit integer, and 18 decimal places.
JSON_NUMBER_SCALE = 18

_DECIMAL = re.compile(r"decimal\((\d+),\s*(-?\d+)\)")
_INTEGERS = frozenset({"tinyint", "smallint", "int", "bigint", "byte", "short", "integer",
                       "long"})
_BY_NAME = {"float": Kind.FLOAT, "double": Kind.FLOAT, "real": Kind.FLOAT,
            "boolean": Kind.BOOLEAN, "date": Kind.DATE, "timestamp": Kind.TIMESTAMP,
            "timestamp_ltz": Kind.TIMESTAMP, "timestamp_ntz": Kind.LOCAL_TIMESTAMP,
            "binary": Kind.BYTES, "string": Kind.TEXT, "variant": Kind.JSON}
#: The kinds Spark has no type for, carried as canonical text; named by the words
#: ``--schema`` takes and by the database types that hold them.
TEXT_KINDS = {"time": Kind.TIME, "uuid": Kind.UUID, "json": Kind.JSON,
              "number": Kind.WIDE_DECIMAL}
_WIDE_NUMERIC = re.compile(r"numeric(?:\((\d+)(?:,\s*-?\d+)?\))?")
_DATABASE_NAMES = {"json": Kind.JSON, "jsonb": Kind.JSON, "uuid": Kind.UUID,
                   "time": Kind.TIME, "time without time zone": Kind.TIME}


class TooWide(ValueError):
    """Two decimals that no decimal Spark holds can compare exactly."""


@dataclass(frozen=True)
class ValueType:
    """A kind, with a decimal's precision and scale; a float compared with a decimal is
    rounded to the decimal's scale (``round_to``)."""

    kind: Kind
    precision: int = 0
    scale: int = 0
    round_to: int | None = None
    from_nanos: bool = False
    """A timestamp compared with nanoseconds since the epoch: those are cut to the
    microseconds the timestamp holds."""

    @property
    def spark(self) -> str:
        """The Spark SQL type both sides are cast to when compared as this."""
        if self.kind is Kind.DECIMAL:
            return f"decimal({self.precision},{self.scale})"
        return _SPARK[self.kind]

    def __str__(self) -> str:
        if self.kind is Kind.DECIMAL:
            return f"decimal({self.precision},{self.scale})"
        if self.round_to is not None:
            return f"float rounded to {self.round_to} decimal place(s)"
        if self.from_nanos:
            return f"{self.kind.value} (nanoseconds cut to microseconds)"
        return self.kind.value


_SPARK = {Kind.INTEGER: "bigint", Kind.FLOAT: "double", Kind.BOOLEAN: "boolean",
          Kind.DATE: "date", Kind.TIMESTAMP: "timestamp",
          Kind.LOCAL_TIMESTAMP: "timestamp_ntz", Kind.BYTES: "binary", Kind.TEXT: "string",
          Kind.TIME: "string", Kind.UUID: "string", Kind.JSON: "string",
          Kind.NANO_TIMESTAMP: "bigint", Kind.WIDE_DECIMAL: "string"}

INTEGER = ValueType(Kind.INTEGER)
FLOAT = ValueType(Kind.FLOAT)
TEXT = ValueType(Kind.TEXT)
#: What a JSON number is read as where it is compared exactly (an integer or decimal sink).
JSON_NUMBER = ValueType(Kind.DECIMAL, MAX_PRECISION, JSON_NUMBER_SCALE)


def kind_of(spark_type: str) -> ValueType:
    """The value type of a Spark SQL type name (``bigint``, ``decimal(12,2)``, ...) or of
    kaudit's ``time``, ``uuid`` and ``json``; any other type (a struct, an array, a map) is
    compared as text."""
    name = spark_type.strip().lower()
    if name in TEXT_KINDS:
        return ValueType(TEXT_KINDS[name])
    if name == Kind.NANO_TIMESTAMP.value:
        return ValueType(Kind.NANO_TIMESTAMP)
    if name in _INTEGERS:
        return INTEGER
    if m := _DECIMAL.fullmatch(name):
        return ValueType(Kind.DECIMAL, int(m.group(1)), int(m.group(2)))
    return ValueType(_BY_NAME.get(name, Kind.TEXT))


def database_kind(type_name: str) -> ValueType | None:
    """The kind a database column type holds where Spark reads it as text (``jsonb``,
    ``uuid``, ``time``; a ``numeric`` wider than Spark's decimals, which Spark would read
    as ``decimal(38,18)``, rounding); None where Spark's own type says it."""
    name = type_name.strip().lower()
    wide = _WIDE_NUMERIC.fullmatch(name)
    if wide and (wide.group(1) is None or int(wide.group(1)) > MAX_PRECISION):
        return ValueType(Kind.WIDE_DECIMAL)
    kind = _DATABASE_NAMES.get(re.sub(r"\(\d+\)", "", name).strip())
    return ValueType(kind) if kind is not None else None


_NUMBERS = frozenset({Kind.INTEGER, Kind.DECIMAL, Kind.FLOAT})
_TIMES = frozenset({Kind.DATE, Kind.TIMESTAMP, Kind.LOCAL_TIMESTAMP})


def compared_as(topic: ValueType, sink: ValueType) -> ValueType:
    """The type both sides are compared as: the one that loses nothing of either.

    - integer with integer: integer (exact to 64 bits);
    - integer or decimal with decimal: a decimal at the larger scale, wide enough for the
      larger integer part (an integer counts 19 digits), at most 38 digits;
    - float with decimal: floats, the float side rounded to the decimal's scale (what the
      decimal side can hold; a decimal of up to 15 significant digits is one double);
    - float with float or integer: float (IEEE doubles);
    - a time with a time: the timestamp if either is one, else the date; with another kind
      a timestamp all the same (text converted where it reads as one);
    - nanoseconds since the epoch with themselves or an integer: exactly, as a long; with
      a timestamp: the timestamp, the nanoseconds cut to its microseconds (said so);
    - a decimal wider than 38 digits with a number or text: its canonical text;
    - a time of day, a UUID or JSON with itself or text: that kind (its canonical text);
    - the same kind otherwise: that kind; else text.
    """
    a, b = topic.kind, sink.kind
    if Kind.NANO_TIMESTAMP in (a, b):
        other = b if a is Kind.NANO_TIMESTAMP else a
        if other in (Kind.NANO_TIMESTAMP, Kind.INTEGER):  # a long of nanoseconds, exactly
            return ValueType(Kind.NANO_TIMESTAMP)
        if other in (Kind.TIMESTAMP, Kind.LOCAL_TIMESTAMP):
            return ValueType(other, from_nanos=True)
        return TEXT
    if Kind.WIDE_DECIMAL in (a, b):
        other = b if a is Kind.WIDE_DECIMAL else a
        # Numbers and text compared as the wide decimal's canonical text: exact, any width.
        return ValueType(Kind.WIDE_DECIMAL) if other in _NUMBERS | {Kind.WIDE_DECIMAL,
                                                                     Kind.TEXT} else TEXT
    if a in _NUMBERS and b in _NUMBERS:
        if a is b is Kind.INTEGER:
            return INTEGER
        if Kind.DECIMAL not in (a, b):
            return FLOAT
        decimals = [t for t in (topic, sink) if t.kind is Kind.DECIMAL]
        if Kind.FLOAT in (a, b):
            return ValueType(Kind.FLOAT, round_to=decimals[0].scale)
        scale = max(t.scale for t in decimals)
        integer_digits = max(LONG_DIGITS if t.kind is Kind.INTEGER
                             else t.precision - t.scale for t in (topic, sink))
        if integer_digits + scale > MAX_PRECISION:
            raise TooWide(f"{topic} and {sink} compared exactly need {integer_digits} "
                          f"integer digits and {scale} decimal places, more than the "
                          f"{MAX_PRECISION} digits Spark holds")
        return ValueType(Kind.DECIMAL, integer_digits + scale, scale)
    if a in _TIMES and b in _TIMES:
        if a is b:
            return topic
        return ValueType(Kind.TIMESTAMP if Kind.TIMESTAMP in (a, b) else
                         Kind.LOCAL_TIMESTAMP)
    if Kind.TIMESTAMP in (a, b):
        return ValueType(Kind.TIMESTAMP)  # as before the type model: text read as a time
    if a is b:
        return topic
    for kind in (Kind.JSON, Kind.UUID, Kind.TIME):
        # Text on the other side is read as this kind: a JSON column's document written
        # as a string, a UUID or a time of day as its text.
        if kind in (a, b) and {a, b} <= {kind, Kind.TEXT}:
            return ValueType(kind)
    return TEXT


def json_number_type(target: ValueType) -> ValueType:
    """What a JSON number is read as for a field compared with ``target``: a float sink's
    as a double (IEEE, as the sink holds it), every other number's exactly, as a 38-digit
    decimal (its digits, never through a double) with at least 20 integer digits (any
    64-bit integer), the target's too, and as many decimal places as are left, at least
    the target's."""
    if target.kind is Kind.FLOAT:
        return FLOAT
    if target.kind is not Kind.DECIMAL:
        return JSON_NUMBER
    integer_digits = max(MAX_PRECISION - JSON_NUMBER_SCALE, target.precision - target.scale)
    return ValueType(Kind.DECIMAL, MAX_PRECISION,
                     max(target.scale, MAX_PRECISION - integer_digits))


def display_scale(sink_type: str) -> int | None:
    """The decimal places a sample of a column of ``sink_type`` keeps at least: a
    decimal's scale, an integer's 0; None for other kinds."""
    kind = kind_of(sink_type)
    if kind.kind is Kind.DECIMAL:
        return kind.scale
    return 0 if kind.kind is Kind.INTEGER else None


def display_scales(sink_types: dict[str, str]) -> dict[str, int]:
    """:func:`display_scale` of each column that has one."""
    return {c: s for c, t in sink_types.items() if (s := display_scale(t)) is not None}
