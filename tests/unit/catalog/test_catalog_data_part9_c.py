"""Data checks for the catalog entries of round 9 (c): Qwen/Qwen1.5-MoE-A2.7B, RedHatAI/Qwen2.5-7B-Instruct-fp8-dynamic,
RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8, moonshotai/Kimi-Dev-72B and moonshotai/Kimi-VL-A3B-Instruct.

As in parts 1-8 the figures are not trusted because they are written down: every entry's parameter count is
re-derived here from its config's tensor shapes (the formulas are written out below) and must equal the total of
its params_by_dtype; where a count was published independently (Qwen1.5-MoE-A2.7B, the Qwen2.5-7B / 72B parents,
DeepSeek-V2-Lite for the MLA formula) the derivation must give that number too.

Independent cross-check: real vLLM 0.19.0 startups on H100s printed "Model loading took X GiB" per GPU
(https://github.com/llm-d-incubation/llm-d-planner/blob/3c876c8/accuracy/results/v0.19.0/results_raw.csv, column
weight_memory_gib, GiB = 2^30 B, 2 decimals). The planner's per-GPU weights for the same request must be within 1 %
of each logged figure, except where the planner itself (not the entry) is known to miss it: those cases are listed
in PLANNER_WEIGHT_MISSES with the measured numbers and skipped.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import CATALOG_PLAN_ENV as ENV
from tests.unit.catalog._catalog_checks import (
    GIB,
    W8A8_ITEMSIZE,
    assert_entry_basics,
    assert_weights_from_the_split_alone,
    split_bytes,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog.test_catalog_data_part4 import dense_params

QWEN_MOE = "Qwen/Qwen1.5-MoE-A2.7B"
FP8 = "RedHatAI/Qwen2.5-7B-Instruct-fp8-dynamic"
W8A8 = "RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8"
KIMI_DEV = "moonshotai/Kimi-Dev-72B"
KIMI_VL = "moonshotai/Kimi-VL-A3B-Instruct"
IDS: tuple[str, ...] = (QWEN_MOE, FP8, W8A8, KIMI_DEV, KIMI_VL)
VARIANTS = {QWEN_MOE: "bf16", FP8: "fp8", W8A8: "int8", KIMI_DEV: "bf16", KIMI_VL: "bf16"}
PARENTS = {FP8: "Qwen/Qwen2.5-7B-Instruct", W8A8: "Qwen/Qwen2.5-7B-Instruct", KIMI_DEV: "Qwen/Qwen2.5-72B-Instruct"}


# independently published figures (see each entry's params_source / weights_source)
QWEN_MOE_COUNT = 14_315_784_192  # keras-hub preset qwen1.5_moe_2.7b_en 'params'; a public parameter table
QWEN25_7B_COUNT = 7_615_616_512  # HF API count of Qwen/Qwen2.5-7B-Instruct (catalog)
QWEN25_72B_COUNT = 72_706_203_648  # Qwen/Qwen2.5-72B-Instruct (catalog)
DEEPSEEK_V2_LITE_COUNT = 15_706_484_224  # DeepSeek-V2-Lite (catalog part 2): same MLA/MoE layout as Kimi-VL's LM
KIMI_VL_THINKING_SHARDS_GB = (4.99, 5, 5, 5, 5, 5, 2.84)  # HF tree of the same-architecture Kimi-VL-A3B-Thinking
QWEN_MOE_SHARDS_GB = (4, 4, 3.99, 4, 3.99, 4, 3.99, 0.668)  # HF tree of Qwen/Qwen1.5-MoE-A2.7B

# vLLM 0.19.0 on H100-80GB, "Model loading took X GiB" (per GPU), llm-d-planner results_raw.csv @3c876c8
VLLM_019_H100_WEIGHTS_GIB: tuple[tuple[str, int, float], ...] = (
    (QWEN_MOE, 1, 26.67),
    (FP8, 1, 8.14),
    (W8A8, 1, 8.14),
    (KIMI_DEV, 2, 67.82),
    (KIMI_DEV, 4, 34.01),
    (KIMI_VL, 1, 30.74),
    (KIMI_VL, 2, 15.53),
)

# Planner misses > 1 % whose cause is in the planner, not in the entry: (model, TP, logged GiB, planner GiB as
# measured when this file was written, why). Kimi-VL at TP2: the planner splits the whole checkpoint over the TP
# ranks except the MLA kv_a projections and the routers, but vLLM keeps more of it whole on every rank -- the log:
# 2 x 15.53 - 30.74 = 0.32 GiB held twice; the planner: 2 x 15.33 - 30.58 = 0.08 GiB (estimate/weights.py has no
# term for a vision tower / projector that vLLM does not shard). TP1 of the same entry is within 0.6 % of its log.
# A listed case is skipped while the miss lasts and asserted again once the planner is within 1 %.
PLANNER_WEIGHT_MISSES: tuple[tuple[str, int, float, float, str], ...] = (
    (KIMI_VL, 2, 15.53, 15.33, "MoonViT tower / projector kept whole on each rank by vLLM; the planner splits them"),
)


# --------------------------------------------------------------------------- keys, sources, bytes


@pytest.mark.parametrize("model_id", IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["variant"] == VARIANTS[model_id]
    # safetensors element sizes, with the INT8 of the w8a8 checkpoint
    assert entry["weights_bytes"] == split_bytes(entry["params_by_dtype"], W8A8_ITEMSIZE)
    assert_weights_from_the_split_alone(entry)
    quantized = entry["config"].get("quantization_config") is not None
    assert quantized == (entry["variant"] in ("fp8", "int8"))
    if model_id in PARENTS:
        assert entry["base_model"] in (PARENTS[model_id], model_id)
    else:
        assert entry["base_model"] == model_id


@pytest.mark.parametrize("model_id", IDS)
def test_rebuilt_configs_and_derived_counts_say_so(model_id: str) -> None:
    """No config.json of these repositories was found verbatim: each config says it was rebuilt and from what."""
    entry = _load(model_id)
    assert entry["config_source"].startswith("REBUILT") and "not verbatim" in entry["config_source"]
    if model_id != QWEN_MOE:  # Qwen1.5-MoE's count is published; the others are derived from the shapes
        assert entry["params_source"].startswith("DERIVED")
        assert entry["weights_source"].startswith("DERIVED")


def test_the_qwen_moe_config_has_the_byte_size_the_hf_tree_shows() -> None:
    """https://huggingface.co/Qwen/Qwen1.5-MoE-A2.7B/tree/main lists config.json at 919 Bytes; the rebuilt dict,
    serialised the HF way (indent 2, trailing newline), has exactly that size -- a missing or extra key fails."""
    config = _load(QWEN_MOE)["config"]
    assert len((json.dumps(config, indent=2) + "\n").encode()) == 919


# --------------------------------------------------------------------------- Qwen1.5-MoE-A2.7B (Qwen2MoE)


def qwen2_moe_params(c: dict[str, Any]) -> int:
    """Qwen2MoE: per layer q/k/v (with biases) and o; 60 routed experts gate/up/down of moe_intermediate_size, one
    shared expert of shared_expert_intermediate_size with its sigmoid gate (hidden -> 1), the router (hidden ->
    experts), 2 RMSNorms; untied embeddings and final norm. decoder_sparse_step 1: every layer is MoE."""
    h, heads, kv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    hd = h // heads
    q, k = heads * hd, kv * hd
    attn = h * q + 2 * h * k + q * h + (q + 2 * k)
    assert c["decoder_sparse_step"] == 1 and not c.get("mlp_only_layers")
    experts = c["num_experts"] * 3 * h * c["moe_intermediate_size"]
    shared = 3 * h * c["shared_expert_intermediate_size"] + h
    router = c["num_experts"] * h
    per_layer = attn + experts + shared + router + 2 * h
    embed = c["vocab_size"] * h * (1 if c["tie_word_embeddings"] else 2)
    return c["num_hidden_layers"] * per_layer + embed + h


def test_the_qwen_moe_count_follows_from_the_config() -> None:
    """Per layer q, k, v, o 4 x 2048^2 = 16,777,216 + biases 6,144; experts 60 x 3 x 2048 x 1408 = 519,045,120;
    shared expert 3 x 2048 x 5632 = 34,603,008 + gate 2,048; router 60 x 2048 = 122,880; norms 4,096
    -> 570,560,512; x 24 = 13,693,452,288 + 2 x 151,936 x 2048 = 622,329,856 + 2,048 = 14,315,784,192,
    the published count (keras-hub, a public parameter table)."""
    entry = _load(QWEN_MOE)
    c = entry["config"]
    per_layer = 16_777_216 + 6_144 + 519_045_120 + 34_603_008 + 2_048 + 122_880 + 4_096
    assert per_layer == 570_560_512
    assert 24 * per_layer + 622_329_856 + 2_048 == qwen2_moe_params(c) == QWEN_MOE_COUNT
    assert entry["params_by_dtype"] == {"BF16": QWEN_MOE_COUNT}
    assert sum(entry["params_by_dtype"].values()) == qwen2_moe_params(c)
    shards = sum(QWEN_MOE_SHARDS_GB) * 1e9  # the HF tree rounds each shard to 10 MB (the last to 1 MB)
    assert abs(entry["weights_bytes"] - shards) < 8 * 0.005e9


@pytest.mark.parametrize(("key", "delta"), [
    ("moe_intermediate_size", 64), ("num_experts", 4), ("shared_expert_intermediate_size", 128),
    ("num_hidden_layers", 1), ("vocab_size", 64),
])
def test_a_wrong_qwen_moe_value_breaks_the_count(key: str, delta: int) -> None:
    c = copy.deepcopy(_load(QWEN_MOE)["config"])
    c[key] += delta
    assert qwen2_moe_params(c) != QWEN_MOE_COUNT


# --------------------------------------------------------------------------- RedHatAI Qwen2.5-7B FP8-dynamic / W8A8


def qwen2_w8_split(c: dict[str, Any], eight_bit: str) -> dict[str, int]:
    """A Qwen2 checkpoint whose decoder Linears are 8-bit (FP8 E4M3 or INT8), symmetric per output channel:
    one BF16 weight_scale per output row, no zero point, no input scale (dynamic per-token activations);
    embed_tokens, lm_head (ignored), the RMSNorms and the q/k/v biases stay BF16."""
    h, inter, layers = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    kv = c["num_key_value_heads"] * (h // c["num_attention_heads"])
    linears = [(h, h), (kv, h), (kv, h), (h, h), (inter, h), (inter, h), (h, inter)]  # (out, in)
    eight = layers * sum(o * i for o, i in linears)
    scales = layers * sum(o for o, _ in linears)
    bf16 = 2 * c["vocab_size"] * h + (2 * layers + 1) * h + layers * (h + 2 * kv) + scales
    return {"BF16": bf16, eight_bit: eight}


@pytest.mark.parametrize(("model_id", "eight_bit", "scheme"), [
    (FP8, "F8_E4M3", ("float", "float-quantized")), (W8A8, "I8", ("int", "int-quantized")),
])
def test_the_8bit_qwen_splits_follow_from_the_config(model_id: str, eight_bit: str, scheme: tuple[str, str]) -> None:
    """28 x (2 x 3584^2 + 2 x 512 x 3584 + 3 x 3584 x 18944) = 6,525,288,448 8-bit values; BF16: embeddings
    2 x 152,064 x 3584 = 1,089,994,752 + 57 norms x 3584 = 204,288 + biases 28 x 4,608 = 129,024 + one scale per
    output row 28 x 49,664 = 1,390,592 -> 1,091,718,656. Without the scales: 7,615,616,512, the parent's HF count."""
    entry, parent = _load(model_id), _load(PARENTS[model_id])
    c = entry["config"]
    split = qwen2_w8_split(c, eight_bit)
    assert split == entry["params_by_dtype"] == {"BF16": 1_091_718_656, eight_bit: 6_525_288_448}
    assert sum(split.values()) - 28 * 49_664 == dense_params(c) == QWEN25_7B_COUNT
    assert QWEN25_7B_COUNT == sum(parent["params_by_dtype"].values())
    assert entry["weights_bytes"] == 6_525_288_448 + 2 * 1_091_718_656 == 8_708_725_760
    # an 8-bit copy keeps every shape of its parent; only quantization_config is added
    assert {k: v for k, v in c.items() if k != "quantization_config"} == parent["config"]
    q = c["quantization_config"]
    group = q["config_groups"]["group_0"]
    assert q["quant_method"] == "compressed-tensors" and q["ignore"] == ["lm_head"]
    assert (group["weights"]["type"], q["format"]) == scheme
    assert group["weights"]["strategy"] == "channel" and group["weights"]["num_bits"] == 8
    assert group["input_activations"]["strategy"] == "token" and group["input_activations"]["dynamic"] is True


