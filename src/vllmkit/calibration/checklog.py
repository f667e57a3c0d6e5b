"""`vllmkit check-log`: a real startup log against the plan for the same run; `--record` and the
`vllmkit serve` hook turn the log's measured non-KV memory into a calibration record.

Inputs of the plan come from, in order: explicit flags, the log's own lines (engine config line,
"non-default args", capacity lines, CPU "Auto/Explicitly set" lines), a `vllm serve ...` command
quoted in the log, then defaults. Defaults are reported: `defaults` when the log proves vLLM used its
default (a "non-default args" line lists every flag that was set), `assumed` when the log cannot tell.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from vllmkit.calibration.measure import Measurement, complete_with_weights, derive_lump, measure
from vllmkit.calibration.store import CalibrationRecord, add_records, make_record_id, now_iso, store_path
from vllmkit.engine.versions import parse_version, resolve_version, rules_for, untagged_build
from vllmkit.errors import CheckFailedError, ModelSourceError, UsageError, VllmkitError
from vllmkit.files import FileProblem, read_text
from vllmkit.logs import MAX_LOG_BYTES, ParsedLog, parse_command, parse_config_line, read_log
from vllmkit.plan.models import PlanOverrides, PlanRequest, PlanResult

_COMMENTED = re.compile(r"^[ \t]*#+ ?", re.MULTILINE)
DEFAULT_GPU = "h100"  # only when neither the flags nor the log name a GPU (listed in `assumed`)
QUANTITIES = ("weights", "non_torch", "activation", "cudagraph", "overhead", "cpu_non_kv", "available_kv",
              "kv_tokens", "max_concurrency")
NO_FACTS_HINT = ("check-log reads vLLM startup logs: lines such as 'Initializing a V1 LLM engine (v…) with config: …', "
                 "'Model loading took … GiB', 'Available KV cache memory: … GiB' or '… KV cache size: N tokens'")


# the planning flags of check-log (None = take it from the log, then a default)
CheckLogInputs = PlanOverrides


class Quantities(BaseModel):
    """Per GPU (tightest rank); bytes, tokens, and concurrency (x)."""

    weights: int | None = None
    non_torch: int | None = None
    activation: int | None = None
    cudagraph: int | None = None
    overhead: int | None = None  # GPU: non_torch + activation + cudagraph (all the non-KV memory besides weights)
    cpu_non_kv: int | None = None  # CPU build: worker RSS besides the KV cache (weights included)
    available_kv: int | None = None
    kv_tokens: int | None = None
    max_concurrency: float | None = None


class RecordOutcome(BaseModel):
    recorded: bool
    record_id: str | None = None
    duplicate: bool = False
    store: str | None = None
    terms: dict[str, int] = Field(default_factory=dict)
    reason: str | None = None


class CheckLogResult(BaseModel):
    log: str
    model: str | None = None
    family: str | None = None
    gpu: str | None = None
    gpu_display_name: str | None = None
    device: str
    vllm_version: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    predicted: Quantities
    measured: Quantities
    errors_pct: dict[str, float | None] = Field(default_factory=dict)
    assumed: list[str] = Field(default_factory=list)
    assumptions: dict[str, str] = Field(default_factory=dict)
    defaults: list[str] = Field(default_factory=list)
    basis: str | None = None
    notes: list[str] = Field(default_factory=list)
    calibration: str | None = None  # provenance of calibrated terms used in the prediction
    record: RecordOutcome | None = None


# ----------------------------------------------------------------------------- reading


def read_log_file(path: Path) -> str:
    """The log's text; of a log over MAX_LOG_BYTES its start (the startup facts are there)."""
    try:
        return read_text(path, max_bytes=MAX_LOG_BYTES, over="head", replace=True)
    except FileProblem as exc:
        code = {"missing": "log-not-found", "folder": "log-not-file", "device": "log-not-file"}.get(exc.kind,
                                                                                                   "log-unreadable")
        hint = {"missing": "pass the path of a vLLM log (e.g. a run's vllm.log)", "folder": "pass the log file itself",
                "device": "pass a saved log (e.g. from `vllm serve ... 2>&1 | tee vllm.log`)"}.get(
                    exc.kind, "check the path and its permissions")
        message = f"no such log file: {path}" if exc.kind == "missing" else exc.message
        raise UsageError(message, hint, code=code) from None


