"""Data checks for the FP8 checkpoints of round 8 that public vLLM benchmarks and logs use:
neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8 and -70B-Instruct-FP8 (compressed-tensors, static per-tensor),
amd/Llama-3.1-405B-Instruct-FP8-KV and amd/Llama-3.3-70B-Instruct-FP8-KV (AMD Quark, per-tensor, FP8 KV scales),
zai-org/GLM-4.6-FP8 (compressed-tensors, per-channel weights) and
neuralmagic/Llama-3.1-Nemotron-70B-Instruct-HF-FP8-dynamic (compressed-tensors, per-channel / per-token).

No config.json of these repositories was found verbatim, so every config is REBUILT from its BF16 parent in
this catalog plus the quantization scheme its publisher documents, and every count is DERIVED. The tests
below therefore re-derive each checkpoint's tensors from the config shapes with the arithmetic written out
(FP8 weights of every quantized Linear plus the scales the format stores), and compare them with figures
published independently of these entries: the parameter count of the BF16 parent (an FP8 checkpoint holds
the same weights, only re-typed, plus its scales), the published total of GLM-4.7-FP8 (same shapes and
format as GLM-4.6-FP8), the HF dtype split of a Llama-70B FP8-dynamic checkpoint, and the rounded sizes
public guides print. A wrong config (one shape off) fails these checks.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    GIB,
    assert_entry_basics,
    assert_weights_add_up,
    assert_weights_from_the_split_alone,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog._catalog_checks import split_bytes as _bytes
from tests.unit.catalog.test_catalog_data_part3 import _glm4_moe_params
from tests.unit.catalog.test_catalog_data_part4 import dense_params, rope_cache_bytes_by_hand

NM_PER_TENSOR = ("neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8", "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8")
AMD_QUARK = ("amd/Llama-3.1-405B-Instruct-FP8-KV", "amd/Llama-3.3-70B-Instruct-FP8-KV")
GLM46_FP8 = "zai-org/GLM-4.6-FP8"
NEMOTRON_FP8 = "neuralmagic/Llama-3.1-Nemotron-70B-Instruct-HF-FP8-dynamic"
PART8_IDS: tuple[str, ...] = (*NM_PER_TENSOR, *AMD_QUARK, GLM46_FP8, NEMOTRON_FP8)

BASES = {
    "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8": "meta-llama/Llama-3.1-8B-Instruct",
    "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8": "meta-llama/Llama-3.1-70B-Instruct",
    "amd/Llama-3.1-405B-Instruct-FP8-KV": "meta-llama/Llama-3.1-405B-Instruct",
    "amd/Llama-3.3-70B-Instruct-FP8-KV": "meta-llama/Llama-3.3-70B-Instruct",
    GLM46_FP8: "zai-org/GLM-4.6",
}
NEMOTRON_BASE = "nvidia/Llama-3.1-Nemotron-70B-Instruct-HF"  # not in the catalog: named plainly

# independently published figures (sources in the entries' params_source / config_source)
LLAMA31_8B_VLLM_LOG_BYTES = 16_060_522_496  # BF16 Llama-3.1-8B, a vLLM log's 14.9595 GiB (part 4)
GLM47_COUNT = 358_337_791_296  # HF count of zai-org/GLM-4.7 (find_string id 69468411049)
GLM47_FP8_COUNT = 358_458_391_872  # HF count of zai-org/GLM-4.7-FP8, same table
LLAMA70B_FP8_DYNAMIC_SPLIT = {"BF16": 2_109_382_656, "F8_E4M3": 68_451_041_280}  # HF split, id 27353611740
NM_70B_GUIDE_GIB = 67.7  # 'neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8 (70B, 67.7 GiB ...)', id 1917167677
NM_8B_GUIDE_GB = 8.5  # 'Meta-Llama-3.1-8B-Instruct-FP8 (Footprint: ~8.5 GB VRAM)', id 69649592182


# --------------------------------------------------------------------------- keys, sources, bytes


@pytest.mark.parametrize("model_id", PART8_IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["variant"] == "fp8" and entry["base_model"] != model_id
    assert entry["config"].get("quantization_config") is not None
    assert_weights_add_up(entry)
    assert_weights_from_the_split_alone(entry)


@pytest.mark.parametrize("model_id", PART8_IDS)
def test_rebuilt_configs_and_derived_counts_say_so(model_id: str) -> None:
    entry = _load(model_id)
    assert entry["config_source"].startswith("REBUILT") and "not verbatim" in entry["config_source"]
    assert entry["params_source"].startswith("DERIVED")
    assert entry["weights_source"].startswith("DERIVED")


@pytest.mark.parametrize("model_id", PART8_IDS)
def test_base_models(model_id: str) -> None:
    entry = _load(model_id)
    if model_id == NEMOTRON_FP8:
        assert entry["base_model"] == NEMOTRON_BASE
        base = _load(NEMOTRON_BASE)  # catalogued in round 12 (part 10 e)
        assert base["config"]["num_hidden_layers"] == entry["config"]["num_hidden_layers"]
        assert base["config"]["hidden_size"] == entry["config"]["hidden_size"]
    else:
        assert entry["base_model"] == BASES[model_id]
        base = _load(BASES[model_id])
        # an FP8 copy keeps every shape of its parent; only quantization_config is added
        assert {k: v for k, v in entry["config"].items() if k != "quantization_config"} == base["config"]


# --------------------------------------------------------------------------- Llama, per-tensor FP8


def llama_linears(c: dict[str, Any]) -> list[tuple[int, int]]:
    """(out, in) of the seven Linears of a Llama decoder layer: q, k, v, o, gate, up, down."""
    h, inter = c["hidden_size"], c["intermediate_size"]
    kv = c["num_key_value_heads"] * (h // c["num_attention_heads"])
    return [(h, h), (kv, h), (kv, h), (h, h), (inter, h), (inter, h), (h, inter)]


def llama_fp8_split(c: dict[str, Any], *, scale: str, kv_output_scales: bool = False) -> dict[str, int]:
    """Tensors of a Llama checkpoint whose decoder Linears are FP8 and lm_head stays BF16.

    scale "tensor": one scalar weight_scale + one scalar input_scale per Linear (static activations),
    stored F32; with kv_output_scales also k_proj / v_proj output_scale (Quark's FP8 KV cache).
    scale "channel": one BF16 weight_scale per output row, no input scale (dynamic per-token activations)."""
    layers, h = c["num_hidden_layers"], c["hidden_size"]
    shapes = llama_linears(c)
    fp8 = layers * sum(o * i for o, i in shapes)
    bf16 = 2 * c["vocab_size"] * h + (2 * layers + 1) * h  # embed_tokens, lm_head, 2 norms a layer + final norm
    if scale == "channel":
        return {"BF16": bf16 + layers * sum(o for o, _ in shapes), "F8_E4M3": fp8}
    scalars = layers * (len(shapes) * 2 + (2 if kv_output_scales else 0))
    return {"BF16": bf16, "F32": scalars, "F8_E4M3": fp8}


def test_the_8b_per_tensor_split_by_hand() -> None:
    """Llama-3.1-8B: a layer's Linears are 2 x 4096^2 (q, o) + 2 x 4096 x 1024 (k, v) + 3 x 4096 x 14336
    = 218,103,808 FP8 values; x 32 layers = 6,979,321,856 B. BF16: 2 x 128,256 x 4096 (embed_tokens, lm_head)
    + 65 norms x 4096 = 1,050,939,392 params = 2,101,878,784 B. F32: 32 x 7 x 2 = 448 scalars = 1,792 B.
    Total 9,081,202,432 B = 8.458 GiB (a public guide: 'Footprint: ~8.5 GB VRAM', a rounded GiB figure)."""
    entry = _load("neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8")
    assert llama_fp8_split(entry["config"], scale="tensor") == {
        "BF16": 1_050_939_392, "F32": 448, "F8_E4M3": 6_979_321_856}
    assert entry["params_by_dtype"] == {"BF16": 1_050_939_392, "F32": 448, "F8_E4M3": 6_979_321_856}
    assert entry["weights_bytes"] == 6_979_321_856 + 2 * 1_050_939_392 + 4 * 448 == 9_081_202_432
    assert abs(entry["weights_bytes"] / GIB - NM_8B_GUIDE_GB) < 0.05


@pytest.mark.parametrize("model_id", NM_PER_TENSOR)
def test_neuralmagic_per_tensor_counts_follow_from_the_shapes(model_id: str) -> None:
    entry, base = _load(model_id), _load(BASES[model_id])
    split = llama_fp8_split(entry["config"], scale="tensor")
    assert entry["params_by_dtype"] == split
    # the FP8 and BF16 tensors are the parent's weights re-typed: their sum is the parent's published count
    assert split["F8_E4M3"] + split["BF16"] == sum(base["params_by_dtype"].values())
    assert split["F8_E4M3"] + split["BF16"] == dense_params(entry["config"])
    q = entry["config"]["quantization_config"]
    group = q["config_groups"]["group_0"]
    assert q["quant_method"] == "compressed-tensors" and q["ignore"] == ["lm_head"]
    assert group["weights"]["strategy"] == group["input_activations"]["strategy"] == "tensor"
    assert group["input_activations"]["dynamic"] is False  # static: calibrated input_scale stored


def test_the_shape_formula_matches_a_vllm_load_line() -> None:
    """The 8B parent's shapes give the bytes a real vLLM log printed for BF16 Llama-3.1-8B (14.9595 GiB),
    so the config the FP8 entry carries is the right one."""
    c = _load("neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8")["config"]
    split = llama_fp8_split(c, scale="tensor")
    assert 2 * (split["F8_E4M3"] + split["BF16"]) == LLAMA31_8B_VLLM_LOG_BYTES


def test_the_70b_total_matches_the_public_guide() -> None:
    """80 x (2 x 8192^2 + 2 x 8192 x 1024 + 3 x 8192 x 28672) = 68,451,041,280 FP8 B + (2 x 128,256 x 8192
    + 161 x 8192) x 2 = 4,205,330,432 BF16 B + 80 x 14 x 4 = 4,480 F32 B = 72,656,376,192 B = 67.67 GiB;
    a public DGX Spark guide prints '67.7 GiB' for this repository."""
    entry = _load("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8")
    assert entry["weights_bytes"] == 68_451_041_280 + 4_205_330_432 + 4_480 == 72_656_376_192
    assert round(entry["weights_bytes"] / GIB, 1) == NM_70B_GUIDE_GIB


# --------------------------------------------------------------------------- AMD Quark FP8-KV


@pytest.mark.parametrize("model_id", AMD_QUARK)
def test_quark_counts_follow_from_the_shapes(model_id: str) -> None:
    entry, base = _load(model_id), _load(BASES[model_id])
    split = llama_fp8_split(entry["config"], scale="tensor", kv_output_scales=True)
    assert entry["params_by_dtype"] == split
    assert split["F8_E4M3"] + split["BF16"] == sum(base["params_by_dtype"].values())
    assert split["F32"] == entry["config"]["num_hidden_layers"] * 16  # 7 weight + 7 input + k, v output scales


def test_the_405b_quark_split_by_hand() -> None:
    """126 layers x (2 x 16384^2 + 2 x 16384 x 1024 + 3 x 16384 x 53248) = 401,646,551,040 FP8; BF16
    2 x 128,256 x 16384 + 253 x 16384 = 4,206,837,760; sum 405,853,388,800 = the BF16 405B's count.
    Bytes 401,646,551,040 + 8,413,675,520 + 126 x 16 x 4 = 410,060,234,624 B = 381.90 GiB: above
    4 x H100 (4 x 0.92 x 79.19 = 291.4 GiB usable), below 8 x H100 (582.8)."""
    entry = _load("amd/Llama-3.1-405B-Instruct-FP8-KV")
    assert entry["params_by_dtype"] == {"BF16": 4_206_837_760, "F32": 2_016, "F8_E4M3": 401_646_551_040}
    assert 401_646_551_040 + 4_206_837_760 == 405_853_388_800
    assert entry["weights_bytes"] == 410_060_234_624
    assert 4 * 0.92 * 79.19 < entry["weights_bytes"] / GIB < 8 * 0.92 * 79.19


@pytest.mark.parametrize("model_id", AMD_QUARK)
def test_quark_config_declares_per_tensor_fp8_and_an_fp8_kv_cache(model_id: str) -> None:
    q = _load(model_id)["config"]["quantization_config"]
    assert q["quant_method"] == "quark" and q["exclude"] == ["lm_head"]
    for spec in (q["global_quant_config"]["weight"], q["global_quant_config"]["input_tensors"]):
        assert (spec["dtype"], spec["qscheme"], spec["is_dynamic"]) == ("fp8_e4m3", "per_tensor", False)
    assert q["export"]["kv_cache_group"] == ["*k_proj", "*v_proj"]
    for group in q["export"]["kv_cache_group"]:
        assert q["layer_quant_config"][group]["output_tensors"]["dtype"] == "fp8_e4m3"


@pytest.mark.parametrize("model_id", AMD_QUARK)
def test_what_the_reader_makes_of_quark(model_id: str) -> None:
    """Quark's global weight dtype fp8_e4m3 reads as 8-bit float weights (variant 'fp8'); Quark's
    kv_cache_group is not a KV-cache default, so --kv-cache-dtype auto counts a BF16 KV cache (vLLM does the
    same unless --kv-cache-dtype fp8 is passed, as AMD's recipes do)."""
    from vllmkit.arch import read_arch
    from vllmkit.estimate.specs import kv_dtype_bytes
    from vllmkit.hub.catalog import entry_to_metadata, find_entry
    from vllmkit.plan.variants import variant_label

    found = find_entry(model_id)
    assert found is not None
    arch = read_arch(found.config)
    assert arch.quantization is not None and arch.quantization.method == "quark"
    assert arch.quantization.kv_cache_scheme is None
    assert arch.quantization.bits == 8 and arch.quantization.weight_format == "float"
    assert kv_dtype_bytes("auto", arch) == 2
    assert variant_label(entry_to_metadata(found), arch) == "fp8"


# --------------------------------------------------------------------------- GLM-4.6-FP8 (Glm4Moe)


def glm4_moe_channel_scales(c: dict[str, Any]) -> int:
    """One scale per output row of every FP8 Linear of a Glm4Moe checkpoint: q, k, v, o of every layer
    (including the MTP layer), gate/up/down of the dense layers and of every routed and shared expert of
    the MoE layers and the MTP layer. Routers (mlp.gate), eh_proj and lm_head stay BF16."""
    h, hd = c["hidden_size"], c["head_dim"]
    attention = c["num_attention_heads"] * hd + 2 * c["num_key_value_heads"] * hd + h  # q, k, v, o rows
    dense = 2 * c["intermediate_size"] + h
    moe = (c["n_routed_experts"] + c["n_shared_experts"]) * (2 * c["moe_intermediate_size"] + h)
    k = c["first_k_dense_replace"]
    moe_layers = c["num_hidden_layers"] - k + c["num_nextn_predict_layers"]
    return k * (attention + dense) + moe_layers * (attention + moe)


def glm4_moe_fp8_weights(c: dict[str, Any]) -> int:
    h, hd = c["hidden_size"], c["head_dim"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    attention = 2 * h * q + 2 * h * kv
    experts = (c["n_routed_experts"] + c["n_shared_experts"]) * 3 * h * c["moe_intermediate_size"]
    k = c["first_k_dense_replace"]
    moe_layers = c["num_hidden_layers"] - k + c["num_nextn_predict_layers"]
    return k * (attention + 3 * h * c["intermediate_size"]) + moe_layers * (attention + experts)


def test_glm47_fp8_published_total_fixes_the_scale_layout() -> None:
    """GLM-4.7 (same config as GLM-4.6, MTP with own embeddings): 358,337,791,296 params; its FP8 release
    358,458,391,872. The difference, 120,600,576, is exactly one scale per output channel:
    3 dense layers x (12,288 + 2 x 1,024 + 5,120 + 2 x 12,288 + 5,120) = 147,456
    + 90 MoE/MTP layers x (19,456 + 161 experts x (2 x 1,536 + 5,120)) = 120,453,120."""
    c = _load("zai-org/GLM-4.7")["config"]
    assert sum(_glm4_moe_params(c, mtp_own_embeddings=True)) == GLM47_COUNT
    assert glm4_moe_channel_scales(c) == 147_456 + 120_453_120 == GLM47_FP8_COUNT - GLM47_COUNT


def test_glm46_fp8_split_follows_from_the_config() -> None:
    entry = _load(GLM46_FP8)
    c = entry["config"]
    main, mtp = _glm4_moe_params(c, mtp_own_embeddings=False)
    assert main + mtp == sum(_load("zai-org/GLM-4.6")["params_by_dtype"].values()) == 356_785_898_816
    fp8 = glm4_moe_fp8_weights(c)
    assert fp8 == 355_105_505_280
    total = main + mtp + glm4_moe_channel_scales(c)
    assert entry["params_by_dtype"] == {"F8_E4M3": fp8, "BF16": total - fp8}
    assert entry["weights_bytes"] == fp8 + 2 * (total - fp8) == 358_707_493_504
    q = c["quantization_config"]
    assert q["quant_method"] == "compressed-tensors"
    assert q["config_groups"]["group_0"]["weights"]["strategy"] == "channel"
    assert q["config_groups"]["group_0"]["input_activations"]["dynamic"] is True


@pytest.mark.parametrize(("key", "delta"), [
    ("moe_intermediate_size", 128), ("n_routed_experts", 32), ("intermediate_size", 512),
    ("num_hidden_layers", 1), ("num_key_value_heads", 4),
])
def test_a_wrong_glm_config_value_breaks_the_count(key: str, delta: int) -> None:
    c = copy.deepcopy(_load("zai-org/GLM-4.7")["config"])
    c[key] += delta
    assert sum(_glm4_moe_params(c, mtp_own_embeddings=True)) + glm4_moe_channel_scales(c) != GLM47_FP8_COUNT


@pytest.mark.parametrize(("key", "delta"), [
    ("intermediate_size", 256), ("hidden_size", 128), ("num_hidden_layers", 1), ("num_key_value_heads", 8),
    ("vocab_size", 256),
])
@pytest.mark.parametrize("model_id", NM_PER_TENSOR + AMD_QUARK)
def test_a_wrong_llama_config_value_breaks_the_count(model_id: str, key: str, delta: int) -> None:
    c = copy.deepcopy(_load(model_id)["config"])
    c[key] += delta
    split = llama_fp8_split(c, scale="tensor")
    assert split["F8_E4M3"] + split["BF16"] != sum(_load(BASES[model_id])["params_by_dtype"].values())


# --------------------------------------------------------------------------- Nemotron-70B FP8-dynamic


def test_nemotron_fp8_dynamic_split_is_the_published_70b_fp8_dynamic_split() -> None:
    entry = _load(NEMOTRON_FP8)
    split = llama_fp8_split(entry["config"], scale="channel")
    assert split == LLAMA70B_FP8_DYNAMIC_SPLIT == entry["params_by_dtype"]
    assert entry["weights_bytes"] == _bytes(LLAMA70B_FP8_DYNAMIC_SPLIT) == 72_669_806_592
    group = entry["config"]["quantization_config"]["config_groups"]["group_0"]
    assert group["weights"]["strategy"] == "channel" and group["input_activations"]["strategy"] == "token"


# --------------------------------------------------------------------------- the planner reads and plans them


@pytest.mark.parametrize("model_id", PART8_IDS)
def test_the_reader_reads_them(model_id: str) -> None:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import entry_to_metadata, find_entry
    from vllmkit.plan.variants import variant_label

    found = find_entry(model_id)
    assert found is not None and found.id == model_id
    arch = read_arch(found.config)
    assert arch.num_hidden_layers == found.config["num_hidden_layers"]
    assert variant_label(entry_to_metadata(found), arch) == "fp8"


ENV = {"VLLMKIT_NO_CALIBRATION": "1"}


def _plan(model: str, gpu: str, count: int):
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    return build_plan(PlanRequest(model=model, source="catalog", gpu=gpu, gpu_count=count), ENV)


@pytest.mark.parametrize("model_id", (*NM_PER_TENSOR, "amd/Llama-3.3-70B-Instruct-FP8-KV", NEMOTRON_FP8))
def test_llama_fp8_fits_one_h100(model_id: str) -> None:
    # 8.46 GiB (8B) and 67.67-67.68 GiB (70B) < 0.92 x 79.19 = 72.85 GiB usable on one H100
    # an explicit TP keeps the checkpoint asked for (without it the planner may prefer a 4-bit sibling whose
    # context is more useful, e.g. hugging-quants' AWQ of Llama-3.1-70B)
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    plan = build_plan(PlanRequest(model=model_id, source="catalog", gpu="h100", gpu_count=1, tensor_parallel_size=1), ENV)
    assert plan.fits and plan.model.id == model_id
    entry = _load(model_id)
    assert plan.memory.weights_bytes == entry["weights_bytes"] + rope_cache_bytes_by_hand(entry["config"])


def test_the_405b_fits_eight_h100_not_four() -> None:
    # 381.90 GiB: / 8 = 47.74 GiB per GPU < 72.85; over 4 x 72.85 = 291.4 GiB
    assert _plan("amd/Llama-3.1-405B-Instruct-FP8-KV", "h100", 8).fits
    assert not _plan("amd/Llama-3.1-405B-Instruct-FP8-KV", "h100", 4).fits


def test_glm46_fp8_fits_eight_h100_not_four() -> None:
    # 334.07 GiB in all (330.4 GiB served without the MTP layer): / 8 = 41.3 GiB per GPU; > 4 x 72.85
    eight = _plan(GLM46_FP8, "h100", 8)
    assert eight.fits and eight.parallel.tensor_parallel_size == 8
    assert 8 * eight.memory.weights_bytes < _load(GLM46_FP8)["weights_bytes"]
    assert not _plan(GLM46_FP8, "h100", 4).fits