def test_the_two_8bit_checkpoints_have_the_same_bytes_as_the_logs_say() -> None:
    """vLLM 0.19.0 printed 8.14 GiB for both: the same shapes, 1 B per weight either way."""
    assert _load(FP8)["weights_bytes"] == _load(W8A8)["weights_bytes"]


# --------------------------------------------------------------------------- Kimi-Dev-72B


def test_kimi_dev_has_the_qwen25_72b_shapes_and_count() -> None:
    """Per layer 877,684,736 (see part 8's Qwen2-72B check); x 80 + 2 x 152,064 x 8,192 + 8,192 = 72,706,203,648."""
    entry, parent = _load(KIMI_DEV), _load(PARENTS[KIMI_DEV])
    assert entry["config"]["architectures"] == ["Qwen2ForCausalLM"]
    assert entry["config"] == parent["config"]
    assert dense_params(entry["config"]) == QWEN25_72B_COUNT == sum(parent["params_by_dtype"].values())
    assert 80 * 877_684_736 + 2 * 152_064 * 8_192 + 8_192 == QWEN25_72B_COUNT
    assert entry["params_by_dtype"] == {"BF16": QWEN25_72B_COUNT}
    assert entry["weights_bytes"] == 2 * QWEN25_72B_COUNT == parent["index_total_size"]


