"""What a field's sampled values say of how they are written, where the sink column's type
alone would misread every one of them: whole numbers counting milliseconds (or micro-,
nanoseconds) since the epoch for a timestamp column, days for a date, a count since
midnight for a time of day, Kafka Connect's base64 bytes for a numeric column.

Without a word in ``--schema`` saying so, such a field would be read as seconds (a
timestamp in the year 294247) or not at all (every record undecodable): the run is refused
before it starts, with the declaration that reads it (:func:`encoding_hint`).

Pure: the sampled values are JSON values read on the driver by the field check.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from kaudit.errors import InputError
from kaudit.reconcile.declared import parse_declaration
from kaudit.reconcile.kinds import Kind, ValueType, kind_of

if TYPE_CHECKING:
    from kaudit.reconcile.request import ReconcileRequest

#: Values kept per field from the field check's sample.
KEPT = 50
#: Significant digits a double keeps exactly: Spark's JSON reader writes a number with a
#: fraction that it reads as text through a double.
DOUBLE_DIGITS = 15
_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Each unit a count since the epoch may be in, with the largest count in it that is still
# before the year 5000: the smallest unit whose bound the values stay under is theirs.
_EPOCH_UNITS = (("SECONDS", "seconds", 1, 10**11), ("MILLIS", "milliseconds", 10**3, 10**14),
                ("MICROS", "microseconds", 10**6, 10**17),
                ("NANOS", "nanoseconds", 10**9, 2**63))
_DAY_UNITS = (("MILLIS", "milliseconds", 86_400 * 10**3),
              ("MICROS", "microseconds", 86_400 * 10**6),
              ("NANOS", "nanoseconds", 86_400 * 10**9))


def field_values(rows: Iterable[str | bytes | None],
                 fields: list[str]) -> dict[str, tuple[Any, ...]]:
    """Up to :data:`KEPT` non-null values of each field (dotted for a nested one) among the
    JSON objects sampled."""
    out: dict[str, list[Any]] = {f: [] for f in fields}
    for text in rows:
        if text is None:
            continue
        try:
            value = json.loads(text, parse_float=Decimal)  # every digit, as Kafka has it
        except (ValueError, UnicodeDecodeError):
            continue
        for f in fields:
            found = _at(value, f.split("."))
            if found is not None and len(out[f]) < KEPT:
                out[f].append(found)
    return {f: tuple(v) for f, v in out.items() if v}


def _at(value: Any, path: list[str]) -> Any:
    for part in path:
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def encoding_hint(field: str, values: tuple[Any, ...], sink: ValueType,
                  column: str) -> str | None:
    """Why ``field`` cannot be read as the sink column's type and the ``--schema`` word
    that reads it; None when its values read as they are (or say nothing: mixed, none)."""
    if not values:
        return None
    whole = all(isinstance(v, int) and not isinstance(v, bool) for v in values)
    # A fraction the sample kept as a Decimal: a float to the other hints (an epoch count
    # is whole; base64 is text).
    example = values[0]
    start = f"field {field}: the {len(values)} values sampled are "
    declare = ("; add it to --schema, which then names the key and every compared field "
               "(the rest as the sink has them)")
    if whole and sink.kind in (Kind.TIMESTAMP, Kind.LOCAL_TIMESTAMP):
        largest = max(abs(v) for v in values)
        for word, unit, per_second, bound in _EPOCH_UNITS:
            if largest < bound:
                if word == "SECONDS":
                    return None  # read as seconds already
                at = _EPOCH + timedelta(microseconds=example * 10**6 // per_second)
                if word == "NANOS":  # timedelta holds microseconds: the rest as digits
                    at_text = at.isoformat().replace("+00:00", "") + f"{example % 1000:03d}Z"
                else:
                    at_text = at.isoformat().replace("+00:00", "Z")
                return (f"{start}whole numbers (e.g. {example}) where sink column {column} is "
                        f"a timestamp; by their size they count {unit} since the epoch "
                        f"({at_text}): '{field} TIMESTAMP "
                        f"{word}'{declare}")
        return None
    if whole and sink.kind is Kind.DATE and max(abs(v) for v in values) < 3_000_000:
        day = (_EPOCH + timedelta(days=example)).date()
        return (f"{start}whole numbers (e.g. {example}) where sink column {column} is a "
                f"date; they count days since 1970-01-01 ({day}): '{field} DATE DAYS'"
                f"{declare}")
    if whole and sink.kind is Kind.TIME and min(values) >= 0:
        largest = max(values)
        for word, unit, per_day in _DAY_UNITS:
            if largest <= per_day:
                return (f"{start}whole numbers (e.g. {example}) where sink column {column} "
                        f"is a time of day; by their size they count {unit} since "
                        f"midnight: '{field} TIME {word}'{declare}")
        return None
    if sink.kind is Kind.WIDE_DECIMAL:
        exact = next((v for v in values if isinstance(v, Decimal)
                      and len(v.as_tuple().digits) > DOUBLE_DIGITS), None)
        if exact is not None:
            return (f"{start}JSON numbers, some with more digits than Spark's JSON reader "
                    f"keeps in a fraction ({exact} has {len(exact.as_tuple().digits)}; a "
                    f"double keeps {DOUBLE_DIGITS}) where sink column {column} is "
                    "numeric wider than 38 digits: compared as read they could look equal "
                    "where they differ. Write such numbers as JSON strings, or compare with "
                    "a numeric(p,s) of at most 38 digits")
        return None
    if sink.kind is Kind.DECIMAL and all(_looks_base64(v) for v in values):
        return (f"{start}base64 text (e.g. {example!r}) where sink column {column} is "
                f"{sink}: Kafka Connect's Decimal writes a number so, its unscaled value's "
                f"bytes: '{field} DECIMAL({sink.precision},{sink.scale}) BASE64' (at the "
                f"scale the connector's schema gives){declare}")
    return None


def _looks_base64(value: Any) -> bool:
    """Base64 of a few bytes that is not also a number's text."""
    return isinstance(value, str) and len(value) >= 4 and bool(_BASE64.fullmatch(value)) \
        and not value.isdigit()


def refuse_misread(request: ReconcileRequest, read_as: dict[str, str],
                   database_kinds: dict[str, ValueType]) -> None:
    """Exit 2 (:class:`InputError`) for the first field that neither ``--schema`` nor the
    values' own schema types and whose sampled values the sink column's type misreads
    (:func:`encoding_hint`). ``read_as``: field -> the Spark type it is read as."""
    declared: set[str] = set()
    for text in (request.schema, request.value_types):
        if text:
            declared |= set(parse_declaration(text).names)
    for name, values in request.sampled.items():
        if name in declared or name not in read_as:
            continue
        column = request.sink_column(name)
        sink = database_kinds.get(column) or kind_of(read_as[name])
        hint = encoding_hint(name, values, sink, column)
        if hint is not None:
            raise InputError(hint)
