"""Deployment candidates: each model variant x (TP, PP) on the GPU, with vLLM's engine settings for
it and its context length (the user's, vLLM's auto-fit, or the largest that keeps
`min_concurrency` requests of that length in the KV cache)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from vllmkit.arch import ModelArch
from vllmkit.engine.versions import (
    VOLTA_DROPPED,
    EngineAsks,
    VersionRules,
    parse_version,
    v0_batch_defaults,
    v1_oracle,
)
from vllmkit.errors import UsageError
from vllmkit.estimate.memory import MemoryTerm
from vllmkit.estimate.weights import LoadGrowth, mla_absorbed_bytes, rocm_fp8_padding
from vllmkit.hardware.host import cpu_has_amx, cpu_has_avx512_bf16
from vllmkit.plan.evaluate import (
    EngineSettings,
    Evaluation,
    Prepared,
    at_length,
    charges_other_processes,
    prepare,
    valid_tp_sizes,
)
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.ranking import precision_allowed, rank
from vllmkit.plan.variants import (
    Variant,
    fp8_linears_padded,
    loaded_weight_bytes,
    mtp_layers,
    mtp_own_embeddings,
)
from vllmkit.units import GIB

CONTEXT_FLOOR = 16384  # a recommended context shorter than this (or the native one) is a last resort

# calibrated memory terms for one candidate, and where they came from (vllmkit.calibration hands
# this in: plan never reads the store itself)
CalibrationLookup = Callable[..., tuple[dict[str, MemoryTerm], str | None]]


@dataclass
class Candidate:
    variant: Variant
    evaluation: Evaluation
    allowed: bool
    note: str
    rank: tuple[float, ...]
    settings: EngineSettings
    listed: bool = True  # shown among the alternatives (not: fits only at a context nobody would use)
    # vLLM's default max_num_seqs and the context it left (0: none), where the plan lowered it (fewer_sequences)
    seqs_lowered_from: tuple[int, int] | None = None


def batch_defaults(profile, rules: VersionRules, world_size: int) -> tuple[int, int]:
    """vLLM EngineArgs.get_batch_defaults for the OpenAI API server."""
    if profile.vendor == "cpu":
        return 2048 * world_size, 128 * world_size
    # NVML's memory total; where NVML has none (GB10) vLLM's query raises and it takes the small defaults
    mem = (profile.memory_bytes or 0) if getattr(profile, "nvml_memory_info", True) else 0
    if mem >= 160 * GIB and rules.large_gpu_batch_defaults:
        return 16384, 1024
    if mem >= 70 * GIB and "a100" not in profile.display_name.lower():
        return 8192, 1024
    return 2048, 256


def scheduler_max_num_seqs(given: int | None, default: int, max_num_batched_tokens: int, *, v1: bool) -> int:
    """max_num_seqs as vLLM's scheduler gets it. The V1 engine's default is capped at
    max_num_batched_tokens (EngineArgs._set_default_args_v1, 0.10: min(default, max_num_batched_tokens);
    0.28 / 0.32 the same when --max-num-seqs is not given); SchedulerConfig refuses more sequences
    than batched tokens ("max_num_batched_tokens (N) must be greater than or equal to max_num_seqs",
    vllm/config.py 0.6.4 and config/scheduler.py 0.32), which the V0 default of 256 can hit."""
    seqs = given or default
    if given is None and v1:
        seqs = min(seqs, max_num_batched_tokens)
    if seqs > max_num_batched_tokens:
        raise UsageError(f"vLLM refuses --max-num-batched-tokens {max_num_batched_tokens} below max_num_seqs {seqs}: "
                         "each scheduled sequence needs at least one token of the step",
                         f"use --max-num-batched-tokens {seqs} or more, or --max-num-seqs {max_num_batched_tokens}")
    return seqs


def engine_settings(req: PlanRequest, profile, rules: VersionRules, kv_dtype: str, arch: ModelArch,
                    tp: int, pp: int, calibration: CalibrationLookup | None,
                    env: dict[str, str] | None = None, draft: tuple[int, ModelArch] | None = None) -> EngineSettings:
    mnbt, seqs = batch_defaults(profile, rules, tp * pp)
    target = req.max_model_len if isinstance(req.max_model_len, int) else arch.native_max_model_len
    cc = profile.capability
    # the serve command passes --distributed-executor-backend ray when the replica spans nodes (launch/command.py)
    spec = req.speculative_config or {}
    quant = req.quantization or (arch.quantization.method if arch.quantization is not None else None)
    asks = EngineAsks(kv_cache_dtype=kv_dtype, float32=(req.dtype or "").lower() in ("float32", "float"),
                      quantization=quant, lora=req.enable_lora, cpu_offload=bool(req.cpu_offload_gb),
                      speculative_method=spec.get("method") if isinstance(spec.get("method"), str) else None,
                      speculative_model=spec.get("model") if isinstance(spec.get("model"), str) else None,
                      state_layers=arch.mamba is not None,
                      architecture=arch.architectures[0] if arch.architectures else None,
                      mla=arch.mla is not None and rules.mla_cache)
    verdict = v1_oracle(rules, env or {}, vendor=profile.vendor, compute_capability=cc, pipeline_parallel=pp,
                        ray_executor=tp * pp > max(profile.gpus_per_node or 1, 1), asks=asks)
    if req.cpu_offload_gb and profile.vendor == "cpu":
        raise UsageError("--cpu-offload-gb moves GPU weights to host memory; the CPU backend has no GPU",
                         "leave it out, or plan for a GPU (--gpu)")
    if req.mamba_ssm_cache_dtype is not None and rules.key < (0, 10, 1):
        # engine/arg_utils.py: --mamba-ssm-cache-dtype first appears in 0.10.1 (absent from 0.10.0's)
        raise UsageError(f"vLLM {rules.version} has no --mamba-ssm-cache-dtype (added in 0.10.1)",
                         "leave it out, or plan for --vllm-version 0.10.1 or newer")
    mrv2 = uses_model_runner_v2(req, arch, rules, profile.runtime, env)
    check_async_scheduling(req.async_scheduling, rules, pp, spec, mrv2=mrv2)
    if verdict.refused:
        raise UsageError(f"vLLM {rules.version} will not start this: {verdict.refused}", verdict.hint)
    v1 = verdict.v1
    v0_engine = not v1 and profile.vendor != "cpu"
    chunked = True  # V1 always splits prompts under the token budget and mixes them with decodes
    if v0_engine:
        # issue 13: the V0 engine sizes its profile run from max_model_len (no chunked prefill), and then
        # runs each prompt in a step of its own (the scheduler's prefill-first policy)
        mnbt, seqs, chunked = v0_batch_defaults(
            target, is_multimodal=arch.is_multimodal, sliding_window=arch.sliding_window is not None,
            device="cuda" if profile.vendor in ("nvidia", "amd") else profile.runtime,  # ROCm is "cuda" to DeviceConfig
            lora=req.enable_lora, speculative=bool(req.speculative_config),
            long_context_chunked=rules.key >= (0, 5, 3))
    video_off = modality_off(req, "video")
    if arch.mm_prefix_min_batched_tokens > mnbt and arch.is_multimodal and not video_off:
        # a multimodal prefix LM (Gemma-4 26B / 31B): EngineArgs raises the default so that one item of the most
        # expensive supported modality, a video, fits in a batch ("Raising max_num_batched_tokens from N to M");
        # a zero limit for images alone leaves video on (a GB10 log with --limit-mm-per-prompt '{"image":0}')
        mnbt = arch.mm_prefix_min_batched_tokens
    mnbt = req.max_num_batched_tokens or mnbt
    seqs = scheduler_max_num_seqs(req.max_num_seqs, seqs, mnbt, v1=v1)
    calibrated, calibration_source = {}, None
    if calibration is not None:
        calibrated, calibration_source = calibration(
            gpu=profile.name, vllm_version=rules.version, family=arch.model_type, max_num_batched_tokens=mnbt,
            tp=tp, pp=pp, enforce_eager=req.enforce_eager, model=req.model,
            device_bytes=int(profile.memory_bytes or 0) or None,  # a record larger than the GPU cannot describe it
        )
    extensible = extensible_kv_cache(req, rules, profile.runtime)
    return EngineSettings(
        device=profile.runtime,
        vendor=profile.vendor,
        total_bytes=int(profile.memory_bytes or 0),
        # 0.34: --gpu-memory-utilization defaults to None, resolved to 1.0 with the extensible KV cache
        gpu_memory_utilization=req.gpu_memory_utilization or (1.0 if extensible else rules.gpu_memory_utilization),
        extensible_kv_cache=extensible,
        max_num_batched_tokens=mnbt,
        max_num_seqs=seqs,
        max_num_seqs_given=req.max_num_seqs is not None,
        kv_cache_dtype=kv_dtype,
        block_size=req.block_size,
        enforce_eager=req.enforce_eager,
        prefix_caching=(
            req.enable_prefix_caching if req.enable_prefix_caching is not None
            # off by default before the V1 engine (V0 EngineArgs.enable_prefix_caching = False) and, before
            # 0.26, for hybrids (engine/versions.py hybrid_prefix_caching)
            else rules.v1_engine and not (arch.mamba is not None and not rules.hybrid_prefix_caching)
            # attention-free models (pure Mamba / Mamba-2): ModelConfig.is_prefix_caching_supported is False
            and not arch.attention_free
        ) and not hybrid_prefix_caching_refused(arch, rules),
        kv_cache_memory_bytes=req.kv_cache_memory_bytes,
        compute_capability=cc,
        cpu_amx=cpu_has_amx() if profile.vendor == "cpu" else False,
        cpu_avx512_bf16=cpu_has_avx512_bf16() if profile.vendor == "cpu" else False,
        calibrated=calibrated,
        calibration_source=calibration_source,
        # issue 13: multimodal limits, LoRA, speculative decoding, data / expert parallel
        mm_image_limit=mm_image_limit(req, arch),
        mm_audio_off=modality_off(req, "audio"),
        mm_video_off=modality_off(req, "video"),
        mm_image_off=modality_off(req, "image"),
        mm_max_model_len=target,
        lora=(req.max_loras or 1, req.max_lora_rank or 16) if req.enable_lora else None,
        speculative=req.speculative_config or None,
        speculative_draft=draft if req.speculative_config else None,
        data_parallel_size=max(req.data_parallel_size or 1, 1),
        expert_parallel=req.enable_expert_parallel,
        gpu_memory_in_use_bytes=req.gpu_memory_in_use or 0,
        flashinfer_installed=req.flashinfer_installed,
        compile_cache=req.compile_cache,
        model_runner_v2=mrv2,
        rocm_fp8_padding=(env or {}).get("VLLM_ROCM_FP8_PADDING", "1").strip() != "0",
        v0_engine=v0_engine,
        engine_fallback=verdict.fallback if v0_engine else None,
        mamba_ssm_cache_dtype=req.mamba_ssm_cache_dtype,
        cpu_offload_bytes=int((req.cpu_offload_gb or 0) * GIB),
        chunked_prefill=chunked,
        async_scheduling=req.async_scheduling,
        nvlink_peers=profile.vendor == "nvidia" and profile.link_kind == "nvlink",
        # the all-reduce + RMSNorm fusion needs FlashInfer, compilation (not --enforce-eager) and a
        # multicast-capable NVLink fabric (NVSwitch); estimate/memory.py allreduce_fusion_non_torch
        allreduce_fusion=(profile.vendor == "nvidia" and not req.enforce_eager and req.flashinfer_installed is not False
                          and "nvswitch" in str(getattr(profile.interconnect, "name", "") or "").lower()),
    )


def check_async_scheduling(asked: bool | None, rules: VersionRules, pp: int, spec: dict, *, mrv2: bool) -> None:
    """vLLM refuses --async-scheduling where it cannot run it (plan/performance.py async_scheduling_conflict), and
    has no such flag before 0.10."""
    if asked is None:
        return
    flag = "--async-scheduling" if asked else "--no-async-scheduling"
    if rules.key < (0, 10, 0):
        # engine/arg_utils.py: the flag first appears in 0.10.0 (absent from 0.9.2's)
        raise UsageError(f"vLLM {rules.version} has no {flag} (added in 0.10.0)",
                         "leave it out, or plan for --vllm-version 0.10.0 or newer")
    from vllmkit.plan.performance import async_scheduling_conflict

    conflict = async_scheduling_conflict(rules.key, pp=pp, speculative=spec or None, mrv2=mrv2, explicit=True)
    if asked and conflict:
        raise UsageError(f"vLLM {rules.version} refuses --async-scheduling with {conflict}",
                         "leave --async-scheduling out" + (", or use tensor parallelism only"
                                                           if "pipeline" in conflict else
                                                           ", or the speculative config"))


def extensible_kv_cache(req: PlanRequest, rules: VersionRules, device: str) -> bool:
    """vLLM 0.34 turns the extensible KV cache on unless the platform is not CUDA / ROCm or the KV cache size is
    given (config/vllm.py _resolve_extensible_kv_cache: kv_cache_memory_bytes, num_gpu_blocks_override, elastic
    EP and some KV connectors keep the old sizing); --no-enable-extensible-kv-cache turns it off. It also falls
    back at start when the driver's virtual-memory probe fails (WSL2), which a plan cannot see."""
    return (rules.extensible_kv_cache and device in ("cuda", "rocm") and req.kv_cache_memory_bytes is None
            and req.enable_extensible_kv_cache is not False)


