"""Consistency checks for the offline catalog snapshots, part 2 (Qwen / DeepSeek).

Every number in these JSON files was copied from (or derived from, and labelled as such) a
public source that the file names next to it. These tests do not re-derive the numbers; they
check that each file is well formed, that every number carries a source, that the config has
what an architecture reader needs, and that the numbers that describe the same bytes agree
with each other (files vs index total_size vs parameter counts x dtype size).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

DATA_DIR = Path(__file__).resolve().parents[3] / "src" / "vllmkit" / "catalog" / "data"

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

REQUIRED_KEYS: frozenset[str] = frozenset(
    {
        "id",
        "base_model",
        "variant",
        "config",
        "config_source",
        "files",
        "files_source",
        "index_total_size",
        "index_source",
        "weights_bytes",
        "weights_bytes_kind",
        "weights_source",
        "params_by_dtype",
        "params_source",
        "generation_config",
        "generation_config_source",
        "has_chat_template",
        "modelscope_id",
        "notes",
    }
)
VARIANTS = frozenset({"bf16", "fp16", "fp8", "awq", "gptq-int4", "gptq-int8", "int8", "mxfp4", "nvfp4"})
WEIGHTS_KINDS = frozenset({"files", "index_total_size", "params_x_dtype", "vllm_log"})
# Bytes per element of the safetensors dtype names (safetensors format spec).
DTYPE_ITEMSIZE: dict[str, int] = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "I64": 8,
    "U64": 8,
    "F64": 8,
}
ARCH_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
MIB = 1 << 20
GIB = 1 << 30


def _path_for(model_id: str) -> Path:
    return DATA_DIR / (model_id.replace("/", "__") + ".json")


def _load(model_id: str) -> dict[str, Any]:
    with _path_for(model_id).open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _has_source(text: object) -> bool:
    return isinstance(text, str) and len(text.strip()) >= 10


@pytest.fixture(params=PART2_IDS)
def entry(request: pytest.FixtureRequest) -> dict[str, Any]:
    return _load(request.param)


def test_every_part2_model_has_a_file() -> None:
    missing = [m for m in PART2_IDS if not _path_for(m).is_file()]
    assert not missing, f"catalog files missing: {missing}"


def test_keys_and_scalar_types(entry: dict[str, Any]) -> None:
    assert set(entry) == REQUIRED_KEYS
    assert isinstance(entry["id"], str) and "/" in entry["id"]
    assert _path_for(entry["id"]).name == entry["id"].replace("/", "__") + ".json"
    assert isinstance(entry["base_model"], str) and "/" in entry["base_model"]
    assert entry["variant"] in VARIANTS
    assert entry["weights_bytes_kind"] in WEIGHTS_KINDS
    assert _is_int(entry["weights_bytes"]) and entry["weights_bytes"] > 0
    assert entry["has_chat_template"] in (True, False, None)
    assert entry["modelscope_id"] is None or isinstance(entry["modelscope_id"], str)
    assert isinstance(entry["notes"], str)
    for key in ("index_total_size",):
        assert entry[key] is None or (_is_int(entry[key]) and entry[key] > 0)
    assert entry["generation_config"] is None or isinstance(entry["generation_config"], dict)


def test_every_number_has_a_source(entry: dict[str, Any]) -> None:
    assert isinstance(entry["config"], dict) and entry["config"]
    assert _has_source(entry["config_source"])
    assert _has_source(entry["weights_source"])
    pairs = (
        ("files", "files_source"),
        ("index_total_size", "index_source"),
        ("params_by_dtype", "params_source"),
        ("generation_config", "generation_config_source"),
    )
    for value_key, source_key in pairs:
        if entry[value_key] is not None:
            assert _has_source(entry[source_key]), f"{entry['id']}: {value_key} without {source_key}"


def test_weights_kind_points_at_a_present_figure(entry: dict[str, Any]) -> None:
    kind = entry["weights_bytes_kind"]
    if kind == "index_total_size":
        assert entry["weights_bytes"] == entry["index_total_size"]
    elif kind == "files":
        assert entry["files"] is not None
        assert entry["weights_bytes"] == sum(f["size"] for f in entry["files"])
    elif kind == "params_x_dtype":
        params = entry["params_by_dtype"]
        assert params is not None
        assert entry["weights_bytes"] == sum(DTYPE_ITEMSIZE[d] * n for d, n in params.items())
    else:  # vllm_log: the source must quote the log line it came from
        assert "took" in entry["weights_source"]


def test_config_has_what_the_architecture_reader_needs(entry: dict[str, Any]) -> None:
    config = entry["config"]
    assert config.get("architectures") or config.get("model_type")
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    for key in ARCH_KEYS:
        assert _is_int(text.get(key)) and text[key] > 0, f"{entry['id']}: config lacks {key}"


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
    files = entry["files"]
    if files is None:
        return
    assert files, "files must be null or non-empty"
    for item in files:
        assert isinstance(item["name"], str) and item["name"]
        assert _is_int(item["size"]) and item["size"] > 0
    total = entry["index_total_size"]
    if total is None:
        return
    shards = [f for f in files if f["name"].endswith(".safetensors")]
    shard_sum = sum(f["size"] for f in shards)
    # A shard is its tensors plus an 8-byte length and a JSON header, so the files are never
    # smaller than the index total and exceed it only by the headers.
    assert shard_sum >= total
    assert shard_sum - total < total * 0.001 + MIB * len(shards)


def test_params_times_itemsize_matches_index_total(entry: dict[str, Any]) -> None:
    params = entry["params_by_dtype"]
    if params is None:
        return
    for dtype, count in params.items():
        assert dtype in DTYPE_ITEMSIZE, f"{entry['id']}: unknown dtype {dtype}"
        assert _is_int(count) and count > 0
    total = entry["index_total_size"]
    if total is None:
        return
    tensor_bytes = sum(DTYPE_ITEMSIZE[d] * n for d, n in params.items())
    # index metadata.total_size is the sum of tensor bytes; allow 0.1 % for rounding in quotes.
    assert abs(tensor_bytes - total) <= total * 0.001


def test_variant_entries_point_at_a_catalogued_base(entry: dict[str, Any]) -> None:
    if entry["base_model"] != entry["id"]:
        assert _path_for(entry["base_model"]).is_file(), f"{entry['base_model']} not in catalog"


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
