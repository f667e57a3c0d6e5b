"""Data checks for the AWQ checkpoints of round 10 (f): TechxGenus/Meta-Llama-3-70B-Instruct-AWQ,
hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4, hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4,
Qwen/Qwen2.5-7B-Instruct-AWQ and Qwen/Qwen2.5-32B-Instruct-AWQ.

None of these repositories' config.json or index was found, so every config is REBUILT (parent shapes + the AutoAWQ
w4 g128 zero-point GEMM quantization_config) and every weight figure is derived. The tests do not trust the figures:
they re-derive each split from the config's shapes with the AWQ packing rule written out below (part 7's awq_split for
the Qwen2 entries, a bias-free twin for Llama), check that unpacking gives the parent's published parameter count, and
compare the 70B byte total with an independently published safetensors index total. The planner's per-GPU weights must
be the checkpoint bytes / TP plus vLLM's RoPE cos/sin cache (part 4's rope_cache_bytes_by_hand).

meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8 of the same brief is NOT in the catalog: no config.json
(quantization_config, ignore list, scale layout) or index total was found for it.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    SAFETENSORS_ITEMSIZE,
    assert_entry_basics,
    assert_weights_add_up,
    assert_weights_from_the_split_alone,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog._catalog_checks import plan_catalog as _plan
from tests.unit.catalog._catalog_checks import split_bytes as _bytes
from tests.unit.catalog.test_catalog_data_part4 import dense_params, rope_cache_bytes_by_hand
from tests.unit.catalog.test_catalog_data_part7_qwen import awq_split

LLAMA3_70B = "TechxGenus/Meta-Llama-3-70B-Instruct-AWQ"
LLAMA31_8B = "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"
LLAMA31_70B = "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4"
QWEN25_7B = "Qwen/Qwen2.5-7B-Instruct-AWQ"
QWEN25_32B = "Qwen/Qwen2.5-32B-Instruct-AWQ"
LLAMA_IDS: tuple[str, ...] = (LLAMA3_70B, LLAMA31_8B, LLAMA31_70B)
QWEN_IDS: tuple[str, ...] = (QWEN25_7B, QWEN25_32B)
IDS: tuple[str, ...] = (*LLAMA_IDS, *QWEN_IDS)
PARENTS = {
    LLAMA3_70B: "meta-llama/Meta-Llama-3-70B-Instruct",
    LLAMA31_8B: "meta-llama/Llama-3.1-8B-Instruct",
    LLAMA31_70B: "meta-llama/Llama-3.1-70B-Instruct",
    QWEN25_7B: "Qwen/Qwen2.5-7B-Instruct",
    QWEN25_32B: "Qwen/Qwen2.5-32B-Instruct",
}
AWQ_CONFIG = {"bits": 4, "group_size": 128, "modules_to_not_convert": None, "quant_method": "awq",
              "version": "gemm", "zero_point": True}

# metadata.total_size of a public 9-shard Llama-70B AWQ safetensors index (qweight tensors, 80 layers, separate
# lm_head; find_string/read_file id 49343980400 -- the file does not name its repository)
LLAMA_70B_AWQ_INDEX_TOTAL = 39_767_785_472

# (model, TP) the planner is asked for on H100-80GB: each fits one card; the 70B are also checked at TP2
PLANS: tuple[tuple[str, int], ...] = (
    (LLAMA3_70B, 1), (LLAMA3_70B, 2), (LLAMA31_8B, 1), (LLAMA31_70B, 1), (LLAMA31_70B, 2),
    (QWEN25_7B, 1), (QWEN25_32B, 1),
)


def llama_awq_split(config: dict[str, Any]) -> dict[str, int]:
    """AutoAWQ GEMM checkpoint of a Llama decoder (w4, zero point, group g): every q/k/v/o/gate/up/down Linear
    in -> out stores qweight I32 [in, out/8], qzeros I32 [in/g, out/8] and scales F16 [in/g, out]; embed_tokens,
    lm_head (untied) and the 2 RMSNorms a layer + the final norm stay F16. No biases (Llama has none)."""
    q = config["quantization_config"]
    assert (q["quant_method"], q["bits"], q["version"], q["zero_point"]) == ("awq", 4, "gemm", True)
    g = q["group_size"]
    h, inter, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    hd = h // config["num_attention_heads"]
    qd, kv = config["num_attention_heads"] * hd, config["num_key_value_heads"] * hd
    linears = [(h, qd), (h, kv), (h, kv), (qd, h), (h, inter), (h, inter), (inter, h)]  # (in, out)
    assert all(i % g == 0 and o % 8 == 0 for i, o in linears)
    qweight = layers * sum(i * o // 8 for i, o in linears)
    qzeros = layers * sum(i // g * o // 8 for i, o in linears)
    scales = layers * sum(i // g * o for i, o in linears)
    embeddings = config["vocab_size"] * h * (1 if config.get("tie_word_embeddings") else 2)
    rest = embeddings + (2 * layers + 1) * h
    return {"I32": qweight + qzeros, "F16": rest + scales}


def split_of(model_id: str) -> dict[str, int]:
    config = _load(model_id)["config"]
    return llama_awq_split(config) if model_id in LLAMA_IDS else awq_split(config)


def unpacked_params(config: dict[str, Any], split: dict[str, int]) -> int:
    """Parameters of the float model the AWQ file was made from: 8 int4 values per qweight I32, plus the F16 tensors
    that are not AWQ scales (qzeros and scales are quantization metadata, not model parameters)."""
    g = config["quantization_config"]["group_size"]
    h, inter, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    hd = h // config["num_attention_heads"]
    qd, kv = config["num_attention_heads"] * hd, config["num_key_value_heads"] * hd
    linears = [(h, qd), (h, kv), (h, kv), (qd, h), (h, inter), (h, inter), (inter, h)]
    qzeros = layers * sum(i // g * o // 8 for i, o in linears)
    scales = layers * sum(i // g * o for i, o in linears)
    return (split["I32"] - qzeros) * 8 + split["F16"] - scales


# --------------------------------------------------------------------------- keys, sources, bytes


@pytest.mark.parametrize("model_id", IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["variant"] == "awq" and entry["base_model"] == PARENTS[model_id]
    assert_weights_add_up(entry)
    assert set(entry["params_by_dtype"]) == {"F16", "I32"} <= set(SAFETENSORS_ITEMSIZE)
    # nothing here was found verbatim: every config says it was rebuilt and every count that it was derived
    assert entry["config_source"].startswith("REBUILT") and "not verbatim" in entry["config_source"]
    assert entry["params_source"].startswith("DERIVED")
    assert_weights_from_the_split_alone(entry)


@pytest.mark.parametrize("model_id", IDS)
def test_an_awq_copy_keeps_its_parents_shapes(model_id: str) -> None:
    config, parent = _load(model_id)["config"], _load(PARENTS[model_id])["config"]
    assert config["quantization_config"] == AWQ_CONFIG
    assert config["torch_dtype"] == "float16"
    skip = ("quantization_config", "torch_dtype")
    assert {k: v for k, v in config.items() if k not in skip} == {k: v for k, v in parent.items() if k not in skip}


# --------------------------------------------------------------------------- the AWQ arithmetic


@pytest.mark.parametrize("model_id", IDS)
def test_the_split_follows_from_the_shapes(model_id: str) -> None:
    entry = _load(model_id)
    split = split_of(model_id)
    assert entry["params_by_dtype"] == split
    assert entry["weights_bytes"] == _bytes(split) == 4 * split["I32"] + 2 * split["F16"]


@pytest.mark.parametrize("model_id", IDS)
def test_unpacked_the_awq_file_is_the_parents_published_count(model_id: str) -> None:
    """qweight x 8 + the F16 non-scale tensors = the parent's published parameter count (its params_by_dtype), and
    the same as part 4's shape formula on the AWQ config."""
    entry, parent = _load(model_id), _load(PARENTS[model_id])
    unpacked = unpacked_params(entry["config"], entry["params_by_dtype"])
    assert unpacked == sum(parent["params_by_dtype"].values()) == dense_params(entry["config"])


