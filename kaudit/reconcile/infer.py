"""The fields a topic's JSON values have, read on the driver from a small sample.

Only used to refuse, before the long run, a key or compared field that no value has (a
typo, a field that needs ``--map``). Types are not inferred from the sample: the values are
read as text and converted to the types the comparison needs (see ``decode_topic``), so a
record the sample did not foresee (an integer that became a decimal, a field added later)
is never read as null.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def field_paths(samples: Iterable[str | bytes | None]) -> set[str]:
    """Every field path (``a``, ``a.b`` for nested objects) of the JSON objects among
    samples; values that are not JSON objects are skipped."""
    paths: set[str] = set()
    for text in samples:
        if text is None:
            continue
        try:
            value = json.loads(text)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(value, dict):
            _walk(value, "", paths)
    return paths


def _walk(value: dict[str, Any], prefix: str, paths: set[str]) -> None:
    for name, inner in value.items():
        path = f"{prefix}{name}"
        paths.add(path)
        if isinstance(inner, dict):
            _walk(inner, path + ".", paths)


#: How :func:`not_objects` names the JSON values that are not objects.
_JSON_KINDS = {list: "arrays", str: "strings", int: "numbers", float: "numbers",
               bool: "booleans"}


def not_objects(samples: Iterable[str | bytes | None]) -> str | None:
    """When no sampled value is a JSON object, what the values look like instead, as a hint
    to the value format that reads them; None when some value is an object (or there is
    none)."""
    values = [v for v in samples if v is not None]
    kinds: set[str] = set()
    for text in values:
        try:
            value = json.loads(text)
        except (ValueError, UnicodeDecodeError):
            kinds.add("")  # not JSON
            continue
        if isinstance(value, dict):
            return None
        kinds.add(_JSON_KINDS.get(type(value), "nulls"))
    if not values:
        return None
    raw = [v.encode() if isinstance(v, str) else v for v in values]
    framed = sum(1 for v in raw if len(v) >= 5 and v[0] == 0)
    if 2 * framed > len(raw):
        return (f"{framed} of {len(raw)} start as Confluent's Avro framing does, a zero byte "
                "and a schema id: --value-format avro reads them")
    if "" not in kinds:
        return (f"they are JSON {', '.join(sorted(kinds))}: --value-format string compares "
                "each value whole")
    return ("they are not all JSON: --value-format string or bytes compares each value "
            "whole, avro-plain decodes a bare Avro body")
