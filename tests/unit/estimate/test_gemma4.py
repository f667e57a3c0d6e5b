"""Gemma-4 as vLLM sizes it (vllm 0.32 gemma4.py / gemma4_mm.py, transformers 5.x configuration_gemma4.py).

Checked against what the planner was not written from:
- four public startup logs (three vLLM releases, L40S / MI300X / GB10): the token count and concurrency
  vLLM printed follow from the KV budget it printed on the same line (budgets are printed to 0.01 GiB,
  so the logged count must lie between the plans for budget - 0.005 and budget + 0.005 GiB);
- transformers' own Gemma4TextConfig (the object vLLM reads): its layer_types and per_layer_config;
- the real vLLM CPU build on a tiny Gemma-4 (tests/e2e/test_oracle.py, case gemma4_text).
"""

from __future__ import annotations

import pytest

from vllmkit.arch import read_arch
from vllmkit.arch.model import LayerKind
from vllmkit.estimate.specs import build_specs
from vllmkit.estimate.weights import k_eq_v_slot_bytes
from vllmkit.hub.catalog import find_entry
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

GIB = 1 << 30
ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}


def _plan(model: str, gpu: str, **kw):
    return build_plan(PlanRequest(model=model, gpu=gpu, source="catalog", tensor_parallel_size=1, **kw), ENV)


# (log id, model, gpu profile, vLLM, printed KV GiB, max_model_len, extra request fields, printed tokens, printed x)
LOGS = [
    # blog post, vLLM 0.25.1 on an L40S: E4B (18 of 42 layers share KV; window 512)
    ("blog-l40s-gemma4-e4b-it-bf16-v0251-util085", "google/gemma-4-E4B-it", "l40s", "0.25.1", 22.01, 16384, {},
     1_033_831, 63.10),
    # AMD developer-cloud evidence file, ROCm nightly 0.29.1rc1 on an MI300X: E2B (20 of 35 layers share KV)
    ("amdgputools-mi300x-gemma4-e2b-len32768-util090-rocm-nightly", "google/gemma-4-E2B-it", "mi300x", "0.29.1",
     155.04, 32768, {}, 9_026_017, 275.45),
    # the same blog, 26B-A4B: a multimodal prefix LM, so the default 2048 batched tokens are raised to one video
    # item (2496), which widens the sliding-window reservation (checkpoint: an FP8 one; the KV cache is 16-bit)
    ("blog-l40s-gemma4-26b-a4b-fp8-v0251-util092", "google/gemma-4-26B-A4B-it", "l40s", "0.25.1", 12.75, 32768, {},
     321_600, 9.81),
    # a GB10 (DGX Spark) log, vLLM 0.25.0: NVML has no memory figure there, so the defaults are the small-GPU ones
    ("gb10-gemma4-26b-a4b-lora4-util055-v025", "google/gemma-4-26B-A4B-it", "gb10", "0.25.0", 1.54, 32768,
     {"max_num_seqs": 4}, 38_847, 1.19),
]


@pytest.mark.parametrize(("log", "model", "gpu", "version", "kv_gib", "max_len", "extra", "tokens", "x"), LOGS,
                         ids=[r[0] for r in LOGS])
def test_logged_capacity_follows_from_the_logged_budget(log, model, gpu, version, kv_gib, max_len, extra,
                                                        tokens, x) -> None:
    low, high = (_plan(model, gpu, vllm_version=version, max_model_len=max_len,
                       kv_cache_memory_bytes=int((kv_gib + d) * GIB), **extra) for d in (-0.005, 0.005))
    assert low.kv_cache.tokens <= tokens <= high.kv_cache.tokens, log
    assert round(low.kv_cache.max_concurrency, 2) <= x <= round(high.kv_cache.max_concurrency, 2) + 0.01, log


def test_without_the_gemma4_rules_the_logs_do_not_reproduce() -> None:
    """The rules matter: read as a uniform model (no wider full-attention heads, no shared KV), E4B would give
    far fewer tokens than the 1,033,831 vLLM printed."""
    entry = find_entry("google/gemma-4-E4B-it")
    arch = read_arch(entry.config)
    naive = arch.model_copy(update={"full_head_dim": None, "kv_shared_from": None})
    real = build_specs(arch, tp=1, kv_cache_dtype="auto", device="cuda")
    flat = build_specs(naive, tp=1, kv_cache_dtype="auto", device="cuda")
    assert len(flat.specs) == 42 and len(real.specs) == 24


