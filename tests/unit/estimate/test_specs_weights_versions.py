"""Per-layer specs, weight splits and version rules, with hand-worked expected numbers."""

from __future__ import annotations

import pytest

from vllmkit.arch import LayerKind, read_arch
from vllmkit.arch.model import MambaFacts
from vllmkit.engine.versions import parse_version, resolve_version, rules_for
from vllmkit.estimate.specs import (
    align_hybrid_block_size,
    attention_token_bytes,
    build_specs,
    kv_bytes_per_token_full,
    kv_heads_per_rank,
    mamba_state_bytes,
    pp_layer_ranges,
)
from vllmkit.estimate.weights import split_weights
from vllmkit.hub.catalog import find_entry

GIB = 1 << 30


def arch(model_id: str):
    return read_arch(find_entry(model_id).config)


def test_kv_heads_split_then_replicated() -> None:
    a = arch("Qwen/Qwen3-8B")  # 8 kv heads
    assert [kv_heads_per_rank(a, tp) for tp in (1, 2, 4, 8, 16)] == [8, 4, 2, 1, 1]


def test_attention_token_bytes_gqa_and_mla() -> None:
    # Qwen3-8B: 8 kv heads x (128 + 128) x 2 B = 4096 B per layer per token
    assert attention_token_bytes(arch("Qwen/Qwen3-8B"), 1, 2) == 4096
    # DeepSeek-V3 MLA: (512 + 64) x 2 B = 1152 B per layer, on every TP rank (reference §2)
    assert attention_token_bytes(arch("deepseek-ai/DeepSeek-V3"), 8, 2) == 1152


def test_full_attention_bytes_per_token_llama3_8b() -> None:
    # reference §2: Llama-3-8B bf16 32 layers x 4096 B/token = 131,072 B/token
    assert kv_bytes_per_token_full(arch("meta-llama/Meta-Llama-3-8B"), 1, "auto") == 131_072
    # fp8 KV cache halves it
    assert kv_bytes_per_token_full(arch("meta-llama/Meta-Llama-3-8B"), 1, "fp8") == 65_536


