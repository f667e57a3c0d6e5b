"""Data checks for the Mistral 3 catalog entries: Ministral-3-3B / 8B / 14B-Instruct-2512,
Mistral-Small-3.2-24B-Instruct-2506 and Devstral-Small-2-24B-Instruct-2512.

The three repositories ship the multimodal Mistral3ForConditionalGeneration checkpoint (Pixtral vision
tower + patch-merger projector + a ministral3 text decoder) in per-tensor static FP8: the decoder's
q/k/v/o/gate/up/down weights are F8_E4M3, everything else (embeddings, lm_head, norms, vision tower,
projector) stays BF16. As in parts 1-5, no figure is trusted because it is written down: the published
counts (HF API splits for the 3B and 8B FP8 repositories, safetensors totals of the BF16 siblings) are
re-derived here from the config shapes with the arithmetic written out, so a wrong config or a wrong
count fails.

No Pixtral / Mistral3 checkpoint is in the catalog yet, so the vision and projector formulas cannot be
checked on an older entry; they are checked instead on three published totals with three different
projector widths (3072, 4096, 5120) and on the text-only counts published separately (the Hub's GGUF
metadata for the 8B language model, 8,489,553,920). Per tensor (Pixtral, no biases):
  patch_conv   1024 x 3 x 14 x 14                   =    602,112
  ln_pre       1024                                 =      1,024
  per layer    q, k, v, o 4 x 1024 x 1024           =  4,194,304
               gate, up, down 3 x 1024 x 4096       = 12,582,912
               attention_norm + ffn_norm 2 x 1024   =      2,048   -> 16,779,264 x 24 = 402,702,336
  tower total                                       = 403,305,472
Projector (multimodal_projector_bias false): norm 1024 + patch_merger.merging_layer (1024 x 2 x 2) x 1024
= 4,194,304 + linear_1 1024 x H + linear_2 H x H (H the text hidden size).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import assert_entry_basics, assert_weights_add_up
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog.test_catalog_data_part4 import dense_params, rope_cache_bytes_by_hand

MINISTRAL_IDS: tuple[str, ...] = (
    "mistralai/Ministral-3-3B-Instruct-2512",
    "mistralai/Ministral-3-8B-Instruct-2512",
    "mistralai/Ministral-3-14B-Instruct-2512",
)
SMALL_ID = "mistralai/Mistral-Small-3.2-24B-Instruct-2506"  # BF16, the 3.1 architecture
DEVSTRAL_ID = "mistralai/Devstral-Small-2-24B-Instruct-2512"  # FP8 release, ministral3 text stack
IDS: tuple[str, ...] = (*MINISTRAL_IDS, SMALL_ID, DEVSTRAL_ID)
# published safetensors totals (all tensors, 0-dim scales not counted): the HF API totals of the 3B and 8B
# FP8 repositories and of the BF16 siblings, see each entry's params_source
PUBLISHED_TOTAL = {
    "mistralai/Ministral-3-3B-Instruct-2512": 3_849_090_048,
    "mistralai/Ministral-3-8B-Instruct-2512": 8_918_026_240,
    "mistralai/Ministral-3-14B-Instruct-2512": 13_945_031_680,
    SMALL_ID: 24_011_361_280,
    DEVSTRAL_ID: 24_011_361_280,  # the index's total_parameters 24,011,361,840 less its 560 scalar scales
}
# language model alone (decoder + embeddings + lm_head where stored)
PUBLISHED_TEXT = {
    "mistralai/Ministral-3-3B-Instruct-2512": 3_429_006_336,  # SmolBench brief, computed and card "3.4B"
    "mistralai/Ministral-3-8B-Instruct-2512": 8_489_553_920,  # the Hub's GGUF metadata of the official GGUF
    "mistralai/Ministral-3-14B-Instruct-2512": 13_506_073_600,  # card "13.5B Language Model"
    SMALL_ID: 23_572_403_200,  # = the catalogued Mistral-Small-24B-Instruct-2501 count
    DEVSTRAL_ID: 23_572_403_200,  # the Devstral preflight's text subtotal
}


def text_params(cfg: dict[str, Any]) -> int:
    """The ministral3 decoder has Llama's shapes (no biases, no q/k norms, two RMSNorms a layer); the
    head is tied when text_config says so (absent means untied: Ministral3Config's default is False)."""
    text = dict(cfg["text_config"], architectures=["MistralForCausalLM"])
    text["tie_word_embeddings"] = bool(text.get("tie_word_embeddings", False))
    return dense_params(text)


def pixtral_params(cfg: dict[str, Any]) -> int:
    v = cfg["vision_config"]
    h, inter, layers = v["hidden_size"], v["intermediate_size"], v["num_hidden_layers"]
    heads, hd = v["num_attention_heads"], v["head_dim"]
    assert heads * hd == h
    patch_conv = h * v["num_channels"] * v["patch_size"] ** 2
    per_layer = 4 * h * h + 3 * h * inter + 2 * h
    return patch_conv + h + layers * per_layer


def projector_params(cfg: dict[str, Any]) -> int:
    hv, ht, m = (
        cfg["vision_config"]["hidden_size"],
        cfg["text_config"]["hidden_size"],
        cfg["spatial_merge_size"],
    )
    assert cfg["multimodal_projector_bias"] is False
    return hv + hv * m * m * hv + hv * ht + ht * ht


def fp8_linear_params(cfg: dict[str, Any]) -> int:
    """The decoder's q, k, v, o, gate, up, down weights: what quant_method fp8 converts."""
    t = cfg["text_config"]
    h, hd = t["hidden_size"], t["head_dim"]
    q, kv = t["num_attention_heads"] * hd, t["num_key_value_heads"] * hd
    return t["num_hidden_layers"] * (2 * h * q + 2 * h * kv + 3 * h * t["intermediate_size"])


@pytest.mark.parametrize("model_id", IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["variant"] == ("bf16" if model_id == SMALL_ID else "fp8")
    assert (entry["config"].get("quantization_config") is not None) == (entry["variant"] == "fp8")
    if model_id in MINISTRAL_IDS:
        assert entry["base_model"] == model_id + "-BF16"  # Mistral's unquantized sibling of the same weights
    else:
        assert entry["base_model"] == model_id  # no unquantized sibling (Devstral ships FP8 only)
    assert_weights_add_up(entry)


def test_the_text_formula_on_the_mistral_small_entry() -> None:
    """The same Llama-shaped formula gives the catalogued Mistral-Small-24B-2501 count (23,572,403,200)."""
    small = _load("mistralai/Mistral-Small-24B-Instruct-2501")
    assert dense_params(small["config"]) == sum(small["params_by_dtype"].values()) == 23_572_403_200


def test_the_pixtral_tower_by_hand() -> None:
    cfg = _load("mistralai/Ministral-3-8B-Instruct-2512")["config"]
    assert pixtral_params(cfg) == 602_112 + 1_024 + 24 * 16_779_264 == 403_305_472


@pytest.mark.parametrize("model_id", IDS)
def test_published_counts_follow_from_the_config_shapes(model_id: str) -> None:
    """3B by hand: decoder 26 x (q 3072 x 4096 + k, v 3072 x 1024 each + o 4096 x 3072 + MLP 3 x 3072 x
    9216 + norms 6144 = 116,398,080) + tied embeddings 131072 x 3072 = 402,653,184 + final norm 3072 =
    3,429,006,336; + tower 403,305,472 + projector 1024 + 4,194,304 + 3,145,728 + 9,437,184 = 16,778,240
    -> 3,849,090,048, the HF API total."""
    entry = _load(model_id)
    cfg = entry["config"]
    assert text_params(cfg) == PUBLISHED_TEXT[model_id]
    total = text_params(cfg) + pixtral_params(cfg) + projector_params(cfg)
    scales = 2 * 7 * cfg["text_config"]["num_hidden_layers"] if model_id == DEVSTRAL_ID else 0
    assert total == PUBLISHED_TOTAL[model_id] == sum(entry["params_by_dtype"].values()) - scales


def test_mistral_small_32_has_the_31_shapes() -> None:
    """Mistral-Small-3.2 reuses 3.1's architecture (the published 3.2 count is 3.1's shape count): its text
    decoder is the catalogued Mistral-Small-24B-2501 decoder with rope_theta 1e9 and 128k positions."""
    cfg = _load(SMALL_ID)["config"]
    small = _load("mistralai/Mistral-Small-24B-Instruct-2501")["config"]
    text = cfg["text_config"]
    for key in (
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "vocab_size",
    ):
        assert text[key] == small[key]
    assert (text["rope_theta"], text["max_position_embeddings"]) == (1e9, 131072)
    assert "quantization_config" not in cfg and cfg["torch_dtype"] == "bfloat16"
    assert _load(SMALL_ID)["weights_bytes"] == 2 * 24_011_361_280


def test_devstral_small_2_index_total() -> None:
    """Devstral-Small-2: 40 x (2 x 5120 x 4096 + 2 x 5120 x 1024 + 3 x 5120 x 32768) = 22,229,811,200 FP8
    weights; BF16 1,781,550,080 weights + 560 0-dim scales (a weight_scale_inv and an activation_scale on
    each of the 280 projections); 22,229,811,200 + 2 x 1,781,550,640 = 25,792,912,480, the index payload.
    The six shards (25,793,059,408 B) add only their headers."""
    entry = _load(DEVSTRAL_ID)
    cfg = entry["config"]
    fp8 = fp8_linear_params(cfg)
    assert fp8 == entry["params_by_dtype"]["F8_E4M3"] == 22_229_811_200
    scales = 2 * 7 * cfg["text_config"]["num_hidden_layers"]
    assert scales == 560
    assert entry["params_by_dtype"]["BF16"] == PUBLISHED_TOTAL[DEVSTRAL_ID] - fp8 + scales
    assert entry["index_total_size"] == fp8 + 2 * entry["params_by_dtype"]["BF16"] == 25_792_912_480
    assert sum(entry["params_by_dtype"].values()) == 24_011_361_840  # the index's total_parameters
    assert 0 < 25_793_059_408 - entry["index_total_size"] < 200_000
    rope = cfg["text_config"]["rope_parameters"]
    assert (
        rope["factor"] * rope["original_max_position_embeddings"]
        == cfg["text_config"]["max_position_embeddings"]
    )


@pytest.mark.parametrize("model_id", MINISTRAL_IDS)
def test_fp8_split_weights_and_scales(model_id: str) -> None:
    """Per-tensor static FP8 (weight_block_size null): one 0-dim weight_scale_inv and one 0-dim
    activation_scale per converted linear, which the HF API split does not count (its FP8 + BF16 sum is
    the BF16 sibling's total exactly), so weights_bytes leaves out their 2 x 7 x layers x 2 B."""
    cfg = _load(model_id)["config"]
    entry = _load(model_id)
    q = cfg["quantization_config"]
    assert (q["quant_method"], q["activation_scheme"], q["weight_block_size"]) == ("fp8", "static", None)
    assert set(q["modules_to_not_convert"]) == {
        "model.vision_tower",
        "model.multi_modal_projector",
        "lm_head",
    }
    fp8 = fp8_linear_params(cfg)
    assert entry["params_by_dtype"]["F8_E4M3"] == fp8
    assert entry["params_by_dtype"]["BF16"] == PUBLISHED_TOTAL[model_id] - fp8
    scales = 2 * 7 * cfg["text_config"]["num_hidden_layers"]
    assert 2 * scales < 2_000  # 476 x 2 B for the 8B: the planner's figure is short by under 2 KB


def test_8b_split_and_file_sizes() -> None:
    """8B: 34 x (2 x 4096 x 4096 + 2 x 4096 x 1024 + 3 x 4096 x 14336) = 7,415,529,472 F8_E4M3 and
    1,502,496,768 BF16 (the published split); the three shards total 10,420,654,824 bytes and the
    consolidated file 10,420,633,176: the tensor bytes plus headers of about 0.1 MB."""
    entry = _load("mistralai/Ministral-3-8B-Instruct-2512")
    assert entry["params_by_dtype"] == {"F8_E4M3": 7_415_529_472, "BF16": 1_502_496_768}
    assert entry["weights_bytes"] == 10_420_523_008
    for file_total in (10_420_654_824, 10_420_633_176):
        assert 0 < file_total - entry["weights_bytes"] < 200_000


def test_8b_config_has_the_published_size() -> None:
    """The reconstruction serialised as transformers writes config.json (indent 2, sorted keys, a final
    newline) is 1903 bytes, the size of the repository's config.json in two public file listings."""
    cfg = _load("mistralai/Ministral-3-8B-Instruct-2512")["config"]
    assert len((json.dumps(cfg, indent=2, sort_keys=True) + "\n").encode()) == 1903


def test_ministral_ladder_shapes() -> None:
    """Same heads on every rung (32 x 128, 8 KV heads); only the 3B ties its head; only the 14B uses
    rope_theta 1e9."""
    for model_id, (h, layers, tied, theta) in {
        "mistralai/Ministral-3-3B-Instruct-2512": (3072, 26, True, 1e6),
        "mistralai/Ministral-3-8B-Instruct-2512": (4096, 34, False, 1e6),
        "mistralai/Ministral-3-14B-Instruct-2512": (5120, 40, False, 1e9),
    }.items():
        t = _load(model_id)["config"]["text_config"]
        assert (t["num_attention_heads"], t["num_key_value_heads"], t["head_dim"]) == (32, 8, 128)
        assert (t["hidden_size"], t["num_hidden_layers"]) == (h, layers)
        assert bool(t.get("tie_word_embeddings", False)) is tied
        assert t["rope_parameters"]["rope_theta"] == theta
        assert t["max_position_embeddings"] == 16 * t["rope_parameters"]["original_max_position_embeddings"]


def test_the_planner_finds_and_reads_them() -> None:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import find_entry
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    for model_id in IDS:
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        arch = read_arch(found.config)
        text = found.config["text_config"]
        assert arch.num_hidden_layers == text["num_hidden_layers"]
        assert (arch.num_kv_heads, arch.head_dim) == (8, 128)
        assert arch.native_max_model_len == text["max_position_embeddings"]
        plan = build_plan(
            PlanRequest(model=model_id, source="catalog", gpu="h100-sxm", tensor_parallel_size=1),
            {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"},
        )
        assert plan.memory.weights_bytes == found.weights_bytes + rope_cache_bytes_by_hand(found.config)
