"""Writer schemas from a Schema Registry's Confluent-compatible REST API (Confluent's own,
or another registry's compatible one, e.g. Apicurio's ``/apis/ccompat/v7``).

The schemas of a topic's values are the versions of its subject, ``TOPIC-value`` by the
default subject naming (``TOPIC-key`` for keys): each version's schema id and Avro schema.
They are read once, before Spark starts, and then checked as schema files are. Credentials
may ride in the URL (``https://USER:PASSWORD@HOST``): they are sent as basic authentication
and never shown; every message names the URL without them.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from kaudit.connection.redact import register_secret
from kaudit.errors import ConnectionFailure, InputError

#: A registry answers a small request in well under a second; a slow one is waited on at
#: most this (or the run's --timeout, if shorter).
MAX_WAIT_S = 30.0


@dataclass(frozen=True)
class Registry:
    """A registry's base URL, split from the credentials it carries."""

    base: str
    """The URL without its credentials: safe to show."""
    authorization: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, url: str) -> Registry:
        shown = url if "@" not in url else "the URL given"
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port  # a port that is not a number is found here
        except ValueError as exc:  # "Port out of range", "Invalid IPv6 URL"
            raise InputError(f"--schema-registry {shown}: not a URL ({exc})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(f"--schema-registry {shown}: not an http(s) URL")
        authorization = None
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        netloc = host + (f":{port}" if port else "")
        if parts.username is not None:
            register_secret(parts.password)  # masked wherever it could show up
            secret = f"{urllib.parse.unquote(parts.username)}:" \
                     f"{urllib.parse.unquote(parts.password or '')}"
            authorization = "Basic " + base64.b64encode(secret.encode()).decode()
        base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
        return cls(base, authorization)


def subject_schemas(registry: Registry, subject: str, timeout: float) -> dict[int, Any]:
    """Schema id -> Avro schema (parsed JSON) of every version of ``subject``; an empty
    dict when the registry has no such subject."""
    quoted = urllib.parse.quote(subject, safe="")
    versions = _get(registry, f"/subjects/{quoted}/versions", timeout, missing=[])
    out: dict[int, Any] = {}
    for version in versions:
        found = _get(registry, f"/subjects/{quoted}/versions/{int(version)}", timeout)
        kind = found.get("schemaType", "AVRO")
        if kind != "AVRO":
            raise InputError(f"{registry.base}: subject {subject} version {version} is a "
                             f"{kind} schema, not Avro")
        try:
            out[int(found["id"])] = json.loads(found["schema"])
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{registry.base}: subject {subject} version {version}: not a "
                             "schema id and an Avro schema") from None
    return out


def _get(registry: Registry, path: str, timeout: float, missing: Any = None) -> Any:
    """The JSON the registry answers at ``path``; ``missing`` on a 404 when one is given."""
    request = urllib.request.Request(registry.base + path, headers={
        "Accept": "application/vnd.schemaregistry.v1+json, application/json"})
    if registry.authorization:
        request.add_header("Authorization", registry.authorization)
    where = f"schema registry {registry.base}"
    try:
        with urllib.request.urlopen(request, timeout=min(timeout, MAX_WAIT_S)) as answer:
            return json.loads(answer.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        if exc.code == 404 and missing is not None:
            return missing
        if exc.code in (401, 403):
            raise ConnectionFailure(f"{where}: not authorised (HTTP {exc.code})") from None
        raise ConnectionFailure(f"{where}: HTTP {exc.code} for {path}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConnectionFailure(f"{where}: cannot reach it: {reason}") from None
    except ValueError:
        raise ConnectionFailure(f"{where}: the answer for {path} is not JSON") from None