def _normalize_version(text: str | None) -> str | None:
    if not text:
        return None
    try:
        return ".".join(str(x) for x in parse_version(text))
    except ValueError:
        return None


class _Picker:
    """Takes each input from flags > log > quoted command > default, remembering what was assumed."""

    def __init__(self, *, args_line: bool, config_keys: set[str]) -> None:
        self.args_line = args_line
        self.config_keys = config_keys  # keys the engine config line really printed (it may be truncated)
        self.assumed: dict[str, str] = {}
        self.defaults: list[str] = []

    @property
    def config_line(self) -> bool:
        return bool(self.config_keys)

    def pick(self, name: str, flag: Any, log: Any, command: Any, default: Any, why: str, *,
             known_from: str = "args") -> Any:
        """known_from: "args" (a non-default args line proves a default) or a config-line key."""
        for value in (flag, log, command):
            if value is not None:
                return value
        known = (known_from == "args" and self.args_line) or known_from in self.config_keys
        if known:
            self.defaults.append(name)
        else:
            self.assumed[name] = why if default is None else f"{default} ({why})"
        return default


def _int_or_none(value: Any) -> int | None:
    try:
        return int(str(value).replace(",", "").replace("_", ""))
    except (TypeError, ValueError):
        return None


def _model_spec(flag: str | None, log_model: str | None, notes: list[str], picker: _Picker) -> str | None:
    if flag:
        return flag
    if not log_model:
        picker.assumed["model"] = "unknown (the log does not name the model; pass --model)"
        return None
    path = Path(log_model).expanduser()
    looks_like_path = log_model.startswith(("/", "./", "../", "~")) or path.exists()
    if looks_like_path and not path.exists():
        parts = [p for p in Path(log_model).parts if p not in ("/", "")]
        if len(parts) >= 2:
            hub_id = "/".join(parts[-2:])
            picker.assumed["model"] = f"{hub_id} (the log's folder {log_model} is not on this machine; its last two parts read as a hub id)"
            notes.append(f"model folder {log_model} not found here; planned {hub_id} instead")
            return hub_id
        picker.assumed["model"] = f"unknown (the log's folder {log_model} is not on this machine; pass --model)"
        return None
    return log_model


# PlanOverrides fields build_request does not read from the log: a given flag goes into the plan as it is
_PASSED_THROUGH = frozenset({
    "refresh", "gpu_count", "tools", "reasoning", "limit_mm_per_prompt", "limit_mm_options", "language_model_only",
    "enable_lora", "max_loras", "max_lora_rank", "max_cpu_loras", "speculative_config", "data_parallel_size",
    "enable_expert_parallel", "flashinfer_installed", "compile_cache",
})


# PlanRequest fields the log's non-default args (or Namespace) and engine config line hold, when not given as flags
_FROM_LOG_ARGS = ("enable_lora", "max_loras", "max_lora_rank", "data_parallel_size", "enable_expert_parallel",
                  "cpu_offload_gb")


