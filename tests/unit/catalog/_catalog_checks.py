"""Shared scaffolding of the catalog data tests (``test_catalog_data_part*.py``).

Each part file owns its model ids and its model-specific arithmetic (parameter counts re-derived from the
config shapes); what every part needs is here: where the bundled entries live and how one is read, the key set
and the enumerations an entry's fields take, the safetensors element sizes, and the generic per-entry checks
(keys, sources, weights arithmetic, files vs index total). A check raises ``AssertionError`` naming the entry.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parents[3] / "src" / "vllmkit" / "catalog" / "data"

REQUIRED_KEYS: frozenset[str] = frozenset(
    {
        "id", "base_model", "variant", "config", "config_source", "files", "files_source",
        "index_total_size", "index_source", "weights_bytes", "weights_bytes_kind", "weights_source",
        "params_by_dtype", "params_source", "generation_config", "generation_config_source",
        "has_chat_template", "modelscope_id", "notes",
    }
)
VARIANTS = frozenset({"bf16", "fp16", "fp8", "awq", "gptq-int4", "gptq-int8", "int8", "mxfp4", "nvfp4"})
WEIGHTS_KINDS = frozenset({"files", "index_total_size", "params_x_dtype", "vllm_log"})

# Bytes per element of the safetensors dtype names (safetensors format spec).
ITEMSIZE: dict[str, int] = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "I64": 8, "U64": 8, "F64": 8,
}
# The dtypes the catalog records in params_by_dtype (the default a split is checked against).
SAFETENSORS_ITEMSIZE: dict[str, int] = {d: ITEMSIZE[d] for d in ("BF16", "F16", "F32", "F8_E4M3", "I32", "U8")}

# ... and the INT8 of a w8a8 checkpoint (compressed-tensors int8 weights).
W8A8_ITEMSIZE: dict[str, int] = {**SAFETENSORS_ITEMSIZE, "I8": 1}


def itemsizes(*dtypes: str) -> dict[str, int]:
    """The element sizes of just these dtypes: a part that records fewer dtypes checks its splits against them."""
    return {d: ITEMSIZE[d] for d in dtypes}


# Every value key of an entry and the key of the source it cites.
SOURCE_KEYS: tuple[tuple[str, str], ...] = (
    ("config", "config_source"),
    ("weights_bytes", "weights_source"),
    ("params_by_dtype", "params_source"),
    ("files", "files_source"),
    ("index_total_size", "index_source"),
    ("generation_config", "generation_config_source"),
)

GIB = 2**30
MIB = 2**20

CATALOG_PLAN_ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}


# --------------------------------------------------------------------------- reading an entry


def path_for(model_id: str) -> Path:
    """Where a bundled catalog entry is stored: src/vllmkit/catalog/data/<org>__<name>.json."""
    return DATA_DIR / (model_id.replace("/", "__") + ".json")


def load_entry(model_id: str) -> dict[str, Any]:
    """A bundled catalog entry's JSON as stored."""
    return load_entry_file(path_for(model_id))


