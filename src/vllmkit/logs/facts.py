"""Facts: what a vLLM log says about the run, built event by event (in log order).

Each event kind has a setter; `apply_event` runs it on the running facts, so a reader fed line by
line and one given the whole text end with the same facts. `finish` adds what follows from the whole
log (a --kv-cache-memory-bytes budget is exact where printed GiB are rounded; the engine generation
from the version). Never raises on any input: every number conversion is guarded.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from vllmkit.logs.values import (
    config_value,
    dtype_name,
    gib_to_bytes,
    none_if_null,
    parse_config_line,
    parse_python_dict,
    size_to_bytes,
    to_bool,
    to_float,
    to_int,
)

MAX_ERRORS = 50


class LogFacts(BaseModel):
    """What a vLLM log says about the run. None = the log did not show it."""

    vllm_version: str | None = None
    engine: Literal["V0", "V1"] | None = None
    platform: str | None = None  # "cuda", "rocm", "cpu", ... ("Automatically detected platform X.")
    kv_pool: str | None = None  # "GPU" / "CPU" / "XPU" from the capacity line
    gpu_name: str | None = None
    gpu_total_bytes: int | None = None
    gpu_free_bytes_at_start: int | None = None
    model: str | None = None
    served_model_name: str | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    data_parallel_size: int | None = None
    max_model_len: int | None = None
    dtype: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    enforce_eager: bool | None = None
    enable_prefix_caching: bool | None = None
    enable_lora: bool | None = None  # from the non-default args / Namespace (LoRA stacks are preallocated)
    max_loras: int | None = None
    max_lora_rank: int | None = None
    enable_expert_parallel: bool | None = None
    trust_remote_code: bool | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_memory_bytes_requested: int | None = None
    max_num_seqs: int | None = None
    cpu_offload_gb: float | None = None  # --cpu-offload-gb (non-default args)
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    port: int | None = None
    attention_backend: str | None = None
    # the V1 top-k/top-p sampler's startup line: True "Using FlashInfer for top-p & top-k sampling", False a
    # fallback to the PyTorch-native (sort-based) implementation
    sampler_flashinfer: bool | None = None
    # "warm": the start loaded its compiled graphs from vLLM's cache; "cold": it compiled them (the profile
    # then holds torch.compile's memory: estimate/memory.py COMPILE_SHARE)
    compile_cache: Literal["cold", "warm"] | None = None
    model_runner_v2: bool | None = None  # "Using V2 Model Runner" (engine/versions.py model_runner_v2)
    architecture: str | None = None
    weights_bytes: int | None = None
    weights_load_seconds: float | None = None
    non_torch_bytes: int | None = None
    peak_activation_bytes: int | None = None
    available_kv_bytes: int | None = None
    kv_cache_tokens: int | None = None
    num_gpu_blocks: int | None = None
    max_concurrency: float | None = None
    concurrency_tokens_per_request: int | None = None
    graph_memory_bytes: int | None = None
    graph_estimate_bytes: int | None = None  # "Estimated CUDA graph memory: X GiB total" (0.19+)
    graph_capture_seconds: float | None = None
    init_engine_seconds: float | None = None
    auto_fit_max_model_len: int | None = None
    # from the "not enough KV cache" errors
    kv_needed_bytes: int | None = None
    estimated_max_model_len: int | None = None
    v0_max_kv_tokens: int | None = None
    non_default_args: dict[str, Any] = Field(default_factory=dict)
    generation_config_overrides: dict[str, Any] | None = None
    server_started: bool = False
    engine_failed: bool = False
    last_error: str | None = None
    errors: list[str] = Field(default_factory=list)  # exception lines ("ValueError: ..."), first seen first
    api_url: str | None = None  # "Starting vLLM API server 0 on http://0.0.0.0:8000" (the last one)
    stages: list[str] = Field(default_factory=list)  # startup stages reached, in order (see stages.py)
    # vLLM 0.34: "Disabling the extensible KV cache: ..." (it fell back to the profiling estimate at start)
    extensible_kv_disabled: bool = False

    @property
    def extensible_kv_cache(self) -> bool:
        """A vLLM 0.34+ GPU start sized by the extensible KV cache: on by default unless the KV size was given,
        --no-enable-extensible-kv-cache was passed, or it fell back at start; its "Available KV cache memory" and
        closing summary then give a reserved capacity, not the cache's size, and its utilization defaults to 1.0."""
        release = major_minor(self.vllm_version or "")
        if release is None or release < (0, 34) or self.kv_cache_memory_bytes_requested is not None:
            return False
        if self.platform == "cpu" or (self.non_default_args or {}).get("enable_extensible_kv_cache") is False:
            return False
        return not self.extensible_kv_disabled


