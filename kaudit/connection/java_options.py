"""Connection settings as the Java client spells them: Spark's Kafka source (and any other
JVM client kaudit starts) connects with the same security settings as librdkafka's."""

from __future__ import annotations

from pathlib import Path

from kaudit.connection.properties import unsecured_principal
from kaudit.connection.redact import register_secret
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import unreadable

_OAUTH_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"


def _jaas_value(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def java_client_options(conn: ConnectionSettings) -> dict[str, str]:
    """librdkafka settings as the Java client (Spark's Kafka source) spells them."""
    props = conn.properties
    out: dict[str, str] = {"bootstrap.servers": conn.bootstrap_servers}
    for key in ("security.protocol", "ssl.endpoint.identification.algorithm",
                "client.id", "request.timeout.ms", "ssl.key.password",
                "sasl.oauthbearer.token.endpoint.url"):
        if key in props:
            value = props[key]
            out[key] = "" if key.startswith("ssl.endpoint") and value == "none" else value
    mechanism = (props.get("sasl.mechanism") or props.get("sasl.mechanisms") or "").upper()
    if mechanism:
        out["sasl.mechanism"] = mechanism
    if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") and "sasl.username" in props:
        module = ("org.apache.kafka.common.security.plain.PlainLoginModule"
                  if mechanism == "PLAIN"
                  else "org.apache.kafka.common.security.scram.ScramLoginModule")
        out["sasl.jaas.config"] = (
            f"{module} required username={_jaas_value(props['sasl.username'])} "
            f"password={_jaas_value(props.get('sasl.password', ''))};")
    elif mechanism == "OAUTHBEARER" and unsecured_principal(props):
        # Unsecured test tokens, as librdkafka's sasl.oauthbearer.config names their subject.
        principal = unsecured_principal(props)
        out["sasl.jaas.config"] = ("org.apache.kafka.common.security.oauthbearer."
                                   "OAuthBearerLoginModule required "
                                   f"unsecuredLoginStringClaim_sub={_jaas_value(principal)};")
    elif mechanism == "OAUTHBEARER":
        # OIDC client credentials: the Java client fetches tokens with its own handler.
        options = [f"{java}={_jaas_value(props[rd])}" for rd, java in (
            ("sasl.oauthbearer.client.id", "clientId"),
            ("sasl.oauthbearer.client.secret", "clientSecret"),
            ("sasl.oauthbearer.scope", "scope")) if rd in props]
        for pair in props.get("sasl.oauthbearer.extensions", "").split(","):
            name, sep, value = pair.partition("=")
            if sep:
                options.append(f"extension_{name.strip()}={_jaas_value(value.strip())}")
        out["sasl.jaas.config"] = ("org.apache.kafka.common.security.oauthbearer."
                                   "OAuthBearerLoginModule required "
                                   + " ".join(options) + ";")
        if "sasl.oauthbearer.token.endpoint.url" in props:
            out["sasl.login.callback.handler.class"] = _OAUTH_HANDLER
    if "ssl.ca.location" in props:
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.location"] = props["ssl.ca.location"]
    cert_file = props.get("ssl.certificate.location")
    key_file = props.get("ssl.key.location")
    if cert_file and key_file:
        out["ssl.keystore.type"] = "PEM"
        if cert_file == key_file:
            out["ssl.keystore.location"] = cert_file
        else:
            # The Java client wants key and chain in one PEM store: pass both inline.
            out["ssl.keystore.key"] = _read_pem(key_file)
            out["ssl.keystore.certificate.chain"] = _read_pem(cert_file)
            register_secret(out["ssl.keystore.key"])
    return out


def _read_pem(path: str) -> str:
    try:
        return Path(path).expanduser().read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc, "ASCII (PEM)") from None
