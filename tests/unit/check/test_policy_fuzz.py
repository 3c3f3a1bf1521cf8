"""Malformed policies never produce a traceback: only kaudit InputErrors."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kaudit.check.policy.loader import (
    CLIENT_KEYS,
    POLICY_KEYS,
    PROFILE_KEYS,
    SELECTOR_KEYS,
    WAIVER_KEYS,
    parse_policy,
)
from kaudit.check.policy.model import THRESHOLD_NAMES
from kaudit.errors import InputError

_DIR = Path(tempfile.mkdtemp(prefix="kaudit-policy-fuzz-"))
atexit.register(shutil.rmtree, _DIR, True)
(_DIR / "c.properties").write_text("acks=1\n")
POLICY_PATH = str(_DIR / "fuzz.yaml")

KEYS = sorted({*POLICY_KEYS, *PROFILE_KEYS, *SELECTOR_KEYS, *WAIVER_KEYS, *CLIENT_KEYS,
               *THRESHOLD_NAMES, "KA101", "topic.min-isr-floor", "durable", "best-effort"})
WORDS = [*KEYS, "all", "-1", "producer", "consumer", "error", "warning", "info", "orders.*",
         "(", "[a-", "2027-01-31", "2027-02-30", "c.properties", "missing.properties",
         "exactly-once", "KA999", "true", "yes"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 2**40),
                    st.floats(allow_nan=True), st.sampled_from(WORDS), st.text(max_size=12),
                    st.dates())
values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), inner,
                        max_size=5),
    ),
    max_leaves=20,
)
documents = st.dictionaries(st.sampled_from(KEYS), values, max_size=6)


def _accepts_or_rejects_cleanly(text: str) -> None:
    try:
        parse_policy(text, POLICY_PATH)
    except InputError as exc:
        assert str(exc)  # a message an operator can read


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(documents)
def test_structured_garbage(doc: dict[str, Any]) -> None:
    _accepts_or_rejects_cleanly(yaml.safe_dump(doc, sort_keys=False))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([*"ab:-[]{}'\"&*!|>%@`#,?\n \t0123456789.", "\x00", "\ufeff",
                                 "KA101", "extends", "topics", "waivers", "expires"]),
                max_size=40))
def test_random_text(pieces: list[str]) -> None:
    _accepts_or_rejects_cleanly("".join(pieces))


@settings(max_examples=100, deadline=None)
@given(documents, st.integers(0, 400), st.text(max_size=5))
def test_mutated_documents(doc: dict[str, Any], position: int, insert: str) -> None:
    text = yaml.safe_dump(doc, sort_keys=False)
    _accepts_or_rejects_cleanly(text[:position] + insert + text[position:])


def test_deep_nesting_is_an_input_error() -> None:
    _accepts_or_rejects_cleanly("topics: " + "[" * 5000 + "]" * 5000)