def test_the_llama31_8b_split_by_hand() -> None:
    """Llama-3.1-8B: a layer's Linears hold 218,103,808 weights -> qweight 27,262,976 + qzeros 212,992 I32, x 32 =
    879,230,976 I32; scales 32 x 1,703,936 = 54,525,952; F16 rest 2 x 128,256 x 4,096 + 65 x 4,096 = 1,050,939,392.
    Bytes 4 x 879,230,976 + 2 x 1,105,465,344 = 5,727,854,592 (5.33 GiB)."""
    entry = _load(LLAMA31_8B)
    assert entry["params_by_dtype"] == {"I32": 879_230_976, "F16": 1_105_465_344}
    assert entry["weights_bytes"] == 5_727_854_592


def test_the_70b_bytes_are_a_published_llama_70b_awq_index_total() -> None:
    """80 layers x (qweight 106,954,752 + qzeros 835,584) = 8,623,226,880 I32; F16 2 x 128,256 x 8,192 + 161 x 8,192
    + scales 80 x 6,684,672 = 2,637,438,976. Bytes 39,767,785,472 = the total_size of a public 9-shard Llama-70B AWQ
    index. Group 64 or symmetric (no qzeros) would not give it."""
    for model_id in (LLAMA3_70B, LLAMA31_70B):
        entry = _load(model_id)
        assert entry["params_by_dtype"] == {"I32": 8_623_226_880, "F16": 2_637_438_976}
        assert entry["weights_bytes"] == LLAMA_70B_AWQ_INDEX_TOTAL
    config = _load(LLAMA31_70B)["config"]
    g64 = {**config, "quantization_config": {**config["quantization_config"], "group_size": 64}}
    assert _bytes(llama_awq_split(g64)) != LLAMA_70B_AWQ_INDEX_TOTAL
    h, inter, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    kv = config["num_key_value_heads"] * (h // config["num_attention_heads"])
    qzeros = layers * sum(i // 128 * o // 8 for i, o in [(h, h), (h, kv), (h, kv), (h, h), (h, inter), (h, inter),
                                                           (inter, h)])
    assert qzeros == 80 * 835_584
    assert _bytes(llama_awq_split(config)) - 4 * qzeros != LLAMA_70B_AWQ_INDEX_TOTAL  # a symmetric file: no qzeros


