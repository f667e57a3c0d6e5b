"""Data checks for the catalog entries added in round 10 (Chinese open MoE releases): DeepSeek-V3.2 and
V3.2-Exp, GLM-4.5, GLM-4.7, GLM-5, MiniMax-M2.1 / M2.5 and Kimi-K2-Instruct-0905.

As in parts 1-5, no figure is trusted because it is written down: every weight figure is a published
parameter count (HF totals quoted in a public table) or a sibling's checked split, and the tests re-derive
it from the config's shapes with the arithmetic written out, so a wrong config or a wrong count fails.
The DeepSeek-V3 layout formula and the Glm4Moe formula are part 3's, checked there against counts they
were not written from (DeepSeek-V3's HF dtype split; GLM-4.5-Air's hand-checked total).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    GIB,
    assert_a_rebuilt_config_says_so,
    assert_entry_basics,
    assert_weights_add_up,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog.test_catalog_data_part3 import _deepseek_v3_split, _glm4_moe_params
from tests.unit.catalog.test_catalog_data_part4 import rope_cache_bytes_by_hand

PART6_IDS: tuple[str, ...] = (
    "deepseek-ai/DeepSeek-V3.2",
    "deepseek-ai/DeepSeek-V3.2-Exp",
    "zai-org/GLM-4.7",
    "zai-org/GLM-4.5",
    "zai-org/GLM-5",
    "MiniMaxAI/MiniMax-M2.1",
    "MiniMaxAI/MiniMax-M2.5",
    "moonshotai/Kimi-K2-Instruct-0905",
)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _blocks(rows: int, cols: int) -> int:
    """float32 weight_scale_inv elements of a 128 x 128 block-quantized [rows, cols] FP8 weight."""
    return _cdiv(rows, 128) * _cdiv(cols, 128)


@pytest.mark.parametrize("model_id", PART6_IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["base_model"] == model_id
    assert entry["variant"] in ("bf16", "fp8")
    assert (entry["config"].get("quantization_config") is not None) == (entry["variant"] == "fp8")
    assert entry["weights_bytes_kind"] == "params_x_dtype"
    assert_weights_add_up(entry)
    # a config that is not this repository's own file says so in its source
    assert_a_rebuilt_config_says_so(entry["config_source"])


# --------------------------------------------------------------------------- DeepSeek-V3.2 (V3.1 + indexer)


def _dsa_indexer(c: dict[str, Any]) -> dict[str, int]:
    """The DeepSeek Sparse Attention lightning indexer of one layer, tensor by tensor:
    wq_b  [index_n_heads * index_head_dim, q_lora_rank]  F8_E4M3 + 128x128 F32 weight_scale_inv
    wk    [index_head_dim, hidden]                       F8_E4M3 + 128x128 F32 weight_scale_inv
    weights_proj [index_n_heads, hidden]                 BF16 (not quantized)
    k_norm LayerNorm weight + bias [index_head_dim] each BF16."""
    heads, dim, h, q_rank = c["index_n_heads"], c["index_head_dim"], c["hidden_size"], c["q_lora_rank"]
    return {
        "F8_E4M3": heads * dim * q_rank + dim * h,
        "F32": _blocks(heads * dim, q_rank) + _blocks(dim, h),
        "BF16": heads * h + 2 * dim,
    }


def test_deepseek_v32_sparse_attention_keys() -> None:
    for model_id in ("deepseek-ai/DeepSeek-V3.2", "deepseek-ai/DeepSeek-V3.2-Exp"):
        c = _load(model_id)["config"]
        assert c["model_type"] == "deepseek_v32" and c["architectures"] == ["DeepseekV32ForCausalLM"]
        assert (c["index_head_dim"], c["index_n_heads"], c["index_topk"]) == (128, 64, 2048)


def test_deepseek_v32_is_v31_plus_an_indexer_per_layer() -> None:
    """V3.2 keeps every V3.1 shape and adds the indexer to each of the 61 layers and the MTP layer:
    wq_b 8,192 x 1,536 = 12,582,912 and wk 128 x 7,168 = 917,504 FP8 (scales 64 x 12 = 768 and 1 x 56 = 56),
    weights_proj 64 x 7,168 = 458,752 and k_norm 2 x 128 BF16: 13,960,248 per layer, x 62 = 865,535,376;
    V3.1's 684,531,386,000 + 865,535,376 = 685,396,921,376, the published V3.2-Exp (and Speciale) count."""
    v31, v32 = _load("deepseek-ai/DeepSeek-V3.1")["config"], _load("deepseek-ai/DeepSeek-V3.2")["config"]
    new_keys = {"index_head_dim", "index_n_heads", "index_topk"}
    shape_keys = set(v31) - {"architectures", "model_type", "auto_map", "transformers_version"}
    assert {k: v32[k] for k in shape_keys} == {k: v31[k] for k in shape_keys}
    assert set(v32) - set(v31) == new_keys
    per_layer = _dsa_indexer(v32)
    assert per_layer == {"F8_E4M3": 13_500_416, "F32": 824, "BF16": 459_008}
    layers = v32["num_hidden_layers"] + v32["num_nextn_predict_layers"]
    assert layers * sum(per_layer.values()) == 865_535_376
    expected = {k: n + layers * per_layer[k] for k, n in _deepseek_v3_split(v31).items()}
    assert sum(_deepseek_v3_split(v31).values()) == 684_531_386_000  # part 3: V3.1's published total
    assert sum(expected.values()) == 685_396_921_376
    for model_id in ("deepseek-ai/DeepSeek-V3.2-Exp", "deepseek-ai/DeepSeek-V3.2"):
        assert _load(model_id)["params_by_dtype"] == expected
    assert _load("deepseek-ai/DeepSeek-V3.2-Exp")["config"] == v32


