"""The kafka-python side: feature levels as Kafka's tool prints them, and the connection
settings translated (the reads themselves are proven on the lab: tests/integration)."""

from __future__ import annotations

import json
import threading
import typing
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from kaudit.cluster.protocol import METADATA_VERSIONS, feature_levels
from kaudit.cluster.protocol_config import fetch_token, kafka_python_config
from kaudit.connect.settings import ConnectionSettings
from kaudit.errors import InputError


def _config(**props: str) -> dict[str, Any]:
    return kafka_python_config(ConnectionSettings("127.0.0.1:9092", properties=props))


def test_levels_name_metadata_version_and_list_unfinalized_features_at_0() -> None:
    levels = feature_levels([("metadata.version", 30), ("transaction.version", 2)],
                            ["metadata.version", "transaction.version", "kraft.version"])
    assert levels == {"metadata.version": "4.3-IV0", "transaction.version": "2",
                      "kraft.version": "0"}


def test_a_metadata_version_newer_than_kaudit_is_said_as_a_level() -> None:
    top = max(METADATA_VERSIONS)
    assert feature_levels([("metadata.version", top + 1)], []) == {
        "metadata.version": f"level {top + 1}"}


def test_metadata_versions_run_without_gaps_in_release_order() -> None:
    names = [METADATA_VERSIONS[level] for level in sorted(METADATA_VERSIONS)]
    assert sorted(METADATA_VERSIONS) == list(range(1, len(names) + 1))
    assert names == sorted(names, key=lambda n: [int(x) for x in
                                                 n.replace("-IV", ".").split(".")])


def test_plaintext_needs_nothing_but_a_client_id() -> None:
    assert _config() == {"security_protocol": "PLAINTEXT", "client_id": "kaudit"}


def test_scram_over_tls_carries_user_ca_and_hostname_check() -> None:
    config = _config(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "scram-sha-512",
                        "sasl.username": "alice", "sasl.password": "pw",
                        "ssl.ca.location": "/ca.pem",
                        "ssl.endpoint.identification.algorithm": "none"})
    assert config == {"security_protocol": "SASL_SSL", "client_id": "kaudit",
                      "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "alice",
                      "sasl_plain_password": "pw", "ssl_check_hostname": False,
                      "ssl_cafile": "/ca.pem"}


def test_mtls_passes_the_client_certificate_and_key() -> None:
    config = _config(**{"security.protocol": "SSL", "ssl.ca.location": "/ca.pem",
                        "ssl.certificate.location": "/me.pem", "ssl.key.location": "/me.key",
                        "ssl.key.password": "kp"})
    assert config["ssl_certfile"] == "/me.pem" and config["ssl_keyfile"] == "/me.key"
    assert config["ssl_password"] == "kp" and config["ssl_check_hostname"] is True


@pytest.mark.parametrize("props,said", [
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, "GSSAPI"),
    ({"security.protocol": "SASL_SSL"}, "(none)"),
    ({"security.protocol": "CARRIER_PIGEON"}, "CARRIER_PIGEON"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, "token.endpoint"),
])
def test_what_kafka_python_cannot_speak_is_one_input_error(props: dict[str, str],
                                                           said: str) -> None:
    with pytest.raises(InputError, match=said.replace("(", r"\(").replace(")", r"\)")):
        _config(**props)


class _TokenEndpoint(BaseHTTPRequestHandler):
    seen: typing.ClassVar[list[tuple[str, str]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        self.seen.append((self.headers["Authorization"], body))
        payload = json.dumps({"access_token": "tok-123", "expires_in": 300}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture()
def endpoint() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _TokenEndpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/token"
    server.shutdown()


def test_oauthbearer_fetches_a_client_credentials_token_once(endpoint: str) -> None:
    _TokenEndpoint.seen.clear()
    config = _config(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
                        "sasl.oauthbearer.token.endpoint.url": endpoint,
                        "sasl.oauthbearer.client.id": "kaudit",
                        "sasl.oauthbearer.client.secret": "s3cret",
                        "sasl.oauthbearer.scope": "kafka",
                        "sasl.oauthbearer.extensions": "logicalCluster=lkc-1"})
    provider = config["sasl_oauth_token_provider"]
    assert provider.token() == "tok-123" and provider.token() == "tok-123"
    assert provider.extensions() == {"logicalCluster": "lkc-1"}
    assert len(_TokenEndpoint.seen) == 1  # reused until a minute before it expires
    auth, body = _TokenEndpoint.seen[0]
    assert auth == "Basic a2F1ZGl0OnMzY3JldA==" and "grant_type=client_credentials" in body


def test_a_token_endpoint_that_is_not_there_is_a_connection_error() -> None:
    with pytest.raises(ConnectionError, match="token endpoint"):
        fetch_token("http://127.0.0.1:9/token", "id", "secret", None, timeout=2)