# --------------------------------------------------------------------------- Kimi-VL-A3B-Instruct


def mla_moe_text_split(t: dict[str, Any]) -> dict[str, int]:
    """A DeepSeek-V2/V3-layout language model in 16-bit (no FP8): MLA per layer q_proj (q_lora_rank null) or
    q_a/q_a_layernorm/q_b, kv_a_proj_with_mqa hidden -> kv_lora_rank + rope, kv_a_layernorm, kv_b kv_lora_rank ->
    heads x (nope + v), o_proj; 2 RMSNorms; the first first_k_dense_replace layers a dense MLP, the others routed
    experts + n_shared_experts x moe_intermediate_size shared MLP + router (hidden -> experts) and, with noaux_tc,
    an F32 e_score_correction_bias per expert; untied embeddings and final norm."""
    h, heads = t["hidden_size"], t["num_attention_heads"]
    nope, rope, v_dim, kv_rank = t["qk_nope_head_dim"], t["qk_rope_head_dim"], t["v_head_dim"], t["kv_lora_rank"]
    q_rank = t.get("q_lora_rank")
    if q_rank:
        q = h * q_rank + q_rank + q_rank * heads * (nope + rope)
    else:
        q = h * heads * (nope + rope)
    attn = q + h * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + v_dim) + heads * v_dim * h
    experts, moe_inter = t["n_routed_experts"], t["moe_intermediate_size"]
    dense_mlp = 3 * h * t["intermediate_size"]
    moe_mlp = experts * 3 * h * moe_inter + 3 * h * t["n_shared_experts"] * moe_inter + experts * h
    k = t["first_k_dense_replace"]
    moe_layers = t["num_hidden_layers"] - k
    assert t.get("moe_layer_freq", 1) == 1 and not t.get("tie_word_embeddings")
    bf16 = t["num_hidden_layers"] * (attn + 2 * h) + k * dense_mlp + moe_layers * moe_mlp
    bf16 += 2 * t["vocab_size"] * h + h
    f32 = moe_layers * experts if t.get("topk_method") == "noaux_tc" else 0
    return {"BF16": bf16, "F32": f32}


