"""Server addresses typed by the user (`smoke URL`, `bench URL`, `doctor --url`): one reading, one
refusal. A bare HOST:PORT means http; anything else must be an http(s) URL with a host."""

from __future__ import annotations

import urllib.parse

from vllmkit.errors import UsageError


def server_url(text: str, flag: str = "URL") -> str:
    """The base URL (no trailing slash), or a usage error (exit 2, code bad-url)."""
    raw = text.strip()
    candidate = raw if "://" in raw else f"http://{raw}"
    try:
        parsed = urllib.parse.urlsplit(candidate)
        parsed.port  # noqa: B018 - raises ValueError on a port out of range or not a number
        bad = (parsed.scheme.lower() not in ("http", "https") or not parsed.hostname
               or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in raw))
    except ValueError:  # "Invalid IPv6 URL", a port that is not a number
        bad = True
    if bad:
        raise UsageError(f"{flag} {raw!r} is not an http(s) server address",
                         "give the server's address, e.g. http://127.0.0.1:8000 (or 127.0.0.1:8000)", code="bad-url")
    return candidate.rstrip("/")
