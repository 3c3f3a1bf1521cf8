"""The kafka-python side: feature levels as Kafka's tool prints them, the connection
settings translated, and OffsetForLeaderEpoch's request and answers on the wire (the reads
themselves are proven on the lab: tests/integration)."""

from __future__ import annotations

import base64
import json
import subprocess
import threading
import typing
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from kaudit.cluster.protocol import (
    METADATA_VERSIONS,
    EpochEnd,
    epoch_answers,
    epoch_request,
    feature_levels,
    read_epoch_ends,
)
from kaudit.cluster.protocol_config import fetch_token, kafka_python_config
from kaudit.connection.settings import ConnectionSettings
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


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA and a client certificate signed by it, as the lab makes them (openssl)."""
    d = tmp_path_factory.mktemp("pki")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
            "ca.pem", "-days", "2", "-subj", "/CN=test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "me.key", "-out", "me.csr",
            "-subj", "/CN=alice")
    openssl("x509", "-req", "-in", "me.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-out", "me.pem")
    return d


def test_scram_over_tls_carries_user_ca_and_hostname_check(pki: Path) -> None:
    config = _config(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "scram-sha-512",
                        "sasl.username": "alice", "sasl.password": "pw",
                        "ssl.ca.location": str(pki / "ca.pem"),
                        "ssl.endpoint.identification.algorithm": "none"})
    context = config.pop("ssl_context")
    assert config == {"security_protocol": "SASL_SSL", "client_id": "kaudit",
                      "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "alice",
                      "sasl_plain_password": "pw"}
    assert context.check_hostname is False
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "test CA"),),)]


def test_mtls_loads_the_client_certificate_from_files_or_pem_text(pki: Path) -> None:
    files = _config(**{"security.protocol": "SSL", "ssl.ca.location": str(pki / "ca.pem"),
                       "ssl.certificate.location": str(pki / "me.pem"),
                       "ssl.key.location": str(pki / "me.key")})
    assert files["ssl_context"].check_hostname is True
    text = _config(**{"security.protocol": "SSL",
                      "ssl.ca.pem": (pki / "ca.pem").read_text(),
                      "ssl.certificate.pem": (pki / "me.pem").read_text(),
                      "ssl.key.pem": (pki / "me.key").read_text()})
    assert len(text["ssl_context"].get_ca_certs()) == 1


def test_a_wrong_key_is_an_os_error_not_a_hang(pki: Path) -> None:
    with pytest.raises(OSError):
        _config(**{"security.protocol": "SSL", "ssl.ca.location": str(pki / "ca.pem"),
                   "ssl.certificate.location": str(pki / "me.pem"),
                   "ssl.key.location": str(pki / "ca.key")})


def test_unsecured_oauthbearer_tokens_name_their_principal_unsigned() -> None:
    config = _config(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
                        "enable.sasl.oauthbearer.unsecure.jwt": "true",
                        "sasl.oauthbearer.config": "principal=alice"})
    header, payload, signature = config["sasl_oauth_token_provider"].token().split(".")
    decoded = [json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
               for p in (header, payload)]
    assert decoded[0] == {"alg": "none"} and decoded[1]["sub"] == "alice"
    assert decoded[1]["exp"] > decoded[1]["iat"] and signature == ""


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


# --- OffsetForLeaderEpoch -----------------------------------------------------------------


@pytest.mark.parametrize("version", [2, 3, 4])
def test_the_epoch_request_asks_as_a_consumer_unfenced_grouped_by_topic(version: int) -> None:
    from kafka.protocol.consumer import OffsetForLeaderEpochRequest

    request = epoch_request({("b", 1): 7, ("a", 0): 3, ("b", 0): 5})
    decoded = OffsetForLeaderEpochRequest.decode(request.encode(version=version),
                                                 version=version)
    assert [(t.topic, [(p.partition, p.current_leader_epoch, p.leader_epoch)
                       for p in t.partitions]) for t in decoded.topics] == [
        ("a", [(0, -1, 3)]), ("b", [(0, -1, 5), (1, -1, 7)])]
    if version >= 3:  # the field exists from v3 on
        assert decoded.replica_id == -1


@pytest.mark.parametrize("version", [2, 4])
def test_each_answer_is_an_epoch_end_or_what_the_leader_said(version: int) -> None:
    from kafka.protocol.consumer import OffsetForLeaderEpochResponse

    Topic = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
    End = Topic.EpochEndOffset
    response = OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=[Topic(
        topic="t", partitions=[
            End(error_code=0, partition=0, leader_epoch=3, end_offset=4711),
            End(error_code=0, partition=1, leader_epoch=2, end_offset=90),
            End(error_code=6, partition=2, leader_epoch=-1, end_offset=-1),
            End(error_code=0, partition=3, leader_epoch=-1, end_offset=-1),
            End(error_code=0, partition=9, leader_epoch=1, end_offset=1)])])
    wire = OffsetForLeaderEpochResponse.decode(response.encode(version=version),
                                               version=version)
    wanted = {("t", 0): 3, ("t", 1): 4, ("t", 2): 3, ("t", 3): 3, ("t", 4): 3}
    assert epoch_answers(wire, 2, wanted) == {
        ("t", 0): EpochEnd(leader=2, asked=3, epoch=3, end_offset=4711),
        ("t", 1): EpochEnd(leader=2, asked=4, epoch=2, end_offset=90),
        ("t", 2): "broker 2 answered NOT_LEADER_FOR_PARTITION",
        ("t", 3): "broker 2 knows no leader epoch up to 3",
        ("t", 4): "broker 2 did not answer for it"}


def test_epoch_ends_not_read_come_back_with_why_within_the_deadline() -> None:
    import time

    from kaudit.waiting import Deadline
    from tests.silent_broker import silent_broker

    with silent_broker() as broker:
        port = broker.port
        started = time.monotonic()
        said = read_epoch_ends(ConnectionSettings(f"127.0.0.1:{port}"), {1: broker},
                               {("t", 0): (1, 3), ("t", 1): (2, 3)}, Deadline(1.0))
        assert time.monotonic() - started < 5
    assert said == {("t", 0): f"broker 1 (127.0.0.1:{port}) gave no answer within 1s",
                    ("t", 1): "its leader, broker 2, is not registered"}
    bad = read_epoch_ends(ConnectionSettings("h:1", properties={
        "security.protocol": "CARRIER_PIGEON"}), {}, {("t", 0): (1, 3)}, Deadline(1.0))
    assert "CARRIER_PIGEON" in str(bad[("t", 0)])
