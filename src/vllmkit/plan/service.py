"""`vllmkit plan`: resolve the model and the GPU, evaluate candidates, recommend one.

Recommendation rules (issue #2, seeds/004 §6): FP8 weights need native FP8 (NVIDIA sm >= 8.9,
AMD gfx942+); Marlin INT4 (AWQ/GPTQ) is CUDA-only (sm >= 8.0) and ranks after FP8 on ROCm;
small models (<= ~8B) keep BF16 when it fits; MI300-class GPUs prefer FP8. Then the fewest GPUs
(smallest valid TP within one node, then PP across nodes), then the largest context that keeps at
least `min_concurrency` requests of that length in the KV cache.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from vllmkit.arch import ModelArch, read_arch
from vllmkit.engine.versions import VersionRules, resolve_version, rules_for
from vllmkit.errors import DoesNotFitError, UsageError
from vllmkit.estimate.specs import effective_kv_cache_dtype, kv_bytes_per_token_full
from vllmkit.estimate.weights import estimate_param_bytes
from vllmkit.hub.base import ModelMetadata
from vllmkit.plan.evaluate import EngineSettings, Evaluation, evaluate, valid_tp_sizes
from vllmkit.plan.models import (
    Alternative,
    GpuInfo,
    KVCacheInfo,
    KVGroupInfo,
    MemoryInfo,
    ModelInfo,
    ParallelInfo,
    PlanRequest,
    PlanResult,
    SettingsInfo,
)
from vllmkit.plan.validate import validate_parallelism

GIB = 1 << 30
DEFAULT_MIN_CONCURRENCY = 4.0
CONTEXT_FLOOR = 16384  # a recommended context shorter than this (or the native one) is a last resort
_QUALITY = {"bf16": 0, "fp16": 0, "fp8": 1, "int8": 2, "mxfp4": 2, "nvfp4": 3, "awq": 3, "gptq-int4": 3, "gptq-int8": 2}


@dataclass
class Variant:
    label: str  # bf16 / fp8 / awq / gptq-int4 ...
    meta: ModelMetadata
    arch: ModelArch
    weight_bytes: int
    weight_source: str  # measured | estimated


@dataclass
class Candidate:
    variant: Variant
    evaluation: Evaluation
    allowed: bool
    note: str
    rank: tuple[float, ...]
    settings: EngineSettings


# ----------------------------------------------------------------------------- inputs


def _variant_label(meta: ModelMetadata, arch: ModelArch) -> str:
    q = arch.quantization
    if q is None:
        return "fp16" if arch.dtype == "float16" else "bf16"
    method = q.method
    if method in ("fp8", "fbgemm_fp8", "ptpc_fp8") or (
        method == "compressed-tensors" and q.bits == 8 and (q.weight_format or "").startswith("float")
    ):
        return "fp8"
    if method in ("awq", "awq_marlin"):
        return "awq"
    if method in ("gptq", "gptq_marlin"):
        return f"gptq-int{q.bits or 4}"
    if method == "compressed-tensors":
        return "int8" if q.bits == 8 else f"int{q.bits or 4}"
    return method


def _weights(meta: ModelMetadata, arch: ModelArch) -> tuple[int, str]:
    if meta.tensor_bytes:
        return meta.tensor_bytes, "measured"
    files = meta.weight_file_bytes()
    if files:
        return files, "measured"
    return estimate_param_bytes(arch), "estimated"


def make_variant(meta: ModelMetadata, rules: VersionRules) -> Variant:
    arch = read_arch(meta.config, tokenizer_config=meta.tokenizer_config, yarn_scaled_max_len=rules.yarn_scales_max_len)
    total, src = _weights(meta, arch)
    return Variant(_variant_label(meta, arch), meta, arch, total, src)


def _online_fp8(variant: Variant) -> Variant:
    """--quantization fp8 on a 16-bit checkpoint: vLLM quantizes the linear layers to 1 byte per
    weight at load; embeddings, lm_head and norms stay 16-bit."""
    arch = variant.arch
    embed = arch.vocab_size * arch.hidden_size * 2
    head = 0 if arch.tie_word_embeddings else embed
    body = max(variant.weight_bytes - embed - head, 0)
    return Variant("fp8", variant.meta, arch, embed + head + body // 2, "derived")


_SIBLING_QUANT = {"fp8": ("fp8", 8), "awq": ("awq", 4), "gptq-int4": ("gptq", 4), "gptq-int8": ("gptq", 8),
                  "int8": ("compressed-tensors", 8), "int4": ("compressed-tensors", 4), "nvfp4": ("modelopt_fp4", 4)}


def _hub_sibling_variants(base: Variant, env: Mapping[str, str]) -> list[Variant]:
    """Official / well-known quantized siblings found on the hub the model came from, with their real
    file sizes; the architecture is the base model's (same shapes), labelled with the sibling's method."""
    from vllmkit.arch.model import QuantFacts
    from vllmkit.hub.siblings import find_siblings

    out = []
    for sib in find_siblings(base.meta.id, source=base.meta.source, env=env):
        if not sib.weight_files_bytes or sib.precision not in _SIBLING_QUANT:
            continue
        method, bits = _SIBLING_QUANT[sib.precision]
        arch = base.arch.model_copy(update={"quantization": QuantFacts(method=method, bits=bits)})
        meta = ModelMetadata(id=sib.id, source=sib.source, config=base.meta.config,
                             provenance={"weights": f"{sib.source} file listing of {sib.id}"},
                             notes=[f"sibling of {base.meta.id} published by {sib.publisher or 'the same organisation'}"])
        out.append(Variant(sib.precision, meta, arch, int(sib.weight_files_bytes), "measured"))
    return out


def _sibling_variants(meta: ModelMetadata, rules: VersionRules, base: Variant | None = None,
                      env: Mapping[str, str] | None = None) -> list[Variant]:
    """Quantized (or full-precision) siblings: from the hub when the model came from one, else from
    the bundled catalog."""
    if meta.source == "local":
        return []
    if meta.source in ("hf", "modelscope") and base is not None and env is not None:
        return _hub_sibling_variants(base, env)
    from vllmkit.hub.catalog import catalog_siblings, entry_to_metadata

    out = []
    for entry in catalog_siblings(meta.id):
        if entry.id.lower() == meta.id.lower():
            continue
        try:
            out.append(make_variant(entry_to_metadata(entry), rules))
        except Exception:  # a broken sibling never breaks the plan of the model asked for
            continue
    return out


def _host_memory_bytes() -> int:
    """Memory the vLLM CPU worker sizes against: NUMA node 0's MemTotal
    (vllm/utils/cpu_resource_utils.py get_memory_node_info), else the system total, clamped to the
    cgroup memory limit (containers)."""
    total = 0
    try:
        with open("/sys/devices/system/node/node0/meminfo", encoding="ascii") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 4 and parts[2] == "MemTotal:":
                    total = int(parts[3]) * 1024
                    break
    except OSError:
        pass
    if not total:
        try:
            with open("/proc/meminfo", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("MemTotal:"):
                        total = int(line.split()[1]) * 1024
                        break
        except OSError:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as fh:
            limit = fh.read().strip()
        if limit.isdigit() and 0 < int(limit) < total:
            total = int(limit)
    except OSError:
        pass
    return total


@functools.lru_cache(maxsize=1)
def _cpu_flags() -> frozenset[str]:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def _cpu_has_amx() -> bool:
    """vLLM's CPU MLA uses AMX kernels (block size 128) when torch sees AMX tiles."""
    return "amx_tile" in _cpu_flags()


