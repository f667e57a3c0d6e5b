"""One interface for every place a model can live, and the metadata we read from it.

We never download weight bytes: sizes come from file listings and safetensors headers.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, Field

SourceName = Literal["hf", "modelscope", "local", "catalog"]

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


class FileInfo(BaseModel):
    name: str  # path inside the repository
    size: int | None = None  # bytes
    # GGUF only: quantization type ("Q4_K_M", ...) from the GGUF header or the file name
    quant_type: str | None = None


class ModelMetadata(BaseModel):
    id: str  # "Qwen/Qwen3-8B" or an absolute folder path
    source: SourceName
    revision: str | None = None
    config: dict
    files: list[FileInfo] = Field(default_factory=list)
    # parameter counts by safetensors dtype ("BF16", "F8_E4M3", "I32", ...) from shard headers
    params_by_dtype: dict[str, int] | None = None
    # bytes of tensor data (sum over tensors of numel*itemsize), from headers or index total_size
    tensor_bytes: int | None = None
    index_total_size: int | None = None
    # the weight files vLLM (0.32 DefaultModelLoader._prepare_weights) loads, when known
    loaded_weight_files: list[str] | None = None
    generation_config: dict | None = None
    tokenizer_config: dict | None = None
    has_chat_template: bool | None = None
    # where each number came from, e.g. {"config": "https://hf.co/...", "files": "..."}
    provenance: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

    def weight_files(self) -> list[FileInfo]:
        if self.loaded_weight_files:
            wanted = set(self.loaded_weight_files)
            return [f for f in self.files if f.name in wanted]
        # vLLM loads weight files from the repository root only (not original/ and the like)
        names = [f for f in self.files if f.name.endswith(WEIGHT_SUFFIXES) and "/" not in f.name]
        # vLLM prefers safetensors; .bin/.pt are only loaded when no safetensors exist.
        st = [f for f in names if f.name.endswith(".safetensors")]
        if st:
            # consolidated.safetensors (Mistral format) is skipped when sharded HF files exist
            hf = [f for f in st if not f.name.startswith("consolidated")]
            return hf or st
        gguf = [f for f in names if f.name.endswith(".gguf")]
        return gguf or names

    def weight_file_bytes(self) -> int | None:
        files = self.weight_files()
        if not files or any(f.size is None for f in files):
            return None
        return sum(int(f.size or 0) for f in files)


class ModelSource(Protocol):
    """A place models live. Implementations raise ModelSourceError (exit 4) on failure."""

    name: SourceName

    def fetch(self, model_id: str, revision: str | None = None, *, refresh: bool = False) -> ModelMetadata: ...