def uses_model_runner_v2(req: PlanRequest, arch: ModelArch, rules: VersionRules, device: str,
                         env: Mapping[str, str] | None) -> bool:
    """Model Runner V2 by vLLM's default for the release (engine/versions.py), or as VLLM_USE_V2_MODEL_RUNNER says."""
    from vllmkit.engine.versions import model_runner_v2, parse_version

    forced = (env or {}).get("VLLM_USE_V2_MODEL_RUNNER", "").strip().lower()
    if forced and rules.model_runner_v1_removed and forced != "1":
        # 0.34 platforms/interface.py validate_environment: "VLLM_USE_V2_MODEL_RUNNER={value} is no longer
        # supported: Model Runner V1 has been removed. Unset this variable."
        raise UsageError(f"vLLM {rules.version} refuses VLLM_USE_V2_MODEL_RUNNER={forced}: Model Runner V1 has been "
                         "removed", "unset VLLM_USE_V2_MODEL_RUNNER")
    if forced and parse_version(rules.version) >= (0, 20, 0) and device in ("cuda", "rocm"):
        if forced in ("1", "true"):
            return True
        if forced in ("0", "false"):
            return False
    return model_runner_v2(rules.version, arch.architectures, moe=arch.moe is not None,
                           quantized=arch.quantization is not None,
                           hybrid=arch.has_recurrent_state, device=device,
                           speculative_method=str((req.speculative_config or {}).get("method") or "") or None)


