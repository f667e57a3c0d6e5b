"""User folders follow the XDG base-directory spec with vllmkit overrides (README "Settings")."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllmkit.dirs import user_dir


@pytest.mark.parametrize(
    ("kind", "env", "expected"),
    [
        ("cache", {"HOME": "/h"}, "/h/.cache/vllmkit"),
        ("data", {"HOME": "/h"}, "/h/.local/share/vllmkit"),
        ("state", {"HOME": "/h"}, "/h/.local/state/vllmkit"),
        ("config", {"HOME": "/h"}, "/h/.config/vllmkit"),
        ("cache", {"HOME": "/h", "XDG_CACHE_HOME": "/x"}, "/x/vllmkit"),
        ("cache", {"HOME": "/h", "XDG_CACHE_HOME": "/x", "VLLMKIT_CACHE_DIR": "~/vk"}, "/h/vk"),
        ("data", {"HOME": "/h", "VLLMKIT_DATA_DIR": "/d"}, "/d"),
        ("state", {"HOME": "/h", "XDG_STATE_HOME": "~/st"}, "/h/st/vllmkit"),
    ],
)
def test_user_dir(kind, env, expected) -> None:
    assert user_dir(kind, env) == Path(expected)