class LogEvent(BaseModel):
    kind: str
    line: int
    text: str
    values: dict[str, Any] = Field(default_factory=dict)



_Setter = Callable[[LogFacts, LogEvent], None]


def _engine_config(f: LogFacts, e: LogEvent) -> None:
    """The engine-config line holds the resolved values: they override what the argument lines said
    (e.g. dtype 'auto' in the args becomes torch.bfloat16 here)."""
    v = e.values
    f.vllm_version = f.vllm_version or v.get("version")
    engine = v.get("engine")
    f.engine = f.engine or (engine if engine in ("V0", "V1") else "V0")  # "Initializing an LLM engine" = V0
    cfg = parse_config_line(v.get("config", ""))
    f.model = cfg.get("model") or f.model
    f.served_model_name = none_if_null(cfg.get("served_model_name")) or f.served_model_name
    f.dtype = dtype_name(cfg.get("dtype")) or f.dtype
    f.max_model_len = to_int(cfg.get("max_seq_len")) or f.max_model_len
    f.tensor_parallel_size = to_int(cfg.get("tensor_parallel_size")) or f.tensor_parallel_size
    f.pipeline_parallel_size = to_int(cfg.get("pipeline_parallel_size")) or f.pipeline_parallel_size
    f.data_parallel_size = to_int(cfg.get("data_parallel_size")) or f.data_parallel_size
    if "quantization" in cfg:
        f.quantization = none_if_null(cfg["quantization"])
    f.kv_cache_dtype = none_if_null(cfg.get("kv_cache_dtype")) or f.kv_cache_dtype
    for field in ("enforce_eager", "trust_remote_code", "enable_prefix_caching"):
        value = to_bool(cfg.get(field))
        if value is not None:
            setattr(f, field, value)
    device = cfg.get("device_config")
    if device and not f.platform:
        f.platform = device.split(":")[0]


_ARG_FIELDS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "max_model_len": ("max_model_len", int),
    "tensor_parallel_size": ("tensor_parallel_size", int),
    "pipeline_parallel_size": ("pipeline_parallel_size", int),
    "data_parallel_size": ("data_parallel_size", int),
    "gpu_memory_utilization": ("gpu_memory_utilization", float),
    "kv_cache_memory_bytes": ("kv_cache_memory_bytes_requested", int),
    "max_num_seqs": ("max_num_seqs", int),
    "max_num_batched_tokens": ("max_num_batched_tokens", int),
    "block_size": ("block_size", int),
    "port": ("port", int),
    "dtype": ("dtype", str),
    "quantization": ("quantization", str),
    "kv_cache_dtype": ("kv_cache_dtype", str),
    "enforce_eager": ("enforce_eager", bool),
    "trust_remote_code": ("trust_remote_code", bool),
    "enable_prefix_caching": ("enable_prefix_caching", bool),
    "enable_lora": ("enable_lora", bool),
    "max_loras": ("max_loras", int),
    "max_lora_rank": ("max_lora_rank", int),
    "enable_expert_parallel": ("enable_expert_parallel", bool),
    "cpu_offload_gb": ("cpu_offload_gb", float),
}


def _non_default_args(f: LogFacts, e: LogEvent) -> None:
    args = parse_python_dict(e.values.get("args", ""))
    f.non_default_args.update(args)
    _apply_args(f, args)


