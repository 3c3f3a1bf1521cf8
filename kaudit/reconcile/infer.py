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
