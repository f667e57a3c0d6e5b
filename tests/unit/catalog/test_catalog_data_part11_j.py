"""Data checks for the catalog entries of round 11 (j): casperhansen/llama-3-70b-instruct-awq,
neuralmagic/Meta-Llama-3-8B-Instruct-FP8, microsoft/Phi-3-medium-4k-instruct, mistralai/Magistral-Small-2506 and
unsloth/Llama-3.2-1B-Instruct.

Transcribed: the Phi-3-medium config (HF blame page of the initial commit) and the Llama-3-8B FP8 config and index
total (a local copy of that repository in llm-d-kv-cache-manager's test data). REBUILT: the casperhansen AWQ config
(parent + AutoAWQ recipe), the Magistral config (Mistral-Small-3.1 text shapes, text-only) and the unsloth config (the
meta-llama entry it re-uploads). Every count is re-derived here from the config's shapes and compared with params_by_dtype
and a published figure; the planner's weights must be the per-GPU checkpoint share + the RoPE cos/sin cache.
No public vLLM 'Model loading took' line for these five repositories was found.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    assert_config_source_marked,
    assert_entry_basics,
    assert_weights_add_up,
    split_bytes,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog._catalog_checks import plan_catalog as _plan
from tests.unit.catalog.test_catalog_data_part4 import dense_params, rope_cache_bytes_by_hand
from tests.unit.catalog.test_catalog_data_part8_fp8 import llama_fp8_split
from tests.unit.catalog.test_catalog_data_part10_f import llama_awq_split, unpacked_params
from tests.unit.catalog.test_catalog_data_part10_g import phi3_params

AWQ70 = "casperhansen/llama-3-70b-instruct-awq"
FP8_8B = "neuralmagic/Meta-Llama-3-8B-Instruct-FP8"
PHI3_MEDIUM = "microsoft/Phi-3-medium-4k-instruct"
MAGISTRAL = "mistralai/Magistral-Small-2506"
UNSLOTH_1B = "unsloth/Llama-3.2-1B-Instruct"
IDS: tuple[str, ...] = (AWQ70, FP8_8B, PHI3_MEDIUM, MAGISTRAL, UNSLOTH_1B)
REBUILT = frozenset({AWQ70, MAGISTRAL, UNSLOTH_1B})
BASES = {
    AWQ70: "meta-llama/Meta-Llama-3-70B-Instruct",
    FP8_8B: "meta-llama/Meta-Llama-3-8B-Instruct",
    PHI3_MEDIUM: PHI3_MEDIUM,
    MAGISTRAL: MAGISTRAL,
    UNSLOTH_1B: "meta-llama/Llama-3.2-1B-Instruct",
}
VARIANTS = {AWQ70: "awq", FP8_8B: "fp8", PHI3_MEDIUM: "bf16", MAGISTRAL: "bf16", UNSLOTH_1B: "bf16"}

# independently published figures (sources in each entry's params_source / index_source)
LLAMA3_70B_COUNT = 70_553_706_496  # meta-llama/Meta-Llama-3-70B-Instruct, HF count (parent entry)
LLAMA3_8B_COUNT = 8_030_261_248  # meta-llama/Meta-Llama-3-8B-Instruct, HF count (parent entry)
LLAMA_70B_AWQ_INDEX_TOTAL = 39_767_785_472  # a 9-shard Llama-70B AWQ index, find_string/read_file id 49343980400
FP8_8B_INDEX_TOTAL = 9_081_202_432  # llm-d-kv-cache-manager local-llama3/model.safetensors.index.json
PHI3_MEDIUM_COUNT = 13_960_238_080  # 'unsloth/Phi-3-medium-4k-instruct' model_size, id 14269230532
MISTRAL_SMALL_24B_COUNT = 23_572_403_200  # Mistral-Small-24B-Instruct-2501 paramCount, id 66729435508
LLAMA32_1B_COUNT = 1_235_814_400  # meta-llama/Llama-3.2-1B-Instruct HF safetensors total

# (model, TP) asked of the planner on H100-80GB: the smallest TP that fits (the 70B AWQ also at TP 2)
PLANS: tuple[tuple[str, int], ...] = (
    (AWQ70, 1), (AWQ70, 2), (FP8_8B, 1), (PHI3_MEDIUM, 1), (MAGISTRAL, 1), (UNSLOTH_1B, 1),
)


def shape_count(model_id: str, c: dict[str, Any]) -> int:
    """The model's parameter count from its config's shapes (for AWQ: the unpacked float model)."""
    if model_id == AWQ70:
        return unpacked_params(c, llama_awq_split(c))
    if model_id == FP8_8B:
        split = llama_fp8_split(c, scale="tensor")
        return split["F8_E4M3"] + split["BF16"]  # the scalar scales are not model parameters
    if model_id == PHI3_MEDIUM:
        return phi3_params(c)
    assert c["architectures"][0] in ("LlamaForCausalLM", "MistralForCausalLM")
    return dense_params(c)  # part 4's Llama formula (head_dim from the config)


def expected_split(model_id: str, c: dict[str, Any]) -> dict[str, int]:
    if model_id == AWQ70:
        return llama_awq_split(c)
    if model_id == FP8_8B:
        return llama_fp8_split(c, scale="tensor")
    return {"BF16": shape_count(model_id, c)}


PUBLISHED = {
    AWQ70: LLAMA3_70B_COUNT,
    FP8_8B: LLAMA3_8B_COUNT,
    PHI3_MEDIUM: PHI3_MEDIUM_COUNT,
    MAGISTRAL: MISTRAL_SMALL_24B_COUNT,
    UNSLOTH_1B: LLAMA32_1B_COUNT,
}


# --------------------------------------------------------------------------- keys, sources, bytes


@pytest.mark.parametrize("model_id", IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["base_model"] == BASES[model_id] and entry["variant"] == VARIANTS[model_id]
    assert_weights_add_up(entry)
    assert_config_source_marked(entry["config_source"], model_id in REBUILT)


@pytest.mark.parametrize("model_id", IDS)
def test_the_split_follows_from_the_shapes(model_id: str) -> None:
    entry = _load(model_id)
    assert entry["params_by_dtype"] == expected_split(model_id, entry["config"])
    assert entry["weights_bytes"] == split_bytes(expected_split(model_id, entry["config"]))


@pytest.mark.parametrize("model_id", IDS)
def test_the_count_is_the_published_count(model_id: str) -> None:
    entry = _load(model_id)
    count = shape_count(model_id, entry["config"])
    assert count == PUBLISHED[model_id]
    if VARIANTS[model_id] == "bf16":
        assert sum(entry["params_by_dtype"].values()) == count


def test_the_quantized_byte_totals_are_published_index_totals() -> None:
    assert _load(AWQ70)["weights_bytes"] == LLAMA_70B_AWQ_INDEX_TOTAL
    fp8 = _load(FP8_8B)
    assert fp8["weights_bytes_kind"] == "index_total_size"
    assert fp8["weights_bytes"] == fp8["index_total_size"] == FP8_8B_INDEX_TOTAL
    assert fp8["params_by_dtype"] == {"BF16": 1_050_939_392, "F32": 448, "F8_E4M3": 6_979_321_856}


def test_copies_keep_their_parents_shapes() -> None:
    """AWQ / FP8 / re-upload: every key of the parent but quantization fields; Magistral: Mistral-Small-3.1's text
    shapes, top-level (text-only)."""
    skip = ("quantization_config", "torch_dtype", "_name_or_path", "eos_token_id", "transformers_version",
            "mlp_bias")
    for model_id in (AWQ70, FP8_8B, UNSLOTH_1B):
        c, p = _load(model_id)["config"], _load(BASES[model_id])["config"]
        assert {k: v for k, v in c.items() if k not in skip} == {k: v for k, v in p.items() if k not in skip}
    assert _load(UNSLOTH_1B)["config"] == _load(BASES[UNSLOTH_1B])["config"]
    assert _load(AWQ70)["config"] == _load("TechxGenus/Meta-Llama-3-70B-Instruct-AWQ")["config"]
    text = _load("mistralai/Mistral-Small-3.1-24B-Instruct-2503")["config"]["text_config"]
    magistral = _load(MAGISTRAL)["config"]
    assert "vision_config" not in magistral and magistral["architectures"] == ["MistralForCausalLM"]
    for key, value in text.items():
        if key != "model_type":
            assert magistral[key] == value, key


def test_the_counts_by_hand() -> None:
    """Phi-3-medium: per layer qkv 5,120 x 7,680 + o 5,120^2 + gate_up 5,120 x 35,840 + down 17,920 x 5,120 + 2 norms
    = 340,797,440; x 40 + 2 x 32,064 x 5,120 + 5,120 = 13,960,238,080. Magistral: 40 x 555,755,520 + 2 x 131,072 x
    5,120 + 5,120 = 23,572,403,200."""
    assert phi3_params(_load(PHI3_MEDIUM)["config"]) == 40 * 340_797_440 + 2 * 32_064 * 5_120 + 5_120
    assert dense_params(_load(MAGISTRAL)["config"]) == 40 * 555_755_520 + 2 * 131_072 * 5_120 + 5_120


@pytest.mark.parametrize(("key", "delta"), [("intermediate_size", 128), ("num_hidden_layers", 1),
                                            ("num_key_value_heads", 2), ("vocab_size", 64)])
def test_a_wrong_config_value_breaks_the_count(key: str, delta: int) -> None:
    for model_id in IDS:
        c = _load(model_id)["config"]
        assert shape_count(model_id, {**c, key: c[key] + delta}) != PUBLISHED[model_id], (model_id, key)


# --------------------------------------------------------------------------- what the planner sees


def test_the_planner_finds_and_reads_them() -> None:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import catalog_siblings, entry_to_metadata, find_entry

    for model_id in IDS:
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        arch = read_arch(found.config)
        assert arch.num_hidden_layers == found.config["num_hidden_layers"]
        assert arch.num_kv_heads == found.config["num_key_value_heads"]
        assert entry_to_metadata(found).tensor_bytes == found.weights_bytes
        assert model_id in {e.id for e in catalog_siblings(BASES[model_id])}
    assert read_arch(find_entry(AWQ70).config).quantization.method == "awq"
    assert read_arch(find_entry(FP8_8B).config).quantization.method == "fp8"


def test_the_rope_caches_by_hand() -> None:
    assert rope_cache_bytes_by_hand(_load(AWQ70)["config"]) == 8_192 * 128 * 2
    assert rope_cache_bytes_by_hand(_load(FP8_8B)["config"]) == 8_192 * 128 * 2
    assert rope_cache_bytes_by_hand(_load(PHI3_MEDIUM)["config"]) == 4_096 * 128 * 2  # no rope scaling
    assert rope_cache_bytes_by_hand(_load(MAGISTRAL)["config"]) == 131_072 * 128 * 2
    assert rope_cache_bytes_by_hand(_load(UNSLOTH_1B)["config"]) == 131_072 * 64 * 2  # llama3: no extra rows


@pytest.mark.parametrize(("model_id", "tp"), PLANS)
def test_planner_weights_are_the_checkpoint_share_plus_the_rope_cache(model_id: str, tp: int) -> None:
    plan = _plan(model_id, tp)
    assert plan.fits and plan.parallel.tensor_parallel_size == tp
    entry = _load(model_id)
    expected = entry["weights_bytes"] / tp + rope_cache_bytes_by_hand(entry["config"])
    if tp == 1:
        assert plan.memory.weights_bytes == expected
    else:
        assert plan.memory.weights_bytes == pytest.approx(expected, rel=0.01)
