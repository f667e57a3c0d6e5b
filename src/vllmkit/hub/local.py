"""A model in a folder on disk: config files, file sizes from stat, safetensors headers read
from disk (the 8-byte length and the JSON header, never the weights)."""

from __future__ import annotations

import os
from pathlib import Path

from vllmkit.errors import ModelSourceError
from vllmkit.hub import gguf
from vllmkit.hub.base import FileInfo, ModelMetadata, SourceName
from vllmkit.hub.safetensors import read_header_file
from vllmkit.hub.weights import (
    CHAT_TEMPLATE_NAMES,
    CONFIG_NAME,
    GENERATION_CONFIG_NAME,
    HF_QUANT_CONFIG_NAME,
    TOKENIZER_CONFIG_NAME,
    index_name_for,
    load_json_object,
    loaded_weight_files,
    merge_hf_quant_config,
    parse_index,
    sum_headers,
)

# Folders that never hold model files vLLM loads (VCS data, download caches of hub clients).
_SKIP_DIRS = {".git", ".cache", ".huggingface", ".hf_cache", "__pycache__", ".ipynb_checkpoints"}


class LocalSource:
    """A folder with config.json and weights (a download, a checkpoint, a HF cache snapshot)."""

    name: SourceName = "local"

    def fetch(self, model_id: str, revision: str | None = None, *, refresh: bool = False) -> ModelMetadata:
        path = Path(model_id).expanduser()
        try:
            folder = resolve_folder(path)
            return read_folder(folder, revision=revision)
        except OSError as exc:  # an unreadable folder or file inside it (EACCES, EIO, ...)
            where = exc.filename or path
            raise ModelSourceError(
                f"cannot read {where}: {exc.strerror or type(exc).__name__}",
                "check that you may read the model folder and its files (permissions, mount), or pass another folder",
                code="model-unreadable",
            ) from None


def resolve_folder(path: Path) -> Path:
    """Check the path is a model folder; a HF cache repo folder (models--org--name) maps to its
    snapshot for refs/main."""
    path = path.absolute()
    looks_like_a_log = path.suffix.lower() in (".log", ".txt", ".out")
    if not path.exists():
        raise ModelSourceError(
            f"no such {'file' if looks_like_a_log else 'folder'}: {path}",
            ("check the path; a vLLM log goes after --log (`vllmkit doctor --log FILE`)" if looks_like_a_log
             else "check the path; a hub model is written org/name (e.g. Qwen/Qwen3-8B)"),
            code="model-not-found",
        )
    if path.is_file():
        if path.suffix == ".gguf":
            raise ModelSourceError(
                f"{path} is a single GGUF file; vllmkit plans from a folder with config.json",
                "pass the folder of the original (unquantized) model, or a folder holding config.json "
                "next to the .gguf file",
            )
        if looks_like_a_log:
            raise ModelSourceError(
                f"{path} is a file, not a model folder",
                f"a vLLM log? diagnose it with `vllmkit doctor --log {path}` (or compare it with a plan: "
                "`vllmkit check-log`); a model is a folder holding config.json",
            )
        raise ModelSourceError(
            f"{path} is a file, not a model folder", "pass the folder that holds config.json and the weights"
        )
    snapshot = _hf_cache_snapshot(path)
    return snapshot or path


def _hf_cache_snapshot(path: Path) -> Path | None:
    ref = path / "refs" / "main"
    if (path / CONFIG_NAME).exists() or not ref.is_file():
        return None
    try:
        commit = ref.read_text().strip()
    except OSError:
        return None
    snapshot = path / "snapshots" / commit
    return snapshot if snapshot.is_dir() else None


def list_files(folder: Path) -> list[FileInfo]:
    files: list[FileInfo] = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(names):
            full = Path(root) / name
            rel = full.relative_to(folder).as_posix()
            try:
                size: int | None = full.stat().st_size  # follows HF-cache symlinks to blobs
            except OSError:
                size = None  # a dangling symlink (incomplete download)
            files.append(FileInfo(name=rel, size=size))
    return files


def _optional_json(folder: Path, name: str, notes: list[str]) -> dict | None:
    path = folder / name
    if not path.is_file():
        return None
    try:
        return load_json_object(path.read_bytes(), name=name)
    except (ModelSourceError, OSError) as exc:
        notes.append(f"{name} ignored: {exc}")
        return None


def read_folder(folder: Path, *, revision: str | None = None) -> ModelMetadata:
    config_path = folder / CONFIG_NAME
    if not config_path.is_file():
        raise ModelSourceError(
            f"{folder} has no config.json",
            "point at the folder that holds config.json and the weights (in a Hugging Face cache that "
            "is snapshots/<commit>/); for a hub model pass its id, e.g. Qwen/Qwen3-8B",
            code="missing-config",
        )
    try:
        config = load_json_object(config_path.read_bytes(), name=str(config_path))
    except OSError as exc:
        raise ModelSourceError(f"cannot read {config_path}: {exc.strerror or exc}", "check permissions") from None

    notes: list[str] = []
    files = list_files(folder)
    names = [f.name for f in files]
    provenance = {"config": str(config_path), "files": f"listing of {folder}"}
    if "quantization_config" not in config and merge_hf_quant_config(
        config, _optional_json(folder, HF_QUANT_CONFIG_NAME, notes)
    ):
        provenance["quantization_config"] = str(folder / HF_QUANT_CONFIG_NAME)

    weight_map: dict[str, str] | None = None
    index_total: int | None = None
    index_name = index_name_for(names)
    if index_name in names:
        weight_map, index_total = parse_index((folder / index_name).read_bytes(), name=index_name)
        provenance["index"] = str(folder / index_name)
        missing = sorted(set(weight_map.values()) - set(names))
        if missing:
            raise ModelSourceError(
                f"{index_name} names {len(missing)} shard(s) missing from {folder}: {', '.join(missing[:3])}",
                "the download is incomplete; finish it (e.g. `hf download <id> --local-dir ...`) and retry",
                code="incomplete-download",
            )

    loaded = loaded_weight_files(names, weight_map)
    for info in files:
        if info.name.endswith(".gguf"):
            info.quant_type = gguf.local_quant_type(folder / info.name)

    params_by_dtype: dict[str, int] | None = None
    tensor_bytes: int | None = None
    shards = [n for n in loaded if n.endswith(".safetensors")]
    if shards:
        headers = [read_header_file(folder / n, name=n) for n in shards]
        params_by_dtype, tensor_bytes = sum_headers(headers)
        provenance["params_by_dtype"] = f"safetensors headers of {len(shards)} file(s) on disk"
    if not loaded:
        notes.append("no weight files found (config-only folder): sizes come from the config alone")

    tokenizer_config = _optional_json(folder, TOKENIZER_CONFIG_NAME, notes)
    return ModelMetadata(
        id=str(folder),
        source="local",
        revision=revision,
        config=config,
        files=files,
        params_by_dtype=params_by_dtype,
        tensor_bytes=tensor_bytes,
        index_total_size=index_total,
        loaded_weight_files=loaded,
        generation_config=_optional_json(folder, GENERATION_CONFIG_NAME, notes),
        tokenizer_config=tokenizer_config,
        has_chat_template=_has_chat_template(tokenizer_config, names),
        provenance=provenance,
        notes=notes,
    )


def _has_chat_template(tokenizer_config: dict | None, names: list[str]) -> bool:
    if tokenizer_config and tokenizer_config.get("chat_template"):
        return True
    return any(n in names for n in CHAT_TEMPLATE_NAMES)