def test_mamba2_state_bytes_granite_like() -> None:
    # conv: (intermediate + 2 * n_groups * d_state) x (d_conv - 1); ssm: heads x head_dim x d_state
    m = MambaFacts(variant="mamba2", intermediate_size=256, state_size=16, conv_kernel=4, n_groups=1,
                   num_heads=8, head_dim=32)
    conv = (256 + 2 * 16) * 3
    ssm = 8 * 32 * 16
    assert mamba_state_bytes(m, 1, 2) == (conv + ssm) * 2
    # TP=2: n_groups 1 is extended to 2 (extra_groups_for_head_shards) before the split
    conv_tp2 = (256 + 2 * 2 * 16) // 2 * 3
    assert mamba_state_bytes(m, 2, 2) == (conv_tp2 + 8 // 2 * 32 * 16) * 2


def test_gdn_state_bytes_with_float32_ssm() -> None:
    m = MambaFacts(variant="gdn", num_k_heads=16, num_v_heads=32, k_head_dim=128, v_head_dim=128, conv_kernel=4,
                   ssm_dtype="float32")
    conv = (2 * 16 * 128 + 32 * 128) * 3 * 2  # bf16
    ssm = 32 * 128 * 128 * 4  # float32
    assert mamba_state_bytes(m, 1, 2) == conv + ssm


def test_hybrid_block_alignment() -> None:
    # attention 1024 B/token, mamba page 300,000 B: 16 * cdiv(300000, 16 * 1024) = 16 * 19 = 304 on GPU
    assert align_hybrid_block_size(16, 1024, 300_000, "cuda") == 304
    # CPU aligns to 128: 128 * cdiv(300000, 128 * 1024) = 384
    assert align_hybrid_block_size(128, 1024, 300_000, "cpu") == 384
    assert align_hybrid_block_size(128, 1024, 1000, "cpu") == 128


def test_qwen3_next_specs_on_gpu() -> None:
    a = arch("Qwen/Qwen3-Next-80B-A3B-Instruct")
    specs = build_specs(a, tp=1, kv_cache_dtype="auto", device="cuda")
    kinds = {s.kind.value for s in specs.specs}
    assert kinds == {"full", "mamba"}
    pages = {s.page_bytes for s in specs.specs}
    assert len(pages) == 1  # mamba pages padded to the attention page
    assert specs.block_size % 16 == 0 and specs.block_size * specs.attn_token_bytes >= specs.mamba_state_bytes


def test_pp_partition_matches_vllm_get_pp_indices() -> None:
    # 61 layers / 4 stages: 15 each, remainder 1 to the stage before the last -> [15, 15, 16, 15]
    assert [len(r) for r in pp_layer_ranges(61, 4)] == [15, 15, 16, 15]
    assert [len(r) for r in pp_layer_ranges(80, 2)] == [40, 40]


def test_weights_split_tp_pp() -> None:
    a = arch("Qwen/Qwen3-32B")
    total = 65_524_246_528
    # every rank (and stage) also holds vLLM's RoPE cos/sin cache whole: 40,960 positions x head 128 x 2 B
    rope = 40_960 * 128 * 2
    one = split_weights(a, total, tp=1, pp=1)
    assert one.per_stage_bytes == [total + rope]
    tp2 = split_weights(a, total, tp=2, pp=1)
    assert abs((tp2.per_stage_bytes[0] - rope) * 2 - total) <= 2
    pp2 = split_weights(a, total, tp=1, pp=2)
    assert abs(sum(pp2.per_stage_bytes) - 2 * rope - total) <= 2
    # stage 0 holds the embedding, the last the lm_head: same size for untied Qwen3-32B
    assert abs(pp2.per_stage_bytes[0] - pp2.per_stage_bytes[1]) < 10**6


def test_mtp_layer_removed_glm45_air() -> None:
    # catalog: full checkpoint 220,937,649,664 B; vLLM loads 213,704,502,528 B (test in catalog part 1)
    a = arch("zai-org/GLM-4.5-Air")
    split = split_weights(a, 220_937_649_664, tp=1, pp=1, mtp_layers=1)
    assert split.per_stage_bytes[0] == pytest.approx(213_704_502_528, rel=0.01)


@pytest.mark.parametrize(
    ("version", "util", "graphs", "concurrency_tokens", "sliding_mcb"),
    [("0.11.0", 0.9, False, False, False), ("0.20.0", 0.92, True, False, False),
     ("0.20.1", 0.92, True, True, False), ("0.21.0", 0.92, True, True, False),
     # the sliding-window in-flight term max_concurrent_batches x max_num_batched_tokens: 0.25.1's
     # kv_cache_interface.py has max_num_batched_tokens, 0.26.0's config/vllm.py max_in_flight_tokens (wheels)
     ("0.25.1", 0.92, True, True, False), ("0.26.0", 0.92, True, True, True),
     ("0.29.0", 0.92, True, True, True), ("0.33.0", 0.92, True, True, True)],
)
def test_version_rules(version, util, graphs, concurrency_tokens, sliding_mcb) -> None:
    r = rules_for(version)
    assert r.gpu_memory_utilization == util
    assert r.cudagraph_counted is graphs
    assert r.tokens_from_concurrency is concurrency_tokens
    assert r.sliding_in_flight_uses_concurrent_batches is sliding_mcb


def test_version_parse_and_resolution() -> None:
    assert parse_version("0.11.0+582e4e37.nv25.11") == (0, 11, 0)
    assert resolve_version("0.27.1") == ("0.27.1", "--vllm-version")
    with pytest.raises(ValueError):
        parse_version("latest")


def test_layer_kinds_count_in_specs() -> None:
    a = arch("google/gemma-3-27b-it")
    specs = build_specs(a, tp=2, kv_cache_dtype="auto", device="cuda")
    assert len(specs.specs) == sum(1 for k in a.layer_kinds if k is not LayerKind.NONE)


@pytest.mark.parametrize(
    ("cc", "generation", "block"),
    [
        # vLLM 0.32 platforms/cuda.py: sm90 MLA -> FLASH_ATTN_MLA (MultipleOf(16)) keeps 16;
        # sm100 -> FLASHINFER_MLA (kernel blocks [32, 64]) -> smallest supported, 32
        (9.0, 2, 16),
        (10.0, 2, 32),
        # older releases (reference §2): FlashMLA 64 on Hopper, CUTLASS MLA 128 on Blackwell
        (9.0, 1, 64),
        (10.0, 1, 128),
        (8.0, 2, 16),
    ],
)
def test_mla_block_size_by_backend(cc: float, generation: int, block: int) -> None:
    from vllmkit.estimate.specs import default_block_size

    a = arch("deepseek-ai/DeepSeek-V3")
    assert default_block_size(a, "cuda", compute_capability=cc, mla_backend_generation=generation).block_size == block
    assert default_block_size(a, "rocm", compute_capability=None).block_size == 16  # AITER MLA: any size
    assert default_block_size(a, "cpu", cpu_amx=False).block_size == 16  # CPU MLA kernel
    assert default_block_size(a, "cpu", cpu_amx=True).block_size == 128  # AMX MLA (seen in the oracle)


@pytest.mark.parametrize(("version", "counted"), [("0.23.0", False), ("0.24.0", False), ("0.25.1", False),
                                                  ("0.26.0", True), ("0.28.0", True)])
def test_rocm_counts_the_graph_estimate_from_0_26(version, counted) -> None:
    # gpu_worker.py's guard before profile_cudagraph_memory(), read in the wheels: current_platform.is_cuda() in
    # 0.23.0, 0.24.0 ("Skip on ROCm/HIP/XPU") and 0.25.x, is_cuda_alike() from 0.26.0 (vllm#47366)
    assert rules_for(version).rocm_cudagraph_counted is counted


def test_pp_stages_weigh_dense_and_moe_layers_apart_deepseek_v3() -> None:
    """DeepSeek-V3's first 3 layers have a dense MLP (first_k_dense_replace), ~0.05 of an MoE layer. Two public
    V0 logs of TP 8 x PP 4 print one rank's weights: deepseek-ai/DeepSeek-V3#205 (vLLM 0.6.6, 32 x RTX 4090)
    'Loading model weights took 16.9583 GB' from the driver, rank 0 of the first stage; vllm#15598 (DeepSeek-R1,
    same shapes, 32 x L40S) 'model weights take 20.64GiB' from a worker on another node than the driver's, so
    a later stage. Equal shares per layer gave every stage of 15 layers ~20.5 GiB, the first one included."""
    from vllmkit.estimate.weights import layer_shares

    a = arch("deepseek-ai/DeepSeek-V3")
    shares = layer_shares(a)
    assert shares[:3] == [pytest.approx(0.0507, abs=0.001)] * 3 and set(shares[3:]) == {1.0}
    total = find_entry("deepseek-ai/DeepSeek-V3").weights_bytes
    stages = [b / GIB for b in split_weights(a, total, tp=8, pp=4, mtp_layers=1).per_stage_bytes]
    assert stages[0] == pytest.approx(16.9583, rel=0.02)
    assert min(abs(s / 20.64 - 1) for s in stages[1:]) < 0.01
    assert max(stages) == stages[2]  # 16 MoE layers: the stage that decides the KV cache of every rank
    # the stages together hold what one rank holds without pipeline stages
    assert split_weights(a, total, tp=8, pp=1, mtp_layers=1).per_stage_bytes[0] == pytest.approx(
        sum(split_weights(a, total, tp=8, pp=4, mtp_layers=1).per_stage_bytes), rel=0.01)


def test_dense_models_keep_equal_layer_shares() -> None:
    from vllmkit.estimate.weights import layer_shares

    assert set(layer_shares(arch("Qwen/Qwen3-32B"))) == {1.0}
    assert set(layer_shares(arch("Qwen/Qwen3-30B-A3B"))) == {1.0}  # every layer has experts
