"""Connection settings handed to Spark's Kafka source in the Java client's spelling."""

from __future__ import annotations

from pathlib import Path

from kaudit.connection.java_options import java_client_options
from kaudit.connection.redact import MASK, redact
from kaudit.connection.settings import ConnectionSettings


def options(**props: str) -> dict[str, str]:
    return java_client_options(ConnectionSettings("h:9093", properties=props))


def test_scram_over_tls_with_a_pem_truststore() -> None:
    got = options(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                     "sasl.username": "alice", "sasl.password": 'p"w\\x',
                     "ssl.ca.location": "/etc/ca.pem"})
    assert got == {
        "bootstrap.servers": "h:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                            'username="alice" password="p\\"w\\\\x";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/etc/ca.pem",
    }


def test_oauthbearer_client_credentials_pass_through() -> None:
    got = options(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
                     "sasl.oauthbearer.method": "oidc",
                     "sasl.oauthbearer.client.id": "kaudit",
                     "sasl.oauthbearer.client.secret": "oidc-secret",
                     "sasl.oauthbearer.scope": "kafka",
                     "sasl.oauthbearer.extensions": "logicalCluster=lkc-1,poolId=pool-2",
                     "sasl.oauthbearer.token.endpoint.url": "https://idp/token"})
    assert got["sasl.mechanism"] == "OAUTHBEARER"
    assert got["sasl.oauthbearer.token.endpoint.url"] == "https://idp/token"
    assert got["sasl.login.callback.handler.class"].endswith(
        "oauthbearer.OAuthBearerLoginCallbackHandler")
    assert got["sasl.jaas.config"] == (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'clientId="kaudit" clientSecret="oidc-secret" scope="kafka" '
        'extension_logicalCluster="lkc-1" extension_poolId="pool-2";')


def test_unsecured_oauthbearer_tokens_go_back_to_the_java_login_module() -> None:
    got = options(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
                     "enable.sasl.oauthbearer.unsecure.jwt": "true",
                     "sasl.oauthbearer.config": "principal=alice"})
    assert got["sasl.jaas.config"] == (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'unsecuredLoginStringClaim_sub="alice";')
    assert "sasl.login.callback.handler.class" not in got


def test_client_certificate_in_one_file_or_two(tmp_path: Path) -> None:
    both = options(**{"security.protocol": "SSL", "ssl.certificate.location": "/c/me.pem",
                      "ssl.key.location": "/c/me.pem", "ssl.key.password": "kp"})
    assert (both["ssl.keystore.type"], both["ssl.keystore.location"],
            both["ssl.key.password"]) == ("PEM", "/c/me.pem", "kp")
    cert, key = tmp_path / "me.crt", tmp_path / "me.key"
    cert.write_text("-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n")
    key.write_text("-----BEGIN PRIVATE KEY-----\nKEYDATA\n-----END PRIVATE KEY-----\n")
    split = options(**{"security.protocol": "SSL", "ssl.certificate.location": str(cert),
                       "ssl.key.location": str(key)})
    assert split["ssl.keystore.certificate.chain"].startswith("-----BEGIN CERTIFICATE")
    assert "KEYDATA" in split["ssl.keystore.key"]
    assert "ssl.keystore.location" not in split
    # The key's text is a secret from now on.
    assert MASK in redact(f"options {split['ssl.keystore.key']}")
