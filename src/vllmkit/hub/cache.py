"""On-disk cache of model metadata, one JSON file per (source, repository, revision).

Layout: <cache_dir>/models/<source>/<org>--<name>/<revision>.json, where cache_dir is
VLLMKIT_CACHE_DIR, else $XDG_CACHE_HOME/vllmkit (see settings.py). Writes are atomic (a temporary
file in the same folder, then os.replace), so a crash or an error mid-fetch never leaves a
half-written entry. An entry from another endpoint (a mirror) or an unreadable entry is a miss.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import ValidationError

from vllmkit.dirs import write_text_atomic
from vllmkit.hub.base import ModelMetadata

CACHE_VERSION = 1


def _slug(text: str) -> str:
    # "Qwen/Qwen3-8B" -> "Qwen--Qwen3-8B" (the HF cache convention); quote the rest of the way
    return quote(text.replace("/", "--"), safe="-_.")


def entry_path(cache_dir: Path, source: str, repo_id: str, revision: str | None, kind: str = "models") -> Path:
    return cache_dir / kind / source / _slug(repo_id) / f"{_slug(revision or 'default')}.json"


def atomic_write_json(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(doc, separators=(",", ":")), mode=0o600)  # as mkstemp made them


def _read_entry(path: Path, endpoint: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("vllmkit_cache_version") != CACHE_VERSION:
        return None
    if doc.get("endpoint") != endpoint:
        return None
    return doc


def load_metadata(
    cache_dir: Path, source: str, repo_id: str, revision: str | None, *, endpoint: str
) -> ModelMetadata | None:
    path = entry_path(cache_dir, source, repo_id, revision)
    doc = _read_entry(path, endpoint)
    if doc is None:
        return None
    try:
        meta = ModelMetadata.model_validate(doc.get("metadata"))
    except ValidationError:
        return None
    fetched = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(doc.get("fetched_at", 0))))
    meta.provenance["cache"] = f"{path} (fetched {fetched}; --refresh refetches)"
    return meta


def store_metadata(
    cache_dir: Path, source: str, repo_id: str, revision: str | None, meta: ModelMetadata, *, endpoint: str
) -> Path | None:
    """Store an entry; a cache we cannot write (read-only home) is not an error."""
    path = entry_path(cache_dir, source, repo_id, revision)
    doc = {
        "vllmkit_cache_version": CACHE_VERSION,
        "fetched_at": time.time(),
        "endpoint": endpoint,
        "metadata": meta.model_dump(mode="json"),
    }
    try:
        atomic_write_json(path, doc)
    except OSError:
        return None
    return path


def load_json(cache_dir: Path, kind: str, source: str, key: str, *, endpoint: str) -> Any | None:
    """Generic cached JSON document (e.g. sibling search results)."""
    doc = _read_entry(entry_path(cache_dir, source, key, None, kind=kind), endpoint)
    return None if doc is None else doc.get("data")


def store_json(cache_dir: Path, kind: str, source: str, key: str, data: Any, *, endpoint: str) -> None:
    doc = {"vllmkit_cache_version": CACHE_VERSION, "fetched_at": time.time(), "endpoint": endpoint, "data": data}
    try:
        atomic_write_json(entry_path(cache_dir, source, key, None, kind=kind), doc)
    except OSError:
        pass
