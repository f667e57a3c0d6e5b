"""Data checks for the catalog entries of part 11 (i): Qwen/Qwen3-4B-Instruct-2507, Qwen/Qwen3-4B-Thinking-2507,
Qwen/Qwen2.5-14B-Instruct-AWQ, Qwen/QwQ-32B-AWQ, Qwen/Qwen2.5-Math-7B-Instruct and deepseek-ai/DeepSeek-V3-0324.

No repository's own config.json was found, so every config is REBUILT (a shape-identical sibling or a copy saved from
the model, see each config_source). The figures are not trusted because they are written down: each count is re-derived
here from the entry's config shapes (part 4's dense formula, part 7's AWQ packing rule, part 3's DeepSeek-V3 FP8 layout)
and must equal params_by_dtype and a count published for a shape-identical model. The planner's per-GPU weights must be
the checkpoint share plus vLLM's RoPE cos/sin cache (part 4's rope_cache_bytes_by_hand).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import CATALOG_PLAN_ENV as ENV
from tests.unit.catalog._catalog_checks import (
    SAFETENSORS_ITEMSIZE,
    assert_config_source_marked,
    assert_entry_basics,
    assert_weights_add_up,
    assert_weights_from_the_split_alone,
    split_bytes,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog.test_catalog_data_part3 import _deepseek_v3_split
from tests.unit.catalog.test_catalog_data_part4 import dense_params, rope_cache_bytes_by_hand
from tests.unit.catalog.test_catalog_data_part7_qwen import awq_split

Q4_INSTRUCT = "Qwen/Qwen3-4B-Instruct-2507"
Q4_THINKING = "Qwen/Qwen3-4B-Thinking-2507"
Q14_AWQ = "Qwen/Qwen2.5-14B-Instruct-AWQ"
QWQ_AWQ = "Qwen/QwQ-32B-AWQ"
MATH7 = "Qwen/Qwen2.5-Math-7B-Instruct"
V3_0324 = "deepseek-ai/DeepSeek-V3-0324"
DENSE_IDS: tuple[str, ...] = (Q4_INSTRUCT, Q4_THINKING, MATH7)
AWQ_IDS: tuple[str, ...] = (Q14_AWQ, QWQ_AWQ)
IDS: tuple[str, ...] = (*DENSE_IDS, *AWQ_IDS, V3_0324)

# the shape-identical catalogued sibling (or AWQ parent) whose published count each entry must reproduce
SIBLING = {
    Q4_INSTRUCT: "Qwen/Qwen3-4B",
    Q4_THINKING: "Qwen/Qwen3-4B",
    MATH7: "Qwen/Qwen2.5-7B-Instruct",
    Q14_AWQ: "Qwen/Qwen2.5-14B-Instruct",
    QWQ_AWQ: "Qwen/QwQ-32B",
    V3_0324: "deepseek-ai/DeepSeek-V3",
}
# published parameter counts (sources in the siblings' params_source)
PUBLISHED: dict[str, int] = {
    Q4_INSTRUCT: 4_022_468_096,  # HF safetensors total of Qwen/Qwen3-4B
    Q4_THINKING: 4_022_468_096,
    MATH7: 7_615_616_512,  # HF count of Qwen/Qwen2.5-7B-Instruct
    Q14_AWQ: 14_770_033_664,  # unpacked: Qwen/Qwen2.5-14B HF count
    QWQ_AWQ: 32_763_876_352,  # unpacked: DeepSeek-R1-Distill-Qwen-32B HF count / keras-hub qwen2.5 32b
    V3_0324: 684_531_386_000,  # HF API split total of deepseek-ai/DeepSeek-V3
}
V3_HF_SPLIT = {"BF16": 3_918_786_560, "F8_E4M3": 680_571_043_840, "F32": 41_555_600}
AWQ_CONFIG = {"bits": 4, "group_size": 128, "modules_to_not_convert": None, "quant_method": "awq",
              "version": "gemm", "zero_point": True}
Q14_AWQ_SHARDS_GB = (3.99, 3.97, 2.02)  # HF tree of Qwen/Qwen2.5-14B-Instruct-AWQ, 10 MB rounding
Q14_AWQ_CONFIG_BYTES = 841  # HF tree: config.json 841 Bytes

# (model, gpu, TP) the planner is asked for
PLANS: tuple[tuple[str, str, int], ...] = (
    (Q4_INSTRUCT, "h100", 1), (Q4_THINKING, "h100", 1), (MATH7, "h100", 1), (Q14_AWQ, "h100", 1),
    (QWQ_AWQ, "h100", 1), (QWQ_AWQ, "h100", 2), (V3_0324, "h200", 8),
)


def _hf_bytes(config: dict[str, Any]) -> int:
    return len((json.dumps(config, indent=2) + "\n").encode())


def _unpacked(config: dict[str, Any], split: dict[str, int]) -> int:
    """Parameters of the float model an AWQ file was made from: 8 int4 values per qweight I32 plus the F16 tensors
    that are not scales (qzeros and scales are quantization metadata)."""
    g = config["quantization_config"]["group_size"]
    h, inter, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    hd = h // config["num_attention_heads"]
    qd, kv = config["num_attention_heads"] * hd, config["num_key_value_heads"] * hd
    linears = [(h, qd), (h, kv), (h, kv), (qd, h), (h, inter), (h, inter), (inter, h)]
    qzeros = layers * sum(i // g * o // 8 for i, o in linears)
    scales = layers * sum(i // g * o for i, o in linears)
    return (split["I32"] - qzeros) * 8 + split["F16"] - scales


def shape_split(model_id: str) -> dict[str, int]:
    """The dtype split re-derived from the entry's config alone."""
    config = _load(model_id)["config"]
    if model_id == V3_0324:
        return _deepseek_v3_split(config)
    if model_id in AWQ_IDS:
        return awq_split(config)
    return {"BF16": dense_params(config)}


