"""Data checks for the catalog entries of round 11: GLM-5-FP8, GLM-5.1 and GLM-5.1-FP8, and Kimi-K2.5.

As in parts 1-6, no figure is trusted because it is written down: each weight figure is a published count
(a public table of HF parameter counts, an audited safetensors payload) and the tests re-derive it from the
config's shapes with the arithmetic written out, so a wrong config, a wrong count or a wrong split fails.
The GLM-5 formula (_glm5_params) and the DSA indexer are part 6 (cn)'s, checked there on GLM-5's published
BF16 count; the DeepSeek-V3 FP8 split is part 3's, checked there on DeepSeek-V3's HF dtype split.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    DATA_DIR,
    GIB,
    assert_a_rebuilt_config_says_so,
    assert_entry_basics,
    assert_weights_add_up,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog.test_catalog_data_part3 import _deepseek_v3_split
from tests.unit.catalog.test_catalog_data_part4 import rope_cache_bytes_by_hand
from tests.unit.catalog.test_catalog_data_part6_cn import _blocks, _dsa_indexer, _glm5_params

GLM_IDS: tuple[str, ...] = ("zai-org/GLM-5-FP8", "zai-org/GLM-5.1", "zai-org/GLM-5.1-FP8")
PART6_GLM5_IDS: tuple[str, ...] = (*GLM_IDS, "moonshotai/Kimi-K2.5")

# published totals (table id 69468411049: total_params)
GLM5_BF16_COUNT = 753_864_139_008
GLM5_FP8_COUNT = 753_910_024_032


@pytest.mark.parametrize("model_id", PART6_GLM5_IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["variant"] in ("bf16", "fp8", "int4")
    assert_weights_add_up(entry)
    assert_a_rebuilt_config_says_so(entry["config_source"])


def test_variants_and_base_models() -> None:
    """An FP8 release hangs under its BF16 base (the planner lists them as siblings); the BF16 one is its own base."""
    expected = {
        "zai-org/GLM-5-FP8": ("zai-org/GLM-5", "fp8"),
        "zai-org/GLM-5.1": ("zai-org/GLM-5.1", "bf16"),
        "zai-org/GLM-5.1-FP8": ("zai-org/GLM-5.1", "fp8"),
        "moonshotai/Kimi-K2.5": ("moonshotai/Kimi-K2.5", "int4"),
    }
    for model_id, (base, variant) in expected.items():
        entry = _load(model_id)
        assert (entry["base_model"], entry["variant"]) == (base, variant)
    for model_id in GLM_IDS:
        entry = _load(model_id)
        assert (entry["config"].get("quantization_config") is not None) == (entry["variant"] == "fp8")


# --------------------------------------------------------------------------- GLM-5.1 = GLM-5 shapes


def test_glm51_configs_are_glm5_configs() -> None:
    """GLM-5.1 (BF16 and FP8) and GLM-5-FP8 keep every GLM-5 key; only transformers_version moves (5.4.0 for
    5.1) and the FP8 repositories add quantization_config, identical in both."""
    glm5 = _load("zai-org/GLM-5")["config"]
    for model_id in GLM_IDS:
        c = _load(model_id)["config"]
        assert set(c) - {"quantization_config"} == set(glm5)
        diff = {k for k in glm5 if c[k] != glm5[k]}
        assert diff == (set() if model_id == "zai-org/GLM-5-FP8" else {"transformers_version"})
    assert _load("zai-org/GLM-5.1")["config"]["transformers_version"] == "5.4.0"
    assert (_load("zai-org/GLM-5-FP8")["config"]["quantization_config"]
            == _load("zai-org/GLM-5.1-FP8")["config"]["quantization_config"])


def test_glm51_bf16_count_follows_from_the_config() -> None:
    """The published GLM-5.1 count equals GLM-5's, 753,864,139,008, and part 6's GlmMoeDsa formula gives it
    from GLM-5.1's own config (an MTP layer that shares the main embedding and head)."""
    entry = _load("zai-org/GLM-5.1")
    assert _glm5_params(entry["config"], mtp_own_embeddings=False) == GLM5_BF16_COUNT
    assert entry["params_by_dtype"] == {"BF16": GLM5_BF16_COUNT}
    assert entry["weights_bytes"] == 2 * GLM5_BF16_COUNT == 1_507_728_278_016
    assert entry["params_by_dtype"] == _load("zai-org/GLM-5")["params_by_dtype"]