def test_layers_follow_transformers_config() -> None:
    """transformers' Gemma4TextConfig resolves the layer pattern (5 sliding : 1 full, last layer full) and
    per_layer_config (global_head_dim, num_global_key_value_heads with attention_k_eq_v); vLLM reads that
    object. Both the config.json spelling and the saved per_layer_config spelling must read alike."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.Gemma4TextConfig(num_hidden_layers=13, global_head_dim=384, num_global_key_value_heads=2,
                                        attention_k_eq_v=True, num_kv_shared_layers=4)
    saved = cfg.to_dict()
    raw = {k: v for k, v in saved.items() if k != "per_layer_config"}
    raw.update(global_head_dim=384, num_global_key_value_heads=2, layer_types=None)
    for config in (saved, raw):
        arch = read_arch(config)
        kinds = ["full_attention" if k is LayerKind.FULL else "sliding_attention" for k in arch.layer_kinds]
        assert kinds == cfg.layer_types
        assert kinds[-1] == "full_attention"  # forced by __post_init__ (13 layers: 12 % 6 would leave it sliding)
        full = cfg.layer_types.index("full_attention")
        assert arch.full_head_dim == cfg.per_layer_config[full].head_dim == 384
        assert arch.full_num_kv_heads == cfg.per_layer_config[full].num_key_value_heads == 2
        sliding = cfg.layer_types.index("sliding_attention")
        assert arch.head_dim == cfg.per_layer_config[sliding].head_dim == 256
        assert arch.num_kv_heads == cfg.per_layer_config[sliding].num_key_value_heads
        assert arch.kv_shared_from == 13 - 4


def test_shared_layers_take_no_cache_and_full_layers_are_wider() -> None:
    """E2B: layers 15-34 read the caches of layers 13 / 14 (kv_sharing_target_layer_name), so 15 layers own
    one: 12 sliding (1 KV head x 256) and 3 full (1 x 512, attention_k_eq_v off: the sliding KV-head count)."""
    arch = read_arch(find_entry("google/gemma-4-E2B-it").config)
    specs = build_specs(arch, tp=1, kv_cache_dtype="auto", device="cuda")
    assert specs.layer_ids == tuple(range(15))
    by_kind = {}
    for layer, spec in zip(specs.layer_ids, specs.specs, strict=True):
        by_kind.setdefault(spec.kind.value, set()).add(spec.token_bytes)
        assert arch.layer_kinds[layer].value == spec.kind.value
    assert by_kind == {"sliding": {1 * 2 * 256 * 2}, "full": {1 * 2 * 512 * 2}}


def test_k_eq_v_layers_load_a_v_slot() -> None:
    """26B-A4B ships only k_proj on its 5 full-attention layers; vLLM allocates qkv_proj's V rows and loads K
    into them: 5 layers x hidden 2816 x 2 global KV heads x 512 x 2 B."""
    arch = read_arch(find_entry("google/gemma-4-26B-A4B-it").config)
    assert arch.k_eq_v and arch.full_num_kv_heads == 2 and arch.full_head_dim == 512
    assert k_eq_v_slot_bytes(arch) == 5 * 2816 * 2 * 512 * 2
    assert k_eq_v_slot_bytes(read_arch(find_entry("google/gemma-4-E4B-it").config)) == 0


def test_prefix_lm_raises_the_default_batched_tokens() -> None:
    """EngineArgs: a multimodal prefix LM (use_bidirectional_attention 'vision': 26B / 31B, not E2B / E4B)
    gets max_num_batched_tokens raised to its largest item, a 32-frame video of 70 + 8 tokens a frame; not
    when the user set it, nor when serving text only."""
    assert _plan("google/gemma-4-26B-A4B-it", "l40s", max_model_len=8192).settings.max_num_batched_tokens == 2496
    assert _plan("google/gemma-4-E4B-it", "l40s", max_model_len=8192).settings.max_num_batched_tokens == 2048
    assert _plan("google/gemma-4-26B-A4B-it", "l40s", max_model_len=8192,
                 max_num_batched_tokens=4096).settings.max_num_batched_tokens == 4096
    assert _plan("google/gemma-4-26B-A4B-it", "l40s", max_model_len=8192,
                 language_model_only=True).settings.max_num_batched_tokens == 2048


def test_gb10_takes_the_small_gpu_batch_defaults() -> None:
    """GB10 has no NVML memory figure: vLLM's get_batch_defaults falls back to 2048 / 256 although the device
    has 121.69 GiB (an RTX PRO 6000 of 94.97 GiB gets 8192)."""
    assert _plan("Qwen/Qwen3-8B", "gb10").settings.max_num_batched_tokens == 2048
    assert _plan("Qwen/Qwen3-8B", "rtx-pro-6000-server").settings.max_num_batched_tokens == 8192


def test_lora_stacks_cover_the_routed_experts() -> None:
    """FusedMoEWithLoRA (vllm/lora/layers/fused_moe.py) stacks, per MoE layer, adapter and expert, gate and up
    A [16, 2816] and B [704, 16], down A [16, 704] and B [2816, 16]: for 26B-A4B's 30 layers x 128 experts and
    4 adapters of rank 16, 4 x 16 x 30 x 128 x (3 x 2816 + 3 x 704) x 2 B. The GB10 log with exactly those flags
    (--enable-lora --max-loras 4 --max-lora-rank 16, vLLM 0.25.0) loaded 53.62 GiB: checkpoint + V slots +
    stacks must come within 1.5 % of it (without the expert stacks it would be 10 % short)."""
    from vllmkit.estimate.lora import lora_weight_bytes

    arch = read_arch(find_entry("google/gemma-4-26B-A4B-it").config)
    with_experts = lora_weight_bytes(arch, tp=1, max_loras=4, max_lora_rank=16, moe=True)
    without = lora_weight_bytes(arch, tp=1, max_loras=4, max_lora_rank=16)
    assert with_experts - without == 4 * 16 * 30 * 128 * (3 * 2816 + 3 * 704) * 2
    plan = _plan("google/gemma-4-26B-A4B-it", "gb10", vllm_version="0.25.0", max_model_len=32768, max_num_seqs=4,
                 gpu_memory_utilization=0.55, enable_lora=True, max_loras=4, max_lora_rank=16)
    loaded = (plan.memory.weights_bytes + plan.memory.lora_bytes) / GIB
    assert abs(loaded - 53.62) / 53.62 < 0.015
    older = _plan("google/gemma-4-26B-A4B-it", "gb10", vllm_version="0.11.0", max_model_len=32768, max_num_seqs=4,
                  enable_lora=True, max_loras=4, max_lora_rank=16)
    assert older.memory.lora_bytes == without  # before expert LoRA, the experts took no adapter
