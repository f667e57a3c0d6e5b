"""DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): the lightning indexer's key cache beside the latent.

vLLM 0.32.0 model_executor/models/deepseek_v2.py: a config with `index_topk` builds an `Indexer` per layer
whose `DeepseekV32IndexerCache` is an MLAAttentionSpec of head size index_head_dim + index_head_dim // 128 * 4
uint8 (fp8 keys + one float32 scale per 128); the latent stays kv_lora_rank + qk_rope_head_dim in the model
dtype. Both specs have the same block size, so one group holds them (UniformTypeKVCacheSpecs) and a block
costs the sum of both pages. The FlashMLA sparse backend needs blocks that are multiples of 64
(flashmla_sparse.py get_supported_kernel_block_sizes).

Checked against two public GLM-5.1-FP8 startup logs (8x H200, TP 8; vLLM 0.19.1rc1 and 0.20.1 dev builds,
benchmarks/data/collected-startup-logs-2.jsonl rows bisect-glm51-*): GLM-5's geometry is 78 layers,
kv_lora_rank 512, qk_rope_head_dim 64 (its published config), index_head_dim 128 (the transformers default).
"""

from __future__ import annotations

import pytest

from vllmkit.arch import read_arch
from vllmkit.estimate.kv import group_layers, kv_capacity
from vllmkit.estimate.specs import build_specs, kv_bytes_per_token_full

GIB = 1 << 30

GLM5_LIKE = {
    "architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa", "torch_dtype": "bfloat16",
    "hidden_size": 6144, "num_hidden_layers": 78, "num_attention_heads": 64, "num_key_value_heads": 64,
    "vocab_size": 154880, "intermediate_size": 12288, "moe_intermediate_size": 2048,
    "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
    "kv_lora_rank": 512, "q_lora_rank": 2048, "qk_rope_head_dim": 64, "qk_nope_head_dim": 192,
    "v_head_dim": 256, "index_topk": 2048, "max_position_embeddings": 202752,
}


def _capacity(budget_bytes: int) -> int:
    arch = read_arch(GLM5_LIKE)
    specs = build_specs(arch, tp=8, kv_cache_dtype="auto", device="cuda", compute_capability=9.0)
    groups = group_layers(list(specs.specs))
    return kv_capacity(groups, [groups], [budget_bytes], 202752, 8192).tokens


def test_indexer_cache_is_read_from_the_config() -> None:
    arch = read_arch(GLM5_LIKE)
    assert arch.mla is not None
    assert (arch.mla.index_head_dim, arch.mla.index_topk, arch.mla.indexer_layers) == (128, 2048, None)
    assert arch.mla.indexer_token_bytes == 132
    specs = build_specs(arch, tp=8, kv_cache_dtype="auto", device="cuda", compute_capability=9.0)
    assert specs.block_size == 64
    assert len(specs.specs) == 2 * 78  # a latent and an indexer cache per layer
    assert len(group_layers(list(specs.specs))) == 1
    # 78 x (576 x 2 + 132) = 100,152 B per token on every rank
    assert kv_bytes_per_token_full(arch, 8, "auto") == 100_152


@pytest.mark.parametrize(
    ("printed_gib", "printed_tokens"),
    [(34.86, 373_696), (32.06, 343_744)],  # "Available KV cache memory" / "GPU KV cache size" of the two logs
)
def test_glm51_h200_logs(printed_gib: float, printed_tokens: int) -> None:
    """The log rounds the budget to 0.01 GiB: the printed token count must lie between the capacities of
    the smallest and the largest budget that rounds to it (without the indexer, 34.86 GiB would give
    416,512 tokens)."""
    low = _capacity(int((printed_gib - 0.005) * GIB))
    high = _capacity(int((printed_gib + 0.005) * GIB))
    assert low <= printed_tokens <= high
    assert high - low < 1_000


def test_sparse_layers_follow_index_topk_freq() -> None:
    """index_topk_freq 2, offset 2 (vLLM's rule): layer i has an indexer when max(i - 1, 0) % 2 == 0."""
    arch = read_arch({**GLM5_LIKE, "num_hidden_layers": 6, "index_topk_freq": 2})
    assert arch.mla is not None and arch.mla.indexer_layers == [0, 1, 3, 5]
    specs = build_specs(arch, tp=1, kv_cache_dtype="auto", device="cuda", compute_capability=9.0)
    assert len(specs.specs) == 6 + 4


def test_without_index_topk_there_is_no_indexer() -> None:
    cfg = {k: v for k, v in GLM5_LIKE.items() if k != "index_topk"}
    cfg["model_type"] = "deepseek_v3"
    arch = read_arch(cfg)
    assert arch.mla is not None and arch.mla.index_head_dim is None
    specs = build_specs(arch, tp=8, kv_cache_dtype="auto", device="cuda", compute_capability=9.0)
    assert len(specs.specs) == 78