# --------------------------------------------------------------------------- GLM-5-FP8 / GLM-5.1-FP8


def _not_converted(c: dict[str, Any]) -> Counter[str]:
    """modules_to_not_convert with the layer number replaced by N, counted."""
    names = c["quantization_config"]["modules_to_not_convert"]
    return Counter(re.sub(r"layers\.\d+\.", "layers.N.", n) for n in names)


def test_fp8_quantization_config() -> None:
    """128 x 128 block e4m3 with dynamic activations; kept in BF16: embeddings, head, every norm, the indexer's
    k_norm and weights_proj in all 79 layers, the 76 routers with their bias, and the MTP layer's eh_proj."""
    for model_id in ("zai-org/GLM-5-FP8", "zai-org/GLM-5.1-FP8"):
        c = _load(model_id)["config"]
        q = c["quantization_config"]
        assert (q["quant_method"], q["fmt"], q["activation_scheme"], q["weight_block_size"]) == (
            "fp8", "e4m3", "dynamic", [128, 128])
        layers = c["num_hidden_layers"] + c["num_nextn_predict_layers"]
        moe_layers = layers - c["first_k_dense_replace"]
        kept = _not_converted(c)
        for per_layer in ("input_layernorm", "post_attention_layernorm", "self_attn.indexer.k_norm",
                          "self_attn.indexer.k_norm.bias", "self_attn.indexers_proj", "self_attn.kv_a_layernorm",
                          "self_attn.q_a_layernorm"):
            assert kept[f"model.layers.N.{per_layer}"] == layers == 79
        assert kept["model.layers.N.mlp.gate"] == kept["model.layers.N.mlp.gate.e_score_correction_bias"] == moe_layers
        for mtp_only in ("eh_proj", "enorm", "hnorm", "shared_head.norm"):
            assert kept[f"model.layers.N.{mtp_only}"] == 1
        assert "model.layers.78.eh_proj" in q["modules_to_not_convert"]
        assert kept["lm_head"] == kept["model.embed_tokens"] == kept["model.norm"] == 1
        assert sum(kept.values()) == len(q["modules_to_not_convert"]) == 712


def _glm5_fp8_split(c: dict[str, Any]) -> dict[str, int]:
    """Part 3's DeepSeek-V3 FP8 split (MLA + MoE linears F8_E4M3 + F32 128x128 scales; norms, routers,
    embeddings, head, MTP enorm/hnorm/eh_proj/shared_head.norm BF16; e_score_correction_bias F32), without the
    MTP layer's own embedding and head (GLM-5 shares them), plus the DSA indexer of each of the 79 layers."""
    split = _deepseek_v3_split(c)
    split["BF16"] -= 2 * c["vocab_size"] * c["hidden_size"]
    layers = c["num_hidden_layers"] + c["num_nextn_predict_layers"]
    for dtype, n in _dsa_indexer(c).items():
        split[dtype] += layers * n
    return split


