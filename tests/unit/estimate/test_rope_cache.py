"""vLLM's RoPE cos/sin caches: buffers the model builds at load (rotary_embedding/base.py register_buffer), on
every rank whole, counted in "Model loading took" though no checkpoint holds them.

Independent checks: public vLLM 0.19.0 H100 logs (llm-d-planner's sweep, benchmarks/data/collected-startup-logs-4
and -5.jsonl) print the loaded size; the checkpoint alone falls short of it by exactly the cache for
Llama-4-Scout (10,485,760 positions) and Gemma-3 (linear factor 8), and the planner now lands on the log."""

from __future__ import annotations

import pytest

from vllmkit.arch import read_arch
from vllmkit.estimate.weights import rope_cache_bytes
from vllmkit.hub.catalog import find_entry
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
GIB = 2**30


def _arch(model_id: str):
    entry = find_entry(model_id)
    assert entry is not None
    return read_arch(entry.config)


@pytest.mark.parametrize(
    ("model_id", "tp", "logged_gib"),
    [
        # llm-d-planner v0.19.0 logs, "Model loading took X GiB" (per GPU)
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 4, 53.12),
        ("google/gemma-3-4b-it", 1, 8.58),
        ("google/gemma-3-12b-it", 1, 23.31),
        ("google/gemma-3-27b-it", 1, 51.45),
        ("meta-llama/Llama-3.1-8B-Instruct", 1, 14.99),
        ("Qwen/Qwen3-8B", 1, 15.27),
    ],
)
def test_loaded_weights_match_the_vllm_019_logs(model_id: str, tp: int, logged_gib: float) -> None:
    plan = build_plan(PlanRequest(model=model_id, source="catalog", gpu="h100", tensor_parallel_size=tp,
                                  max_model_len=8192, gpu_memory_utilization=0.95, vllm_version="0.19.0"), ENV)
    assert plan.memory.weights_bytes / GIB == pytest.approx(logged_gib, rel=0.005)
    # without the cache the plan would miss the log by more than the print rounding
    assert abs((plan.memory.weights_bytes - rope_cache_bytes(_arch(model_id))) / GIB - logged_gib) > 0.005


def test_scout_caches_ten_million_positions() -> None:
    # config: max_position_embeddings 10,485,760, head_dim 128, rope_type llama3 (a cache of max_position rows,
    # llama3_rope.py); 16-bit: 2.5 GiB on every rank, the whole gap between the checkpoint share and the log
    assert rope_cache_bytes(_arch("meta-llama/Llama-4-Scout-17B-16E-Instruct")) == 10_485_760 * 128 * 2


def test_gemma3_has_a_linear_scaled_global_cache_and_a_local_one() -> None:
    # global: linear factor 8 over 131,072 positions (linear_scaling_rope.py max_len = max_position x factor);
    # local: rope_local_base_freq, default (131,072 rows); head_dim 256 -> 0.5625 GiB
    assert rope_cache_bytes(_arch("google/gemma-3-4b-it")) == (131_072 * 8 + 131_072) * 256 * 2


def test_widths_and_row_counts_by_rope_kind() -> None:
    # MiniMax-M2: rotary_dim 64 of head 128 (minimax_m2.py partial_rotary_factor = rotary_dim / head_dim)
    assert _arch("MiniMaxAI/MiniMax-M2").rope_cache_elements == 196_608 * 64
    # DeepSeek-V3 MLA: deepseek_yarn, original 4,096 x factor 40, qk_rope_head_dim 64, kept float32 (x2 elements)
    assert _arch("deepseek-ai/DeepSeek-V3").rope_cache_elements == 4_096 * 40 * 64 * 2
    # Qwen3-VL: mRoPE covers 4x the positions (mrope.py positions_factor)
    assert _arch("Qwen/Qwen3-VL-8B-Instruct").rope_cache_elements == 262_144 * 4 * 128
    # phi-2: partial_rotary_factor 0.4 of head 80
    assert _arch("microsoft/phi-2").rope_cache_elements == 2_048 * 32


def test_float32_serving_doubles_the_cache() -> None:
    arch = _arch("meta-llama/Llama-3.1-8B-Instruct")
    assert rope_cache_bytes(arch.model_copy(update={"dtype": "float32"})) == 2 * rope_cache_bytes(arch)


def test_learned_positions_and_pure_mamba_have_none() -> None:
    gpt2 = read_arch({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 768, "n_head": 12,
                      "n_layer": 12, "num_hidden_layers": 12, "vocab_size": 50257, "n_positions": 1024})
    assert gpt2.rope_cache_elements == 0


_TINY = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_attention_heads": 4,
         "num_hidden_layers": 2, "vocab_size": 100, "max_position_embeddings": 2048, "intermediate_size": 128}


@pytest.mark.parametrize("kind", ["linear", "dynamic"])
def test_a_hostile_scaling_factor_is_refused_by_name(kind: str) -> None:
    from vllmkit.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        read_arch({**_TINY, "rope_scaling": {"rope_type": kind, "factor": 1e308}})
    assert err.value.code == "config-out-of-bounds" and "rope_scaling.factor" in err.value.message


def test_a_hostile_yarn_factor_does_not_overflow_the_cache_rows() -> None:
    # yarn's rows are original x factor; vLLM's max length keeps the config's figure here (not yarn-scaled),
    # so the config reads, and the cache is capped instead of overflowing a float into an int
    arch = read_arch({**_TINY, "rope_scaling": {"rope_type": "yarn", "factor": 1e308,
                                                "original_max_position_embeddings": 4096}})
    assert arch.native_max_model_len == 2048
    assert 0 < arch.rope_cache_elements < 2**40