def build_request(parsed: ParsedLog, m: Measurement, text: str, inputs: CheckLogInputs, env: Mapping[str, str],
                  notes: list[str]) -> tuple[PlanRequest | None, _Picker]:
    facts = parsed.facts
    cmd = parse_command(text)
    flags = cmd.flags
    config_keys: set[str] = set()
    for event in parsed.events:
        if event.kind == "engine_config":
            config_keys |= set(parse_config_line(event.values.get("config", "")))
    picker = _Picker(args_line=bool(facts.non_default_args), config_keys=config_keys)

    model = _model_spec(inputs.model, facts.model or cmd.model, notes, picker)

    # device and GPU; an explicit --gpu must name a profile (HardwareError, exit 5, like `plan`)
    gpu_runtime = _runtime_of(inputs.gpu, env) if inputs.gpu and inputs.gpu.lower() != "cpu" else None
    if inputs.device:
        device = inputs.device
    elif m.device == "cpu":
        device = "cpu"
    elif facts.platform in ("cuda", "rocm"):
        device = facts.platform
    elif gpu_runtime is not None:
        device = gpu_runtime  # the GPU named by --gpu says CUDA or ROCm
    elif any(e.kind == "amd_hint" for e in parsed.events):
        device = "rocm"
        picker.assumed["device"] = "rocm (the log mentions ROCm/AMD but not the platform)"
    else:
        device = "cuda"
        picker.assumed["device"] = "cuda (the log does not name the platform)"
    gpu, gpu_memory = inputs.gpu, inputs.gpu_memory
    kv_bytes = inputs.kv_cache_memory_bytes or facts.kv_cache_memory_bytes_requested
    if kv_bytes is None and flags.get("kv_cache_memory_bytes") is not None:
        kv_bytes = _int_or_none(flags["kv_cache_memory_bytes"])
    if kv_bytes is None and m.kv_fixed and m.kv_fixed_bytes is not None:
        kv_bytes = m.kv_fixed_bytes
        notes.append("KV size from the log's 'Explicitly set / reserved X GiB' line (2-decimal GiB; exact for "
                     "VLLM_CPU_KVCACHE_SPACE's whole GiB)")
    if device == "cpu":
        gpu = None
        if gpu_memory is None and m.total_bytes is not None:
            gpu_memory = m.total_bytes
            notes.append("host memory: the node total the CPU worker printed (2-decimal GiB)")
        elif gpu_memory is None and kv_bytes is None:
            picker.assumed["gpu_memory"] = "this host's RAM (the log does not print the node total)"
    elif gpu is None:
        gpu = _gpu_from_log(facts.gpu_name, env, notes)
        if gpu is None and gpu_memory is None and m.total_bytes is not None:
            gpu_memory = m.total_bytes
            picker.assumed["gpu"] = "custom profile with the log's total memory (the log does not name the GPU)"
        elif gpu is None and gpu_memory is None:
            gpu = DEFAULT_GPU
            picker.assumed["gpu"] = f"{DEFAULT_GPU} (the log does not name the GPU; pass --gpu)"

    version = inputs.vllm_version or _normalize_version(facts.vllm_version)
    if version is not None and not inputs.vllm_version and untagged_build(facts.vllm_version or ""):
        picker.assumed["vllm_version"] = (f"{version}: the log's vLLM {facts.vllm_version} is a source build without "
                                          "release tags; its rules are the newest known release's (pass --vllm-version)")
    if version is None:
        version = resolve_version(None, env)[0]
        picker.assumed["vllm_version"] = f"{version} (the log does not print a vLLM version)"
    rules = rules_for(version)

    tp = picker.pick("tensor_parallel_size", inputs.tensor_parallel_size, facts.tensor_parallel_size,
                     flags.get("tensor_parallel_size"), 1, "single GPU", known_from="tensor_parallel_size")
    pp = picker.pick("pipeline_parallel_size", inputs.pipeline_parallel_size, facts.pipeline_parallel_size,
                     flags.get("pipeline_parallel_size"), 1, "no pipeline parallelism",
                     known_from="pipeline_parallel_size")
    max_len = picker.pick("max_model_len", inputs.max_model_len, facts.max_model_len,
                          _int_or_none(flags.get("max_model_len")), None, "the model's native context length",
                          known_from="max_seq_len")
    dtype = picker.pick("dtype", inputs.dtype, facts.dtype, flags.get("dtype"), "auto",
                        "the checkpoint's dtype", known_from="dtype")
    if inputs.quantization is not None:
        quant = inputs.quantization
    elif facts.quantization is not None or "quantization" in picker.config_keys:
        quant = facts.quantization  # the engine config line prints quantization=None for none
    else:
        quant = flags.get("quantization")
        if quant is None and not picker.args_line:
            picker.assumed["quantization"] = "none beyond the checkpoint's own (the log does not show it)"
    kv_dtype = picker.pick("kv_cache_dtype", inputs.kv_cache_dtype, facts.kv_cache_dtype, flags.get("kv_cache_dtype"),
                           "auto", "model dtype", known_from="kv_cache_dtype")
    eager = picker.pick("enforce_eager", inputs.enforce_eager, facts.enforce_eager, flags.get("enforce_eager"), False,
                        "CUDA graphs on", known_from="enforce_eager")
    if kv_bytes is None:
        util = picker.pick("gpu_memory_utilization", inputs.gpu_memory_utilization,
                           facts.gpu_memory_utilization or m.gpu_memory_utilization,
                           flags.get("gpu_memory_utilization"), rules.gpu_memory_utilization,
                           f"vLLM {rules.version} default")
    else:
        util = inputs.gpu_memory_utilization or facts.gpu_memory_utilization
    mnbt = picker.pick("max_num_batched_tokens", inputs.max_num_batched_tokens, facts.max_num_batched_tokens,
                       flags.get("max_num_batched_tokens"), None, "vLLM's default for this GPU")
    seqs = picker.pick("max_num_seqs", inputs.max_num_seqs, facts.max_num_seqs, flags.get("max_num_seqs"), None,
                       "vLLM's default for this GPU")
    block = inputs.block_size or facts.block_size or flags.get("block_size")

    if (device == "cpu" and gpu_memory is not None and gpu_memory == m.total_bytes and util
            and m.requested_bytes is not None):
        gpu_memory = cpu_sized_total(m.total_bytes, m.requested_bytes, float(util), notes)
    in_use = None
    if device != "cpu" and facts.gpu_free_bytes_at_start is not None and facts.gpu_total_bytes:
        # "Free memory on device (F/T GiB) on startup" (0.9.1+ refusal, 0.32+ summary): what vLLM
        # compared with total x utilization; T - F is what was in use before it sized anything
        in_use = max(facts.gpu_total_bytes - facts.gpu_free_bytes_at_start, 0)
        notes.append(f"{in_use / (1 << 30):.2f} GiB in use on the GPU at start (the log's 'Free memory on device' line)")
    if model is None:
        return None, picker
    if quant is not None and str(quant).lower() in ("none", "null"):
        quant = None
    given = inputs.given()
    # the planning flags check-log takes as given (LoRA, speculative decoding, ...), else what the log's
    # arguments and engine config say of LoRA and data / expert parallelism
    passed = {k: v for k, v in given.items() if k in _PASSED_THROUGH}
    for name in _FROM_LOG_ARGS:
        if name not in passed and getattr(facts, name) is not None:
            passed[name] = getattr(facts, name)
    if "compile_cache" not in passed and facts.compile_cache == "warm":
        # the start loaded its compiled graphs: its profile held no compile memory (estimate/memory.py)
        passed["compile_cache"] = "warm"
        notes.append("compile cache: warm (the log loads its compiled graphs from vLLM's cache)")
    if "flashinfer_installed" not in passed and device == "cuda" and rules.sampler_sorts_without_flashinfer:
        # 0.8-0.11.0 size the profile's sampler by whether FlashInfer imports, which its sampler line says
        if facts.sampler_flashinfer is not None:
            passed["flashinfer_installed"] = facts.sampler_flashinfer
            notes.append("sampler: " + ("FlashInfer" if facts.sampler_flashinfer else "PyTorch-native (sort-based)")
                         + " top-p/top-k, from the log's topk_topp_sampler line")
        else:
            picker.assumed["flashinfer"] = ("installed (the log shows no top-p/top-k sampler line; pass "
                                            "--no-flashinfer for a PyPI install without it)")
    req = PlanRequest(
        model=model,
        source=inputs.source or "auto",
        revision=inputs.revision,
        gpu=gpu,
        gpu_memory=gpu_memory,
        device=device,  # type: ignore[arg-type]
        vllm_version=version,
        tensor_parallel_size=int(tp),
        pipeline_parallel_size=int(pp),
        max_model_len=max_len,
        gpu_memory_utilization=util,
        kv_cache_memory_bytes=kv_bytes,
        kv_cache_dtype=str(kv_dtype),
        dtype=str(dtype),
        quantization=quant,
        max_num_seqs=seqs,
        max_num_batched_tokens=mnbt,
        block_size=block,
        enforce_eager=bool(eager),
        enable_prefix_caching=(inputs.enable_prefix_caching if inputs.enable_prefix_caching is not None
                               else facts.enable_prefix_caching),
        profiles_dir=inputs.profiles_dir,
        gpu_memory_in_use=inputs.gpu_memory_in_use or in_use or None,
        **passed,
    )
    return req, picker


