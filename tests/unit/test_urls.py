"""Server addresses typed by the user: one reading for smoke, bench and doctor --url."""

from __future__ import annotations

import pytest

from vllmkit.errors import UsageError
from vllmkit.urls import server_url


@pytest.mark.parametrize(("text", "url"), [
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
    ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
    ("127.0.0.1:8000", "http://127.0.0.1:8000"),
    ("localhost:8000", "http://localhost:8000"),
    ("https://llm.example.com", "https://llm.example.com"),
    ("http://[::1]:8000", "http://[::1]:8000"),
    (" http://h:1 ", "http://h:1"),
])
def test_addresses_people_type(text: str, url: str) -> None:
    assert server_url(text) == url


@pytest.mark.parametrize("text", [
    "ftp://host:21",  # not http(s)
    "not a url",  # whitespace
    "http://h:99999",  # port out of range
    "http://h:port",  # port not a number
    "http://[::1",  # unbalanced IPv6 bracket: urlsplit raises
    "http://a\x1b[31m:80",  # an escape sequence
    "http://",  # no host
])
def test_what_is_not_a_server_address_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError) as info:
        server_url(text, "--url")
    assert info.value.code == "bad-url"
    assert "\x1b" not in info.value.message  # repr() escapes what a terminal would act on
