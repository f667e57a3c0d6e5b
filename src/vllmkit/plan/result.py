"""The plan result: the chosen candidate with its memory, KV capacity, alternatives and reasons."""

from __future__ import annotations

from vllmkit.arch import ModelArch
from vllmkit.engine.versions import VersionRules
from vllmkit.errors import DoesNotFitError
from vllmkit.estimate.kv import mixes_layer_kinds, running_pool_tokens
from vllmkit.estimate.memory import EXTRA_TERM_LABELS
from vllmkit.estimate.specs import effective_kv_cache_dtype, kv_bytes_per_token_full, pp_layer_ranges
from vllmkit.hub.base import ModelMetadata
from vllmkit.plan.candidates import Candidate, data_parallel_candidate
from vllmkit.plan.evaluate import EngineSettings, Evaluation
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
from vllmkit.plan.performance import async_scheduling_runs
from vllmkit.units import GIB


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
    elif all(not c.listed for c in fewer):  # each fits only at a context nobody would choose
        short = max(fewer, key=lambda c: (c.evaluation.tp * c.evaluation.pp, c.evaluation.max_model_len)).evaluation
        n = short.tp * short.pp
        out.append(f"TP={short.tp} PP={short.pp} ({n} GPU{'s' if n > 1 else ''}) fits only a {short.max_model_len:,}-token "
                   f"context; TP={ev.tp} PP={ev.pp} is the smallest that gives a usable one")
    if profile.vendor == "amd" and chosen.variant.label == "fp8":
        out.append("MI300-class GPUs run FP8 natively (e4m3fnuz); AWQ/GPTQ kernels are CUDA-first")
    if chosen.seqs_lowered_from is not None:
        default, short = chosen.seqs_lowered_from
        left = f"leaves only a {short:,}-token context" if short else "leaves no room for the KV cache"
        out.append(f"--max-num-seqs {chosen.settings.max_num_seqs}: at vLLM's default ({default}) the memory the "
                   f"CUDA graphs and the sampler's profile take for that many sequences {left}")
    out.append(f"context {ev.max_model_len:,} tokens leaves {ev.capacity.max_concurrency:.2f} concurrent requests of that length")
    return out

def alternative(c: Candidate, chosen: Candidate) -> Alternative:
    ev = c.evaluation
    note = c.note
    if not ev.fits:
        usable = ev.capacity.usable_max_model_len
        note = note or ("no KV memory" if ev.capacity.no_memory or usable == 0 else f"fits up to {usable or 0:,} tokens")
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


def running_concurrency(ev: Evaluation) -> float | None:
    """Requests of max_model_len tokens the KV pool holds at once while they run, where the cache mixes layer kinds
    and that differs from vLLM's start-up figure (estimate/kv.py running_pool_tokens); else None."""
    cap = ev.capacity
    if not ev.fits or not cap.num_blocks or not mixes_layer_kinds(ev.groups):
        return None
    tokens = running_pool_tokens(ev.groups, int(cap.num_blocks), ev.max_model_len, ev.in_flight_tokens)
    if tokens is None:
        return None
    value = round(tokens / ev.max_model_len, 2)
    return value if value > round(cap.max_concurrency, 2) else None