def load_entry_file(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_count(value: object) -> bool:
    """A positive int (not a bool)."""
    return is_int(value) and value > 0  # type: ignore[operator]


def has_source(text: object, min_chars: int = 21) -> bool:
    """A source is a string of at least ``min_chars`` characters (more than 20 by default)."""
    return isinstance(text, str) and len(text) >= min_chars


# --------------------------------------------------------------------------- arithmetic shared by every part


def split_bytes(split: Mapping[str, int], itemsize: Mapping[str, int] = SAFETENSORS_ITEMSIZE) -> int:
    """Bytes of a parameter split by safetensors dtype; every dtype must be one ``itemsize`` names."""
    unknown = set(split) - set(itemsize)
    assert not unknown, f"dtypes outside {sorted(itemsize)}: {sorted(unknown)}"
    return sum(itemsize[d] * n for d, n in split.items())


# --------------------------------------------------------------------------- generic per-entry checks


def assert_every_value_has_its_source(entry: Mapping[str, Any]) -> None:
    """A recorded value cites where it came from (more than 20 characters); an absent one has no source."""
    for value_key, source_key in SOURCE_KEYS:
        if entry[value_key] is None:
            assert entry[source_key] is None, f"{entry['id']}: {source_key} set while {value_key} is null"
        else:
            assert has_source(entry[source_key]), f"{entry['id']}: {value_key} has no {source_key}"


def assert_entry_basics(entry: Mapping[str, Any], model_id: str) -> None:
    """The checks every part runs on each of its entries: exactly the catalog keys, the id it was loaded by
    (and so the file name it is stored under), and a source for every recorded value."""
    assert set(entry) == REQUIRED_KEYS, f"{model_id}: keys {sorted(set(entry) ^ REQUIRED_KEYS)}"
    assert entry["id"] == model_id
    assert path_for(entry["id"]).is_file()
    assert_every_value_has_its_source(entry)


def assert_weights_add_up(entry: Mapping[str, Any], itemsize: Mapping[str, int] = SAFETENSORS_ITEMSIZE) -> None:
    """weights_bytes is the dtype split times its element sizes (every dtype one ``itemsize`` names), and the
    index total when that is its kind; the only other kind allowed is params_x_dtype."""
    assert entry["weights_bytes"] == split_bytes(entry["params_by_dtype"], itemsize)
    if entry["weights_bytes_kind"] == "index_total_size":
        assert entry["weights_bytes"] == entry["index_total_size"]
    else:
        assert entry["weights_bytes_kind"] == "params_x_dtype"


def assert_weights_from_the_split_alone(entry: Mapping[str, Any]) -> None:
    """The weight figure is the dtype split times the element sizes and no index total is recorded."""
    assert entry["weights_bytes_kind"] == "params_x_dtype" and entry["index_total_size"] is None


def assert_base_is_catalogued(entry: Mapping[str, Any]) -> None:
    """A variant's base_model is itself a bundled entry."""
    if entry["base_model"] != entry["id"]:
        assert path_for(entry["base_model"]).is_file(), f"{entry['base_model']} not in catalog"


def assert_config_source_marked(source: str, rebuilt: bool, verbatim_mark: str = "Transcribed from") -> None:
    """A config rebuilt from several copies says so up front ("REBUILT, not verbatim"); a transcribed one
    says where it was transcribed from."""
    if rebuilt:
        assert source.startswith("REBUILT") and "not verbatim" in source
    else:
        assert "REBUILT" not in source and verbatim_mark in source


def assert_a_rebuilt_config_says_so(source: str) -> None:
    """A config that is not this repository's own file says so in its source (when it says REBUILT)."""
    if "REBUILT" in source:
        assert "not verbatim" in source or "not this repository's file" in source


def assert_keys_and_types(entry: Mapping[str, Any]) -> None:
    """Every field of an entry has its type (parts 1 and 2, which hold entries of every kind): listed files
    are ``.safetensors`` shards with a positive size, params_by_dtype names the dtypes the catalog records."""
    assert set(entry) == REQUIRED_KEYS
    assert isinstance(entry["id"], str) and "/" in entry["id"]
    assert path_for(entry["id"]).name == entry["id"].replace("/", "__") + ".json"
    assert isinstance(entry["base_model"], str) and "/" in entry["base_model"]
    assert entry["variant"] in VARIANTS
    assert isinstance(entry["config"], dict) and entry["config"]
    assert is_count(entry["weights_bytes"])
    assert entry["weights_bytes_kind"] in WEIGHTS_KINDS
    assert entry["index_total_size"] is None or is_count(entry["index_total_size"])
    assert entry["has_chat_template"] in (True, False, None)
    assert entry["modelscope_id"] is None or (
        isinstance(entry["modelscope_id"], str) and "/" in entry["modelscope_id"]
    )
    assert entry["generation_config"] is None or isinstance(entry["generation_config"], dict)
    assert isinstance(entry["notes"], str)
    if entry["files"] is not None:
        assert entry["files"], "files is a non-empty list or null"
        for item in entry["files"]:
            assert set(item) == {"name", "size"}
            assert isinstance(item["name"], str) and item["name"].endswith(".safetensors")
            assert is_count(item["size"])
    if entry["params_by_dtype"] is not None:
        assert entry["params_by_dtype"]
        for dtype, count in entry["params_by_dtype"].items():
            assert dtype in SAFETENSORS_ITEMSIZE, f"{entry['id']}: unknown dtype {dtype}"
            assert is_count(count)


def assert_weights_kind_points_at_a_present_figure(entry: Mapping[str, Any], *, split_required: bool = True) -> None:
    """The figure weights_bytes_kind names is recorded and equals weights_bytes; a vllm_log figure quotes
    the log line it came from. ``split_required=False``: a params_x_dtype figure may come from a published
    total count without a recorded dtype split (part 1's kvfit counts); it is checked only when a split is."""
    kind = entry["weights_bytes_kind"]
    if kind == "index_total_size":
        assert entry["weights_bytes"] == entry["index_total_size"]
    elif kind == "files":
        assert entry["files"] is not None
        assert entry["weights_bytes"] == sum(f["size"] for f in entry["files"])
    elif kind == "params_x_dtype":
        params = entry["params_by_dtype"]
        if params is None:
            assert not split_required, f"{entry['id']}: params_x_dtype without params_by_dtype"
        else:
            assert entry["weights_bytes"] == split_bytes(params, ITEMSIZE)
    else:
        assert kind == "vllm_log"
        assert "took" in entry["weights_source"]


def assert_config_has_what_an_architecture_reader_needs(
    entry: Mapping[str, Any], defaulted: Mapping[str, Collection[str]] | None = None
) -> None:
    """architectures or model_type, and positive sizes for the keys the architecture reader needs (of the
    text_config when the config nests one). ``defaulted``: per text model_type, keys a published config may
    omit because transformers fills a class default."""
    config = entry["config"]
    assert config.get("architectures") or config.get("model_type")
    text = config["text_config"] if isinstance(config.get("text_config"), dict) else config
    skipped = (defaulted or {}).get(text.get("model_type", ""), ())
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"):
        if key in skipped:
            continue
        assert is_count(text.get(key)), f"{entry['id']}: config lacks {key}"


def assert_files_exceed_the_index_total_by_headers_only(entry: Mapping[str, Any]) -> None:
    """A .safetensors shard is 8 bytes + a JSON header + the tensor bytes the index counts: the shards are
    never smaller than the index total and exceed it only by the headers. Needs files and the index total."""
    total = entry["index_total_size"]
    shards = [f for f in entry["files"] if f["name"].endswith(".safetensors")]
    shard_sum = sum(f["size"] for f in shards)
    assert shard_sum >= total
    assert shard_sum - total < total * 0.001 + MIB * len(shards)


# --------------------------------------------------------------------------- the planner on a bundled entry


def plan_catalog(model_id: str, tp: int | None = None, gpu: str = "h100", **extra: Any):  # -> PlanResult
    """The planner's plan of a bundled entry, offline and without local calibrations."""
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    return build_plan(PlanRequest(model=model_id, source="catalog", gpu=gpu, tensor_parallel_size=tp, **extra),
                      CATALOG_PLAN_ENV)
