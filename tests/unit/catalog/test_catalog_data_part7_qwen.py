"""Data checks for the Qwen entries of round 7: Qwen3.6-35B-A3B, Qwen3.6-27B, Qwen3-Coder-Next,
Qwen3-VL-30B-A3B-Instruct-FP8, Qwen2.5-VL-72B-Instruct and Qwen2.5-1.5B-Instruct-AWQ.

As in parts 1-6 the figures are not trusted because they are written down. Where a count was published (the HF API
safetensors total of Qwen3.6-35B-A3B, Qwen3.6-27B and Qwen3-Coder-Next; the index total_size of the two Qwen3.6
models) the tests re-derive it from the config's tensor shapes with the formulas of parts 3, 4 and 6 (imported, not
copied), so a wrong config or a wrong count fails. The other three entries record DERIVED weights (no exact published
figure was found); for them the tests check the derivation itself against published counts of the pieces it is built
from (the base model's HF count, the Qwen2.5-VL-7B / -32B towers), so that the arithmetic, not only the sum, is checked.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    SAFETENSORS_ITEMSIZE,
    assert_base_is_catalogued,
    assert_config_source_marked,
    assert_entry_basics,
    assert_weights_add_up,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog.test_catalog_data_part3 import (
    _qwen3_text_params,
    _qwen3_vl_vision_params,
    _qwen35_text_params,
)
from tests.unit.catalog.test_catalog_data_part4 import dense_params
from tests.unit.catalog.test_catalog_data_part6_qwen35 import f32_params, qwen35_params

NEW_IDS: tuple[str, ...] = (
    "Qwen/Qwen3.6-35B-A3B",
    "Qwen/Qwen3.6-27B",
    "Qwen/Qwen3-Coder-Next",
    "Qwen/Qwen3-VL-30B-A3B-Instruct-FP8",
    "Qwen/Qwen2.5-VL-72B-Instruct",
    "Qwen/Qwen2.5-1.5B-Instruct-AWQ",
)
# the entries whose config_source says the config was rebuilt rather than copied
REBUILT_IDS: tuple[str, ...] = (
    "Qwen/Qwen3-Coder-Next",
    "Qwen/Qwen3-VL-30B-A3B-Instruct-FP8",
    "Qwen/Qwen2.5-VL-72B-Instruct",
    "Qwen/Qwen2.5-1.5B-Instruct-AWQ",
)
# (model id, HF API safetensors total) -- see each entry's params_source
QWEN36_PUBLISHED: tuple[tuple[str, int], ...] = (
    ("Qwen/Qwen3.6-35B-A3B", 35_951_822_704),
    ("Qwen/Qwen3.6-27B", 27_781_427_952),
)
CODER_NEXT_PUBLISHED = 79_674_391_296


# --------------------------------------------------------------------------- keys, sources, weights


@pytest.mark.parametrize("model_id", NEW_IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert_weights_add_up(entry)
    assert set(entry["params_by_dtype"]) <= set(SAFETENSORS_ITEMSIZE)
    quantized = entry["config"].get("quantization_config") is not None
    assert quantized == (entry["variant"] in ("fp8", "awq"))
    assert (entry["base_model"] == model_id) == (entry["variant"] == "bf16")
    assert_base_is_catalogued(entry)


@pytest.mark.parametrize("model_id", NEW_IDS)
def test_a_rebuilt_config_says_so(model_id: str) -> None:
    assert_config_source_marked(_load(model_id)["config_source"], model_id in REBUILT_IDS, "KinChow/model-structure-viewer")


@pytest.mark.parametrize("model_id", NEW_IDS)
def test_a_derived_count_says_so(model_id: str) -> None:
    """Only the three entries without a published count record a derived one, and they say it."""
    entry = _load(model_id)
    derived = entry["params_source"].startswith("DERIVED")
    assert derived == (
        model_id
        in (
            "Qwen/Qwen3-VL-30B-A3B-Instruct-FP8",
            "Qwen/Qwen2.5-VL-72B-Instruct",
            "Qwen/Qwen2.5-1.5B-Instruct-AWQ",
        )
    )


# --------------------------------------------------------------------------- Qwen3.6 (Qwen3.5 architecture)


@pytest.mark.parametrize(("model_id", "published"), QWEN36_PUBLISHED)
def test_qwen36_counts_follow_from_the_config_shapes(model_id: str, published: int) -> None:
    """Part 6's Qwen3.5 arithmetic (checked there on four published Qwen3.5 counts). 35B-A3B by hand: 30 Gated-DeltaNet
    layers x 33,718,464 (in_proj_qkv 2,048 x 8,192 + in_proj_z 2,048 x 4,096 + in_proj_a/b 2 x 2,048 x 32 + conv1d
    8,192 x 4 + dt_bias/A_log 64 + norm 128 + out_proj 4,096 x 2,048) + 10 attention layers x 27,263,488 (q 2,048 x
    8,192 + k, v 2,048 x 512 each + o 4,096 x 2,048 + q/k norms 512) + 40 x (256 experts x 3 x 2,048 x 512 + shared
    3 x 2,048 x 512 + shared gate 2,048 + router 2,048 x 256 = 808,978,432, + norms 4,096) + 2 x 248,320 x 2,048
    + 2,048 = 34,660,610,688 (language) + MTP 844,640,768 + vision 446,571,248 = 35,951,822,704, the HF count; and
    the index total is exactly twice that, so no tensor is F32."""
    entry = _load(model_id)
    parts = qwen35_params(entry["config"])
    assert parts["total"] == published == entry["params_by_dtype"]["BF16"]
    assert entry["params_by_dtype"] == {"BF16": published}
    assert entry["index_total_size"] == entry["weights_bytes"] == 2 * published
    assert entry["weights_bytes_kind"] == "index_total_size"
    # the same count through part 3's independent Qwen3.5 formula (text + MTP, then the Qwen3-VL tower)
    config = entry["config"]
    assert (
        _qwen35_text_params(config["text_config"]) + _qwen3_vl_vision_params(config["vision_config"])
        == published
    )


def test_the_qwen36_35b_count_by_hand() -> None:
    parts = qwen35_params(_load("Qwen/Qwen3.6-35B-A3B")["config"])
    assert (parts["language"], parts["mtp"], parts["vision"]) == (34_660_610_688, 844_640_768, 446_571_248)


def test_the_qwen36_f32_rule_is_not_needed() -> None:
    """Part 6's F32 rule (A_log + gated-norm weight per Gated-DeltaNet layer) would add 30 x (32 + 128) = 4,800
    float32 values to the 35B-A3B; its index total_size is 2 x the count exactly, so Qwen3.6-35B-A3B stores them in
    BF16, as Qwen3.5-35B-A3B does (its catalog split is all BF16 too)."""
    entry = _load("Qwen/Qwen3.6-35B-A3B")
    f32 = f32_params(entry["config"]["text_config"])
    assert f32 == 4_800
    assert entry["index_total_size"] != 2 * (35_951_822_704 - f32) + 4 * f32
    assert _load("Qwen/Qwen3.5-35B-A3B")["params_by_dtype"] == {"BF16": 35_951_822_704}


@pytest.mark.parametrize(
    ("new", "old"),
    [("Qwen/Qwen3.6-35B-A3B", "Qwen/Qwen3.5-35B-A3B"), ("Qwen/Qwen3.6-27B", "Qwen/Qwen3.5-27B")],
)
def test_qwen36_keeps_the_qwen35_shapes(new: str, old: str) -> None:
    a, b = _load(new)["config"], _load(old)["config"]
    assert a["architectures"] == b["architectures"] and a["vision_config"] == b["vision_config"]
    for key in (
        "hidden_size",
        "num_hidden_layers",
        "layer_types",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "linear_num_value_heads",
        "linear_num_key_heads",
        "linear_key_head_dim",
        "vocab_size",
        "mtp_num_hidden_layers",
        "intermediate_size",
        "num_experts",
        "moe_intermediate_size",
    ):
        assert a["text_config"].get(key) == b["text_config"].get(key), key


# --------------------------------------------------------------------------- Qwen3-Coder-Next (Qwen3-Next)


def test_coder_next_count_follows_from_the_config_shapes() -> None:
    """Part 3's Qwen3-Next/Qwen3.5 formula (which reproduces Qwen3-Next-80B-A3B's HF count, 81,324,862,720, with its
    MTP layer). Coder-Next's config has no MTP layer: 12 attention layers x 27,263,488 (q 2,048 x 8,192 + k, v
    2,048 x 512 each + o 4,096 x 2,048 + 512) + 36 Gated-DeltaNet layers x 33,718,464 (in_proj_qkvz 2,048 x 12,288 +
    in_proj_ba 2,048 x 64 + conv1d 8,192 x 4 + 64 + 128 + out_proj 4,096 x 2,048) + 48 x (512 experts x 3 x 2,048 x
    512 + shared 3 x 2,048 x 512 + gate 2,048 + router 2,048 x 512 = 1,614,809,088, + norms 4,096) + 2 x 151,936 x
    2,048 + 2,048 = 79,674,391,296, the HF count of Qwen/Qwen3-Coder-Next."""
    entry = _load("Qwen/Qwen3-Coder-Next")
    config = entry["config"]
    assert "mtp_num_hidden_layers" not in config
    assert _qwen35_text_params(config) == CODER_NEXT_PUBLISHED == entry["params_by_dtype"]["BF16"]
    assert entry["weights_bytes"] == 2 * CODER_NEXT_PUBLISHED == 159_348_782_592


def test_coder_next_is_qwen3_next_without_the_mtp_layer() -> None:
    """Qwen3-Next-80B-A3B's HF count less its MTP layer (1,650,471,424) is Coder-Next's count: the same shapes, no
    mtp.* tensors. Counting an MTP layer for Coder-Next would miss the published total by that much."""
    nxt = _load("Qwen/Qwen3-Next-80B-A3B-Instruct")["config"]
    coder = _load("Qwen/Qwen3-Coder-Next")["config"]
    assert _qwen35_text_params(nxt) == 81_324_862_720
    assert _qwen35_text_params(nxt, mtp=False) == CODER_NEXT_PUBLISHED
    assert _qwen35_text_params(nxt) - CODER_NEXT_PUBLISHED == 1_650_471_424
    assert {k: v for k, v in nxt.items() if not k.startswith("mtp_")} == coder


def test_coder_next_model_card_figures() -> None:
    """The card: hidden 2048, 48 layers = 12 x (3 DeltaNet + 1 attention), 16 Q / 2 KV heads of dim 256, rotary dim 64,
    32 V / 16 QK linear heads of dim 128, 512 experts, 10 active, 1 shared, expert width 512, 262,144 context; '79B
    non-embedding': 79,674,391,296 - 2 x 151,936 x 2,048 = 79,052,061,440."""
    c = _load("Qwen/Qwen3-Coder-Next")["config"]
    assert (c["hidden_size"], c["num_hidden_layers"], c["full_attention_interval"]) == (2048, 48, 4)
    assert (c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]) == (16, 2, 256)
    assert int(c["head_dim"] * c["partial_rotary_factor"]) == 64
    assert (c["linear_num_value_heads"], c["linear_num_key_heads"], c["linear_key_head_dim"]) == (32, 16, 128)
    assert (c["num_experts"], c["num_experts_per_tok"], c["moe_intermediate_size"]) == (512, 10, 512)
    assert c["shared_expert_intermediate_size"] == 512 and c["max_position_embeddings"] == 262_144
    non_embedding = CODER_NEXT_PUBLISHED - 2 * c["vocab_size"] * c["hidden_size"]
    assert non_embedding == 79_052_061_440 and round(non_embedding / 1e9) == 79


