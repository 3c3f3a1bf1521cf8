"""Writer schemas from a Schema Registry's Confluent-compatible REST API (Confluent's own,
or another registry's compatible one, e.g. Apicurio's ``/apis/ccompat/v7``).

The schemas of a topic's values are the versions of its subject, ``TOPIC-value`` by the
default subject naming (``TOPIC-key`` for keys): each version's schema id and Avro schema.
They are read once, before Spark starts, and then checked as schema files are. Credentials
may ride in the URL (:class:`~kaudit.connection.http.Endpoint`): never shown.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from kaudit.connection.http import Endpoint, get_json
from kaudit.errors import InputError

Registry = Endpoint
"""A registry is an :class:`Endpoint`; :func:`registry` reads ``--schema-registry``."""

_ACCEPT = "application/vnd.schemaregistry.v1+json, application/json"


def registry(url: str) -> Registry:
    """The registry ``--schema-registry`` names."""
    return Endpoint.parse(url, "--schema-registry")


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
    return get_json(registry, path, timeout, "schema registry", missing, _ACCEPT)
