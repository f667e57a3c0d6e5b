"""The installed vLLM and its flag table are remembered between commands, and forgotten as soon as the
install changes (a real probe of a fake vLLM package in a real interpreter: tests/unit/launch/fakevllm.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import vllmkit.engine.launcher as launcher_mod
from tests.unit.launch.fakevllm import FAKE_VERSION, fake_env, install_fake_vllm
from vllmkit.engine.flags import known_flags
from vllmkit.engine.installcache import install_stamp, stamp_matches
from vllmkit.engine.launcher import detect_installed


def _bump(path: Path) -> None:
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


@pytest.fixture
def fake(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    site = install_fake_vllm(tmp_path)
    return site, fake_env(site, VLLMKIT_CACHE_DIR=str(tmp_path / "cache"))


def test_second_detection_runs_nothing(fake: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    site, env = fake
    first = detect_installed(env)
    assert (first.source, first.dist, first.version) == ("probe", "vllm-fake", FAKE_VERSION)
    assert first.location == str((site / "vllm").resolve())
    stamp = install_stamp(first)
    assert stamp is not None and stamp_matches(stamp)

    def no_probe(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the interpreter was probed again")

    monkeypatch.setattr(launcher_mod, "detect_vllm", no_probe)
    second = detect_installed(env)
    assert second.source == "cache"
    assert second.model_dump(exclude={"source"}) == first.model_dump(exclude={"source"})


@pytest.mark.parametrize("changed", ["vllm/__init__.py", "vllm", "."])
def test_a_changed_install_is_probed_again(fake: tuple[Path, dict[str, str]], changed: str) -> None:
    """An edited package, a reinstall (new files in the package folder) or any install into the same
    site-packages (its folder's mtime) invalidates both caches."""
    site, env = fake
    install = detect_installed(env)
    assert known_flags(install, env).source == "probe"  # type: ignore[union-attr]
    assert known_flags(detect_installed(env), env).source == "cache"  # type: ignore[union-attr]
    _bump(site / changed)
    again = detect_installed(env)
    assert again.source == "probe"
    flags = known_flags(again, env)
    assert flags is not None and flags.source == "probe"
    assert known_flags(detect_installed(env), env).source == "cache"  # type: ignore[union-attr]


def test_an_install_without_a_location_is_not_remembered(tmp_path: Path) -> None:
    from vllmkit.engine.detect import VllmInstall
    from vllmkit.engine.installcache import cached_install, remember_install

    env = {"VLLMKIT_CACHE_DIR": str(tmp_path)}
    install = VllmInstall(python="/no/such/python", installed=True, dist="vllm", version="0.32.0")
    remember_install(env, install)
    assert cached_install(env, "/no/such/python") is None