# --------------------------------------------------------------------------- Qwen3-VL-30B-A3B-Instruct-FP8


def _blocks(rows: int, cols: int) -> int:
    return -(-rows // 128) * -(-cols // 128)


def test_qwen3_vl_30b_fp8_split_follows_from_the_base_count() -> None:
    """Base: part 3's Qwen3-VL arithmetic gives the published 31,070,754,032 (LM 30,532,122,624 + tower 538,631,408).
    FP8: 48 layers x (q 4,096 x 2,048 + k, v 512 x 2,048 + o 2,048 x 4,096 + 128 experts x 3 x 768 x 2,048)
    = 29,896,998,912 F8_E4M3 -- the same as the text-only Qwen3-30B-A3B-FP8 entry -- plus one BF16 scale per
    128 x 128 block, 48 x (512 + 2 x 64 + 512 + 128 x 3 x 96) = 1,824,768; the rest (embeddings, lm_head, routers,
    norms, the vision tower) stays BF16: 31,070,754,032 - 29,896,998,912 + 1,824,768 = 1,175,579,888."""
    entry, base = _load("Qwen/Qwen3-VL-30B-A3B-Instruct-FP8"), _load("Qwen/Qwen3-VL-30B-A3B-Instruct")
    config = entry["config"]
    q = config["quantization_config"]
    assert (q["quant_method"], q["fmt"], q["activation_scheme"], q["weight_block_size"]) == (
        "fp8",
        "e4m3",
        "dynamic",
        [128, 128],
    )
    assert {k: v for k, v in config.items() if k != "quantization_config"} == base["config"]
    t = config["text_config"]
    base_count = _qwen3_text_params(t, False) + _qwen3_vl_vision_params(config["vision_config"])
    assert base_count == sum(base["params_by_dtype"].values()) == 31_070_754_032
    h, hd, m = t["hidden_size"], t["head_dim"], t["moe_intermediate_size"]
    qd, kv = t["num_attention_heads"] * hd, t["num_key_value_heads"] * hd
    mats = [(qd, h), (kv, h), (kv, h), (h, qd)] + t["num_experts"] * [(m, h), (m, h), (h, m)]
    fp8 = t["num_hidden_layers"] * sum(r * c for r, c in mats)
    scales = t["num_hidden_layers"] * sum(_blocks(r, c) for r, c in mats)
    assert (fp8, scales) == (29_896_998_912, 1_824_768)
    assert fp8 == _load("Qwen/Qwen3-30B-A3B-FP8")["params_by_dtype"]["F8_E4M3"]
    assert entry["params_by_dtype"] == {"F8_E4M3": fp8, "BF16": base_count - fp8 + scales}
    assert entry["weights_bytes"] == 32_248_158_688


# --------------------------------------------------------------------------- Qwen2.5-VL-72B-Instruct


def qwen25_vl_vision_params(v: dict[str, Any]) -> int:
    """Qwen2.5-VL ViT: Conv3d patch embedding without bias (3 x temporal_patch x patch^2 x width), `depth` blocks (two
    RMSNorms, fused qkv and proj with bias, SwiGLU gate/up/down with bias) and the patch merger (RMSNorm over the width,
    Linear merged -> merged and merged -> LM width with bias, merged = width x merge^2)."""
    h, inter, out = v["hidden_size"], v["intermediate_size"], v["out_hidden_size"]
    patch = v["in_chans"] * v["temporal_patch_size"] * v["patch_size"] ** 2 * h
    block = 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * (h * inter + inter) + (inter * h + h)
    merged = h * v["spatial_merge_size"] ** 2
    merger = h + (merged * merged + merged) + (merged * out + out)
    return patch + v["depth"] * block + merger


def _qwen2_lm(config: dict[str, Any]) -> int:
    """Part 4's dense formula (Qwen2: q/k/v biases) applied to the language-model keys of a Qwen2.5-VL config."""
    return dense_params({**config, "architectures": ["Qwen2ForCausalLM"]})


def test_the_qwen25_vl_tower_formula_on_the_7b_count() -> None:
    """Qwen2.5-VL-7B-Instruct's HF count 8,292,166,656 = LM 7,615,616,512 + tower 676,550,144 (part 2's entry): patch
    1,505,280 + 32 blocks x 19,702,200 (3,420-wide MLP) + merger 44,574,464."""
    seven = _load("Qwen/Qwen2.5-VL-7B-Instruct")
    c = seven["config"]
    assert qwen25_vl_vision_params(c["vision_config"]) == 676_550_144
    assert _qwen2_lm(c) + qwen25_vl_vision_params(c["vision_config"]) == seven["params_by_dtype"]["BF16"]


def test_the_3456_wide_tower_reproduces_a_published_32b_count() -> None:
    """Qwen2.5-VL-32B (64 layers of width 5,120, FFN 27,648, 40 / 8 heads, vocab 152,064, untied; torchtune's builder)
    with the 72B's tower (MLP 3,456, out 5,120): 32,763,876,352 + 688,841,984 = 33,452,718,336, the count a public
    script records for a Qwen2.5-VL-32B-architecture model (search-index id 62225960460). The 7B's 3,420-wide MLP
    would give 33,448,292,352 instead -- so the 3,456 the 72B entry uses is checked against a published number."""
    v72 = _load("Qwen/Qwen2.5-VL-72B-Instruct")["config"]["vision_config"]
    lm32 = {
        "hidden_size": 5120,
        "num_hidden_layers": 64,
        "intermediate_size": 27648,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "vocab_size": 152064,
        "tie_word_embeddings": False,
    }
    assert _qwen2_lm(lm32) == 32_763_876_352  # the R1-Distill-Qwen-32B HF count (part 2), same LM shapes
    tower32 = {**v72, "out_hidden_size": 5120}
    assert _qwen2_lm(lm32) + qwen25_vl_vision_params(tower32) == 33_452_718_336
    assert _qwen2_lm(lm32) + qwen25_vl_vision_params({**tower32, "intermediate_size": 3420}) != 33_452_718_336


def test_the_qwen25_vl_72b_count_follows_from_its_parts() -> None:
    """LM: the published Qwen2.5-72B count 72,706,203,648 (its catalog config has the same LM keys); tower: 1,505,280
    + 32 x 19,840,512 (3,456-wide MLP) + merger 68,172,032 = 704,573,696; total 73,410,777,344 ('73B' on the card)."""
    entry = _load("Qwen/Qwen2.5-VL-72B-Instruct")
    c = entry["config"]
    text72 = _load("Qwen/Qwen2.5-72B-Instruct")
    for key in (
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "vocab_size",
        "tie_word_embeddings",
    ):
        assert c[key] == text72["config"][key], key
    assert _qwen2_lm(c) == text72["params_by_dtype"]["BF16"] == 72_706_203_648
    tower = qwen25_vl_vision_params(c["vision_config"])
    assert tower == 704_573_696
    assert entry["params_by_dtype"] == {"BF16": 72_706_203_648 + tower} == {"BF16": 73_410_777_344}
    assert round(sum(entry["params_by_dtype"].values()) / 1e9) == 73


# --------------------------------------------------------------------------- Qwen2.5-1.5B-Instruct-AWQ


def awq_split(config: dict[str, Any]) -> dict[str, int]:
    """AutoAWQ GEMM checkpoint of a Qwen2 decoder (w4, zero point, group g): every q/k/v/o/gate/up/down Linear in -> out
    stores qweight I32 [in, out/8], qzeros I32 [in/g, out/8] and scales F16 [in/g, out]; the embedding (once when tied,
    else with lm_head), q/k/v biases and the RMSNorms stay F16."""
    q = config["quantization_config"]
    assert (q["quant_method"], q["bits"], q["version"], q["zero_point"]) == ("awq", 4, "gemm", True)
    g = q["group_size"]
    h, inter, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    hd = h // config["num_attention_heads"]
    qd, kv = config["num_attention_heads"] * hd, config["num_key_value_heads"] * hd
    linears = [(h, qd), (h, kv), (h, kv), (qd, h), (h, inter), (h, inter), (inter, h)]
    assert all(i % g == 0 and o % 8 == 0 for i, o in linears)
    qweight = layers * sum(i * o // 8 for i, o in linears)
    qzeros = layers * sum(i // g * o // 8 for i, o in linears)
    scales = layers * sum(i // g * o for i, o in linears)
    embeddings = config["vocab_size"] * h * (1 if config["tie_word_embeddings"] else 2)
    rest = embeddings + layers * (qd + 2 * kv + 2 * h) + h
    return {"I32": qweight + qzeros, "F16": rest + scales}


def test_the_awq_arithmetic_keeps_the_base_parameters() -> None:
    """Unpacked, the AWQ checkpoint holds the base model: 8 int4 values per qweight I32, so qweight x 8 plus the F16
    non-linear tensors is Qwen2.5-1.5B-Instruct's published 1,543,714,304 (the tied embedding counted once)."""
    entry, base = _load("Qwen/Qwen2.5-1.5B-Instruct-AWQ"), _load("Qwen/Qwen2.5-1.5B-Instruct")
    c = entry["config"]
    assert {k: v for k, v in c.items() if k not in ("quantization_config", "torch_dtype")} == {
        k: v for k, v in base["config"].items() if k != "torch_dtype"
    }
    assert c["torch_dtype"] == "float16" and c["tie_word_embeddings"] is True
    h, inter, layers = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    qd, kv = h, c["num_key_value_heads"] * (h // c["num_attention_heads"])
    linear_weights = layers * (h * qd + 2 * h * kv + qd * h + 3 * h * inter)
    assert linear_weights + c["vocab_size"] * h + layers * (qd + 2 * kv + 2 * h) + h == dense_params(
        base["config"]
    )
    assert dense_params(base["config"]) == base["params_by_dtype"]["BF16"] == 1_543_714_304
    split = awq_split(c)
    qweight = split["I32"] - layers * sum(
        i // 128 * o // 8 for i, o in [(h, qd), (h, kv), (h, kv), (qd, h), (h, inter), (h, inter), (inter, h)]
    )
    assert qweight * 8 == linear_weights


def test_the_awq_split_by_hand() -> None:
    """Per layer: qweight (1,536 x (1,536 + 2 x 256 + 2 x 8,960) + 1,536 x 1,536 + 8,960 x 1,536) / 8 = 5,849,088
    and qzeros 45,696, x 28 = 165,053,952 I32; F16: embedding 233,373,696 + biases/norms 28 x 5,120 + 1,536 + scales
    28 x 365,568 = 243,754,496; 4 x 165,053,952 + 2 x 243,754,496 = 1,147,724,800 B."""
    entry = _load("Qwen/Qwen2.5-1.5B-Instruct-AWQ")
    split = awq_split(entry["config"])
    assert split == entry["params_by_dtype"] == {"I32": 165_053_952, "F16": 243_754_496}
    assert entry["weights_bytes"] == 4 * split["I32"] + 2 * split["F16"] == 1_147_724_800


def test_the_awq_arithmetic_on_the_72b_awq_entry() -> None:
    """The same function gives the split the catalog records for Qwen2.5-72B-Instruct-AWQ, whose config.json size was
    verified (841 B) -- a second, larger case of the identical layout."""
    entry = _load("Qwen/Qwen2.5-72B-Instruct-AWQ")
    assert awq_split(entry["config"]) == entry["params_by_dtype"]


# --------------------------------------------------------------------------- the planner


def test_the_planner_reads_and_plans_them() -> None:
    """Every entry is found, its architecture read, and it plans on H100s: one card for the 27B/35B-A3B Qwen3.6, the
    FP8 VL-30B and the 1.5B AWQ; four for the 148 GiB Coder-Next and the 137 GiB VL-72B. Qwen3.6 loads its checkpoint
    less the MTP layer (vLLM drops mtp.* unless MTP speculative decoding is on); Coder-Next has none to drop."""
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import find_entry
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    gpus = {
        "Qwen/Qwen3.6-35B-A3B": 1,
        "Qwen/Qwen3.6-27B": 1,
        "Qwen/Qwen3-VL-30B-A3B-Instruct-FP8": 1,
        "Qwen/Qwen2.5-1.5B-Instruct-AWQ": 1,
        "Qwen/Qwen3-Coder-Next": 4,
        "Qwen/Qwen2.5-VL-72B-Instruct": 4,
    }
    for model_id, count in gpus.items():
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        text = found.config.get("text_config") or found.config
        assert read_arch(found.config).num_hidden_layers == text["num_hidden_layers"]
        plan = build_plan(
            PlanRequest(model=model_id, source="catalog", gpu="h100", gpu_count=count),
            {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"},
        )
        assert plan.fits, model_id
        entry = _load(model_id)
        per_gpu = (
            entry["weights_bytes"] / plan.parallel.tensor_parallel_size / plan.parallel.pipeline_parallel_size
        )
        if model_id.startswith("Qwen/Qwen3.6"):
            mtp = qwen35_params(entry["config"])["mtp"]
            assert plan.memory.weights_bytes < entry["weights_bytes"]
            assert (
                abs(plan.memory.weights_bytes - (entry["weights_bytes"] - 2 * mtp))
                < 0.01 * entry["weights_bytes"]
            )
        else:
            assert plan.memory.weights_bytes == pytest.approx(per_gpu, rel=0.02), model_id