def plan_result(req: PlanRequest, chosen: Candidate, candidates: list[Candidate], profile,
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
        cpu_offload_bytes=budget.cpu_offload_bytes,
        stage_weights_bytes=[b.weights.bytes for b in ev.budgets] if ev.pp > 1 else [],
        # encoder_bytes, lora_bytes, speculative_bytes, other_processes_bytes (0 where the plan has no such term)
        **{f"{key}_bytes": budget.extra[key].bytes if key in budget.extra else 0 for key in EXTRA_TERM_LABELS},
        sources={
            "total": profile.memory_source_tag,  # type: ignore[dict-item]
            "weights": budget.weights.source,  # type: ignore[dict-item]
            "non_torch": budget.non_torch.source,  # type: ignore[dict-item]
            "activation": budget.activation.source,  # type: ignore[dict-item]
            "cudagraph": budget.cudagraph.source,  # type: ignore[dict-item]
            "kv_cache": budget.kv_cache.source,  # type: ignore[dict-item]
            # the further non-KV terms (encoder, lora, speculative, other_processes), where the plan has them
            **{k: t.source for k, t in budget.extra.items()},  # type: ignore[misc]
        },
        notes={k: t.note for k, t in (("weights", budget.weights), ("non_torch", budget.non_torch),
                                      ("activation", budget.activation), ("cudagraph", budget.cudagraph),
                                      ("kv_cache", budget.kv_cache), *budget.extra.items()) if t.note},
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
        running_concurrency=running_concurrency(ev),
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
            # attention + recurrent state (mamba / linear attention): what vLLM's prefix caching treats apart
            is_hybrid=arch.has_recurrent_state,
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
        parallel=ParallelInfo(tensor_parallel_size=ev.tp, pipeline_parallel_size=ev.pp, nodes=nodes,
                              data_parallel_size=settings.data_parallel_size, expert_parallel=settings.expert_parallel),
        settings=SettingsInfo(
            gpu_memory_utilization=settings.gpu_memory_utilization,
            max_model_len=ev.max_model_len,
            max_num_seqs=(ev.mamba_seq_limit if ev.mamba_seq_limit is not None and ev.mamba_seqs_lowered
                          else settings.max_num_seqs),
            max_num_batched_tokens=settings.max_num_batched_tokens,
            kv_cache_dtype=kv_dtype,
            dtype=_serving_dtype(req, arch, profile, warnings),
            quantization=quant_flag,
            block_size=ev.specs.block_size,
            enforce_eager=req.enforce_eager,
            kv_cache_memory_bytes=req.kv_cache_memory_bytes,
            enable_prefix_caching=settings.prefix_caching,
            compile_cache="warm" if settings.compile_cache == "warm" else "cold",
            model_runner="v2" if settings.model_runner_v2 else "v1",
            engine="v0" if settings.v0_engine else "v1",
            engine_fallback=settings.engine_fallback,
            chunked_prefill=settings.chunked_prefill,
            extensible_kv_cache=settings.extensible_kv_cache,
            cpu_offload_gb=req.cpu_offload_gb or None,
            async_scheduling=async_scheduling_runs(settings, profile.vendor, ev.pp, version),
        ),
        memory=memory,
        kv_cache=kv_info,
        fits=ev.fits,
        estimated_max_model_len=None if ev.fits else cap.estimated_max_model_len,
        usable_max_model_len=None if ev.fits else cap.usable_max_model_len,
        startup_refusal=ev.startup_refusal,
        mamba_seq_limit=None if ev.mamba_seqs_lowered else ev.mamba_seq_limit,
        graph_capture_oom=ev.graph_capture_oom,
        alternatives=[alternative(c, chosen) for c in candidates if c.listed or c is chosen],
        reasons=_reasons(chosen, profile, candidates),
        calibration=settings.calibration_source,
        warnings=warnings + _engine_fallback_note(settings, rules) + _kv_dtype_note(kv_dtype, arch)
        + ([ev.graph_capture_oom] if ev.graph_capture_oom else [])
        + _mamba_seqs_note(ev, settings),
    )
    _data_parallel_option(result, req, chosen, candidates, rules)  # issue 13
    return result


def _mamba_seqs_note(ev: Evaluation, settings: EngineSettings) -> list[str]:
    if ev.mamba_seq_limit is None or not ev.mamba_seqs_lowered:
        return []
    return [f"--max-num-seqs {ev.mamba_seq_limit}: vLLM's default ({settings.max_num_seqs}) exceeds the "
            f"{ev.mamba_seq_limit} Mamba cache blocks this budget leaves (one per decoding sequence under CUDA "
            "graphs), which vLLM refuses at start"]


def _data_parallel_option(result: PlanResult, req: PlanRequest, chosen: Candidate, candidates: list[Candidate],
                          rules: VersionRules) -> None:
    """More GPUs than the chosen plan needs: offer --data-parallel-size replicas (throughput: every
    replica has the same KV capacity, an MoE's more, its experts spread over every rank) against the larger-TP
    candidates already listed (context and concurrency per replica)."""
    ev = chosen.evaluation
    group = ev.tp * ev.pp
    if req.data_parallel_size and req.data_parallel_size > 1:
        result.gpu.count = group * req.data_parallel_size
        result.reasons.append(f"{req.data_parallel_size} data-parallel replicas of TP={ev.tp} PP={ev.pp}: "
                              f"{ev.capacity.tokens * req.data_parallel_size:,} KV tokens in total")
        return
    if not req.gpu_count or group >= req.gpu_count or not ev.fits or result.device == "cpu":
        return
    replicas = req.gpu_count // group
    if replicas < 2:
        return
    dp_cand = data_parallel_candidate(chosen, replicas, rules)
    result._data_parallel_candidate = dp_cand
    dp_ev = dp_cand.evaluation
    result.alternatives.append(Alternative(
        precision=chosen.variant.label, model_id=chosen.variant.meta.id, tensor_parallel_size=ev.tp,
        pipeline_parallel_size=ev.pp, max_model_len=ev.max_model_len, fits=True,
        kv_tokens=dp_ev.capacity.tokens * replicas, max_concurrency=round(dp_ev.capacity.max_concurrency * replicas, 2),
        weights_bytes=dp_ev.budget.weights.bytes, data_parallel_size=replicas,
        note=(f"--data-parallel-size {replicas}: {replicas} replicas for throughput"
              + ("; the MoE layers then run over all ranks, each holding a slice of the experts "
                 "(--enable-expert-parallel: whole experts)" if chosen.variant.arch.moe else "")),
    ))
    bigger = [c for c in candidates if c.evaluation.fits and c.evaluation.tp * c.evaluation.pp > group
              and c.variant is chosen.variant]
    longest = max(bigger, key=lambda c: (c.evaluation.max_model_len, c.evaluation.capacity.tokens), default=None)
    line = (f"{req.gpu_count} GPUs given, {group} needed: --data-parallel-size {replicas} gives {replicas} replicas "
            f"({dp_ev.capacity.tokens * replicas:,} KV tokens in total) for throughput")
    if longest is not None:
        le = longest.evaluation
        line += (f"; TP={le.tp} instead gives one replica with {le.capacity.tokens:,} KV tokens "
                 f"(context up to {le.max_model_len:,}) for long requests")
    result.reasons.append(line)


