"""The registry URL: its credentials become basic authentication and leave what is shown."""

from __future__ import annotations

import base64

import pytest

from kaudit.connection.redact import MASK, redact
from kaudit.errors import InputError
from kaudit.reconcile.registry import registry as parse_registry


def test_credentials_leave_the_url_for_the_authorization_header() -> None:
    registry = parse_registry("https://ops%40shop:p%3Ass@registry.example:8081/apis/ccompat/v7/")
    assert registry.base == "https://registry.example:8081/apis/ccompat/v7"
    assert registry.authorization == "Basic " + base64.b64encode(b"ops@shop:p:ss").decode()
    assert "p:ss" not in repr(registry) and "cDpzc" not in repr(registry)
    assert parse_registry("http://127.0.0.1:8081").authorization is None


def test_a_url_that_is_not_http_is_one_line_without_its_credentials() -> None:
    with pytest.raises(InputError) as err:
        parse_registry("ftp://ops:secret@host/")
    assert err.value.message == "--schema-registry the URL given: not an http(s) URL"


@pytest.mark.parametrize("url, why", [
    ("http://ops:pw-1@host:abc/", "Port could not be cast to integer value as 'abc'"),
    ("http://ops:pw-1@host:99999/", "Port out of range 0-65535"),
    ("http://[::1/", "Invalid IPv6 URL"),
])
def test_a_url_that_does_not_parse_is_one_line_without_its_credentials(url: str,
                                                                      why: str) -> None:
    with pytest.raises(InputError) as err:
        parse_registry(url)
    shown = "the URL given" if "@" in url else url
    assert err.value.message == f"--schema-registry {shown}: not a URL ({why})"


def test_an_ipv6_registry_keeps_its_brackets_and_its_password_is_masked() -> None:
    registry = parse_registry("http://ops:s3cr%2Ft@[::1]:8081/apis/ccompat/v7")
    assert registry.base == "http://[::1]:8081/apis/ccompat/v7"
    assert redact("401 for s3cr/t (s3cr%2Ft)") == f"401 for {MASK} ({MASK})"
