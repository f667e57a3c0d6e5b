"""The ModelScope source against the stand-in hub (MODELSCOPE_ENDPOINT)."""

from __future__ import annotations

import pytest

from tests.integration.hubserver import HubServer
from tests.integration.repos import TINY_PARAMS, TINY_TENSOR_BYTES, Repo, data_start
from vllmkit.errors import ModelSourceError
from vllmkit.hub.resolve import resolve_model

SHARDS = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]


@pytest.mark.parametrize("spec", ["ms://acme/tiny-llama", "modelscope://acme/tiny-llama"])
def test_metadata_from_modelscope(hub: HubServer, hub_env: dict[str, str], repos: dict[str, Repo], spec: str) -> None:
    meta = resolve_model(spec, env=hub_env)
    assert meta.source == "modelscope"
    assert meta.params_by_dtype == TINY_PARAMS
    assert meta.tensor_bytes == TINY_TENSOR_BYTES
    assert {f.name: f.size for f in meta.files} == {n: len(b) for n, b in repos["acme/tiny-llama"].files.items()}
    assert meta.has_chat_template is True
    records = hub.requests("acme/tiny-llama")
    assert {r.api for r in records} == {"ms-files", "ms-file"}  # nothing went to the HF API
    assert len([r for r in records if r.api == "ms-files"]) == 1
    for shard in SHARDS:
        reads = hub.byte_reads("acme/tiny-llama", shard)
        assert len(reads) == 1 and reads[0].status == 206
        blob = repos["acme/tiny-llama"].files[shard]
        assert data_start(blob) <= reads[0].body_bytes <= 4096 < len(blob)


def test_vllm_use_modelscope_selects_modelscope(hub: HubServer, hub_env: dict[str, str]) -> None:
    meta = resolve_model("acme/tiny-llama", env={**hub_env, "VLLM_USE_MODELSCOPE": "True"})
    assert meta.source == "modelscope"
    assert all(r.api.startswith("ms-") for r in hub.requests())
    hub.clear()
    again = resolve_model("acme/tiny-llama", env={**hub_env, "VLLM_USE_MODELSCOPE": "True"})
    assert hub.requests() == []  # cached
    assert again.source == "modelscope"
    # the HF entry is a different cache key: choosing HF fetches from the HF API
    assert resolve_model("acme/tiny-llama", source="hf", env=hub_env).source == "hf"
    assert any(r.api == "hf-info" for r in hub.requests())


def test_revision_and_token(hub: HubServer, hub_env: dict[str, str]) -> None:
    assert resolve_model("ms://acme/tiny-llama@v2", env=hub_env).config["num_hidden_layers"] == 3
    with pytest.raises(ModelSourceError) as info:
        resolve_model("ms://acme/gated", env=hub_env)
    assert info.value.code == "model-gated"
    assert "MODELSCOPE_API_TOKEN" in (info.value.hint or "")
    meta = resolve_model("ms://acme/gated", env={**hub_env, "MODELSCOPE_API_TOKEN": "hf_secret_token"})
    assert meta.params_by_dtype == {"BF16": 64}


@pytest.mark.parametrize(
    ("repo_id", "code"),
    [
        ("acme/ratelimited", "rate-limited"),
        ("acme/broken", "hub-server-error"),
        ("acme/malformed", "bad-response"),
        ("acme/absurd", "bad-safetensors-header"),
        ("acme/tiny-lama", "model-not-found"),
    ],
)
def test_modelscope_errors(hub: HubServer, hub_env: dict[str, str], repo_id: str, code: str) -> None:
    with pytest.raises(ModelSourceError) as info:
        resolve_model(f"ms://{repo_id}", env=hub_env)
    assert info.value.code == code
    assert "ModelScope" in info.value.message or code == "bad-safetensors-header"
    if code == "model-not-found":
        assert "did you mean acme/tiny-llama" in (info.value.hint or "")


def test_settings_are_per_command_not_from_the_process(
    hub: HubServer, hub_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ModelScope client (modelscope-hub's HubApi) reads MODELSCOPE_ENDPOINT / MODELSCOPE_API_TOKEN from
    the process when not told otherwise; vllmkit passes the command's own values."""
    monkeypatch.setenv("MODELSCOPE_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("MODELSCOPE_API_TOKEN", "hf_secret_token")  # the token the gated repo accepts
    meta = resolve_model("ms://acme/tiny-llama", env=hub_env)
    assert meta.source == "modelscope"
    assert any(r.api == "ms-files" for r in hub.requests("acme/tiny-llama"))
    with pytest.raises(ModelSourceError) as info:  # the process token is not used for the gated repo either
        resolve_model("ms://acme/gated", env=hub_env)
    assert info.value.code == "model-gated"


def test_file_list_and_search_go_through_the_modelscope_client(hub: HubServer, hub_env: dict[str, str]) -> None:
    from modelscope_hub import HubApi

    from vllmkit.hub.modelscope import hub_api, search_models
    from vllmkit.hub.settings import HubSettings

    settings = HubSettings.from_env(hub_env)
    api = hub_api(settings)
    assert isinstance(api, HubApi)
    assert "acme/tiny-llama" in search_models(settings, "tiny", owner="acme", api=api)
    assert [r.api for r in hub.requests()] == ["ms-search"]


def test_unreachable_endpoint(hub_env: dict[str, str]) -> None:
    """Nothing listens on port 9: exit-4 code hub-unreachable, a one-line cause (the client's retries
    take ~7 s: 1 + 2 + 4 s backoff)."""
    with pytest.raises(ModelSourceError) as info:
        resolve_model("ms://acme/tiny-llama", env={**hub_env, "MODELSCOPE_ENDPOINT": "http://127.0.0.1:9"})
    assert info.value.code == "hub-unreachable"
    assert "connection failed" in info.value.message and "\n" not in info.value.message
