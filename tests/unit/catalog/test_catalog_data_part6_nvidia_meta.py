"""Data checks for the catalog entries of round 10: NVIDIA-Nemotron-3-Nano-30B-A3B (BF16 and FP8),
Llama-4-Maverick-17B-128E-Instruct, Qwen3-Next-80B-A3B-Thinking and Qwen3-VL-235B-A22B-Instruct.

As in parts 1-5 the figures are not trusted because they are written down: every weight figure is a
published parameter count (the HF total quoted in public sources), and the tests re-derive it from the
config's shapes with the arithmetic written out below, so a wrong config or a wrong count fails. Each
formula is first checked on a count it was not written from: the Nemotron-H formula on
Nemotron-Nano-9B-v2 (already in the catalog, its own published count), the Llama 4 formula on
Llama-4-Scout, the Qwen3-VL and Qwen3-Next formulas on the entries part 3 checks.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import assert_entry_basics, assert_weights_add_up
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog.test_catalog_data_part3 import (
    _qwen3_text_params,
    _qwen3_vl_vision_params,
    _qwen35_text_params,
)

PART6_IDS: tuple[str, ...] = (
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8",
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
    "Qwen/Qwen3-Next-80B-A3B-Thinking",
    "Qwen/Qwen3-VL-235B-A22B-Instruct",
)

# published totals (sources in each entry's params_source)
NANO_BF16_HF_TOTAL = 31_577_937_344  # HF total of the BF16 repo: leaves out the 2,944 F32 router biases
NANO_ALL_TENSORS = 31_577_940_288  # every tensor element (GGUF n_params of the conversions)
NANO_FP8_HF_TOTAL = 31_577_946_256
NANO_NVFP4_HF_TOTAL = 18_237_772_608  # the NVFP4 sibling, not in the catalog: checks the exclude list
NANO_9B_V2_COUNT = 8_888_227_328
SCOUT_COUNT = 108_641_793_536
MAVERICK_COUNT = 401_583_781_376
QWEN3_VL_235B_COUNT = 235_670_022_896
QWEN3_235B_COUNT = 235_093_634_560
QWEN3_NEXT_COUNT = 81_324_862_720


# --------------------------------------------------------------------------- keys, sources, bytes


@pytest.mark.parametrize("model_id", PART6_IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["variant"] in ("bf16", "fp8")
    assert (entry["base_model"] == entry["id"]) == (entry["variant"] == "bf16")
    assert (entry["config"].get("quantization_config") is not None) == (entry["variant"] == "fp8")
    assert entry["weights_bytes_kind"] == "params_x_dtype"
    assert_weights_add_up(entry)


def test_the_planner_finds_and_reads_them() -> None:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import catalog_siblings, entry_to_metadata, find_entry

    for model_id in PART6_IDS:
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        arch = read_arch(found.config)
        text = found.config.get("text_config") or found.config
        assert arch.num_hidden_layers == text["num_hidden_layers"]
        assert entry_to_metadata(found).tensor_bytes == found.weights_bytes
    # the FP8 release is listed as a variant of the BF16 one
    ids = {e.id for e in catalog_siblings("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")}
    assert ids == {"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8"}


# --------------------------------------------------------------------------- Nemotron-H


def nemotron_h_params(c: dict[str, Any]) -> int:
    """Nemotron-H (vLLM nemotron_h.py / HF modeling_nemotron_h): one pre-mixer RMSNorm per block, then per
    hybrid_override_pattern character
      M  Mamba-2: in_proj h -> (inner + conv_dim + heads) with inner = mamba_num_heads x mamba_head_dim and
         conv_dim = inner + 2 x n_groups x ssm_state_size; depthwise conv1d over conv_dim (kernel + bias);
         A_log, D, dt_bias (heads each); gated RMSNorm (inner); out_proj inner -> h
      *  attention: q, o (h x heads x head_dim), k, v (h x kv_heads x head_dim), no biases
      -  MLP: relu2 up (h -> intermediate) and down, no gate
      E  MoE: router (experts x h) + its e_score_correction_bias (experts), routed experts of relu2
         up/down (moe_intermediate_size), one shared expert of the same kind
    plus embeddings and an untied lm_head (vocab x h each) and the final norm."""
    h, pattern = c["hidden_size"], c["hybrid_override_pattern"]
    heads, inner = c["mamba_num_heads"], c["mamba_num_heads"] * c["mamba_head_dim"]
    conv_dim = inner + 2 * c["n_groups"] * c["ssm_state_size"]
    mamba = h * (inner + conv_dim + heads) + conv_dim * (c["conv_kernel"] + 1) + 3 * heads + inner + inner * h
    hd = c["head_dim"]
    attention = 2 * h * c["num_attention_heads"] * hd + 2 * h * c["num_key_value_heads"] * hd
    mlp = 2 * h * c["intermediate_size"]
    moe = 0
    if "n_routed_experts" in c:
        e = c["n_routed_experts"]
        moe = (e * h + e + e * 2 * h * c["moe_intermediate_size"]
               + c.get("n_shared_experts", 1) * 2 * h * c["moe_shared_expert_intermediate_size"])
    mixer = {"M": mamba, "*": attention, "-": mlp, "E": moe}
    assert not c.get("tie_word_embeddings")
    return sum(mixer[ch] + h for ch in pattern) + 2 * c["vocab_size"] * h + h


def test_the_nemotron_h_formula_on_nano_9b_v2() -> None:
    """Nemotron-Nano-9B-v2 (27 M, 4 *, 25 -): a Mamba block 4,480 x (10,240 + 12,288 + 128) + 12,288 x 5 +
    384 + 10,240 + 10,240 x 4,480 = 147,411,584; attention 2 x 4,480 x 5,120 + 2 x 4,480 x 1,024 =
    55,050,240; MLP 2 x 4,480 x 15,680 = 140,492,800; 56 norms; 2 x 131,072 x 4,480 + 4,480 -> its
    published 8,888,227,328, a count the formula was not written from."""
    c = _load("nvidia/NVIDIA-Nemotron-Nano-9B-v2")["config"]
    assert nemotron_h_params(c) == NANO_9B_V2_COUNT


def test_nemotron_3_nano_count_follows_from_the_config() -> None:
    """Nano-3 (23 M, 23 E, 6 *; hidden 2,688): Mamba 2,688 x 10,304 + 6,144 x 5 + 192 + 4,096 + 4,096 x
    2,688 = 38,742,208; attention 2 x 2,688 x 4,096 + 2 x 2,688 x 256 = 23,396,352; MoE 128 x 2,688 + 128
    + 128 x 2 x 2,688 x 1,856 + 2 x 2,688 x 3,712 = 1,297,465,472; 52 norms, 2 x 131,072 x 2,688 + 2,688
    -> 31,577,940,288, every tensor. The Hub total leaves out the 23 x 128 F32 correction biases."""
    entry = _load("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    c = entry["config"]
    pattern = c["hybrid_override_pattern"]
    assert (len(pattern), pattern.count("M"), pattern.count("E"), pattern.count("*")) == (52, 23, 23, 6)
    assert nemotron_h_params(c) == NANO_ALL_TENSORS
    assert NANO_ALL_TENSORS - NANO_BF16_HF_TOTAL == pattern.count("E") * c["n_routed_experts"] == 2_944
    assert entry["params_by_dtype"] == {"BF16": NANO_BF16_HF_TOTAL, "F32": 2_944}
    assert entry["weights_bytes"] == 63_155_886_464


def _nano_quantized_linears(c: dict[str, Any], exclude: list[str]) -> tuple[int, int]:
    """(elements, count) of the Linear weights ModelOpt quantizes: every routed and shared expert up/down
    of the MoE blocks and the in/out projections of the Mamba blocks not in exclude_modules (attention
    q/k/v/o are all excluded; conv1d is never a quantized GEMM)."""
    h, pattern = c["hidden_size"], c["hybrid_override_pattern"]
    inner = c["mamba_num_heads"] * c["mamba_head_dim"]
    in_proj_out = 2 * inner + 2 * c["n_groups"] * c["ssm_state_size"] + c["mamba_num_heads"]
    skipped = set(exclude)
    elements = count = 0
    for i, ch in enumerate(pattern):
        if ch == "E":
            e = c["n_routed_experts"]
            elements += e * 2 * h * c["moe_intermediate_size"] + 2 * h * c["moe_shared_expert_intermediate_size"]
            count += 2 * e + 2
        elif ch == "M":
            names = (f"backbone.layers.{i}.mixer.in_proj", f"backbone.layers.{i}.mixer.out_proj")
            assert (names[0] in skipped) == (names[1] in skipped)
            if names[0] not in skipped:
                elements += h * in_proj_out + inner * h
                count += 2
        elif ch == "*":
            assert all(f"backbone.layers.{i}.mixer.{p}_proj" in skipped for p in "qkvo")
    return elements, count


def test_nemotron_3_nano_fp8_split_and_scales() -> None:
    """FP8: the experts (23 x (128 x 2 x 2,688 x 1,856 + 2 x 2,688 x 3,712)) and 17 of 23 Mamba layers
    (in_proj 2,688 x 10,304 + out_proj 4,096 x 2,688) = 30,491,811,840 FP8 weights. The published FP8
    total is every BF16-release tensor plus 5,968 = one scale for each of the 5,968 FP8 linears; the same
    exclude list with NVFP4's packing (two 4-bit values per byte, one FP8 scale per 16) gives the NVFP4
    sibling's published total exactly, so the list of BF16 modules is right."""
    fp8, bf16 = _load("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8"), _load("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    c = fp8["config"]
    q = c["quantization_config"]
    assert q["quantization"]["quant_algo"] == "FP8" and q["quantization"]["kv_cache_quant_algo"] == "FP8"
    assert {k: v for k, v in c.items() if k != "quantization_config"} == bf16["config"]
    elements, linears = _nano_quantized_linears(c, q["quantization"]["exclude_modules"])
    assert (elements, linears) == (30_491_811_840, 5_968)
    assert fp8["params_by_dtype"]["F8_E4M3"] == elements
    assert NANO_FP8_HF_TOTAL - NANO_ALL_TENSORS == linears
    assert sum(fp8["params_by_dtype"].values()) == NANO_FP8_HF_TOTAL
    assert fp8["params_by_dtype"]["F32"] == 2_944 + linears  # router biases + one scale per FP8 linear
    assert fp8["params_by_dtype"]["BF16"] == NANO_ALL_TENSORS - elements - 2_944
    assert NANO_ALL_TENSORS - elements + elements // 2 + elements // 16 == NANO_NVFP4_HF_TOTAL
    assert fp8["weights_bytes"] == 32_664_098_496
    assert fp8["base_model"] == bf16["id"]


def test_nemotron_3_nano_reads_as_a_hybrid_with_fp8_kv() -> None:
    from vllmkit.arch import read_arch
    from vllmkit.arch.model import LayerKind
    from vllmkit.estimate.specs import kv_dtype_bytes

    bf16 = read_arch(_load("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")["config"])
    assert bf16.layer_kinds.count(LayerKind.MAMBA) == 23 and bf16.layer_kinds.count(LayerKind.FULL) == 6
    assert bf16.mamba is not None and bf16.mamba.intermediate_size == 4_096
    assert bf16.moe is not None and (bf16.moe.num_experts, bf16.moe.experts_per_token) == (128, 6)
    fp8 = read_arch(_load("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8")["config"])
    assert fp8.quantization is not None and fp8.quantization.method == "modelopt"
    assert kv_dtype_bytes("auto", fp8) == 1 and kv_dtype_bytes("auto", bf16) == 2


# --------------------------------------------------------------------------- Llama 4


def llama4_text_params(t: dict[str, Any]) -> int:
    """Llama 4 language model: q/k/v/o without bias (the QK norm is a parameter-free L2 norm), two RMSNorms
    per layer; every interleave_moe_layer_step-th layer is MoE (router experts x h, experts of
    gate/up/down intermediate_size, one shared expert of intermediate_size), the others a dense SwiGLU of
    intermediate_size_mlp; untied embeddings and lm_head; final norm."""
    h, layers, hd = t["hidden_size"], t["num_hidden_layers"], t["head_dim"]
    attention = 2 * h * t["num_attention_heads"] * hd + 2 * h * t["num_key_value_heads"] * hd
    e, inter = t["num_local_experts"], t["intermediate_size"]
    moe = h * e + e * 3 * h * inter + 3 * h * inter
    dense = 3 * h * t["intermediate_size_mlp"]
    step = t["interleave_moe_layer_step"]
    moe_layers = sum(1 for i in range(layers) if (i + 1) % step == 0)
    return layers * (attention + 2 * h) + moe_layers * moe + (layers - moe_layers) * dense + 2 * t["vocab_size"] * h + h


def test_maverick_count_follows_from_the_config() -> None:
    """Scout (48 MoE layers of 16 experts): text 107,769,861,120, so its vision tower and projector are
    108,641,793,536 - 107,769,861,120 = 871,932,416. Maverick: 24 MoE layers (128 x 3 x 5,120 x 8,192 +
    shared + router) and 24 dense (3 x 5,120 x 16,384), same attention, embeddings: 400,711,848,960; with
    the same vision tower (identical vision_config) 401,583,781,376, the published count."""
    scout, maverick = _load("meta-llama/Llama-4-Scout-17B-16E-Instruct"), _load("meta-llama/Llama-4-Maverick-17B-128E-Instruct")
    scout_text = llama4_text_params(scout["config"]["text_config"])
    maverick_text = llama4_text_params(maverick["config"]["text_config"])
    assert scout_text == 107_769_861_120 and maverick_text == 400_711_848_960
    assert maverick["config"]["vision_config"] == scout["config"]["vision_config"]
    vision = SCOUT_COUNT - scout_text
    assert vision == 871_932_416
    assert maverick_text + vision == MAVERICK_COUNT
    assert sum(scout["params_by_dtype"].values()) == SCOUT_COUNT
    assert maverick["params_by_dtype"] == {"BF16": MAVERICK_COUNT}


def test_maverick_reads_as_chunked_attention_with_nope_layers() -> None:
    from vllmkit.arch import read_arch
    from vllmkit.arch.model import LayerKind

    arch = read_arch(_load("meta-llama/Llama-4-Maverick-17B-128E-Instruct")["config"])
    assert arch.attention_chunk_size == 8192
    assert arch.layer_kinds.count(LayerKind.FULL) == 12 and arch.layer_kinds.count(LayerKind.CHUNKED) == 36
    assert arch.moe is not None and arch.moe.num_experts == 128


# --------------------------------------------------------------------------- Qwen


def test_qwen3_vl_235b_count_follows_from_the_config() -> None:
    """Language model = Qwen3-235B-A22B's shapes (94 layers, 128 experts of 1,536): 235,093,634,560, the
    count of that entry; the ViT of Qwen3-VL-30B-A3B with a 4,096-wide merger output: 576,388,336."""
    entry = _load("Qwen/Qwen3-VL-235B-A22B-Instruct")
    config = entry["config"]
    text = _qwen3_text_params(config["text_config"], config.get("tie_word_embeddings", False))
    vision = _qwen3_vl_vision_params(config["vision_config"])
    assert text == QWEN3_235B_COUNT == sum(_load("Qwen/Qwen3-235B-A22B")["params_by_dtype"].values())
    assert vision == 576_388_336
    assert text + vision == QWEN3_VL_235B_COUNT
    assert entry["params_by_dtype"] == {"BF16": QWEN3_VL_235B_COUNT}


def test_qwen3_next_thinking_count_follows_from_the_config() -> None:
    """Same shapes as the Instruct release (the Qwen3-Next formula of part 3, with the MTP layer)."""
    thinking = _load("Qwen/Qwen3-Next-80B-A3B-Thinking")
    assert _qwen35_text_params(thinking["config"]) == QWEN3_NEXT_COUNT
    assert thinking["params_by_dtype"] == {"BF16": QWEN3_NEXT_COUNT}
    assert thinking["config"] == _load("Qwen/Qwen3-Next-80B-A3B-Instruct")["config"]
