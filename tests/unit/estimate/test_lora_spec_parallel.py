"""LoRA stacks, speculative-decoding drafters and data / expert parallel, with hand-worked numbers.

Shapes follow vLLM 0.32 vllm/lora/layers (column_parallel_linear.py: lora_a_stacked
(max_loras, 1, max_lora_rank, input_size), lora_b_stacked (max_loras, 1, output_size_per_partition,
max_lora_rank); row-parallel layers split A by TP and keep B whole)."""

from __future__ import annotations

from vllmkit.arch import LayerKind, read_arch
from vllmkit.estimate.lora import lora_weight_bytes
from vllmkit.estimate.speculative import eagle_head_bytes, speculative_terms
from vllmkit.estimate.weights import data_parallel_total, expert_fraction
from vllmkit.hub.catalog import find_entry
from vllmkit.launch.command import attach_serve_command
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
GIB = 1 << 30


def arch(model_id: str):
    return read_arch(find_entry(model_id).config)


def test_lora_stacks_llama31_8b_hand_worked() -> None:
    a = arch("meta-llama/Llama-3.1-8B-Instruct")  # H 4096, q 4096, kv 2 x 8 x 128, I 14336, 32 layers
    # per layer and rank-1: qkv 3*4096 + (4096 + 2048) = 18432; o 4096 + 4096; gate_up 2*4096 + 2*14336;
    # down 14336 + 4096  -> 81920 elements; x 32 layers x 4 adapters x rank 64 x 2 B
    assert lora_weight_bytes(a, tp=1, max_loras=4, max_lora_rank=64) == 81920 * 32 * 4 * 64 * 2
    # TP=2 halves only the split sides: qkv 12288 + 3072, o 2048 + 4096, gate_up 8192 + 14336, down 7168 + 4096
    assert lora_weight_bytes(a, tp=2, max_loras=1, max_lora_rank=16) == (15360 + 6144 + 22528 + 11264) * 32 * 16 * 2


def test_lora_lowers_the_kv_budget_by_its_stacks() -> None:
    base = PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", source="catalog", gpu="h100", max_model_len=8192)
    plain = build_plan(base, ENV)
    lora = build_plan(base.model_copy(update={"enable_lora": True, "max_loras": 4, "max_lora_rank": 64}), ENV)
    assert lora.memory.lora_bytes == 81920 * 32 * 4 * 64 * 2
    assert plain.memory.kv_cache_bytes - lora.memory.kv_cache_bytes == lora.memory.lora_bytes
    argv = attach_serve_command(lora, base.model_copy(update={"enable_lora": True, "max_loras": 4,
                                                              "max_lora_rank": 64})).serve_command
    assert "--enable-lora" in argv and "--max-lora-rank" in argv


def test_ngram_needs_no_gpu_memory() -> None:
    t = speculative_terms(arch("Qwen/Qwen3-8B"), "ngram", 3, tp=1)
    assert t.weight_bytes == 0 and t.kv_layers == []


def test_mtp_loads_the_skipped_layers_and_adds_their_kv() -> None:
    a = arch("deepseek-ai/DeepSeek-V3")
    t = speculative_terms(a, "mtp", 1, tp=8, mtp_layer_bytes=8 * 10**9, mtp_layers=1)
    assert t.weight_bytes == 10**9 and t.kv_layers == [LayerKind.MLA]
    req = PlanRequest(model="deepseek-ai/DeepSeek-V3", source="catalog", gpu="h200", tensor_parallel_size=8,
                      max_model_len=8192)
    plain = build_plan(req, ENV)
    mtp = build_plan(req.model_copy(update={"speculative_config": {"method": "mtp", "num_speculative_tokens": 1}}), ENV)
    assert mtp.memory.speculative_bytes > 0
    # one more MLA layer in the pool: 62 instead of 61 layers of 1152 B per token per block
    assert mtp.kv_cache.bytes_per_block * 61 == plain.kv_cache.bytes_per_block * 62


