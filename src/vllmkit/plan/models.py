"""Plan request and result. The result is what `vllmkit plan --json` prints under `data`,
what `plan --save` writes, and what `serve` / `check-log` consume. Sizes are int bytes, per GPU."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from vllmkit.plan.performance import PerformanceInfo

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
    profiles_dir: str | None = None
    # serving features (issue 14): the model family's tool-call / reasoning parsers, on by default
    tools: bool = True
    reasoning: bool = True
    # --- issue 13: multimodal, LoRA, speculative decoding, data/expert parallel --------------
    limit_mm_per_prompt: dict[str, int] | None = None  # --limit-mm-per-prompt '{"image": 0}' (the counts)
    # entries given in vLLM's configurable form ({"video": {"count": 1, "num_frames": 32}}), kept whole for
    # the serve line
    limit_mm_options: dict[str, dict] | None = None
    language_model_only: bool = False  # --language-model-only (text-only serving of a VLM)
    enable_lora: bool = False  # --enable-lora
    max_loras: int | None = None  # --max-loras (vLLM default 1)
    max_lora_rank: int | None = None  # --max-lora-rank (vLLM default 16)
    max_cpu_loras: int | None = None  # --max-cpu-loras (host memory only)
    speculative_config: dict | None = None  # --speculative-config JSON: method, model, num_speculative_tokens
    data_parallel_size: int | None = None  # --data-parallel-size (replicas)
    enable_expert_parallel: bool = False  # --enable-expert-parallel
    # --- issue 13 round 2: start/fail verdicts (engine/versions.py says where each matters) -----
    gpu_memory_in_use: int | None = None  # bytes other processes hold on each GPU at start
    flashinfer_installed: bool | None = None  # None: unknown (FlashInfer decides the sampler path)
    # --mamba-ssm-cache-dtype (vLLM >= 0.10.1): the SSM state's dtype of mamba / hybrid models; None / "auto": vLLM's
    mamba_ssm_cache_dtype: str | None = None
    # "cold": a first start, torch.compile compiles the model inside the memory profile (the default);
    # "warm": a restart that loads vLLM's compile cache (estimate/memory.py COMPILE_SHARE)
    compile_cache: Literal["cold", "warm"] = "cold"
    # --enable-extensible-kv-cache / --no-enable-extensible-kv-cache (vLLM 0.34+; None: vLLM's default, on for
    # CUDA / ROCm unless the KV cache size is given)
    enable_extensible_kv_cache: bool | None = None
    # --cpu-offload-gb (GiB per GPU): whole parameters of the decoder layers kept in pinned host memory, which the
    # GPU reads over PCIe in every forward pass (vLLM's UVA offloader)
    cpu_offload_gb: float | None = None
    # --async-scheduling / --no-async-scheduling (vLLM 0.10+); None: the release's default (on from 0.14 on GPUs)
    async_scheduling: bool | None = None


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
    tools: bool | None = None  # issue 14
    reasoning: bool | None = None
    # issue 13 (as PlanRequest has them): check-log plans the log's run with these when they are given
    limit_mm_per_prompt: dict[str, int] | None = None
    limit_mm_options: dict[str, dict] | None = None
    language_model_only: bool | None = None
    enable_lora: bool | None = None
    max_loras: int | None = None
    max_lora_rank: int | None = None
    max_cpu_loras: int | None = None
    speculative_config: dict | None = None
    data_parallel_size: int | None = None
    enable_expert_parallel: bool | None = None
    gpu_memory_in_use: int | None = None
    flashinfer_installed: bool | None = None
    compile_cache: Literal["cold", "warm"] | None = None
    mamba_ssm_cache_dtype: str | None = None
    enable_extensible_kv_cache: bool | None = None
    cpu_offload_gb: float | None = None
    async_scheduling: bool | None = None

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
    data_parallel_size: int = 1  # replicas (--data-parallel-size); memory figures are per GPU of one replica
    expert_parallel: bool = False


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
    # planning assumptions that are not vLLM flags: a first start ("cold") or a restart with vLLM's compile
    # cache ("warm"), and the model runner the release uses for the model ("v1" | "v2")
    compile_cache: Literal["cold", "warm"] = "cold"
    model_runner: Literal["v1", "v2"] = "v1"
    # the engine the release runs for this plan (V0 before 0.8, with VLLM_USE_V1=0, or where vLLM's V1 oracle
    # falls back: engine/versions.py v1_oracle) and whether its scheduler splits prompts (always on V1)
    engine: Literal["v0", "v1"] = "v1"
    # the feature the V1 oracle names when it falls back to V0 ("X is not supported by the V1 Engine. Falling
    # back to V0"), e.g. "--kv-cache-dtype", "LORA", "Compute Capability < 8.0"; None on V1 or a pre-0.8 release
    engine_fallback: str | None = None
    chunked_prefill: bool = True
    # vLLM 0.34+ on CUDA / ROCm: the KV cache is sized from memory measured after warm-up (the utilization then
    # defaults to 1.0 and the serve line leaves it unset)
    extensible_kv_cache: bool = False
    cpu_offload_gb: float | None = None  # --cpu-offload-gb as given
    # whether the server runs async scheduling: --async-scheduling / --no-async-scheduling as given, else the
    # release's default (on from 0.14 on GPUs unless the configuration conflicts with it: plan/performance.py
    # async_scheduling_conflict)
    async_scheduling: bool = False


class MemoryInfo(BaseModel):
    total_bytes: int
    requested_bytes: int
    weights_bytes: int
    activation_bytes: int
    non_torch_bytes: int
    cudagraph_bytes: int
    kv_cache_bytes: int
    encoder_bytes: int = 0  # multimodal encoder share of the profile run (0 for text-only models)
    lora_bytes: int = 0  # preallocated LoRA stacks (--enable-lora)
    speculative_bytes: int = 0  # drafter weights (--speculative-config)
    other_processes_bytes: int = 0  # memory of other processes a release charges to its budget (0.6.4, 0.8-0.9.0)
    # vLLM 0.34's extensible KV cache: what its measured sizing keeps free beyond the used memory (the CUDA
    # context, other processes, max(1 GiB, 0.75 x the transient peak)) when that, not the utilization, bounds it
    headroom_bytes: int = 0
    # weights of the decoder layers held in host memory (--cpu-offload-gb), not in weights_bytes
    cpu_offload_bytes: int = 0
    # one rank of each pipeline stage (empty without PP): stages differ by their layers (DeepSeek's dense
    # first layers, the embedding on the first, the head on the last); weights_bytes is the tightest stage's
    stage_weights_bytes: list[int] = Field(default_factory=list)
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
    # requests of max_model_len tokens the pool holds at once while they run, where the cache mixes layer kinds
    # (sliding-window groups keep only their window: estimate/kv.py running_pool_tokens); None: the same as
    # max_concurrency (full attention, MLA or state only)
    running_concurrency: float | None = None

    @property
    def state_only(self) -> bool:
        """Only recurrent-state groups: an attention-free model (Mamba / Mamba-2), no per-token KV."""
        return bool(self.groups) and all(g.kind == "mamba" for g in self.groups)


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
    data_parallel_size: int = 1
    output_tokens_per_s: float | None = None  # with a workload (plan/performance.py)


# --- serving features (issue 14; built by launch/presets.py) -------------------------------------


class ParserPick(BaseModel):
    name: str
    enabled: bool = True  # False: turned off by --no-tools / --no-reasoning
    checked: str = "preset table"  # or "installed vLLM registry (<dist> <version>)"


class FeatureNote(BaseModel):
    enabled: bool
    source: str  # "vLLM default" | "--enable-prefix-caching" | ...
    detail: str


class FeaturesInfo(BaseModel):
    family: str | None = None  # the preset that matched, None when none did
    tool_call_parser: ParserPick | None = None
    reasoning_parser: ParserPick | None = None
    reasoning_field: str | None = None  # "reasoning" or "reasoning_content" (by vLLM version)
    chat_template: str | None = None  # template vLLM's docs recommend for tools (examples/...)
    tokenizer_mode: str | None = None
    thinking_on_kwargs: dict[str, Any] | None = None  # chat_template_kwargs that turn thinking on
    thinking_off_kwargs: dict[str, Any] | None = None  # ... and off
    generation_config: str | None = None
    notes: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    prefix_caching: FeatureNote | None = None
    chunked_prefill: FeatureNote | None = None
    structured_outputs: FeatureNote | None = None
    warnings: list[str] = Field(default_factory=list)


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
    estimated_max_model_len: int | None = None  # what vLLM prints: the first pipeline stage that does not fit
    usable_max_model_len: int | None = None  # the longest context every stage holds (0: one has no KV memory)
    startup_refusal: str | None = None  # why vLLM refuses to start before sizing the KV cache
    graph_capture_oom: str | None = None  # why the CUDA-graph capture after KV sizing will likely OOM
    # max_num_seqs exceeds the mamba cache blocks, which vLLM (>= 0.19) refuses: the block count
    mamba_seq_limit: int | None = None
    serve_command: list[str] = Field(default_factory=list)
    serve_env: dict[str, str] = Field(default_factory=dict)
    alternatives: list[Alternative] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    calibration: str | None = None  # provenance of calibrated terms, when a calibration was used
    features: FeaturesInfo | None = None  # serving features (issue 14)
    # --- performance model (issue 11, plan/performance.py) ---
    performance: PerformanceInfo | None = None  # with a workload (--input-len/--output-len/...)
    _perf_candidates: list = PrivateAttr(default_factory=list)  # (Alternative, CandidatePerf) for capacity
    _data_parallel_candidate: Any = PrivateAttr(default=None)  # the offered DP option's Candidate (plan/result.py)
