"""`vllmkit plan`: resolve the model and the GPU, evaluate candidates, recommend one.

The flow: variants (plan/variants.py) x GPU options -> candidates with their engine settings and
context (plan/candidates.py) -> ranking (plan/ranking.py) -> the result (plan/result.py). Calibrated
memory terms come in as an input (`calibration`); the serve line is added by launch.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from vllmkit.engine.versions import (
    quant_method_warning,
    resolve_version,
    rules_for,
    untagged_build,
    version_warning,
)
from vllmkit.errors import UsageError, VllmkitError
from vllmkit.hardware.host import host_memory_bytes
from vllmkit.plan.candidates import (
    CalibrationLookup,
    choose,
    evaluate_candidates,
    flashinfer_assumption_warning,
    platform_warning,
    shared_gpu_warning,
    speculative_method,
    unified_memory_warning,
)
from vllmkit.plan.models import PlanRequest, PlanResult
from vllmkit.plan.performance import PerfOptions, attach_performance, check_request_length, request_tokens
from vllmkit.plan.result import does_not_fit_error, plan_result
from vllmkit.plan.validate import validate_kv_cache_dtype, validate_parallelism
from vllmkit.plan.variants import make_variant, online_bnb4, online_fp8, served_in_float32, sibling_variants
from vllmkit.units import GIB

DEFAULT_MIN_CONCURRENCY = 4.0


def resolve_gpu_profile(req: PlanRequest, env: Mapping[str, str]):  # -> GpuProfile
    from vllmkit.hardware.profiles import cpu_profile as make_cpu_profile
    from vllmkit.hardware.profiles import (
        custom_profile,
        load_profiles,
        profile_dirs_from_env,
        resolve_gpu,
    )

    extra = profile_dirs_from_env(env)
    if req.profiles_dir:
        extra.append(Path(req.profiles_dir))  # the flag wins over $VLLMKIT_PROFILES_DIR
    profiles = load_profiles(extra, env=env)
    wants_cpu = req.device == "cpu" or (req.gpu or "").lower() == "cpu"
    if wants_cpu:
        mem = req.gpu_memory or host_memory_bytes()
        return make_cpu_profile(mem, profiles=profiles)
    if req.gpu:
        profile = resolve_gpu(req.gpu, profiles=profiles)
        if req.gpu_memory:
            profile = custom_profile(req.gpu_memory, base=profile)
        return profile
    if req.gpu_memory:
        return custom_profile(req.gpu_memory, vendor="amd" if req.device == "rocm" else "nvidia")
    raise UsageError(
        "no GPU given",
        "pass --gpu NAME (see `vllmkit gpus`), --gpu-memory 48GiB, or --device cpu",
        code="no-gpu",
    )

def resolve_draft(req: PlanRequest, rules, env: Mapping[str, str]) -> tuple[tuple[int, object] | None, str | None]:
    """The checkpoint a --speculative-config names (draft model, EAGLE / Medusa head): (weight bytes, arch),
    read like the target (hub, its cache, the catalog offline); else None and, for a draft model, a warning
    (its weights and KV cache cannot be counted; an EAGLE head is then sized from the target's shapes)."""
    from vllmkit.estimate.speculative import EAGLE_METHODS
    from vllmkit.hub.resolve import resolve_model

    spec = req.speculative_config or {}
    model = spec.get("model")
    if not isinstance(model, str) or not model:
        return None, None
    source = req.source if req.source in ("catalog", "hf", "modelscope") else "auto"
    try:
        variant = make_variant(resolve_model(model, source=source, refresh=req.refresh, env=env), rules)
    except VllmkitError as exc:
        if speculative_method(spec) in EAGLE_METHODS:
            return None, None
        return None, (f"speculative draft model {model!r} could not be read ({exc.message}): its weights and "
                      "KV cache are not in the plan")
    return (variant.weight_bytes, variant.arch), None


def build_plan(req: PlanRequest, env: Mapping[str, str] | None = None, *, min_concurrency: float | None = None,
               calibration: CalibrationLookup | None = None, perf: PerfOptions | None = None) -> PlanResult:
    """The plan for `req`. `calibration` looks up measured memory terms (None: estimates only);
    `perf` (a workload and measured performance records) adds the performance section."""
    env = dict(os.environ if env is None else env)
    from vllmkit.hub.resolve import resolve_model

    version, version_src = resolve_version(req.vllm_version, env)
    rules = rules_for(version)
    if req.flashinfer_installed is None and version_src.startswith("installed") and rules.sampler_sorts_without_flashinfer:
        # the installed vLLM serves: whether FlashInfer sits next to it decides the dummy sampler's peak
        from vllmkit.engine.versions import flashinfer_importable

        req = req.model_copy(update={"flashinfer_installed": flashinfer_importable()})
    profile = resolve_gpu_profile(req, env)
    if req.gpu_memory_in_use and profile.memory_bytes and req.gpu_memory_in_use >= profile.memory_bytes:
        raise UsageError(f"--gpu-memory-in-use {req.gpu_memory_in_use / GIB:.2f} GiB is not less than the "
                         f"{profile.memory_bytes / GIB:.2f} GiB of a {profile.display_name}",
                         "give the memory other processes hold on each GPU, e.g. --gpu-memory-in-use 4GiB")
    if req.quantization == "bitsandbytes" and not rules.bitsandbytes_supported:
        raise UsageError(f"vLLM {version} has no bitsandbytes quantization (removed in 0.28.0)",
                         "serve an AWQ or GPTQ 4-bit checkpoint of the model, use --quantization fp8, or plan for "
                         "vLLM 0.27 or older (--vllm-version 0.27.1)", code="quantization-removed")
    meta = resolve_model(req.model, source=req.source, revision=req.revision, refresh=req.refresh, env=env)
    base = make_variant(meta, rules)
    if req.quantization in ("fp8", "ptpc_fp8") and base.arch.quantization is None and base.weight_source == "measured":
        base = online_fp8(base)
    elif req.quantization == "bitsandbytes" and base.arch.quantization is None and base.weight_source == "measured":
        base = online_bnb4(base)
    if (req.dtype or "auto").lower() in ("float32", "float") and base.arch.quantization is None and base.label not in ("fp8", "bitsandbytes"):
        base = served_in_float32(base)
    arch = base.arch
    validate_parallelism(arch, tp=req.tensor_parallel_size, pp=req.pipeline_parallel_size, gpu_count=req.gpu_count, gpus_per_node=profile.gpus_per_node, device=profile.vendor)
    warnings = list(arch.warnings) + [n for n in meta.notes if n.startswith("offline")]
    if (version_src == "--vllm-version" or untagged_build(version)) and (vw := version_warning(version)):
        warnings.append(vw)  # issue 13
    if arch.quantization is not None and (qw := quant_method_warning(arch.quantization.method)):
        warnings.append(qw)
    elif arch.quantization is not None and arch.quantization.method == "bitsandbytes" and not rules.bitsandbytes_supported:
        warnings.append(f"a bitsandbytes checkpoint: vLLM {version} has no bitsandbytes quantization (removed in "
                        "0.28.0) and will refuse to load it; serve it with vLLM 0.27 or older, or use an AWQ / GPTQ "
                        "checkpoint of the model")

    native = arch.native_max_model_len
    auto_fit = req.max_model_len == "auto"
    user_len = req.max_model_len if isinstance(req.max_model_len, int) else None
    if user_len is not None and user_len > native and env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "0") in ("0", "", "false"):
        raise UsageError(
            f"--max-model-len {user_len} is greater than the model's native context "
            f"({arch.native_max_model_len_key} = {native}); vLLM refuses it",
            f"use --max-model-len {native} or less (or set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 for RoPE-scaled use)",
            code="max-model-len-exceeds-native",
        )
    need = perf.min_context if perf is not None else 0
    if perf is not None and perf.workload is not None:
        need = request_tokens(perf.workload.input_len, perf.workload.output_len)
    if need:
        check_request_length(need, native, user_len)
    min_conc = DEFAULT_MIN_CONCURRENCY if min_concurrency is None else min_concurrency
    if req.kv_cache_memory_bytes is not None or user_len is not None or auto_fit:
        min_conc_for_fit = 0.0  # the user fixed the context: report it as is
    else:
        min_conc_for_fit = min_conc

    fixed_precision = (req.quantization is not None or req.tensor_parallel_size or req.source == "local"
                       or profile.vendor == "cpu" or base.label == "fp32")  # --dtype float32 asks for this checkpoint
    variants = [base] if fixed_precision else [base, *sibling_variants(meta, rules, base, env)]
    kv_dtype = req.kv_cache_dtype or "auto"
    validate_kv_cache_dtype(kv_dtype, version=version, vendor=profile.vendor, arch=arch,
                            compute_capability=profile.capability)
    draft, draft_warning = resolve_draft(req, rules, env)
    if draft_warning:
        warnings.append(draft_warning)
    candidates = evaluate_candidates(req, variants, base, profile, rules, kv_dtype, target_len=user_len or native,
                                     auto_fit=auto_fit, min_conc_for_fit=min_conc_for_fit, calibration=calibration,
                                     env=env, min_len=need, draft=draft)
    chosen = choose(candidates)
    if need and chosen.evaluation.max_model_len < need:  # prefer an option that holds one request of the workload
        holding = [c for c in candidates if c.evaluation.fits and c.evaluation.max_model_len >= need]
        if holding:
            chosen = choose(holding)
    if fw := flashinfer_assumption_warning(chosen, rules):
        warnings.append(fw)
    if sw := shared_gpu_warning(chosen, rules):
        warnings.append(sw)
    if pw := platform_warning(profile, rules):
        warnings.append(pw)
    if uw := unified_memory_warning(profile):
        warnings.append(uw)
    result = plan_result(req, chosen, candidates, profile, rules, version, version_src, meta, warnings, kv_dtype)
    if perf is not None:  # --- performance model (issue 11): plan/performance.py ---
        attach_performance(result, chosen, candidates, profile, rules, perf, tp_given=req.tensor_parallel_size)
    return result


__all__ = ["build_plan", "does_not_fit_error", "resolve_gpu_profile"]