def _runtime_of(gpu: str, env: Mapping[str, str]) -> str:
    from vllmkit.hardware.profiles import load_profiles, profile_dirs_from_env, resolve_gpu

    return resolve_gpu(gpu, profiles=load_profiles(profile_dirs_from_env(env), env=env)).runtime


def _gpu_from_log(name: str | None, env: Mapping[str, str], notes: list[str]) -> str | None:
    if not name:
        return None
    from vllmkit.hardware.profiles import load_profiles, profile_dirs_from_env, resolve_gpu

    try:
        return resolve_gpu(name, profiles=load_profiles(profile_dirs_from_env(env), env=env)).name
    except VllmkitError:
        notes.append(f"the log's GPU '{name}' matches no profile")
        return None


# ----------------------------------------------------------------------------- comparing


# each figure of the CPU worker's "Auto set" line is printed to 2 decimals of a GiB
_CPU_LINE_ROUNDING = 3 * 0.005 * (1 << 30)


def cpu_sized_total(total_bytes: int, requested_bytes: int, util: float, notes: list[str]) -> int:
    """The node total the CPU worker's requested memory R was computed from. vLLM reads the node's
    MemTotal twice (vllm/v1/worker/cpu_worker.py: R = ceil(total x util) when the worker starts, the
    printed total when it sizes the KV cache); on a VM whose memory is ballooned or hot-plugged the two
    reads can differ. When R is not util x the printed total, R / util is what the KV was sized from."""
    if abs(math.ceil(total_bytes * util) - requested_bytes) <= _CPU_LINE_ROUNDING:
        return total_bytes
    notes.append(f"host memory moved during start-up: the worker's requested memory is not "
                 f"{util} x the printed node total; sized against requested / {util}")
    return round(requested_bytes / util)


