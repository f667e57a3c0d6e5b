"""What answers without a network: the hub clients' own caches (HF_HUB_CACHE, MODELSCOPE_CACHE),
read like local folders. Kept free of hub-client imports so an offline plan never loads them."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from vllmkit.errors import ModelSourceError
from vllmkit.hub.base import ModelMetadata
from vllmkit.hub.local import read_folder
from vllmkit.hub.settings import HubSettings

_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
HF_CACHE_NOTE = "offline: read from the Hugging Face cache"
MS_CACHE_NOTE = "offline: read from the ModelScope cache"


def close_names(repo_id: str, candidates: list[str]) -> list[str]:
    lowered = {c.lower(): c for c in candidates}
    ranked = difflib.get_close_matches(repo_id.lower(), list(lowered), n=3, cutoff=0.6)
    return [lowered[r] for r in ranked]




def hf_cache_snapshot(settings: HubSettings, repo_id: str, revision: str | None) -> Path | None:
    """A snapshot folder of `repo_id` in the HF cache ($HF_HUB_CACHE) that holds config.json and
    weights, or None."""
    repo_dir = settings.hf_hub_cache / f"models--{repo_id.replace('/', '--')}"
    rev = revision or "main"
    commit = rev if _COMMIT_RE.match(rev) else None
    if commit is None:
        try:
            commit = (repo_dir / "refs" / rev).read_text().strip()
        except OSError:
            return None
    snapshot = repo_dir / "snapshots" / commit
    if not (snapshot / "config.json").is_file():
        return None
    return snapshot


def metadata_from_cache_folder(folder: Path, *, source: str, repo_id: str, revision: str | None,
                               note: str) -> ModelMetadata | None:
    """Read a hub-cache snapshot as a local folder; None when it lacks the weights vLLM loads."""
    try:
        meta = read_folder(folder, revision=revision)
    except ModelSourceError:
        return None
    loaded = meta.loaded_weight_files or []
    sizes = {f.name: f.size for f in meta.files}
    if not loaded or any(sizes.get(n) is None for n in loaded):
        return None
    meta.id = repo_id
    meta.source = source  # type: ignore[assignment]
    meta.provenance["files"] = f"{note} ({folder})"
    meta.notes.append(note)
    return meta


def ms_cache_folder(settings: HubSettings, repo_id: str) -> Path | None:
    """The model in MODELSCOPE_CACHE, in any layout the client has used
    (modelscope_hub/_cache_manager.py _resolve_cache_targets)."""
    root = settings.ms_cache
    for candidate in (
        root / "models" / repo_id.replace("/", "--"),
        root / "models" / repo_id,
        root / repo_id,
        root / "hub" / repo_id,
        root / "hub" / "models" / repo_id,
    ):
        if (candidate / "config.json").is_file():
            return candidate
    return None



def hf_offline_metadata(settings: HubSettings, repo_id: str, revision: str | None) -> ModelMetadata | None:
    snapshot = hf_cache_snapshot(settings, repo_id, revision)
    if snapshot is None:
        return None
    return metadata_from_cache_folder(snapshot, source="hf", repo_id=repo_id, revision=revision, note=HF_CACHE_NOTE)


def ms_offline_metadata(settings: HubSettings, repo_id: str, revision: str | None) -> ModelMetadata | None:
    folder = ms_cache_folder(settings, repo_id)
    if folder is None:
        return None
    return metadata_from_cache_folder(folder, source="modelscope", repo_id=repo_id, revision=revision,
                                      note=MS_CACHE_NOTE)