# model classes with SupportsMambaPrefixCaching in the 0.14.0 wheel (bamba, falcon_h1, granitemoehybrid, jamba,
# mamba, mamba2, nemotron_h, zamba2): before the align mode these keep an explicit --enable-prefix-caching
MAMBA_PREFIX_CACHING_ARCHITECTURES = frozenset({
    "BambaForCausalLM", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM", "JambaForCausalLM",
    "MambaForCausalLM", "Mamba2ForCausalLM", "NemotronHForCausalLM", "Zamba2ForCausalLM",
})


def hybrid_prefix_caching_refused(arch: ModelArch, rules: VersionRules) -> bool:
    """vLLM before 0.15 switches an explicit --enable-prefix-caching off for a hybrid whose model class cannot
    cache mamba states (models/config.py MambaModelConfig in the 0.13 / 0.14 wheels); a public 0.13 start of a
    Qwen3-Next checkpoint on 2x L40S (collected-startup-logs-15) asked for it and ran without."""
    return (arch.mamba is not None and not rules.mamba_align_mode
            and not MAMBA_PREFIX_CACHING_ARCHITECTURES.intersection(arch.architectures))


def modality_off(req: PlanRequest, modality: str) -> bool:
    """--language-model-only, or a limit of 0 for this modality (vLLM's default for one not given: 999)."""
    return bool(req.language_model_only or int((req.limit_mm_per_prompt or {}).get(modality, 999)) == 0)


