"""ROCm FP8 row padding of linear weights at load, by model shape, TP, checkpoint format and release.

vLLM rule (quantization/utils/fp8_utils.py `_maybe_pad_fp8_weight`, 0.11.0 ... 0.32; Fp8LinearMethod
`add_padding_to_weight` / `_maybe_pad_weight` in 0.8.0 ... 0.10.x; absent in 0.7.3): on ROCm with
VLLM_ROCM_FP8_PADDING=1 (default), an FP8 weight [N, K] with K a multiple of 512 bytes is replaced by
F.pad(w, (0, 256))[..., :-256], which keeps N x (K + 256) bytes allocated. Expected numbers below are
worked by hand from the model configs (row counts per rank x 256 B), not from the code.
"""

from __future__ import annotations

import pytest

from vllmkit.arch import read_arch
from vllmkit.engine.versions import rules_for
from vllmkit.estimate.weights import rocm_fp8_padding
from vllmkit.plan.variants import fp8_linears_padded

LLAMA_70B = {  # meta-llama/Llama-3.1-70B-Instruct config.json shapes
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 8192,
    "intermediate_size": 28672, "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
    "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "fp8", "activation_scheme": "static"},
}

DEEPSEEK_V3 = {  # deepseek-ai/DeepSeek-V3 config.json shapes (block-quantized FP8 checkpoint)
    "model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168,
    "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
    "num_attention_heads": 128, "num_key_value_heads": 128, "n_routed_experts": 256, "n_shared_experts": 1,
    "num_experts_per_tok": 8, "first_k_dense_replace": 3, "q_lora_rank": 1536, "kv_lora_rank": 512,
    "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "vocab_size": 129280,
    "max_position_embeddings": 163840, "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
                            "weight_block_size": [128, 128]},
}


def test_llama_70b_per_rank_padding_by_tp() -> None:
    arch = read_arch(LLAMA_70B)
    # TP=8: qkv (8192 + 2 x 1024) / 8 = 1280 rows (K 8192); o 8192 rows (K 8192/8 = 1024, a multiple of
    # 512); gate_up 2 x 28672 / 8 = 7168 rows; down 8192 rows (K 28672/8 = 3584 = 7 x 512)
    assert rocm_fp8_padding(arch, 8) == [256 * (1280 + 8192 + 7168 + 8192)] * 80
    # TP=1: qkv 10240, o 8192, gate_up 57344, down 8192
    assert sum(rocm_fp8_padding(arch, 1)) == 80 * 256 * (10240 + 8192 + 57344 + 8192)


def test_row_parallel_weights_are_padded_only_when_their_rank_slice_is_512_aligned() -> None:
    # 17408 / 8 = 2176 and 6144 / 8 = 768 are not multiples of 512: at TP=8 only column-parallel
    # weights of a Qwen3.5-27B-shaped full-attention layer grow: qkv = gated q 2 x 24 x 256 / 8 = 1536 rows
    # + one replicated K and V head each (4 KV heads < TP 8: QKVParallelLinear keeps one head a rank)
    # 2 x 256 = 2048 rows; gate_up 34816 / 8 = 4352 rows
    cfg = {"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": 5120,
           "intermediate_size": 17408, "num_hidden_layers": 2, "num_attention_heads": 24, "num_key_value_heads": 4,
           "head_dim": 256, "attn_output_gate": True, "vocab_size": 1000, "max_position_embeddings": 4096,
           "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}
    arch = read_arch(cfg)
    assert arch.attn_output_gate
    assert rocm_fp8_padding(arch, 8) == [256 * (2048 + 4352)] * 2
    assert rocm_fp8_padding(arch, 2) == [256 * (7168 + 5120 + 17408 + 5120)] * 2


def test_deepseek_v3_mla_and_shared_experts_padded_routed_experts_not() -> None:
    arch = read_arch(DEEPSEEK_V3)
    # TP=8, per MLA layer: kv_a 576 (K 7168), q_a 1536 (K 7168), q_b 128/8 x 192 = 3072 (K 1536),
    # kv_b 16 x 256 = 4096 (K 512), o 7168 (K 128 x 128 / 8 = 2048) -> 16448 rows.
    # Dense layers 0-2: gate_up 2 x 18432 / 8 = 4608 rows; down K 18432/8 = 2304 is not 512-aligned.
    # MoE layers: the shared expert's gate_up 2 x 2048 / 8 = 512 rows (down K 256: not aligned);
    # routed experts use the fused-MoE path, which does not pad.
    pads = rocm_fp8_padding(arch, 8)
    assert pads[:3] == [256 * (16448 + 4608)] * 3
    assert pads[3:] == [256 * (16448 + 512)] * 58


def _ct(strategy: str) -> dict:
    return {**LLAMA_70B, "quantization_config": {
        "quant_method": "compressed-tensors",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": 8, "type": "float", "strategy": strategy, "symmetric": True, "dynamic": False}}}}}


@pytest.mark.parametrize(("cfg", "device", "version", "expected"), [
    (LLAMA_70B, "rocm", "0.8.0", True),  # Fp8LinearMethod.add_padding_to_weight appears in 0.8.0
    (LLAMA_70B, "rocm", "0.7.3", False),  # 0.7.3 fp8.py has no padding and no VLLM_ROCM_FP8_PADDING
    (LLAMA_70B, "cuda", "0.28.0", False),  # current_platform.is_rocm() only
    (DEEPSEEK_V3, "rocm", "0.28.0", True),  # block scales: process_fp8_weight_block_strategy pads
    (_ct("tensor"), "rocm", "0.11.0", True),  # compressed-tensors W8A8-FP8 calls the padding from 0.11.0
    (_ct("tensor"), "rocm", "0.10.2", False),
    (_ct("channel"), "rocm", "0.28.0", False),  # process_fp8_weight_channel_strategy does not pad
    ({**LLAMA_70B, "quantization_config": {"quant_method": "quark"}}, "rocm", "0.28.0", False),
    ({k: v for k, v in LLAMA_70B.items() if k != "quantization_config"}, "rocm", "0.28.0", False),
])
def test_which_checkpoints_and_releases_pad(cfg: dict, device: str, version: str, expected: bool) -> None:
    assert fp8_linears_padded(read_arch(cfg), rules_for(version), device) is expected


def test_load_growth_keeps_its_reason_per_pp_stage() -> None:
    """Each reason's bytes are summed over the layers of each PP stage and stay apart: 4 layers over
    PP=2 (get_pp_indices: layers 0-1 and 2-3), growth A = 10, 20, 30, 40 B a layer and B = 1 B a layer,
    so stage 0 grows by 30 (A) + 2 (B) and stage 1 by 70 (A) + 2 (B); the stage's weight bytes include
    both (here the body split is what it is without growth, plus those 32 / 72 B)."""
    from vllmkit.estimate.weights import LoadGrowth, split_weights

    arch = read_arch({**{k: v for k, v in LLAMA_70B.items() if k != "quantization_config"},
                      "num_hidden_layers": 4})
    total = 10 * 1024**3
    plain = split_weights(arch, total, tp=1, pp=2)
    grown = split_weights(arch, total, tp=1, pp=2,
                          growth=(LoadGrowth((10, 20, 30, 40), "A"), LoadGrowth((1, 1, 1, 1), "B")))
    assert grown.per_stage_growth == [[("A", 30), ("B", 2)], [("A", 70), ("B", 2)]]
    assert grown.per_stage_padding == [32, 72]
    assert [g - p for g, p in zip(grown.per_stage_bytes, plain.per_stage_bytes, strict=True)] == [32, 72]
    assert grown.total_bytes - plain.total_bytes == 104
