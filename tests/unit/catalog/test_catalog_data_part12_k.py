"""Data checks for the catalog entries of round 26 (part 12 k): MiniMaxAI/MiniMax-M2.7 and Qwen/Qwen3.8-27B.

Transcribed: the MiniMax-M2.7 config (KinChow/model-structure-viewer, the same git blob as aiconfigurator's copy).
REBUILT: the Qwen3.8-27B config (Qwen3.6-27B's file with transformers_version 5.8.0.dev0, the whole published diff).
Left out this round although sourced: moonshotai/Kimi-Linear-48B-A3B-Instruct (the planner reads its 20 KDA
linear-attention layers as MLA, about 3.9x its KV per token, until KDA state is modelled) and
nvidia/Qwen3.8-27B-NVFP4 (its config could only be rebuilt from a sibling's export). As in the earlier parts
the figures are not trusted because they are written down: each parameter count is re-derived here from the config's
tensor shapes and compared with the published count, the dtype split with params_by_dtype, and the bytes with the
published index total or tensor listing.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    GIB,
    assert_config_source_marked,
    assert_entry_basics,
    assert_weights_add_up,
    split_bytes,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog._catalog_checks import plan_catalog as _plan
from tests.unit.catalog.test_catalog_data_part6_qwen35 import qwen35_params

M27 = "MiniMaxAI/MiniMax-M2.7"
QWEN38 = "Qwen/Qwen3.8-27B"
IDS: tuple[str, ...] = (M27, QWEN38)
REBUILT = frozenset({QWEN38})
VARIANTS = {M27: "fp8", QWEN38: "bf16"}

# independently published figures (sources in each entry's params_source / index_source)
M27_COUNT = 228_703_644_928  # '参数总量' of the M2.7 inspection report, find_string/read_file id 62693775865
M27_TENSOR_BYTES = 230_121_630_720  # the same report's tensor listing ('张量累计大小 214.32 GB'), = M2's hf-mem total
QWEN38_COUNT = 27_781_427_952  # header count of the 18 shards, Enucatl/qw38 model-inventory.md (id 68766090771)
QWEN38_INDEX_TOTAL = 55_562_855_904  # index metadata.total_size (ids 68766090771, 68366820786, 69188382631)
PUBLISHED = {M27: M27_COUNT, QWEN38: QWEN38_COUNT}


def _blocks(rows: int, cols: int) -> int:
    """FP8 128 x 128 block scales of a [rows, cols] weight: ceil(rows / 128) x ceil(cols / 128)."""
    return -(-rows // 128) * -(-cols // 128)


# --------------------------------------------------------------------------- the shape formulas


def minimax_m2_split(c: dict[str, Any]) -> dict[str, int]:
    """MiniMax-M2 layout, tensor by tensor as the M2.7 report lists it: per layer q [48 x 128, H], k and v
    [8 x 128, H], o [H, 48 x 128] and 256 experts x w1 / w3 [I, H] + w2 [H, I] in FP8, each with an F32
    weight_scale_inv per 128 x 128 block; router gate [E, H] and e_score_correction_bias [E] in F32; q_norm, k_norm
    and the two layernorms in BF16; embed_tokens and an untied lm_head [V, H] and the final norm in BF16. No MTP
    tensors (use_mtp in the config notwithstanding)."""
    h, hd, inter, e = c["hidden_size"], c["head_dim"], c["intermediate_size"], c["num_local_experts"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    layers = c["num_hidden_layers"]
    mats = [(q, h), (kv, h), (kv, h), (h, q)] + e * [(inter, h), (h, inter), (inter, h)]
    fp8 = layers * sum(r * k for r, k in mats)
    f32 = layers * (sum(_blocks(r, k) for r, k in mats) + e * h + e)
    bf16 = layers * (q + kv + 2 * h) + (1 if c["tie_word_embeddings"] else 2) * c["vocab_size"] * h + h
    return {"BF16": bf16, "F32": f32, "F8_E4M3": fp8}


def shape_count(model_id: str, c: dict[str, Any]) -> int:
    if model_id == M27:
        return sum(minimax_m2_split(c).values())
    return qwen35_params(c)["total"]


# --------------------------------------------------------------------------- keys, sources, bytes


@pytest.mark.parametrize("model_id", IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["base_model"] == model_id and entry["variant"] == VARIANTS[model_id]
    assert_weights_add_up(entry)
    assert_config_source_marked(entry["config_source"], model_id in REBUILT)


@pytest.mark.parametrize("model_id", IDS)
def test_the_count_follows_from_the_config_shapes(model_id: str) -> None:
    entry = _load(model_id)
    count = shape_count(model_id, entry["config"])
    assert count == PUBLISHED[model_id] == sum(entry["params_by_dtype"].values())


@pytest.mark.parametrize(("key", "delta"), [("num_hidden_layers", 1), ("vocab_size", 64), ("hidden_size", 128)])
def test_a_wrong_config_value_breaks_the_count(key: str, delta: int) -> None:
    for model_id in IDS:
        c = _load(model_id)["config"]
        if model_id == QWEN38:
            t = c["text_config"]
            if key == "num_hidden_layers":  # a layer more means a longer layer_types as well
                t = {**t, key: t[key] + 4, "layer_types": t["layer_types"] + t["layer_types"][:4]}
            else:
                t = {**t, key: t[key] + delta}
            c = {**c, "text_config": t}
        else:
            c = {**c, key: c[key] + delta}
        assert shape_count(model_id, c) != PUBLISHED[model_id], (model_id, key)


# --------------------------------------------------------------------------- MiniMax-M2.7


def test_minimax_m27_split_is_the_m2_layout() -> None:
    """62 layers x (q 6,144 x 3,072 + k, v 1,024 x 3,072 + o 3,072 x 6,144 + 256 x 3 x 1,536 x 3,072)
    = 227,410,968,576 FP8; F32 = 62 x (2,688 + 221,184 block scales + 786,432 gate + 256 bias) = 62,654,720;
    BF16 = 62 x 13,312 norms + 2 x 200,064 x 3,072 + 3,072 = 1,230,021,632; bytes 230,121,630,720 (214.32 GiB)."""
    entry, m2 = _load(M27), _load("MiniMaxAI/MiniMax-M2")
    split = minimax_m2_split(entry["config"])
    assert entry["params_by_dtype"] == split == m2["params_by_dtype"]
    assert split == {"BF16": 1_230_021_632, "F32": 62_654_720, "F8_E4M3": 227_410_968_576}
    assert entry["weights_bytes"] == split_bytes(split) == M27_TENSOR_BYTES == m2["index_total_size"]
    assert round(entry["weights_bytes"] / GIB, 2) == 214.32
    # the published HF table figure (id 69468411049) is the count without the 13,880,064 F32 block scales
    c = entry["config"]
    h, hd, inter = c["hidden_size"], c["head_dim"], c["intermediate_size"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    scales = c["num_hidden_layers"] * (2 * _blocks(q, h) + 2 * _blocks(kv, h)
                                       + c["num_local_experts"] * 3 * _blocks(inter, h))
    assert (scales, M27_COUNT - scales) == (13_880_064, 228_689_764_864)


def test_minimax_m27_config_differs_from_m2_only_in_context_and_defaulted_keys() -> None:
    c, m2 = _load(M27)["config"], _load("MiniMaxAI/MiniMax-M2")["config"]
    assert c["max_position_embeddings"] == 204_800 and m2["max_position_embeddings"] == 196_608
    assert c["dtype"] == "bfloat16" and c["transformers_version"] == "4.46.1"
    shared = set(c) & set(m2) - {"max_position_embeddings", "transformers_version"}  # 4.57.1 in the M2 copy
    assert {k: c[k] for k in shared} == {k: m2[k] for k in shared}
    assert set(c) - set(m2) == {"dtype"}
    assert (c["use_mtp"], c["num_mtp_modules"], c["mtp_transformer_layers"]) == (True, 3, 1)  # no MTP tensors
    assert set(c["attn_type_list"]) == {1} and len(c["attn_type_list"]) == c["num_hidden_layers"] == 62
    q = c["quantization_config"]
    assert (q["quant_method"], q["weight_block_size"]) == ("fp8", [128, 128])
    assert q["modules_to_not_convert"] == ["gate", "e_score_correction_bias", "lm_head"]


# --------------------------------------------------------------------------- Qwen3.8-27B


def test_qwen38_is_qwen36_27b_but_the_transformers_version() -> None:
    """'config.json is byte-identical to Qwen3.6-27B except transformers_version' (id 62135068519)."""
    c, c36 = _load(QWEN38)["config"], _load("Qwen/Qwen3.6-27B")["config"]
    assert c["transformers_version"] == "5.8.0.dev0" and c36["transformers_version"] == "4.57.1"
    assert {k: v for k, v in c.items() if k != "transformers_version"} == {
        k: v for k, v in c36.items() if k != "transformers_version"}


def test_qwen38_families_are_the_inventory_totals() -> None:
    """Enucatl/qw38 model-inventory.md (header-only inventory of the 18 shards): language + MTP 27,320,697,856,
    MTP 424,699,392 (15 tensors), vision 460,730,096 (333 tensors), 1,199 tensors in all, every one BF16."""
    entry = _load(QWEN38)
    parts = qwen35_params(entry["config"])
    assert (parts["language"], parts["mtp"], parts["vision"]) == (26_895_998_464, 424_699_392, 460_730_096)
    assert parts["language"] + parts["mtp"] == 27_320_697_856
    assert entry["params_by_dtype"] == {"BF16": QWEN38_COUNT}
    assert entry["weights_bytes"] == entry["index_total_size"] == 2 * QWEN38_COUNT == QWEN38_INDEX_TOTAL
    t = entry["config"]["text_config"]
    full = [i for i, kind in enumerate(t["layer_types"]) if kind == "full_attention"]
    assert full == list(range(3, 64, 4)) and len(t["layer_types"]) - len(full) == 48


# --------------------------------------------------------------------------- what the planner sees


def test_the_planner_finds_and_reads_them() -> None:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import entry_to_metadata, find_entry

    for model_id in IDS:
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        arch = read_arch(found.config)
        text = found.config.get("text_config", found.config)
        assert arch.num_hidden_layers == text["num_hidden_layers"]
        assert entry_to_metadata(found).tensor_bytes == found.weights_bytes
    assert read_arch(find_entry(M27).config).quantization.method == "fp8"


@pytest.mark.parametrize(("model_id", "tp"), [(M27, 4), (QWEN38, 1)])
def test_the_plan_starts_from_the_catalog_bytes(model_id: str, tp: int) -> None:
    """Each rank holds about 1/TP of weights_bytes (Qwen3.8: less the MTP layer the planner drops, 1.5 %; MiniMax:
    plus the router pieces every rank keeps whole)."""
    plan = _plan(model_id, tp, gpu="h100")
    assert plan.fits and plan.parallel.tensor_parallel_size == tp
    share = _load(model_id)["weights_bytes"] / tp
    assert 0.97 * share < plan.memory.weights_bytes < 1.03 * share