def mm_image_limit(req: PlanRequest, arch: ModelArch | None = None) -> int | None:
    """--language-model-only or a zero limit for every modality the vision tower serves -> 0 (text-only);
    else the largest limit given, or None (vLLM's default) when only zeros were given and a modality the
    tower serves was left at its default of 999 (`{"image": 0}` on a video model keeps the tower)."""
    from vllmkit.estimate.multimodal import tower_modalities

    if req.language_model_only:
        return 0
    limits = req.limit_mm_per_prompt
    if not limits:
        return None
    served = tower_modalities(arch.architectures) if arch is not None else tuple(limits)
    if all(int(limits.get(m, 999)) == 0 for m in served):
        return 0
    largest = max(int(v) for v in limits.values())
    return largest if largest > 0 else None


def feature_terms(variant: Variant, tp: int, settings: EngineSettings, rules: VersionRules | None = None):
    """issue 13: LoRA stacks (every stage), the speculative drafter (last stage) and its KV layers (with a
    separate draft model, that model's architecture: its layers keep their own KV heads and head size)."""
    every: dict[str, MemoryTerm] = {}
    last: dict[str, MemoryTerm] = {}
    kv_layers: list = []
    kv_arch = None
    arch = variant.arch
    if settings.lora is not None:
        from vllmkit.estimate.lora import lora_weight_bytes

        loras, rank_ = settings.lora
        moe = bool(rules is not None and rules.moe_lora and arch.moe is not None)
        every["lora"] = MemoryTerm(bytes=lora_weight_bytes(arch, tp=tp, max_loras=loras, max_lora_rank=rank_, moe=moe),
                                   source="derived", note=f"LoRA stacks for {loras} adapter(s) of rank {rank_}"
                                   + (" (routed experts included)" if moe else ""))
    if settings.speculative:
        from vllmkit.estimate.speculative import draft_token_count, speculative_terms
        from vllmkit.estimate.weights import split_weights

        spec = settings.speculative
        n_mtp = mtp_layers(arch, variant.meta)
        mtp_bytes = 0
        if n_mtp:
            full = split_weights(arch, variant.weight_bytes, tp=1, pp=1, mtp_layers=n_mtp, mtp_own_embeddings=False)
            mtp_bytes = full.skipped_bytes
        draft_bytes, draft_arch = settings.speculative_draft or (None, None)
        terms = speculative_terms(arch, speculative_method(spec), draft_token_count(spec), tp=tp,
                                  mtp_layer_bytes=mtp_bytes, mtp_layers=n_mtp,
                                  draft_weight_bytes=draft_bytes, draft_arch=draft_arch)
        last["speculative"] = MemoryTerm(bytes=terms.weight_bytes, source="estimated", note=terms.note)
        kv_layers = list(terms.kv_layers)
        kv_arch = terms.kv_arch
    return every, last, kv_layers, kv_arch


def speculative_method(spec: dict) -> str:
    """The method of a --speculative-config (vLLM: a model without a method is a draft model)."""
    return str(spec.get("method") or ("draft_model" if spec.get("model") else "ngram"))


# the families whose own __init__ skipped the vision tower at a zero limit before _mark_tower_model (0.15)
_OWN_TOWER_SKIP = frozenset({"Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration",
                             "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
                             "Llama4ForConditionalGeneration"})