def test_deepseek_v32_published_count_leaves_out_exactly_the_block_scales() -> None:
    """DeepSeek-V3.2's listed total, 685,355,329,792, is 41,591,584 below V3.2-Exp's: every weight_scale_inv
    element (V3's 41,540,496 + 62 x 824 of the indexers) and nothing else. The F32 count minus the scales
    is the routers' e_score_correction_bias, 256 per MoE layer (58 + the MTP layer)."""
    entry = _load("deepseek-ai/DeepSeek-V3.2")
    c = entry["config"]
    moe_layers = c["num_hidden_layers"] - c["first_k_dense_replace"] + c["num_nextn_predict_layers"]
    scales = entry["params_by_dtype"]["F32"] - moe_layers * c["n_routed_experts"]
    assert scales == 41_540_496 + 62 * 824 == 41_591_584
    assert sum(entry["params_by_dtype"].values()) - scales == 685_355_329_792
    assert entry["weights_bytes"] == 689_468_986_496
    assert entry["weights_bytes"] / GIB == pytest.approx(642.12, abs=0.01)


# --------------------------------------------------------------------------- GLM-4.5 / GLM-4.7 (Glm4Moe 355B)


def test_glm47_and_glm45_are_glm46_shapes_with_own_mtp_embeddings() -> None:
    """Both publish 358,337,791,296 = the GLM-4.6 shapes (checked in part 3) with an MTP layer that carries
    its own embed_tokens and shared_head.head: 352,797,829,024 + 3,988,069,792 + 2 x 151,552 x 5,120."""
    glm46 = _load("zai-org/GLM-4.6")["config"]
    for model_id, context in (("zai-org/GLM-4.7", 202_752), ("zai-org/GLM-4.5", 131_072)):
        entry = _load(model_id)
        c = entry["config"]
        assert {k: v for k, v in c.items() if k != "max_position_embeddings"} == {
            k: v for k, v in glm46.items() if k != "max_position_embeddings"}
        assert c["max_position_embeddings"] == context
        main, mtp = _glm4_moe_params(c, mtp_own_embeddings=True)
        assert main == 352_797_829_024
        assert mtp == 3_988_069_792 + 2 * 151_552 * 5_120
        assert main + mtp == entry["params_by_dtype"]["BF16"] == 358_337_791_296
        assert entry["weights_bytes"] == 2 * 358_337_791_296


def test_glm47_fp8_count_is_one_scale_per_output_channel() -> None:
    """Not an entry (no quantization_config found), but the published GLM-4.7-FP8 count, 358,458,391,872,
    is the BF16 count + 120,600,576 = one scale per output row of every quantized linear: attention q, k,
    v, o (12,288 + 1,024 + 1,024 + 5,120) in all 93 layers, the dense MLPs (2 x 12,288 + 5,120) of 3 and
    161 experts' gate/up/down (2 x 1,536 + 5,120) in 89 MoE layers + the MTP layer."""
    c = _load("zai-org/GLM-4.7")["config"]
    h, hd = c["hidden_size"], c["head_dim"]
    attention_rows = (c["num_attention_heads"] + 2 * c["num_key_value_heads"]) * hd + h
    dense_rows = 2 * c["intermediate_size"] + h
    moe_rows = (c["n_routed_experts"] + c["n_shared_experts"]) * (2 * c["moe_intermediate_size"] + h)
    k = c["first_k_dense_replace"]
    moe_layers = c["num_hidden_layers"] - k + c["num_nextn_predict_layers"]
    channel_scales = (k + moe_layers) * attention_rows + k * dense_rows + moe_layers * moe_rows
    assert channel_scales == 120_600_576
    assert 358_337_791_296 + channel_scales == 358_458_391_872


