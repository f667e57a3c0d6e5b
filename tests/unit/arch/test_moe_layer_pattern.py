"""Which decoder layers carry routed experts (arch.reader._moe_layer_pattern), each rule as vLLM's model
file decides it; hand-counted on small layer counts."""

from __future__ import annotations

import pytest

from vllmkit.arch.reader import read_arch

BASE = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 1024,
        "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 64, "vocab_size": 32000,
        "max_position_embeddings": 4096, "intermediate_size": 3072, "moe_intermediate_size": 512,
        "num_experts": 16, "num_experts_per_tok": 2, "torch_dtype": "bfloat16"}


def moe(**cfg):
    return read_arch({**BASE, **cfg}).moe


def test_every_layer_by_default() -> None:
    m = moe(num_hidden_layers=8)
    assert (m.moe_layer_count(8), m.dense_mlp_layer_count(), m.expert_matrices) == (8, 0, 3)


@pytest.mark.parametrize(("cfg", "moe_layers", "dense"), [
    # qwen3_moe.py: layer_idx not in mlp_only_layers and (layer_idx + 1) % decoder_sparse_step == 0
    ({"decoder_sparse_step": 2}, [1, 3, 5, 7], 4),
    ({"decoder_sparse_step": 1, "mlp_only_layers": [0, 5]}, [1, 2, 3, 4, 6, 7], 2),
    ({"decoder_sparse_step": 1, "mlp_only_layers": []}, None, 0),
    # llama4.py: (layer_idx + 1) % interleave_moe_layer_step == 0
    ({"interleave_moe_layer_step": 2, "intermediate_size_mlp": 4096}, [1, 3, 5, 7], 4),
    ({"interleave_moe_layer_step": 1}, None, 0),
    # transformers JambaConfig: layers_num_experts[i] = num_experts if i % period == offset
    ({"expert_layer_period": 2, "expert_layer_offset": 1}, [1, 3, 5, 7], 4),
    ({"expert_layer_period": 4, "expert_layer_offset": 2}, [2, 6], 6),
    # deepseek_v2.py: layer_idx >= first_k_dense_replace and layer_idx % moe_layer_freq == 0
    ({"first_k_dense_replace": 1, "moe_layer_freq": 2}, [2, 4, 6], 5),
    ({"first_k_dense_replace": 3, "moe_layer_freq": 1}, None, 3),
])
def test_layers_with_experts(cfg: dict, moe_layers: list[int] | None, dense: int) -> None:
    m = moe(num_hidden_layers=8, **cfg)
    expected = 8 - cfg.get("first_k_dense_replace", 0) if moe_layers is None else len(moe_layers)
    assert m.moe_layer_count(8) == expected
    assert m.dense_mlp_layer_count() == dense
    if "intermediate_size_mlp" in cfg:
        assert m.dense_intermediate_size == 4096


def test_nemotron_h_pattern_and_relu2_experts() -> None:
    # nemotron_h.py: one block per character, "E" MoE, "-" MLP, "M" mamba, "*" attention; mlp_hidden_act relu2
    # experts are up + down only (FusedMoE without act-and-mul)
    cfg = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 1024,
           "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 32000,
           "max_position_embeddings": 4096, "num_hidden_layers": 8, "hybrid_override_pattern": "MEM*E-ME",
           "n_routed_experts": 16, "num_experts_per_tok": 2, "moe_intermediate_size": 512,
           "mlp_hidden_act": "relu2", "intermediate_size": 2048, "mamba_num_heads": 16, "mamba_head_dim": 64,
           "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4, "expand": 2, "torch_dtype": "bfloat16"}
    m = read_arch(cfg).moe
    assert (m.moe_layer_count(8), m.dense_mlp_layer_count(), m.expert_matrices) == (3, 1, 2)


@pytest.mark.parametrize(("model", "total_b"), [
    # Meta's Llama 4 model card: Maverick 400B total parameters; NVIDIA's Nemotron 3 Nano BF16 checkpoint:
    # 31.6B parameters (63.2 GB). The config-only size estimate (used when a source lists no file sizes) had
    # counted experts in every layer with three matrices: ~776B and ~100B.
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", 400.0),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 31.6),
])
def test_config_size_estimate_matches_the_published_total(model: str, total_b: float) -> None:
    from vllmkit.estimate.weights import estimate_param_bytes
    from vllmkit.hub.catalog import find_entry

    arch = read_arch(find_entry(model).config)
    assert estimate_param_bytes(arch) / 2 / 1e9 == pytest.approx(total_b, rel=0.02)


def test_llama4_and_nemotron_h_shared_experts() -> None:
    # vllm llama4.py Llama4MoE builds a shared expert of intermediate_size in every MoE layer (the config names no
    # count); nemotron_h.py takes its shared expert's width from moe_shared_expert_intermediate_size
    from vllmkit.hub.catalog import find_entry

    maverick = read_arch(find_entry("meta-llama/Llama-4-Maverick-17B-128E-Instruct").config).moe
    assert (maverick.num_shared_experts, maverick.shared_expert_intermediate_size) == (1, 8192)
    nano = read_arch(find_entry("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16").config).moe
    assert (nano.num_shared_experts, nano.shared_expert_intermediate_size) == (1, 3712)
