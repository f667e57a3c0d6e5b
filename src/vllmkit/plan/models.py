"""Plan request and result. The result is what `vllmkit plan --json` prints under `data`,
what `plan --save` writes, and what `serve` / `check-log` consume. Sizes are int bytes, per GPU."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

SourceTag = Literal["measured", "derived", "estimated", "calibrated", "given"]
Device = Literal["cuda", "rocm", "cpu"]


class PlanRequest(BaseModel):
    model: str
    source: str = "auto"  # auto | hf | modelscope | local | catalog
    revision: str | None = None
    refresh: bool = False
    gpu: str | None = None  # profile name; None with device=cpu -> host RAM
    gpu_memory: int | None = None  # --gpu-memory override (bytes)
    gpu_count: int | None = None  # total GPUs available (None = decide)
    device: Device | None = None  # None -> from the GPU profile's vendor
    vllm_version: str | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    max_model_len: int | Literal["auto"] | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_memory_bytes: int | None = None
    kv_cache_dtype: str = "auto"
    dtype: str = "auto"
    quantization: str | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    enforce_eager: bool = False
    enable_prefix_caching: bool | None = None
    served_model_name: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = None  # never serialised in clear (see launch.command)
    generation_config_vllm: bool = False
    profiles_dir: str | None = None


class PlanOverrides(BaseModel):
    """The planning flags as given (None = not given): `PlanRequest(model=…, **overrides.given())`.
    check-log fills what is not given from the log before taking defaults."""

    model: str | None = None
    source: str | None = None
    revision: str | None = None
    refresh: bool | None = None
    gpu: str | None = None
    gpu_memory: int | None = None
    gpu_count: int | None = None
    device: Device | None = None
    vllm_version: str | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    max_model_len: int | Literal["auto"] | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_memory_bytes: int | None = None
    kv_cache_dtype: str | None = None
    dtype: str | None = None
    quantization: str | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    enforce_eager: bool | None = None
    enable_prefix_caching: bool | None = None
    profiles_dir: str | None = None

    def given(self) -> dict[str, object]:
        return self.model_dump(exclude_none=True)


class ModelInfo(BaseModel):
    id: str
    source: str
    revision: str | None = None
    path: str | None = None  # local folder when source == local
    architecture: str
    model_type: str
    dtype: str
    quantization: str | None = None
    native_max_model_len: int
    trust_remote_code: bool = False
    weight_files_bytes: int | None = None
    is_moe: bool = False
    is_hybrid: bool = False


class GpuInfo(BaseModel):
    name: str
    display_name: str
    vendor: str
    count: int
    memory_bytes: int
    gpus_per_node: int = 8
    nodes: int = 1


class ParallelInfo(BaseModel):
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    nodes: int = 1


class SettingsInfo(BaseModel):
    gpu_memory_utilization: float
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_cache_dtype: str
    dtype: str
    quantization: str | None = None
    block_size: int
    enforce_eager: bool = False
    kv_cache_memory_bytes: int | None = None
    enable_prefix_caching: bool = True


class MemoryInfo(BaseModel):
    total_bytes: int
    requested_bytes: int
    weights_bytes: int
    activation_bytes: int
    non_torch_bytes: int
    cudagraph_bytes: int
    kv_cache_bytes: int
    sources: dict[str, SourceTag] = Field(default_factory=dict)
    notes: dict[str, str] = Field(default_factory=dict)


class KVGroupInfo(BaseModel):
    kind: str
    layers: int
    block_size: int
    page_bytes: int  # one layer's page
    blocks_per_request: int


class KVCacheInfo(BaseModel):
    bytes_per_token: int  # per rank, summed over KV layers as if all were full attention
    block_size: int
    num_blocks: int
    tokens: int
    max_model_len: int
    max_concurrency: float
    bytes_per_block: int
    groups: list[KVGroupInfo] = Field(default_factory=list)


class Alternative(BaseModel):
    precision: str
    model_id: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    max_model_len: int
    fits: bool
    kv_tokens: int
    max_concurrency: float
    weights_bytes: int
    chosen: bool = False
    note: str = ""


class PlanResult(BaseModel):
    model: ModelInfo
    gpu: GpuInfo
    device: Device
    vllm_version: str
    vllm_version_source: str
    parallel: ParallelInfo
    settings: SettingsInfo
    memory: MemoryInfo
    kv_cache: KVCacheInfo
    fits: bool
    estimated_max_model_len: int | None = None
    serve_command: list[str] = Field(default_factory=list)
    serve_env: dict[str, str] = Field(default_factory=dict)
    alternatives: list[Alternative] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    calibration: str | None = None  # provenance of calibrated terms, when a calibration was used