def _engine_fallback_note(settings: EngineSettings, rules: VersionRules) -> list[str]:
    """Where vLLM 0.8 - 0.10's V1 oracle falls back to the old engine for something the plan asks (engine/versions.py
    v1_oracle), the plan says so: its memory and scheduler are V0's."""
    feature = settings.engine_fallback
    if not feature or feature == "VLLM_USE_V1=0":
        return []
    return [f"vLLM {rules.version} falls back to its old V0 engine for {feature} (its V1 oracle: \"... Falling "
            "back to V0\"); the memory profile and the scheduler planned here are V0's"]


def _kv_dtype_note(kv_dtype: str, arch: ModelArch) -> list[str]:
    """The checkpoint declares a quantized KV cache: "auto" then means fp8, not the model dtype. A packed format
    says what it stores and which attention backend takes it (vLLM picks the first backend in its priority
    list whose supported_kv_cache_dtypes hold it: only TRITON_ATTN lists the per-token-head formats, FlashInfer
    NVFP4; 0.32 wheel, v1/attention/backends)."""
    if kv_dtype == "auto" and arch.quantization and arch.quantization.kv_cache_scheme:
        return [f"KV cache dtype: {effective_kv_cache_dtype(kv_dtype, arch)}"]
    if kv_dtype.endswith("per_token_head"):
        bits = "4-bit" if kv_dtype.startswith("int4") else "8-bit"
        return [f"KV cache dtype: {kv_dtype} ({bits} K and V with a float32 scale per token and head, sized as "
                "vLLM lays it out); vLLM serves it with the Triton attention backend, the one that takes it"]
    if kv_dtype.startswith("nvfp4"):
        return [f"KV cache dtype: {kv_dtype} (FP4 K and V with an FP8 scale per 16 values); vLLM serves it with "
                "the FlashInfer attention backend"]
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

def more_gpus_hint(first: list[str], gpus: int, *, quantized: bool, tp_given: int | None = None) -> str:
    """A does-not-fit hint: `first`, a quantized variant unless the plan already is one, and twice the GPUs:
    `--gpu-count` (the planner then chooses TP and PP), or twice the TP the user fixed (`tp_given`), which
    `--gpu-count` would not change."""
    more = f"--tensor-parallel-size {tp_given * 2}" if tp_given else f"--gpu-count {gpus * 2}"
    options = [*first, *([] if quantized else ["a quantized variant"]), f"more GPUs ({more})"]
    return "use " + (", ".join(options[:-1]) + " or " if len(options) > 1 else "") + options[-1]


def does_not_fit_error(plan: PlanResult, tp_given: int | None = None) -> DoesNotFitError | None:
    """The exit-3 error for a plan vLLM would refuse (None when it fits); `tp_given`: the
    --tensor-parallel-size the user fixed, if any (the hint then doubles it)."""
    if plan.fits:
        return None
    if plan.startup_refusal and plan.startup_refusal.startswith("--kv-cache-memory-bytes"):
        return DoesNotFitError(f"{plan.model.id}: vLLM {plan.vllm_version} will not start: {plan.startup_refusal}",
                               "lower --kv-cache-memory-bytes, or leave it out and let vLLM size the cache")
    if plan.startup_refusal:
        return DoesNotFitError(f"{plan.model.id}: vLLM {plan.vllm_version} will refuse to start: {plan.startup_refusal}",
                               "stop the other processes on the GPU or lower --gpu-memory-utilization")
    if plan.mamba_seq_limit is not None:
        return DoesNotFitError(
            f"{plan.model.id}: vLLM {plan.vllm_version} will refuse to start: max_num_seqs "
            f"({plan.settings.max_num_seqs}) exceeds the {plan.mamba_seq_limit} Mamba cache blocks (one per "
            "decoding sequence under CUDA graphs)",
            f"use --max-num-seqs {plan.mamba_seq_limit} or less, or a higher --gpu-memory-utilization")
    est = plan.estimated_max_model_len
    if est and plan.usable_max_model_len is not None and plan.usable_max_model_len < est:
        est = plan.usable_max_model_len  # a heavier pipeline stage than the one vLLM reports holds less
        label = "the longest context every pipeline stage holds"
    else:
        label = "vLLM's estimate"
    quantized = plan.model.quantization is not None
    if est:
        hint = more_gpus_hint([f"--max-model-len {est} ({label})", "--kv-cache-dtype fp8"], plan.gpu.count,
                              quantized=quantized, tp_given=tp_given)
    else:
        hint = "the weights leave no KV memory: " + more_gpus_hint([], plan.gpu.count, quantized=quantized,
                                                                   tp_given=tp_given)
    return DoesNotFitError(
        f"{plan.model.id} does not fit on {plan.gpu.count} x {plan.gpu.display_name} at max_model_len "
        f"{plan.settings.max_model_len:,}",
        hint,
    )
