"""What a startup log measured about non-KV memory, from the log reader's facts and events (vllmkit.logs).

The reader's `LogFacts` holds weights, available KV, tokens, concurrency and the V0 split; the
first event of a few more kinds (each pattern names the vLLM source that prints it: logs/patterns.py)
gives the four terms the planner subtracts:

    available KV = requested - weights - non_torch - activation - cudagraph       (GPU)
    available KV = requested - worker RSS ("consumed by non-kv usages")           (CPU build)

GiB figures in logs are format_gib (2 decimals), so every byte value here is exact to +-5 MiB.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from vllmkit.logs import LogEvent, LogFacts, ParsedLog
from vllmkit.units import GIB


def _gib(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return round(float(value) * GIB)
    except ValueError:
        return None


def _auto_set(v: dict[str, Any]) -> bool:
    """CPU 'Auto set (...) GiB for KV cache ... consumed by non-kv usages' (the full line)."""
    return v.get("how") == "Auto" and "consumed" in v


def _explicit_set(v: dict[str, Any]) -> bool:
    return v.get("how") == "Explicitly"


def _v0_results(v: dict[str, Any]) -> bool:
    """V0 0.6.4 'Memory profiling results: ...' with its peak_torch_memory part."""
    return "peak_torch" in v


def _budget(v: dict[str, Any]) -> bool:
    return "req" in v


def _version_key(text: str | None) -> tuple[int, int, int] | None:
    if not text:
        return None
    from vllmkit.engine.versions import parse_version

    try:
        return parse_version(text)
    except ValueError:
        return None


def _g(event: LogEvent | None, key: str) -> str | None:
    return None if event is None else event.values.get(key)


class Measurement(BaseModel):
    """Non-KV memory and capacity as a startup log shows them. None = not in the log."""

    device: Literal["gpu", "cpu"] | None = None
    weights_bytes: int | None = None
    non_torch_bytes: int | None = None
    activation_bytes: int | None = None
    cudagraph_bytes: int | None = None
    cpu_non_kv_bytes: int | None = None  # CPU build: worker RSS besides the KV cache (weights included)
    available_kv_bytes: int | None = None
    kv_tokens: int | None = None
    kv_tokens_note: str | None = None
    max_concurrency: float | None = None
    concurrency_tokens_per_request: int | None = None
    total_bytes: int | None = None  # device memory as vLLM saw it (CPU: NUMA node total)
    requested_bytes: int | None = None
    gpu_memory_utilization: float | None = None
    kv_fixed: bool = False  # KV size given by --kv-cache-memory-bytes / VLLM_CPU_KVCACHE_SPACE (no profiling)
    kv_fixed_bytes: int | None = None  # from the log line (2-decimal GiB) when the exact flag is not shown
    basis: str | None = None  # which log lines the non-KV split came from
    lump: bool = False
    notes: list[str] = Field(default_factory=list)

    def has_startup_facts(self) -> bool:
        return any(v is not None for v in (self.weights_bytes, self.non_torch_bytes, self.activation_bytes,
                                           self.cpu_non_kv_bytes, self.available_kv_bytes, self.kv_tokens,
                                           self.max_concurrency))

    def has_split(self) -> bool:
        return self.non_torch_bytes is not None or self.cpu_non_kv_bytes is not None


def measure(parsed: ParsedLog, text: str = "") -> Measurement:
    """Measured terms from the log alone (the derived lump needs the plan: see `derive_lump`).
    `text` is unused (kept for callers that pass it): everything comes from `parsed`."""
    facts = parsed.facts
    m = Measurement(
        weights_bytes=facts.weights_bytes,
        available_kv_bytes=facts.available_kv_bytes,
        kv_tokens=facts.kv_cache_tokens,
        max_concurrency=facts.max_concurrency,
        concurrency_tokens_per_request=facts.concurrency_tokens_per_request,
        total_bytes=facts.gpu_total_bytes,
        gpu_memory_utilization=facts.gpu_memory_utilization,
        kv_fixed=facts.kv_cache_memory_bytes_requested is not None,
    )
    _device(m, parsed)
    if m.device == "cpu":
        _cpu(m, parsed)
    else:
        _gpu(m, parsed)
    _tokens(m, facts)
    return m


def _device(m: Measurement, parsed: ParsedLog) -> None:
    facts = parsed.facts
    cpu_lines = parsed.first("cpu_kv_set", _auto_set) or parsed.first("cpu_kv_set", _explicit_set)
    if facts.platform == "cpu" or facts.kv_pool == "CPU" or cpu_lines is not None:
        m.device = "cpu"
    elif facts.platform in ("cuda", "rocm") or facts.kv_pool == "GPU" or facts.weights_bytes is not None:
        m.device = "gpu"


def _cpu(m: Measurement, parsed: ParsedLog) -> None:
    auto = parsed.first("cpu_kv_set", _auto_set)
    if auto:
        m.available_kv_bytes = _gib(_g(auto, "gib"))
        m.total_bytes = _gib(_g(auto, "total"))
        m.requested_bytes = _gib(_g(auto, "req"))
        m.cpu_non_kv_bytes = _gib(_g(auto, "consumed"))
        m.basis = "CPU worker 'Auto set ... GiB memory was consumed by non-kv usages' line"
        m.kv_fixed = False
        return
    explicit = parsed.first("cpu_kv_set", _explicit_set)
    if explicit:
        m.kv_fixed = True
        m.total_bytes = _gib(_g(explicit, "total"))
        m.kv_fixed_bytes = _gib(_g(explicit, "gib"))
        if m.available_kv_bytes is None:
            m.available_kv_bytes = m.kv_fixed_bytes
        m.notes.append("the KV size was set explicitly (--kv-cache-memory-bytes / VLLM_CPU_KVCACHE_SPACE): "
                       "vLLM did not measure its non-KV memory")


def _gpu(m: Measurement, parsed: ParsedLog) -> None:
    facts = parsed.facts
    if facts.extensible_kv_cache:
        # v1/worker/gpu_worker.py (0.34): with the extensible KV cache, "Available KV cache memory" and the closing
        # summary print the reserved capacity (address space), and the driver-allocated cache counts as non-torch
        # memory there; the size is set after warm-up and shows in the token count only
        m.available_kv_bytes = None
        m.notes.append("vLLM 0.34's extensible KV cache: the log's KV figures are its reserved capacity, not its "
                       "size; only the weights and the KV token count are read")
        return
    fixed = parsed.first("kv_reserved")
    if fixed:
        m.kv_fixed = True
        m.kv_fixed_bytes = _gib(_g(fixed, "gib"))
        if m.available_kv_bytes is None:
            m.available_kv_bytes = m.kv_fixed_bytes
    budget = parsed.first("v0_budget", _budget)
    if budget:
        m.requested_bytes = _gib(_g(budget, "req"))
        m.total_bytes = m.total_bytes or _gib(_g(budget, "total"))
    estimate = parsed.first("cudagraph_estimate")
    cg_estimate = _gib(_g(estimate, "est")) if estimate else None
    if cg_estimate is None and facts.graph_estimate_bytes is not None:
        # "Estimated CUDA graph memory: X GiB total" (gpu_model_runner.py profile_cudagraph_memory): what the budget
        # took from 0.20 (0.19 prints it without taking it)
        key = _version_key(facts.vllm_version)
        if key is not None and key >= (0, 20, 0):
            cg_estimate = facts.graph_estimate_bytes
    summary = parsed.first("memory_summary")
    profile = parsed.first("v1_profile")
    v0_results = parsed.first("v0_profile_results", _v0_results)
    if summary:
        # 0.32/0.33: available = requested - consumed - peak, where consumed = weights + non-torch and
        # peak = profile-run headroom + the CUDA-graph *estimate* (applied by default); the printed
        # CUDAGraph figure is the actual capture, so the estimate line (when present) is preferred.
        consumed = _gib(_g(summary, "consumed")) or 0
        peak = _gib(_g(summary, "peak")) or 0
        graphs = _gib(_g(summary, "graphs")) or 0
        m.total_bytes = _gib(_g(summary, "total"))
        m.requested_bytes = _gib(_g(summary, "req"))
        m.gpu_memory_utilization = float(summary.values["util"])
        if _g(summary, "kv") and m.available_kv_bytes is None:
            m.available_kv_bytes = _gib(_g(summary, "kv"))
        if m.weights_bytes is not None:
            m.non_torch_bytes = max(consumed - m.weights_bytes, 0)
        else:
            m.notes.append("consumed memory (weights + non-torch) is printed but not the weights; "
                           "non-torch taken as consumed - predicted weights")
        version = _version_key(facts.vllm_version)
        kv = m.available_kv_bytes
        requested = m.requested_bytes
        if version is not None and version < (0, 26, 1) and not facts.enforce_eager and kv and requested:
            # before 0.27 (through 0.26.0: the 0.26.1rc1 dev builds of main print 0.27's summary, as a public
            # 0.26.1rc1.dev156 log adds up) the printed peak is the torch peak alone (gpu_worker.py peak_activation_memory) and
            # available = requested - consumed - peak - the applied graph estimate, so the line itself says
            # how much graph memory the budget carried: none on Model Runner V2 (engine/versions.py), whose
            # printed CUDAGraph figure is then the capture made after the KV sizing
            implied = requested - consumed - peak - kv
            m.cudagraph_bytes = implied if implied > int(0.03 * (1 << 30)) else 0  # the line rounds to 0.01
            m.activation_bytes = peak
        else:
            if facts.enforce_eager or (facts.model_runner_v2 and version is not None and version < (0, 29, 0)):
                cudagraph = 0  # Model Runner V2 estimates no graph memory before 0.29
            elif cg_estimate is not None:
                cudagraph = cg_estimate
            else:
                cudagraph = graphs
            m.cudagraph_bytes = cudagraph
            # from 0.27 the printed peak is the profile's transient peak plus the applied graph estimate
            # (gpu_worker.py in the 0.27.1 and 0.28 wheels; the torch peak alone in 0.26)
            m.activation_bytes = max(peak - cudagraph, 0)
        m.basis = "'Actual usage is X GiB for consumed memory ..., Y GiB for peak activation, Z GiB for CUDAGraph' line"
        return
    if profile:
        weights = _gib(_g(profile, "weights")) or 0
        non_kv = _gib(_g(profile, "non_kv")) or 0
        if _g(profile, "non_torch") is not None:
            non_torch = _gib(_g(profile, "non_torch")) or 0
        else:
            non_torch = max((_gib(_g(profile, "consumed")) or 0) - weights, 0)
        m.weights_bytes = m.weights_bytes or weights
        m.non_torch_bytes = max(non_torch, 0)
        m.activation_bytes = max(non_kv - weights - non_torch, 0)
        m.cudagraph_bytes = cg_estimate if cg_estimate is not None and not facts.enforce_eager else None
        m.basis = "V1 'Memory profiling takes ... Total non KV cache memory ...' line"
        return
    if facts.non_torch_bytes is not None:
        m.non_torch_bytes = max(facts.non_torch_bytes, 0)
        m.cudagraph_bytes = 0  # V0 does not count CUDA-graph memory (reference §1)
        if facts.peak_activation_bytes is not None:
            m.activation_bytes = facts.peak_activation_bytes
            m.basis = "V0 'model weights take ...; non_torch_memory takes ...; PyTorch activation peak memory takes ...' line"
        elif v0_results and m.weights_bytes is not None:
            # 0.6.4: available = total * util - peak_torch - non_torch; peak_torch includes the weights
            m.activation_bytes = max((_gib(_g(v0_results, "peak_torch")) or 0) - m.weights_bytes, 0)
            m.basis = "V0 'Memory profiling results: ... peak_torch_memory ... non_torch_memory' line"
        else:
            m.basis = "V0 memory profiling line (non-torch only)"
        if v0_results:
            m.total_bytes = m.total_bytes or _gib(_g(v0_results, "total"))
            m.gpu_memory_utilization = m.gpu_memory_utilization or float(v0_results.values["util"])


def _tokens(m: Measurement, facts: LogFacts) -> None:
    if m.kv_tokens is not None:
        return
    if facts.v0_max_kv_tokens is not None:
        m.kv_tokens = facts.v0_max_kv_tokens
        m.kv_tokens_note = "from 'the maximum number of tokens that can be stored in KV cache (N)'"
    elif facts.num_gpu_blocks is not None and facts.kv_pool is None:
        block = facts.block_size or 16
        m.kv_tokens = facts.num_gpu_blocks * block
        m.kv_tokens_note = (f"'# GPU blocks: {facts.num_gpu_blocks:,}' x block size {block}"
                            + ("" if facts.block_size else " (vLLM's GPU default, assumed)"))


def derive_lump(m: Measurement, *, requested_bytes: int | None, weights_bytes: int | None, enforce_eager: bool) -> None:
    """No split in the log: non-KV = requested - weights - available KV, attributed as a lump to
    non_torch (activation and CUDA graphs then count as 0, so the sum still reproduces vLLM's KV)."""
    if m.device != "gpu" or m.has_split() or m.kv_fixed or m.available_kv_bytes is None:
        return
    requested = m.requested_bytes if m.requested_bytes is not None else requested_bytes
    weights = m.weights_bytes if m.weights_bytes is not None else weights_bytes
    if requested is None or weights is None:
        return
    m.non_torch_bytes = max(requested - weights - m.available_kv_bytes, 0)
    m.activation_bytes = 0
    m.cudagraph_bytes = None if enforce_eager else 0
    m.lump = True
    m.basis = ("derived: requested - weights - available KV (the log has no split of the non-KV memory; "
               "attributed as a lump to non-torch)")
    if m.requested_bytes is None:
        m.notes.append("requested memory taken from the plan (GPU profile x utilization), not from the log")
    if m.weights_bytes is None:
        m.notes.append("weights taken from the plan, not from the log")


def complete_with_weights(m: Measurement, text: str, parsed: ParsedLog, predicted_weights: int | None) -> None:
    """0.32+ summary without a weights line: non-torch = consumed - predicted weights. (`text` unused.)"""
    if m.device != "gpu" or m.non_torch_bytes is not None or predicted_weights is None:
        return
    summary = parsed.first("memory_summary")
    if summary is None:
        return
    consumed = _gib(_g(summary, "consumed")) or 0
    m.non_torch_bytes = max(consumed - predicted_weights, 0)
