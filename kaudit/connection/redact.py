"""The single redaction function every output path goes through.

Two defences: values under secret-looking keys are masked wherever a
mapping is rendered, and every secret value kaudit has loaded is remembered
so it is masked even where it shows up inside free text (an error message
from a client library, a log line, a JAAS string).
"""

from __future__ import annotations

import functools
import html
import json
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

MASK = "*****"

# Keys whose values are credentials, in Java and librdkafka spelling.
_SECRET_KEY = re.compile(
    r"(password|secret|sasl\.jaas\.config|ssl\.key\.pem|ssl\.keystore\.key|"
    r"ssl_key|private[._-]?key|shared[._-]?key|credentials?|token|api[._-]?key)",
    re.IGNORECASE,
)
# Inline secrets in JAAS strings and URLs, in case one was never registered. An unquoted
# value ends at an unescaped double quote too: in a rendered JSON report that quote closes
# the string the secret sits in, and masking it away would break the document. A URL's
# query parameter (after "?" or "&", or "&amp;" in a page) is _QUERY_PASSWORD's, which ends
# it at the next "&".
_JAAS_SECRET = re.compile(r'(?<![?&])(?<!&amp;)((?:password|clientSecret|secret)\s*=\s*)'
                          r'("[^"]*"|(?:\\.|[^\s;"\\])+?)(;|\s|"|$)')
_URL_PASSWORD = re.compile(r'(://[^:/@\s"]+:)([^@/\s"]+)(@)')
_QUERY_PASSWORD = re.compile(r'((?:[?&]|&amp;)(?:password|secret)=)((?:\\.|[^&\s"\\])+)',
                             re.IGNORECASE)

_lock = threading.Lock()
_known_secrets: set[str] = set()


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """True when a configuration key names a credential (keys repeat: a report of 2,000
    topics asks about the same few hundred keys 100,000 times)."""
    return bool(_SECRET_KEY.search(key))


def register_secret(value: str | None) -> None:
    """Remember a secret value so that :func:`redact` masks it anywhere."""
    # Very short values would mask ordinary words; a real credential is longer.
    if value and len(value) >= 3:
        # Also the forms it takes where it is written out: JSON-escaped (a rendered report),
        # HTML-escaped (a page), percent-encoded (a URL's parameter), and decoded (one
        # taken from a URL, as its driver reads it).
        forms = {value, json.dumps(value, ensure_ascii=False)[1:-1], html.escape(value),
                 quote(value, safe=""), unquote(value)}
        with _lock:
            _known_secrets.update(forms)
            _refresh_longest_first()


def forget_secrets() -> None:
    """Drop all remembered secrets (tests use this between cases)."""
    with _lock:
        _known_secrets.clear()
        _refresh_longest_first()


def _refresh_longest_first() -> None:
    """The secrets, longest first (a secret inside a longer one must not split it); called
    with the lock held."""
    global _longest_first
    _longest_first = tuple(sorted(_known_secrets, key=len, reverse=True))


_longest_first: tuple[str, ...] = ()


def _redact_text(text: str) -> str:
    for secret in _longest_first:
        if secret in text:
            text = text.replace(secret, MASK)
    # Each pattern needs an "=" or a "://", and the JAAS and query ones a "password" or
    # "secret" too: most texts have neither, and skip the regexes (over a 3 MB report they
    # took a quarter of a second).
    if "=" in text:
        lowered = text.lower()
        if "password" in lowered or "secret" in lowered:
            text = _JAAS_SECRET.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", text)
            text = _QUERY_PASSWORD.sub(lambda m: f"{m.group(1)}{MASK}", text)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", text)
    return text


def redact(value: Any, *, text: bool = True) -> Any:
    """Return ``value`` with every secret masked.

    Strings have remembered secrets and inline credentials masked; mappings
    also have the values of secret-looking keys masked; lists and tuples are
    redacted item by item. Anything else is returned unchanged. ``text=False``
    masks by key only, for a document whose rendered text is redacted later
    (as :func:`kaudit.report.output.emit` does).
    """
    if isinstance(value, str):
        return _redact_text(value) if text else value
    if isinstance(value, Mapping):
        # Under a secret-looking key only a scalar is the secret itself; a
        # mapping there (a config entry with value and source) is recursed into.
        return {
            k: (
                MASK
                if isinstance(k, str)
                and is_secret_key(k)
                and v not in (None, "")
                and not isinstance(v, Mapping | list | tuple)
                else redact(v, text=text)
            )
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(redact(v, text=text) for v in value)
    return value