def moonvit_params(v: dict[str, Any], text_hidden: int) -> tuple[int, int]:
    """MoonViT: Conv2d(3, hidden, patch) with bias, a learnable init_pos_emb_height x width x hidden position
    embedding, num_hidden_layers x (2 LayerNorms with bias, wqkv hidden -> 3 hidden + bias, wo + bias, fc0 hidden ->
    intermediate + bias, fc1 back + bias), final LayerNorm; the projector: LayerNorm(hidden), Linear(hidden x
    merge^2 -> same) and Linear(-> text hidden), both with bias. Returns (tower, projector)."""
    h, inter, p = v["hidden_size"], v["intermediate_size"], v["patch_size"]
    layer = 2 * 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * inter + inter) + (inter * h + h)
    tower = (3 * p * p * h + h) + v["init_pos_emb_height"] * v["init_pos_emb_width"] * h
    tower += v["num_hidden_layers"] * layer + 2 * h
    merged = h * v["merge_kernel_size"][0] * v["merge_kernel_size"][1]
    projector = 2 * h + (merged * merged + merged) + (merged * text_hidden + text_hidden)
    return tower, projector


def test_the_mla_formula_on_a_model_it_was_not_written_from() -> None:
    """DeepSeek-V2-Lite (catalog part 2, published 15,706,484,224) has the layout of Kimi-VL's language model
    (27 layers, hidden 2048, 16 MLA heads, q_lora_rank null, 1 dense + 26 MoE layers of 64 + 2 experts of 1408)."""
    c = _load("deepseek-ai/DeepSeek-V2-Lite")["config"]
    assert mla_moe_text_split(c) == {"BF16": DEEPSEEK_V2_LITE_COUNT, "F32": 0}  # greedy router: no bias