# --------------------------------------------------------------------------- GLM-5 (GlmMoeDsa: MLA + DSA)


def _glm5_params(c: dict[str, Any], *, mtp_own_embeddings: bool) -> int:
    """GlmMoeDsa, BF16: per layer MLA q_a [q_rank, h], q_a_layernorm, q_b [heads*(nope+rope), q_rank],
    kv_a_proj_with_mqa [kv_rank+rope, h], kv_a_layernorm, kv_b [heads*(nope+v), kv_rank], o [h, heads*v],
    the DSA indexer (wq_b, wk, weights_proj, k_norm weight+bias), two RMSNorms, then a dense MLP (first
    layers) or routed + shared experts with router and e_score_correction_bias. MTP layer: one more layer
    + enorm, hnorm, eh_proj (2h -> h), shared_head.norm (+ own embedding and head if it had them)."""
    h, heads = c["hidden_size"], c["num_attention_heads"]
    q_rank, kv_rank = c["q_lora_rank"], c["kv_lora_rank"]
    nope, rope, v = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    attention = (q_rank * h + q_rank + heads * (nope + rope) * q_rank + (kv_rank + rope) * h + kv_rank
                 + heads * (nope + v) * kv_rank + h * heads * v)
    indexer = sum(_dsa_indexer(c).values()) - _dsa_indexer(c)["F32"]  # BF16 checkpoint: no scales
    e = c["n_routed_experts"]
    moe = (e + c["n_shared_experts"]) * 3 * h * c["moe_intermediate_size"] + e * h + e
    dense = 3 * h * c["intermediate_size"]
    k, n, vocab = c["first_k_dense_replace"], c["num_hidden_layers"], c["vocab_size"]
    layer = attention + indexer + 2 * h
    main = 2 * vocab * h + h + n * layer + k * dense + (n - k) * moe
    mtp = c["num_nextn_predict_layers"] * (layer + moe + 2 * h + 2 * h * h + h
                                            + (2 * vocab * h if mtp_own_embeddings else 0))
    return main + mtp


def test_glm5_count_follows_from_the_config() -> None:
    """753,864,139,008, the published count, with an MTP layer that shares the main embedding and head
    (GLM-4.6 style); with its own copies it would be 2 x 154,880 x 6,144 = 1,903,165,440 more."""
    entry = _load("zai-org/GLM-5")
    c = entry["config"]
    assert c["model_type"] == "glm_moe_dsa"
    assert (c["index_head_dim"], c["index_n_heads"], c["index_topk"]) == (128, 32, 2048)
    assert _dsa_indexer(c) == {"F8_E4M3": 8_388_608 + 786_432, "F32": 512 + 48, "BF16": 196_608 + 256}
    total = _glm5_params(c, mtp_own_embeddings=False)
    assert total == entry["params_by_dtype"]["BF16"] == 753_864_139_008
    assert _glm5_params(c, mtp_own_embeddings=True) - total == 2 * 154_880 * 6_144
    assert entry["weights_bytes"] == 2 * total


def test_glm5_fp8_count_is_the_bf16_count_plus_block_scales() -> None:
    """GLM-5-FP8's published 753,910,024,032 = GLM-5's count + one F32 scale per 128 x 128 block of every
    quantized linear (all MLA, indexer wq_b/wk, dense and expert linears; not routers, embeddings, head
    or weights_proj) over the 78 layers + MTP layer: 45,885,024. The DeepSeek-V3 split of part 3 (fp8
    layout) plus the indexer gives the same scale count."""
    c = _load("zai-org/GLM-5")["config"]
    split = _deepseek_v3_split(c)  # MLA + MoE linears with block scales, F32 routers' bias included
    layers = c["num_hidden_layers"] + c["num_nextn_predict_layers"]
    moe_layers = layers - c["first_k_dense_replace"]
    scales = split["F32"] - moe_layers * c["n_routed_experts"] + layers * _dsa_indexer(c)["F32"]
    assert scales == 45_885_024
    assert 753_864_139_008 + scales == 753_910_024_032


# --------------------------------------------------------------------------- MiniMax-M2.1 / M2.5 (twins of M2)