def tower_skipped(arch: ModelArch, rules: VersionRules) -> bool:
    """Whether vLLM leaves a VLM's vision tower out when every multimodal limit is 0."""
    return rules.mm_tower_skipped_at_zero_limit or (rules.mm_tower_skipped_per_model
                                                    and bool(_OWN_TOWER_SKIP.intersection(arch.architectures)))


def prepare_candidate(variant: Variant, tp: int, pp: int, settings: EngineSettings, rules: VersionRules) -> Prepared:
    weight_bytes, weight_source = loaded_weight_bytes(variant, settings, rules.key)
    every, last, spec_kv, spec_kv_arch = feature_terms(variant, tp, settings, rules)
    if settings.data_parallel_size > 1 and variant.arch.moe is not None:
        from vllmkit.estimate.weights import data_parallel_total

        # the routed experts are spread over every TP x DP rank, with or without --enable-expert-parallel
        weight_bytes = data_parallel_total(variant.arch, weight_bytes, dp=settings.data_parallel_size)
        weight_source = "estimated"
    if variant.arch.vision is not None and settings.mm_image_limit == 0 and tower_skipped(variant.arch, rules):
        # text-only serving of a VLM does not build the vision tower (engine/versions.py)
        from vllmkit.estimate.multimodal import vision_param_bytes

        weight_bytes = max(weight_bytes - vision_param_bytes(variant.arch.vision), 0)
        weight_source = "estimated"
    if variant.arch.audio_tower_params and settings.mm_audio_off and rules.mm_tower_skipped_at_zero_limit:
        # the audio tower and its embedder are not built either (gemma4_mm.py _mark_tower_model "audio"),
        # stored in BF16 in the released checkpoints
        weight_bytes = max(weight_bytes - 2 * variant.arch.audio_tower_params, 0)
        weight_source = "estimated"
    growth: list[LoadGrowth] = []
    if settings.rocm_fp8_padding and fp8_linears_padded(variant.arch, rules, settings.device):
        growth.append(LoadGrowth(tuple(rocm_fp8_padding(variant.arch, tp)),
                                 "ROCm FP8 row padding (VLLM_ROCM_FP8_PADDING=1)"))
    if rules.mla_matrix_absorption and rules.mla_cache and variant.arch.mla is not None:
        quant = variant.arch.quantization
        fp8 = variant.label == "fp8" or (quant is not None and quant.method == "fp8")
        growth.append(LoadGrowth(tuple(mla_absorbed_bytes(variant.arch, tp, fp8=fp8)),
                                 f"MLA matrices vLLM {rules.version} absorbs after loading (W_Q_UK, W_UV_O beside "
                                 "the checkpoint's; VLLM_MLA_PERFORM_MATRIX_ABSORPTION=1)"))
    return prepare(variant.arch, weight_bytes, weight_source, tp=tp, pp=pp, settings=settings, rules=rules,
                   mtp_layers=mtp_layers(variant.arch, variant.meta),
                   mtp_own_embeddings=mtp_own_embeddings(variant.meta),
                   extra_terms=every, last_stage_terms=last, extra_kv_layers=spec_kv, extra_kv_arch=spec_kv_arch,
                   weight_growth=tuple(growth))


def data_parallel_candidate(cand: Candidate, replicas: int, rules: VersionRules) -> Candidate:
    """The chosen candidate as one of `replicas` data-parallel engines at the same context: a dense model's engine is
    the same; an MoE's ranks each hold 1/replicas of its routed experts (estimate/weights.py data_parallel_total),
    which leaves more room for the KV cache."""
    settings = replace(cand.settings, data_parallel_size=replicas)
    ev = cand.evaluation
    if cand.variant.arch.moe is None or replicas <= 1:
        return replace(cand, settings=settings)
    prep = prepare_candidate(cand.variant, ev.tp, ev.pp, settings, rules)
    return replace(cand, settings=settings, evaluation=at_length(prep, ev.max_model_len))


def fit_context(prep: Prepared, native: int, min_conc: float, min_len: int = 0) -> Evaluation:
    """Largest context (<= native) that keeps min_conc requests of that length in the KV cache, and
    at least min_len (one request of the workload) when the KV cache holds that.
    Only the KV capacity is searched: the candidate's budget is computed once (`prep`)."""
    best = _fit_context(prep, native, min_conc)
    if min_len and best.max_model_len < min_len <= native:
        trial = at_length(prep, min_len)
        if trial.fits:
            return trial
    return best


