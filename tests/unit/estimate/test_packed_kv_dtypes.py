"""Packed KV-cache formats: --kv-cache-dtype int8_per_token_head / fp8_per_token_head / int4_per_token_head / nvfp4.

Layouts read from vLLM's wheels (estimate/specs.py packed_kv_head_bytes): per token and KV head, the per-token-head
modes store one byte per K and V element (int4: half a byte) plus one float32 scale for K and one for V
(0.20.0 - 0.27.1 AttentionSpec.page_size_bytes, 0.32.0 TritonAttentionBackend.customize_spec); NVFP4 stores
head / 2 bytes of FP4 data and head / 16 FP8 block scales for each of K and V.

The public check: vllm-project/vllm PR #39074 (comment of 2026-04-20, "Full per-token-head Pareto on
Qwen/Qwen3.5-35B-A3B-GPTQ-Int4 / RTX 5090", --max-num-seqs 4 --gpu-memory-utilization 0.85 --enforce-eager,
TRITON_ATTN) lists the KV capacity vLLM printed: 45,408 tokens with the bf16 cache, 88,752 with fp8_per_token_head
and int8_per_token_head, 175,440 with int4_per_token_head. Qwen3.5 is a hybrid (gated delta net + full attention):
vLLM grows the attention block until one attention page holds a recurrent state, so the block size follows the
bytes a token takes. The three counts are 43 blocks of 1,056, 2,064 and 4,080 tokens -- the block sizes these
layouts give (worked below); without the two scales the 8-bit block would be 2,096 (88,752 / 2,096 = 42.3) and the
4-bit one 4,192 (175,440 / 4,192 = 41.9).
"""

from __future__ import annotations

import json

import pytest

from tests.clirun import invoke
from vllmkit.arch.reader import read_arch
from vllmkit.estimate.specs import build_specs, mamba_state_bytes, packed_kv_head_bytes
from vllmkit.hub.catalog import load_catalog

# vllm#39074's table: KV capacity (tokens) per --kv-cache-dtype on one RTX 5090
PR39074_TOKENS = {"auto": 45_408, "fp8_per_token_head": 88_752, "int8_per_token_head": 88_752,
                  "int4_per_token_head": 175_440}


@pytest.mark.parametrize(("dtype", "expected"), [
    ("int8_per_token_head", 128 + 128 + 4 + 4),   # 1 B per element of K and of V, a float32 scale each
    ("fp8_per_token_head", 128 + 128 + 4 + 4),
    ("int4_per_token_head", 64 + 64 + 4 + 4),     # two 4-bit values per byte
    ("nvfp4", (64 + 8) * 2),                      # FP4 data (128 / 2) + one FP8 scale per 16 (128 / 16), K and V
    ("nvfp4_4over6", (64 + 8) * 2),
    ("auto", None), ("fp8", None), ("bfloat16", None),
])
def test_bytes_per_token_and_head_at_head_size_128(dtype: str, expected: int | None) -> None:
    assert packed_kv_head_bytes(dtype, 128, 128) == expected


def _qwen35_35b_a3b():
    entry = next(e for e in load_catalog() if e.id == "Qwen/Qwen3.5-35B-A3B")
    return read_arch(entry.config)


def test_the_hybrid_block_sizes_match_the_capacities_vllm_printed_in_pr_39074() -> None:
    arch = _qwen35_35b_a3b()
    # the recurrent state per request on one rank: conv (2 x 16 x 128 + 32 x 128) x (4 - 1) x 2 B = 49,152 and
    # the float32 SSM state 32 x 128 x 128 x 4 B = 2,097,152
    assert arch.mamba is not None and mamba_state_bytes(arch.mamba, 1, 2) == 49_152 + 2_097_152
    # attention bytes per token and layer (2 KV heads of 256): bf16 2 x 512 x 2 = 2,048; 8-bit 2 x (512 + 8) =
    # 1,040; 4-bit 2 x (256 + 8) = 528. Block = 16 x ceil(2,146,304 / (16 x bytes)): 16 x 66, 16 x 129, 16 x 255
    expected_blocks = {"auto": 1056, "fp8_per_token_head": 2064, "int8_per_token_head": 2064,
                       "int4_per_token_head": 4080}
    for dtype, block in expected_blocks.items():
        specs = build_specs(arch, tp=1, kv_cache_dtype=dtype, device="cuda", compute_capability=12.0,
                            prefix_caching=False)
        assert specs.block_size == block, dtype
        assert PR39074_TOKENS[dtype] == 43 * block, dtype  # the same 43 blocks of each size in the published run


def test_a_plan_sizes_the_int8_cache_from_its_layout() -> None:
    # Qwen3-8B: 36 layers x 8 KV heads x (128 + 128 + 8) B = 76,032 B a token; 8 GiB / (16 x 76,032 B) = 7,061
    # blocks = 112,976 tokens (vLLM 0.32: int(7,061 / 2,560 blocks a 40,960-token request x 40,960) -- the same)
    r = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--source", "catalog", "--kv-cache-dtype",
                "int8_per_token_head", "--kv-cache-memory-bytes", "8GiB", "--vllm-version", "0.32.0", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)["data"]
    assert data["kv_cache"]["bytes_per_token"] == 36 * 8 * 264
    assert data["kv_cache"]["tokens"] == 112_976
    serve = data["serve_command"]
    assert serve[serve.index("--kv-cache-dtype") + 1] == "int8_per_token_head"
    # only TRITON_ATTN lists the per-token-head formats (0.32: v1/attention/backends/*.py supported_kv_cache_dtypes)
    assert any("Triton attention backend" in w for w in data["warnings"])


