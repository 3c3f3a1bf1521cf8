"""``--schema``: the types of JSON fields, each with how its value is written when that is
not the type's own text (an epoch number for a time, Connect's base64 bytes for a decimal).

One grammar: Spark's DDL (``name TYPE, ...``), each top-level field optionally followed by an
encoding word::

    id BIGINT, created_at TIMESTAMP MICROS, day DATE DAYS, amount DECIMAL(12,2) BASE64,
    opens TIME MICROS, ref UUID, attrs JSON

``TIME``, ``UUID``, ``JSON`` and ``NUMBER`` (a decimal of any width) are kaudit's words for
what Spark 4.0 has no type for: the field is read as text and compared as that kind
(:mod:`kaudit.reconcile.kinds`).

Parsed here, in Python, so that a declaration that does not parse is exit 2 before Spark
starts; Spark then reads the DDL without the encoding words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from kaudit.errors import InputError


class Encoding(StrEnum):
    """How a declared field's value is written in the JSON."""

    SECONDS = "seconds"
    """A time as a number of seconds since the epoch (a fraction allowed)."""
    MILLIS = "millis"
    """A time as whole milliseconds since the epoch (Connect's Timestamp, Debezium's
    Timestamp)."""
    MICROS = "micros"
    """A time as whole microseconds since the epoch (Debezium's MicroTimestamp)."""
    NANOS = "nanos"
    """A time as whole nanoseconds since the epoch (Debezium's NanoTimestamp), a time of
    day since midnight (Debezium's NanoTime)."""
    DAYS = "days"
    """A date as days since 1970-01-01 (Connect's and Debezium's Date)."""
    VARIABLE = "variable"
    """A decimal as Debezium's VariableScaleDecimal writes it: ``{"scale": s, "value":
    base64}``, each value with its own scale."""
    BASE64 = "base64"
    """A decimal as the base64 of its unscaled value's big-endian two's-complement bytes,
    the scale being the declared one (Connect's Decimal, Debezium's precise mode)."""


_TIMES = frozenset({Encoding.SECONDS, Encoding.MILLIS, Encoding.MICROS, Encoding.NANOS})
#: Which encodings each base type takes.
ENCODINGS_FOR = {"timestamp": _TIMES, "timestamp_ntz": _TIMES, "timestamp_ltz": _TIMES,
                 "date": frozenset({Encoding.DAYS}),
                 "decimal": frozenset({Encoding.BASE64}), "dec": frozenset({Encoding.BASE64}),
                 "numeric": frozenset({Encoding.BASE64}),
                 "time": frozenset({Encoding.MILLIS, Encoding.MICROS, Encoding.NANOS}),
                 "number": frozenset({Encoding.VARIABLE})}
#: Types Spark 4.0 has no DDL for: read as text, compared as their kind
#: (:data:`kaudit.reconcile.kinds.TEXT_KINDS`).
KAUDIT_TYPES = frozenset({"time", "uuid", "json", "number"})
#: The type names Spark's DDL knows (their base, before any parameters), and kaudit's.
TYPE_NAMES = frozenset({
    "boolean", "tinyint", "byte", "smallint", "short", "int", "integer", "bigint", "long",
    "float", "real", "double", "decimal", "dec", "numeric", "string", "varchar", "char",
    "binary", "date", "timestamp", "timestamp_ntz", "timestamp_ltz", "struct", "array",
    "map", "variant"}) | KAUDIT_TYPES

_NAME = re.compile(r"\s*(`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)\s*:?\s*(.*)", re.DOTALL)
_BASE = re.compile(r"([A-Za-z_]+)")


@dataclass(frozen=True)
class Declaration:
    """A parsed ``--schema``."""

    ddl: str
    """The Spark DDL, without the encoding words."""
    encodings: dict[str, Encoding] = field(default_factory=dict)
    """Field -> how its value is written, for the fields that say."""
    names: tuple[str, ...] = ()
    """The top-level fields declared, in order."""
    kinds: dict[str, str] = field(default_factory=dict)
    """Field -> the kaudit type it was declared as (``time``, ``uuid``, ``json``: Spark
    reads it as a STRING; ``timestamp_ns``, a TIMESTAMP NANOS: as a BIGINT)."""


def parse_declaration(text: str) -> Declaration:
    """``--schema``'s text, checked: each item a name and a known type, an encoding word
    only where its type takes it, no name twice. Raises :class:`InputError` (exit 2)."""
    items = _split_top_level(text)
    if not any(item.strip() for item in items):
        raise InputError("--schema: give 'name TYPE, ...', e.g. 'id BIGINT, amount DOUBLE'")
    kept, encodings, kinds, seen, seen_order = [], {}, {}, set(), []
    for n, item in enumerate(items, 1):
        if not item.strip():
            raise InputError(f"--schema: item {n} is empty (a comma too many?)")
        m = _NAME.fullmatch(item)
        if m is None or not m.group(2).strip():
            raise InputError(f"--schema: item {n} {item.strip()!r} is not 'name TYPE'")
        name = m.group(1).strip("`").replace("``", "`")
        type_text = m.group(2).strip()
        words = type_text.rsplit(None, 1)
        encoding = None
        if len(words) == 2 and words[1].lower() in {e.value for e in Encoding}:
            encoding, type_text = Encoding(words[1].lower()), words[0]
        base_match = _BASE.match(type_text)
        base = base_match.group(1).lower() if base_match else ""
        if base not in TYPE_NAMES:
            raise InputError(f"--schema: {name}: unknown type {type_text.split()[0]!r} "
                             f"(types: {', '.join(sorted(TYPE_NAMES))})")
        if encoding is not None:
            allowed = ENCODINGS_FOR.get(base, frozenset())
            if encoding not in allowed:
                takes = sorted(b.upper() for b, e in ENCODINGS_FOR.items() if encoding in e)
                raise InputError(f"--schema: {name}: {encoding.upper()} applies to "
                                 f"{' or '.join(takes)}, not {type_text}")
            encodings[name] = encoding
        if name in seen:
            raise InputError(f"--schema: {name} is declared twice")
        seen.add(name)
        seen_order.append(name)
        if encoding is Encoding.NANOS and base.startswith("timestamp"):
            # Spark holds microseconds: the count itself is compared (kinds.NANO_TIMESTAMP).
            kinds[name], type_text = "timestamp_ns", "BIGINT"
        if base in KAUDIT_TYPES:
            if type_text.strip().lower() != base:
                raise InputError(f"--schema: {name}: {base.upper()} takes no parameters")
            kinds[name], type_text = base, "STRING"
        kept.append(f"{m.group(1)} {type_text}")
    return Declaration(ddl=", ".join(kept), encodings=encodings, names=tuple(seen_order),
                       kinds=kinds)


def _split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside <>, () and backquotes."""
    items, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == "`":
            quoted = not quoted
        elif quoted:
            continue
        elif ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return items