def _fit_context(prep: Prepared, native: int, min_conc: float) -> Evaluation:
    ev = at_length(prep, native)
    if ev.fits and ev.capacity.max_concurrency >= min_conc:
        return ev
    lo, hi, best = 1, native, None
    while lo <= hi:
        mid = (lo + hi) // 2
        trial = at_length(prep, mid)
        if trial.fits and trial.capacity.max_concurrency >= min_conc:
            best, lo = trial, mid + 1
        else:
            hi = mid - 1
    if best is None:
        return ev
    # round to a multiple of 1024 for a readable flag (never above what fits)
    length = best.max_model_len
    if length > 4096:
        best = at_length(prep, length // 1024 * 1024)
    return best


# GPUs the planner tries without --gpu-count: four nodes' worth; when no option within them gives a usable
# context (a model far larger than the GPU: Kimi-K2 on L4s fits 32 of them only at a 160-token context),
# pipeline stages keep doubling up to sixteen nodes, so the plan names the GPUs a real context needs
SEARCH_NODES = 4
WIDE_SEARCH_NODES = 16


def gpu_options(arch: ModelArch, profile, req: PlanRequest, nodes: int = SEARCH_NODES) -> list[tuple[int, int]]:
    if req.tensor_parallel_size or req.pipeline_parallel_size:
        return [(req.tensor_parallel_size or 1, req.pipeline_parallel_size or 1)]
    if profile.vendor == "cpu":
        return [(1, 1)]
    per_node = max(profile.gpus_per_node, 1)
    limit = req.gpu_count or per_node * nodes
    options = [(tp, 1) for tp in valid_tp_sizes(arch, min(per_node, limit))]
    top_tp = max(t for t, _ in options)
    pp = 2
    while top_tp * pp <= limit and pp <= arch.num_hidden_layers:
        options.append((top_tp, pp))
        pp *= 2
    return options


def evaluate_candidates(req: PlanRequest, variants: list[Variant], base: Variant, profile, rules: VersionRules,
                        kv_dtype: str, *, target_len: int, auto_fit: bool, min_conc_for_fit: float,
                        calibration: CalibrationLookup | None, env: dict[str, str] | None = None,
                        min_len: int = 0, draft: tuple[int, ModelArch] | None = None) -> list[Candidate]:
    """min_len: the context one request of the workload needs (0 without a workload); draft: the
    speculative draft checkpoint's (weight bytes, arch) when one was read."""
    candidates: list[Candidate] = []
    for variant in variants:
        candidates += _variant_candidates(req, variant, base, profile, rules, kv_dtype, gpu_options(
            variant.arch, profile, req), target_len=target_len, auto_fit=auto_fit, min_conc_for_fit=min_conc_for_fit,
            calibration=calibration, env=env, min_len=min_len, draft=draft)
    # (with TP / PP given, or on a CPU, gpu_options has a single option, so the wider pass adds nothing)
    if not req.gpu_count and not any(c.listed and c.evaluation.fits for c in candidates):
        for variant in variants:
            tried = set(gpu_options(variant.arch, profile, req))
            wider = [o for o in gpu_options(variant.arch, profile, req, WIDE_SEARCH_NODES) if o not in tried]
            candidates += _variant_candidates(req, variant, base, profile, rules, kv_dtype, wider, target_len=target_len,
                                              auto_fit=auto_fit, min_conc_for_fit=min_conc_for_fit,
                                              calibration=calibration, env=env, min_len=min_len, draft=draft)
    return candidates


def _variant_candidates(req: PlanRequest, variant: Variant, base: Variant, profile, rules: VersionRules, kv_dtype: str,
                        options: list[tuple[int, int]], *, target_len: int, auto_fit: bool, min_conc_for_fit: float,
                        calibration: CalibrationLookup | None, env: dict[str, str] | None, min_len: int,
                        draft: tuple[int, ModelArch] | None) -> list[Candidate]:
    """One variant over the (TP, PP) `options`, smallest first, up to one option past the first useful one."""
    candidates: list[Candidate] = []
    allowed, why = precision_allowed(variant.label, profile)
    if variant is base:
        allowed = True  # what the user asked for is always evaluated and may be chosen
    extra_after_fit = 1  # show one larger option after the first that fits, then stop
    native = variant.arch.native_max_model_len
    for tp, pp in options:
        if tp * pp > 1 and profile.vendor == "cpu":
            continue
        if extra_after_fit < 0:
            break
        settings = engine_settings(req, profile, rules, kv_dtype, variant.arch, tp, pp, calibration, env, draft)

        def evaluate(settings: EngineSettings, tp: int = tp, pp: int = pp) -> Evaluation:
            prep = prepare_candidate(variant, tp, pp, settings, rules)
            if auto_fit:
                return at_length(prep, min(target_len, native), True)
            if min_conc_for_fit > 0:
                return fit_context(prep, native, min_conc_for_fit, min_len)
            return at_length(prep, target_len)

        ev = evaluate(settings)
        # useful: fits, and when the planner chooses the context, a context of at least
        # min(native, 16K) with min_concurrency requests of that length
        floor = min(native, CONTEXT_FLOOR) if min_conc_for_fit > 0 else 0
        useful = ev.fits and ev.max_model_len >= floor
        lowered_from = None
        if not useful and req.max_num_seqs is None and floor > 0:
            # only where the plan chooses the context: a context (or KV size) the user fixed is checked as vLLM
            # would start it, with its default sequences
            fewer = fewer_sequences(settings, evaluate, floor, ev)
            if fewer is not None:
                lowered_from = (settings.max_num_seqs, ev.max_model_len if ev.fits else 0)
                settings, ev = fewer
                useful = ev.fits and ev.max_model_len >= floor
        key = rank(useful=useful, fits=ev.fits, label=variant.label, base_weight_bytes=base.weight_bytes,
                   gpus=tp * pp, max_model_len=ev.max_model_len, profile=profile,
                   gpu_count_given=bool(req.gpu_count), short_bytes=-ev.budget.kv_cache.bytes)
        if base.arch.quantization is not None:
            # the user named a quantized checkpoint: plan that one wherever it serves (its siblings stay
            # alternatives); the precision order only chooses among siblings of a 16-bit model
            key = (key[0], 0 if variant is base else 1, *key[1:])
        # a row that fits only at a context below the floor is noise in the alternatives table
        candidates.append(Candidate(variant, ev, allowed, why, key, settings, listed=useful or not ev.fits,
                                    seqs_lowered_from=lowered_from))
        if useful and not req.gpu_count:
            extra_after_fit -= 1
    return candidates


# --max-num-seqs values the plan tries, largest first, where vLLM's default leaves no usable context: the default
# (256, or 1,024 on GPUs of 70 GiB and more) sets how many CUDA graphs vLLM captures -- and, from 0.20, charges
# to the KV budget (estimate/memory.py profiled_cudagraph) -- and how many rows the profile's dummy sampler holds
FEWER_SEQS = (256, 128, 64)


def fewer_sequences(settings: EngineSettings, evaluate: Callable[[EngineSettings], Evaluation], floor: int,
                    current: Evaluation) -> tuple[EngineSettings, Evaluation] | None:
    """The largest of FEWER_SEQS below vLLM's default max_num_seqs at which the candidate fits a context of at least
    `floor`, else the smallest if it fits a longer context than `current` (the default's), with its evaluation;
    None otherwise, or where the sequences do not change the budget (a CPU, a fixed KV size)."""
    if settings.device not in ("cuda", "rocm") or settings.kv_cache_memory_bytes is not None:
        return None
    budget = current.budget
    if not current.fits and -budget.kv_cache.bytes > budget.activation.bytes + budget.cudagraph.bytes:
        return None  # short by more than fewer sequences can free
    last = None
    for seqs in FEWER_SEQS:
        if seqs >= settings.max_num_seqs:
            continue
        fewer = replace(settings, max_num_seqs=seqs)
        ev = evaluate(fewer)
        if ev.fits and ev.max_model_len >= floor:
            return fewer, ev
        last = (fewer, ev)
    if last is not None and last[1].fits and (not current.fits or last[1].max_model_len > current.max_model_len):
        return last
    return None


def choose(candidates: list[Candidate]) -> Candidate:
    pool = [c for c in candidates if c.allowed] or candidates
    return min(pool, key=lambda c: c.rank)


def flashinfer_assumption_warning(chosen: Candidate, rules: VersionRules) -> str | None:
    """vLLM 0.8-0.11.0 sample the profile run's dummy batch with FlashInfer when it is installed and sort the
    logits otherwise (engine/versions.py `sampler_sorts_without_flashinfer`); the vllm/vllm-openai image has
    FlashInfer, `pip install vllm` does not. Where the plan could not look (no installed vLLM of that release,
    no --flashinfer / --no-flashinfer) it assumes the image; this says what the other install leaves, from the
    same candidate re-evaluated with the sort, when that changes the KV cache."""
    settings = chosen.settings
    if settings.flashinfer_installed is not None or settings.device != "cuda" or not rules.sampler_sorts_without_flashinfer:
        return None
    ev = chosen.evaluation
    sorted_ev = at_length(prepare_candidate(chosen.variant, ev.tp, ev.pp, replace(settings, flashinfer_installed=False),
                                            rules), ev.max_model_len)
    kv, kv_sorted = ev.budget.kv_cache.bytes, sorted_ev.budget.kv_cache.bytes
    if kv_sorted >= kv:
        return None
    then = (f"{kv_sorted / GIB:.2f} GiB of KV cache ({sorted_ev.capacity.tokens:,} tokens) instead of "
            f"{kv / GIB:.2f} GiB" if sorted_ev.fits else
            f"too little KV cache for a {ev.max_model_len:,}-token request, so vLLM refuses to start")
    return (f"vLLM {rules.version} samples its profile run with FlashInfer when it is installed (the vllm/vllm-openai "
            f"image) and sorts the logits when it is not (`pip install vllm` without the flashinfer extra); "
            f"this plan assumes FlashInfer. Without it: {then}; pass --no-flashinfer to plan that install")


def shared_gpu_warning(chosen: Candidate, rules: VersionRules) -> str | None:
    """Where the release counts memory other processes hold against its KV budget (charges_other_processes)
    and the plan was not told of any (--gpu-memory-in-use), how much another process may hold before the start
    fails. vllm#17431: Qwen3-8B at utilization 0.4 on an A800 failed on 0.8.5's V1 worker with "No available
    memory for the cache blocks" and started with VLLM_USE_V1=0, whose worker measures from its own baseline."""
    settings, ev = chosen.settings, chosen.evaluation
    if settings.device != "cuda" or settings.gpu_memory_in_use_bytes or not charges_other_processes(settings, rules):
        return None
    if not ev.fits or settings.kv_cache_memory_bytes is not None:
        return None
    kv = ev.budget.kv_cache.bytes
    one_request = ev.capacity.needed_bytes  # what vLLM's check asks for one request at max_model_len
    engine = "V1" if rules.v1_engine and not settings.v0_engine else "V0"
    return (f"vLLM {rules.version}'s {engine} worker counts memory other processes hold on the GPU against this "
            f"budget: on a shared GPU, more than {(kv - one_request) / GIB:.2f} GiB held by others at start leaves "
            f"too little KV cache for a {ev.max_model_len:,}-token request, more than {kv / GIB:.2f} GiB none at "
            "all; pass --gpu-memory-in-use (what nvidia-smi shows in use) to plan for it")


# the AMD targets vLLM's ROCm installation guide lists (docs/getting_started/installation/gpu.rocm.inc.md):
# MI200s (gfx90a), MI300 (gfx942), MI350 (gfx950), Radeon RX 7900 / 9000, Ryzen AI MAX / AI 300
ROCM_LISTED_TARGETS = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1200", "gfx1201", "gfx1150", "gfx1151")


# Public starts on unified-memory GPUs got less KV cache than the plan's terms leave: by 1.32, 1.68, 1.73, 1.80,
# 2.62, 3.09 and 5.60 GiB (GB10 on vLLM 0.11 - 0.27 and a Jetson AGX Thor on 0.10.2; benchmarks/accuracy.py rows
# arm-dgxspark-mistral7b-gptq, dgx-spark-notes-..., gb10-gpt-oss-20b-..., gb10-qwen3-30b-a3b-fp8-..., jetson-thor-...,
# r45-adadrag-... and gb10-qwen38-27b-bf16-...), and by 0.54 GiB on one 1.5B model run eager. There vLLM's memory
# snapshot reads free memory system-wide (psutil's available memory on an integrated GPU, 0.32 vllm/utils/
# mem_utils.py MemorySnapshot.measure), so host memory the engine's processes take while it loads and profiles
# counts as non-torch memory. The size varies too much from log to log (0.5 - 5.6 GiB) for a term of the plan, so
# the plan says so instead (round 43).
UNIFIED_MEMORY_SHORTFALL_GIB = (1.3, 5.6, 1.8)  # (low, high, median) of the seven logs above


def unified_memory_warning(profile) -> str | None:
    """On a GPU that shares its memory with the CPU, the KV cache vLLM sizes comes out below the plan's."""
    if not getattr(profile, "unified_memory", False):
        return None
    low, high, median = UNIFIED_MEMORY_SHORTFALL_GIB
    return (f"unified memory ({profile.display_name}): vLLM measures free memory system-wide here, so host memory its "
            f"processes take while loading and profiling counts against the KV cache; public starts got {low:g} - "
            f"{high:g} GiB (median {median:g}) less KV cache than such a plan, so leave that much slack (a lower "
            "--max-model-len or concurrency) or fix the size with --kv-cache-memory-bytes; other programs' memory "
            "counts too")


def platform_warning(profile, rules: VersionRules) -> str | None:
    """Where the release's published builds do not run on this GPU: a plan for memory still holds, but the
    start fails at the first custom kernel ('no kernel image is available for execution on the device')."""
    sm = getattr(profile, "sm", None)
    if profile.vendor == "nvidia" and sm is not None and sm < 75 and parse_version(rules.version) >= VOLTA_DROPPED:
        return (f"vLLM {rules.version}'s published wheels and images carry no CUDA kernels for the "
                f"{profile.display_name} (compute capability {sm / 10:.1f}): from 0.20.0 they are built for 7.5 and "
                "newer (0.19.0 still held 7.0), so the first custom kernel fails with 'no kernel image is available "
                "for execution on the device'; serve it with vLLM 0.19 (plan with --vllm-version 0.19.0) or with vLLM "
                "built from source for it (TORCH_CUDA_ARCH_LIST=7.0)")
    gfx = getattr(profile, "gfx_target", None)
    if profile.vendor == "amd" and gfx and gfx not in ROCM_LISTED_TARGETS:
        return (f"vLLM's ROCm installation guide does not list the {profile.display_name} ({gfx}): its wheels and "
                f"images are built for MI200 / MI300 / MI350 and Radeon RX 7900 / 9000; serve it with vLLM built from "
                f"source for it (PYTORCH_ROCM_ARCH={gfx}) or a community image; the speed estimate takes the nearest "
                "family's efficiencies, not a fit on this GPU")
    return None