def _cpu_has_avx512_bf16() -> bool:
    """vLLM's CPU platform then stores SSM state in float32 (accelerated GDN backend)."""
    return "avx512_bf16" in _cpu_flags()


def _resolve_gpu(req: PlanRequest, env: Mapping[str, str]):  # -> GpuProfile
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
        mem = req.gpu_memory or _host_memory_bytes()
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


def batch_defaults(profile, rules: VersionRules, world_size: int) -> tuple[int, int]:
    """vLLM EngineArgs.get_batch_defaults for the OpenAI API server."""
    if profile.vendor == "cpu":
        return 2048 * world_size, 128 * world_size
    mem = profile.memory_bytes or 0
    if mem >= 160 * GIB and rules.large_gpu_batch_defaults:
        return 16384, 1024
    if mem >= 70 * GIB and "a100" not in profile.display_name.lower():
        return 8192, 1024
    return 2048, 256


# ----------------------------------------------------------------------------- ranking


def _precision_allowed(label: str, profile) -> tuple[bool, str]:
    if profile.vendor == "cpu":
        return label in ("bf16", "fp16"), "" if label in ("bf16", "fp16") else "quantized checkpoints are not planned on CPU"
    if label == "fp8" and not profile.fp8_supported:
        return False, f"{profile.display_name} has no native FP8 (needs sm >= 8.9 or gfx942+)"
    if label in ("nvfp4",) and not profile.supports.fp4:
        return False, "NVFP4 needs Blackwell"
    if label in ("awq", "gptq-int4") and profile.vendor == "nvidia" and not profile.marlin_supported:
        return True, "no Marlin INT4 kernels below sm 8.0 (slower fallback kernels)"
    return True, ""


