"""The secured lab's generated material: certificates, passwords, client properties."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from kaudit.connection.properties import read_properties, translate_java_properties
from kaudit.errors import InputError
from kaudit.lab import security as sec
from kaudit.lab.state import LabState


@pytest.fixture(scope="module")
def sasl(tmp_path_factory: pytest.TempPathFactory) -> sec.Material:
    return sec.generate(tmp_path_factory.mktemp("sasl"), sec.Security.sasl_ssl)


@pytest.fixture(scope="module")
def mtls(tmp_path_factory: pytest.TempPathFactory) -> sec.Material:
    return sec.generate(tmp_path_factory.mktemp("mtls"), sec.Security.mtls)


def _verify(m: sec.Material, name: str) -> str:
    return subprocess.run(["openssl", "verify", "-CAfile", str(m.ca), str(m.keystore(name))],
                          capture_output=True, text=True, check=False).stdout


def test_certificates_chain_to_the_lab_ca(sasl: sec.Material) -> None:
    for name in (sec.BROKER_PRINCIPAL, *sec.USERS):
        assert ": OK" in _verify(sasl, name), name
    text = subprocess.run(["openssl", "x509", "-noout", "-text", "-in",
                           str(sasl.keystore(sec.BROKER_PRINCIPAL))],
                          capture_output=True, text=True, check=True).stdout
    assert "DNS:localhost" in text and "IP Address:127.0.0.1" in text
    # Kafka reads PEM keys only in PKCS#8.
    assert "BEGIN PRIVATE KEY" in sasl.keystore("alice").read_text()


def test_secrets_are_private_and_left_over_files_removed(sasl: sec.Material) -> None:
    for path in sasl.directory.iterdir():
        mode = stat.S_IMODE(path.stat().st_mode)
        if path.name in ("ca.pem", "ca.srl"):
            continue
        assert mode == 0o600, (path.name, oct(mode))
    assert not list(sasl.directory.glob("*.csr"))
    assert [p.name for p in sasl.directory.glob("*.key")] == ["ca.key"]
    assert set(sasl.passwords()) == set(sec.USERS)
    assert len(set(sasl.passwords().values())) == len(sec.USERS)


def test_sasl_client_properties_translate_for_librdkafka(sasl: sec.Material) -> None:
    conf = translate_java_properties(read_properties(sasl.client_properties("alice")))
    assert conf == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": sasl.passwords()["alice"],
        "ssl.ca.location": str(sasl.ca),
    }


def test_mtls_client_properties_use_the_users_certificate(mtls: sec.Material) -> None:
    conf = translate_java_properties(read_properties(mtls.client_properties("nobody")))
    assert conf == {
        "security.protocol": "SSL",
        "ssl.certificate.location": str(mtls.keystore("nobody")),
        "ssl.key.location": str(mtls.keystore("nobody")),
        "ssl.ca.location": str(mtls.ca),
    }


def test_broker_settings_by_mode(sasl: sec.Material, mtls: sec.Material) -> None:
    scram = sec.broker_properties(sasl, sec.Security.sasl_ssl)
    assert scram["listener.security.protocol.map"] == "CONTROLLER:SSL,CLIENT:SASL_SSL"
    assert scram["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    assert f'user_alice="{sasl.passwords()["alice"]}"' in scram[
        "listener.name.client.plain.sasl.jaas.config"]
    assert scram["super.users"] == "User:admin;User:kaudit-broker"
    cert = sec.broker_properties(mtls, sec.Security.mtls)
    assert cert["listener.name.client.ssl.client.auth"] == "required"
    assert "sasl.enabled.mechanisms" not in cert
    assert sec.controller_properties(mtls)["ssl.client.auth"] == "required"
    assert sec.format_arguments(mtls, sec.Security.mtls) == []
    args = sec.format_arguments(sasl, sec.Security.sasl_ssl)
    assert len(args) == 3 and all(a.startswith("--add-scram=SCRAM-SHA-512=[name=")
                                  for a in args)


def test_plaintext_has_no_material(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        sec.generate(tmp_path, sec.Security.plaintext)
    state = LabState(state_dir=str(tmp_path), cluster_id="x", kafka_version="4.3.1")
    assert state.client_properties is None
    secured = LabState(state_dir=str(tmp_path), cluster_id="x", kafka_version="4.3.1",
                       security="sasl_ssl")
    assert secured.client_properties == tmp_path / "security" / "client.properties"
    assert secured.client_properties_for("admin") == tmp_path / "security" / "admin.properties"
