"""Connection settings: precedence flags > env > context > file, and input errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaudit.connection.settings import resolve_connection
from kaudit.errors import FileInputError, InputError


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_flag_beats_env_beats_context_beats_file(isolated_config: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    props = write(tmp_path / "c.properties", "bootstrap.servers=file:1\nclient.id=from-file\n")
    isolated_config.write_text(
        "current-context: lab\ncontexts:\n  lab:\n    bootstrap-server: ctx:1\n"
        f"    command-config: {props}\n    properties:\n      client.id: from-ctx\n"
        "      socket.keepalive.enable: 'true'\n    timeout: 7\n")
    s = resolve_connection()
    assert (s.bootstrap_servers, s.timeout) == ("ctx:1", 7.0)
    # the file overrides the context's properties, and -X overrides both
    assert s.properties["client.id"] == "from-file"
    assert s.properties["socket.keepalive.enable"] == "true"
    monkeypatch.setenv("KAUDIT_BOOTSTRAP_SERVERS", "env:1")
    assert resolve_connection().bootstrap_servers == "env:1"
    s = resolve_connection(bootstrap_server="flag:1", properties=["client.id=from-x"],
                           timeout=2)
    assert (s.bootstrap_servers, s.properties["client.id"], s.timeout) == (
        "flag:1", "from-x", 2.0)


def test_bootstrap_from_command_config_file_when_nothing_else(isolated_config: Path,
                                                              tmp_path: Path) -> None:
    props = write(tmp_path / "c.properties", "bootstrap.servers=a:9092, b:9092\n")
    assert resolve_connection(command_config=props).bootstrap_servers == "a:9092,b:9092"


def test_env_command_config_is_used(isolated_config: Path, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    props = write(tmp_path / "c.properties", "acks=all\n")
    monkeypatch.setenv("KAUDIT_COMMAND_CONFIG", props)
    assert resolve_connection(bootstrap_server="h:1").properties == {"acks": "all"}


def test_no_bootstrap_says_how_to_give_one(isolated_config: Path) -> None:
    with pytest.raises(InputError, match="no bootstrap server") as err:
        resolve_connection()
    assert "-b" in str(err.value) and "kaudit lab env" in str(err.value)


@pytest.mark.parametrize("bad", ["localhost", "host:0", "host:99999", "a:1,,b", ":9092"])
def test_bad_bootstrap_is_an_input_error(isolated_config: Path, bad: str) -> None:
    if bad == "a:1,,b":
        with pytest.raises(InputError, match="'b'"):
            resolve_connection(bootstrap_server=bad)
        return
    with pytest.raises(InputError, match="HOST:PORT"):
        resolve_connection(bootstrap_server=bad)


def test_sasl_without_mechanism_is_refused(isolated_config: Path) -> None:
    with pytest.raises(InputError, match=r"needs sasl\.mechanism"):
        resolve_connection(bootstrap_server="h:1", properties=["security.protocol=SASL_SSL"])


def test_bad_property_flag(isolated_config: Path) -> None:
    with pytest.raises(InputError, match="KEY=VALUE"):
        resolve_connection(bootstrap_server="h:1", properties=["acks"])


def test_password_on_command_line_warns(isolated_config: Path,
                                        caplog: pytest.LogCaptureFixture) -> None:
    import logging

    logger = logging.getLogger("kaudit")
    logger.propagate = True
    try:
        with caplog.at_level(logging.WARNING, logger="kaudit"):
            resolve_connection(bootstrap_server="h:1", properties=["sasl.password=pw-on-cli"])
    finally:
        logger.propagate = False
    assert "visible in the process list" in caplog.text
    assert "pw-on-cli" not in caplog.text


def test_password_from_env_on_command_line_does_not_warn(
        isolated_config: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    monkeypatch.setenv("CI_KAFKA_PASSWORD", "pw-from-ci-env")
    logger = logging.getLogger("kaudit")
    logger.propagate = True
    try:
        with caplog.at_level(logging.WARNING, logger="kaudit"):
            settings = resolve_connection(
                bootstrap_server="h:1", properties=["sasl.password=${env:CI_KAFKA_PASSWORD}"])
    finally:
        logger.propagate = False
    assert settings.properties["sasl.password"] == "pw-from-ci-env"
    assert "visible in the process list" not in caplog.text
    with pytest.raises(InputError, match=r"-X sasl\.password: .*UNSET_PW is not set"):
        resolve_connection(bootstrap_server="h:1", properties=["sasl.password=${env:UNSET_PW}"])


def test_unknown_context_and_bad_context_file(isolated_config: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        resolve_connection(context="prod")
    isolated_config.write_text("contexts:\n  lab:\n    bootstrap: h:1\n")
    with pytest.raises(FileInputError) as err:
        resolve_connection(context="lab")
    assert err.value.line == 3 and "unknown key 'bootstrap'" in str(err.value)
    with pytest.raises(FileInputError, match="no context named 'prod'"):
        resolve_connection(context="prod")
    isolated_config.write_text("contexts: [\n")
    with pytest.raises(FileInputError, match="invalid YAML"):
        resolve_connection(context="lab")


@pytest.mark.parametrize("timeout", [0, -1, 86400.5, 1e9])
def test_timeout_must_be_positive_and_at_most_a_day(isolated_config: Path,
                                                    timeout: float) -> None:
    # A larger one would wrap around librdkafka's int milliseconds into an instant timeout.
    with pytest.raises(InputError, match="--timeout must be greater than 0 and at most 86400"):
        resolve_connection(bootstrap_server="h:1", timeout=timeout)
    assert resolve_connection(bootstrap_server="h:1", timeout=86400).timeout == 86400


@pytest.mark.parametrize("value", [".nan", ".inf", "0", "-3", "86401", "'10'", "true"])
def test_a_context_timeout_must_be_seconds_up_to_a_day(isolated_config: Path,
                                                       value: str) -> None:
    isolated_config.write_text(f"contexts:\n  lab:\n    bootstrap-server: h:1\n"
                               f"    timeout: {value}\n")
    with pytest.raises(FileInputError, match="timeout must be a number of seconds above 0 "
                                             "and at most 86400") as err:
        resolve_connection(context="lab")
    assert err.value.line == 3


def test_a_context_file_that_is_not_utf8_is_one_error_with_its_line(
        isolated_config: Path) -> None:
    # It was an internal error (exit 70): only OSError was caught around the read.
    isolated_config.write_bytes(b"contexts:\n  lab:\n    bootstrap-server: h:1 \xff\n")
    with pytest.raises(FileInputError, match=r":3: not UTF-8 text \(byte 0xff\)$"):
        resolve_connection(context="lab")