def test_glm5_fp8_split_follows_from_the_config_and_the_published_count() -> None:
    """Written out: 79 layers x MLA (q_a 2,048 x 6,144, q_b 16,384 x 2,048, kv_a 576 x 6,144, kv_b 28,672 x 512,
    o 6,144 x 16,384), 3 dense MLPs (3 x 12,288 x 6,144), 76 MoE layers x 257 experts x 3 x 2,048 x 6,144, and
    79 indexers (wq_b 4,096 x 2,048 + wk 128 x 6,144) in F8_E4M3: 751,749,169,152.
    F32: 45,885,024 block scales + 76 x 256 e_score_correction_bias = 45,904,480.
    BF16: embedding + head 2 x 154,880 x 6,144 = 1,903,165,440, final norm 6,144, per layer 2 x 6,144 + 2,048 +
    512 (norms) + 32 x 6,144 + 2 x 128 (weights_proj, k_norm) = 211,712 x 79 = 16,725,248, routers 76 x 256 x
    6,144 = 119,537,664, MTP enorm + hnorm + shared_head.norm 3 x 6,144 and eh_proj 6,144 x 12,288:
    2,114,950,400. Sum 753,910,024,032 = the published GLM-5-FP8 and GLM-5.1-FP8 count."""
    for model_id in ("zai-org/GLM-5-FP8", "zai-org/GLM-5.1-FP8"):
        entry = _load(model_id)
        c = entry["config"]
        split = _glm5_fp8_split(c)
        h, vocab = c["hidden_size"], c["vocab_size"]
        bf16_by_hand = (2 * vocab * h + h + 79 * (2 * h + 2_048 + 512 + 32 * h + 2 * 128) + 76 * 256 * h
                        + 3 * h + 2 * h * h)
        assert split["BF16"] == bf16_by_hand == 2_114_950_400
        assert split["F32"] == 45_885_024 + 76 * 256 == 45_904_480
        assert split["F8_E4M3"] == 751_749_169_152
        assert sum(split.values()) == GLM5_FP8_COUNT
        assert entry["params_by_dtype"] == split
        assert entry["weights_bytes"] == 2 * split["BF16"] + split["F8_E4M3"] + 4 * split["F32"] == 756_162_687_872


def test_glm5_fp8_is_the_bf16_model_requantized() -> None:
    """Every BF16 parameter of GLM-5 is either still BF16 or now F8_E4M3 (except the 19,456 router biases
    counted in F32), and the F32 rest is exactly one scale per 128 x 128 block of the quantized linears."""
    c = _load("zai-org/GLM-5-FP8")["config"]
    split = _glm5_fp8_split(c)
    biases = 76 * c["n_routed_experts"]
    assert split["BF16"] + split["F8_E4M3"] + biases == _glm5_params(c, mtp_own_embeddings=False) == GLM5_BF16_COUNT
    # the block scales, layer by layer: MLA (16 x 48 + 128 x 16 + 5 x 48 + 224 x 4 + 48 x 128 = 10,096), indexer
    # (32 x 16 + 1 x 48 = 560), dense MLP (3 x 96 x 48 = 13,824), MoE (257 x 3 x 16 x 48 = 592,128)
    mla = _blocks(2_048, 6_144) + _blocks(16_384, 2_048) + _blocks(576, 6_144) + _blocks(28_672, 512) + _blocks(6_144, 16_384)
    assert (mla, _blocks(4_096, 2_048) + _blocks(128, 6_144)) == (10_096, 560)
    dense, moe = 3 * _blocks(12_288, 6_144), 257 * 3 * _blocks(2_048, 6_144)
    assert (dense, moe) == (13_824, 592_128)
    assert 79 * (mla + 560) + 3 * dense + 76 * moe == split["F32"] - biases == 45_885_024


