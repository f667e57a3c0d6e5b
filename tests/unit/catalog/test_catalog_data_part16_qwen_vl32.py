"""Data checks for the catalog entry of part 16: Qwen/Qwen3-VL-32B-Instruct.

Transcribed: the config (ai-dynamo/aiconfigurator's copy of the Hub file, byte-identical to its Qwen3-VL-32B-Thinking
copy). No parameter count or index total was found for this repository, so the entry's count is DERIVED from the
config's shapes. The test re-derives it with its own arithmetic and checks it against two figures it was not written
from: the language model against Qwen/Qwen3-32B's HF count (catalog part 2), and the total against the element count
and index total_size published for an identical-architecture checkpoint, MiniMax-H3's Qwen3-VL-32B text encoder
(find_string ids 60806413767, 57372990599). A wrong config value or a wrong count fails.

Qwen/Qwen2.5-VL-32B-Instruct is not catalogued: no verbatim copy of its config.json was found.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    assert_config_has_what_an_architecture_reader_needs,
    assert_config_source_marked,
    assert_entry_basics,
    assert_weights_add_up,
    assert_weights_from_the_split_alone,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog._catalog_checks import plan_catalog as _plan
from tests.unit.catalog.test_catalog_data_part3 import _qwen3_text_params, _qwen3_vl_vision_params

VL32 = "Qwen/Qwen3-VL-32B-Instruct"
# MiniMax-H3 text_encoder (Qwen3-VL-32B architecture, 1,058 tensors): TEXT_ELEMENTS / TEXT_PAYLOAD_BYTES, the latter
# also its model.safetensors.index.json metadata.total_size (ids 60806413767, 60818534180, 57372990599).
PUBLISHED_ELEMENTS = 33_357_390_064
PUBLISHED_PAYLOAD = 66_714_780_128
QWEN3_32B_COUNT = 32_762_123_264  # Qwen/Qwen3-32B HF count (catalog entry)


def qwen3_vl_dense_split(c: dict[str, Any]) -> dict[str, int]:
    """Parameter count by part of a dense Qwen3-VL checkpoint.

    Language model (text_config): per layer q_proj [heads*head_dim, h], k_proj and v_proj [kv*head_dim, h], o_proj
    [h, heads*head_dim], q_norm and k_norm [head_dim], gate/up/down 3 x [I, h], two RMSNorms [h]; final norm; untied
    embed_tokens and lm_head [V, h]. Vision tower (vision_config, width w, MLP m, merged width M = w * merge^2):
    patch_embed Conv3d [w, C, T, p, p] + bias, pos_embed [num_position_embeddings, w]; per block norm1/norm2 LayerNorm
    (weight + bias), fused qkv [3w, w] + bias, proj [w, w] + bias, fc1 [m, w] + bias, fc2 [w, m] + bias; the merger
    LayerNorm over w, fc1 [M, M] + bias, fc2 [out, M] + bias; each deepstack merger the same with its LayerNorm over M.
    """
    t, v = c["text_config"], c["vision_config"]
    h, hd, layers = t["hidden_size"], t["head_dim"], t["num_hidden_layers"]
    q, kv = t["num_attention_heads"] * hd, t["num_key_value_heads"] * hd
    per_layer = h * q + 2 * h * kv + q * h + 2 * hd + 3 * h * t["intermediate_size"] + 2 * h
    untied = not c.get("tie_word_embeddings", False)
    text = layers * per_layer + h + t["vocab_size"] * h * (2 if untied else 1)

    w, m, out = v["hidden_size"], v["intermediate_size"], v["out_hidden_size"]
    merged = w * v["spatial_merge_size"] ** 2
    patch = w * v["in_channels"] * v["temporal_patch_size"] * v["patch_size"] ** 2 + w
    positions = v["num_position_embeddings"] * w
    block = 2 * (2 * w) + (3 * w * w + 3 * w) + (w * w + w) + (m * w + m) + (w * m + w)
    mlp = (merged * merged + merged) + (out * merged + out)
    merger = 2 * w + mlp
    deepstack = len(v["deepstack_visual_indexes"]) * (2 * merged + mlp)
    vision = patch + positions + v["depth"] * block + merger + deepstack
    return {"text": text, "vision": vision, "total": text + vision}


def test_keys_sources_and_weights_arithmetic() -> None:
    entry = _load(VL32)
    assert_entry_basics(entry, VL32)
    assert entry["base_model"] == VL32 and entry["variant"] == "bf16"
    assert_weights_add_up(entry)
    assert_weights_from_the_split_alone(entry)
    assert_config_source_marked(entry["config_source"], False, "aiconfigurator")
    assert_config_has_what_an_architecture_reader_needs(entry)
    # no published count for this repository: the entry says its count is derived
    assert entry["params_source"].startswith("DERIVED")
    assert set(entry["params_by_dtype"]) == {"BF16"}
    assert entry["config"]["text_config"]["dtype"] == "bfloat16"


def test_the_count_follows_from_the_config_shapes() -> None:
    """Text 32,762,123,264 (64 x 503,324,928 + 5,120 + 2 x 151,936 x 5,120) + vision 595,266,800 (patch 1,770,624 +
    positions 2,654,208 + 27 x 15,239,504 + merger 44,838,656 + 3 deepstack x 44,845,568) = 33,357,390,064."""
    entry = _load(VL32)
    parts = qwen3_vl_dense_split(entry["config"])
    assert (parts["text"], parts["vision"]) == (32_762_123_264, 595_266_800)
    assert parts["total"] == PUBLISHED_ELEMENTS
    assert entry["params_by_dtype"] == {"BF16": PUBLISHED_ELEMENTS}
    assert entry["weights_bytes"] == 2 * parts["total"] == PUBLISHED_PAYLOAD
    # part 3's independent Qwen3-VL formulas (checked there on the 8B and 30B-A3B HF counts) agree
    c = entry["config"]
    assert (
        _qwen3_text_params(c["text_config"], False) + _qwen3_vl_vision_params(c["vision_config"])
        == parts["total"]
    )


def test_the_language_model_is_qwen3_32b() -> None:
    text = _load(VL32)["config"]["text_config"]
    sibling = _load("Qwen/Qwen3-32B")
    for key in (
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "vocab_size",
    ):
        assert text[key] == sibling["config"][key], key
    assert qwen3_vl_dense_split(_load(VL32)["config"])["text"] == QWEN3_32B_COUNT
    assert sibling["params_by_dtype"] == {"BF16": QWEN3_32B_COUNT}


@pytest.mark.parametrize(
    ("section", "key", "delta"),
    [
        ("text_config", "num_hidden_layers", 1),
        ("text_config", "intermediate_size", 128),
        ("text_config", "num_key_value_heads", 8),
        ("text_config", "vocab_size", 64),
        ("vision_config", "depth", 1),
        ("vision_config", "intermediate_size", 16),
        ("vision_config", "out_hidden_size", 128),
    ],
)
def test_a_wrong_config_value_breaks_the_count(section: str, key: str, delta: int) -> None:
    c = _load(VL32)["config"]
    wrong = {**c, section: {**c[section], key: c[section][key] + delta}}
    assert qwen3_vl_dense_split(wrong)["total"] != PUBLISHED_ELEMENTS


def test_tied_embeddings_or_no_deepstack_break_the_count() -> None:
    c = _load(VL32)["config"]
    assert qwen3_vl_dense_split({**c, "tie_word_embeddings": True})["total"] != PUBLISHED_ELEMENTS
    no_deepstack = {**c, "vision_config": {**c["vision_config"], "deepstack_visual_indexes": []}}
    assert qwen3_vl_dense_split(no_deepstack)["total"] != PUBLISHED_ELEMENTS


def test_plans_full_attention_kv_from_the_text_config() -> None:
    """64 layers x 8 KV heads x head_dim 128 (not hidden / heads = 80) x K and V x 2 bytes = 262,144 B per token,
    131,072 B per GPU at TP=2; the weights the plan loads are within 1% of the derived checkpoint bytes."""
    plan = _plan(VL32, tp=2)
    assert plan.fits
    t = _load(VL32)["config"]["text_config"]
    per_token = t["num_hidden_layers"] * t["num_key_value_heads"] * t["head_dim"] * 2 * 2
    assert per_token == 262_144
    assert plan.kv_cache.bytes_per_token == per_token // 2
    assert abs(2 * plan.memory.weights_bytes - PUBLISHED_PAYLOAD) / PUBLISHED_PAYLOAD < 0.01