def test_the_qwen_splits_by_hand() -> None:
    """Qwen2.5-7B: 28 x (qweight 29,130,752 + qzeros 227,584) = 822,033,408 I32; F16 2 x 152,064 x 3,584 + 28 x
    (4,608 biases + 7,168 norms) + 3,584 + scales 28 x 1,820,672 = 1,141,306,880 -> 5,570,747,392 B.
    Qwen2.5-32B: 64 layers -> 3,931,176,960 I32 + 1,802,048,512 F16 -> 19,328,804,864 B (18.00 GiB)."""
    assert _load(QWEN25_7B)["params_by_dtype"] == {"I32": 822_033_408, "F16": 1_141_306_880}
    assert _load(QWEN25_7B)["weights_bytes"] == 5_570_747_392
    assert _load(QWEN25_32B)["params_by_dtype"] == {"I32": 3_931_176_960, "F16": 1_802_048_512}
    assert _load(QWEN25_32B)["weights_bytes"] == 19_328_804_864


@pytest.mark.parametrize(("key", "delta"), [("intermediate_size", 128), ("num_hidden_layers", 1),
                                            ("num_key_value_heads", 8), ("vocab_size", 64)])
def test_a_wrong_config_value_breaks_the_count(key: str, delta: int) -> None:
    for model_id in (LLAMA31_70B, QWEN25_32B):
        entry = _load(model_id)
        config = {**entry["config"], key: entry["config"][key] + delta}
        split = llama_awq_split(config) if model_id in LLAMA_IDS else awq_split(config)
        assert split != entry["params_by_dtype"], (model_id, key)


# --------------------------------------------------------------------------- what the planner sees


def test_the_planner_finds_and_reads_them() -> None:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import catalog_siblings, entry_to_metadata, find_entry

    for model_id in IDS:
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        arch = read_arch(found.config)
        assert arch.num_hidden_layers == found.config["num_hidden_layers"]
        facts = arch.quantization
        assert facts is not None and (facts.method, facts.bits, facts.group_size) == ("awq", 4, 128)
        assert entry_to_metadata(found).tensor_bytes == found.weights_bytes
        assert model_id in {e.id for e in catalog_siblings(PARENTS[model_id])}


@pytest.mark.parametrize(("model_id", "tp"), PLANS)
def test_planner_weights_are_the_checkpoint_share_plus_the_rope_cache(model_id: str, tp: int) -> None:
    """TP1: exactly checkpoint bytes + RoPE cache (Llama-3 8,192 x 128 x 2 B = 2 MiB; Llama-3.1 131,072 x 128 x 2 B =
    32 MiB; Qwen2.5 32,768 x 128 x 2 B = 8 MiB). TP2: the per-GPU share within 1 % (embeddings / lm_head / norms
    are not all split evenly)."""
    plan = _plan(model_id, tp)
    assert plan.fits and plan.parallel.tensor_parallel_size == tp
    entry = _load(model_id)
    expected = entry["weights_bytes"] / tp + rope_cache_bytes_by_hand(entry["config"])
    if tp == 1:
        assert plan.memory.weights_bytes == expected
    else:
        assert plan.memory.weights_bytes == pytest.approx(expected, rel=0.01)


def test_the_rope_caches_by_hand() -> None:
    assert rope_cache_bytes_by_hand(_load(LLAMA3_70B)["config"]) == 8_192 * 128 * 2
    assert rope_cache_bytes_by_hand(_load(LLAMA31_70B)["config"]) == 131_072 * 128 * 2
    assert rope_cache_bytes_by_hand(_load(QWEN25_7B)["config"]) == 32_768 * 128 * 2
