"""kaudit's connection settings (librdkafka's names) as kafka-python's client options.

PLAIN, SCRAM-SHA-256/512, TLS with or without a client certificate, and OAUTHBEARER with
OIDC client credentials (the token fetched here from the token endpoint, as librdkafka's
``sasl.oauthbearer.method=oidc`` does). Anything else is refused by name rather than
connected without it.
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from kaudit.connection.properties import unsecured_principal
from kaudit.connection.redact import register_secret
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import InputError

_SASL = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def kafka_python_config(settings: ConnectionSettings) -> dict[str, Any]:
    """The options every kafka-python client of ``settings`` is created with."""
    props = settings.properties
    protocol = settings.security_protocol
    if protocol not in _PROTOCOLS:
        raise InputError(f"security.protocol={protocol} is not one of {', '.join(_PROTOCOLS)}")
    out: dict[str, Any] = {"security_protocol": protocol,
                           "client_id": props.get("client.id", "kaudit")}
    if protocol.startswith("SASL"):
        out.update(_sasl_options(props))
    if protocol.endswith("SSL"):
        out.update(_tls_options(props))
    return out


def _sasl_options(props: dict[str, str]) -> dict[str, Any]:
    mechanism = (props.get("sasl.mechanism") or props.get("sasl.mechanisms") or "").upper()
    if mechanism not in _SASL:
        raise InputError(f"sasl.mechanism={mechanism or '(none)'}: kaudit speaks "
                         f"{', '.join(_SASL)}")
    out: dict[str, Any] = {"sasl_mechanism": mechanism}
    if mechanism == "OAUTHBEARER":
        principal = unsecured_principal(props)
        out["sasl_oauth_token_provider"] = (unsecured_token_provider(principal) if principal
                                            else oidc_token_provider(props))
    else:
        out["sasl_plain_username"] = props.get("sasl.username", "")
        out["sasl_plain_password"] = props.get("sasl.password", "")
    return out


def _tls_options(props: dict[str, str]) -> dict[str, Any]:
    """One SSLContext from the CA, the client certificate and key (files or PEM text)."""
    context = ssl.create_default_context(
        cafile=props.get("ssl.ca.location") or None, cadata=props.get("ssl.ca.pem") or None)
    context.check_hostname = \
        props.get("ssl.endpoint.identification.algorithm", "https").lower() != "none"
    password = props.get("ssl.key.password") or None
    cert, key = props.get("ssl.certificate.location"), props.get("ssl.key.location")
    if cert or key:
        context.load_cert_chain(cert or key or "", key or None, password)
    elif props.get("ssl.certificate.pem") and props.get("ssl.key.pem"):
        # Python loads a chain only from files: written to a private file, read at once and
        # removed before anything else runs.
        with tempfile.TemporaryDirectory(prefix="kaudit-tls-") as private:
            chain = Path(private, "chain.pem")
            chain.touch(mode=0o600)
            chain.write_text(props["ssl.key.pem"] + "\n" + props["ssl.certificate.pem"],
                             encoding="ascii")
            context.load_cert_chain(str(chain), None, password)
    return {"ssl_context": context}


def unsecured_token_provider(principal: str) -> Any:
    """Unsigned JWTs naming ``principal`` (Kafka's unsecured tokens, for test clusters)."""
    from kafka.net.sasl.oauth import AbstractTokenProvider

    def part(doc: dict[str, Any]) -> str:
        raw = json.dumps(doc, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    class UnsecuredTokens(AbstractTokenProvider):  # type: ignore[misc]
        def token(self) -> str:
            now = int(time.time())
            return (f"{part({'alg': 'none'})}."
                    f"{part({'sub': principal, 'iat': now, 'exp': now + 3600})}.")

    return UnsecuredTokens()


def oidc_token_provider(props: dict[str, str]) -> Any:
    """A kafka-python token provider fetching OIDC client-credentials tokens."""
    from kafka.net.sasl.oauth import AbstractTokenProvider

    endpoint = props.get("sasl.oauthbearer.token.endpoint.url", "")
    client_id = props.get("sasl.oauthbearer.client.id", "")
    if not endpoint or not client_id:
        raise InputError("OAUTHBEARER needs sasl.oauthbearer.token.endpoint.url and "
                         "sasl.oauthbearer.client.id (OIDC client credentials)")
    secret = props.get("sasl.oauthbearer.client.secret", "")
    extensions = dict(pair.strip().split("=", 1) for pair in
                      props.get("sasl.oauthbearer.extensions", "").split(",") if "=" in pair)

    class OidcTokens(AbstractTokenProvider):  # type: ignore[misc]
        """Client-credentials tokens, reused until a minute before they expire."""

        def __init__(self) -> None:
            self._lock = threading.Lock()
            self._token, self._until = "", 0.0

        def token(self) -> str:
            with self._lock:
                if time.monotonic() >= self._until:
                    self._token, lifetime = fetch_token(
                        endpoint, client_id, secret, props.get("sasl.oauthbearer.scope"))
                    self._until = time.monotonic() + max(0.0, lifetime - 60)
                return self._token

        def extensions(self) -> dict[str, str]:
            return extensions

    return OidcTokens()


def fetch_token(endpoint: str, client_id: str, secret: str, scope: str | None,
                timeout: float = 15) -> tuple[str, float]:
    """POST a client-credentials grant (RFC 6749 4.4); the access token and its lifetime."""
    form = {"grant_type": "client_credentials", **({"scope": scope} if scope else {})}
    basic = base64.b64encode(f"{urllib.parse.quote(client_id)}:"
                             f"{urllib.parse.quote(secret)}".encode()).decode()
    request = urllib.request.Request(
        endpoint, data=urllib.parse.urlencode(form).encode(), method="POST",
        headers={"Authorization": f"Basic {basic}",
                 "Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            body = json.loads(answer.read().decode())
    except (OSError, ValueError) as exc:
        raise ConnectionError(f"the OAUTHBEARER token endpoint refused or failed: "
                              f"{exc.__class__.__name__}") from None
    token = str(body.get("access_token", ""))
    if not token:
        raise ConnectionError("the OAUTHBEARER token endpoint answered without access_token")
    register_secret(token)
    return token, float(body.get("expires_in", 3600))