def _precision_rank(label: str, variant: Variant, profile) -> float:
    rank = float(_QUALITY.get(label, 4))
    if profile.vendor == "amd" and profile.fp8_supported:
        # MI300-class: FP8 is native and the most mature path; AWQ/GPTQ kernels are CUDA-first
        rank = {"fp8": 0.0, "bf16": 0.5, "fp16": 0.5}.get(label, rank + 1.0)
    return rank


# ----------------------------------------------------------------------------- planning


def _calibrated_terms(req: PlanRequest, profile, rules: VersionRules, arch: ModelArch | None, mnbt: int,
                      tp: int, pp: int, env: Mapping[str, str] | None) -> tuple[dict, str | None]:
    """Closest calibration recorded from real startups (vllmkit.calibration), if any."""
    if env is None or arch is None or env.get("VLLMKIT_NO_CALIBRATION") == "1":
        return {}, None
    try:
        from vllmkit.calibration.store import lookup_terms
    except ImportError:
        return {}, None
    return lookup_terms(
        gpu=profile.name, vllm_version=rules.version, family=arch.model_type, max_num_batched_tokens=mnbt,
        tp=tp, pp=pp, enforce_eager=req.enforce_eager, env=env, model=req.model,
        device_bytes=int(profile.memory_bytes or 0) or None,
    )


def _engine_settings(req: PlanRequest, profile, rules: VersionRules, world_size: int, kv_dtype: str,
                     arch: ModelArch | None = None, env: Mapping[str, str] | None = None,
                     tp: int = 1, pp: int = 1) -> EngineSettings:
    mnbt, seqs = batch_defaults(profile, rules, world_size)
    cc = float(profile.compute_capability) if profile.compute_capability else None
    calibrated, calibration_source = _calibrated_terms(req, profile, rules, arch, req.max_num_batched_tokens or mnbt,
                                                       tp, pp, env)
    return EngineSettings(
        device=profile.runtime,
        vendor=profile.vendor,
        total_bytes=int(profile.memory_bytes or 0),
        gpu_memory_utilization=req.gpu_memory_utilization or rules.gpu_memory_utilization,
        max_num_batched_tokens=req.max_num_batched_tokens or mnbt,
        max_num_seqs=req.max_num_seqs or seqs,
        kv_cache_dtype=kv_dtype,
        block_size=req.block_size,
        enforce_eager=req.enforce_eager,
        prefix_caching=(
            req.enable_prefix_caching if req.enable_prefix_caching is not None
            else not (arch is not None and arch.mamba is not None and not rules.hybrid_prefix_caching)
        ),
        kv_cache_memory_bytes=req.kv_cache_memory_bytes,
        compute_capability=cc,
        cpu_amx=_cpu_has_amx() if profile.vendor == "cpu" else False,
        cpu_avx512_bf16=_cpu_has_avx512_bf16() if profile.vendor == "cpu" else False,
        calibrated=calibrated,
        calibration_source=calibration_source,
    )


def _mtp_layers(arch: ModelArch, meta: ModelMetadata) -> int:
    """Multi-token-prediction layers in the checkpoint that vLLM loads only for speculative decoding
    (DeepSeek-V3/GLM-4.5 num_nextn_predict_layers, Qwen3-Next mtp_num_hidden_layers)."""
    for key in ("num_nextn_predict_layers", "mtp_num_hidden_layers"):
        n = meta.config.get(key)
        if isinstance(n, int) and n > 0:
            return n
    return 0