def test_glm51_fp8_log_loads_what_the_split_predicts() -> None:
    """Independent evidence (benchmarks/data/collected-startup-logs-2.jsonl, two public vLLM logs of
    GLM-5.1-FP8 on 8 x H200, TP8): 'Model loading took 89.39 GiB' per rank. The split sharded as vLLM's
    DeepseekV2/GlmMoeDsa code does at TP8 (fused q_a/kv_a, indexer wq_b/wk/weights_proj, routers and norms
    replicated; q_b, kv_b, o, MLPs, experts and vocab split 8 ways; no MTP layer): 88.69 GiB, within 1 %."""
    rows = [json.loads(line) for line in (DATA_DIR.parents[3] / "benchmarks" / "data"
                                          / "collected-startup-logs-2.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    logged = {r["id"]: r["weights_gib"] for r in rows if r["id"].startswith("bisect-glm51")}
    assert len(logged) == 2 and set(logged.values()) == {89.39}
    c, tp = _load("zai-org/GLM-5.1-FP8")["config"], 8
    h, heads, q_rank, kv_rank = c["hidden_size"], c["num_attention_heads"], c["q_lora_rank"], c["kv_lora_rank"]
    nope, rope, v = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]

    def fp8(out: int, inp: int, shards: int = 1) -> float:
        return (out * inp + 4 * _blocks(out, inp)) / shards

    attention = (fp8(q_rank + kv_rank + rope, h) + fp8(heads * (nope + rope), q_rank, tp) + fp8(heads * (nope + v), kv_rank, tp)
                 + fp8(h, heads * v, tp) + 2 * (q_rank + kv_rank + 2 * h))
    indexer = fp8(4_096, q_rank) + fp8(128, h) + 2 * (32 * h + 2 * 128)
    experts = c["n_routed_experts"]
    moe = (experts + 1) * 3 * fp8(c["moe_intermediate_size"], h, tp) + 2 * experts * h + 4 * experts
    k, n = c["first_k_dense_replace"], c["num_hidden_layers"]
    per_rank = (2 * 2 * c["vocab_size"] * h / tp + 2 * h + n * (attention + indexer)
                + k * 3 * fp8(c["intermediate_size"], h, tp) + (n - k) * moe) / GIB
    assert per_rank == pytest.approx(88.69, abs=0.01)
    assert per_rank < 89.39 < 1.01 * per_rank
    # a BF16 checkpoint would not even fit: the whole GLM-5.1 over 8 ranks is 175.5 GiB per rank
    assert _load("zai-org/GLM-5.1")["weights_bytes"] / tp / GIB > 175


# --------------------------------------------------------------------------- Kimi-K2.5


def _moonvit_params(v: dict[str, Any], text_hidden: int) -> tuple[int, int]:
    """MoonViT + patchmerger, BF16, with biases: per block qkv (3h x h), o (h x h), fc0 (i x h), fc1 (h x i),
    norm0/norm1 LayerNorms; patch embedding conv (h x 3 x p x p) + bias, learned H x W x h position table,
    final LayerNorm; projector LayerNorm(h), Linear(4h -> 4h), Linear(4h -> text hidden) for a 2 x 2 merge."""
    h, i, p = v["vt_hidden_size"], v["vt_intermediate_size"], v["patch_size"]
    block = 3 * h * h + 3 * h + h * h + h + i * h + i + h * i + h + 2 * 2 * h
    tower = (v["vt_num_hidden_layers"] * block + h * 3 * p * p + h
             + v["init_pos_emb_height"] * v["init_pos_emb_width"] * h + 2 * h)
    merged = h * v["merge_kernel_size"][0] * v["merge_kernel_size"][1]
    projector = 2 * v["mm_hidden_size"] + merged * merged + merged + merged * text_hidden + text_hidden
    return tower, projector


def test_kimi_k25_text_model_is_k2_thinking() -> None:
    """The text_config carries every key of the catalog's Kimi-K2-Thinking config with the same value (the
    INT4 quantization_config included); the wrapper is KimiK25ForConditionalGeneration, which vLLM 0.32 knows."""
    from vllmkit.arch.known import VLLM_NATIVE_ARCHITECTURES

    c = _load("moonshotai/Kimi-K2.5")["config"]
    thinking = _load("moonshotai/Kimi-K2-Thinking")["config"]
    text = c["text_config"]
    assert c["architectures"] == ["KimiK25ForConditionalGeneration"] and c["model_type"] == "kimi_k25"
    assert "KimiK25ForConditionalGeneration" in VLLM_NATIVE_ARCHITECTURES
    assert {k: v for k, v in thinking.items() if k != "torch_dtype"} == {k: text[k] for k in thinking if k != "torch_dtype"}
    assert text["dtype"] == thinking["torch_dtype"] == "bfloat16"
    assert text["max_position_embeddings"] == 4_096 * 64 == 262_144
    assert "quantization_config" not in c  # only inside text_config, where vllmkit's reader finds it


def test_kimi_k25_weights_are_k2_thinking_plus_the_vision_tower() -> None:
    """Vision tower 27 x 15,239,504 + 1,152 x 588 + 1,152 + 64 x 64 x 1,152 + 2 x 1,152 = 416,866,032 and
    projector 2 x 1,152 + 4,608 x 4,608 + 4,608 + 4,608 x 7,168 + 7,168 = 54,277,888: 471,143,920 BF16.
    K2-Thinking's logical parameters + that = K2.5's audited 1,026,879,376,368; K2-Thinking's HF split less its
    61 x 128 BF16 per-layer buffers + that, in bytes = K2.5's audited payload 595,148,192,736 (= index total)."""
    entry = _load("moonshotai/Kimi-K2.5")
    thinking = _load("moonshotai/Kimi-K2-Thinking")
    c = entry["config"]
    tower, projector = _moonvit_params(c["vision_config"], c["text_config"]["hidden_size"])
    assert (tower, projector) == (416_866_032, 54_277_888)
    vision = tower + projector
    assert 1_026_408_232_448 + vision == 1_026_879_376_368
    expected = dict(thinking["params_by_dtype"])
    expected["BF16"] += vision - 61 * 128
    assert entry["params_by_dtype"] == expected == {"BF16": 43_902_267_888, "I32": 126_835_891_200, "F32": 23_040}
    assert entry["weights_bytes"] == entry["index_total_size"] == 595_148_192_736
    assert entry["weights_bytes"] - thinking["weights_bytes"] == 2 * (vision - 61 * 128)
    assert entry["weights_bytes"] / GIB == pytest.approx(554.27, abs=0.01)


# --------------------------------------------------------------------------- the planner reads and plans them


def test_the_planner_finds_and_reads_them() -> None:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import catalog_siblings, find_entry

    for model_id in PART6_GLM5_IDS:
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        arch = read_arch(found.config)
        assert arch.mla is not None
        if model_id.startswith("zai-org/"):
            assert arch.num_hidden_layers == 78
            assert (arch.quantization is not None) == model_id.endswith("-FP8")
        else:
            assert arch.num_hidden_layers == 61
            assert arch.quantization is not None and arch.quantization.method == "compressed-tensors"
            assert arch.quantization.bits == 4
    assert {e.id for e in catalog_siblings("zai-org/GLM-5-FP8")} == {"zai-org/GLM-5", "zai-org/GLM-5-FP8"}
    assert {e.id for e in catalog_siblings("zai-org/GLM-5.1")} == {"zai-org/GLM-5.1", "zai-org/GLM-5.1-FP8"}


@pytest.mark.parametrize("model_id", PART6_GLM5_IDS)
def test_the_plan_at_tp8_on_h200_starts_from_the_catalog_bytes(model_id: str) -> None:
    """At TP=8 each rank holds an eighth of weights_bytes; with GLM's MTP layer (loaded only for MTP speculative
    decoding) the planner drops about one layer of 79, never more than 3 %. Kimi-K2.5 has no MTP layer."""
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    entry = _load(model_id)
    tp = 8
    plan = build_plan(PlanRequest(model=model_id, source="catalog", gpu="h200", tensor_parallel_size=tp),
                      {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"})
    assert plan.parallel.tensor_parallel_size == tp
    # memory.weights_bytes is per rank: an eighth of the layers' bytes, plus what every rank holds whole
    # (MLA down-projections, indexers, MoE routers: estimate/weights.replicated_layer_bytes)
    from vllmkit.arch import read_arch
    from vllmkit.estimate.weights import replicated_layer_bytes

    arch = read_arch(entry["config"])
    whole = replicated_layer_bytes(arch)
    # less the RoPE cache every rank holds whole (not in the checkpoint)
    rope = rope_cache_bytes_by_hand(entry["config"])
    loaded = (plan.memory.weights_bytes - rope - arch.num_hidden_layers * (whole - whole // tp)) * tp
    text = entry["config"].get("text_config", entry["config"])
    if text.get("num_nextn_predict_layers", 0) == 0:
        assert abs(loaded - entry["weights_bytes"]) <= 2 * tp * (arch.num_hidden_layers + 1)
    else:
        assert 0.97 * entry["weights_bytes"] < loaded < entry["weights_bytes"]
    if entry["variant"] != "bf16":  # the FP8 and INT4 checkpoints fit one 8 x H200 node
        assert plan.fits
