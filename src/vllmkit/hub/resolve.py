"""Turn what the user typed (`Qwen/Qwen3-8B`, `hf://org/name@rev`, `ms://...`, a folder) into
ModelMetadata from the right source, with the disk cache in front of the hubs.

`source="auto"`: an existing folder or an explicit path -> local; `VLLM_USE_MODELSCOPE` (as vLLM
reads it) -> ModelScope; else the Hugging Face Hub. When the hub cannot be reached (HF_HUB_OFFLINE,
no connection) the bundled catalog answers instead, with the note OFFLINE_NOTE.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from vllmkit.errors import ModelSourceError, UsageError
from vllmkit.hub.base import ModelMetadata
from vllmkit.hub.errors import HubUnreachableError
from vllmkit.hub.local import LocalSource
from vllmkit.hub.settings import HubSettings

SOURCES = ("auto", "hf", "modelscope", "local", "catalog")
OFFLINE_NOTE = "offline: using the bundled catalog snapshot"

_SCHEMES = {"hf": "hf", "huggingface": "hf", "ms": "modelscope", "modelscope": "modelscope", "file": "local"}
# Hub repo ids: [org/]name of letters, digits, '-', '_', '.' (huggingface_hub validate_repo_id;
# ModelScope ids follow the same shape).
_REPO_ID = re.compile(r"^(?:[\w\-.]{1,96}/)?[\w\-.]{1,96}$")


@dataclass(frozen=True)
class ModelSpec:
    kind: Literal["path", "hub"]
    id: str  # repo id, or the path as typed
    hub: Literal["hf", "modelscope"] | None = None  # set by an hf:// / ms:// prefix
    revision: str | None = None


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", "./", "../", "~", ".\\")) or text in (".", "..") or bool(re.match(r"^[A-Za-z]:[\\/]", text))


def parse_spec(spec: str, revision: str | None = None) -> ModelSpec:
    text = spec.strip()
    if not text:
        raise UsageError("no model given", "pass a hub id (Qwen/Qwen3-8B), hf://..., ms://... or a folder")
    scheme = None
    if "://" in text:
        prefix, text = text.split("://", 1)
        scheme = _SCHEMES.get(prefix.lower())
        if scheme is None:
            raise UsageError(
                f"unknown model prefix {prefix}://", "use hf://org/name, ms://org/name, modelscope://... or a path"
            )
        if scheme == "local":
            return ModelSpec(kind="path", id=text, revision=revision)
    elif _looks_like_path(text):
        return ModelSpec(kind="path", id=text, revision=revision)

    rev = revision
    if "@" in text:
        text, spec_rev = text.rsplit("@", 1)
        if not spec_rev:
            raise UsageError(f"empty revision in {spec!r}", "write org/name@revision, e.g. Qwen/Qwen3-8B@main")
        if revision is not None and revision != spec_rev:
            raise UsageError(
                f"two revisions given: {spec_rev!r} in the model and {revision!r} in --revision",
                "give the revision once",
            )
        rev = spec_rev
    text = text.strip("/")
    if scheme is None and Path(spec.strip()).expanduser().exists():
        return ModelSpec(kind="path", id=spec.strip(), revision=revision)
    if not _REPO_ID.match(text) or ".." in text or "--" in text:
        raise ModelSourceError(
            f"{spec!r} is neither an existing folder nor a hub id",
            "a hub id is org/name (e.g. Qwen/Qwen3-8B); a folder must exist (check the path)",
            code="model-not-found",
        )
    return ModelSpec(kind="hub", id=text, hub=scheme, revision=rev)  # type: ignore[arg-type]


def resolve_model(
    spec: str,
    *,
    source: str = "auto",
    revision: str | None = None,
    refresh: bool = False,
    env: Mapping[str, str] | None = None,
    cache_dir: Path | None = None,
) -> ModelMetadata:
    """Metadata for `spec`. Raises ModelSourceError (exit 4) or UsageError (exit 2)."""
    if source not in SOURCES:
        raise UsageError(f"unknown source {source!r}", f"use one of: {', '.join(SOURCES)}")
    settings = HubSettings.from_env(env, cache_dir=cache_dir)

    if source == "local":
        return LocalSource().fetch(_strip_file_scheme(spec), revision)
    parsed = parse_spec(spec, revision)
    if parsed.kind == "path":
        if source not in ("auto", "local"):
            raise UsageError(f"{spec!r} is a folder but --source is {source}", "drop --source or pass a hub id")
        return LocalSource().fetch(parsed.id, parsed.revision)
    if source == "catalog":
        return _catalog_fetch(parsed.id)

    hub = _choose_hub(parsed, source, settings)
    try:
        return fetch_hub(hub, parsed.id, parsed.revision, settings=settings, refresh=refresh)
    except HubUnreachableError as exc:
        if source != "auto":
            raise
        return _catalog_fallback(parsed.id, exc)


def _strip_file_scheme(spec: str) -> str:
    return spec[len("file://"):] if spec.startswith("file://") else spec


def _choose_hub(parsed: ModelSpec, source: str, settings: HubSettings) -> Literal["hf", "modelscope"]:
    if parsed.hub is not None:
        if source in ("hf", "modelscope") and source != parsed.hub:
            raise UsageError(
                f"the model names {parsed.hub} but --source is {source}", "drop the prefix or the --source flag"
            )
        return parsed.hub
    if source in ("hf", "modelscope"):
        return source  # type: ignore[return-value]
    return "modelscope" if settings.use_modelscope else "hf"


def endpoint_for(hub: str, settings: HubSettings) -> str:
    return settings.hf_endpoint if hub == "hf" else settings.ms_endpoint


def fetch_hub(
    hub: Literal["hf", "modelscope"], repo_id: str, revision: str | None, *, settings: HubSettings, refresh: bool
) -> ModelMetadata:
    """One hub repository, from the vllmkit cache unless `refresh`; stores what it fetched."""
    from vllmkit.hub import cache

    endpoint = endpoint_for(hub, settings)
    if not refresh:
        cached = cache.load_metadata(settings.cache_dir, hub, repo_id, revision, endpoint=endpoint)
        if cached is not None:
            return cached
    if hub == "hf" and settings.hf_offline:
        # answered without importing huggingface_hub (it freezes HF_HUB_OFFLINE at import time)
        from vllmkit.hub.offline import hf_offline_metadata

        offline = hf_offline_metadata(settings, repo_id, revision)
        if offline is not None:
            return offline
        raise HubUnreachableError(
            f"HF_HUB_OFFLINE is set and {repo_id} is not in the Hugging Face cache ({settings.hf_hub_cache})",
            "unset HF_HUB_OFFLINE to go online, or pass a local folder / --source catalog",
        )
    if hub == "hf":
        from vllmkit.hub.hf import HfSource

        meta = HfSource(settings).fetch(repo_id, revision, refresh=refresh)
    else:
        from vllmkit.hub.modelscope import ModelScopeSource

        meta = ModelScopeSource(settings).fetch(repo_id, revision, refresh=refresh)
    # only complete answers from the hub itself are cached (not offline reads of a local cache)
    if not any(n.startswith("offline:") for n in meta.notes):
        cache.store_metadata(settings.cache_dir, hub, repo_id, revision, meta, endpoint=endpoint)
    return meta


def _catalog_source() -> object | None:
    try:
        module = importlib.import_module("vllmkit.hub.catalog")
    except ModuleNotFoundError as exc:
        if exc.name == "vllmkit.hub.catalog":
            return None  # the bundled catalog is not built yet
        raise
    return module.CatalogSource()


def _catalog_fetch(model_id: str) -> ModelMetadata:
    catalog = _catalog_source()
    if catalog is None:
        raise ModelSourceError(
            "the bundled catalog is not available in this build", "use --source hf, modelscope or a local folder"
        )
    return catalog.fetch(model_id)  # type: ignore[attr-defined, no-any-return]


def _catalog_fallback(model_id: str, error: HubUnreachableError) -> ModelMetadata:
    catalog = _catalog_source()
    if catalog is None:
        raise error
    try:
        meta: ModelMetadata = catalog.fetch(model_id)  # type: ignore[attr-defined]
    except ModelSourceError:
        raise ModelSourceError(
            f"{error.message}, and {model_id} is not in the bundled catalog",
            error.hint,
            code=error.code,
        ) from None
    meta.notes.insert(0, OFFLINE_NOTE)
    meta.provenance.setdefault("fallback", f"hub unreachable: {error.message}")
    return meta