def _mtp_own_embeddings(meta: ModelMetadata) -> bool:
    """DeepSeek/GLM MTP layers carry their own embed_tokens + shared_head; Qwen3-Next's share the
    main ones (mtp_use_dedicated_embeddings false)."""
    return "mtp_num_hidden_layers" not in meta.config or bool(meta.config.get("mtp_use_dedicated_embeddings"))


# MXFP4 expert weights are repacked for the GPU MoE kernels at load: vLLM's "Model loading took"
# is 6-9 % above the checkpoint bytes (gpt-oss-120b on H100: 65.97 GiB in vllm#23278 (0.10.1), 64.38 GiB
# in vllm#33155 (0.14.1) vs 60.77 GiB of files; gpt-oss-20b on A100: 13.72 vs 12.82 GiB, public log).
MXFP4_GPU_LOAD_FACTOR = 1.07


def _loaded_weight_bytes(variant: Variant, settings: EngineSettings) -> tuple[int, str]:
    q = variant.arch.quantization
    if q is not None and q.method == "mxfp4" and settings.device in ("cuda", "rocm"):
        return int(variant.weight_bytes * MXFP4_GPU_LOAD_FACTOR), "estimated"
    return variant.weight_bytes, variant.weight_source


def _evaluate(variant: Variant, tp: int, pp: int, max_model_len: int, auto_fit: bool, settings: EngineSettings,
              rules: VersionRules) -> Evaluation:
    weight_bytes, weight_source = _loaded_weight_bytes(variant, settings)
    return evaluate(variant.arch, weight_bytes, weight_source, tp=tp, pp=pp,
                    max_model_len=max_model_len, auto_fit=auto_fit, settings=settings, rules=rules,
                    mtp_layers=_mtp_layers(variant.arch, variant.meta),
                    mtp_own_embeddings=_mtp_own_embeddings(variant.meta))


def _fit_context(variant: Variant, tp: int, pp: int, native: int, min_conc: float, settings: EngineSettings,
                 rules: VersionRules) -> Evaluation:
    """Largest context (<= native) that keeps min_conc requests of that length in the KV cache."""
    ev = _evaluate(variant, tp, pp, native, False, settings, rules)
    if ev.fits and ev.capacity.max_concurrency >= min_conc:
        return ev
    lo, hi, best = 1, native, None
    while lo <= hi:
        mid = (lo + hi) // 2
        trial = _evaluate(variant, tp, pp, mid, False, settings, rules)
        if trial.fits and trial.capacity.max_concurrency >= min_conc:
            best, lo = trial, mid + 1
        else:
            hi = mid - 1
    if best is None:
        return ev
    # round to a multiple of 1024 for a readable flag (never above what fits)
    length = best.max_model_len
    if length > 4096:
        length = length // 1024 * 1024
        best = _evaluate(variant, tp, pp, length, False, settings, rules)
    return best


def _gpu_options(arch: ModelArch, profile, req: PlanRequest) -> list[tuple[int, int]]:
    if req.tensor_parallel_size or req.pipeline_parallel_size:
        return [(req.tensor_parallel_size or 1, req.pipeline_parallel_size or 1)]
    if profile.vendor == "cpu":
        return [(1, 1)]
    per_node = max(profile.gpus_per_node, 1)
    limit = req.gpu_count or per_node * 4
    options = [(tp, 1) for tp in valid_tp_sizes(arch, min(per_node, limit))]
    top_tp = max(t for t, _ in options)
    pp = 2
    while top_tp * pp <= limit and pp <= arch.num_hidden_layers:
        options.append((top_tp, pp))
        pp *= 2
    return options


