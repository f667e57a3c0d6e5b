"""What every remote hub shares: list files with sizes, fetch the small config files, and read
each safetensors header with HTTP range requests.

Range-read policy (one request per shard in the normal case):
- Without an index the first request asks for bytes 0..64 KiB-1 (HEADER_PROBE_BYTES): that holds
  the 8-byte length and a header of ~500 tensors, and costs nothing next to a multi-GB shard.
- With an index we know each shard's tensor names, so the first request is sized to hold the whole
  header (names + ~128 bytes per entry, clamped to 4 KiB..8 MiB): still one request, even for MoE
  shards with thousands of experts, and only a few KiB past the header.
- Only when the declared header is longer than what we read do we send a second request for
  exactly the missing bytes. A server that ignores Range (HTTP 200) is read only up to the bytes
  we need, then the connection is closed: weights are never downloaded.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from vllmkit.errors import ModelSourceError
from vllmkit.hub import gguf
from vllmkit.hub.base import FileInfo, ModelMetadata, SourceName
from vllmkit.hub.errors import HubContext
from vllmkit.hub.safetensors import LENGTH_PREFIX_BYTES, SafetensorsHeader, header_length, parse_prefix
from vllmkit.hub.weights import (
    CHAT_TEMPLATE_NAMES,
    CONFIG_NAME,
    GENERATION_CONFIG_NAME,
    HF_QUANT_CONFIG_NAME,
    TOKENIZER_CONFIG_NAME,
    header_probe_bytes,
    index_name_for,
    load_json_object,
    loaded_weight_files,
    merge_hf_quant_config,
    parse_index,
    sum_headers,
)

HEADER_PROBE_BYTES = 64 * 1024
HEADER_READ_WORKERS = 8


class RemoteRepo(Protocol):
    ctx: HubContext

    def list_files(self) -> tuple[list[FileInfo], str | None]:
        """All files with sizes, and the resolved commit when the hub reports one."""
        ...

    def get_small(self, path: str) -> bytes:
        """A small file (config, index) in full."""
        ...

    def read_range(self, path: str, start: int, length: int) -> bytes:
        """`length` bytes from `start` (fewer only at the end of the file)."""
        ...

    def file_url(self, path: str) -> str: ...


def build_metadata(repo: RemoteRepo, *, source: SourceName, repo_id: str, revision: str | None) -> ModelMetadata:
    files, commit = repo.list_files()
    names = [f.name for f in files]
    sizes = {f.name: f.size for f in files}
    notes: list[str] = []
    if CONFIG_NAME not in names:
        raise _no_config(repo_id, names)
    config = load_json_object(repo.get_small(CONFIG_NAME), name=f"{repo_id}/config.json")
    provenance = {"config": repo.file_url(CONFIG_NAME), "files": f"{repo.ctx.hub} file listing of {repo_id}"}
    if commit:
        provenance["commit"] = commit
    if "quantization_config" not in config and merge_hf_quant_config(
        config, _optional_json(repo, names, HF_QUANT_CONFIG_NAME, repo_id, notes)
    ):
        provenance["quantization_config"] = repo.file_url(HF_QUANT_CONFIG_NAME)

    weight_map: dict[str, str] | None = None
    index_total: int | None = None
    index_name = index_name_for(names)
    if index_name in names:
        weight_map, index_total = parse_index(repo.get_small(index_name), name=f"{repo_id}/{index_name}")
        provenance["index"] = repo.file_url(index_name)
        missing = sorted(set(weight_map.values()) - set(names))
        if missing:
            notes.append(f"{index_name} names shards missing from the repository: {', '.join(missing[:3])}")

    loaded = loaded_weight_files(names, weight_map)
    for info in files:
        if info.name.endswith(".gguf"):
            info.quant_type = gguf.quant_from_name(info.name)

    params_by_dtype: dict[str, int] | None = None
    tensor_bytes: int | None = None
    shards = [n for n in loaded if n.endswith(".safetensors")]
    if shards:
        headers = _read_headers(repo, repo_id, shards, sizes, weight_map)
        params_by_dtype, tensor_bytes = sum_headers(headers)
        provenance["params_by_dtype"] = f"safetensors headers of {len(shards)} file(s) (HTTP range reads)"

    generation_config = _optional_json(repo, names, GENERATION_CONFIG_NAME, repo_id, notes)
    tokenizer_config = _optional_json(repo, names, TOKENIZER_CONFIG_NAME, repo_id, notes)
    has_template = bool(tokenizer_config and tokenizer_config.get("chat_template")) or any(
        n in names for n in CHAT_TEMPLATE_NAMES
    )
    return ModelMetadata(
        id=repo_id,
        source=source,
        revision=revision,
        config=config,
        files=files,
        params_by_dtype=params_by_dtype,
        tensor_bytes=tensor_bytes,
        index_total_size=index_total,
        loaded_weight_files=loaded,
        generation_config=generation_config,
        tokenizer_config=tokenizer_config,
        has_chat_template=has_template,
        provenance=provenance,
        notes=notes,
    )


def _no_config(repo_id: str, names: list[str]) -> ModelSourceError:
    if any(n.endswith(".gguf") for n in names):
        return ModelSourceError(
            f"{repo_id} is a GGUF-only repository without config.json",
            "plan from the original model id (its config.json) and pass the .gguf file to vLLM separately",
            code="missing-config",
        )
    return ModelSourceError(
        f"{repo_id} has no config.json at the repository root",
        "it is not a transformers model repository vLLM can load; check the id or the revision",
        code="missing-config",
    )


def _optional_json(repo: RemoteRepo, names: list[str], name: str, repo_id: str, notes: list[str]) -> dict | None:
    if name not in names:
        return None
    try:
        return load_json_object(repo.get_small(name), name=f"{repo_id}/{name}")
    except ModelSourceError as exc:
        if exc.code == "bad-response":
            notes.append(f"{name} ignored: {exc.message}")
            return None
        raise


def _read_headers(
    repo: RemoteRepo,
    repo_id: str,
    shards: list[str],
    sizes: dict[str, int | None],
    weight_map: dict[str, str] | None,
) -> list[SafetensorsHeader]:
    def one(shard: str) -> SafetensorsHeader:
        return read_remote_header(repo.read_range, shard, sizes.get(shard), weight_map, label=f"{repo_id}/{shard}")

    if len(shards) == 1:
        return [one(shards[0])]
    with ThreadPoolExecutor(max_workers=min(HEADER_READ_WORKERS, len(shards))) as pool:
        return list(pool.map(one, shards))


def read_remote_header(
    read_range: Callable[[str, int, int], bytes],
    shard: str,
    size: int | None,
    weight_map: dict[str, str] | None,
    *,
    label: str | None = None,
) -> SafetensorsHeader:
    """Read one shard's header: one range request, a second only for a longer header."""
    name = label or shard
    probe = header_probe_bytes(shard, weight_map, default=HEADER_PROBE_BYTES)
    if size is not None:
        if size < LENGTH_PREFIX_BYTES:
            header_length(b"", name=name, file_size=size)  # raises: too short to be safetensors
        probe = min(probe, size)
    buf = read_range(shard, 0, probe)
    parsed = parse_prefix(buf, name=name, file_size=size)
    if isinstance(parsed, int):
        rest = read_range(shard, len(buf), parsed - len(buf))
        buf += rest
        parsed = parse_prefix(buf, name=name, file_size=size)
        if isinstance(parsed, int):
            raise ModelSourceError(
                f"{name}: invalid safetensors header: the file ends inside the header",
                "the file is damaged or truncated on the hub; check the repository",
                code="bad-safetensors-header",
            )
    return parsed
