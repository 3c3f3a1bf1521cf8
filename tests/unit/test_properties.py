"""Java properties parsing and translation to librdkafka settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaudit.connection.properties import (
    parse_properties,
    read_properties,
    translate_java_properties,
)
from kaudit.errors import FileInputError


def translate(text: str) -> dict[str, str]:
    return translate_java_properties(parse_properties(text, "client.properties"))


def test_parses_separators_comments_continuations_and_escapes() -> None:
    text = (
        "# comment\n"
        "! also a comment\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "   d=spaced value  \n"
        "long=first,\\\n"
        "     second\n"
        "esc=tab\\there\\u0041\n"
        "key\\=with\\=equals=v\n"
    )
    props = parse_properties(text, "f")
    assert props.values == {"a": "1", "b": "2", "c": "3", "d": "spaced value  ",
                            "long": "first,second", "esc": "tab\there" + "A",
                            "key=with=equals": "v"}
    assert props.line_of("a") == 3
    assert props.line_of("long") == 7
    assert props.line_of("esc") == 9


def test_plain_jaas_becomes_username_and_password() -> None:
    out = translate(
        "security.protocol=SASL_SSL\n"
        'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="alice" password="s3cr3t-pw";\n')
    assert out == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                   "sasl.username": "alice", "sasl.password": "s3cr3t-pw"}


def test_scram_jaas_keeps_the_mechanism_given() -> None:
    out = translate(
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        "username=bob password=pw123;\n")
    assert out["sasl.mechanism"] == "SCRAM-SHA-512"
    assert (out["sasl.username"], out["sasl.password"]) == ("bob", "pw123")


def test_scram_without_mechanism_is_rejected_with_line() -> None:
    with pytest.raises(FileInputError) as err:
        translate("x=1\nsasl.jaas.config=org.apache.kafka.common.security.scram."
                  'ScramLoginModule required username="u" password="p";\n')
    assert err.value.line == 2
    assert "SCRAM-SHA-256 or SCRAM-SHA-512" in str(err.value)


def test_jks_truststore_is_rejected_naming_the_librdkafka_key() -> None:
    with pytest.raises(FileInputError) as err:
        translate("security.protocol=SSL\nssl.truststore.location=/etc/kafka/trust.jks\n"
                  "ssl.truststore.password=changeit\n")
    assert err.value.line == 2
    assert "ssl.ca.location" in str(err.value)
    assert "changeit" not in str(err.value)


def test_jks_keystore_is_rejected_naming_pem_keys() -> None:
    with pytest.raises(FileInputError) as err:
        translate("ssl.keystore.location=/etc/kafka/client.keystore\n")
    assert "ssl.certificate.location" in str(err.value)


def test_pem_stores_translate() -> None:
    out = translate("ssl.truststore.type=PEM\nssl.truststore.location=/ca.pem\n"
                    "ssl.keystore.type=PEM\nssl.keystore.location=/client.pem\n"
                    "ssl.keystore.password=kpw\n")
    assert out == {"ssl.ca.location": "/ca.pem", "ssl.certificate.location": "/client.pem",
                   "ssl.key.location": "/client.pem", "ssl.key.password": "kpw"}


def test_pkcs12_keystore_passes_through() -> None:
    out = translate("ssl.keystore.location=/client.p12\nssl.keystore.password=pw\n")
    assert out == {"ssl.keystore.location": "/client.p12", "ssl.keystore.password": "pw"}


def test_empty_endpoint_identification_means_none() -> None:
    assert translate("ssl.endpoint.identification.algorithm=\n") == {
        "ssl.endpoint.identification.algorithm": "none"}


def test_serializers_are_dropped_and_java_classes_rejected() -> None:
    assert translate("key.serializer=org.apache.kafka.common.serialization.StringSerializer\n"
                     "acks=all\n") == {"acks": "all"}
    with pytest.raises(FileInputError, match="Java class"):
        translate("sasl.login.callback.handler.class=com.example.Handler\n")


def test_oauthbearer_options_map_to_oidc() -> None:
    out = translate(
        "sasl.mechanism=OAUTHBEARER\n"
        "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
        'required clientId="kaudit" clientSecret="oauth-secret" scope="kafka";\n')
    assert out["sasl.oauthbearer.client.id"] == "kaudit"
    assert out["sasl.oauthbearer.client.secret"] == "oauth-secret"
    assert out["sasl.oauthbearer.method"] == "oidc"


def test_unsecured_oauthbearer_tokens_become_librdkafkas_own() -> None:
    out = translate(
        "sasl.mechanism=OAUTHBEARER\n"
        "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
        'required unsecuredLoginStringClaim_sub="alice";\n')
    assert out["enable.sasl.oauthbearer.unsecure.jwt"] == "true"
    assert out["sasl.oauthbearer.config"] == "principal=alice"
    assert "sasl.oauthbearer.method" not in out


def test_unknown_login_module_is_rejected() -> None:
    with pytest.raises(FileInputError, match="Krb5LoginModule"):
        translate("sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required "
                  "useKeyTab=true;\n")


def test_references_to_env_and_files_are_expanded_and_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kaudit.connection.redact import MASK, redact

    monkeypatch.setenv("KAFKA_PW", "s3cret-from-env")
    vault = tmp_path / "vault.properties"
    vault.write_text("alice.password=s3cret-from-file\n")
    cfg = tmp_path / "client.properties"
    cfg.write_text(
        "config.providers=env,file\n"
        "config.providers.env.class=org.apache.kafka.common.config.provider."
        "EnvVarConfigProvider\n"
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="alice" password="${env:KAFKA_PW}";\n'
        f"ssl.key.password=${{file:{vault}:alice.password}}\n")
    conf = translate_java_properties(read_properties(cfg))
    assert conf["sasl.password"] == "s3cret-from-env"
    assert conf["ssl.key.password"] == "s3cret-from-file"
    assert not any(k.startswith("config.providers") for k in conf)
    assert redact("pw s3cret-from-env and s3cret-from-file") == f"pw {MASK} and {MASK}"


def test_a_missing_reference_names_the_file_line_not_a_value(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_PW", raising=False)
    cfg = tmp_path / "client.properties"
    cfg.write_text("security.protocol=SSL\nssl.key.password=${env:NO_SUCH_PW}\n")
    with pytest.raises(FileInputError) as err:
        read_properties(cfg)
    assert err.value.line == 2 and "NO_SUCH_PW is not set" in str(err.value)
    with pytest.raises(FileInputError, match="has no key"):
        expand_references_in(tmp_path)


def expand_references_in(tmp_path: Path) -> None:
    vault = tmp_path / "v.properties"
    vault.write_text("a=b\n")
    cfg = tmp_path / "c.properties"
    cfg.write_text(f"sasl.password=${{file:{vault}:missing}}\n")
    read_properties(cfg)


def test_a_file_that_is_not_utf8_is_one_error_with_its_line(tmp_path: Path) -> None:
    # Latin-1 is what a Windows editor may save; it was "cannot read: UnicodeDecodeError".
    props = tmp_path / "client.properties"
    props.write_bytes(b"bootstrap.servers=h:1\nsasl.username=j\xf6rg\n")
    with pytest.raises(FileInputError, match=r"client\.properties:2: not UTF-8 text "
                                             r"\(byte 0xf6\)$"):
        read_properties(props)