def predicted_quantities(plan: PlanResult) -> Quantities:
    mem, kv = plan.memory, plan.kv_cache
    q = Quantities(weights=mem.weights_bytes, available_kv=mem.kv_cache_bytes, kv_tokens=kv.tokens,
                   max_concurrency=round(kv.max_concurrency, 2))
    if plan.device == "cpu":
        q.cpu_non_kv = mem.weights_bytes + mem.non_torch_bytes
    else:
        q.non_torch, q.activation, q.cudagraph = mem.non_torch_bytes, mem.activation_bytes, mem.cudagraph_bytes
        q.overhead = mem.non_torch_bytes + mem.activation_bytes + mem.cudagraph_bytes
    return q


def measured_quantities(m: Measurement, *, graphs_in_budget: bool = True) -> Quantities:
    """graphs_in_budget: whether the release subtracts CUDA-graph memory before sizing the KV cache; where it
    does not (before 0.20, Model Runner V2 before 0.29) a graph figure the log prints (the capture that follows,
    or the estimate it suggests enabling) is reported but is not part of the non-KV overhead the KV was sized by."""
    q = Quantities(weights=m.weights_bytes, cpu_non_kv=m.cpu_non_kv_bytes, available_kv=m.available_kv_bytes,
                   kv_tokens=m.kv_tokens, max_concurrency=m.max_concurrency)
    if m.lump:
        # one sum: compared as the whole non-KV overhead, not term by term
        q.overhead = m.non_torch_bytes
        return q
    q.non_torch, q.activation, q.cudagraph = m.non_torch_bytes, m.activation_bytes, m.cudagraph_bytes
    if m.non_torch_bytes is not None and m.activation_bytes is not None:
        graphs = (m.cudagraph_bytes or 0) if graphs_in_budget else 0
        q.overhead = m.non_torch_bytes + m.activation_bytes + graphs
    return q