def test_the_kimi_vl_count_follows_from_the_config() -> None:
    """Language model: per layer MLA 2048 x 3072 + 2048 x 576 + 512 + 512 x 4096 + 2048^2 = 13,763,072 + norms
    4,096; layer 0 MLP 3 x 2048 x 11264 = 69,206,016; layers 1-26 experts 64 x 3 x 2048 x 1408 = 553,648,128 +
    shared 3 x 2048 x 2816 = 17,301,504 + router 131,072; embeddings 2 x 163,840 x 2048 + 2048 -> 15,960,108,544
    BF16 + 26 x 64 = 1,664 F32. MoonViT 416,866,032 (27 layers of 15,239,504), projector 30,679,808.
    Total 16,407,656,048 (HF: '16B'); 32,815,315,424 B = 30.56 GiB."""
    entry = _load(KIMI_VL)
    c = entry["config"]
    assert c["architectures"] == ["KimiVLForConditionalGeneration"] and c["model_type"] == "kimi_vl"
    text = mla_moe_text_split(c["text_config"])
    tower, projector = moonvit_params(c["vision_config"], c["text_config"]["hidden_size"])
    assert text == {"BF16": 15_960_108_544, "F32": 1_664}
    assert 27 * (13_763_072 + 4_096) + 69_206_016 + 26 * (553_648_128 + 17_301_504 + 131_072) + (
        2 * 163_840 * 2048 + 2048) == text["BF16"]
    assert (tower, projector) == (416_866_032, 30_679_808)
    assert entry["params_by_dtype"] == {"BF16": text["BF16"] + tower + projector, "F32": text["F32"]}
    assert sum(entry["params_by_dtype"].values()) == 16_407_656_048
    assert entry["weights_bytes"] == 32_815_315_424
    # the HF tree of Kimi-VL-A3B-Thinking (same architecture) shows 32.83 GB in 7 shards, each rounded to 10 MB
    shards = sum(KIMI_VL_THINKING_SHARDS_GB) * 1e9
    assert abs(entry["weights_bytes"] - shards) < 7 * 0.005e9


def test_the_kimi_vl_language_model_is_deepseek_v2_lite_with_moonlight_changes() -> None:
    """Same MLA and expert shapes as DeepSeek-V2-Lite; the Moonlight backbone widens the vocabulary (163,840) and
    the dense MLP (11,264) and routes with noaux_tc / sigmoid."""
    t, lite = _load(KIMI_VL)["config"]["text_config"], _load("deepseek-ai/DeepSeek-V2-Lite")["config"]
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "kv_lora_rank", "q_lora_rank",
                "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_routed_experts", "n_shared_experts",
                "num_experts_per_tok", "moe_intermediate_size", "first_k_dense_replace"):
        assert t[key] == lite[key], key
    assert (t["vocab_size"], t["intermediate_size"], t["topk_method"]) == (163_840, 11_264, "noaux_tc")