def build_plan(req: PlanRequest, env: Mapping[str, str] | None = None, *, min_concurrency: float | None = None) -> PlanResult:
    env = dict(os.environ if env is None else env)
    from vllmkit.hub.resolve import resolve_model

    version, version_src = resolve_version(req.vllm_version, env)
    rules = rules_for(version)
    profile = _resolve_gpu(req, env)
    meta = resolve_model(req.model, source=req.source, revision=req.revision, refresh=req.refresh, env=env)
    base = make_variant(meta, rules)
    if req.quantization in ("fp8", "ptpc_fp8") and base.arch.quantization is None and base.weight_source == "measured":
        base = _online_fp8(base)
    arch = base.arch
    validate_parallelism(arch, tp=req.tensor_parallel_size, pp=req.pipeline_parallel_size, gpu_count=req.gpu_count, gpus_per_node=profile.gpus_per_node, device=profile.vendor)
    warnings = list(arch.warnings) + [n for n in meta.notes if n.startswith("offline")]

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
    target_len = user_len or native
    min_conc = DEFAULT_MIN_CONCURRENCY if min_concurrency is None else min_concurrency
    if req.kv_cache_memory_bytes is not None or user_len is not None or auto_fit:
        min_conc_for_fit = 0.0  # the user fixed the context: report it as is
    else:
        min_conc_for_fit = min_conc

    fixed_precision = req.quantization is not None or req.tensor_parallel_size or req.source == "local" or profile.vendor == "cpu"
    variants = [base] if fixed_precision else [base, *_sibling_variants(meta, rules, base, env)]

    kv_dtype = req.kv_cache_dtype or "auto"
    candidates: list[Candidate] = []
    for variant in variants:
        allowed, why = _precision_allowed(variant.label, profile)
        if variant is base:
            allowed = True  # what the user asked for is always evaluated and may be chosen
        extra_after_fit = 1  # show one larger option after the first that fits, then stop
        for tp, pp in _gpu_options(variant.arch, profile, req):
            if tp * pp > 1 and profile.vendor == "cpu":
                continue
            if extra_after_fit < 0:
                break
            settings = _engine_settings(req, profile, rules, tp * pp, kv_dtype, variant.arch, env, tp, pp)
            if auto_fit:
                ev = _evaluate(variant, tp, pp, min(target_len, variant.arch.native_max_model_len), True, settings, rules)
            elif min_conc_for_fit > 0:
                ev = _fit_context(variant, tp, pp, variant.arch.native_max_model_len, min_conc_for_fit, settings, rules)
            else:
                ev = _evaluate(variant, tp, pp, target_len, False, settings, rules)
            # useful: fits, and when the planner chooses the context, a context of at least
            # min(native, 16K) with min_concurrency requests of that length
            floor = min(variant.arch.native_max_model_len, CONTEXT_FLOOR) if min_conc_for_fit > 0 else 0
            useful = ev.fits and ev.max_model_len >= floor
            prec = _precision_rank(variant.label, variant, profile)
            small_model = base.weight_bytes <= 17 * 10**9 and variant.label in ("bf16", "fp16")
            gpus = tp * pp
            tier = 0 if useful else (1 if ev.fits else 2)
            if req.gpu_count:
                rank = (tier, prec - (0.5 if small_model else 0), gpus, -ev.max_model_len)
            else:
                rank = (tier, gpus, prec - (0.5 if small_model else 0), -ev.max_model_len)
            candidates.append(Candidate(variant, ev, allowed, why, rank, settings))
            if useful and not req.gpu_count:
                extra_after_fit -= 1

    pool = [c for c in candidates if c.allowed] or candidates
    chosen = min(pool, key=lambda c: c.rank)
    return _result(req, env, chosen, candidates, profile, rules, version, version_src, meta, warnings, kv_dtype)


# ----------------------------------------------------------------------------- result


def _reasons(chosen: Candidate, profile, candidates: list[Candidate]) -> list[str]:
    ev = chosen.evaluation
    out = []
    fitting = [c for c in candidates if c.evaluation.fits and c.allowed]
    if not ev.fits:
        out.append("nothing considered fits; showing the closest option")
        return out
    out.append(f"{chosen.variant.label.upper()} weights ({chosen.variant.weight_bytes / GIB:.1f} GiB total) on "
               f"{ev.tp * ev.pp} x {profile.display_name}")
    fewer = [c for c in fitting if c.evaluation.tp * c.evaluation.pp < ev.tp * ev.pp]
    if not fewer:
        out.append(f"TP={ev.tp} PP={ev.pp} is the smallest valid parallelism that fits")
    if profile.vendor == "amd" and chosen.variant.label == "fp8":
        out.append("MI300-class GPUs run FP8 natively (e4m3fnuz); AWQ/GPTQ kernels are CUDA-first")
    out.append(f"context {ev.max_model_len:,} tokens leaves {ev.capacity.max_concurrency:.2f} concurrent requests of that length")
    return out


