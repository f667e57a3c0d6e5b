"""The planning options, declared once for every command that plans (plan, serve, check-log, capacity…),
and the one parser that turns them into a `PlanRequest`.

`@planning_options` adds the options to a typer command's signature and hands the command one
`PlanFlags` (every field None when the flag was not given, so check-log can tell "from the log"
from "given").
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import fields, make_dataclass
from typing import Any, TypeVar

import typer

from vllmkit.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])

JSON_OPTION = typer.Option(False, "--json", help="Print one JSON envelope on stdout (also for errors).")


_P = "Planning"  # help panel
_FP = "Features"  # help panel of the issue-13 feature flags
_OPTIONS: dict[str, tuple[Any, Any]] = {
    "gpu": (str | None, typer.Option(None, "--gpu", help="GPU profile or product name (see `vllmkit gpus`), or 'cpu'.", rich_help_panel=_P)),
    "gpu_memory": (str | None, typer.Option(None, "--gpu-memory", help="Memory of an unlisted GPU, e.g. 48GiB.", rich_help_panel=_P)),
    "gpu_count": (int | None, typer.Option(None, "--gpu-count", help="GPUs available (default: as many as the plan needs).", rich_help_panel=_P)),
    "device": (str | None, typer.Option(None, "--device", help="cuda | rocm | cpu (default: from the GPU).", rich_help_panel=_P)),
    "source": (str | None, typer.Option(None, "--source", help="Where to read the model: auto | hf | modelscope | local | catalog.", rich_help_panel=_P)),
    "revision": (str | None, typer.Option(None, "--revision", help="Branch, tag or commit on the hub.", rich_help_panel=_P)),
    "refresh": (bool | None, typer.Option(None, "--refresh", help="Refetch hub metadata instead of using the cache.", rich_help_panel=_P)),
    "vllm_version": (str | None, typer.Option(None, "--vllm-version", help="vLLM version to plan for (default: the installed one, else the newest known).", rich_help_panel=_P)),
    "tensor_parallel_size": (int | None, typer.Option(None, "--tensor-parallel-size", "-tp", help="GPUs that split each layer (default: the smallest that fits).", rich_help_panel=_P)),
    "pipeline_parallel_size": (int | None, typer.Option(None, "--pipeline-parallel-size", "-pp", help="Pipeline stages (across nodes).", rich_help_panel=_P)),
    "max_model_len": (str | None, typer.Option(None, "--max-model-len", help="Context per request: tokens, 32k / 32K, or auto.", rich_help_panel=_P)),
    "gpu_memory_utilization": (float | None, typer.Option(None, "--gpu-memory-utilization", help="Fraction of GPU memory vLLM may use, in (0, 1] (default: vLLM's).", rich_help_panel=_P)),
    "kv_cache_memory_bytes": (str | None, typer.Option(None, "--kv-cache-memory-bytes", help="Fix the KV cache per GPU, e.g. 8GiB (bypasses the memory profile).", rich_help_panel=_P)),
    "kv_cache_dtype": (str | None, typer.Option(None, "--kv-cache-dtype", help="auto | bfloat16 | fp8 | fp8_e4m3 | fp8_e5m2.", rich_help_panel=_P)),
    "dtype": (str | None, typer.Option(None, "--dtype", help="Model dtype: auto | bfloat16 | float16 | half | float32 | float (float32 doubles weights and KV).", rich_help_panel=_P)),
    "quantization": (str | None, typer.Option(None, "--quantization", help="vLLM --quantization (fp8: online FP8 of a 16-bit checkpoint; bitsandbytes: in-flight 4-bit NF4, vLLM 0.27 and older).", rich_help_panel=_P)),
    "max_num_seqs": (int | None, typer.Option(None, "--max-num-seqs", help="Most sequences in one batch (default: vLLM's for the GPU).", rich_help_panel=_P)),
    "max_num_batched_tokens": (int | None, typer.Option(None, "--max-num-batched-tokens", help="Token budget of one scheduler step (default: vLLM's for the GPU).", rich_help_panel=_P)),
    "block_size": (int | None, typer.Option(None, "--block-size", help="KV block size in tokens (default: the backend's).", rich_help_panel=_P)),
    "enforce_eager": (bool | None, typer.Option(None, "--enforce-eager/--no-enforce-eager", help="Disable CUDA graphs (saves their memory, slower decode).", show_default=False, rich_help_panel=_P)),
    "gpu_memory_in_use": (str | None, typer.Option(None, "--gpu-memory-in-use", help="Memory other processes already hold on each GPU, e.g. 4GiB (vLLM before 0.9.1 counts it against its budget; later ones refuse to start when it leaves too little).", rich_help_panel=_P)),
    "compile_cache": (str | None, typer.Option(None, "--compile-cache", help="cold: a first start, vLLM compiles the model while it measures memory (default); warm: a restart that loads vLLM's compile cache (~/.cache/vllm/torch_compile_cache), up to ~0.9 GiB more KV cache.", metavar="cold|warm", rich_help_panel=_P)),
    "flashinfer": (bool | None, typer.Option(None, "--flashinfer/--no-flashinfer", help="Whether FlashInfer is installed beside vLLM (0.8-0.11.0 sample without a large sort when it is; default: looked up for the installed vLLM, else assumed installed).", show_default=False, rich_help_panel=_P)),
    "enable_prefix_caching": (bool | None, typer.Option(None, "--enable-prefix-caching/--no-enable-prefix-caching", help="Prefix caching (default: vLLM's for the model).", show_default=False, rich_help_panel=_P)),
    # issue 14: serving features from the model-family presets (profiles/presets)
    "tools": (bool | None, typer.Option(None, "--tools/--no-tools", help="Turn on the model family's tool-call parser (default: on when it has one).", show_default=False, rich_help_panel=_P)),
    "reasoning": (bool | None, typer.Option(None, "--reasoning/--no-reasoning", help="Turn on its reasoning parser (default: on when it has one).", show_default=False, rich_help_panel=_P)),
    # issue 13: features that change the memory plan
    "limit_mm_per_prompt": (str | None, typer.Option(None, "--limit-mm-per-prompt", help='Items per prompt, JSON: \'{"image": 2, "video": 0}\' (all 0 = text-only).', rich_help_panel=_FP)),
    "language_model_only": (bool | None, typer.Option(None, "--language-model-only", help="Serve a vision-language model as text-only (no vision tower).", show_default=False, rich_help_panel=_FP)),
    "enable_lora": (bool | None, typer.Option(None, "--enable-lora", help="Reserve LoRA adapter stacks.", show_default=False, rich_help_panel=_FP)),
    "max_loras": (int | None, typer.Option(None, "--max-loras", help="LoRA adapters in one batch (vLLM default 1).", rich_help_panel=_FP)),
    "max_lora_rank": (int | None, typer.Option(None, "--max-lora-rank", help="Largest LoRA rank (vLLM default 16).", rich_help_panel=_FP)),
    "max_cpu_loras": (int | None, typer.Option(None, "--max-cpu-loras", help="LoRA adapters cached in host memory.", rich_help_panel=_FP)),
    "speculative_config": (str | None, typer.Option(None, "--speculative-config", help='Speculative decoding, JSON: \'{"method": "ngram", "num_speculative_tokens": 3}\' (ngram, eagle, eagle3, mtp, draft_model).', rich_help_panel=_FP)),
    "data_parallel_size": (int | None, typer.Option(None, "--data-parallel-size", "-dp", help="Replicas of the planned TP x PP group.", rich_help_panel=_FP)),
    "enable_expert_parallel": (bool | None, typer.Option(None, "--enable-expert-parallel", help="Spread MoE experts over TP x DP ranks.", show_default=False, rich_help_panel=_FP)),
    "mamba_ssm_cache_dtype": (str | None, typer.Option(None, "--mamba-ssm-cache-dtype", help="SSM state dtype of mamba / hybrid models: auto | float32 | float16 | bfloat16 (vLLM 0.10.1+).", rich_help_panel=_FP)),
    "cpu_offload_gb": (float | None, typer.Option(None, "--cpu-offload-gb", help="GiB of each GPU's weights kept in host memory and read over PCIe in every step (frees GPU memory for the KV cache; decoding slows to the PCIe rate).", rich_help_panel=_FP)),
    "async_scheduling": (bool | None, typer.Option(None, "--async-scheduling/--no-async-scheduling", help="Schedule step N+1 while the GPU runs step N (vLLM 0.10+; default: the release's, on from 0.14 on GPUs): shorter decode steps, no memory change.", show_default=False, rich_help_panel=_FP)),
    "enable_extensible_kv_cache": (bool | None, typer.Option(None, "--enable-extensible-kv-cache/--no-enable-extensible-kv-cache", help="vLLM 0.34+: size the KV cache from memory measured after warm-up (default on CUDA / ROCm); off: the profiling estimate and a 0.92 utilization.", show_default=False, rich_help_panel=_FP)),
}


def _given(self: Any) -> dict[str, Any]:
    """The flags the user passed, by field name."""
    return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


# The planning flags as given (None = not given): one field per entry of _OPTIONS, so the options are
# declared once, there.
PlanFlags = make_dataclass(
    "PlanFlags", [(name, annotation, None) for name, (annotation, _) in _OPTIONS.items()],
    frozen=True, namespace={"given": _given, "__doc__": "The planning flags as given (None = not given)."},
)


def planning_options(fn: F) -> F:
    """Add the planning options to a typer command; it receives them as `flags: PlanFlags`."""
    sig = inspect.signature(fn)
    own = [p for p in sig.parameters.values() if p.name != "flags"]
    injected = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
        for name, (annotation, option) in _OPTIONS.items()
    ]
    # positional arguments first, then the command's own options, then the planning options
    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
              and not isinstance(p.default, typer.models.ArgumentInfo) else p for p in own]
    positional = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    keyword = [p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        flags = PlanFlags(**{name: kwargs.pop(name) for name in _OPTIONS})
        return fn(*args, flags=flags, **kwargs)

    hints = {k: v for k, v in getattr(fn, "__annotations__", {}).items() if k != "flags"}
    resolved = typing_hints(fn)
    wrapper.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[*(_resolve(p, resolved) for p in positional), *(_resolve(p, resolved) for p in keyword), *injected]
    )
    wrapper.__annotations__ = {**{k: resolved.get(k, v) for k, v in hints.items()},
                               **{name: ann for name, (ann, _) in _OPTIONS.items()}}
    del wrapper.__wrapped__  # typer must read the new signature, not the wrapped one
    return wrapper  # type: ignore[return-value]


def typing_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    import typing

    return typing.get_type_hints(fn)


def _resolve(p: inspect.Parameter, hints: dict[str, Any]) -> inspect.Parameter:
    return p.replace(annotation=hints.get(p.name, p.annotation))


# ----------------------------------------------------------------------------- the one parser


def parse_max_model_len(text: str | None) -> int | str | None:
    """vLLM accepts 4096, 4k / 4K (1000 / 1024), 'auto' or -1."""
    if text is None:
        return None
    t = text.strip()
    if t.lower() in ("auto", "-1"):
        return "auto"
    mult = 1
    if t[-1:] in ("k", "K", "m", "M"):
        mult = {"k": 1000, "K": 1024, "m": 10**6, "M": 1 << 20}[t[-1]]
        t = t[:-1]
    try:
        value = int(float(t) * mult)
    except (ValueError, OverflowError):  # OverflowError: "1e400" is float infinity
        raise UsageError(f"cannot read --max-model-len {text!r}", "use a number (32768, 32k, 32K) or auto") from None
    if value <= 0:
        raise UsageError("--max-model-len must be positive", "use a number or auto")
    return value


def parse_bytes(text: str | None, flag: str) -> int | None:
    if text is None:
        return None
    from vllmkit.hardware.profiles import parse_memory

    try:
        return parse_memory(text)
    except UsageError as exc:
        raise UsageError(f"{flag}: {exc.message}", exc.hint) from None


_SOURCES = ("auto", "hf", "modelscope", "local", "catalog")


# the KV-cache dtypes the planner sizes (vLLM's CacheDType, vllm/config/cache.py), the packed per-token-head and
# NVFP4 formats included (estimate/specs.py PACKED_KV_DTYPES: their layouts and first releases); the other packed
# formats vLLM 0.32 - 0.34 accept (turboquant, ultraquant, octave, nvfp4_ds_mla) are not sized yet
KV_CACHE_DTYPES = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla",
                   "int8_per_token_head", "fp8_per_token_head", "int4_per_token_head", "nvfp4", "nvfp4_4over6")
_KV_UNMODELLED = ("nvfp4_ds_mla", "turboquant", "ultraquant", "octave")


def check_kv_cache_dtype(value: str | None) -> None:
    if value is None or value in KV_CACHE_DTYPES:
        return
    if value.startswith(_KV_UNMODELLED):
        raise UsageError(f"vllmkit cannot size --kv-cache-dtype {value!r} yet (a packed format with scales)",
                         "plan with fp8 for a lower bound of its KV capacity, or measure it: vllmkit serve / check-log")
    raise UsageError(f"unknown --kv-cache-dtype {value!r}", "use one of: " + ", ".join(KV_CACHE_DTYPES))


# vLLM's ModelDType (vllm/config/model.py in 0.32): the values `--dtype` takes
MODEL_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")


def check_dtype(value: str | None) -> None:
    if value is None or value in MODEL_DTYPES:
        return
    raise UsageError(f"unknown --dtype {value!r}", "use one of: " + ", ".join(MODEL_DTYPES))


# vllm/config/lora.py (0.32): MaxLoRARanks = Literal[1, 8, 16, 32, 64, 128, 256, 320, 512]; --max-lora-rank
# takes these only (earlier releases: the same list without 1)
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def check_positive(value: float, flag: str, hint: str) -> None:
    """A usage error unless value is a finite number > 0 (NaN and inf included)."""
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{flag} must be a positive number", hint)


MAMBA_SSM_DTYPES = ("auto", "float32", "float16", "bfloat16")  # vllm/config/cache.py MambaDType
MAX_CPU_OFFLOAD_GIB = 1 << 20  # 1 PiB of host memory per GPU: beyond any machine


def check_flags(flags: PlanFlags) -> None:
    """Range checks shared by every planning command (usage errors, exit 2)."""
    check_kv_cache_dtype(flags.kv_cache_dtype)
    if flags.mamba_ssm_cache_dtype is not None and flags.mamba_ssm_cache_dtype not in MAMBA_SSM_DTYPES:
        raise UsageError(f"unknown --mamba-ssm-cache-dtype {flags.mamba_ssm_cache_dtype!r}",
                         "use one of: " + ", ".join(MAMBA_SSM_DTYPES))
    check_dtype(flags.dtype)
    if flags.device not in (None, "cuda", "rocm", "cpu"):
        raise UsageError(f"unknown --device {flags.device!r}", "use cuda, rocm or cpu")
    if flags.source not in (None, *_SOURCES):
        raise UsageError(f"unknown --source {flags.source!r}", "use " + ", ".join(_SOURCES))
    if flags.cpu_offload_gb is not None and not (math.isfinite(flags.cpu_offload_gb) and flags.cpu_offload_gb >= 0):
        raise UsageError("--cpu-offload-gb must be a number of GiB, 0 or more", "e.g. --cpu-offload-gb 8")
    if flags.cpu_offload_gb is not None and flags.cpu_offload_gb > MAX_CPU_OFFLOAD_GIB:
        # 1e308 overflowed the byte count (an OverflowError, exit 1)
        raise UsageError(f"--cpu-offload-gb {flags.cpu_offload_gb:g} is more host memory than any machine has "
                         f"(at most {MAX_CPU_OFFLOAD_GIB:,} GiB per GPU)", "e.g. --cpu-offload-gb 8")
    if flags.quantization is not None:
        from vllmkit.engine.versions import KNOWN_QUANT_METHODS

        if flags.quantization not in KNOWN_QUANT_METHODS:
            # vLLM's argparse refuses it ("invalid choice"); the plan printed it in the serve line
            raise UsageError(f"unknown --quantization {flags.quantization!r}: no vLLM release accepts it",
                             "use fp8 (online FP8), bitsandbytes, or leave it out: vLLM reads the checkpoint's own "
                             "quantization_config")
    if flags.gpu_memory_utilization is not None and not 0 < flags.gpu_memory_utilization <= 1:
        raise UsageError("--gpu-memory-utilization must be in (0, 1]", "e.g. 0.9")
    for flag, value in (("--tensor-parallel-size", flags.tensor_parallel_size),
                        ("--pipeline-parallel-size", flags.pipeline_parallel_size),
                        ("--gpu-count", flags.gpu_count), ("--max-num-seqs", flags.max_num_seqs),
                        ("--max-num-batched-tokens", flags.max_num_batched_tokens), ("--block-size", flags.block_size)):
        if value is not None and value <= 0:
            raise UsageError(f"{flag} must be a positive integer", f"e.g. {flag} 2")


def request_overrides(flags: PlanFlags) -> dict[str, Any]:
    """The given flags as PlanRequest fields (parsed and range-checked)."""
    check_flags(flags)
    out = flags.given()
    if "max_model_len" in out:
        out["max_model_len"] = parse_max_model_len(flags.max_model_len)
    if "flashinfer" in out:
        out["flashinfer_installed"] = out.pop("flashinfer")
    if out.get("max_lora_rank") is not None and out["max_lora_rank"] not in LORA_RANKS:
        raise UsageError(f"vLLM does not take --max-lora-rank {out['max_lora_rank']}",
                         "use one of: " + ", ".join(map(str, LORA_RANKS)) + " (vllm/config/lora.py MaxLoRARanks)")
    if "compile_cache" in out and out["compile_cache"] not in ("cold", "warm"):
        raise UsageError(f"unknown --compile-cache {out['compile_cache']!r}",
                         "use cold (a first start, the default) or warm (a restart with vLLM's compile cache)")
    for name in ("gpu_memory", "kv_cache_memory_bytes", "gpu_memory_in_use"):
        if name in out:
            out[name] = parse_bytes(out[name], "--" + name.replace("_", "-"))
    if "gpu_memory" in out:
        check_gpu_memory(flags.gpu_memory, out["gpu_memory"])
    from vllmkit.cli._features import FEATURE_FIELDS, parse_features

    features = {k: out.pop(k) for k in FEATURE_FIELDS if k in out}
    if features:
        out.update(parse_features(**features))
    return out


# no accelerator vLLM runs on has less memory than this (the smallest Jetson Orin Nano: 4 GB shared)
_GPU_MEMORY_FLOOR = 1 << 30


def check_gpu_memory(text: str | None, value: int) -> None:
    """Refuse a --gpu-memory no GPU has: a bare number is bytes, so `--gpu-memory 80` meant 80GiB."""
    if value >= _GPU_MEMORY_FLOOR:
        return
    bare = (text or "").strip()
    hint = (f"a number without a unit is bytes: write --gpu-memory {bare}GiB"
            if bare.replace(".", "", 1).isdigit() else "write the GPU's memory with a unit, e.g. 48GiB or 80GB")
    raise UsageError(f"--gpu-memory {bare} is {value:,} bytes, less than any GPU vLLM runs on (1 GiB)", hint,
                     code="bad-memory")


def plan_request(model: str, flags: PlanFlags, **extra: Any):  # -> PlanRequest
    """The PlanRequest for MODEL from the planning flags (defaults where not given)."""
    from vllmkit.plan.models import PlanRequest

    return PlanRequest(model=model, **request_overrides(flags), **extra)


def make_plan(req: Any, env: dict[str, str], endpoint: Any = None, *, min_concurrency: float | None = None,
              perf: Any = None):  # -> PlanResult
    """Plan `req` with the local calibrations (unless VLLMKIT_NO_CALIBRATION=1) and the serve line
    (`endpoint`: serve's host / port / name; the defaults for `plan`)."""
    from vllmkit.launch.command import attach_serve_command
    from vllmkit.plan.service import build_plan

    calibration = None
    if env.get("VLLMKIT_NO_CALIBRATION") != "1":
        from vllmkit.calibration.store import lookup_terms

        calibration = functools.partial(lookup_terms, env=env)
    plan = build_plan(req, env, min_concurrency=min_concurrency, calibration=calibration, perf=perf)
    return attach_serve_command(plan, req, endpoint)
