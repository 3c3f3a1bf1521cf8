"""The pipeline options: which source they name, and the one line a half-given one gets."""

from __future__ import annotations

import pytest

from kaudit.connection.redact import MASK, redact
from kaudit.errors import InputError
from kaudit.pipeline.read import STATUS_TOPIC, PipelineSource


def test_no_option_names_no_pipeline() -> None:
    assert PipelineSource.given(None, None, None, None) is None


def test_a_connector_reads_its_connect_group_and_the_usual_status_topic() -> None:
    source = PipelineSource.given("orders-sink", "http://127.0.0.1:8083/", None, None)
    assert source is not None
    assert (source.group, source.connector, source.status_topic) == \
        ("connect-orders-sink", "orders-sink", STATUS_TOPIC)
    assert source.describe()["connect_url"] == "http://127.0.0.1:8083"


def test_a_group_alone_is_a_sink_written_by_something_else() -> None:
    source = PipelineSource.given(None, None, "etl-loader", None)
    assert source is not None and source.connector is None and source.group == "etl-loader"
    assert source.describe()["status_topic"] is None


def test_credentials_in_the_connect_url_are_never_shown() -> None:
    source = PipelineSource.given("s", "https://ops:w0rk3r-pw@connect:8083", None, "st")
    assert source is not None and source.connect is not None
    assert "w0rk3r-pw" not in repr(source) and "w0rk3r-pw" not in str(source.describe())
    assert source.connect.authorization is not None
    assert redact("refused w0rk3r-pw") == f"refused {MASK}"


@pytest.mark.parametrize("given, said", [
    (("s", None, None, None), "--connector needs the worker's REST API: add --connect-url URL"),
    ((None, "http://h:8083", None, None), "--connect-url is the Kafka Connect worker of "
                                          "--connector: add --connector NAME"),
    ((None, None, None, "connect-status"), "--status-topic is read for --connector's "
                                           "restarts: add --connector NAME"),
    (("s", "ftp://h/", None, None), "--connect-url ftp://h/: not an http(s) URL"),
    ((None, None, " ", None), "--sink-group: empty"),
])
def test_a_half_given_pipeline_is_one_line(given: tuple[str | None, ...], said: str) -> None:
    with pytest.raises(InputError) as err:
        PipelineSource.given(*given)
    assert err.value.message == said
