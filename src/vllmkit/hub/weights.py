"""Which weight files vLLM loads from a repository, and helpers shared by every source.

Mirrors vLLM 0.32 `DefaultModelLoader._prepare_weights`
(vllm/model_executor/model_loader/default_loader.py) and `filter_duplicate_safetensors_files` /
`filter_files_not_needed_for_inference` (vllm/model_executor/model_loader/weight_utils.py):
- load_format auto becomes "mistral" when any top-level `consolidated*.safetensors` exists, and
  then only those files load (index: consolidated.safetensors.index.json);
- otherwise the first pattern with matches wins, in order `*.safetensors`, `*.bin`, `*.pt`,
  globbed in the repository root only (not in sub-folders);
- safetensors files are filtered to those named in the index's weight_map when an index exists;
- .bin/.pt lose training leftovers (optimizer.bin, training_args.bin, ...).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping
from typing import Any

from vllmkit.errors import ModelSourceError
from vllmkit.hub.safetensors import SafetensorsHeader

SAFE_WEIGHTS_INDEX_NAME = "model.safetensors.index.json"
MISTRAL_INDEX_NAME = "consolidated.safetensors.index.json"
_TRAINING_LEFTOVERS = ("training_args.bin", "optimizer.bin", "optimizer.pt", "scheduler.pt", "scaler.pt")

# Small files fetched next to the weights (never weights themselves).
CONFIG_NAME = "config.json"
GENERATION_CONFIG_NAME = "generation_config.json"
TOKENIZER_CONFIG_NAME = "tokenizer_config.json"
# NVIDIA ModelOpt before 0.31 writes its quantization config here instead of into config.json; vLLM
# reads it as config.quantization_config when config.json has none (vllm/transformers_utils/config.py,
# "ModelOpt 0.29.0 and before saves the quantization config in a separate hf_quant_config.json")
HF_QUANT_CONFIG_NAME = "hf_quant_config.json"


def merge_hf_quant_config(config: dict, hf_quant_config: dict | None) -> bool:
    """config.json without quantization_config + hf_quant_config.json -> what vLLM sees. True when merged."""
    if hf_quant_config is None or isinstance(config.get("quantization_config"), dict):
        return False
    config["quantization_config"] = hf_quant_config
    return True
CHAT_TEMPLATE_NAMES = ("chat_template.jinja", "chat_template.json")

# Bytes of a header entry beyond the tensor name: `"name":{"dtype":"F8_E4M3","shape":[a,b,c,d],
# "data_offsets":[x,y]},` with 12-digit numbers is about 100; 128 leaves room without over-reading much.
HEADER_ENTRY_OVERHEAD_BYTES = 128
HEADER_BASE_BYTES = 1024  # `{"__metadata__":{"format":"pt"}}` plus padding and slack


def top_level(names: Iterable[str], pattern: str) -> list[str]:
    return sorted(n for n in names if "/" not in n and fnmatch.fnmatchcase(n, pattern))


def index_name_for(names: Iterable[str]) -> str:
    """The index vLLM reads: consolidated.safetensors.index.json in mistral format, else the HF one."""
    return MISTRAL_INDEX_NAME if top_level(names, "consolidated*.safetensors") else SAFE_WEIGHTS_INDEX_NAME


def loaded_weight_files(names: Iterable[str], weight_map: Mapping[str, str] | None) -> list[str]:
    """The files vLLM 0.32 loads for load_format=auto, given the repository's file names."""
    all_names = list(names)
    consolidated = top_level(all_names, "consolidated*.safetensors")
    if consolidated:
        return _filter_by_index(consolidated, weight_map)
    for pattern in ("*.safetensors", "*.bin", "*.pt"):
        found = top_level(all_names, pattern)
        if not found:
            continue
        if pattern == "*.safetensors":
            return _filter_by_index(found, weight_map)
        return [n for n in found if not n.endswith(_TRAINING_LEFTOVERS)]
    return sorted(n for n in all_names if "/" not in n and n.endswith(".gguf"))


def _filter_by_index(files: list[str], weight_map: Mapping[str, str] | None) -> list[str]:
    if not weight_map:
        return files
    wanted = set(weight_map.values())
    return [f for f in files if f in wanted]


def parse_index(raw: bytes | str, *, name: str) -> tuple[dict[str, str], int | None]:
    """(weight_map, metadata.total_size) from a safetensors index file."""
    doc = load_json_object(raw, name=name)
    weight_map = doc.get("weight_map")
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        raise ModelSourceError(
            f"{name}: 'weight_map' is missing or not a mapping of tensor names to files",
            "the index file is damaged; check the repository",
            code="bad-response",
        )
    meta = doc.get("metadata")
    total = meta.get("total_size") if isinstance(meta, dict) else None
    if isinstance(total, float) and total.is_integer():
        total = int(total)
    return dict(weight_map), total if isinstance(total, int) and not isinstance(total, bool) else None


def load_json_object(raw: bytes | str, *, name: str) -> dict[str, Any]:
    """json.loads that only accepts an object and only raises ModelSourceError."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        doc = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ModelSourceError(
            f"{name} is not valid JSON ({type(exc).__name__})",
            "the file is damaged or the server returned an error page; check the repository or mirror",
            code="bad-response",
        ) from None
    if not isinstance(doc, dict):
        raise ModelSourceError(
            f"{name} is a JSON {type(doc).__name__}, expected an object",
            "the file is damaged; check the repository",
            code="bad-response",
        )
    return doc


def header_probe_bytes(shard: str, weight_map: Mapping[str, str] | None, *, default: int) -> int:
    """How many bytes to read for a shard's header in one request.

    Without an index we read `default` bytes (64 KiB holds ~500 tensor entries). With an index we
    know the shard's tensor names, so we size the one request to hold the whole header and little
    more: one range read per shard even for MoE shards with thousands of experts, and only a few
    KiB of weight bytes past the header. Clamped to [4 KiB, 8 MiB].
    """
    names = [k for k, v in (weight_map or {}).items() if v == shard]
    if not names:
        return default
    estimate = HEADER_BASE_BYTES + sum(len(n.encode()) + HEADER_ENTRY_OVERHEAD_BYTES for n in names)
    return max(4096, min(estimate, 8 * 1024 * 1024))


def sum_headers(headers: Iterable[SafetensorsHeader]) -> tuple[dict[str, int], int]:
    params: dict[str, int] = {}
    total = 0
    for header in headers:
        for dtype, count in header.params_by_dtype().items():
            params[dtype] = params.get(dtype, 0) + count
        total += header.tensor_bytes()
    return dict(sorted(params.items())), total
