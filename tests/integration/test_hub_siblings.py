"""Quantized siblings found through the hub search API, with real sizes."""

from __future__ import annotations

import pytest

from tests.integration.hubserver import HubServer
from tests.integration.repos import Repo
from vllmkit.hub.siblings import find_siblings


@pytest.mark.parametrize("source", ["hf", "modelscope"])
def test_siblings_with_real_sizes(hub: HubServer, hub_env: dict[str, str], repos: dict[str, Repo],
                                  source: str) -> None:
    found = find_siblings("acme/tiny-llama", source=source, env=hub_env)
    size = {rid: len(repo.files["model.safetensors"]) for rid, repo in repos.items() if "model.safetensors" in repo.files}
    # same organisation first (acme beats RedHatAI for FP8); unknown uploaders, a different model
    # (-Instruct-FP8) and GGUF repositories are not offered
    assert [(s.id, s.precision, s.weight_files_bytes) for s in found] == [
        ("acme/tiny-llama-FP8", "fp8", size["acme/tiny-llama-FP8"]),
        ("acme/tiny-llama-AWQ", "awq", size["acme/tiny-llama-AWQ"]),
        ("RedHatAI/tiny-llama-quantized.w4a16", "int4", size["RedHatAI/tiny-llama-quantized.w4a16"]),
    ]
    assert [s.same_org for s in found] == [True, True, False]
    assert all(s.source == source for s in found)
    hub.clear()
    assert find_siblings("acme/tiny-llama", source=source, env=hub_env) == found
    assert hub.requests() == []  # cached


def test_siblings_never_raise(hub_env: dict[str, str]) -> None:
    assert find_siblings("acme/tiny-llama", env={**hub_env, "HF_HUB_OFFLINE": "1"}) == []
    assert find_siblings("acme/tiny-llama", env={**hub_env, "HF_ENDPOINT": "http://127.0.0.1:9"}) == []
