"""The bundled offline catalog: snapshots of real model metadata (config.json, weight sizes) with
the source of every number, in src/vllmkit/catalog/data/<org>__<name>.json."""

from __future__ import annotations

import difflib
import json
from functools import lru_cache
from importlib import resources
from typing import Any

from pydantic import BaseModel

from vllmkit.errors import ModelSourceError
from vllmkit.hub.base import FileInfo, ModelMetadata

_DATA = ("catalog", "data")


class CatalogEntry(BaseModel):
    id: str
    base_model: str
    variant: str
    config: dict[str, Any]
    config_source: str | None = None
    files: list[FileInfo] | None = None
    files_source: str | None = None
    index_total_size: int | None = None
    index_source: str | None = None
    weights_bytes: int
    weights_bytes_kind: str
    weights_source: str
    params_by_dtype: dict[str, int] | None = None
    params_source: str | None = None
    generation_config: dict[str, Any] | None = None
    generation_config_source: str | None = None
    has_chat_template: bool | None = None
    modelscope_id: str | None = None
    notes: str | None = None


@lru_cache(maxsize=1)
def load_catalog() -> tuple[CatalogEntry, ...]:
    folder = resources.files("vllmkit").joinpath(*_DATA)
    entries = []
    for item in sorted(folder.iterdir(), key=lambda p: p.name):
        if item.name.endswith(".json"):
            entries.append(CatalogEntry.model_validate(json.loads(item.read_text(encoding="utf-8"))))
    return tuple(entries)


def _norm(model_id: str) -> str:
    return model_id.strip().strip("/").lower()


# Repositories renamed on the hub (the old id redirects to the new one), so an old id still plans
# offline. Meta dropped the "Meta-" prefix of its Llama 3.1 repositories in September 2024: the model
# cards of meta-llama/Llama-3.1-*-Instruct list the old ids, and https://huggingface.co/meta-llama/
# Meta-Llama-3.1-8B-Instruct redirects to meta-llama/Llama-3.1-8B-Instruct.
ALIASES: dict[str, str] = {
    "meta-llama/meta-llama-3.1-8b-instruct": "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/meta-llama-3.1-70b-instruct": "meta-llama/Llama-3.1-70B-Instruct",
    "meta-llama/meta-llama-3.1-405b-instruct": "meta-llama/Llama-3.1-405B-Instruct",
    "meta-llama/meta-llama-3.1-405b-instruct-fp8": "meta-llama/Llama-3.1-405B-Instruct-FP8",
    # Neural Magic's quantized releases moved to the RedHatAI organisation (2025); the neuralmagic/
    # ids are still what many guides and scripts use (public notes: "namespace moved to RedHatAI").
    "neuralmagic/llama-3.3-70b-instruct-fp8-dynamic": "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
    # the other way round for entries catalogued under the neuralmagic/ id the benchmarks name
    "redhatai/meta-llama-3.1-8b-instruct-fp8": "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8",
    "redhatai/meta-llama-3.1-70b-instruct-fp8": "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8",
    "redhatai/llama-3.1-nemotron-70b-instruct-hf-fp8-dynamic":
        "neuralmagic/Llama-3.1-Nemotron-70B-Instruct-HF-FP8-dynamic",
}


def canonical_id(model_id: str) -> str:
    """The current hub id of a renamed repository (model_id itself when not renamed)."""
    return ALIASES.get(_norm(model_id), model_id)


def find_entry(model_id: str) -> CatalogEntry | None:
    key = _norm(canonical_id(model_id))
    for entry in load_catalog():
        if _norm(entry.id) == key or (entry.modelscope_id and _norm(entry.modelscope_id) == key):
            return entry
    # bare name without organisation ("Qwen3-8B")
    if "/" not in key:
        matches = [e for e in load_catalog() if _norm(e.id).split("/", 1)[1] == key]
        if len(matches) == 1:
            return matches[0]
    return None


def close_names(model_id: str, n: int = 3) -> list[str]:
    ids = [e.id for e in load_catalog()]
    lowered = {i.lower(): i for i in ids}
    hits = difflib.get_close_matches(model_id.lower(), list(lowered), n=n, cutoff=0.4)
    return [lowered[h] for h in hits]


def entry_to_metadata(entry: CatalogEntry) -> ModelMetadata:
    tensor_bytes = entry.index_total_size
    if tensor_bytes is None and entry.weights_bytes_kind in ("params_x_dtype", "vllm_log", "index_total_size"):
        tensor_bytes = entry.weights_bytes
    files = list(entry.files or [])
    if not files:
        # no per-file listing was captured: one synthetic entry carrying the measured total
        files = [FileInfo(name="model.safetensors", size=entry.weights_bytes)]
    provenance = {
        "config": entry.config_source or "",
        "weights": f"{entry.weights_bytes_kind}: {entry.weights_source}",
    }
    if entry.files_source:
        provenance["files"] = entry.files_source
    if entry.params_source:
        provenance["params"] = entry.params_source
    notes = ["bundled catalog snapshot"]
    if entry.notes:
        notes.append(entry.notes)
    return ModelMetadata(
        id=entry.id,
        source="catalog",
        revision=None,
        config=entry.config,
        files=files,
        params_by_dtype=entry.params_by_dtype,
        tensor_bytes=tensor_bytes,
        index_total_size=entry.index_total_size,
        generation_config=entry.generation_config,
        tokenizer_config=None,
        has_chat_template=entry.has_chat_template,
        provenance={k: v for k, v in provenance.items() if v},
        notes=notes,
    )


class CatalogSource:
    name = "catalog"

    def fetch(self, model_id: str, revision: str | None = None, *, refresh: bool = False) -> ModelMetadata:
        entry = find_entry(model_id)
        if entry is None:
            close = close_names(model_id)
            hint = "`vllmkit models` lists the bundled catalog"
            if close:
                hint = f"did you mean {', '.join(close)}? " + hint
            raise ModelSourceError(
                f"{model_id} is not in the bundled catalog",
                hint + "; or plan from a local folder or a reachable hub",
                code="model-not-found",
            )
        return entry_to_metadata(entry)


def catalog_siblings(base_id: str) -> list[CatalogEntry]:
    """Catalog entries that are variants (FP8 / AWQ / GPTQ …) of the same base model."""
    entry = find_entry(base_id)
    base = entry.base_model if entry else base_id
    return [e for e in load_catalog() if _norm(e.base_model) == _norm(base)]


def catalog_rows(search: str | None = None) -> list[dict]:
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import load_catalog

    rows = []
    for entry in load_catalog():
        if search and search.lower() not in entry.id.lower():
            continue
        arch = read_arch(entry.config)
        rows.append({
            "id": entry.id,
            "base_model": entry.base_model,
            "variant": entry.variant,
            "architecture": (arch.architectures or [arch.model_type])[0],
            "layers": arch.num_hidden_layers,
            "kv_heads": arch.num_kv_heads,
            "head_dim": arch.head_dim,
            "native_max_model_len": arch.native_max_model_len,
            "moe": arch.moe is not None,
            "hybrid": arch.is_hybrid,
            "weights_bytes": entry.weights_bytes,
            "weights_bytes_kind": entry.weights_bytes_kind,
            "weights_source": entry.weights_source,
            "modelscope_id": entry.modelscope_id,
        })
    return rows
