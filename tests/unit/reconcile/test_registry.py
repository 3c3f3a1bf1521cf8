"""The registry URL: its credentials become basic authentication and leave what is shown."""

from __future__ import annotations

import base64

import pytest

from kaudit.errors import InputError
from kaudit.reconcile.registry import Registry


def test_credentials_leave_the_url_for_the_authorization_header() -> None:
    registry = Registry.parse("https://ops%40shop:p%3Ass@registry.example:8081/apis/ccompat/v7/")
    assert registry.base == "https://registry.example:8081/apis/ccompat/v7"
    assert registry.authorization == "Basic " + base64.b64encode(b"ops@shop:p:ss").decode()
    assert "p:ss" not in repr(registry) and "cDpzc" not in repr(registry)
    assert Registry.parse("http://127.0.0.1:8081").authorization is None


def test_a_url_that_is_not_http_is_one_line_without_its_credentials() -> None:
    with pytest.raises(InputError) as err:
        Registry.parse("ftp://ops:secret@host/")
    assert err.value.message == "--schema-registry the URL given: not an http(s) URL"
