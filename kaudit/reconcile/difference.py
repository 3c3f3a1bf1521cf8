"""Where two texts that look alike differ: a no-break space for a space, a trailing space, a
zero-width character, another Unicode normalization form. A mismatched sample whose two
values print the same on a terminal would otherwise be a puzzle; this names the first
position where they differ and the code points there, escaped.

Pure: it reads the samples' strings only.
"""

from __future__ import annotations

import unicodedata
from typing import Any


def looks_alike(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ but read the same: equal once compatibility-normalized
    (NFKC), without format characters (zero-width ones), with whitespace runs made one
    space and the ends stripped."""
    return a != b and _visible(a) == _visible(b)


def _visible(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return " ".join(text.split())


def code_point(ch: str | None) -> str:
    """``U+00A0 NO-BREAK SPACE``; ``end of text`` for None."""
    if ch is None:
        return "end of text"
    name = unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" {name}" if name else "")


def first_difference(a: str, b: str) -> str:
    """Where ``a`` (the topic's) and ``b`` (the sink's) first differ, by character (1-based),
    and the code points there."""
    i = next((n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
             min(len(a), len(b)))
    at_a = a[i] if i < len(a) else None
    at_b = b[i] if i < len(b) else None
    return f"character {i + 1}: topic {code_point(at_a)}, sink {code_point(at_b)}"


def add_differences(samples: dict[str, list[dict[str, Any]]]) -> None:
    """Give each mismatched sample whose two values look alike a ``difference``."""
    for sample in samples.get("mismatched", []):
        a, b = sample.get("topic_value"), sample.get("sink_value")
        if isinstance(a, str) and isinstance(b, str) and looks_alike(a, b):
            sample["difference"] = first_difference(a, b)
