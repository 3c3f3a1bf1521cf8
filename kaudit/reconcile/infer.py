"""The JSON schema of a topic's values, inferred on the driver from a small sample.

Spark's own inference (``spark.read.json`` over the sample) costs a Spark job and a Python
worker start-up for a thousand strings (1.1 s measured); this does the same in plain Python,
with Spark's rules so that a schema given with ``--schema`` and an inferred one read alike:

- whole numbers are ``bigint`` (``decimal(38,0)`` beyond 64 bits), other numbers ``double``;
- text is ``string``, ``true``/``false`` ``boolean``; a field only ever null is ``string``;
- objects are structs with their fields sorted by name, arrays hold the merged element type
  (``array<string>`` when every sample array was empty);
- two different types of one field merge to the wider number (``bigint`` and ``double``
  give ``double``) or else to ``string``.

Samples that are not JSON objects (plain numbers, broken text) are skipped, as Spark's
permissive mode would leave them out of the schema. One difference: a field with an empty
name is kept, where Spark leaves the whole record out of its inference.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

# A type is kept as a small tree of Python values while merging:
#   "null", "boolean", "bigint", "decimal", "double", "string",
#   ("array", element), ("struct", {name: type})
Inferred = Any

_NUMBERS = ("bigint", "decimal", "double")
_BIGINT_MIN, _BIGINT_MAX = -(2**63), 2**63 - 1


def infer_ddl(samples: Iterable[str | bytes]) -> str:
    """A DDL schema (``StructType.fromDDL`` reads it) for the JSON objects among samples."""
    merged: Inferred = ("struct", {})
    for text in samples:
        try:
            value = json.loads(text)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(value, dict):
            merged = _merge(merged, _type_of(value))
    return _ddl_fields(merged[1])


def _type_of(value: Any) -> Inferred:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "bigint" if _BIGINT_MIN <= value <= _BIGINT_MAX else (
            "decimal" if len(str(abs(value))) <= 38 else "double")
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        element: Inferred = "null"
        for item in value:
            element = _merge(element, _type_of(item))
        return ("array", element)
    return ("struct", {str(k): _type_of(v) for k, v in value.items()})


def _merge(a: Inferred, b: Inferred) -> Inferred:
    if a == b:
        return a
    if a == "null":
        return b
    if b == "null":
        return a
    if a in _NUMBERS and b in _NUMBERS:
        return "double" if "double" in (a, b) else "decimal"
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0]:
        if a[0] == "array":
            return ("array", _merge(a[1], b[1]))
        fields = dict(a[1])
        for name, kind in b[1].items():
            fields[name] = _merge(fields.get(name, "null"), kind)
        return ("struct", fields)
    return "string"


def _ddl(kind: Inferred) -> str:
    if kind == "null":
        return "string"
    if kind == "decimal":
        return "decimal(38,0)"
    if isinstance(kind, tuple):
        if kind[0] == "array":
            return f"array<{_ddl(kind[1])}>"
        return f"struct<{_ddl_fields(kind[1], ':')}>"
    return str(kind)


def _ddl_fields(fields: dict[str, Inferred], sep: str = " ") -> str:
    return ", ".join(f"`{name.replace('`', '``')}`{sep}{_ddl(fields[name])}"
                     for name in sorted(fields))