def test_eagle3_head_hand_worked() -> None:
    a = arch("meta-llama/Llama-3.1-8B-Instruct")
    # one layer: 4096 x (4096 + 2048) + 4096 x 4096 + 3 x 4096 x 14336; fc 3 x 4096^2; head 32000 x 4096
    layer = 4096 * 6144 + 4096 * 4096 + 3 * 4096 * 14336
    assert eagle_head_bytes(a, eagle3=True) == (layer + 3 * 4096 * 4096 + 32000 * 4096) * 2
    t = speculative_terms(a, "eagle3", 3, tp=1)
    assert t.kv_layers == [LayerKind.FULL]


def test_a_draft_model_brings_its_weights_and_kv_layers() -> None:
    """vLLM V1 draft_model: a whole second model on the same TP ranks whose attention layers join the
    target's KV cache config. Qwen3-0.6B (28 layers of 8 KV heads x 128) drafting for Qwen3-8B (36 such
    layers): 4,096 bytes per token per layer either way, so a token of the shared pool costs (36 + 28) x
    4,096 B instead of 36 x 4,096 B. Its weights as vLLM loads it: 1.12 GiB ("Model loading took" in
    llm-d-benchmark's 0.14 H100 log, benchmarks/data/collected-startup-logs-3.jsonl; the tied lm_head the
    files still store is skipped)."""
    def plan(spec: dict | None, tp: int = 1):
        req = PlanRequest(model="Qwen/Qwen3-8B", source="catalog", gpu="h100", max_model_len=32768,
                          tensor_parallel_size=tp, speculative_config=spec)
        return build_plan(req, ENV)

    spec = {"method": "draft_model", "model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 3}
    plain, drafted = plan(None), plan(spec)
    draft = drafted.memory.speculative_bytes
    assert abs(draft / GIB - 1.12) < 0.02
    assert plan(spec, tp=2).memory.speculative_bytes == draft // 2
    assert drafted.memory.kv_cache_bytes == plain.memory.kv_cache_bytes - draft
    blocks = drafted.memory.kv_cache_bytes // (16 * (36 + 28) * 4096)
    assert drafted.kv_cache.tokens == blocks * 16
    assert not any("draft" in w for w in drafted.warnings)


def test_a_draft_model_of_another_shape_keeps_its_own_heads_in_the_pool() -> None:
    """Qwen2.5-0.5B (24 layers of 2 KV heads x 64) drafting for Qwen2.5-1.5B (28 layers of 2 x 128): a token
    costs 28 x 2 x 128 x 2 x 2 + 24 x 2 x 64 x 2 x 2 = 40,960 B, one uniform-type group. A public vLLM 0.23
    start of exactly this pair on an RTX 4080 Laptop GPU (men16922/llmso-study, collected-startup-logs-16)
    printed 140,832 tokens from "Available KV cache memory: 5.37 GiB" (5.37 GiB / 40,960 B = 140,770); sized
    as target-shaped layers (53,248 B) the pool held 108,272."""
    spec = {"method": "draft_model", "model": "Qwen/Qwen2.5-0.5B-Instruct", "num_speculative_tokens": 5}
    req = PlanRequest(model="Qwen/Qwen2.5-1.5B-Instruct", source="catalog", gpu="rtx-4080-laptop", vllm_version="0.23.0",
                      tensor_parallel_size=1, max_model_len=4096, max_num_seqs=64, gpu_memory_utilization=0.85,
                      kv_cache_memory_bytes=int(5.37 * GIB), speculative_config=spec)
    plan = build_plan(req, ENV)
    assert plan.kv_cache.tokens == int(5.37 * GIB) // (16 * 40_960) * 16
    assert abs(plan.kv_cache.tokens - 140_832) / 140_832 < 0.001


def test_a_draft_model_that_cannot_be_read_is_said_so() -> None:
    spec = {"method": "draft_model", "model": "nobody/no-such-draft", "num_speculative_tokens": 3}
    req = PlanRequest(model="Qwen/Qwen3-8B", source="catalog", gpu="h100", max_model_len=32768, speculative_config=spec)
    result = build_plan(req, ENV)
    assert result.memory.speculative_bytes == 0
    assert any("'nobody/no-such-draft' could not be read" in w and "not in the plan" in w for w in result.warnings)


def test_experts_spread_over_data_parallel_ranks() -> None:
    a = arch("Qwen/Qwen3-30B-A3B")
    f = expert_fraction(a)
    assert 0.9 < f < 0.98  # 48 layers x 128 experts x 3 x 2048 x 768 of ~30.5 B parameters
    assert data_parallel_total(a, 1000, dp=1) == 1000
    assert data_parallel_total(a, 1000, dp=4) == int(1000 * (1 - f) + 1000 * f / 4)


def test_moe_weights_per_rank_under_data_parallel_with_or_without_expert_parallel() -> None:
    # vLLM's fused-MoE layers run over all TP x DP ranks whether or not --enable-expert-parallel is given:
    # without it TP is flattened across DP (0.32 fused_moe/config.py FusedMoEParallelConfig.make, "When TP = 1,
    # DP = 2 and EP = False ... the tensors are sharded across 2 devices"; 0.8.5 fused_moe/layer.py
    # `self.tp_size = self.tp_size * self.dp_size`), with it each rank keeps whole experts. Either way a rank
    # holds the attention / embeddings whole and half of the routed experts at DP 2.
    def weights(dp: int, ep: bool) -> int:
        req = PlanRequest(model="Qwen/Qwen3-30B-A3B", source="catalog", gpu="h100", max_model_len=8192,
                          data_parallel_size=dp, enable_expert_parallel=ep)
        return build_plan(req, ENV).memory.weights_bytes

    one, f = weights(1, False), expert_fraction(arch("Qwen/Qwen3-30B-A3B"))
    for ep in (False, True):
        assert abs(weights(2, ep) / (one * (1 - f / 2)) - 1) < 1e-3  # 32.07 of 61.07 GB


def test_data_parallel_proposed_when_more_gpus_than_needed() -> None:
    plan = build_plan(PlanRequest(model="Qwen/Qwen3-8B", source="catalog", gpu="h100", gpu_count=8), ENV)
    dp = [a for a in plan.alternatives if a.data_parallel_size > 1]
    assert len(dp) == 1 and dp[0].data_parallel_size == 8
    assert dp[0].kv_tokens == plan.kv_cache.tokens * 8
    assert any("--data-parallel-size 8" in r for r in plan.reasons)


def test_explicit_data_parallel_counts_gpus_and_adds_flags() -> None:
    req = PlanRequest(model="Qwen/Qwen3-30B-A3B", source="catalog", gpu="h100", tensor_parallel_size=2,
                      max_model_len=8192, data_parallel_size=4, enable_expert_parallel=True)
    plan = attach_serve_command(build_plan(req, ENV), req)
    assert plan.gpu.count == 8 and plan.parallel.data_parallel_size == 4
    assert plan.serve_command[-3:] == ["--data-parallel-size", "4", "--enable-expert-parallel"]


def test_data_parallel_option_of_an_moe_holds_a_quarter_of_the_experts_a_rank() -> None:
    # four H100s given for Qwen3-30B-A3B, which fits one: the --data-parallel-size 4 option's ranks hold 1/4 of the
    # routed experts each (vLLM flattens TP across DP for the MoE layers), so each engine has more KV cache than the
    # single-GPU plan's, and with a workload the option gets its tokens/s like the other alternatives
    from vllmkit.estimate.serving import Workload
    from vllmkit.plan.performance import PerfOptions

    req = PlanRequest(model="Qwen/Qwen3-30B-A3B", source="catalog", gpu="h100", gpu_count=4,
                      tensor_parallel_size=1)
    plan = build_plan(req, ENV, perf=PerfOptions(workload=Workload(1000, 200, concurrency=64)))
    dp = [a for a in plan.alternatives if a.data_parallel_size == 4]
    assert len(dp) == 1
    one = plan.memory.weights_bytes
    f = expert_fraction(arch("Qwen/Qwen3-30B-A3B"))
    assert abs(dp[0].weights_bytes / (one * (1 - f + f / 4)) - 1) < 1e-3
    assert dp[0].kv_tokens > 4 * plan.kv_cache.tokens * 2  # 29 GB of experts a rank fewer: far more than 4 x one
    assert dp[0].output_tokens_per_s and dp[0].output_tokens_per_s > plan.performance.output_tokens_per_s
