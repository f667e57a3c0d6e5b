"""LFM2's short-conv layers (issue 13: hybrid layer kinds): one conv state per layer, no SSM state.

vLLM (0.32.0 wheel) Lfm2ForCausalLM.get_mamba_state_shape_from_config: short_conv_state_shape(tp, conv_dim,
conv_L_cache) = (conv_dim / tp, conv_L_cache - 1) in the cache dtype (short_conv_state_dtype); Lfm2-MoE uses
hidden_size for the dimension. Checked against the real vLLM CPU build: a tiny LFM2 (hidden 128, conv_dim 128,
conv_L_cache 3, one attention layer with one KV head of 64, bf16) logged
"Padding mamba page size by 6300.00%": a 128-token attention page of 128 x 1 x 64 x 2 x 2 B = 32,768 B over a
512 B state = 128 x 2 x 2 B; and "CPU KV cache size: 3,050,402 tokens, Maximum concurrency for 2,048 tokens per
request: 1489.45x" at --kv-cache-memory-bytes 1 GiB (tests/e2e/test_oracle.py runs that case for real).
"""

from __future__ import annotations

from vllmkit.arch.model import LayerKind
from vllmkit.arch.reader import read_arch
from vllmkit.estimate.specs import build_specs, mamba_state_bytes

TINY = {
    "architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "torch_dtype": "bfloat16", "hidden_size": 128,
    "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 512,
    "intermediate_size": 256, "max_position_embeddings": 4096, "conv_L_cache": 3, "conv_dim": 128,
    "layer_types": ["conv", "conv", "full_attention", "conv"],
}


def test_short_conv_state_and_padding_match_the_cpu_log() -> None:
    arch = read_arch(TINY)
    assert arch.layer_kinds == [LayerKind.MAMBA, LayerKind.MAMBA, LayerKind.FULL, LayerKind.MAMBA]
    assert arch.mamba is not None and arch.mamba.variant == "short_conv"
    assert mamba_state_bytes(arch.mamba, 1, 2) == 512
    specs = build_specs(arch, tp=1, kv_cache_dtype="auto", device="cpu")
    assert specs.block_size == 128
    page = specs.block_size * 1 * 64 * 2 * 2
    assert f"{(page - 512) / 512 * 100:.2f}" == "6300.00"
    assert {s.page_bytes for s in specs.specs} == {page}


def test_the_state_splits_over_tp_and_ignores_the_ssm_dtype() -> None:
    arch = read_arch({**TINY, "conv_dim": 2048, "hidden_size": 2048, "num_attention_heads": 32,
                      "num_key_value_heads": 8})
    assert arch.mamba is not None
    assert mamba_state_bytes(arch.mamba, 2, 2) == 1024 * 2 * 2
    # the CPU platform's float32 SSM override has no SSM state to change here
    forced = arch.mamba.model_copy(update={"ssm_dtype": "float32"})
    assert mamba_state_bytes(forced, 1, 2) == 2048 * 2 * 2


def test_full_attn_idxs_without_layer_types() -> None:
    cfg = {k: v for k, v in TINY.items() if k != "layer_types"}
    arch = read_arch({**cfg, "full_attn_idxs": [2]})
    assert arch.layer_kinds == [LayerKind.MAMBA, LayerKind.MAMBA, LayerKind.FULL, LayerKind.MAMBA]


def test_lfm2_moe_uses_hidden_size_and_its_dense_layers() -> None:
    arch = read_arch({**TINY, "model_type": "lfm2_moe", "architectures": ["Lfm2MoeForCausalLM"], "conv_dim": 64,
                      "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64, "num_dense_layers": 2})
    assert arch.mamba is not None and arch.mamba.intermediate_size == 128  # hidden_size, not conv_dim
    assert arch.moe is not None and arch.moe.dense_layers == 2
