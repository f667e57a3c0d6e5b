"""Data checks for the catalog entries of round 9 (a): google/gemma-2-2b-it, google/gemma-2-27b-it, google/gemma-7b,
microsoft/phi-2, ibm-granite/granite-3.1-2b-instruct, granite-3.1-8b-instruct and granite-3.3-8b-instruct.

As in parts 1-8 the figures are not trusted because they are written down: every entry's parameter count is
re-derived from its config's tensor shapes with the formulas below (Gemma 1 / Gemma 2 / Phi; Granite through part 4's
dense formula) and must equal params_by_dtype's total and the published count. Independently, real vLLM 0.19.0 startups
on an H100 printed "Model loading took X GiB" for each of them (llm-d-planner's accuracy sweep,
https://github.com/llm-d-incubation/llm-d-planner/blob/3c876c8/accuracy/results/v0.19.0/results_raw.csv, column
weight_memory_gib, GiB = 2**30 B to two decimals): the planner's weights for the entry must be within 1 % of it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    GIB,
    SAFETENSORS_ITEMSIZE,
    assert_config_source_marked,
    assert_entry_basics,
    assert_weights_add_up,
    split_bytes,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog.test_catalog_data_part4 import dense_params

IDS: tuple[str, ...] = (
    "google/gemma-2-2b-it",
    "google/gemma-2-27b-it",
    "google/gemma-7b",
    "microsoft/phi-2",
    "ibm-granite/granite-3.1-2b-instruct",
    "ibm-granite/granite-3.1-8b-instruct",
    "ibm-granite/granite-3.3-8b-instruct",
)
# configs rebuilt from several copies rather than transcribed from one copy of the repository's config.json
REBUILT_IDS = frozenset(
    {
        "google/gemma-2-2b-it",
        "google/gemma-2-27b-it",
        "google/gemma-7b",
        "ibm-granite/granite-3.1-2b-instruct",
        "ibm-granite/granite-3.1-8b-instruct",
    }
)

# published parameter counts (see each entry's params_source)
PUBLISHED: dict[str, int] = {
    "google/gemma-2-2b-it": 2_614_341_888,  # HF count (panel manifest), keras-hub gemma2_2b
    "google/gemma-2-27b-it": 27_227_128_320,  # HF safetensors (kvfit), keras-hub gemma2_27b_en
    "google/gemma-7b": 8_537_680_896,  # keras-hub gemma_7b_en
    "microsoft/phi-2": 2_779_683_840,  # HF API safetensors.parameters F16
    "ibm-granite/granite-3.1-2b-instruct": 2_533_531_648,  # HF count (panel manifest)
    "ibm-granite/granite-3.3-8b-instruct": 8_170_864_640,  # HF Hub safetensors.total
}
GRANITE_33_2B_INSTRUCT = 2_533_539_840  # HF Hub safetensors.total of granite-3.3-2b-instruct (vocab 49,159)

# index totals of model.safetensors.index.json quoted in public tutorials
INDEX_TOTALS: dict[str, int] = {"google/gemma-2-2b-it": 5_228_683_776, "microsoft/phi-2": 5_559_367_680}

# vLLM 0.19.0, H100 80GB, TP=1: "Model loading took X GiB" (results_raw.csv weight_memory_gib) and the run's
# --max-model-len (phi-2 only started with 2,048: its max_position_embeddings is 2,048, the 8,192 run failed)
LOGGED_GIB: dict[str, tuple[float, int]] = {
    "google/gemma-2-2b-it": (4.90, 8192),
    "google/gemma-2-27b-it": (50.72, 8192),
    "google/gemma-7b": (15.91, 8192),
    "microsoft/phi-2": (5.19, 2048),  # dtype=torch.float16 in the log
    "ibm-granite/granite-3.1-2b-instruct": (4.74, 8192),
    "ibm-granite/granite-3.1-8b-instruct": (15.25, 8192),
    "ibm-granite/granite-3.3-8b-instruct": (15.25, 8192),
}
# models whose planner weights miss the logged GiB by more than 1 % for a reason in the planner (not in the entry):
# model id -> (planner GiB, logged GiB, reason). Those are reported, not asserted. None at present: the planner's
# weights were 4.870 / 50.714 / 15.903 / 5.178 / 4.719 / 15.219 / 15.219 GiB (-0.62 % ... -0.01 %).
PLANNER_WEIGHT_MISSES_NOT_ASSERTED: dict[str, tuple[float, float, str]] = {}


# --------------------------------------------------------------------------- shape formulas


def gemma_params(cfg: dict[str, Any]) -> int:
    """Gemma 1 (GemmaForCausalLM) and Gemma 2 (Gemma2ForCausalLM): tied embedding (Gemma ties it; the 7B config has
    no tie_word_embeddings key and transformers' GemmaConfig defaults it to true), per layer q (heads x head_dim), k
    and v (kv heads x head_dim), o, a GeGLU MLP of three h x inter matrices, RMSNorm weights -- two per layer for
    Gemma 1, four for Gemma 2 (pre/post attention, pre/post feed-forward) -- and a final norm. No biases."""
    arch = cfg["architectures"][0]
    assert arch in ("GemmaForCausalLM", "Gemma2ForCausalLM")
    assert cfg.get("tie_word_embeddings", True) is True
    h, inter, layers, hd = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["head_dim"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    norms = 4 * h if arch == "Gemma2ForCausalLM" else 2 * h
    per_layer = h * q + 2 * h * kv + q * h + 3 * h * inter + norms
    return cfg["vocab_size"] * h + layers * per_layer + h


def phi_params(cfg: dict[str, Any]) -> int:
    """Phi-1/1.5/2 (PhiForCausalLM): embedding; per layer q, k, v and dense h x h with biases, fc1 h -> inter and fc2
    inter -> h with biases, one LayerNorm (weight + bias; attention and MLP run in parallel off it); final LayerNorm
    (weight + bias); an untied lm_head with a bias."""
    assert cfg["architectures"] == ["PhiForCausalLM"] and cfg["tie_word_embeddings"] is False
    h, inter, layers, vocab = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    assert cfg["num_key_value_heads"] == cfg["num_attention_heads"]  # MHA
    per_layer = 4 * (h * h + h) + (h * inter + inter) + (inter * h + h) + 2 * h
    return vocab * h + layers * per_layer + 2 * h + (h * vocab + vocab)


def shape_params(cfg: dict[str, Any]) -> int:
    arch = cfg["architectures"][0]
    if arch in ("GemmaForCausalLM", "Gemma2ForCausalLM"):
        return gemma_params(cfg)
    if arch == "PhiForCausalLM":
        return phi_params(cfg)
    assert arch == "GraniteForCausalLM"  # a Llama decoder with scalar multipliers: part 4's dense formula
    assert cfg["tie_word_embeddings"] is True and cfg["attention_bias"] is False and cfg["mlp_bias"] is False
    return dense_params(cfg)


# --------------------------------------------------------------------------- keys, sources, weights


@pytest.mark.parametrize("model_id", IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["base_model"] == model_id
    assert entry["variant"] == "bf16"
    assert entry["config"].get("quantization_config") is None
    assert_weights_add_up(entry)
    assert set(entry["params_by_dtype"]) <= set(SAFETENSORS_ITEMSIZE)
    assert len(entry["params_by_dtype"]) == 1  # one 16-bit dtype for every tensor


@pytest.mark.parametrize("model_id", IDS)
def test_a_rebuilt_config_says_so(model_id: str) -> None:
    assert_config_source_marked(_load(model_id)["config_source"], model_id in REBUILT_IDS, "Transcribed from")


@pytest.mark.parametrize("model_id", IDS)
def test_the_count_follows_from_the_config_shapes(model_id: str) -> None:
    """The shape formula on the entry's own config gives params_by_dtype's total (and the published count)."""
    entry = _load(model_id)
    total = sum(entry["params_by_dtype"].values())
    assert shape_params(entry["config"]) == total
    if model_id in PUBLISHED:
        assert total == PUBLISHED[model_id]


@pytest.mark.parametrize(("model_id", "total"), sorted(INDEX_TOTALS.items()))
def test_the_index_totals_are_two_bytes_per_parameter(model_id: str, total: int) -> None:
    """gemma-2-2b-it's config says float32 but its safetensors hold 16-bit tensors: the index total is exactly 2 B per
    published parameter (4 B would be 10,457,367,552). phi-2 is float16 throughout."""
    entry = _load(model_id)
    assert entry["index_total_size"] == entry["weights_bytes"] == total
    assert total == 2 * PUBLISHED[model_id] == split_bytes(entry["params_by_dtype"])


def test_the_gemma2_2b_count_by_hand() -> None:
    """Tied embedding 256,000 x 2,304 = 589,824,000; a layer: q 2,304 x 2,048 + k, v 2,304 x 1,024 each + o
    2,048 x 2,304 = 14,155,776, MLP 3 x 2,304 x 9,216 = 63,700,992, four norms 9,216 -> 77,865,984; x 26 + final norm
    2,304 = 2,614,341,888."""
    c = _load("google/gemma-2-2b-it")["config"]
    per_layer = 14_155_776 + 63_700_992 + 9_216
    assert per_layer == 77_865_984
    assert 589_824_000 + c["num_hidden_layers"] * per_layer + 2_304 == gemma_params(c) == 2_614_341_888


def test_the_phi2_count_by_hand() -> None:
    """Embedding 51,200 x 2,560 = 131,072,000; a layer: q, k, v, dense 4 x (6,553,600 + 2,560) = 26,224,640, fc1 and
    fc2 2 x 26,214,400 + 10,240 + 2,560 = 52,441,600, LayerNorm 5,120 -> 78,671,360; x 32 = 2,517,483,520; final
    LayerNorm 5,120; lm_head 131,072,000 + bias 51,200. Total 2,779,683,840 = the HF F16 count."""
    c = _load("microsoft/phi-2")["config"]
    per_layer = 26_224_640 + 52_441_600 + 5_120
    assert per_layer == 78_671_360
    assert 131_072_000 + 32 * per_layer + 5_120 + 131_072_000 + 51_200 == phi_params(c) == 2_779_683_840
    assert (c["partial_rotary_factor"], c["max_position_embeddings"], c["torch_dtype"]) == (0.4, 2048, "float16")


def test_the_gemma_counts_pin_the_tied_embedding() -> None:
    """Untied, the same shapes would carry another vocab x hidden: the published counts pin the tying."""
    for model_id in ("google/gemma-2-2b-it", "google/gemma-2-27b-it", "google/gemma-7b"):
        c = _load(model_id)["config"]
        untied = gemma_params(c) + c["vocab_size"] * c["hidden_size"]
        assert untied != PUBLISHED[model_id]


def test_granite_31_8b_is_granite_33_8b_less_four_vocabulary_rows() -> None:
    """No HF count of granite-3.1-8b-instruct was found; its count is granite-3.3-8b-instruct's published one less the
    four token rows the 3.3 tokenizer added (49,159 vs 49,155) of the tied embedding. The same step links the two
    published 2B counts (3.3-2b 2,533,539,840 - 3.1-2b 2,533,531,648 = 4 x 2,048), and the shape keys agree."""
    a, b = _load("ibm-granite/granite-3.1-8b-instruct"), _load("ibm-granite/granite-3.3-8b-instruct")
    ca, cb = a["config"], b["config"]
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "tie_word_embeddings", "architectures"):
        assert ca[key] == cb[key], key
    assert (ca["vocab_size"], cb["vocab_size"]) == (49155, 49159)
    assert sum(b["params_by_dtype"].values()) - sum(a["params_by_dtype"].values()) == 4 * 4096
    assert GRANITE_33_2B_INSTRUCT - PUBLISHED["ibm-granite/granite-3.1-2b-instruct"] == 4 * 2048


@pytest.mark.parametrize("model_id", IDS)
def test_a_wrong_shape_would_fail(model_id: str) -> None:
    """The comparison is sensitive: one changed shape key moves the derived count off the recorded one."""
    entry = _load(model_id)
    total = sum(entry["params_by_dtype"].values())
    for key, delta in (("intermediate_size", 128), ("num_hidden_layers", 1), ("vocab_size", 64),
                       ("num_key_value_heads", 1)):
        bad = copy.deepcopy(entry["config"])
        bad[key] += delta
        if key == "num_key_value_heads" and bad["architectures"] == ["PhiForCausalLM"]:
            continue  # Phi-2 is MHA; its formula asserts kv == heads
        assert shape_params(bad) != total, key


# --------------------------------------------------------------------------- the planner against vLLM's log


def test_the_miss_list_only_names_catalogued_models() -> None:
    assert set(PLANNER_WEIGHT_MISSES_NOT_ASSERTED) <= set(LOGGED_GIB)
    assert set(LOGGED_GIB) == set(IDS)


@pytest.mark.parametrize("model_id", IDS)
def test_the_planner_weights_match_the_vllm_019_log(model_id: str) -> None:
    """build_plan on the catalog entry (H100, the run's max_model_len, utilization 0.95, TP=1) reads the architecture
    and gives weights within 1 % of vLLM 0.19.0's 'Model loading took X GiB' (X to two decimals)."""
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import find_entry
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    found = find_entry(model_id)
    assert found is not None and found.id == model_id
    assert read_arch(found.config).num_hidden_layers == found.config["num_hidden_layers"]
    logged, max_len = LOGGED_GIB[model_id]
    plan = build_plan(
        PlanRequest(model=model_id, source="catalog", gpu="h100", max_model_len=max_len,
                    gpu_memory_utilization=0.95),
        {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"},
    )
    assert plan.fits, model_id
    assert plan.parallel.tensor_parallel_size * plan.parallel.pipeline_parallel_size == 1
    planned = plan.memory.weights_bytes / GIB
    if model_id in PLANNER_WEIGHT_MISSES_NOT_ASSERTED:
        pytest.skip(f"planner miss recorded: {PLANNER_WEIGHT_MISSES_NOT_ASSERTED[model_id]}")
    assert planned == pytest.approx(logged, rel=0.01), (model_id, planned, logged)
    # the entry's own bytes, loaded once, are what the planner counts
    assert plan.memory.weights_bytes == pytest.approx(_load(model_id)["weights_bytes"], rel=0.005)
