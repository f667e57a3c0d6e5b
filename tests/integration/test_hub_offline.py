"""Offline and unreachable hubs: the caches first, then the bundled catalog, saying so."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.integration.hubserver import HubServer
from tests.integration.repos import TINY_PARAMS, Repo
from vllmkit.errors import ModelSourceError
from vllmkit.hub.resolve import OFFLINE_NOTE, resolve_model

CATALOG_ID = "Qwen/Qwen3-8B"  # in src/vllmkit/catalog/data


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens there any more


def test_hf_hub_offline_falls_back_to_catalog(hub: HubServer, hub_env: dict[str, str]) -> None:
    meta = resolve_model(CATALOG_ID, env={**hub_env, "HF_HUB_OFFLINE": "1"})
    assert meta.source == "catalog"
    assert meta.notes[0] == OFFLINE_NOTE
    assert hub.requests() == []


def test_offline_with_explicit_source_is_an_error(hub: HubServer, hub_env: dict[str, str]) -> None:
    with pytest.raises(ModelSourceError) as info:
        resolve_model(CATALOG_ID, source="hf", env={**hub_env, "HF_HUB_OFFLINE": "1"})
    assert info.value.code == "hub-unreachable"
    assert "HF_HUB_OFFLINE" in (info.value.hint or "")


def test_unreachable_hub_falls_back_to_catalog(hub_env: dict[str, str]) -> None:
    meta = resolve_model(CATALOG_ID, env={**hub_env, "HF_ENDPOINT": closed_port_url()})
    assert meta.source == "catalog"
    assert OFFLINE_NOTE in meta.notes


def test_unreachable_and_not_in_catalog(hub_env: dict[str, str]) -> None:
    with pytest.raises(ModelSourceError) as info:
        resolve_model("acme/tiny-llama", env={**hub_env, "HF_ENDPOINT": closed_port_url()})
    assert "cannot reach Hugging Face" in info.value.message
    assert "not in the bundled catalog" in info.value.message
    assert info.value.exit_code == 4


def test_offline_reads_a_complete_hf_cache_snapshot(hub: HubServer, hub_env: dict[str, str],
                                                    repos: dict[str, Repo]) -> None:
    snapshot = Path(hub_env["HF_HOME"]) / "hub" / "models--acme--tiny-llama" / "snapshots" / ("c" * 40)
    snapshot.mkdir(parents=True)
    for name, blob in repos["acme/tiny-llama"].files.items():
        (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / name).write_bytes(blob)
    refs = snapshot.parent.parent / "refs"
    refs.mkdir()
    (refs / "main").write_text("c" * 40)
    meta = resolve_model("acme/tiny-llama", env={**hub_env, "HF_HUB_OFFLINE": "1"})
    assert meta.source == "hf" and meta.id == "acme/tiny-llama"
    assert meta.params_by_dtype == TINY_PARAMS
    assert "offline: read from the Hugging Face cache" in meta.notes
    assert hub.requests() == []


def test_config_only_hf_cache_is_not_enough(hub_env: dict[str, str]) -> None:
    snapshot = Path(hub_env["HF_HOME"]) / "hub" / "models--acme--tiny-llama" / "snapshots" / ("d" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("d" * 40)
    with pytest.raises(ModelSourceError, match="not in the bundled catalog"):
        resolve_model("acme/tiny-llama", env={**hub_env, "HF_HUB_OFFLINE": "1"})


def test_vllmkit_cache_answers_before_going_offline(hub: HubServer, hub_env: dict[str, str]) -> None:
    resolve_model("acme/tiny-llama", env=hub_env)
    hub.clear()
    meta = resolve_model("acme/tiny-llama", env={**hub_env, "HF_HUB_OFFLINE": "1"})
    assert meta.source == "hf" and meta.params_by_dtype == TINY_PARAMS
    assert hub.requests() == []


def test_modelscope_unreachable_reads_modelscope_cache(hub_env: dict[str, str], repos: dict[str, Repo]) -> None:
    folder = Path(hub_env["MODELSCOPE_CACHE"]) / "models" / "acme" / "tiny-llama"
    folder.mkdir(parents=True)
    for name, blob in repos["acme/tiny-llama"].files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(blob)
    meta = resolve_model("ms://acme/tiny-llama", env={**hub_env, "MODELSCOPE_ENDPOINT": closed_port_url()})
    assert meta.source == "modelscope"
    assert "offline: read from the ModelScope cache" in meta.notes