def _apply_args(f: LogFacts, args: dict[str, Any]) -> None:
    for key, (field, conv) in _ARG_FIELDS.items():
        if key not in args or args[key] is None:
            continue
        try:
            value = conv(args[key])
        except (TypeError, ValueError, OverflowError):
            continue
        if getattr(f, field) is None:
            setattr(f, field, value)
    model = args.get("model") or args.get("model_tag")
    if isinstance(model, str) and not f.model:
        f.model = model


def parse_namespace(text: str) -> dict[str, Any]:
    """The argparse Namespace repr of old api_server logs -> the keys we know (values that are not None)."""
    out: dict[str, Any] = {}
    for key in (*_ARG_FIELDS, "model"):
        raw = config_value(text, key)
        if raw is None or raw == "None":
            continue
        try:
            out[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            out[key] = raw
    return out


def _namespace_args(f: LogFacts, e: LogEvent) -> None:
    args = parse_namespace(e.values.get("ns", ""))
    _apply_args(f, args)


def _weights(f: LogFacts, e: LogEvent) -> None:
    f.weights_bytes = gib_to_bytes(e.values.get("gib"))
    f.weights_load_seconds = to_float(e.values.get("secs")) or f.weights_load_seconds


def _available_kv(f: LogFacts, e: LogEvent) -> None:
    f.available_kv_bytes = gib_to_bytes(e.values.get("gib"))


def _v0_split(f: LogFacts, e: LogEvent) -> None:
    v = e.values
    f.weights_bytes = f.weights_bytes or gib_to_bytes(v.get("weights"))
    f.non_torch_bytes = gib_to_bytes(v.get("non_torch"))
    f.peak_activation_bytes = gib_to_bytes(v.get("peak"))
    f.available_kv_bytes = gib_to_bytes(v.get("kv"))
    f.engine = f.engine or "V0"


def _v0_budget(f: LogFacts, e: LogEvent) -> None:
    f.gpu_total_bytes = gib_to_bytes(e.values.get("total"))
    f.gpu_memory_utilization = to_float(e.values.get("util"))


def _v0_profile(f: LogFacts, e: LogEvent) -> None:
    v = e.values
    f.gpu_total_bytes = gib_to_bytes(v.get("total"))
    f.non_torch_bytes = gib_to_bytes(v.get("non_torch"))
    f.available_kv_bytes = gib_to_bytes(v.get("kv"))
    f.gpu_memory_utilization = to_float(v.get("util"))
    f.engine = f.engine or "V0"


def _memory_summary(f: LogFacts, e: LogEvent) -> None:
    v = e.values
    f.gpu_free_bytes_at_start = gib_to_bytes(v.get("free"))
    f.gpu_total_bytes = gib_to_bytes(v.get("total"))
    f.gpu_memory_utilization = to_float(v.get("util")) or f.gpu_memory_utilization
    f.peak_activation_bytes = gib_to_bytes(v.get("peak"))
    f.graph_memory_bytes = f.graph_memory_bytes if f.graph_memory_bytes is not None else gib_to_bytes(v.get("graphs"))


def _kv_capacity(f: LogFacts, e: LogEvent) -> None:
    v = e.values
    f.kv_pool = v.get("pool", "").split(" ")[0] or f.kv_pool
    f.kv_cache_tokens = to_int(v.get("tokens"))
    if "per_req" in v:
        f.concurrency_tokens_per_request = to_int(v.get("per_req"))
        f.max_concurrency = to_float(v.get("x"))
        f.max_model_len = f.max_model_len or f.concurrency_tokens_per_request


def _max_concurrency(f: LogFacts, e: LogEvent) -> None:
    f.concurrency_tokens_per_request = to_int(e.values.get("per_req"))
    f.max_concurrency = to_float(e.values.get("x"))
    f.max_model_len = f.max_model_len or f.concurrency_tokens_per_request


def _graphs(f: LogFacts, e: LogEvent) -> None:
    f.graph_capture_seconds = to_float(e.values.get("secs"))
    if "gib" in e.values:
        f.graph_memory_bytes = gib_to_bytes(e.values.get("gib"))


def _kv_too_small(f: LogFacts, e: LogEvent) -> None:
    v = e.values
    f.max_model_len = to_int(v.get("len")) or f.max_model_len
    f.kv_needed_bytes = gib_to_bytes(v.get("needed"))
    f.available_kv_bytes = f.available_kv_bytes if f.available_kv_bytes is not None else gib_to_bytes(v.get("avail"))
    f.estimated_max_model_len = to_int(v.get("est")) or f.estimated_max_model_len


def _kv_too_small_v0(f: LogFacts, e: LogEvent) -> None:
    # also the message cut after its first figure (kv_too_small_v0_cut): a length, no token count
    f.max_model_len = to_int(e.values.get("len")) or f.max_model_len
    f.v0_max_kv_tokens = to_int(e.values.get("tokens")) or f.v0_max_kv_tokens


def _insufficient_free(f: LogFacts, e: LogEvent) -> None:
    v = e.values
    if "node" in v:  # CPU backend: host memory, not a GPU
        f.platform = f.platform or "cpu"
        f.gpu_memory_utilization = to_float(v.get("util")) or f.gpu_memory_utilization
        return
    f.gpu_free_bytes_at_start = gib_to_bytes(v.get("free"))
    f.gpu_total_bytes = gib_to_bytes(v.get("total"))
    f.gpu_memory_utilization = to_float(v.get("util")) or f.gpu_memory_utilization


def _oom(f: LogFacts, e: LogEvent) -> None:
    if "total" in e.values and f.gpu_total_bytes is None:
        f.gpu_total_bytes = size_to_bytes(e.values.get("total"), e.values.get("tunit"))


def _gen_override(f: LogFacts, e: LogEvent) -> None:
    params = e.values.get("params")
    f.generation_config_overrides = parse_python_dict(params) if params else (f.generation_config_overrides or {})


_GENERIC_ERRORS = re.compile(r"Engine core initialization failed|Engine process failed to start|EngineDeadError|SystemExit")


def _exception(f: LogFacts, e: LogEvent) -> None:
    """Keep the first specific exception: later ones are usually the engine-died wrappers."""
    msg = e.values.get("msg")
    etype = e.values.get("type", "")
    text = f"{etype}: {msg}" if msg else etype
    if f.last_error is None or (_GENERIC_ERRORS.search(f.last_error) and not _GENERIC_ERRORS.search(text)):
        f.last_error = text[:1000]
    if msg and len(f.errors) < MAX_ERRORS and e.text[:2000] not in f.errors:
        f.errors.append(e.text[:2000])


def _server_started(f: LogFacts, e: LogEvent) -> None:
    f.server_started = True
    if "url" in e.values:
        f.api_url = e.values["url"]


def _cpu_kv(f: LogFacts, e: LogEvent) -> None:
    if f.available_kv_bytes is None:
        f.available_kv_bytes = gib_to_bytes(e.values.get("gib"))


def _set(field: str, key: str, conv: Callable[[str | None], Any]) -> _Setter:
    def setter(f: LogFacts, e: LogEvent) -> None:
        value = conv(e.values.get(key))
        if value is not None:
            setattr(f, field, value)

    return setter


def _first(field: str, key: str, conv: Callable[[str | None], Any]) -> _Setter:
    def setter(f: LogFacts, e: LogEvent) -> None:
        if getattr(f, field) is None:
            value = conv(e.values.get(key))
            if value is not None:
                setattr(f, field, value)

    return setter


def _flag(field: str) -> _Setter:
    return _constant(field, True)


def _constant(field: str, value: Any) -> _Setter:
    def setter(f: LogFacts, e: LogEvent) -> None:
        setattr(f, field, value)

    return setter


def _cudagraphs_off(f: LogFacts, e: LogEvent) -> None:
    if f.enforce_eager is None:
        f.enforce_eager = True


def _identity(s: str | None) -> str | None:
    return s.strip() if s else None


SETTERS: dict[str, _Setter] = {
    "engine_config": _engine_config,
    "server_version": _first("vllm_version", "version", _identity),
    "banner_version": _first("vllm_version", "version", _identity),
    "non_default_args": _non_default_args,
    "namespace_args": _namespace_args,
    "platform": _first("platform", "platform", lambda s: s.lower() if s else None),
    "using_max_model_len": _first("max_model_len", "len", to_int),
    "auto_fit": _set("auto_fit_max_model_len", "to", to_int),
    "attention_backend": _first("attention_backend", "backend", _identity),
    "weights_loaded": _weights,
    "available_kv": _available_kv,
    "extensible_kv_disabled": lambda f, e: setattr(f, "extensible_kv_disabled", True),
    "v0_memory_split": _v0_split,
    "v0_budget": _v0_budget,
    "v0_profile_results": _v0_profile,
    "memory_summary": _memory_summary,
    "kv_capacity": _kv_capacity,
    "kv_tokens": _kv_capacity,
    "max_concurrency": _max_concurrency,
    "gpu_blocks": _set("num_gpu_blocks", "blocks", to_int),
    "graph_captured": _graphs,
    "cudagraph_profiled": _first("graph_estimate_bytes", "gib", gib_to_bytes),
    "init_engine": _set("init_engine_seconds", "secs", to_float),
    "server_started": _server_started,
    "listen": _first("port", "port", to_int),
    "kv_too_small": _kv_too_small,
    "kv_estimated_len": _first("estimated_max_model_len", "est", to_int),
    "kv_too_small_v0": _kv_too_small_v0,
    "kv_too_small_v0_cut": _kv_too_small_v0,
    "insufficient_free": _insufficient_free,
    "oom": _oom,
    "generation_config_override": _gen_override,
    "engine_failed": _flag("engine_failed"),
    "gpu_name": _first("gpu_name", "name", _identity),
    "sampler_flashinfer": _flag("sampler_flashinfer"),
    "sampler_native": _constant("sampler_flashinfer", False),
    "compile_cache_loaded": _constant("compile_cache", "warm"),
    "compile_cold": _constant("compile_cache", "cold"),
    "model_runner_v2": _flag("model_runner_v2"),
    "exception": _exception,
    "architecture": _first("architecture", "arch", _identity),
    "cpu_kv_set": _cpu_kv,
    "cudagraphs_off": _cudagraphs_off,
}


def apply_event(facts: LogFacts, event: LogEvent) -> None:
    """Update the facts with one event, in log order. A malformed value never breaks the rest of the log."""
    setter = SETTERS.get(event.kind)
    if setter is None:
        return
    try:
        setter(facts, event)
    except (ValueError, TypeError, AttributeError, OverflowError):
        pass


def finish(facts: LogFacts) -> LogFacts:
    """What follows from the whole log so far, on a copy (the running facts stay as the lines built them)."""
    out = facts.model_copy(deep=True)
    if out.kv_cache_memory_bytes_requested is not None:
        # --kv-cache-memory-bytes is used as is, without profiling (v1/worker/gpu_worker.py
        # determine_available_memory; reference §1), and it is exact where the log's GiB are rounded.
        out.available_kv_bytes = out.kv_cache_memory_bytes_requested
    if out.engine is None and out.vllm_version is not None:
        out.engine = _engine_from_version(out.vllm_version)
    if out.engine is None and out.kv_pool is not None:
        out.engine = "V1"
    return out


def facts_from_events(events: list[LogEvent]) -> LogFacts:
    facts = LogFacts()
    for event in events:
        apply_event(facts, event)
    return finish(facts)


def major_minor(version: str) -> tuple[int, int] | None:
    """(major, minor) of a printed vLLM version ("0.34.0", "0.26.1rc1.dev156+g0eec856"), None if it has none."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _engine_from_version(version: str) -> Literal["V0", "V1"] | None:
    """V1 is the default engine from 0.8.0 and the only one from 0.11.0 (seed 000; vLLM release notes)."""
    release = major_minor(version)
    if release is None:
        return None
    if release[0] > 0 or release[1] >= 11:
        return "V1"
    return None
