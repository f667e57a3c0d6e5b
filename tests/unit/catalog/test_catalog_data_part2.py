"""Consistency checks for the offline catalog snapshots, part 2 (Qwen / DeepSeek).

Every number in these JSON files was copied from (or derived from, and labelled as such) a
public source that the file names next to it. These tests do not re-derive the numbers; they
check that each file is well formed, that every number carries a source, that the config has
what an architecture reader needs, and that the numbers that describe the same bytes agree
with each other (files vs index total_size vs parameter counts x dtype size).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    GIB,
    ITEMSIZE,
    assert_base_is_catalogued,
    assert_config_has_what_an_architecture_reader_needs,
    assert_every_value_has_its_source,
    assert_files_exceed_the_index_total_by_headers_only,
    assert_keys_and_types,
    assert_weights_kind_points_at_a_present_figure,
    path_for,
    split_bytes,
)
from tests.unit.catalog._catalog_checks import load_entry as _load

# The models this part owns (issue 2, section 8, Qwen/DeepSeek half).
PART2_IDS: tuple[str, ...] = (
    "Qwen/Qwen2.5-7B-Instruct",
    "Qwen/Qwen2.5-14B-Instruct",
    "Qwen/Qwen2.5-32B-Instruct",
    "Qwen/Qwen2.5-72B-Instruct",
    "Qwen/Qwen2.5-72B-Instruct-AWQ",
    "Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4",
    "Qwen/Qwen2.5-VL-7B-Instruct",
    "Qwen/Qwen3-8B",
    "Qwen/Qwen3-8B-FP8",
    "Qwen/Qwen3-14B",
    "Qwen/Qwen3-14B-FP8",
    "Qwen/Qwen3-14B-AWQ",
    "Qwen/Qwen3-32B",
    "Qwen/Qwen3-32B-FP8",
    "Qwen/Qwen3-32B-AWQ",
    "Qwen/Qwen3-30B-A3B",
    "Qwen/Qwen3-30B-A3B-FP8",
    "Qwen/Qwen3-235B-A22B",
    "Qwen/Qwen3-235B-A22B-FP8",
    "Qwen/Qwen3-Coder-30B-A3B-Instruct",
    "Qwen/Qwen3-Next-80B-A3B-Instruct",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
    "deepseek-ai/DeepSeek-V2-Lite",
    "deepseek-ai/DeepSeek-V2-Lite-Chat",
    "deepseek-ai/DeepSeek-V3",
    "deepseek-ai/DeepSeek-R1",
)

@pytest.fixture(params=PART2_IDS)
def entry(request: pytest.FixtureRequest) -> dict[str, Any]:
    return _load(request.param)


def test_every_part2_model_has_a_file() -> None:
    missing = [m for m in PART2_IDS if not path_for(m).is_file()]
    assert not missing, f"catalog files missing: {missing}"


def test_keys_and_scalar_types(entry: dict[str, Any]) -> None:
    assert_keys_and_types(entry)


def test_every_number_has_a_source(entry: dict[str, Any]) -> None:
    assert_every_value_has_its_source(entry)


def test_weights_kind_points_at_a_present_figure(entry: dict[str, Any]) -> None:
    assert_weights_kind_points_at_a_present_figure(entry)


def test_config_has_what_the_architecture_reader_needs(entry: dict[str, Any]) -> None:
    assert_config_has_what_an_architecture_reader_needs(entry)


def test_quantized_variants_carry_a_quantization_config(entry: dict[str, Any]) -> None:
    qc = entry["config"].get("quantization_config")
    if entry["variant"] in ("bf16", "fp16"):
        assert qc is None
        assert entry["base_model"] == entry["id"]
        return
    assert isinstance(qc, dict) and qc.get("quant_method")
    method = str(qc["quant_method"]).lower()
    expected = {
        "fp8": {"fp8", "compressed-tensors"},
        "awq": {"awq"},
        "gptq-int4": {"gptq"},
        "gptq-int8": {"gptq"},
    }.get(entry["variant"])
    if expected is not None:
        assert method in expected
    if entry["variant"] in ("awq", "gptq-int4"):
        assert qc.get("bits") == 4


def test_files_cover_the_index_total(entry: dict[str, Any]) -> None:
    # the shards' names and sizes are checked in test_keys_and_scalar_types
    if entry["files"] is None or entry["index_total_size"] is None:
        return
    assert_files_exceed_the_index_total_by_headers_only(entry)


def test_params_times_itemsize_matches_index_total(entry: dict[str, Any]) -> None:
    # the dtype names and counts are checked in test_keys_and_scalar_types
    params, total = entry["params_by_dtype"], entry["index_total_size"]
    if params is None or total is None:
        return
    tensor_bytes = split_bytes(params, ITEMSIZE)
    # index metadata.total_size is the sum of tensor bytes; allow 0.1 % for rounding in quotes.
    assert abs(tensor_bytes - total) <= total * 0.001


def test_variant_entries_point_at_a_catalogued_base(entry: dict[str, Any]) -> None:
    assert_base_is_catalogued(entry)


# Hand checks against independent public figures (not the catalog's own sources), so that a
# wrong number in a file can fail here.


def test_qwen25_7b_shards_hand_sum() -> None:
    # Shard sizes of Qwen2.5-7B-Instruct @ bb46c15e as pinned by a public experiment script:
    # 3,945,441,440 + 3,864,726,352 + 3,864,726,424 + 3,556,377,672 = 15,231,271,888, which is
    # also the HF API usedStorage for sha a09a3545 (weights unchanged between the two revisions).
    entry = _load("Qwen/Qwen2.5-7B-Instruct")
    shards = [f for f in entry["files"] if f["name"].endswith(".safetensors")]
    assert sum(f["size"] for f in shards) == 15_231_271_888


def test_qwen3_8b_fp8_matches_quoted_gib() -> None:
    # A public vLLM study note states "8.79 GiB of FP8 weights" for Qwen/Qwen3-8B-FP8.
    assert round(_load("Qwen/Qwen3-8B-FP8")["weights_bytes"] / GIB, 2) == 8.79


@pytest.mark.parametrize(
    ("model_id", "logged_gib", "tp", "tolerance_gib"),
    [
        # vLLM 0.27.1, "Model loading took 30.59 GiB" per rank at TP=2.
        ("Qwen/Qwen3-32B", 30.59, 2, 0.1),
        # "Model loading took 56.9342 GiB" at TP=1 (includes a 64 MiB rotary cache).
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct", 56.9342, 1, 0.1),
        # vLLM V0 "Loading model weights took 13.9476 GB" (GiB-valued) per rank at TP=2.
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", 13.9476, 2, 0.25),
    ],
)
def test_weights_agree_with_public_vllm_logs(
    model_id: str, logged_gib: float, tp: int, tolerance_gib: float
) -> None:
    per_rank_gib = _load(model_id)["weights_bytes"] / tp / GIB
    # vLLM reports a little more than the checkpoint (rotary caches, replicated norms), never less.
    assert 0 <= logged_gib - per_rank_gib <= tolerance_gib


def test_deepseek_v3_weights_from_hf_dtype_split() -> None:
    # HF API split for DeepSeek-V3: BF16 3,918,786,560 + F8_E4M3 680,571,043,840 + F32 41,555,600
    # -> 3,918,786,560*2 + 680,571,043,840 + 41,555,600*4 = 688,574,839,360 bytes (hand sum).
    assert _load("deepseek-ai/DeepSeek-V3")["weights_bytes"] == 688_574_839_360
