"""A vLLM built from a checkout without release tags reports setuptools-scm's fallback version
"0.1.dev<commits>+g<sha>" (vLLM's pyproject.toml [tool.setuptools_scm]); a public fork build of the 0.27 era printed
"vLLM 0.1.dev19754+g3a0914114" (vllm-project/recipes#831, benchmarks/data/collected-startup-logs-37.jsonl). It is
not a 0.1 release: planned with the newest known release's rules and a warning, not with 0.6's (the V0 engine,
which gave that log's BF16 Qwen3.8-27B start -145.67 GiB of KV cache for 146.81 GiB of V0 mamba state)."""

from __future__ import annotations

import json
import re

from tests.clirun import invoke
from vllmkit.engine.versions import NEWEST_KNOWN, parse_version, rules_for, untagged_build, version_warning

FORK = "0.1.dev19754+g3a0914114"


def test_untagged_build_takes_the_newest_rules() -> None:
    assert untagged_build(FORK) and untagged_build("v0.1.dev5") and not untagged_build("0.1.0")
    assert not untagged_build("0.11.0") and not untagged_build("0.10.1.dev12+gabc")  # a tagged dev build
    assert parse_version(FORK) == parse_version(NEWEST_KNOWN)
    assert rules_for(FORK).v1_engine and rules_for(FORK) == rules_for(NEWEST_KNOWN)
    # a tagged release's dev build keeps its own numbers
    assert parse_version("0.10.1.dev12+gabc") == (0, 10, 1)


def test_untagged_build_is_named_in_the_warning() -> None:
    w = version_warning(FORK)
    assert w is not None and "without release tags" in w and NEWEST_KNOWN in w and "--vllm-version" in w
    assert version_warning(NEWEST_KNOWN) is None


def test_plan_with_an_untagged_build_uses_the_v1_engine() -> None:
    r = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--vllm-version", FORK, "--json"],
               env={"HF_HUB_OFFLINE": "1"})
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["data"]["settings"]["engine"] == "v1"
    assert any(re.search(r"without release tags", w) for w in doc["data"]["warnings"])


def test_an_installed_untagged_build_is_named_too(tmp_path, monkeypatch) -> None:
    # a real dist-info on the path (importlib.metadata reads it as it reads any install): the plan takes the
    # installed version when --vllm-version is not given, and an untagged one is warned about as well
    import importlib

    info = tmp_path / "vllm-0.1.dev19754+g3a0914114.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {FORK}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    r = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--json"], env={"HF_HUB_OFFLINE": "1"})
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)["data"]
    assert data["vllm_version"] == FORK and data["vllm_version_source"].startswith("installed")
    assert data["settings"]["engine"] == "v1"
    assert any("without release tags" in w for w in data["warnings"])