# --------------------------------------------------------------------------- keys, sources, bytes


@pytest.mark.parametrize("model_id", IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert_weights_add_up(entry)
    assert set(entry["params_by_dtype"]) <= set(SAFETENSORS_ITEMSIZE)
    assert_weights_from_the_split_alone(entry)
    # every config here was rebuilt, not transcribed from the repository's own file
    assert_config_source_marked(entry["config_source"], True)
    if model_id in AWQ_IDS:
        assert entry["variant"] == "awq" and entry["base_model"] == SIBLING[model_id]
        assert entry["params_source"].startswith("DERIVED")
    elif model_id == V3_0324:
        assert entry["variant"] == "fp8" and entry["base_model"] == model_id
    else:
        assert entry["variant"] == "bf16" and entry["base_model"] == model_id
        assert set(entry["params_by_dtype"]) == {"BF16"}


# --------------------------------------------------------------------------- counts from the shapes


@pytest.mark.parametrize("model_id", IDS)
def test_the_split_follows_from_the_config_shapes(model_id: str) -> None:
    entry = _load(model_id)
    split = shape_split(model_id)
    assert entry["params_by_dtype"] == split
    assert entry["weights_bytes"] == split_bytes(split)


@pytest.mark.parametrize("model_id", IDS)
def test_the_count_is_the_published_count_of_a_shape_identical_model(model_id: str) -> None:
    entry, sibling = _load(model_id), _load(SIBLING[model_id])
    split = entry["params_by_dtype"]
    if model_id in AWQ_IDS:
        count = _unpacked(entry["config"], split)
        assert count == dense_params(sibling["config"]) == dense_params(entry["config"])
    else:
        count = sum(split.values())
    assert count == PUBLISHED[model_id] == sum(sibling["params_by_dtype"].values())


def test_the_2507_refreshes_keep_the_qwen3_4b_shapes_and_raise_the_context() -> None:
    """Same shape keys as Qwen3-4B (so the same 4,022,468,096 tied-embedding count); native context 262,144
    (Qwen3-4B: 40,960). 36 x 100,930,816 + 151,936 x 2,560 + 2,560."""
    old = _load("Qwen/Qwen3-4B")["config"]
    for model_id in (Q4_INSTRUCT, Q4_THINKING):
        c = _load(model_id)["config"]
        assert c["max_position_embeddings"] == 262_144 and old["max_position_embeddings"] == 40_960
        for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                    "num_key_value_heads", "head_dim", "vocab_size", "tie_word_embeddings", "architectures"):
            assert c[key] == old[key], key
        assert 36 * 100_930_816 + 151_936 * 2_560 + 2_560 == dense_params(c) == PUBLISHED[model_id]