def _alternative(c: Candidate, chosen: Candidate) -> Alternative:
    ev = c.evaluation
    note = c.note
    if not ev.fits:
        note = note or ("no KV memory" if ev.capacity.no_memory else f"fits up to {ev.capacity.estimated_max_model_len or 0:,} tokens")
    return Alternative(
        precision=c.variant.label,
        model_id=c.variant.meta.id,
        tensor_parallel_size=ev.tp,
        pipeline_parallel_size=ev.pp,
        max_model_len=ev.max_model_len,
        fits=ev.fits,
        kv_tokens=ev.capacity.tokens if ev.fits else 0,
        max_concurrency=round(ev.capacity.max_concurrency, 2) if ev.fits else 0.0,
        weights_bytes=ev.budget.weights.bytes,
        chosen=c is chosen,
        note=note,
    )


def _result(req: PlanRequest, env: Mapping[str, str], chosen: Candidate, candidates: list[Candidate], profile,
            rules: VersionRules, version: str, version_src: str, meta: ModelMetadata, warnings: list[str],
            kv_dtype: str) -> PlanResult:
    ev = chosen.evaluation
    variant = chosen.variant
    arch = variant.arch
    budget = ev.budget
    settings = chosen.settings
    groups = []
    for g in ev.groups:
        spec = g.specs[0]
        groups.append(KVGroupInfo(kind=spec.kind.value, layers=len(g.specs), block_size=spec.block_size,
                                  page_bytes=spec.page_bytes,
                                  blocks_per_request=g.pages_per_request(ev.max_model_len, ev.in_flight_tokens)))
    attn_layers_stage = None
    if ev.pp > 1:
        from vllmkit.estimate.specs import pp_layer_ranges

        stage = pp_layer_ranges(arch.num_hidden_layers, ev.pp)[ev.tightest_stage]
        attn_layers_stage = sum(1 for i in stage if arch.layer_kinds[i].value in ("full", "sliding", "chunked", "mla"))
    memory = MemoryInfo(
        total_bytes=budget.total_bytes,
        requested_bytes=budget.requested_bytes,
        weights_bytes=budget.weights.bytes,
        activation_bytes=budget.activation.bytes,
        non_torch_bytes=budget.non_torch.bytes,
        cudagraph_bytes=budget.cudagraph.bytes,
        kv_cache_bytes=budget.kv_cache.bytes,
        sources={
            "weights": budget.weights.source,  # type: ignore[dict-item]
            "non_torch": budget.non_torch.source,  # type: ignore[dict-item]
            "activation": budget.activation.source,  # type: ignore[dict-item]
            "cudagraph": budget.cudagraph.source,  # type: ignore[dict-item]
            "kv_cache": budget.kv_cache.source,  # type: ignore[dict-item]
        },
        notes={k: t.note for k, t in (("weights", budget.weights), ("non_torch", budget.non_torch),
                                      ("activation", budget.activation), ("cudagraph", budget.cudagraph),
                                      ("kv_cache", budget.kv_cache)) if t.note},
    )
    cap = ev.capacity
    kv_info = KVCacheInfo(
        bytes_per_token=kv_bytes_per_token_full(arch, ev.tp, kv_dtype, attn_layers_stage),
        block_size=ev.specs.block_size,
        num_blocks=cap.num_blocks,
        tokens=cap.tokens,
        max_model_len=ev.max_model_len,
        max_concurrency=round(cap.max_concurrency, 4),
        bytes_per_block=cap.bytes_per_block,
        groups=groups,
    )
    nodes = max(1, -(-(ev.tp * ev.pp) // max(profile.gpus_per_node, 1))) if profile.vendor != "cpu" else 1
    quant_flag = None
    if req.quantization:
        quant_flag = req.quantization
    result = PlanResult(
        model=ModelInfo(
            id=variant.meta.id,
            source=variant.meta.source,
            revision=variant.meta.revision,
            path=variant.meta.id if variant.meta.source == "local" else None,
            architecture=(arch.architectures or [arch.model_type])[0],
            model_type=arch.model_type,
            dtype=arch.dtype,
            quantization=arch.quantization.method if arch.quantization else None,
            native_max_model_len=arch.native_max_model_len,
            trust_remote_code=arch.trust_remote_code,
            weight_files_bytes=variant.meta.weight_file_bytes(),
            is_moe=arch.moe is not None,
            is_hybrid=arch.is_hybrid,
        ),
        gpu=GpuInfo(
            name=profile.name,
            display_name=profile.display_name,
            vendor=profile.vendor,
            count=ev.tp * ev.pp,
            memory_bytes=int(profile.memory_bytes or 0),
            gpus_per_node=profile.gpus_per_node,
            nodes=nodes,
        ),
        device=profile.runtime,
        vllm_version=version,
        vllm_version_source=version_src,
        parallel=ParallelInfo(tensor_parallel_size=ev.tp, pipeline_parallel_size=ev.pp, nodes=nodes),
        settings=SettingsInfo(
            gpu_memory_utilization=settings.gpu_memory_utilization,
            max_model_len=ev.max_model_len,
            max_num_seqs=settings.max_num_seqs,
            max_num_batched_tokens=settings.max_num_batched_tokens,
            kv_cache_dtype=kv_dtype,
            dtype=_serving_dtype(req, arch, profile, warnings),
            quantization=quant_flag,
            block_size=ev.specs.block_size,
            enforce_eager=req.enforce_eager,
            kv_cache_memory_bytes=req.kv_cache_memory_bytes,
            enable_prefix_caching=settings.prefix_caching,
        ),
        memory=memory,
        kv_cache=kv_info,
        fits=ev.fits,
        estimated_max_model_len=None if ev.fits else cap.estimated_max_model_len,
        alternatives=[_alternative(c, chosen) for c in candidates],
        reasons=_reasons(chosen, profile, candidates),
        calibration=settings.calibration_source,
        warnings=warnings + _kv_dtype_note(kv_dtype, arch),
    )
    argv, serve_env = _serve_command(result, req)
    result.serve_command = argv
    result.serve_env = serve_env
    return result


def _kv_dtype_note(kv_dtype: str, arch: ModelArch) -> list[str]:
    """The checkpoint declares a quantized KV cache: "auto" then means fp8, not the model dtype."""
    if kv_dtype == "auto" and arch.quantization and arch.quantization.kv_cache_scheme:
        return [f"KV cache dtype: {effective_kv_cache_dtype(kv_dtype, arch)}"]
    return []


def _serving_dtype(req: PlanRequest, arch: ModelArch, profile, warnings: list[str]) -> str:
    """--dtype only when needed: a BF16 checkpoint on a GPU without BF16 (V100, T4: sm < 8.0) must be
    served as float16 ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0")."""
    if req.dtype != "auto":
        return req.dtype
    if arch.dtype == "bfloat16" and profile.vendor != "cpu" and not profile.supports.bf16:
        warnings.append(f"{profile.display_name} has no BF16: serving the BF16 checkpoint as float16 (--dtype half)")
        return "half"
    return "auto"


def _serve_command(plan: PlanResult, req: PlanRequest) -> tuple[list[str], dict[str, str]]:
    try:
        from vllmkit.launch.command import build_serve_command
    except ImportError:
        build_serve_command = None  # type: ignore[assignment]
    if build_serve_command is not None:
        cmd = build_serve_command(plan, req)
        return list(cmd.redacted_argv), dict(cmd.env)
    argv = ["vllm", "serve", plan.model.path or plan.model.id,
            "--tensor-parallel-size", str(plan.parallel.tensor_parallel_size),
            "--max-model-len", str(plan.settings.max_model_len)]
    if plan.parallel.pipeline_parallel_size > 1:
        argv += ["--pipeline-parallel-size", str(plan.parallel.pipeline_parallel_size)]
    if req.kv_cache_memory_bytes is not None:
        argv += ["--kv-cache-memory-bytes", str(req.kv_cache_memory_bytes)]
    return argv, {}


def does_not_fit_error(plan: PlanResult) -> DoesNotFitError | None:
    """The exit-3 error for a plan vLLM would refuse (None when it fits)."""
    if plan.fits:
        return None
    est = plan.estimated_max_model_len
    if est:
        hint = f"use --max-model-len {est} (vLLM's estimate), a quantized variant, --kv-cache-dtype fp8 or more GPUs"
    else:
        hint = "the weights leave no KV memory: use a quantized variant or more GPUs (--tensor-parallel-size)"
    return DoesNotFitError(
        f"{plan.model.id} does not fit on {plan.gpu.count} x {plan.gpu.display_name} at max_model_len "
        f"{plan.settings.max_model_len:,}",
        hint,
    )


__all__ = ["build_plan", "does_not_fit_error"]