def graphs_in_budget(plan: PlanResult | None) -> bool:
    """The plan charges CUDA-graph memory to the KV budget (a GPU plan with graphs and a positive graph term;
    plan/evaluate.py puts 0 there for the releases that do not count it)."""
    if plan is None or plan.device == "cpu" or plan.settings.enforce_eager:
        return True
    return plan.memory.cudagraph_bytes > 0


def error_pct(predicted: float | None, measured: float | None) -> float | None:
    if predicted is None or measured is None:
        return None
    if measured == 0:
        return 0.0 if predicted == 0 else None
    return round((predicted - measured) / measured * 100, 2)


def compare(predicted: Quantities, measured: Quantities) -> dict[str, float | None]:
    return {k: error_pct(getattr(predicted, k), getattr(measured, k)) for k in QUANTITIES
            if getattr(measured, k) is not None and getattr(predicted, k) is not None}


# ----------------------------------------------------------------------------- recording


def _normal_version(version: str) -> str:
    return ".".join(str(x) for x in parse_version(version))


def build_record(plan: PlanResult, m: Measurement, *, source: str, log_sha256: str | None,
                 notes: Mapping[str, str] | None = None) -> tuple[CalibrationRecord | None, str | None]:
    """(record, None) or (None, why nothing can be recorded)."""
    if plan.settings.kv_cache_memory_bytes is not None or m.kv_fixed:
        return None, ("the KV cache size was fixed (--kv-cache-memory-bytes / VLLM_CPU_KVCACHE_SPACE), so vLLM "
                      "did not measure its non-KV memory; start it with --gpu-memory-utilization to calibrate")
    terms: dict[str, int] = {}
    term_notes = dict(notes or {})
    if plan.device == "cpu":
        if m.cpu_non_kv_bytes is not None:
            terms["cpu_non_kv"] = m.cpu_non_kv_bytes
            term_notes.setdefault("cpu_non_kv", "worker RSS after warm-up ('consumed by non-kv usages', 2-decimal GiB)")
    else:
        if m.non_torch_bytes is not None:
            terms["non_torch"] = m.non_torch_bytes
            if m.lump:
                term_notes.setdefault("non_torch", "lump: requested - weights - available KV")
        if m.activation_bytes is not None:
            terms["activation"] = m.activation_bytes
        if m.cudagraph_bytes is not None and not plan.settings.enforce_eager:
            terms["cudagraph"] = m.cudagraph_bytes
    if not terms:
        return None, "the log shows no measured non-KV memory (no profiling summary, no available-KV line)"
    fields: dict[str, Any] = {
        "gpu": plan.gpu.name,
        "vllm_version": _normal_version(plan.vllm_version),
        "family": plan.model.model_type,
        "model": plan.model.id,
        "max_num_batched_tokens": plan.settings.max_num_batched_tokens,
        "tp": plan.parallel.tensor_parallel_size,
        "pp": plan.parallel.pipeline_parallel_size,
        "enforce_eager": plan.settings.enforce_eager,
        "terms": terms,
        "lump": m.lump,
        "log_sha256": log_sha256,
    }
    record = CalibrationRecord(
        record_id=make_record_id(fields),
        recorded_at=now_iso(),
        gpu_display_name=plan.gpu.display_name,
        device=plan.device,
        notes=term_notes,
        weights_bytes=m.weights_bytes if m.weights_bytes is not None else plan.memory.weights_bytes,
        total_bytes=m.total_bytes,
        requested_bytes=m.requested_bytes,
        gpu_memory_utilization=m.gpu_memory_utilization or plan.settings.gpu_memory_utilization,
        available_kv_bytes=m.available_kv_bytes,
        source=source,
        **fields,
    )
    return record, None


def _store(record: CalibrationRecord, env: Mapping[str, str]) -> RecordOutcome:
    path = store_path(env)
    added, _dups = add_records(path, [record])
    return RecordOutcome(recorded=True, record_id=record.record_id, duplicate=added == 0, store=str(path),
                         terms=dict(record.terms))