def test_minimax_m21_m25_are_m2_twins() -> None:
    """Same config (M2.5: every key of a trimmed vendored copy agrees, see config_source), same FP8 layout;
    published counts: M2.5 228,703,644,928 = the full split (with the 13,880,064 F32 block scales), M2.1
    228,689,764,864 = the same table's M2 count, the split without those scales."""
    m2 = _load("MiniMaxAI/MiniMax-M2")
    c = m2["config"]
    h, hd, inter, experts = c["hidden_size"], c["head_dim"], c["intermediate_size"], c["num_local_experts"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    scales = c["num_hidden_layers"] * (2 * _blocks(q, h) + 2 * _blocks(kv, h) + experts * 3 * _blocks(inter, h))
    assert scales == 13_880_064
    for model_id, published in (("MiniMaxAI/MiniMax-M2.5", 228_703_644_928),
                                ("MiniMaxAI/MiniMax-M2.1", 228_689_764_864 + scales)):
        entry = _load(model_id)
        assert entry["config"] == c
        assert entry["params_by_dtype"] == m2["params_by_dtype"]
        assert sum(entry["params_by_dtype"].values()) == published
        assert entry["weights_bytes"] == m2["index_total_size"] == 230_121_630_720


# --------------------------------------------------------------------------- Kimi-K2-Instruct-0905


def test_kimi_k2_0905_has_k2_shapes_and_a_256k_context() -> None:
    """Kimi-K2-Instruct's shapes with yarn factor 64 (262,144 = 4,096 x 64 tokens); the FP8 weights are
    the shape arithmetic to the parameter, F32 = 62,495,192 block scales + 60 x 384 router biases, and the
    published total 1,026,470,735,448 leaves 7,808 (= 61 x 128) BF16 parameters the arithmetic does not
    explain (Kimi-K2-Instruct's HF BF16 count is 3,416 above it too)."""
    k2, entry = _load("moonshotai/Kimi-K2-Instruct"), _load("moonshotai/Kimi-K2-Instruct-0905")
    c, c0 = entry["config"], k2["config"]
    assert {k: v for k, v in c.items() if k not in ("rope_scaling", "max_position_embeddings")} == {
        k: v for k, v in c0.items() if k not in ("rope_scaling", "max_position_embeddings")}
    assert c["rope_scaling"] == dict(c0["rope_scaling"], factor=64.0)
    assert c["max_position_embeddings"] == c["rope_scaling"]["original_max_position_embeddings"] * 64
    derived = _deepseek_v3_split(c)
    published = entry["params_by_dtype"]
    assert published["F8_E4M3"] == derived["F8_E4M3"] == k2["params_by_dtype"]["F8_E4M3"]
    assert published["F32"] == derived["F32"] == 62_495_192 + 60 * 384
    assert published["BF16"] - derived["BF16"] == 7_808
    assert sum(published.values()) == 1_026_470_735_448


# --------------------------------------------------------------------------- the planner reads them


def test_the_planner_finds_and_reads_them() -> None:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import find_entry

    for model_id in PART6_IDS:
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        arch = read_arch(found.config)
        assert arch.num_hidden_layers == found.config["num_hidden_layers"]
        if "kv_lora_rank" in found.config:
            assert arch.mla is not None


@pytest.mark.parametrize("model_id", PART6_IDS)
def test_the_plan_starts_from_the_catalog_bytes(model_id: str) -> None:
    """At TP=8 each rank holds an eighth of weights_bytes; with an MTP layer (loaded only for MTP
    speculative decoding) the planner drops that layer, about one layer of the 62-93, never more than 3 %."""
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    entry = _load(model_id)
    tp = 8
    plan = build_plan(PlanRequest(model=model_id, source="catalog", gpu="h200", tensor_parallel_size=tp),
                      {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"})
    # memory.weights_bytes is per rank: an eighth of the layers' bytes, plus what every rank holds whole
    # (MLA down-projections, indexers, MoE routers: estimate/weights.replicated_layer_bytes)
    from vllmkit.arch import read_arch
    from vllmkit.estimate.weights import replicated_layer_bytes

    arch = read_arch(entry["config"])
    whole = replicated_layer_bytes(arch)
    # less the RoPE cache every rank holds whole (not in the checkpoint)
    rope = rope_cache_bytes_by_hand(entry["config"])
    loaded = (plan.memory.weights_bytes - rope - arch.num_hidden_layers * (whole - whole // tp)) * tp
    if entry["config"].get("num_nextn_predict_layers", 0) == 0:
        assert abs(loaded - entry["weights_bytes"]) <= 2 * tp * (arch.num_hidden_layers + 1)  # integer division per rank
    else:
        assert 0.97 * entry["weights_bytes"] < loaded < entry["weights_bytes"]
