"""Data checks for the catalog entries added for issue 13 item 9 (Kimi-K2, Qwen3-VL, Qwen3.5, Llama-3.3 FP8,
DeepSeek-V3.1, GLM-4.6).

As in parts 1 and 2, the numbers are not trusted because they are written down: each weight figure
comes from a published parameter count (HF safetensors metadata quoted in public sources), and the
tests below re-derive those counts from the config shapes with arithmetic written out here. A
formula is first checked against a count it was not written from (DeepSeek-V3's HF split, Qwen3-VL-
8B's HF total), then applied to the new entry, so a wrong config or a wrong count fails.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    GIB,
    REQUIRED_KEYS,
    assert_base_is_catalogued,
    assert_every_value_has_its_source,
    itemsizes,
    path_for,
    split_bytes,
)
from tests.unit.catalog._catalog_checks import load_entry as _load

PART3_IDS: tuple[str, ...] = (
    "moonshotai/Kimi-K2-Instruct",
    "Qwen/Qwen3-VL-8B-Instruct",
    "Qwen/Qwen3-VL-30B-A3B-Instruct",
    "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
    "deepseek-ai/DeepSeek-V3.1",
    "zai-org/GLM-4.6",
    "Qwen/Qwen3.5-27B",
    "Qwen/Qwen3.5-35B-A3B",
    "Qwen/Qwen3.5-122B-A10B",
    "Qwen/Qwen3.5-397B-A17B",
    "deepseek-ai/DeepSeek-R1-0528",
    "nvidia/Llama-3.3-70B-Instruct-FP8",
)

# the dtypes part 3's entries may record (no I32, unlike the catalog-wide table; I8 allowed)
PART3_ITEMSIZE = itemsizes("F32", "BF16", "F16", "F8_E4M3", "I8", "U8")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@pytest.fixture(params=PART3_IDS)
def entry(request: pytest.FixtureRequest) -> dict[str, Any]:
    return _load(request.param)


# --------------------------------------------------------------------------- shape, types, sources


def test_every_part3_file_exists() -> None:
    assert [m for m in PART3_IDS if not path_for(m).is_file()] == []


def test_keys_sources_and_kind(entry: dict[str, Any]) -> None:
    assert set(entry) == REQUIRED_KEYS
    assert entry["variant"] in {"bf16", "fp8"}
    assert entry["config_source"].startswith("REBUILT") or "aiconfigurator" in entry["config_source"]
    assert_every_value_has_its_source(entry)
    # every weight figure here is a published parameter count times the dtype size, or a published
    # tensor-byte total (what an index total_size records)
    if entry["weights_bytes_kind"] == "index_total_size":
        assert entry["weights_bytes"] == entry["index_total_size"]
    else:
        assert entry["weights_bytes_kind"] == "params_x_dtype"
        params = entry["params_by_dtype"]
        assert entry["weights_bytes"] == split_bytes(params, PART3_ITEMSIZE)
    assert_base_is_catalogued(entry)
    qc = entry["config"].get("quantization_config")
    assert (qc is not None) == (entry["variant"] == "fp8")


def test_catalog_loader_reads_the_new_entries() -> None:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import entry_to_metadata, find_entry

    for model_id in PART3_IDS:
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        arch = read_arch(found.config)
        assert arch.num_hidden_layers > 0
        assert entry_to_metadata(found).tensor_bytes == found.weights_bytes


def test_old_neuralmagic_id_resolves_to_redhatai() -> None:
    from vllmkit.hub.catalog import canonical_id, find_entry

    old = "neuralmagic/Llama-3.3-70B-Instruct-FP8-dynamic"
    assert canonical_id(old) == "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"
    found = find_entry(old)
    assert found is not None and found.id == "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"


# --------------------------------------------------------------------------- Qwen3-VL: vision tower + LM


def _qwen3_vl_vision_params(v: dict[str, Any]) -> int:
    """Qwen3-VL ViT (transformers Qwen3VLVisionModel): Conv3d patch embed with bias, learned position
    table, `depth` blocks (two LayerNorms with bias, fused qkv + proj with bias, fc1/fc2 with bias), a
    patch merger (LayerNorm over the ViT width, fc1 merged->merged, fc2 merged->LM width) and one
    deepstack merger per deepstack index (same, but its LayerNorm runs over the merged width)."""
    h, inter, out = v["hidden_size"], v["intermediate_size"], v["out_hidden_size"]
    patch = v["in_channels"] * v["temporal_patch_size"] * v["patch_size"] ** 2 * h + h
    positions = v["num_position_embeddings"] * h
    block = 2 * 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * inter + inter) + (inter * h + h)
    merged = h * v["spatial_merge_size"] ** 2
    linears = (merged * merged + merged) + (merged * out + out)
    merger = 2 * h + linears
    deepstack = len(v["deepstack_visual_indexes"]) * (2 * merged + linears)
    return patch + positions + v["depth"] * block + merger + deepstack


def _qwen3_text_params(t: dict[str, Any], tied: bool) -> int:
    """Qwen3 decoder: q/k/v/o without bias, per-head q_norm/k_norm, gated MLP or routed experts + router,
    two RMSNorms per layer, embedding (+ untied lm_head), final norm."""
    h, hd = t["hidden_size"], t["head_dim"]
    q, kv = t["num_attention_heads"] * hd, t["num_key_value_heads"] * hd
    attention = h * q + 2 * h * kv + q * h + 2 * hd
    if t.get("num_experts"):
        mlp = t["num_experts"] * 3 * h * t["moe_intermediate_size"] + h * t["num_experts"]
    else:
        mlp = 3 * h * t["intermediate_size"]
    embeddings = t["vocab_size"] * h * (1 if tied else 2)
    return t["num_hidden_layers"] * (attention + mlp + 2 * h) + embeddings + h


@pytest.mark.parametrize(
    ("model_id", "published", "language_model"),
    [
        # HF API safetensors total of Qwen/Qwen3-VL-8B-Instruct; its LM equals Qwen3-8B's count.
        ("Qwen/Qwen3-VL-8B-Instruct", 8_767_123_696, 8_190_735_360),
        # paramCount of Qwen3-VL-30B-A3B-Instruct; its LM equals Qwen3-30B-A3B's count.
        ("Qwen/Qwen3-VL-30B-A3B-Instruct", 31_070_754_032, 30_532_122_624),
    ],
)
def test_qwen3_vl_counts_follow_from_the_config(model_id: str, published: int, language_model: int) -> None:
    entry = _load(model_id)
    config = entry["config"]
    text = _qwen3_text_params(config["text_config"], config.get("tie_word_embeddings", False))
    vision = _qwen3_vl_vision_params(config["vision_config"])
    # the language model is the text-only Qwen3 model of the same size (counts in catalog part 2)
    assert text == language_model
    assert text + vision == published
    assert entry["params_by_dtype"] == {"BF16": published}


def test_qwen3_vl_language_models_match_their_text_only_siblings() -> None:
    # Qwen3-VL-8B's LM has Qwen3-8B's shapes; an independent record in the catalog (part 2 sources).
    vl = _load("Qwen/Qwen3-VL-8B-Instruct")["config"]["text_config"]
    text_only = _load("Qwen/Qwen3-8B")["config"]
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "intermediate_size", "vocab_size", "head_dim"):
        assert vl[key] == text_only[key], key


# --------------------------------------------------------------------------- DeepSeek-V3 layout (Kimi-K2)


def _deepseek_v3_split(c: dict[str, Any], *, include_mtp: bool = True) -> dict[str, int]:
    """dtype counts of a DeepSeek-V3-layout checkpoint with 128x128 block FP8 linears.

    Every Linear but the router and lm_head is F8_E4M3 with an F32 weight_scale_inv of
    ceil(out/128) x ceil(in/128); MLA q_a/kv_a layernorms, the RMSNorms, router gates, embeddings and
    lm_head are BF16; e_score_correction_bias is F32 (one per routed expert). An MTP layer adds one
    MoE layer plus enorm/hnorm/eh_proj/shared_head.norm and its own embedding and head copies.
    """
    h, heads = c["hidden_size"], c["num_attention_heads"]
    q_rank, kv_rank = c["q_lora_rank"], c["kv_lora_rank"]
    nope, rope, v_dim = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    vocab = c["vocab_size"]
    counts = {"BF16": 0, "F8_E4M3": 0, "F32": 0}

    def linear(out: int, inp: int) -> None:
        counts["F8_E4M3"] += out * inp
        counts["F32"] += _cdiv(out, 128) * _cdiv(inp, 128)

    extra = c.get("num_nextn_predict_layers", 0) if include_mtp else 0
    experts = c["n_routed_experts"]
    for layer in range(c["num_hidden_layers"] + extra):
        linear(q_rank, h)
        linear(heads * (nope + rope), q_rank)
        linear(kv_rank + rope, h)
        linear(heads * (nope + v_dim), kv_rank)
        linear(h, heads * v_dim)
        counts["BF16"] += q_rank + kv_rank + 2 * h
        if layer < c["first_k_dense_replace"]:
            sizes = [c["intermediate_size"]]
        else:
            sizes = [c["moe_intermediate_size"]] * (experts + c["n_shared_experts"])
            counts["BF16"] += experts * h
            counts["F32"] += experts
        for inter in sizes:
            linear(inter, h)
            linear(inter, h)
            linear(h, inter)
        if layer >= c["num_hidden_layers"]:
            counts["BF16"] += 2 * h + 2 * h * h + h + 2 * vocab * h
    counts["BF16"] += 2 * vocab * h + h
    return counts


def test_deepseek_v3_formula_reproduces_the_hf_split_of_deepseek_v3() -> None:
    # HF API split of deepseek-ai/DeepSeek-V3 (catalog part 2 source): written before this formula.
    config = _load("deepseek-ai/DeepSeek-V3")["config"]
    assert _deepseek_v3_split(config) == {"BF16": 3_918_786_560, "F8_E4M3": 680_571_043_840, "F32": 41_555_600}


def test_kimi_k2_fp8_count_follows_from_its_config() -> None:
    entry = _load("moonshotai/Kimi-K2-Instruct")
    config = entry["config"]
    assert config["num_nextn_predict_layers"] == 0  # no MTP layer: every tensor is loaded
    derived = _deepseek_v3_split(config)
    published = entry["params_by_dtype"]
    # The FP8 weights match the HF count to the parameter ...
    assert derived["F8_E4M3"] == published["F8_E4M3"] == 1_023_893_241_856
    # ... and the BF16 tensors to within 3,416 parameters (0.0001 %).
    assert abs(derived["BF16"] - published["BF16"]) <= 3_416
    # The published F32 count is the 60 MoE layers' e_score_correction_bias (60 x 384); the block
    # scales (the rest of the derived F32) are not in the quoted subset: < 0.03 % of the bytes.
    assert published["F32"] == 60 * 384
    missing_scale_bytes = 4 * (derived["F32"] - published["F32"])
    assert missing_scale_bytes < 0.0003 * entry["weights_bytes"]
    # an independent registry of HF totals records 1,026,408,235,864 for Kimi-K2-Instruct
    assert sum(published.values()) == 1_026_408_235_864


# --------------------------------------------------------------------------- Llama-3.3-70B FP8-dynamic


def test_llama33_fp8_dynamic_split_follows_from_the_config() -> None:
    entry = _load("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic")
    c = entry["config"]
    h, inter, layers = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    head_dim = h // c["num_attention_heads"]
    kv = c["num_key_value_heads"] * head_dim
    # Linear shapes (out, in): q, k, v, o, gate, up, down
    shapes = [(h, h), (kv, h), (kv, h), (h, h), (inter, h), (inter, h), (h, inter)]
    fp8 = layers * sum(o * i for o, i in shapes)
    channel_scales = layers * sum(o for o, _ in shapes)  # strategy "channel": one scale per output row
    bf16 = 2 * c["vocab_size"] * h + (2 * layers + 1) * h + channel_scales
    assert entry["params_by_dtype"] == {"F8_E4M3": fp8, "BF16": bf16}
    # the same linears hold the BF16 checkpoint's non-embedding weights (Llama-3.3-70B in part 1)
    base = _load("meta-llama/Llama-3.3-70B-Instruct")
    assert sum(base["params_by_dtype"].values()) == fp8 + bf16 - channel_scales
    group = c["quantization_config"]["config_groups"]["group_0"]
    assert group["weights"]["strategy"] == "channel" and c["quantization_config"]["ignore"] == ["lm_head"]
    # 67.68 GiB: an FP8 70B does not fit one 48 GB card but fits one 80 GB card at TP=1 (see plan tests)
    assert round(entry["weights_bytes"] / GIB, 2) == 67.68


# --------------------------------------------------------------------------- DeepSeek-V3.1


def test_deepseek_v31_has_v3_shapes_and_the_published_total() -> None:
    v31, v3 = _load("deepseek-ai/DeepSeek-V3.1"), _load("deepseek-ai/DeepSeek-V3")
    shape_keys = [k for k in v3["config"] if k not in ("quantization_config", "transformers_version")]
    assert {k: v31["config"][k] for k in shape_keys} == {k: v3["config"][k] for k in shape_keys}
    assert v31["config"]["quantization_config"]["scale_fmt"] == "ue8m0"
    # total_parameters 684,531,386,000 (safetensors) of deepseek-ai/DeepSeek-V3.1 in a public catalog;
    # the V3-layout formula (checked above against V3's HF split) gives the same total from the config.
    assert sum(_deepseek_v3_split(v31["config"]).values()) == 684_531_386_000
    assert sum(v31["params_by_dtype"].values()) == 684_531_386_000
    # without the MTP layer (not loaded for plain serving): 626.9 GiB, i.e. more than 8 x H100 hold
    served = _deepseek_v3_split(v31["config"], include_mtp=False)
    served_bytes = 2 * served["BF16"] + served["F8_E4M3"] + 4 * served["F32"]
    assert served_bytes == 673_150_611_808
    assert served_bytes / GIB > 0.92 * 8 * 79.19


# --------------------------------------------------------------------------- GLM-4.6 (Glm4Moe, 355B)


def _glm4_moe_params(c: dict[str, Any], *, mtp_own_embeddings: bool) -> tuple[int, int]:
    """(main model, MTP layers) parameters of a Glm4Moe checkpoint: q/k/v with bias (attention_bias),
    o without, per-head q_norm/k_norm when use_qk_norm, dense layers before first_k_dense_replace,
    then MoE layers (routed + shared experts, router gate + e_score_correction_bias), two RMSNorms per
    layer, untied embedding/lm_head, final norm. An MTP layer is one MoE layer plus enorm, hnorm,
    eh_proj (2h -> h), shared_head.norm and, in GLM-4.5, its own embed_tokens and shared_head.head."""
    h, hd = c["hidden_size"], c["head_dim"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    attention = (h * q + q) + 2 * (h * kv + kv) + q * h + (2 * hd if c.get("use_qk_norm") else 0)
    experts = c["n_routed_experts"]
    moe = (attention + (experts + c["n_shared_experts"]) * 3 * h * c["moe_intermediate_size"]
           + experts * h + experts + 2 * h)
    dense = attention + 3 * h * c["intermediate_size"] + 2 * h
    k = c["first_k_dense_replace"]
    vocab = c["vocab_size"]
    main = 2 * vocab * h + k * dense + (c["num_hidden_layers"] - k) * moe + h
    mtp = c["num_nextn_predict_layers"] * (moe + 2 * h + 2 * h * h + h + (2 * vocab * h if mtp_own_embeddings else 0))
    return main, mtp


def test_glm46_count_follows_from_the_rebuilt_config() -> None:
    entry = _load("zai-org/GLM-4.6")
    main, mtp = _glm4_moe_params(entry["config"], mtp_own_embeddings=False)
    # published: GLM-4.6 356,785,898,816 (MTP layer without own embeddings, ik_llama.cpp #812)
    assert main + mtp == entry["params_by_dtype"]["BF16"] == 356_785_898_816
    # the same shapes give GLM-4.7 without MTP (352,797,829,024) and GLM-4.5 / 4.7 with an MTP layer
    # that carries its own embedding and head (358,337,791,296): three published counts, one config
    assert main == 352_797_829_024
    assert sum(_glm4_moe_params(entry["config"], mtp_own_embeddings=True)) == 358_337_791_296


def test_glm45_air_formula_agrees_with_the_part1_check() -> None:
    # the same function on the GLM-4.5-Air config reproduces part 1's hand-checked total (110,468,824,832)
    air = _load("zai-org/GLM-4.5-Air")["config"]
    assert sum(_glm4_moe_params(air, mtp_own_embeddings=True)) == 110_468_824_832


# --------------------------------------------------------------------------- Qwen3.5 (Gated DeltaNet hybrid + ViT + MTP)


def _qwen35_text_params(t: dict[str, Any], *, mtp: bool = True) -> int:
    """Qwen3-Next / Qwen3.5 language model. Gated DeltaNet layer: in_proj_qkvz (h -> 2*Hk*dk + 2*Hv*dv),
    in_proj_ba (h -> 2*Hv), depthwise conv1d over q,k,v (2*Hk*dk + Hv*dv channels x kernel, no bias),
    dt_bias and A_log (Hv each), gated RMSNorm (dv), out_proj (Hv*dv -> h). Every full_attention_interval-th
    layer is gated attention: q_proj doubled for the output gate, k/v, o, q_norm/k_norm. MLP is dense or
    routed experts + shared expert + shared_expert_gate (h -> 1) + router. The MTP block is one gated
    attention layer with its MLP plus fc (2h -> h), two pre-fc norms and a final norm; it shares the
    main embedding and lm_head (mtp_use_dedicated_embeddings false)."""
    h, layers = t["hidden_size"], t["num_hidden_layers"]
    hk, dk = t["linear_num_key_heads"], t["linear_key_head_dim"]
    hv, dv = t["linear_num_value_heads"], t["linear_value_head_dim"]
    gdn = (h * (2 * hk * dk + 2 * hv * dv) + h * 2 * hv + (2 * hk * dk + hv * dv) * t["linear_conv_kernel_dim"]
           + 2 * hv + dv + hv * dv * h)
    hd = t["head_dim"]
    q, kv = t["num_attention_heads"] * hd, t["num_key_value_heads"] * hd
    attention = 2 * h * q + 2 * h * kv + q * h + 2 * hd
    if t.get("num_experts"):
        e = t["num_experts"]
        mlp = e * 3 * h * t["moe_intermediate_size"] + 3 * h * t["shared_expert_intermediate_size"] + h + h * e
    else:
        mlp = 3 * h * t["intermediate_size"]
    full = layers // t["full_attention_interval"]
    total = full * attention + (layers - full) * gdn + layers * (mlp + 2 * h) + 2 * t["vocab_size"] * h + h
    if mtp and t.get("mtp_num_hidden_layers"):
        total += t["mtp_num_hidden_layers"] * (attention + mlp + 2 * h) + 2 * h * h + 3 * h
    return total


def test_qwen35_formula_reproduces_qwen3_next() -> None:
    # Qwen3-Next-80B-A3B's HF count (catalog part 2 source), the text-only model of the same design
    config = _load("Qwen/Qwen3-Next-80B-A3B-Instruct")["config"]
    assert _qwen35_text_params(config) == 81_324_862_720


# the published (HF) parameter counts of the Qwen3.5 entries (their params_source)
QWEN35_PUBLISHED = [
    ("Qwen/Qwen3.5-27B", 27_781_427_952),
    ("Qwen/Qwen3.5-35B-A3B", 35_951_822_704),
    ("Qwen/Qwen3.5-122B-A10B", 125_086_497_008),
    ("Qwen/Qwen3.5-397B-A17B", 403_397_928_944),
]


@pytest.mark.parametrize(("model_id", "published"), QWEN35_PUBLISHED)
def test_qwen35_counts_follow_from_the_config(model_id: str, published: int) -> None:
    entry = _load(model_id)
    config = entry["config"]
    assert config["vision_config"]["deepstack_visual_indexes"] == []
    total = _qwen35_text_params(config["text_config"]) + _qwen3_vl_vision_params(config["vision_config"])
    assert total == published
    if entry["params_by_dtype"] is not None:
        assert sum(entry["params_by_dtype"].values()) == published


def test_qwen35_397b_inventory_parts() -> None:
    # the public checkpoint inventory splits 403,397,928,944 params into text (with embedding and head)
    # 396,346,350,336, vision 456,010,480 and MTP 6,595,568,128; 2,834 BF16 + 90 F32 tensors make the
    # payload 806,795,875,168 B, 17,280 B more than all-BF16 (the F32 tensors: 17,280 / 2 = 8,640 values)
    config = _load("Qwen/Qwen3.5-397B-A17B")["config"]
    text = config["text_config"]
    assert _qwen35_text_params(text, mtp=False) == 396_346_350_336
    assert _qwen35_text_params(text) - _qwen35_text_params(text, mtp=False) == 6_595_568_128
    assert _qwen3_vl_vision_params(config["vision_config"]) == 456_010_480
    assert _load("Qwen/Qwen3.5-397B-A17B")["weights_bytes"] - 2 * 403_397_928_944 == 17_280


# --------------------------------------------------------------------------- DeepSeek-R1-0528 (issue 13, round 2)


def test_deepseek_r1_0528_has_r1_shapes_and_the_v3_split() -> None:
    r0528, r1 = _load("deepseek-ai/DeepSeek-R1-0528"), _load("deepseek-ai/DeepSeek-R1")
    assert r0528["config"] == r1["config"]  # rebuilt from R1's (see config_source): same shapes, same FP8 format
    assert r0528["config"]["max_position_embeddings"] == 163_840  # what vLLM reported serving R1-0528 (llm-d guide)
    # the V3-layout formula, checked above against V3's HF split, gives the split from the config ...
    assert _deepseek_v3_split(r0528["config"]) == r0528["params_by_dtype"]
    # ... whose total rounds to the "685B params" Hugging Face shows for R1-0528
    assert round(sum(r0528["params_by_dtype"].values()) / 1e9) == 685


# --------------------------------------------------------------------------- nvidia Llama-3.3-70B FP8 (ModelOpt)


def test_nvidia_llama33_fp8_split_follows_from_the_config() -> None:
    entry = _load("nvidia/Llama-3.3-70B-Instruct-FP8")
    c = entry["config"]
    h, inter, layers = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    kv = c["num_key_value_heads"] * (h // c["num_attention_heads"])
    fp8 = layers * (2 * h * h + 2 * kv * h + 3 * inter * h)
    # the FP8 linears are the ones the RedHatAI entry counts, there confirmed by a published HF split
    assert fp8 == _load("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic")["params_by_dtype"]["F8_E4M3"]
    params = entry["params_by_dtype"]
    assert params["F8_E4M3"] == fp8
    # per-tensor scales: no per-channel BF16 scales (unlike compressed-tensors "channel"), only embeddings, head, norms
    assert params["BF16"] == 2 * c["vocab_size"] * h + (2 * layers + 1) * h
    assert params["F32"] * 4 < 10_000  # a few thousand scalar scales
    # HF shows "70.6B params" for 70B Llama FP8 checkpoints of this layout; the BF16 base has 70,553,706,496
    assert round(sum(params.values()) / 1e8) == 706
    assert sum(params.values()) - 70_553_706_496 == params["F32"]
    q = c["quantization_config"]
    assert q["quantization"] == {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}


def test_modelopt_hf_quant_config_reads_as_fp8_weights_and_fp8_kv() -> None:
    from vllmkit.arch import read_arch
    from vllmkit.estimate.specs import kv_dtype_bytes
    from vllmkit.hub.catalog import entry_to_metadata, find_entry
    from vllmkit.plan.variants import variant_label

    found = find_entry("nvidia/Llama-3.3-70B-Instruct-FP8")
    assert found is not None
    arch = read_arch(found.config)
    assert arch.quantization is not None and arch.quantization.method == "modelopt"
    assert arch.quantization.kv_cache_scheme == "fp8"
    assert kv_dtype_bytes("auto", arch) == 1 and kv_dtype_bytes("bfloat16", arch) == 2
    assert variant_label(entry_to_metadata(found), arch) == "fp8"
    # the file as published, before vLLM adds quant_method (producer modelopt + quant_algo FP8 -> "modelopt")
    raw = dict(found.config)
    raw["quantization_config"] = {k: v for k, v in raw["quantization_config"].items() if k != "quant_method"}
    arch_raw = read_arch(raw)
    assert arch_raw.quantization is not None
    assert (arch_raw.quantization.method, arch_raw.quantization.kv_cache_scheme) == ("modelopt", "fp8")
    nvfp4 = dict(raw, quantization_config={"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4"}})
    nvfp4_arch = read_arch(nvfp4)
    assert nvfp4_arch.quantization is not None and nvfp4_arch.quantization.method == "modelopt_fp4"
