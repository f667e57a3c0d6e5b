"""What a startup log measured about non-KV memory, on top of the doctor's parser (doctor/logparse.py).

The doctor's `LogFacts` already holds weights, available KV, tokens, concurrency and the V0 split;
this module reads the few lines it does not keep (format strings from the vLLM source named next to
each pattern) and turns them into the four terms the planner subtracts:

    available KV = requested - weights - non_torch - activation - cudagraph       (GPU)
    available KV = requested - worker RSS ("consumed by non-kv usages")           (CPU build)

GiB figures in logs are format_gib (2 decimals), so every byte value here is exact to +-5 MiB.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Literal

from pydantic import BaseModel, Field

from vllmkit.doctor.logparse import GIB, LogFacts, ParsedLog, iter_lines

FLT = r"\d+(?:\.\d+)?"

# vllm/v1/worker/cpu_worker.py (0.30+) determine_available_memory, auto-sized KV cache:
# "Auto set (%s/%s) GiB for KV cache on node %d, with %s GiB requested memory for the worker.
#  %s GiB memory was consumed by non-kv usages."
AUTO_SET_RE = re.compile(
    rf"Auto set \((?P<kv>{FLT})/(?P<total>{FLT})\) GiB for KV cache on node \d+, with (?P<req>{FLT}) GiB "
    rf"requested memory for the worker\. (?P<consumed>{FLT}) GiB memory was consumed by non-kv usages"
)
# same file, --kv-cache-memory-bytes or VLLM_CPU_KVCACHE_SPACE: "Explicitly set (%s/%s) GiB for KV cache on node %d."
EXPLICIT_RE = re.compile(rf"Explicitly set \((?P<kv>{FLT})/(?P<total>{FLT})\) GiB for KV cache")
# vllm/v1/worker/gpu_worker.py (0.32/0.33) compile_or_warm_up_model, after graph capture
SUMMARY_RE = re.compile(
    rf"Free memory on device \((?P<free>{FLT})/(?P<total>{FLT}) GiB\) on startup\. Desired GPU memory "
    rf"utilization is \((?P<util>{FLT}), (?P<req>{FLT}) GiB\)\. Actual usage is (?P<consumed>{FLT}) GiB for "
    rf"consumed memory \(weights \+ non-torch\), (?P<peak>{FLT}) GiB for peak activation, and (?P<graphs>{FLT}) "
    rf"GiB for CUDAGraph memory\.(?:.*?Current kv cache memory in use is (?P<kv>{FLT}) GiB)?"
)
# vllm/utils/mem_utils.py MemoryProfilingResult.__repr__ (logged at INFO by V1 0.8-0.1x):
# older "... non-torch forward increase memory: C GiB; weights memory: D GiB."
# newer "... total consumed (from mem_get_info): C GiB; weights memory: D GiB."
PROFILE_RE = re.compile(
    rf"Memory profiling takes {FLT} seconds\.? Total non KV cache memory: (?P<non_kv>{FLT}) ?GiB; torch peak memory "
    rf"increase: (?P<peak>{FLT}) ?GiB; (?:non-torch forward increase memory: (?P<non_torch>-?{FLT}) ?GiB|"
    rf"total consumed \(from mem_get_info\): (?P<consumed>{FLT}) ?GiB); weights memory: (?P<weights>{FLT}) ?GiB"
)
# gpu_worker.py (0.2x+): "CUDA graph pool memory: %s GiB (actual), %s GiB (estimated), difference: ..."
CG_ESTIMATE_RE = re.compile(rf"CUDA graph pool memory: (?P<actual>{FLT}) GiB \(actual\), (?P<est>{FLT}) GiB \(estimated\)")
# V0 0.6.4 worker.py: "Memory profiling results: total_gpu_memory=..GiB initial_memory_usage=..GiB
# peak_torch_memory=40.87GiB ... non_torch_memory=4.09GiB kv_cache_size=0.39GiB gpu_memory_utilization=0.95"
V0_RESULTS_RE = re.compile(
    rf"Memory profiling results: total_gpu_memory=(?P<total>{FLT})GiB.*?peak_torch_memory=(?P<peak>{FLT})GiB"
    rf".*?non_torch_memory=(?P<non_torch>-?{FLT})GiB\s+kv_cache_size=(?P<kv>-?{FLT})GiB\s+gpu_memory_utilization=(?P<util>{FLT})"
)
# V0 0.7/0.8 worker.py: "the current vLLM instance can use total_gpu_memory (79.33GiB) x gpu_memory_utilization (0.90) = 71.39GiB"
V0_BUDGET_RE = re.compile(rf"total_gpu_memory \((?P<total>{FLT})GiB\) x gpu_memory_utilization \((?P<util>{FLT})\) = (?P<req>{FLT})GiB")
# V1 GPU with --kv-cache-memory-bytes: "... reserved %s GiB memory for KV Cache as specified by kv_cache_memory_bytes config ..."
GPU_KV_FIXED_RE = re.compile(rf"reserved (?P<kv>{FLT}) GiB memory for KV Cache as specified by kv_cache_memory_bytes")
# a command line quoted in the log / issue: "vllm serve MODEL --flag ..." or "... api_server --model MODEL ..."
COMMAND_RE = re.compile(r"(?:^|[\s$#>])(?:vllm serve|vllm\.entrypoints\.openai\.api_server|-m vllm\.entrypoints\.\S+)\s+(?P<rest>.+)$")


def _gib(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return round(float(value) * GIB)
    except ValueError:
        return None


class CommandLine(BaseModel):
    """Flags from a `vllm serve ...` line quoted in the log (fills gaps only; the engine's own lines win)."""

    model: str | None = None
    flags: dict[str, Any] = Field(default_factory=dict)


_FLAG_NAMES = {
    "tensor-parallel-size": ("tensor_parallel_size", int), "tp": ("tensor_parallel_size", int),
    "pipeline-parallel-size": ("pipeline_parallel_size", int), "pp": ("pipeline_parallel_size", int),
    "max-model-len": ("max_model_len", str), "gpu-memory-utilization": ("gpu_memory_utilization", float),
    "kv-cache-dtype": ("kv_cache_dtype", str), "quantization": ("quantization", str), "q": ("quantization", str),
    "dtype": ("dtype", str), "max-num-batched-tokens": ("max_num_batched_tokens", int),
    "max-num-seqs": ("max_num_seqs", int), "block-size": ("block_size", int),
    "kv-cache-memory-bytes": ("kv_cache_memory_bytes", str), "kv-cache-memory": ("kv_cache_memory_bytes", str),
    "enforce-eager": ("enforce_eager", bool), "model": ("model", str),
}


def parse_command(text: str) -> CommandLine:
    out = CommandLine()
    for line in text.splitlines():
        m = COMMAND_RE.search(line.strip())
        if not m:
            continue
        try:
            tokens = shlex.split(m.group("rest"), comments=False)
        except ValueError:
            tokens = m.group("rest").split()
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.startswith("-"):
                name, _, inline = tok.lstrip("-").partition("=")
                key = _FLAG_NAMES.get(name.replace("_", "-"))
                if key is None:
                    i += 1
                    continue
                field, conv = key
                if conv is bool:
                    out.flags.setdefault(field, True)
                    i += 1
                    continue
                value = inline if inline else (tokens[i + 1] if i + 1 < len(tokens) else None)
                i += 1 if inline else 2
                if value is None:
                    continue
                try:
                    converted = conv(value)
                except ValueError:
                    continue
                if field == "model":
                    out.model = out.model or str(converted)
                else:
                    out.flags.setdefault(field, converted)
            else:
                # the positional model (vllm serve MODEL); bare numbers are values of flags we skip
                if out.model is None and tok not in ("\\",) and not re.fullmatch(r"[\d.]+", tok):
                    out.model = tok
                i += 1
        if out.model or out.flags:
            break
    return out


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


def _first(rx: re.Pattern[str], messages: list[str]) -> re.Match[str] | None:
    for msg in messages:
        m = rx.search(msg)
        if m:
            return m
    return None


def measure(parsed: ParsedLog, text: str) -> Measurement:
    """Measured terms from the log alone (the derived lump needs the plan: see `derive_lump`)."""
    facts = parsed.facts
    messages = [line.message for line in iter_lines(text)]
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
    _device(m, facts, messages)
    if m.device == "cpu":
        _cpu(m, messages)
    else:
        _gpu(m, facts, messages)
    _tokens(m, facts)
    return m


def _device(m: Measurement, facts: LogFacts, messages: list[str]) -> None:
    cpu_lines = _first(AUTO_SET_RE, messages) or _first(EXPLICIT_RE, messages)
    if facts.platform == "cpu" or facts.kv_pool == "CPU" or cpu_lines is not None:
        m.device = "cpu"
    elif facts.platform in ("cuda", "rocm") or facts.kv_pool == "GPU" or facts.weights_bytes is not None:
        m.device = "gpu"


def _cpu(m: Measurement, messages: list[str]) -> None:
    auto = _first(AUTO_SET_RE, messages)
    if auto:
        m.available_kv_bytes = _gib(auto.group("kv"))
        m.total_bytes = _gib(auto.group("total"))
        m.requested_bytes = _gib(auto.group("req"))
        m.cpu_non_kv_bytes = _gib(auto.group("consumed"))
        m.basis = "CPU worker 'Auto set ... GiB memory was consumed by non-kv usages' line"
        m.kv_fixed = False
        return
    explicit = _first(EXPLICIT_RE, messages)
    if explicit:
        m.kv_fixed = True
        m.total_bytes = _gib(explicit.group("total"))
        m.kv_fixed_bytes = _gib(explicit.group("kv"))
        if m.available_kv_bytes is None:
            m.available_kv_bytes = m.kv_fixed_bytes
        m.notes.append("the KV size was set explicitly (--kv-cache-memory-bytes / VLLM_CPU_KVCACHE_SPACE): "
                       "vLLM did not measure its non-KV memory")


def _gpu(m: Measurement, facts: LogFacts, messages: list[str]) -> None:
    fixed = _first(GPU_KV_FIXED_RE, messages)
    if fixed:
        m.kv_fixed = True
        m.kv_fixed_bytes = _gib(fixed.group("kv"))
        if m.available_kv_bytes is None:
            m.available_kv_bytes = m.kv_fixed_bytes
    budget = _first(V0_BUDGET_RE, messages)
    if budget:
        m.requested_bytes = _gib(budget.group("req"))
        m.total_bytes = m.total_bytes or _gib(budget.group("total"))
    estimate = _first(CG_ESTIMATE_RE, messages)
    cg_estimate = _gib(estimate.group("est")) if estimate else None
    summary = _first(SUMMARY_RE, messages)
    profile = _first(PROFILE_RE, messages)
    v0_results = _first(V0_RESULTS_RE, messages)
    if summary:
        # 0.32/0.33: available = requested - consumed - peak, where consumed = weights + non-torch and
        # peak = profile-run headroom + the CUDA-graph *estimate* (applied by default); the printed
        # CUDAGraph figure is the actual capture, so the estimate line (when present) is preferred.
        consumed = _gib(summary.group("consumed")) or 0
        peak = _gib(summary.group("peak")) or 0
        graphs = _gib(summary.group("graphs")) or 0
        m.total_bytes = _gib(summary.group("total"))
        m.requested_bytes = _gib(summary.group("req"))
        m.gpu_memory_utilization = float(summary.group("util"))
        if summary.group("kv") and m.available_kv_bytes is None:
            m.available_kv_bytes = _gib(summary.group("kv"))
        if m.weights_bytes is not None:
            m.non_torch_bytes = max(consumed - m.weights_bytes, 0)
        else:
            m.notes.append("consumed memory (weights + non-torch) is printed but not the weights; "
                           "non-torch taken as consumed - predicted weights")
        if facts.enforce_eager:
            cudagraph = 0
        elif cg_estimate is not None:
            cudagraph = cg_estimate
        else:
            cudagraph = graphs
        m.cudagraph_bytes = cudagraph
        m.activation_bytes = max(peak - cudagraph, 0)
        m.basis = "0.32+ 'Actual usage is X GiB for consumed memory ..., Y GiB for peak activation, Z GiB for CUDAGraph' line"
        return
    if profile:
        weights = _gib(profile.group("weights")) or 0
        non_kv = _gib(profile.group("non_kv")) or 0
        if profile.group("non_torch") is not None:
            non_torch = _gib(profile.group("non_torch")) or 0
        else:
            non_torch = max((_gib(profile.group("consumed")) or 0) - weights, 0)
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
            m.activation_bytes = max((_gib(v0_results.group("peak")) or 0) - m.weights_bytes, 0)
            m.basis = "V0 'Memory profiling results: ... peak_torch_memory ... non_torch_memory' line"
        else:
            m.basis = "V0 memory profiling line (non-torch only)"
        if v0_results:
            m.total_bytes = m.total_bytes or _gib(v0_results.group("total"))
            m.gpu_memory_utilization = m.gpu_memory_utilization or float(v0_results.group("util"))


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
    """0.32+ summary without a weights line: non-torch = consumed - predicted weights."""
    if m.device != "gpu" or m.non_torch_bytes is not None or predicted_weights is None:
        return
    messages = [line.message for line in iter_lines(text)]
    summary = _first(SUMMARY_RE, messages)
    if summary is None:
        return
    consumed = _gib(summary.group("consumed")) or 0
    m.non_torch_bytes = max(consumed - predicted_weights, 0)