def test_the_math_7b_count_by_hand() -> None:
    """A layer: q, o 3,584^2 each + k, v 3,584 x 512 + q/k/v biases 4,608 + MLP 3 x 3,584 x 18,944 + norms 7,168 =
    233,057,792; x 28 + untied 2 x 152,064 x 3,584 + 3,584 = 7,615,616,512."""
    c = _load(MATH7)["config"]
    per_layer = 2 * 3_584**2 + 2 * 3_584 * 512 + 4_608 + 3 * 3_584 * 18_944 + 7_168
    assert per_layer == 233_057_792
    assert 28 * per_layer + 2 * 152_064 * 3_584 + 3_584 == dense_params(c) == PUBLISHED[MATH7]
    assert (c["max_position_embeddings"], c["rope_theta"], c["tie_word_embeddings"]) == (4_096, 10_000.0, False)


@pytest.mark.parametrize("model_id", AWQ_IDS)
def test_an_awq_copy_keeps_its_parents_config(model_id: str) -> None:
    config, parent = _load(model_id)["config"], _load(SIBLING[model_id])["config"]
    assert config["quantization_config"] == AWQ_CONFIG and config["torch_dtype"] == "float16"
    skip = ("quantization_config", "torch_dtype")
    assert {k: v for k, v in config.items() if k not in skip} == {k: v for k, v in parent.items() if k not in skip}


def test_the_14b_awq_split_by_hand_and_the_hf_tree_agrees() -> None:
    """48 x (qweight 34,406,400 + qzeros 268,800) = 1,664,409,600 I32; F16 2 x 152,064 x 5,120 + 48 x (7,168 + 10,240)
    + 5,120 + scales 48 x 2,150,400 = 1,661,195,264 -> 9,980,028,928 B = the 9.98 GB of the three HF shards; the config
    serialises to the 841 B the HF tree lists."""
    entry = _load(Q14_AWQ)
    assert entry["params_by_dtype"] == {"I32": 48 * (34_406_400 + 268_800), "F16": 1_661_195_264}
    assert 2 * 152_064 * 5_120 + 48 * (7_168 + 10_240) + 5_120 + 48 * 2_150_400 == 1_661_195_264
    assert entry["weights_bytes"] == 9_980_028_928
    assert round(entry["weights_bytes"] / 1e9, 2) == pytest.approx(sum(Q14_AWQ_SHARDS_GB), abs=0.021)
    assert _hf_bytes(entry["config"]) == Q14_AWQ_CONFIG_BYTES


def test_the_qwq_awq_is_the_qwen25_32b_awq_layout() -> None:
    """QwQ-32B has Qwen2.5-32B's shapes, so its AWQ split is that of Qwen2.5-32B-Instruct-AWQ (19,328,804,864 B)."""
    assert _load(QWQ_AWQ)["params_by_dtype"] == _load("Qwen/Qwen2.5-32B-Instruct-AWQ")["params_by_dtype"]
    assert _load(QWQ_AWQ)["weights_bytes"] == 19_328_804_864


def test_the_v3_0324_is_v3_shaped() -> None:
    entry, v3 = _load(V3_0324), _load("deepseek-ai/DeepSeek-V3")
    assert entry["config"] == v3["config"]
    assert entry["params_by_dtype"] == V3_HF_SPLIT == _deepseek_v3_split(entry["config"])
    assert entry["weights_bytes"] == 688_574_839_360


