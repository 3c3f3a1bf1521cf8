"""Resolve how to reach a cluster from flags, environment and a context.

Precedence, highest first, for each setting:

1. command-line flags (``-b``, ``-F``, ``-X``, ``--timeout``),
2. environment (``KAUDIT_BOOTSTRAP_SERVERS``, ``KAUDIT_COMMAND_CONFIG``),
3. the context (``--context NAME`` or the config file's ``current-context``),
4. ``bootstrap.servers`` inside the command-config file.

Client properties are layered the same way: the context's ``properties``,
then the command-config file, then each ``-X KEY=VALUE``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from kaudit.connection.contexts import MAX_TIMEOUT, load_context
from kaudit.connection.properties import (
    expand_references,
    has_reference,
    read_properties,
    translate_java_properties,
)
from kaudit.connection.redact import is_secret_key, register_secret
from kaudit.errors import InputError

log = logging.getLogger("kaudit")

DEFAULT_TIMEOUT = 10.0
ENV_BOOTSTRAP = "KAUDIT_BOOTSTRAP_SERVERS"
ENV_COMMAND_CONFIG = "KAUDIT_COMMAND_CONFIG"

_HOST_PORT = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[^\s:,\[\]]+):(\d{1,5})$")


@dataclass(frozen=True)
class ConnectionSettings:
    """Everything needed to open a client to one cluster."""

    bootstrap_servers: str
    """Comma-separated HOST:PORT list."""
    properties: dict[str, str] = field(default_factory=dict)
    """librdkafka properties (already translated from Java names)."""
    timeout: float = DEFAULT_TIMEOUT
    """Upper bound, in seconds, for every network wait."""
    origin: str = "flags"
    """Where the bootstrap list came from, for messages (never holds secrets)."""

    @property
    def security_protocol(self) -> str:
        """The security protocol the client will use."""
        return self.properties.get("security.protocol", "PLAINTEXT").upper()


def parse_key_values(items: Sequence[str], option: str) -> dict[str, str]:
    """Parse repeated ``KEY=VALUE`` option values (the value may contain ``=``)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            # Only the key part is echoed: the value may be a secret.
            raise InputError(f"{option} {item.split('=')[0]!r}: expected KEY=VALUE")
        out[key] = value
    return out


def parse_property_flags(items: Sequence[str]) -> dict[str, str]:
    """Parse repeated ``-X KEY=VALUE`` flags, warning about secrets on the command line."""
    out = parse_key_values(items, "-X")
    for key, raw in out.items():
        try:
            out[key] = value = expand_references(raw)
        except InputError as exc:
            raise InputError(f"-X {key}: {exc.message}") from None
        if is_secret_key(key):
            register_secret(value)
            if has_reference(raw):
                continue  # the secret itself is not on the command line
            log.warning("-X %s on the command line is visible in the process list and shell "
                        "history; put it in a --command-config file instead", key)
    return out


def validate_bootstrap(value: str, origin: str) -> str:
    """Check a HOST:PORT[,HOST:PORT...] list and return it normalised."""
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not parts:
        raise InputError(f"bootstrap server from {origin} is empty")
    for part in parts:
        m = _HOST_PORT.match(part)
        if not m or not 0 < int(m.group(2)) < 65536:
            raise InputError(f"bootstrap server {part!r} from {origin} is not HOST:PORT")
    return ",".join(parts)


def resolve_connection(
    *,
    bootstrap_server: str | None = None,
    command_config: str | None = None,
    properties: Sequence[str] = (),
    context: str | None = None,
    timeout: float | None = None,
) -> ConnectionSettings:
    """Combine flags, environment and context into :class:`ConnectionSettings`."""
    ctx = load_context(context)

    config_file = (
        command_config
        or os.environ.get(ENV_COMMAND_CONFIG)
        or (ctx.command_config if ctx else None)
    )
    merged: dict[str, str] = {}
    for key, raw in (ctx.properties if ctx else {}).items():
        try:
            merged[key] = value = expand_references(raw)
        except InputError as exc:
            raise InputError(f"context {ctx.name if ctx else ''} property {key}: "
                             f"{exc.message}") from None
        if is_secret_key(key):
            register_secret(value)
    if config_file:
        merged.update(translate_java_properties(read_properties(config_file)))
    merged.update(parse_property_flags(properties))

    file_bootstrap = merged.pop("bootstrap.servers", None) or merged.pop(
        "metadata.broker.list", None
    )
    candidates = [
        (bootstrap_server, "--bootstrap-server"),
        (os.environ.get(ENV_BOOTSTRAP), ENV_BOOTSTRAP),
        (ctx.bootstrap_server if ctx else None, f"context {ctx.name!r}" if ctx else ""),
        (file_bootstrap, config_file or ""),
    ]
    chosen = next(((v, o) for v, o in candidates if v), None)
    if chosen is None:
        raise InputError(
            "no bootstrap server given",
            hint=f"pass -b HOST:PORT, set {ENV_BOOTSTRAP}, use --context, "
            'or run `eval "$(kaudit lab env)"` for the local lab',
        )
    value, origin = chosen
    _check_sasl(merged)
    if timeout is None:
        timeout = ctx.timeout if ctx and ctx.timeout else DEFAULT_TIMEOUT
    if not 0 < timeout <= MAX_TIMEOUT:
        raise InputError(f"--timeout must be greater than 0 and at most {MAX_TIMEOUT:g} "
                         "seconds (one day)")
    return ConnectionSettings(
        bootstrap_servers=validate_bootstrap(value, origin),
        properties=merged,
        timeout=float(timeout),
        origin=origin,
    )


def _check_sasl(props: dict[str, str]) -> None:
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol.startswith("SASL") and not (
        props.get("sasl.mechanism") or props.get("sasl.mechanisms")
    ):
        # librdkafka would quietly fall back to GSSAPI (Kerberos).
        raise InputError(
            f"security.protocol={protocol} needs sasl.mechanism "
            "(PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)"
        )
