"""Architecture reader on real published configs (bundled catalog, each with its source) and on
broken input. Expected layer patterns come from the models' own documentation / vLLM's model code."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllmkit.arch import LayerKind, read_arch
from vllmkit.errors import ConfigError
from vllmkit.hub.catalog import find_entry


def arch_of(model_id: str):
    entry = find_entry(model_id)
    assert entry is not None, model_id
    return read_arch(entry.config)


def count(arch, kind: LayerKind) -> int:
    return sum(1 for k in arch.layer_kinds if k is kind)


def test_qwen3_8b_dense_gqa() -> None:
    a = arch_of("Qwen/Qwen3-8B")  # config.json: 36 layers, 8 kv heads, head_dim 128, 40960 positions
    assert (a.num_hidden_layers, a.num_kv_heads, a.head_dim) == (36, 8, 128)
    assert count(a, LayerKind.FULL) == 36
    assert a.native_max_model_len == 40960


def test_gemma3_27b_sliding_pattern() -> None:
    # 62 layers, every 6th global: 10 full + 52 sliding (reference §2 grouping example)
    a = arch_of("google/gemma-3-27b-it")
    assert a.is_multimodal and a.text_model_type in ("gemma3_text", None)
    assert count(a, LayerKind.FULL) == 10 and count(a, LayerKind.SLIDING) == 52
    assert a.sliding_window == 1024
    assert a.native_max_model_len == 131072  # gemma3: not rescaled by its linear rope factor


def test_gemma3_12b_uses_transformers_defaults_for_omitted_fields() -> None:
    a = arch_of("google/gemma-3-12b-it")  # text_config omits vocab_size / head_dim
    assert a.vocab_size == 262_208 and a.head_dim == 256


def test_deepseek_v3_is_mla() -> None:
    a = arch_of("deepseek-ai/DeepSeek-V3")
    assert a.mla is not None and a.head_dim == 512 + 64 and a.num_kv_heads == 1
    assert count(a, LayerKind.MLA) == 61
    assert a.moe is not None and a.moe.num_experts == 256
    assert a.quantization is not None and a.quantization.method == "fp8"


def test_gpt_oss_alternates_sliding_and_full() -> None:
    a = arch_of("openai/gpt-oss-120b")
    assert count(a, LayerKind.SLIDING) == 18 and count(a, LayerKind.FULL) == 18
    assert a.sliding_window == 128
    assert a.quantization is not None and a.quantization.method == "mxfp4"


def test_llama4_scout_chunked_local_attention() -> None:
    a = arch_of("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    assert a.attention_chunk_size == 8192
    assert count(a, LayerKind.CHUNKED) == 36 and count(a, LayerKind.FULL) == 12


def test_qwen3_next_gated_delta_net_hybrid() -> None:
    a = arch_of("Qwen/Qwen3-Next-80B-A3B-Instruct")
    assert count(a, LayerKind.FULL) == 12 and count(a, LayerKind.MAMBA) == 36
    assert a.mamba is not None and a.mamba.variant == "gdn"


@pytest.mark.parametrize(
    ("model_id", "variant"),
    [
        ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", "mamba2"),
        ("ibm-granite/granite-4.0-h-small", "mamba2"),
        ("ai21labs/AI21-Jamba-Mini-1.7", "mamba1"),
    ],
)
def test_mamba_hybrids(model_id: str, variant: str) -> None:
    a = arch_of(model_id)
    assert a.mamba is not None and a.mamba.variant == variant
    assert count(a, LayerKind.MAMBA) > count(a, LayerKind.FULL) > 0


def test_nemotron_h_ssm_state_is_float32_by_default() -> None:
    # vLLM NemotronHForCausalLMConfig.DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32"
    assert arch_of("nvidia/NVIDIA-Nemotron-Nano-9B-v2").mamba.ssm_dtype == "float32"


def test_qwen25_sliding_window_ignored_without_use_sliding_window() -> None:
    a = arch_of("Qwen/Qwen2.5-7B-Instruct")  # sliding_window 131072 but use_sliding_window false
    assert count(a, LayerKind.SLIDING) == 0


def test_mistral_model_level_sliding_window() -> None:
    cfg = {"model_type": "mistral", "architectures": ["MistralForCausalLM"], "hidden_size": 4096,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
           "max_position_embeddings": 32768, "sliding_window": 4096, "torch_dtype": "bfloat16"}
    a = read_arch(cfg)
    assert count(a, LayerKind.SLIDING) == 32 and a.sliding_window == 4096


def test_awq_quantization_config() -> None:
    a = arch_of("Qwen/Qwen2.5-72B-Instruct-AWQ")
    assert a.quantization is not None and a.quantization.method == "awq" and a.quantization.bits == 4


def test_rope_scaling_linear_multiplies_native_length() -> None:
    cfg = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
           "vocab_size": 100, "max_position_embeddings": 4096, "rope_scaling": {"rope_type": "linear", "factor": 4.0}}
    assert read_arch(cfg).native_max_model_len == 16384


def test_yarn_not_rescaled_from_0_30_but_scaled_before() -> None:
    cfg = {"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
           "vocab_size": 100, "max_position_embeddings": 32768,
           "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}
    assert read_arch(cfg).native_max_model_len == 32768
    assert read_arch(cfg, yarn_scaled_max_len=True).native_max_model_len == 131072


def test_missing_field_names_the_field() -> None:
    with pytest.raises(ConfigError) as exc:
        read_arch({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2, "vocab_size": 10})
    assert "num_hidden_layers" in exc.value.message


def test_not_an_object() -> None:
    with pytest.raises(ConfigError):
        read_arch(["not", "a", "dict"])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10**6) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=6),
    max_leaves=20,
)
KEYS = ["model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
        "vocab_size", "head_dim", "layer_types", "sliding_window", "kv_lora_rank", "text_config",
        "max_position_embeddings", "rope_scaling", "quantization_config", "hybrid_override_pattern",
        "mamba_n_heads", "linear_num_value_heads", "num_experts", "torch_dtype"]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), json_values, max_size=12))
def test_fuzz_config_reader_only_raises_config_error(cfg: dict) -> None:
    try:
        read_arch(json.loads(json.dumps(cfg)))
    except ConfigError:
        pass
