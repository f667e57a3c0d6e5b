"""The Hugging Face source against the stand-in hub, through the real huggingface_hub client."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.integration.hubserver import HubServer
from tests.integration.repos import COMMIT_MAIN, TINY_PARAMS, TINY_TENSOR_BYTES, Repo, data_start
from vllmkit.errors import ModelSourceError
from vllmkit.hub.resolve import resolve_model

SHARDS = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]


def cache_files(env: dict[str, str]) -> list[Path]:
    root = Path(env["VLLMKIT_CACHE_DIR"])
    return sorted(root.rglob("*")) if root.exists() else []


def test_metadata_from_the_hub(hub: HubServer, hub_env: dict[str, str], repos: dict[str, Repo]) -> None:
    meta = resolve_model("acme/tiny-llama", env=hub_env)
    repo = repos["acme/tiny-llama"]
    assert meta.source == "hf"
    assert meta.id == "acme/tiny-llama"
    assert meta.config["num_hidden_layers"] == 2
    assert meta.params_by_dtype == TINY_PARAMS
    assert meta.tensor_bytes == TINY_TENSOR_BYTES
    assert meta.index_total_size == TINY_TENSOR_BYTES
    assert meta.loaded_weight_files == SHARDS
    assert meta.generation_config == {"temperature": 0.6, "top_p": 0.95}
    assert meta.has_chat_template is True
    # real sizes from the listing (?blobs=true), equal to the bytes the server holds
    assert {f.name: f.size for f in meta.files} == {name: len(blob) for name, blob in repo.files.items()}
    assert meta.weight_file_bytes() is not None
    assert meta.provenance["commit"] == COMMIT_MAIN
    assert meta.provenance["config"].startswith(hub.url)


def test_request_budget_one_range_read_per_shard(hub: HubServer, hub_env: dict[str, str],
                                                 repos: dict[str, Repo]) -> None:
    resolve_model("acme/tiny-llama", env=hub_env)
    records = hub.requests("acme/tiny-llama")
    info = [r for r in records if r.api == "hf-info"]
    assert len(info) == 1
    assert "blobs=true" in info[0].path.lower()
    small = sorted(r.file for r in records if r.api == "hf-resolve" and not r.file.endswith(".safetensors"))
    assert small == ["config.json", "generation_config.json", "model.safetensors.index.json", "tokenizer_config.json"]
    for shard in SHARDS:
        reads = hub.byte_reads("acme/tiny-llama", shard)
        assert len(reads) == 1, reads
        assert reads[0].range is not None and reads[0].status == 206
        blob = repos["acme/tiny-llama"].files[shard]
        # the one read holds the header and at most a 4 KiB probe, never the whole shard
        assert data_start(blob) <= reads[0].body_bytes <= 4096 < len(blob)
        assert reads[0].weight_bytes < 4096
    assert hub.byte_reads("acme/tiny-llama", "original/model.safetensors") == []
    assert not [r for r in records if r.method == "HEAD"]
    assert sum(r.body_bytes for r in records) < 16 * 1024


def test_second_resolve_makes_no_request(hub: HubServer, hub_env: dict[str, str]) -> None:
    first = resolve_model("acme/tiny-llama", env=hub_env)
    assert hub.requests()
    hub.clear()
    second = resolve_model("acme/tiny-llama", env=hub_env)
    assert hub.requests() == []
    assert second.params_by_dtype == first.params_by_dtype
    assert second.files == first.files
    assert "cache" in second.provenance
    # --refresh refetches
    resolve_model("acme/tiny-llama", env=hub_env, refresh=True)
    assert len([r for r in hub.requests() if r.api == "hf-info"]) == 1


def test_long_header_takes_exactly_one_more_read(hub: HubServer, hub_env: dict[str, str],
                                                 repos: dict[str, Repo]) -> None:
    meta = resolve_model("acme/big-header", env=hub_env)
    # hand arithmetic: 1500 F32 tensors of 2 elements, one U8 tensor of 300000
    assert meta.params_by_dtype == {"F32": 3000, "U8": 300_000}
    blob = repos["acme/big-header"].files["model.safetensors"]
    start = data_start(blob)
    assert start > 65536  # the header really is longer than the first read
    reads = hub.byte_reads("acme/big-header", "model.safetensors")
    assert [r.range for r in reads] == ["bytes=0-65535", f"bytes=65536-{start - 1}"]
    assert sum(r.weight_bytes for r in reads) == 0  # not one byte of weights
    assert sum(r.body_bytes for r in reads) == start


def test_revision(hub: HubServer, hub_env: dict[str, str]) -> None:
    main = resolve_model("acme/tiny-llama", env=hub_env)
    v2 = resolve_model("hf://acme/tiny-llama@v2", env=hub_env)
    assert (main.config["num_hidden_layers"], v2.config["num_hidden_layers"]) == (2, 3)
    assert v2.revision == "v2"
    assert any(r.path.startswith("/api/models/acme/tiny-llama/revision/v2") for r in hub.requests())
    hub.clear()
    assert resolve_model("acme/tiny-llama", revision="v2", env=hub_env).config["num_hidden_layers"] == 3
    assert hub.requests() == []  # cached per revision
    with pytest.raises(ModelSourceError) as info:
        resolve_model("acme/tiny-llama@nope", env=hub_env)
    assert info.value.code == "revision-not-found"


def test_gated_needs_a_token(hub: HubServer, hub_env: dict[str, str]) -> None:
    with pytest.raises(ModelSourceError) as info:
        resolve_model("acme/gated", env=hub_env)
    assert info.value.code == "model-gated"
    assert "HF_TOKEN" in (info.value.hint or "")
    with pytest.raises(ModelSourceError) as info:
        resolve_model("acme/gated", env={**hub_env, "HF_TOKEN": "hf_wrong"})
    assert info.value.code == "model-gated"
    assert "HF_TOKEN" in (info.value.hint or "") and "no access" in (info.value.hint or "")
    hub.clear()
    meta = resolve_model("acme/gated", env={**hub_env, "HF_TOKEN": "hf_secret_token"})
    assert meta.params_by_dtype == {"BF16": 64}
    assert hub.requests("acme/gated")
    assert all(r.auth == "Bearer hf_secret_token" for r in hub.requests("acme/gated") if r.api != "cdn")
    # the token never leaves the hub: the redirect to the CDN origin drops it (as with the real Hub)
    assert all(r.auth is None for r in hub.requests("acme/gated") if r.api == "cdn")


def test_token_from_hf_home_file(hub: HubServer, hub_env: dict[str, str]) -> None:
    hf_home = Path(hub_env["HF_HOME"])
    hf_home.mkdir(parents=True)
    (hf_home / "token").write_text("hf_secret_token")
    assert resolve_model("acme/gated", env=hub_env).params_by_dtype == {"BF16": 64}


@pytest.mark.parametrize(
    ("repo_id", "code", "fragment"),
    [
        ("acme/ratelimited", "rate-limited", "rate-limited"),
        ("acme/broken", "hub-server-error", "HTTP 500"),
    ],
)
def test_transient_errors_retry_then_fail(hub: HubServer, hub_env: dict[str, str], repo_id: str, code: str,
                                          fragment: str) -> None:
    with pytest.raises(ModelSourceError) as info:
        resolve_model(repo_id, env=hub_env)
    assert info.value.code == code
    assert fragment in info.value.message
    assert info.value.exit_code == 4
    # bounded: the first try plus VLLMKIT_HUB_RETRIES=2 retries
    assert len(hub.requests(repo_id)) == 3
    assert cache_files(hub_env) == []


def test_retry_recovers(hub: HubServer, hub_env: dict[str, str]) -> None:
    meta = resolve_model("acme/flaky", env=hub_env)
    assert meta.params_by_dtype == {"BF16": 64}
    assert [r.status for r in hub.requests("acme/flaky") if r.api == "hf-info"] == [503, 200]


def test_timeout_is_bounded(hub: HubServer, hub_env: dict[str, str]) -> None:
    env = {**hub_env, "VLLMKIT_HUB_TIMEOUT": "0.3", "VLLMKIT_HUB_RETRIES": "1"}
    started = time.monotonic()
    with pytest.raises(ModelSourceError) as info:
        resolve_model("acme/slow", env=env)
    elapsed = time.monotonic() - started
    assert info.value.code == "hub-timeout"
    assert "VLLMKIT_HUB_TIMEOUT" in (info.value.hint or "")
    assert elapsed < 2.5  # 2 tries x 0.3 s + backoff, not the server's 3 s per answer
    assert cache_files(hub_env) == []


@pytest.mark.parametrize(
    ("repo_id", "code", "fragment"),
    [
        ("acme/malformed", "bad-response", "malformed data for model info"),
        ("acme/badconfig", "bad-response", "config.json is not valid JSON"),
        ("acme/absurd", "bad-safetensors-header", "1000000000000"),
        ("acme/truncated", "bad-safetensors-header", "runs past the end"),
    ],
)
def test_broken_content(hub: HubServer, hub_env: dict[str, str], repo_id: str, code: str, fragment: str) -> None:
    with pytest.raises(ModelSourceError) as info:
        resolve_model(repo_id, env=hub_env)
    assert info.value.code == code
    assert fragment in info.value.message
    assert info.value.hint
    assert cache_files(hub_env) == []  # nothing half-written


def test_absurd_header_reads_only_the_probe(hub: HubServer, hub_env: dict[str, str]) -> None:
    with pytest.raises(ModelSourceError):
        resolve_model("acme/absurd", env=hub_env)
    reads = hub.byte_reads("acme/absurd", "model.safetensors")
    assert len(reads) == 1 and reads[0].body_bytes <= 65536


def test_not_found_suggests_close_names(hub: HubServer, hub_env: dict[str, str]) -> None:
    with pytest.raises(ModelSourceError) as info:
        resolve_model("acme/tiny-lama", env=hub_env)
    assert info.value.code == "model-not-found"
    assert "acme/tiny-lama not found" in info.value.message
    assert "did you mean acme/tiny-llama" in (info.value.hint or "")
    assert "HF_TOKEN" in (info.value.hint or "")  # private repos look missing without a token


@pytest.mark.parametrize("spec", ["acme/norange", "ms://acme/norange"])
def test_server_ignoring_range_still_parses(hub: HubServer, hub_env: dict[str, str], spec: str) -> None:
    """HTTP 200 instead of 206: we read only up to the bytes we need and slice the range out."""
    meta = resolve_model(spec, env=hub_env)
    assert meta.params_by_dtype == {"F32": 3000, "U8": 300_000}
    reads = hub.byte_reads("acme/norange", "model.safetensors")
    assert [r.status for r in reads] == [200, 200]  # first probe, then the rest of the header


def test_modelopt_hf_quant_config_read_as_vllm_does(hub: HubServer, hub_env: dict[str, str]) -> None:
    """config.json has no quantization_config: vLLM then loads hf_quant_config.json as it
    (vllm/transformers_utils/config.py); the plan must see FP8 weights and the FP8 KV cache it declares."""
    from vllmkit.arch import read_arch

    meta = resolve_model("modelopt-org/small-llama-mo-fp8", env=hub_env)
    q = meta.config["quantization_config"]
    assert q["producer"]["name"] == "modelopt" and q["quantization"]["kv_cache_quant_algo"] == "FP8"
    assert meta.provenance["quantization_config"].endswith("hf_quant_config.json")
    arch = read_arch(meta.config)
    assert arch.quantization is not None
    assert (arch.quantization.method, arch.quantization.kv_cache_scheme) == ("modelopt", "fp8")
    # tensor bytes from the header: 64 x 128 FP8 + one F32 scale + 256 x 64 BF16
    assert meta.tensor_bytes == 64 * 128 + 4 + 256 * 64 * 2
    small = sorted(r.file for r in hub.requests("modelopt-org/small-llama-mo-fp8")
                   if r.api == "hf-resolve" and not r.file.endswith(".safetensors"))
    assert small == ["config.json", "hf_quant_config.json"]