@pytest.mark.parametrize(("key", "delta"), [
    ("moe_intermediate_size", 64), ("n_routed_experts", 8), ("kv_lora_rank", 64), ("num_hidden_layers", 1),
    ("intermediate_size", 256), ("vocab_size", 64),
])
def test_a_wrong_kimi_vl_text_value_breaks_the_count(key: str, delta: int) -> None:
    t = copy.deepcopy(_load(KIMI_VL)["config"]["text_config"])
    t[key] += delta
    assert mla_moe_text_split(t)["BF16"] != 15_960_108_544


def test_the_reader_handles_the_nested_kimi_vl_config() -> None:
    """read_arch takes the language model from text_config (vLLM's hf_text_config): 27 layers, MoE, and a KV cache
    of MLA latents -- 27 layers x (kv_lora_rank 512 + rope 64) x 2 B = 31,104 B a token, the size the vLLM 0.19.0
    TP1 log implies (41.32 GiB for 89,148 blocks of 16 tokens)."""
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import find_entry

    found = find_entry(KIMI_VL)
    assert found is not None and found.id == KIMI_VL
    arch = read_arch(found.config)
    assert arch.num_hidden_layers == 27
    assert arch.moe is not None
    plan = _plan(KIMI_VL, 1)
    assert plan.kv_cache.bytes_per_token == 27 * (512 + 64) * 2 == 31_104
    assert 41.32 * GIB / (89_148 * 16) == pytest.approx(31_104, rel=1e-3)


# --------------------------------------------------------------------------- the planner finds and plans them


@pytest.mark.parametrize("model_id", IDS)
def test_the_planner_finds_these_entries_not_aliases(model_id: str) -> None:
    """RedHatAI ids are not aliased to a neuralmagic entry: find_entry returns these files, case-insensitively
    (the HF repository is spelled RedHatAI/Qwen2.5-7B-Instruct-FP8-dynamic)."""
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import canonical_id, entry_to_metadata, find_entry
    from vllmkit.plan.variants import variant_label

    assert canonical_id(model_id) == model_id
    found = find_entry(model_id)
    assert found is not None and found.id == model_id
    assert variant_label(entry_to_metadata(found), read_arch(found.config)) == VARIANTS[model_id]
    if model_id == FP8:
        upper = find_entry("RedHatAI/Qwen2.5-7B-Instruct-FP8-dynamic")
        assert upper is not None and upper.id == FP8


def _plan(model: str, tp: int):
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    return build_plan(PlanRequest(model=model, source="catalog", gpu="h100", tensor_parallel_size=tp,
                                  max_model_len=8192, gpu_memory_utilization=0.95, vllm_version="0.19.0"), ENV)


_MISSES = {(m, tp): logged for m, tp, logged, _, _ in PLANNER_WEIGHT_MISSES}


@pytest.mark.parametrize(("model_id", "tp", "logged_gib"), VLLM_019_H100_WEIGHTS_GIB)
def test_planner_weights_match_the_vllm_019_log(model_id: str, tp: int, logged_gib: float) -> None:
    """Planner per-GPU weights (benchmarks/accuracy.py reads plan.memory.weights_bytes the same way) within 1 % of
    the 'Model loading took' figure of a real vLLM 0.19.0 H100 start with the same TP and max_model_len 8192."""
    plan = _plan(model_id, tp)
    assert plan.parallel.tensor_parallel_size == tp
    planned = plan.memory.weights_bytes / GIB
    error = abs(planned - logged_gib) / logged_gib
    if (model_id, tp) in _MISSES and error >= 0.01:
        assert _MISSES[(model_id, tp)] == logged_gib
        pytest.skip(f"planner miss recorded in PLANNER_WEIGHT_MISSES: {planned:.2f} vs {logged_gib} GiB logged")
    assert error < 0.01, (planned, logged_gib)
    assert plan.fits


def test_the_logged_tp1_weights_are_the_entry_bytes_to_the_log_rounding() -> None:
    """At TP1 vLLM holds the whole checkpoint: the entries' bytes give the logged GiB to within 0.6 %."""
    for model_id, tp, logged in VLLM_019_H100_WEIGHTS_GIB:
        if tp == 1:
            assert abs(_load(model_id)["weights_bytes"] / GIB - logged) / logged < 0.006, model_id