@pytest.mark.parametrize(("args", "code", "words"), [
    # vllm/config/cache.py CacheDType: int8 / fp8 per token-head and nvfp4 from 0.20.0, int4 from 0.25.0
    (["Qwen/Qwen3-8B", "--gpu", "h100", "--kv-cache-dtype", "int8_per_token_head", "--vllm-version", "0.19.0"],
     "kv-cache-dtype-version", "first in 0.20.0"),
    (["Qwen/Qwen3-8B", "--gpu", "h100", "--kv-cache-dtype", "int4_per_token_head", "--vllm-version", "0.24.0"],
     "kv-cache-dtype-version", "first in 0.25.0"),
    # 0.20.0 lists nvfp4 but its FlashInfer metadata builder raises "nvfp4 KV cache is not yet supported"
    (["Qwen/Qwen3-8B", "--gpu", "b200", "--kv-cache-dtype", "nvfp4", "--vllm-version", "0.20.0"],
     "kv-cache-dtype-version", "first in 0.21.0"),
    # FlashInfer takes NVFP4 KV on compute capability 10.x only (supports_kv_cache_dtype, 0.23 - 0.31) ...
    (["Qwen/Qwen3-8B", "--gpu", "h100", "--kv-cache-dtype", "nvfp4", "--vllm-version", "0.30.0"],
     "kv-cache-dtype-platform", "compute capability 10.x"),
    # ... from 0.32 plain nvfp4 on 8.x / 9.x / 12.x through FA2, not nvfp4_4over6 and not at head size 64
    (["Qwen/Qwen3-8B", "--gpu", "h100", "--kv-cache-dtype", "nvfp4_4over6", "--vllm-version", "0.32.0"],
     "kv-cache-dtype-platform", "compute capability 10.x"),
    (["openai/gpt-oss-20b", "--gpu", "h100", "--kv-cache-dtype", "nvfp4", "--vllm-version", "0.32.0"],
     "kv-cache-dtype-platform", "head size 64"),
    # Triton attention refuses an FP8 cache below compute capability 8.9 (0.32 triton_attn.py: "native FP8
    # (fp8e4nv) requires SM89+"); int8 is its answer there
    (["Qwen/Qwen3-8B", "--gpu", "a100-80gb-sxm", "--kv-cache-dtype", "fp8_per_token_head", "--vllm-version",
      "0.32.0"], "kv-cache-dtype-platform", "8.9"),
    (["Qwen/Qwen3-8B", "--gpu", "mi300x", "--kv-cache-dtype", "nvfp4", "--vllm-version", "0.32.0"],
     "kv-cache-dtype-platform", "NVIDIA-only"),
    (["Qwen/Qwen3-8B", "--gpu", "cpu", "--kv-cache-dtype", "int8_per_token_head", "--vllm-version", "0.32.0"],
     "kv-cache-dtype-platform", "CPU backend"),
    (["deepseek-ai/DeepSeek-V2-Lite-Chat", "--gpu", "h100", "--kv-cache-dtype", "int8_per_token_head",
      "--vllm-version", "0.32.0"], "kv-cache-dtype-mla", "MLA"),
])
def test_a_release_platform_or_model_without_the_format_is_refused(args: list[str], code: str, words: str) -> None:
    r = invoke(["plan", *args, "--source", "catalog", "--json"])
    assert r.exit_code == 2, r.output
    err = json.loads(r.stdout)["errors"][0]
    assert err["code"] == code and words in err["message"]
    assert "Traceback" not in r.output


@pytest.mark.parametrize(("gpu", "version"), [("b200", "0.30.0"), ("b200", "0.32.0"), ("h100", "0.32.0"),
                                              ("rtx-5090", "0.32.0")])
def test_nvfp4_kv_plans_where_flashinfer_takes_it(gpu: str, version: str) -> None:
    r = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", gpu, "--source", "catalog", "--kv-cache-dtype", "nvfp4",
                "--kv-cache-memory-bytes", "8GiB", "--vllm-version", version, "--json"])
    assert r.exit_code == 0, r.output
    # 36 layers x 8 KV heads x 2 x (64 + 8) B a token
    assert json.loads(r.stdout)["data"]["kv_cache"]["bytes_per_token"] == 36 * 8 * 144


def test_formats_still_not_sized_are_refused_with_a_lower_bound_hint() -> None:
    r = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--source", "catalog", "--kv-cache-dtype",
                "turboquant_k8v4", "--json"])
    assert r.exit_code == 2
    err = json.loads(r.stdout)["errors"][0]
    assert "cannot size" in err["message"] and "fp8" in err["hint"]