def test_sparse_attention_reads_and_flops() -> None:
    """A decode query at 32,768 tokens of context reads the latent of its top 2,048 tokens and the indexer
    keys of all of them: 1,152 x 2,048 + 132 x 32,768 = 6,684,672 B per layer; its attention FLOPs cover
    2,048 pairs, the indexer's 32,768. The last 4,096-token chunk of a 32,768-token prompt covers
    4,096 x (28,673 + 32,768) / 2 = 125,831,168 causal pairs; each of its queries attends to 2,048 tokens."""
    from vllmkit.estimate.perf import KVRead, ModelPerf

    model = ModelPerf(tp=1, pp=1, layers=1, hidden_size=6144, dense_bytes=1,
                      kv=(KVRead("sliding", 1, token_bytes=1152, window=2048), KVRead("mla", 1, token_bytes=132)),
                      attn_flops_per_pair=100.0, sparse_topk=2048, indexer_flops_per_pair=10.0)
    assert model.kv_bytes_read(1, 32_768) == 6_684_672
    assert model.attention_flops(1, 32_768, 0, 0) == 100.0 * 2048 + 10.0 * 32_768
    assert model.attention_flops(0, 0, 4096, 125_831_168) == 100.0 * 4096 * 2048 + 10.0 * 125_831_168
    dense = ModelPerf(tp=1, pp=1, layers=1, hidden_size=6144, dense_bytes=1, attn_flops_per_pair=100.0)
    assert dense.attention_flops(1, 32_768, 0, 0) == 100.0 * 32_768


def test_tensors_every_tp_rank_holds_whole() -> None:
    """vLLM keeps MLA's down-projections (fused_qkv_a_proj, disable_tp), the indexer's wq_b
    (ReplicatedLinear) and wk_weights_proj (disable_tp, upcast to BF16) and each MoE router
    (ReplicatedLinear) unsharded. GLM-5.1-FP8, per average layer: (512 + 64 + 2048) x 6144 x 1 B
    = 16,121,856; wq_b 2048 x 32 x 128 x 1 B = 8,388,608; wk + weights_proj 6144 x (128 + 32) x 2 B
    = 1,966,080; routers 75 of 78 layers x 256 x 6144 x 2 B = 3,024,738 -> 29,501,282 B."""
    from vllmkit.estimate.weights import replicated_layer_bytes, split_weights
    from vllmkit.hub.catalog import find_entry

    arch = read_arch(find_entry("zai-org/GLM-5.1-FP8").config)
    assert replicated_layer_bytes(arch) == 29_501_282
    one = split_weights(arch, 756_162_687_872, tp=1, pp=1)
    eight = split_weights(arch, 756_162_687_872, tp=8, pp=1)
    assert one.per_stage_bytes[0] == one.total_bytes  # nothing to replicate on one GPU
    even = (one.per_stage_bytes[0] - one.embedding_bytes - one.lm_head_bytes) // 8 + (one.embedding_bytes + one.lm_head_bytes) // 8
    # GLM-5.1 uses a default rope over 202,752 positions x qk_rope_head_dim 64 x 2 B, whole on every rank
    rope = 202_752 * 64 * 2
    assert eight.per_stage_bytes[0] - even - rope * 7 // 8 == pytest.approx(78 * (29_501_282 - 29_501_282 // 8), abs=100)


def test_glm51_fp8_weights_match_the_h200_logs() -> None:
    """Both bisect logs print "Model loading took 89.39 GiB" per rank (TP 8). Sharded evenly the plan said
    86.47 GiB (-3.3 %); with the whole tensors above and the MTP layer sharing the main embedding and head
    (GLM's published counts) it is within 1 %."""
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    plan = build_plan(PlanRequest(model="zai-org/GLM-5.1-FP8", source="catalog", gpu="h200", tensor_parallel_size=8),
                      {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"})
    assert plan.memory.weights_bytes / GIB == pytest.approx(89.39, rel=0.01)


def test_sparse_attention_shortens_long_prompts_not_short_ones() -> None:
    """DeepSeek-V3.2 has V3.1's shapes plus the indexer. A 32,000-token prompt attends to 2,048 tokens per
    query instead of up to 32,000, so its prefill (TTFT) is shorter than V3.1's; at 1,000 tokens, below the
    top-k, every token is attended either way and the two stay within 2 % (the checkpoints differ a little)."""
    from vllmkit.estimate.serving import Workload
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.performance import PerfOptions
    from vllmkit.plan.service import build_plan

    def ttft(model: str, input_len: int) -> float:
        req = PlanRequest(model=model, source="catalog", gpu="h200", tensor_parallel_size=8)
        perf = build_plan(req, {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"},
                          perf=PerfOptions(workload=Workload(input_len, 100, concurrency=1))).performance
        assert perf is not None
        return perf.ttft_ms.mean

    assert ttft("deepseek-ai/DeepSeek-V3.2", 32_000) < 0.8 * ttft("deepseek-ai/DeepSeek-V3.1", 32_000)
    assert ttft("deepseek-ai/DeepSeek-V3.2", 1_000) == pytest.approx(ttft("deepseek-ai/DeepSeek-V3.1", 1_000), rel=0.02)
