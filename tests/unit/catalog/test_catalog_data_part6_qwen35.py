"""Data checks for the Qwen3.5 small dense entries (Qwen3.5-0.8B, 2B, 4B, 9B) and Qwen3.5-122B-A10B-FP8.

As in parts 1-5 the figures are not trusted because they are written down: each entry's weight bytes are the
published index total_size, its parameters the published HF count split by dtype, and the tests below
re-derive both from the config's shapes with the arithmetic written out here. Qwen3.5 is a hybrid: three
Gated DeltaNet (linear attention) layers for every gated full-attention layer (text_config.layer_types), a
Qwen3-VL-style vision tower and one MTP layer. The formula is first checked on the Qwen3.5 entries already in
the catalog (27B, 35B-A3B, 122B-A10B, 397B-A17B, whose HF counts were published), then applied to the new ones,
so a wrong config, a wrong count or a wrong dtype split fails. The FP8 entry's index total is re-derived as FP8
weights + one BF16 scale per 128 x 128 block + the unquantized rest, from its base model's published count.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    REQUIRED_KEYS,
    assert_entry_basics,
    assert_every_value_has_its_source,
    itemsizes,
    split_bytes,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog.test_catalog_data_part3 import QWEN35_PUBLISHED
from tests.unit.catalog.test_catalog_data_part4 import rope_cache_bytes_by_hand

# (model id, published HF safetensors total)
NEW: tuple[tuple[str, int], ...] = (
    ("Qwen/Qwen3.5-4B", 4_659_865_088),
    ("Qwen/Qwen3.5-9B", 9_653_104_368),
    ("Qwen/Qwen3.5-2B", 2_274_069_824),
    ("Qwen/Qwen3.5-0.8B", 873_438_784),
)
NEW_IDS = tuple(model_id for model_id, _ in NEW)
FP8_IDS: tuple[str, ...] = ("Qwen/Qwen3.5-122B-A10B-FP8",)
# the dtypes part 6 (Qwen3.5)'s entries may record
QWEN35_ITEMSIZE = itemsizes("BF16", "F32", "F8_E4M3")


def vision_params(v: dict[str, Any]) -> int:
    """Qwen3.5 vision tower (Qwen3-VL's ViT without deepstack mergers): Conv3d patch embedding with bias
    (in_channels x temporal_patch x patch^2 x width + width), a learned position table (positions x width),
    `depth` blocks (two LayerNorms with bias, fused qkv and proj with bias, fc1 / fc2 with bias) and a patch
    merger (LayerNorm over the width, fc1 merged -> merged, fc2 merged -> LM width, merged = width x merge^2)."""
    assert v["deepstack_visual_indexes"] == []
    h, inter, out = v["hidden_size"], v["intermediate_size"], v["out_hidden_size"]
    patch = v["in_channels"] * v["temporal_patch_size"] * v["patch_size"] ** 2 * h + h
    positions = v["num_position_embeddings"] * h
    block = 2 * 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * inter + inter) + (inter * h + h)
    merged = h * v["spatial_merge_size"] ** 2
    merger = 2 * h + (merged * merged + merged) + (merged * out + out)
    return patch + positions + v["depth"] * block + merger


def _gdn_layer(t: dict[str, Any]) -> int:
    """One Gated DeltaNet layer: in_proj_qkv (h -> 2 Hk dk + Hv dv), in_proj_z (h -> Hv dv), in_proj_a and
    in_proj_b (h -> Hv each), depthwise conv1d over q, k, v (2 Hk dk + Hv dv channels x kernel, no bias),
    dt_bias and A_log (Hv each), the gated RMSNorm weight (dv) and out_proj (Hv dv -> h)."""
    h = t["hidden_size"]
    hk, dk = t["linear_num_key_heads"], t["linear_key_head_dim"]
    hv, dv = t["linear_num_value_heads"], t["linear_value_head_dim"]
    conv_channels = 2 * hk * dk + hv * dv
    return (
        h * conv_channels
        + h * hv * dv
        + 2 * h * hv
        + conv_channels * t["linear_conv_kernel_dim"]
        + 2 * hv
        + dv
        + hv * dv * h
    )


def _attention_layer(t: dict[str, Any]) -> int:
    """Gated full attention: q_proj doubled for the output gate (h -> 2 q), k_proj and v_proj (h -> kv),
    o_proj (q -> h), q_norm and k_norm over the head dimension."""
    h, hd = t["hidden_size"], t["head_dim"]
    q, kv = t["num_attention_heads"] * hd, t["num_key_value_heads"] * hd
    return 2 * h * q + 2 * h * kv + q * h + 2 * hd


def _mlp(t: dict[str, Any]) -> int:
    """Dense SwiGLU (gate, up, down), or routed experts + shared expert + shared_expert_gate (h -> 1) + router."""
    h = t["hidden_size"]
    if t.get("num_experts"):
        e = t["num_experts"]
        return (
            e * 3 * h * t["moe_intermediate_size"] + 3 * h * t["shared_expert_intermediate_size"] + h + h * e
        )
    return 3 * h * t["intermediate_size"]


def text_params(t: dict[str, Any], *, tied: bool) -> tuple[int, int]:
    """(language model, MTP layer). Every layer has its mixer (layer_types), its MLP and two RMSNorms; then the
    embedding (+ a separate lm_head unless tied) and the final norm. The MTP layer is one gated-attention layer
    with its MLP and norms plus fc (2h -> h), two pre-fc norms and a final norm; it shares the main embedding
    and lm_head (mtp_use_dedicated_embeddings false)."""
    assert t["mtp_use_dedicated_embeddings"] is False
    h, types = t["hidden_size"], t["layer_types"]
    assert len(types) == t["num_hidden_layers"]
    full = types.count("full_attention")
    linear = types.count("linear_attention")
    assert full + linear == len(types) and full == len(types) // t["full_attention_interval"]
    layers = full * _attention_layer(t) + linear * _gdn_layer(t) + len(types) * (_mlp(t) + 2 * h)
    language = layers + t["vocab_size"] * h * (1 if tied else 2) + h
    mtp = t["mtp_num_hidden_layers"] * (_attention_layer(t) + _mlp(t) + 2 * h) + 2 * h * h + 3 * h
    return language, mtp


def qwen35_params(config: dict[str, Any]) -> dict[str, int]:
    t = config["text_config"]
    tied = bool(config.get("tie_word_embeddings", False))
    assert t.get("tie_word_embeddings", tied) == tied  # the small models repeat the flag in text_config
    language, mtp = text_params(t, tied=tied)
    vision = vision_params(config["vision_config"])
    return {"language": language, "vision": vision, "mtp": mtp, "total": language + vision + mtp}


def f32_params(t: dict[str, Any]) -> int:
    """The tensors Qwen keeps in float32: A_log (Hv) and the gated RMSNorm weight (dv) of every Gated DeltaNet
    layer (the two float32 tensors per linear-attention layer the preflight records count)."""
    return t["layer_types"].count("linear_attention") * (
        t["linear_num_value_heads"] + t["linear_value_head_dim"]
    )


# --------------------------------------------------------------------------- the formula on known counts


@pytest.mark.parametrize(("model_id", "published"), QWEN35_PUBLISHED)
def test_the_formula_on_the_qwen35_entries_already_in_the_catalog(model_id: str, published: int) -> None:
    """27B by hand: 48 Gated-DeltaNet layers x 115,876,064 (in_proj_qkv 5,120 x 10,240 + in_proj_z 5,120 x 6,144
    + in_proj_a/b 2 x 5,120 x 48 + conv1d 10,240 x 4 + dt_bias/A_log 96 + norm 128 + out_proj 6,144 x 5,120) +
    16 attention layers x 104,858,112 (q 5,120 x 12,288 + k, v 5,120 x 1,024 each + o 6,144 x 5,120 + 512)
    + 64 x (MLP 3 x 5,120 x 17,408 + norms 10,240) + 2 x 248,320 x 5,120 + 5,120 = 26,895,998,464 (language),
    + MTP 424,699,392 + vision 460,730,096 = 27,781,427,952, the HF count."""
    entry = _load(model_id)
    parts = qwen35_params(entry["config"])
    assert parts["total"] == published
    if model_id == "Qwen/Qwen3.5-27B":
        assert (parts["language"], parts["mtp"], parts["vision"]) == (
            26_895_998_464,
            424_699_392,
            460_730_096,
        )
    if entry["params_by_dtype"] is not None:
        assert sum(entry["params_by_dtype"].values()) == published


def test_the_f32_rule_on_the_122b_and_397b_entries() -> None:
    """The published dtype splits of the two large MoE checkpoints: 122B-A10B has 6,912 F32 values = 36 linear
    layers x (64 + 128); 397B-A17B's payload is 17,280 B above all-BF16 = 8,640 F32 values = 45 x (64 + 128)."""
    big = _load("Qwen/Qwen3.5-122B-A10B")
    assert big["params_by_dtype"]["F32"] == f32_params(big["config"]["text_config"]) == 6_912
    huge = _load("Qwen/Qwen3.5-397B-A17B")
    assert (
        (huge["weights_bytes"] - 2 * 403_397_928_944) // 2
        == f32_params(huge["config"]["text_config"])
        == 8_640
    )


# --------------------------------------------------------------------------- the new entries


@pytest.mark.parametrize("model_id", NEW_IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["base_model"] == model_id
    assert entry["variant"] == "bf16" and entry["config"]["text_config"]["dtype"] == "bfloat16"
    assert entry["config"].get("quantization_config") is None
    assert entry["config"]["architectures"] == ["Qwen3_5ForConditionalGeneration"]
    assert entry["weights_bytes"] == split_bytes(entry["params_by_dtype"], QWEN35_ITEMSIZE)
    assert entry["weights_bytes_kind"] == "index_total_size"
    assert entry["weights_bytes"] == entry["index_total_size"]
    if entry["files"] is not None:  # shard files = tensor payload + a JSON header each
        assert 0 < sum(f["size"] for f in entry["files"]) - entry["index_total_size"] < 1_000_000


@pytest.mark.parametrize(("model_id", "published"), NEW)
def test_published_counts_follow_from_the_config_shapes(model_id: str, published: int) -> None:
    """4B by hand (tied embeddings): 24 Gated-DeltaNet layers x 42,139,840 (in_proj_qkv 2,560 x 8,192 + in_proj_z
    2,560 x 4,096 + in_proj_a/b 2 x 2,560 x 32 + conv1d 8,192 x 4 + 64 + 128 + out_proj 4,096 x 2,560) + 8
    attention layers x 36,700,672 (q 2,560 x 8,192 + k, v 2,560 x 1,024 each + o 4,096 x 2,560 + 512) + 32 x
    (MLP 3 x 2,560 x 9,216 + norms 5,120) + 248,320 x 2,560 (once) + 2,560 = 4,205,751,296; MTP 120,599,552;
    vision (24 blocks of width 1,024) 333,514,240: 4,659,865,088, the HF count. The F32 values: 24 x (32 + 128)
    = 3,840."""
    entry = _load(model_id)
    config = entry["config"]
    assert qwen35_params(config)["total"] == published == sum(entry["params_by_dtype"].values())
    assert entry["params_by_dtype"]["F32"] == f32_params(config["text_config"])


def test_the_4b_count_by_hand() -> None:
    parts = qwen35_params(_load("Qwen/Qwen3.5-4B")["config"])
    assert (parts["language"], parts["mtp"], parts["vision"]) == (4_205_751_296, 120_599_552, 333_514_240)


@pytest.mark.parametrize(
    ("model_id", "language", "vision", "mtp"),
    [
        # language / vision / auxiliary (MTP) parameters the preflight records count from the safetensors headers
        ("Qwen/Qwen3.5-4B", 4_205_751_296, 333_514_240, 120_599_552),
        ("Qwen/Qwen3.5-2B", 1_881_825_088, 331_416_576, 60_828_160),
    ],
)
def test_component_split_matches_the_header_counts(
    model_id: str, language: int, vision: int, mtp: int
) -> None:
    parts = qwen35_params(_load(model_id)["config"])
    assert (parts["language"], parts["vision"], parts["mtp"]) == (language, vision, mtp)


def test_the_08b_text_model_is_the_gguf_count() -> None:
    """A GGUF of Qwen3.5-0.8B (text model only, no vision tower, no MTP) reports 752,393,024 parameters."""
    assert qwen35_params(_load("Qwen/Qwen3.5-0.8B")["config"])["language"] == 752_393_024


@pytest.mark.parametrize(
    ("model_id", "tied"),
    [
        ("Qwen/Qwen3.5-0.8B", True),
        ("Qwen/Qwen3.5-2B", True),
        ("Qwen/Qwen3.5-4B", True),
        ("Qwen/Qwen3.5-9B", False),
    ],
)
def test_only_the_9b_stores_a_separate_lm_head(model_id: str, tied: bool) -> None:
    """The published counts need the embedding once for 0.8B-4B and twice for 9B, as tie_word_embeddings says
    (unlike Qwen3-0.6B / 1.7B, whose files hold lm_head despite the flag): the other reading misses by
    vocab x hidden."""
    entry = _load(model_id)
    config = entry["config"]
    assert config["tie_word_embeddings"] is tied
    language, mtp = text_params(config["text_config"], tied=not tied)
    other = language + mtp + vision_params(config["vision_config"])
    assert (
        abs(other - sum(entry["params_by_dtype"].values())) == 248_320 * config["text_config"]["hidden_size"]
    )


def test_the_9b_model_card_figures() -> None:
    """Qwen3.5-9B's model card: hidden 4096, 32 layers as 8 x (3 x Gated DeltaNet + 1 x gated attention), 32 V /
    16 QK linear heads of dim 128, 16 Q / 4 KV attention heads of dim 256, rotary dim 64, FFN 12288, vocab
    248320 (padded), 262,144 tokens native."""
    t = _load("Qwen/Qwen3.5-9B")["config"]["text_config"]
    assert t["layer_types"] == (["linear_attention"] * 3 + ["full_attention"]) * 8
    assert (t["hidden_size"], t["intermediate_size"], t["vocab_size"]) == (4096, 12288, 248320)
    assert (t["linear_num_value_heads"], t["linear_num_key_heads"], t["linear_key_head_dim"]) == (32, 16, 128)
    assert (t["num_attention_heads"], t["num_key_value_heads"], t["head_dim"]) == (16, 4, 256)
    assert int(t["head_dim"] * t["rope_parameters"]["partial_rotary_factor"]) == 64
    assert t["max_position_embeddings"] == 262_144


# --------------------------------------------------------------------------- the FP8 entry

# what the FP8 checkpoint keeps in BF16 (config quantization_config.modules_to_not_convert, layer numbers as N)
_NOT_CONVERTED = {
    "lm_head",
    "model.language_model.embed_tokens",
    "model.language_model.layers.N.linear_attn.conv1d",
    "model.language_model.layers.N.linear_attn.in_proj_a",
    "model.language_model.layers.N.linear_attn.in_proj_b",
    "model.language_model.layers.N.mlp.gate",
    "model.language_model.layers.N.mlp.shared_expert_gate",
    "model.visual.blocks.N.attn.proj",
    "model.visual.blocks.N.attn.qkv",
    "model.visual.blocks.N.mlp.linear_fc1",
    "model.visual.blocks.N.mlp.linear_fc2",
    "model.visual.merger.linear_fc1",
    "model.visual.merger.linear_fc2",
    "model.visual.patch_embed.proj",
    "model.visual.pos_embed",
    "mtp.fc",
    "mtp.layers.N.mlp.gate",
    "mtp.layers.N.mlp.shared_expert_gate",
}


def _blocks(rows: int, cols: int) -> int:
    return -(-rows // 128) * -(-cols // 128)


def test_the_122b_fp8_index_total_is_fp8_weights_plus_block_scales() -> None:
    """Qwen3.5-122B-A10B-FP8 quantizes, in every layer and in the MTP layer, the experts' and the shared expert's
    gate/up/down, the gated-attention q/k/v/o and the Gated-DeltaNet in_proj_qkv/in_proj_z/out_proj, with one
    BF16 scale per 128 x 128 block. 48 MoE blocks x (256 experts x 3 x 3,072 x 1,024 + shared 3 x 3,072 x 1,024)
    + 12 attention layers x (3,072 x 16,384 + 2 x 3,072 x 512 + 8,192 x 3,072) + 36 Gated-DeltaNet layers x
    (3,072 x 12,288 + 3,072 x 8,192 + 8,192 x 3,072) + the MTP layer (attention + MoE) = 123,035,713,536 FP8
    values and 7,509,504 scales; everything else keeps the base model's dtype (the published 122B split: 6,912 F32,
    the rest BF16), so total_size = 123,035,713,536 + 2 x (125,086,497,008 - 123,035,713,536 - 6,912 + 7,509,504)
    + 4 x 6,912 = 127,152,313,312 B."""
    entry, base = _load("Qwen/Qwen3.5-122B-A10B-FP8"), _load("Qwen/Qwen3.5-122B-A10B")
    config = entry["config"]
    q = config["quantization_config"]
    assert (q["quant_method"], q["activation_scheme"], q["weight_block_size"]) == (
        "fp8",
        "dynamic",
        [128, 128],
    )
    assert {k: v for k, v in config.items() if k != "quantization_config"} == base["config"]
    kept = [re.sub(r"\.\d+\.", ".N.", name) for name in q["modules_to_not_convert"]]
    assert set(kept) == _NOT_CONVERTED
    t = config["text_config"]
    linear = t["layer_types"].count("linear_attention")
    assert kept.count("model.language_model.layers.N.linear_attn.conv1d") == linear
    assert kept.count("model.language_model.layers.N.mlp.gate") == t["num_hidden_layers"]

    h, hd = t["hidden_size"], t["head_dim"]
    qd, kv = t["num_attention_heads"] * hd, t["num_key_value_heads"] * hd
    conv = (
        2 * t["linear_num_key_heads"] * t["linear_key_head_dim"]
        + t["linear_num_value_heads"] * t["linear_value_head_dim"]
    )
    vd = t["linear_num_value_heads"] * t["linear_value_head_dim"]
    m, s = t["moe_intermediate_size"], t["shared_expert_intermediate_size"]
    attention = [(2 * qd, h), (kv, h), (kv, h), (h, qd)]
    gdn = [(conv, h), (vd, h), (h, vd)]
    moe = t["num_experts"] * [(m, h), (m, h), (h, m)] + [(s, h), (s, h), (h, s)]
    full = t["layer_types"].count("full_attention") + t["mtp_num_hidden_layers"]
    mats = full * attention + linear * gdn + (t["num_hidden_layers"] + t["mtp_num_hidden_layers"]) * moe
    fp8 = sum(rows * cols for rows, cols in mats)
    scales = sum(_blocks(rows, cols) for rows, cols in mats)
    assert (fp8, scales) == (123_035_713_536, 7_509_504)
    base_count = sum(base["params_by_dtype"].values())
    assert base_count == qwen35_params(base["config"])["total"] == 125_086_497_008
    f32 = base["params_by_dtype"]["F32"]
    bf16 = base_count - fp8 - f32 + scales
    assert entry["weights_bytes"] == entry["index_total_size"] == fp8 + 2 * bf16 + 4 * f32 == 127_152_313_312
    assert entry["base_model"] == base["id"] and entry["variant"] == "fp8"
    assert set(entry) == REQUIRED_KEYS
    assert_every_value_has_its_source(entry)
    # the public guide's ModelScope file total for this repository: 127.2 GB (decimal, headers included)
    assert round(entry["weights_bytes"] / 1e9, 1) == 127.2


def test_the_planner_finds_and_reads_them() -> None:
    """The catalog lookup and the architecture reader accept the entries, and the plan loads the checkpoint
    less its MTP layer (vLLM drops the "mtp." weights unless MTP speculative decoding is on); the planner's
    per-layer estimate of those bytes is within 1 % of the total of the exact figure."""
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import find_entry
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    for model_id in NEW_IDS:
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        text = found.config["text_config"]
        arch = read_arch(found.config)
        assert arch.num_hidden_layers == text["num_hidden_layers"]
        assert arch.hidden_size == text["hidden_size"]
        plan = build_plan(
            PlanRequest(model=model_id, source="catalog", gpu="h100-sxm", tensor_parallel_size=1),
            {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"},
        )
        entry = _load(model_id)
        without_mtp = entry["weights_bytes"] - 2 * qwen35_params(entry["config"])["mtp"]
        rope = rope_cache_bytes_by_hand(entry["config"])
        assert plan.memory.weights_bytes < entry["weights_bytes"] + rope
        loaded = without_mtp + rope
        assert abs(plan.memory.weights_bytes - loaded) < 0.01 * entry["weights_bytes"]
    for model_id in FP8_IDS:
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        arch = read_arch(found.config)
        assert arch.num_hidden_layers == found.config["text_config"]["num_hidden_layers"]
        assert arch.quantization is not None and arch.quantization.method == "fp8"
