"""A REST service kaudit reads JSON from (a Schema Registry, a Kafka Connect worker), by a
URL that may carry credentials (``https://USER:PASSWORD@HOST``): they are sent as basic
authentication and never shown; every message names the URL without them."""

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

#: A REST service answers a small request in well under a second; a slow one is waited on
#: at most this (or the run's --timeout, if shorter).
MAX_WAIT_S = 30.0


@dataclass(frozen=True)
class Endpoint:
    """A service's base URL, split from the credentials it carries."""

    base: str
    """The URL without its credentials: safe to show."""
    authorization: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, url: str, option: str) -> Endpoint:
        """The endpoint ``option`` (e.g. ``--schema-registry``) names; a URL that is not
        one is exit 2, said without its credentials."""
        shown = url if "@" not in url else "the URL given"
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port  # a port that is not a number is found here
        except ValueError as exc:  # "Port out of range", "Invalid IPv6 URL"
            raise InputError(f"{option} {shown}: not a URL ({exc})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(f"{option} {shown}: not an http(s) URL")
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


def get_json(endpoint: Endpoint, path: str, timeout: float, what: str,
             missing: Any = None, accept: str = "application/json") -> Any:
    """The JSON ``endpoint`` answers at ``path``; ``missing`` on a 404 when one is given.
    Anything else that is not JSON is exit 3, as ``what`` (e.g. "schema registry")."""
    request = urllib.request.Request(endpoint.base + path, headers={"Accept": accept})
    if endpoint.authorization:
        request.add_header("Authorization", endpoint.authorization)
    where = f"{what} {endpoint.base}"
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
