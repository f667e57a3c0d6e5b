"""Data checks for the catalog entries of round 8 (misc): Qwen3-8B-AWQ, the base models Qwen2.5-32B and Qwen2-72B,
QwQ-32B-Preview, Qwen3-VL-4B-Instruct and nvidia/AceMath-7B-Instruct -- models public vLLM benchmarks name.

As in parts 1-7 the figures are not trusted because they are written down: every entry's parameter count is
re-derived from its config's tensor shapes with the formulas of parts 3, 4 and 7 (imported, not copied) and compared
with an independently published figure (an HF safetensors total, a transformers numel, the shape-identical sibling's
HF count, the HF tree's shard sizes), so a wrong config or a wrong count fails. A base model differs from its instruct
sibling only in weights: the tests check that the shape keys agree and that the sibling's published count follows.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    SAFETENSORS_ITEMSIZE,
    assert_base_is_catalogued,
    assert_config_source_marked,
    assert_entry_basics,
    assert_weights_add_up,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog.test_catalog_data_part3 import _qwen3_text_params, _qwen3_vl_vision_params
from tests.unit.catalog.test_catalog_data_part4 import dense_params, rope_cache_bytes_by_hand
from tests.unit.catalog.test_catalog_data_part7_qwen import awq_split

IDS: tuple[str, ...] = (
    "Qwen/Qwen3-8B-AWQ",
    "Qwen/Qwen2.5-32B",
    "Qwen/Qwen2-72B",
    "Qwen/QwQ-32B-Preview",
    "Qwen/Qwen3-VL-4B-Instruct",
    "nvidia/AceMath-7B-Instruct",
)
# configs rebuilt from copies rather than transcribed from the repository's own config.json page
REBUILT_IDS = frozenset({"Qwen/Qwen3-8B-AWQ", "Qwen/QwQ-32B-Preview", "Qwen/Qwen3-VL-4B-Instruct"})

# published figures (see each entry's params_source)
QWEN25_32B_SHAPE_COUNT = (
    32_763_876_352  # HF API of the shape-identical DeepSeek-R1-Distill-Qwen-32B, keras-hub
)
QWEN2_72B_SHAPE_COUNT = 72_706_203_648  # Qwen2/2.5-72B-Instruct
QWEN3_VL_4B_NUMEL = 4_437_815_808  # transformers total_parameters of Qwen3-VL-4B-Instruct (bf16)
QWEN3_8B_AWQ_HF_TOTAL = 2_174_235_648  # 'hfTotalSafetensors' quoted with the Qwen3-8B-AWQ config
QWEN3_8B_COUNT = 8_190_735_360  # HF API of Qwen/Qwen3-8B (catalog part 2)
ACEMATH_SHARDS_GB = (4.88, 4.93, 4.33, 1.09)  # HF tree of nvidia/AceMath-7B-Instruct, rounded to 10 MB

# dense Qwen2 entries: (id, sibling with the same shapes whose count is published, expected count)
DENSE: tuple[tuple[str, str, int], ...] = (
    ("Qwen/Qwen2.5-32B", "Qwen/Qwen2.5-32B-Instruct", QWEN25_32B_SHAPE_COUNT),
    ("Qwen/Qwen2-72B", "Qwen/Qwen2-72B-Instruct", QWEN2_72B_SHAPE_COUNT),
    ("Qwen/QwQ-32B-Preview", "Qwen/QwQ-32B", QWEN25_32B_SHAPE_COUNT),
    ("nvidia/AceMath-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", 7_615_616_512),
)
SHAPE_KEYS = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "vocab_size",
    "tie_word_embeddings",
    "architectures",
)


def _hf_bytes(config: dict[str, Any]) -> int:
    """Size of a config.json as Hugging Face writes it (indent 2, trailing newline)."""
    return len((json.dumps(config, indent=2) + "\n").encode())


# --------------------------------------------------------------------------- keys, sources, weights


@pytest.mark.parametrize("model_id", IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert_weights_add_up(entry)
    assert set(entry["params_by_dtype"]) <= set(SAFETENSORS_ITEMSIZE)
    quantized = entry["config"].get("quantization_config") is not None
    assert quantized == (entry["variant"] == "awq")
    assert (entry["base_model"] == model_id) == (entry["variant"] == "bf16")
    assert_base_is_catalogued(entry)


@pytest.mark.parametrize("model_id", IDS)
def test_a_rebuilt_config_says_so(model_id: str) -> None:
    assert_config_source_marked(_load(model_id)["config_source"], model_id in REBUILT_IDS, "Transcribed from the rendered HF page")


@pytest.mark.parametrize(
    ("model_id", "size"),
    [
        ("Qwen/Qwen2.5-32B", 664),
        ("Qwen/Qwen2-72B", 664),
        ("nvidia/AceMath-7B-Instruct", 678),
        ("Qwen/QwQ-32B-Preview", 662),
    ],
)
def test_configs_have_the_byte_size_the_hf_pages_show(model_id: str, size: int) -> None:
    """The HF pages list config.json at these sizes; a transcription error in a key or a value changes the count."""
    assert _hf_bytes(_load(model_id)["config"]) == size


# --------------------------------------------------------------------------- dense Qwen2 entries


@pytest.mark.parametrize(("model_id", "sibling", "published"), DENSE)
def test_dense_counts_follow_from_the_config_shapes(model_id: str, sibling: str, published: int) -> None:
    """Part 4's dense formula on the entry's own config gives the published count of its shape-identical sibling,
    and the sibling's catalog config has the same shape keys (a base differs from its instruct model only in
    weights; AceMath-7B is a Qwen2.5-Math-7B fine-tune with Qwen2.5-7B shapes)."""
    entry, other = _load(model_id), _load(sibling)
    for key in SHAPE_KEYS:
        assert entry["config"][key] == other["config"][key], key
    assert dense_params(entry["config"]) == published == sum(other["params_by_dtype"].values())
    assert entry["params_by_dtype"] == {"BF16": published}
    assert entry["weights_bytes"] == 2 * published
    assert entry["config"]["torch_dtype"] == "bfloat16"


def test_the_qwen2_72b_count_by_hand() -> None:
    """Per layer q 8,192 x 8,192 = 67,108,864, k and v 8,192 x 1,024 = 8,388,608 each, o 67,108,864, q/k/v biases
    10,240, MLP 3 x 8,192 x 29,568 = 726,663,168, norms 16,384 -> 877,684,736; x 80 = 70,214,778,880; embeddings
    2 x 152,064 x 8,192 = 2,491,416,576 (untied) + final norm 8,192 = 72,706,203,648."""
    c = _load("Qwen/Qwen2-72B")["config"]
    per_layer = 67_108_864 + 2 * 8_388_608 + 67_108_864 + 10_240 + 726_663_168 + 16_384
    assert per_layer == 877_684_736
    assert c["num_hidden_layers"] * per_layer + 2 * c["vocab_size"] * c["hidden_size"] + c["hidden_size"] == (
        72_706_203_648
    )
    assert dense_params(c) == 72_706_203_648


def test_the_acemath_7b_count_by_hand_and_the_hf_shards() -> None:
    """Per layer q 3,584 x 3,584 = 12,845,056, k and v 3,584 x 512 = 1,835,008 each, o 12,845,056, biases 4,608,
    MLP 3 x 3,584 x 18,944 = 203,685,888, norms 7,168 -> 233,057,792; x 28 = 6,525,618,176 + 2 x 152,064 x 3,584
    = 1,089,994,752 + 3,584 = 7,615,616,512. x 2 B = 15.23 GB, the sum of the four shards the HF tree lists."""
    entry = _load("nvidia/AceMath-7B-Instruct")
    per_layer = 12_845_056 + 2 * 1_835_008 + 12_845_056 + 4_608 + 203_685_888 + 7_168
    assert per_layer == 233_057_792
    assert 28 * per_layer + 1_089_994_752 + 3_584 == dense_params(entry["config"]) == 7_615_616_512
    shards = sum(ACEMATH_SHARDS_GB) * 1e9  # each rounded to 0.01 GB and a few KB of headers each
    assert abs(entry["weights_bytes"] - shards) < 4 * 0.005e9 + 4 * 2**20
    c = entry["config"]
    assert (c["max_position_embeddings"], c["rope_theta"], c["sliding_window"]) == (4096, 10000, 4096)


def test_the_base_models_keep_their_base_settings() -> None:
    """What separates the base configs from their instruct siblings (HF pages): end-of-text as eos, a 131,072
    max_position_embeddings, rms_norm_eps 1e-05 -- and nothing that changes a tensor shape."""
    for base, instruct in (
        ("Qwen/Qwen2.5-32B", "Qwen/Qwen2.5-32B-Instruct"),
        ("Qwen/Qwen2-72B", "Qwen/Qwen2-72B-Instruct"),
    ):
        b, i = _load(base)["config"], _load(instruct)["config"]
        assert (b["eos_token_id"], i["eos_token_id"]) == (151643, 151645)
        assert b["max_position_embeddings"] == 131072 and i["max_position_embeddings"] == 32768
        assert b["rms_norm_eps"] == 1e-05 and i["rms_norm_eps"] == 1e-06
        assert _load(base)["params_by_dtype"] == _load(instruct)["params_by_dtype"]


@pytest.mark.parametrize(("model_id", "sibling", "published"), DENSE)
def test_a_wrong_shape_would_fail(model_id: str, sibling: str, published: int) -> None:
    """The comparison is sensitive: one changed shape key moves the derived count off the published one."""
    del sibling
    config = _load(model_id)["config"]
    for key, delta in (("intermediate_size", 128), ("num_hidden_layers", 1), ("vocab_size", 64)):
        bad = copy.deepcopy(config)
        bad[key] += delta
        assert dense_params(bad) != published, key
    bad = copy.deepcopy(config)
    bad["tie_word_embeddings"] = True
    assert dense_params(bad) != published


# --------------------------------------------------------------------------- Qwen3-VL-4B-Instruct


def test_the_qwen3_vl_4b_count_follows_from_the_config() -> None:
    """Part 3's Qwen3-VL formulas: language model (tied embedding) 36 x (attention 2,560 x 4,096 + 2 x 2,560 x
    1,024 + 4,096 x 2,560 + q/k norms 256 + MLP 3 x 2,560 x 9,728 + norms 5,120 = 100,930,816) + 151,936 x 2,560
    + 2,560 = 4,022,468,096; vision tower 415,347,712; total 4,437,815,808, the transformers numel published for
    Qwen3-VL-4B-Instruct."""
    entry = _load("Qwen/Qwen3-VL-4B-Instruct")
    c = entry["config"]
    assert c["tie_word_embeddings"] is True and c["text_config"]["tie_word_embeddings"] is True
    text = _qwen3_text_params(c["text_config"], c["tie_word_embeddings"])
    vision = _qwen3_vl_vision_params(c["vision_config"])
    assert 36 * 100_930_816 + 151_936 * 2_560 + 2_560 == text == 4_022_468_096
    assert vision == 415_347_712
    assert text + vision == QWEN3_VL_4B_NUMEL
    assert entry["params_by_dtype"] == {"BF16": QWEN3_VL_4B_NUMEL}
    # untied, the same shapes would have 388,956,160 more parameters: the published count pins the tying
    assert _qwen3_text_params(c["text_config"], False) - text == 151_936 * 2_560 == 388_956_160


def test_the_qwen3_vl_4b_tower_is_the_8b_tower_narrowed() -> None:
    """The 8B entry's tower (verified against its HF count in part 3) and the 4B's differ only in width/depth keys."""
    small, big = _load("Qwen/Qwen3-VL-4B-Instruct")["config"], _load("Qwen/Qwen3-VL-8B-Instruct")["config"]
    for key in (
        "patch_size",
        "spatial_merge_size",
        "temporal_patch_size",
        "num_position_embeddings",
        "in_channels",
    ):
        assert small["vision_config"][key] == big["vision_config"][key], key
    assert small["vision_config"]["out_hidden_size"] == small["text_config"]["hidden_size"] == 2560


# --------------------------------------------------------------------------- Qwen3-8B-AWQ


def qwen3_awq_split(config: dict[str, Any]) -> dict[str, int]:
    """AutoAWQ GEMM checkpoint of a Qwen3 decoder (w4, zero point, group g): every q/k/v/o/gate/up/down Linear in -> out
    stores qweight I32 [in, out/8], qzeros I32 [in/g, out/8] and scales F16 [in/g, out]; embed_tokens, the untied
    lm_head, the RMSNorms and the per-head q/k norms stay F16 (Qwen3 has no attention biases)."""
    q = config["quantization_config"]
    assert (q["quant_method"], q["bits"], q["version"], q["zero_point"]) == ("awq", 4, "gemm", True)
    g = q["group_size"]
    h, inter, layers, hd = (
        config["hidden_size"],
        config["intermediate_size"],
        config["num_hidden_layers"],
        config["head_dim"],
    )
    qd, kv = config["num_attention_heads"] * hd, config["num_key_value_heads"] * hd
    linears = [(h, qd), (h, kv), (h, kv), (qd, h), (h, inter), (h, inter), (inter, h)]
    assert all(i % g == 0 and o % 8 == 0 for i, o in linears)
    qweight = layers * sum(i * o // 8 for i, o in linears)
    qzeros = layers * sum(i // g * o // 8 for i, o in linears)
    scales = layers * sum(i // g * o for i, o in linears)
    embeddings = config["vocab_size"] * h * (1 if config["tie_word_embeddings"] else 2)
    rest = embeddings + layers * (2 * h + 2 * hd) + h
    return {"I32": qweight + qzeros, "F16": rest + scales}


def test_the_qwen3_8b_awq_split_and_the_published_total() -> None:
    """Per layer qweight (4,096 x (4,096 + 2 x 1,024 + 2 x 12,288) + 4,096 x 4,096 + 12,288 x 4,096) / 8 = 24,117,248
    and qzeros 188,416, x 36 = 875,003,904 I32; F16: embeddings 2 x 151,936 x 4,096 = 1,244,659,712 + norms 36 x
    8,448 + 4,096 + scales 36 x 1,507,328 = 1,299,231,744. Together 2,174,235,648, the published HF total."""
    entry = _load("Qwen/Qwen3-8B-AWQ")
    split = qwen3_awq_split(entry["config"])
    assert split == entry["params_by_dtype"] == {"I32": 875_003_904, "F16": 1_299_231_744}
    assert sum(split.values()) == QWEN3_8B_AWQ_HF_TOTAL
    assert entry["weights_bytes"] == 4 * split["I32"] + 2 * split["F16"] == 6_098_479_104


def test_the_qwen3_awq_layout_agrees_with_the_qwen2_awq_formula() -> None:
    """Part 7's Qwen2 AWQ formula packs the same Linears (head_dim = hidden / heads = 128 here), so the I32 part is
    identical; its F16 part counts q/k/v biases (4,096 + 2 x 1,024 per layer) where Qwen3 has q/k norms (2 x 128)."""
    c = _load("Qwen/Qwen3-8B-AWQ")["config"]
    assert c["head_dim"] == c["hidden_size"] // c["num_attention_heads"]
    qwen2, qwen3 = awq_split(c), qwen3_awq_split(c)
    assert qwen2["I32"] == qwen3["I32"]
    assert qwen2["F16"] - qwen3["F16"] == c["num_hidden_layers"] * (4_096 + 2 * 1_024 - 2 * 128)


def test_unpacked_the_awq_checkpoint_is_qwen3_8b() -> None:
    """8 int4 values per qweight I32: qweight x 8 plus the F16 tensors other than scales is Qwen3-8B's published
    8,190,735,360, and the shape keys are Qwen3-8B's."""
    entry, base = _load("Qwen/Qwen3-8B-AWQ"), _load("Qwen/Qwen3-8B")
    c = entry["config"]
    assert entry["base_model"] == "Qwen/Qwen3-8B"
    assert {
        k: v for k, v in c.items() if k not in ("quantization_config", "torch_dtype", "transformers_version")
    } == {k: v for k, v in base["config"].items() if k not in ("torch_dtype", "transformers_version")}
    assert c["torch_dtype"] == "float16"
    h, inter, layers, hd = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["head_dim"]
    qd, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    linear = [(h, qd), (h, kv), (h, kv), (qd, h), (h, inter), (h, inter), (inter, h)]
    qweight = layers * sum(i * o // 8 for i, o in linear)
    scales = layers * sum(i // 128 * o for i, o in linear)
    f16_not_scales = entry["params_by_dtype"]["F16"] - scales
    assert 8 * qweight + f16_not_scales == QWEN3_8B_COUNT == base["params_by_dtype"]["BF16"]
    assert _qwen3_text_params(base["config"], False) == QWEN3_8B_COUNT


# --------------------------------------------------------------------------- the planner


def test_the_planner_reads_and_plans_them() -> None:
    """Every entry is found, its architecture read, and it plans on H100s: one card for the 5.7 GiB AWQ, 8.3 GiB VL-4B
    and 14.2 GiB AceMath; the 61 GiB 32B models and the 135 GiB Qwen2-72B on several."""
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import find_entry
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    gpus = {
        "Qwen/Qwen3-8B-AWQ": None,
        "Qwen/Qwen3-VL-4B-Instruct": None,
        "nvidia/AceMath-7B-Instruct": None,
        "Qwen/QwQ-32B-Preview": None,
        "Qwen/Qwen2.5-32B": None,
        "Qwen/Qwen2-72B": 8,
    }
    for model_id, count in gpus.items():
        found = find_entry(model_id)
        assert found is not None and found.id == model_id
        text = found.config.get("text_config") or found.config
        assert read_arch(found.config).num_hidden_layers == text["num_hidden_layers"]
        plan = build_plan(
            PlanRequest(model=model_id, source="catalog", gpu="h100", gpu_count=count),
            {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"},
        )
        assert plan.fits, model_id
        entry = _load(model_id)
        per_gpu = (
            entry["weights_bytes"] / plan.parallel.tensor_parallel_size / plan.parallel.pipeline_parallel_size
        ) + rope_cache_bytes_by_hand(entry["config"])
        assert plan.memory.weights_bytes == pytest.approx(per_gpu, rel=0.02), model_id
        if entry["weights_bytes"] < 20 * 2**30:
            assert plan.parallel.tensor_parallel_size * plan.parallel.pipeline_parallel_size == 1, model_id