def record_startup(plan: PlanResult, log_text: str, env: Mapping[str, str], *, source: str = "serve"
                   ) -> CalibrationRecord | None:
    """`vllmkit serve` after a healthy start: record what the log measured for this exact plan.
    Never raises (a calibration problem must not fail a healthy server); returns the record stored,
    or None (nothing measured, KV size fixed, VLLMKIT_NO_CALIBRATION=1, or an error)."""
    if env.get("VLLMKIT_NO_CALIBRATION") == "1":
        return None
    try:
        parsed = read_log(log_text)
        m = measure(parsed, log_text)
        complete_with_weights(m, log_text, parsed, plan.memory.weights_bytes)
        derive_lump(m, requested_bytes=plan.memory.requested_bytes, weights_bytes=plan.memory.weights_bytes,
                    enforce_eager=plan.settings.enforce_eager)
        record, _why = build_record(plan, m, source=source,
                                    log_sha256=hashlib.sha256(log_text.encode("utf-8", "replace")).hexdigest())
        if record is None:
            return None
        add_records(store_path(env), [record])
        return record
    except Exception:
        return None


# ----------------------------------------------------------------------------- the service


def check_log(path: Path, inputs: CheckLogInputs, env: Mapping[str, str], *, record: bool = False,
              use_calibration: bool = False) -> CheckLogResult:
    text = read_log_file(path)
    parsed = read_log(text)
    m = measure(parsed, text)
    if not m.has_startup_facts() and _COMMENTED.search(text):
        # a log quoted as comments (a launch script, a README): read it without the "# " prefixes
        uncommented = _COMMENTED.sub("", text)
        parsed_again = read_log(uncommented)
        m_again = measure(parsed_again, uncommented)
        if m_again.has_startup_facts():
            text, parsed, m = uncommented, parsed_again, m_again
    facts = parsed.facts
    if not m.has_startup_facts() and not facts.model and not facts.vllm_version and inputs.model is None:
        raise CheckFailedError(f"no vLLM startup facts found in {path}", NO_FACTS_HINT, code="no-startup-facts")
    notes = list(m.notes)
    req, picker = build_request(parsed, m, text, inputs, env, notes)
    plan: PlanResult | None = None
    if req is not None:
        import functools

        from vllmkit.calibration.store import lookup_terms
        from vllmkit.plan.service import build_plan

        # default: compare the model itself, not a past measurement
        calibration = (functools.partial(lookup_terms, env=env)
                       if use_calibration and env.get("VLLMKIT_NO_CALIBRATION") != "1" else None)
        try:
            plan_env = dict(env)
            runner = parsed.facts.model_runner_v2
            if runner is not None and "VLLM_USE_V2_MODEL_RUNNER" not in plan_env:
                # the log says which model runner served ("Using V2 Model Runner", or the file that logged
                # "Model loading took"): plan that one (engine/versions.py model_runner_v2)
                plan_env["VLLM_USE_V2_MODEL_RUNNER"] = "1" if runner else "0"
                notes.append("model runner: " + ("V2" if runner else "V1") + " (from the log)")
            plan = build_plan(req, plan_env, min_concurrency=0.0, calibration=calibration)
        except VllmkitError as exc:
            if inputs.model is not None and isinstance(exc, ModelSourceError):
                raise
            notes.append(f"no prediction: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""))
    if plan is not None:
        complete_with_weights(m, text, parsed, plan.memory.weights_bytes)
        if "gpu" not in picker.assumed or m.requested_bytes is not None:
            derive_lump(m, requested_bytes=plan.memory.requested_bytes, weights_bytes=plan.memory.weights_bytes,
                        enforce_eager=plan.settings.enforce_eager)
    if m.kv_tokens_note:
        notes.append(f"measured KV tokens {m.kv_tokens_note}")
    if plan is not None and plan.startup_refusal:
        notes.append(f"predicted: vLLM refuses to start ({plan.startup_refusal})")
    if plan is not None and plan.graph_capture_oom:
        notes.append(f"predicted: {plan.graph_capture_oom}")
    predicted = predicted_quantities(plan) if plan is not None else Quantities()
    budgeted = graphs_in_budget(plan)
    measured = measured_quantities(m, graphs_in_budget=budgeted)
    if plan is not None and not budgeted and m.cudagraph_bytes:
        predicted.cudagraph = None  # nothing to compare: the release sizes the KV cache before the graphs
        notes.append(f"vLLM {plan.vllm_version} sizes the KV cache without CUDA-graph memory: "
                     "the log's graph figure is shown, not compared, and not in the non-KV overhead")
    result = CheckLogResult(
        log=str(path),
        model=plan.model.id if plan else (req.model if req else None),
        family=plan.model.model_type if plan else None,
        gpu=plan.gpu.name if plan else None,
        gpu_display_name=plan.gpu.display_name if plan else None,
        device=plan.device if plan else (req.device if req and req.device else ("cpu" if m.device == "cpu" else "cuda")),
        vllm_version=plan.vllm_version if plan else (req.vllm_version if req else _normalize_version(facts.vllm_version)),
        inputs=_inputs_used(req, plan),
        predicted=predicted,
        measured=measured,
        errors_pct=compare(predicted, measured),
        assumed=sorted(picker.assumed),
        assumptions=dict(sorted(picker.assumed.items())),
        defaults=sorted(picker.defaults),
        basis=m.basis,
        notes=notes,
        calibration=plan.calibration if plan else None,
    )
    if record:
        result.record = _record_for_check_log(plan, m, picker, path, text, env)
    return result


def _inputs_used(req: PlanRequest | None, plan: PlanResult | None) -> dict[str, Any]:
    if req is None:
        return {}
    out: dict[str, Any] = {
        "model": req.model, "device": req.device, "gpu": req.gpu, "gpu_memory": req.gpu_memory,
        "vllm_version": req.vllm_version, "tensor_parallel_size": req.tensor_parallel_size,
        "pipeline_parallel_size": req.pipeline_parallel_size, "max_model_len": req.max_model_len,
        "dtype": req.dtype, "quantization": req.quantization, "kv_cache_dtype": req.kv_cache_dtype,
        "enforce_eager": req.enforce_eager, "gpu_memory_utilization": req.gpu_memory_utilization,
        "kv_cache_memory_bytes": req.kv_cache_memory_bytes, "max_num_batched_tokens": req.max_num_batched_tokens,
        "max_num_seqs": req.max_num_seqs,
    }
    if plan is not None:  # what the plan resolved the defaults to
        out["max_model_len"] = plan.settings.max_model_len
        out["gpu_memory_utilization"] = plan.settings.gpu_memory_utilization
        out["max_num_batched_tokens"] = plan.settings.max_num_batched_tokens
        out["max_num_seqs"] = plan.settings.max_num_seqs
        out["gpu"] = plan.gpu.name
    return out


_KEY_INPUTS = ("model", "gpu", "vllm_version", "device")


def _record_for_check_log(plan: PlanResult | None, m: Measurement, picker: _Picker, path: Path, text: str,
                          env: Mapping[str, str]) -> RecordOutcome:
    if plan is None:
        return RecordOutcome(recorded=False, reason="no plan could be built for this log, so there is no key to record under")
    missing = [k for k in _KEY_INPUTS if k in picker.assumed]
    if missing:
        return RecordOutcome(recorded=False, reason=(
            f"the log does not show {', '.join(missing)}; pass "
            + ", ".join(f"--{k.replace('_', '-')}" for k in missing) + " to record a calibration under the right key"))
    notes = {"assumed": "; ".join(f"{k}={v}" for k, v in picker.assumed.items())} if picker.assumed else {}
    record, why = build_record(plan, m, source=f"check-log {path}",
                               log_sha256=hashlib.sha256(text.encode("utf-8", "replace")).hexdigest(), notes=notes)
    if record is None:
        return RecordOutcome(recorded=False, reason=why)
    return _store(record, env)
