"""Client config files: formats, aliases, defaults and their provenance."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaudit.check.clients import load_client_config, parse_client_config
from kaudit.cluster.model import ConfigSource
from kaudit.errors import FileInputError, InputError


def test_properties_values_keep_their_line() -> None:
    client = parse_client_config("# producer\nbootstrap.servers=b:9092\nacks = 1\n",
                                 "p.properties", "producer")
    acks = client.setting("acks")
    assert (acks.value, acks.source, acks.where) == ("1", ConfigSource.CLIENT_CONFIG,
                                                      "p.properties:3")
    assert client.acks == "1" and client.library == "java"


def test_defaults_are_marked_as_defaults() -> None:
    client = parse_client_config("", "p.properties", "producer")
    linger = client.setting("linger.ms")
    assert (linger.value, linger.source, linger.where) == ("5", ConfigSource.CLIENT_DEFAULT,
                                                            "CLIENT_DEFAULT")
    assert client.acks == "all" and client.idempotence.enabled
    assert not client.idempotence.explicit


def test_yaml_file(tmp_path: Path) -> None:
    file = tmp_path / "consumer.yaml"
    file.write_text("group.id: app\nenable.auto.commit: false\nisolation.level: read_committed\n")
    client = load_client_config(file, "consumer")
    assert not client.auto_commit and client.read_committed
    assert client.setting("enable.auto.commit").where == f"{file}:2"


def test_librdkafka_aliases_and_defaults() -> None:
    client = parse_client_config("request.required.acks=-1\nmax.in.flight=3\n", "r.properties",
                                 "producer")
    assert client.library == "librdkafka"
    assert client.acks == "all" and client.max_in_flight == 3
    assert client.setting("max.in.flight.requests.per.connection").spelled == "max.in.flight"
    assert not client.idempotence.enabled
    assert "librdkafka" in client.idempotence.reason


@pytest.mark.parametrize(("props", "enabled", "explicit"), [
    ("", True, False),
    ("acks=1\n", False, False),
    ("retries=0\n", False, False),
    ("max.in.flight.requests.per.connection=6\n", False, False),
    ("enable.idempotence=true\nacks=1\n", True, True),
    ("enable.idempotence=false\n", False, True),
    ("transactional.id=t\n", True, True),
])
def test_idempotence_explicit_or_by_default(props: str, enabled: bool, explicit: bool) -> None:
    state = parse_client_config(props, "p.properties", "producer").idempotence
    assert (state.enabled, state.explicit) == (enabled, explicit)


@pytest.mark.parametrize(("props", "line", "text"), [
    ("acks=2\n", 1, "acks must be one of"),
    ("a=b\nretries=many\n", 2, "retries must be an integer"),
    ("enable.idempotence=maybe\n", 1, "true or false"),
    ("acks=1\nrequest.required.acks=0\n", 2, "sets acks again"),
])
def test_bad_values_name_the_line(props: str, line: int, text: str) -> None:
    with pytest.raises(FileInputError) as err:
        parse_client_config(props, "p.properties", "producer")
    assert err.value.line == line and text in str(err.value)


def test_secrets_are_not_kept() -> None:
    client = parse_client_config("sasl.password=hunter22\nacks=all\n", "p.properties",
                                 "producer")
    assert "sasl.password" not in client.values


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        load_client_config(tmp_path / "nope.properties", "producer")