@pytest.mark.parametrize(("key", "delta"), [("intermediate_size", 128), ("num_hidden_layers", 1),
                                            ("num_key_value_heads", 8), ("vocab_size", 64)])
def test_a_wrong_config_value_breaks_the_count(key: str, delta: int) -> None:
    for model_id in (Q4_INSTRUCT, MATH7, Q14_AWQ, QWQ_AWQ, V3_0324):
        entry = _load(model_id)
        bad = copy.deepcopy(entry["config"])
        bad[key] += delta
        if model_id == V3_0324:
            split = _deepseek_v3_split(bad)
        elif model_id in AWQ_IDS:
            split = awq_split(bad)
        else:
            split = {"BF16": dense_params(bad)}
        if model_id == V3_0324 and key == "num_key_value_heads":
            continue  # MLA: the KV head count is not a tensor shape
        assert split != entry["params_by_dtype"], (model_id, key)


# --------------------------------------------------------------------------- the planner


def test_the_rope_caches_by_hand() -> None:
    """Qwen3-4B-2507: 262,144 x 128 x 2 B = 64 MiB; Math-7B 4,096 x 128 x 2 B = 1 MiB; Qwen2.5-14B 32,768 x 128 x 2 B
    = 8 MiB; QwQ-32B 40,960 x 128 x 2 B; DeepSeek yarn 4,096 x 40 x 64 x 4 B (float32)."""
    assert rope_cache_bytes_by_hand(_load(Q4_INSTRUCT)["config"]) == 262_144 * 128 * 2
    assert rope_cache_bytes_by_hand(_load(MATH7)["config"]) == 4_096 * 128 * 2
    assert rope_cache_bytes_by_hand(_load(Q14_AWQ)["config"]) == 32_768 * 128 * 2
    assert rope_cache_bytes_by_hand(_load(QWQ_AWQ)["config"]) == 40_960 * 128 * 2
    assert rope_cache_bytes_by_hand(_load(V3_0324)["config"]) == 4_096 * 40 * 64 * 4


def _checkpoint_share(model_id: str, tp: int) -> float:
    """Bytes of the checkpoint one rank loads. DeepSeek-V3-0324: the checkpoint less its MTP layer 61 (vLLM loads it
    only for MTP speculative decoding; part 3's layout formula without it), an eighth per rank, plus the MLA
    down-projections every rank holds whole (estimate/weights.replicated_layer_bytes, as parts 6 check)."""
    entry = _load(model_id)
    if model_id != V3_0324:
        return entry["weights_bytes"] / tp
    from vllmkit.arch import read_arch
    from vllmkit.estimate.weights import replicated_layer_bytes

    arch = read_arch(entry["config"])
    whole = replicated_layer_bytes(arch)
    without_mtp = split_bytes(_deepseek_v3_split(entry["config"], include_mtp=False))
    assert without_mtp == 673_150_611_808
    return without_mtp / tp + arch.num_hidden_layers * (whole - whole // tp)


@pytest.mark.parametrize(("model_id", "gpu", "tp"), PLANS)
def test_planner_weights_are_the_checkpoint_share_plus_the_rope_cache(model_id: str, gpu: str, tp: int) -> None:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import find_entry
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    found = find_entry(model_id)
    assert found is not None and found.id == model_id
    assert read_arch(found.config).num_hidden_layers == found.config["num_hidden_layers"]
    plan = build_plan(PlanRequest(model=model_id, source="catalog", gpu=gpu, tensor_parallel_size=tp), ENV)
    assert plan.fits and plan.parallel.tensor_parallel_size == tp
    expected = _checkpoint_share(model_id, tp) + rope_cache_bytes_by_hand(_load(model_id)["config"])
    if tp == 1:
        assert plan.memory.weights_bytes == expected
    else:
        assert plan.memory.weights_bytes == pytest.approx(expected, rel=0.01)
