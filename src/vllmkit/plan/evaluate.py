"""Evaluate one deployment candidate (model variant x TP x PP x context) on one GPU type.

Pure: takes an architecture, byte counts and settings; returns the budget and the KV capacity
exactly as vLLM would log them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from vllmkit.arch.model import LayerKind, ModelArch
from vllmkit.engine.versions import VersionRules
from vllmkit.estimate.kv import (
    KVCapacity,
    KVGroup,
    bytes_per_block,
    group_layers,
    kv_capacity,
    project_groups,
)
from vllmkit.estimate.memory import (
    MemoryBudget,
    MemoryTerm,
    allreduce_fusion_non_torch,
    compile_share,
    estimate_activation,
    estimate_cudagraph,
    estimate_non_torch,
    extensible_kv_budget,
    gdn_graph_profile_transient,
    graph_capture_headroom,
    kv_budget,
    profiled_cudagraph,
    rocm_hipgraph_pinned,
    sampler_peak_non_torch_credit,
    unbudgeted_graph_capture,
)
from vllmkit.estimate.multimodal import (
    encoder_extra_bytes,
    encoder_profile,
    qwen2_vl_video_tokens,
    tower_modalities,
    v0_multimodal_profile,
)
from vllmkit.estimate.perf import graph_capture_ceiling
from vllmkit.estimate.specs import ModelSpecs, build_specs, mamba_state_bytes, pp_layer_ranges
from vllmkit.estimate.speculative import draft_token_count
from vllmkit.estimate.weights import LoadGrowth, WeightSplit, split_weights
from vllmkit.units import GIB

CPU_RUNTIME_OVERHEAD = int(1.5 * GIB)


@dataclass(frozen=True)
class EngineSettings:
    device: str  # cuda | rocm | cpu
    vendor: str
    total_bytes: int
    gpu_memory_utilization: float
    max_num_batched_tokens: int
    max_num_seqs: int
    kv_cache_dtype: str
    block_size: int | None
    enforce_eager: bool
    prefix_caching: bool
    kv_cache_memory_bytes: int | None
    compute_capability: float | None = None
    max_num_seqs_given: bool = False  # --max-num-seqs was set (vLLM's default may be lowered otherwise)
    cpu_amx: bool = False
    cpu_avx512_bf16: bool = False
    calibrated: dict[str, MemoryTerm] = field(default_factory=dict)
    calibration_source: str | None = None  # provenance of `calibrated`
    # --- issue 13 -------------------------------------------------------------------------------
    # --limit-mm-per-prompt for images (None: vLLM default 999; 0: text-only / --language-model-only)
    mm_image_limit: int | None = None
    mm_max_model_len: int | None = None  # context the encoder profile assumes (items per prompt)
    mm_audio_off: bool = False  # an audio limit of 0 (or --language-model-only): the audio tower is not built
    mm_video_off: bool = False  # a video limit of 0 (or --language-model-only): no video item in the profile
    mm_image_off: bool = False  # an image limit of 0 (the video then does not leave room for an image)
    lora: tuple[int, int] | None = None  # (max_loras, max_lora_rank) with --enable-lora
    speculative: dict | None = field(default=None, hash=False)  # --speculative-config
    # the draft / EAGLE checkpoint --speculative-config names, when it could be read: (weight bytes, arch)
    speculative_draft: tuple[int, ModelArch] | None = field(default=None, hash=False)
    data_parallel_size: int = 1  # --data-parallel-size (replicas of this TP x PP group)
    expert_parallel: bool = False  # --enable-expert-parallel
    # --- issue 13 round 2: start/fail verdicts ---------------------------------------------------
    gpu_memory_in_use_bytes: int = 0  # held on each GPU by other processes when vLLM starts
    flashinfer_installed: bool | None = None  # None: unknown (0.8-0.11.0 then assume it is, as in the image)
    compile_cache: str = "cold"  # "warm": a restart that loads vLLM's torch.compile cache (no compile in the profile)
    model_runner_v2: bool = False  # vLLM runs the model on Model Runner V2 (engine/versions.py model_runner_v2)
    rocm_fp8_padding: bool = True  # VLLM_ROCM_FP8_PADDING (default 1)
    allreduce_fusion: bool = False  # FlashInfer + compilation + an NVSwitch fabric: the TP all-reduce fusion can be built
    v0_engine: bool = False  # the old engine profiles (release before 0.8, or VLLM_USE_V1=0 before 0.10)
    engine_fallback: str | None = None  # the feature vLLM 0.8 - 0.10's V1 oracle fell back to V0 for (v1_oracle)
    mamba_ssm_cache_dtype: str | None = None  # --mamba-ssm-cache-dtype given (None / "auto": vLLM's choice)
    cpu_offload_bytes: int = 0  # --cpu-offload-gb x GiB: decoder-layer weights each GPU keeps in host memory
    # the old engine's default: on only for long contexts (engine/versions.py v0_batch_defaults); without
    # it prompts run in steps of their own, decodes waiting (estimate/scheduler_sim.py mixed_batches)
    chunked_prefill: bool = True
    # --async-scheduling / --no-async-scheduling as given (None: the release's default, plan/performance.py
    # async_scheduling_runs); a performance setting only: the memory profile is the same
    async_scheduling: bool | None = None
    # the GPUs of a TP / PP group are NVLink peers (an NVIDIA profile whose interconnect is NVLink, not PCIe):
    # the V0 engine's NCCL buffers then sit on the GPU (estimate/memory.py V0_NON_TORCH_NVLINK)
    nvlink_peers: bool = False
    # vLLM 0.34's extensible KV cache sizes the cache from memory measured after warm-up and graph capture
    # (engine/versions.py extensible_kv_cache; estimate/memory.py extensible_kv_budget)
    extensible_kv_cache: bool = False


@dataclass
class Evaluation:
    tp: int
    pp: int
    max_model_len: int
    specs: ModelSpecs
    groups: list[KVGroup]
    weights: WeightSplit
    budgets: list[MemoryBudget]  # one per PP stage
    capacity: KVCapacity
    tightest_stage: int
    in_flight_tokens: int

    @property
    def budget(self) -> MemoryBudget:
        return self.budgets[self.tightest_stage]

    startup_refusal: str | None = None  # vLLM refuses to start before sizing the KV cache
    graph_capture_oom: str | None = None  # the unbudgeted CUDA-graph capture will likely run out of memory
    # max_num_seqs exceeds the mamba cache blocks (the block count): a refusal when --max-num-seqs was given,
    # else the plan lowers vLLM's default to it (mamba_seqs_lowered)
    mamba_seq_limit: int | None = None
    mamba_seqs_lowered: bool = False
    mamba_blocks_bound: bool = False  # decoding sequences are bounded by the KV blocks (the rule applies)

    @property
    def fits(self) -> bool:
        return (self.capacity.fits and self.capacity.num_blocks > 0 and self.startup_refusal is None
                and (self.mamba_seq_limit is None or self.mamba_seqs_lowered))


def startup_refusal(budget: MemoryBudget, settings: EngineSettings, rules: VersionRules) -> str | None:
    """vllm >= 0.9.1 v1/worker/gpu_worker.py init_device: ValueError when the free memory at start is
    below requested = ceil(total x utilization) ("Free memory on device ... on startup is less than
    desired GPU memory utilization"). --kv-cache-memory-bytes skips it only from 0.11 (not modelled)."""
    if settings.kv_cache_memory_bytes is not None and settings.device in ("cuda", "rocm"):
        # --kv-cache-memory-bytes skips the profile's budget: vLLM allocates that much beside what the
        # process already holds, and a cache larger than what is left runs out of memory at start
        held = (budget.weights.bytes + budget.non_torch.bytes + budget.activation.bytes + budget.cudagraph.bytes
                + sum(t.bytes for t in budget.extra.values()))
        room = budget.total_bytes - settings.gpu_memory_in_use_bytes - held
        if settings.kv_cache_memory_bytes > room:
            return (f"--kv-cache-memory-bytes {settings.kv_cache_memory_bytes / GIB:.2f} GiB does not fit beside "
                    f"{held / GIB:.2f} GiB of weights and profile memory on a {budget.total_bytes / GIB:.2f} GiB GPU "
                    f"(at most {max(room, 0) / GIB:.2f} GiB is left): allocating the KV cache runs out of memory")
    if (not rules.refuses_when_free_below_requested or settings.gpu_memory_in_use_bytes <= 0
            or settings.extensible_kv_cache):  # 0.34's request_memory: "and not cache_config.enable_extensible_kv_cache"
        return None
    free = budget.total_bytes - settings.gpu_memory_in_use_bytes
    if free >= budget.requested_bytes:
        return None
    return (f"free memory at start {free / GIB:.2f}/{budget.total_bytes / GIB:.2f} GiB is less than the "
            f"{budget.requested_bytes / GIB:.2f} GiB asked for (other processes hold "
            f"{settings.gpu_memory_in_use_bytes / GIB:.2f} GiB)")


def splitting_layers(arch: ModelArch, layers_on_stage: int) -> int:
    """The layers of a stage whose attention / mamba / linear-attention op splits its CUDA graph:
    a capture size has one piecewise graph per stretch between them (splitting layers + 1)."""
    return sum(1 for k in arch.layer_kinds if k is not LayerKind.NONE) * layers_on_stage // max(arch.num_hidden_layers, 1)


def graph_capture_check(arch: ModelArch, budget: MemoryBudget, layers_on_stage: int, settings: EngineSettings,
                        rules: VersionRules) -> str | None:
    """Releases that capture CUDA graphs after sizing the KV cache without budgeting them (V1 < 0.20, and
    Model Runner V2 before 0.29) must fit the capture in what the budget leaves (estimate/memory.py graph_capture_headroom)."""
    budgeted = ((rules.cudagraph_counted and not (settings.model_runner_v2 and not rules.mrv2_graph_estimate))
                or settings.extensible_kv_cache)  # 0.34 measures the captured graphs before sizing the cache
    if (settings.enforce_eager or budgeted or settings.device != "cuda"
            or not rules.v1_engine or settings.kv_cache_memory_bytes is not None):
        return None
    capture = unbudgeted_graph_capture(pieces=splitting_layers(arch, layers_on_stage) + 1,
                                       max_num_batched_tokens=settings.max_num_batched_tokens)
    others = 0 if rules.others_charged_to_budget else settings.gpu_memory_in_use_bytes
    headroom = graph_capture_headroom(budget, others)
    if capture.bytes <= headroom:
        return None
    return (f"vLLM {rules.version} captures CUDA graphs after sizing the KV cache without budgeting them: "
            f"~{capture.bytes / GIB:.2f} GiB of capture vs {headroom / GIB:.2f} GiB left "
            f"(lower --gpu-memory-utilization or use --enforce-eager)")


def valid_tp_sizes(arch: ModelArch, limit: int) -> list[int]:
    """TP sizes vLLM accepts: attention heads divisible by TP; KV heads divisible by TP or
    replicated (TP divisible by KV heads); recurrent heads divisible too."""
    sizes = []
    tp = 1
    while tp <= limit:
        ok = arch.num_attention_heads % tp == 0
        if arch.mla is None and ok:
            kv = arch.num_kv_heads
            ok = kv % tp == 0 or tp % kv == 0
        if ok and arch.mamba is not None:
            m = arch.mamba
            heads = m.num_heads or m.num_v_heads
            ok = heads is None or heads % tp == 0
        if ok:
            sizes.append(tp)
        tp *= 2
    return sizes


def in_flight_tokens(rules: VersionRules, settings: EngineSettings, pp: int) -> int:
    """vLLM max_in_flight_tokens = max_concurrent_batches * max_num_batched_tokens.
    Async scheduling (GPU default, off on CPU and with PP in the V1 runner) doubles it."""
    if not rules.sliding_in_flight_uses_concurrent_batches:
        return settings.max_num_batched_tokens
    if settings.device == "cpu":
        batches = pp
    else:
        batches = 2 if pp == 1 else pp
    return batches * settings.max_num_batched_tokens


@dataclass
class Prepared:
    """Everything about a candidate (variant x TP x PP on a GPU) that does not depend on the context
    length: layer specs, KV groups, weights per rank, each stage's memory budget. Only the KV
    capacity depends on max_model_len (`at_length`), so the context search reuses this."""

    tp: int
    pp: int
    specs: ModelSpecs
    groups: list[KVGroup]
    weights: WeightSplit
    budgets: list[MemoryBudget]  # one per PP stage
    worker_groups: list[list[KVGroup]]
    worker_avail: list[int]
    tightest_stage: int
    in_flight_tokens: int
    tokens_from_concurrency: bool
    reserve_null_block: bool = True
    startup_refusal: str | None = None
    graph_capture_oom: str | None = None
    # max_num_seqs when vLLM refuses more decoding sequences than mamba cache blocks (else None)
    mamba_bound_seqs: int | None = None
    max_num_seqs_given: bool = False  # --max-num-seqs was set (else the plan may lower the default)


def mamba_bound_seqs(arch: ModelArch, settings: EngineSettings, rules: VersionRules) -> int | None:
    """max_num_seqs when vLLM (>= 0.19) checks it against the KV blocks: a hybrid with mamba / linear-attention
    layers whose decode runs FULL CUDA graphs (CUDA, not --enforce-eager) needs one mamba cache block per
    decoding sequence and raises "max_num_seqs (N) exceeds available Mamba cache blocks (M)" otherwise."""
    if (not rules.mamba_blocks_bound_max_num_seqs or settings.enforce_eager or settings.device != "cuda"
            or not arch.has_recurrent_state):
        return None
    return settings.max_num_seqs


def charges_other_processes(settings: EngineSettings, rules: VersionRules) -> bool:
    """The worker that runs subtracts the whole device's use, other processes' memory included, from its KV
    budget: the V0 worker of 0.6.4 and the V1 worker of 0.8.0 - 0.9.0 (engine/versions.py
    others_charged_to_budget); VLLM_USE_V1=0 on 0.8.x runs the V0 worker, which measures from its baseline."""
    return rules.others_charged_to_budget and settings.v0_engine == (not rules.v1_engine)


def prepare(
    arch: ModelArch,
    weight_total_bytes: int,
    weights_source: str,
    *,
    tp: int,
    pp: int,
    settings: EngineSettings,
    rules: VersionRules,
    mtp_layers: int = 0,
    mtp_own_embeddings: bool = True,
    extra_terms: dict[str, MemoryTerm] | None = None,
    last_stage_terms: dict[str, MemoryTerm] | None = None,
    extra_kv_layers: list[LayerKind] | None = None,
    extra_kv_arch: ModelArch | None = None,
    weight_growth: tuple[LoadGrowth, ...] = (),
) -> Prepared:
    """extra_terms: further per-GPU memory on every stage (LoRA stacks); last_stage_terms: on the
    last PP stage only (speculative-decoding drafter); extra_kv_layers: the drafter's attention
    layers, which join the KV pool on the last stage, shaped like the target's (MTP, EAGLE) or, given
    extra_kv_arch (a separate draft model), like that model's own."""
    if arch.mamba is not None and settings.mamba_ssm_cache_dtype not in (None, "auto"):
        # --mamba-ssm-cache-dtype (cache_config.mamba_ssm_cache_dtype): the SSM (temporal) state's dtype
        arch = arch.model_copy(update={"mamba": arch.mamba.model_copy(update={"ssm_dtype": settings.mamba_ssm_cache_dtype})})
    elif (arch.mamba is not None and arch.model_type == "nemotron_h" and not rules.nemotron_h_ssm_from_config
            and arch.mamba.ssm_dtype != "auto"):
        # before 0.13 vLLM keeps NemotronH's SSM state in the model dtype unless --mamba-ssm-cache-dtype says
        # otherwise (engine/versions.py nemotron_h_ssm_from_config); the reader gives the config's float32
        arch = arch.model_copy(update={"mamba": arch.mamba.model_copy(update={"ssm_dtype": "auto"})})
    kv_arch = arch
    if settings.v0_engine and arch.mamba is not None:
        # the V0 engine's cache blocks hold the attention layers only (worker/cache_engine.py: "Models like Jamba,
        # have mixed typed layers": get_num_layers_by_block_type(..., attention)); the recurrent state lives in
        # the model's own MambaCacheManager (v0_state_cache_bytes), not in the block pool
        kv_arch = arch.model_copy(update={"mamba": None, "layer_kinds": [
            LayerKind.NONE if k is LayerKind.MAMBA else k for k in arch.layer_kinds]})
    if extra_kv_layers and extra_kv_arch is None:
        kv_arch = kv_arch.model_copy(update={"layer_kinds": [*kv_arch.layer_kinds, *extra_kv_layers],
                                             "num_hidden_layers": arch.num_hidden_layers + len(extra_kv_layers)})

    # speculative decoding: the recurrent layers keep state for every draft token (VersionRules)
    draft_tokens = draft_token_count(settings.speculative)

    def _specs(model: ModelArch) -> ModelSpecs:
        return build_specs(
            model,
            tp=tp,
            kv_cache_dtype=settings.kv_cache_dtype,
            device=settings.device,
            block_size=settings.block_size,
            prefix_caching=settings.prefix_caching,
            compute_capability=settings.compute_capability,
            cpu_amx=settings.cpu_amx,
            ssm_dtype_override="float32" if settings.device == "cpu" and settings.cpu_avx512_bf16 else None,
            mla_backend_generation=rules.mla_backend_generation,
            mla_hybrid_alignment=rules.mla_hybrid_block_alignment,
            hybrid_alignment_from_backend=rules.hybrid_alignment_from_backend,
            mla_entry_align_256=rules.mla_entry_align_256,
            default_block=rules.default_block_size,
            speculative_blocks=draft_tokens if rules.mamba_speculative_blocks else 0,
            conv_spec_tokens=(draft_tokens if model.mamba is not None
                              and model.mamba.variant in rules.mamba_conv_spec_variants else 0),
        )

    specs = _specs(kv_arch)
    kv_layer_count = kv_arch.num_hidden_layers
    if extra_kv_layers and extra_kv_arch is not None:
        # a draft model's attention layers register in the same KV pool with their own shapes: Qwen2.5-0.5B
        # drafting for Qwen2.5-1.5B on vLLM 0.23 printed 140,832 tokens from 5.37 GiB, 40,960 B a token =
        # 28 x 2 x 128 x 2 x 2 (target) + 24 x 2 x 64 x 2 x 2 (draft), one uniform-type group
        draft = _specs(extra_kv_arch)
        offset = arch.num_hidden_layers
        specs = replace(specs, layer_ids=(*specs.layer_ids, *(offset + i for i in draft.layer_ids)),
                        specs=(*specs.specs, *draft.specs))
        kv_layer_count = offset + extra_kv_arch.num_hidden_layers
    groups = group_layers(list(specs.specs))
    split = split_weights(arch, weight_total_bytes, tp=tp, pp=pp, mtp_layers=mtp_layers,
                          mtp_own_embeddings=mtp_own_embeddings, growth=weight_growth)
    stages = pp_layer_ranges(arch.num_hidden_layers, pp)
    budgets: list[MemoryBudget] = []
    worker_groups: list[list[KVGroup]] = []
    worker_avail: list[int] = []
    for s, layers in enumerate(stages):
        layer_set = set(layers)
        last = s == len(stages) - 1
        if last and extra_kv_layers:
            layer_set |= set(range(arch.num_hidden_layers, kv_layer_count))
        kv_positions = {i for i, layer_id in enumerate(specs.layer_ids) if layer_id in layer_set}
        worker_groups.append(project_groups(groups, kv_positions))
        terms = dict(extra_terms or {})
        if last:
            terms.update(last_stage_terms or {})
        # --cpu-offload-gb: vLLM's offloader wraps the decoder layers (make_layers) and moves their parameters to
        # pinned host memory, whole parameters in order, until the GiB are reached (model_executor/offloader/uva.py
        # in 0.32; models/utils.py maybe_offload_to_cpu before): at most the layers this rank holds
        offload = min(settings.cpu_offload_bytes, split.per_layer_bytes * len(layers) // tp)
        budget = stage_budget(arch, split.per_stage_bytes[s], weights_source, len(layers), tp, pp, settings, rules,
                              first_stage=s == 0, last_stage=last, extra_terms=terms, offload_bytes=offload,
                              weight_growth=split.per_stage_growth[s],
                              state_layers_on_stage=sum(1 for i in layers if arch.layer_kinds[i] is LayerKind.MAMBA))
        if offload:
            budget = budget.model_copy(update={"cpu_offload_bytes": offload})
        budgets.append(budget)
        worker_avail.append(budget.kv_cache.bytes)
    # the stage with the fewest KV blocks (the one vLLM's count follows), else the least KV memory
    def _blocks(i: int) -> tuple[float, int]:
        per_block = bytes_per_block(worker_groups[i]) if any(g.specs for g in worker_groups[i]) else 0
        return (budgets[i].kv_cache.bytes // per_block if per_block else float("inf"), budgets[i].kv_cache.bytes)

    tightest = min(range(len(budgets)), key=_blocks)
    refusal = startup_refusal(budgets[tightest], settings, rules)
    graph_oom = next((g for s, layers in enumerate(stages)
                      if (g := graph_capture_check(arch, budgets[s], len(layers), settings, rules))), None)
    return Prepared(
        tp=tp,
        pp=pp,
        specs=specs,
        groups=groups,
        weights=split,
        budgets=budgets,
        worker_groups=worker_groups,
        worker_avail=worker_avail,
        tightest_stage=tightest,
        in_flight_tokens=in_flight_tokens(rules, settings, pp),
        tokens_from_concurrency=rules.tokens_from_concurrency,
        reserve_null_block=rules.null_block_reserved_in_check,
        startup_refusal=refusal,
        graph_capture_oom=graph_oom,
        mamba_bound_seqs=mamba_bound_seqs(arch, settings, rules),
        max_num_seqs_given=settings.max_num_seqs_given,
    )


def at_length(prep: Prepared, max_model_len: int, auto_fit: bool = False) -> Evaluation:
    """The candidate at one context length: vLLM's KV capacity check for it."""
    cap = kv_capacity(
        prep.groups,
        prep.worker_groups,
        prep.worker_avail,
        max_model_len,
        prep.in_flight_tokens,
        auto_fit=auto_fit,
        tokens_from_concurrency=prep.tokens_from_concurrency,
        reserve_null_block=prep.reserve_null_block,
    )
    return Evaluation(
        tp=prep.tp,
        pp=prep.pp,
        max_model_len=cap.max_model_len,
        specs=prep.specs,
        groups=prep.groups,
        weights=prep.weights,
        budgets=prep.budgets,
        capacity=cap,
        tightest_stage=prep.tightest_stage,
        in_flight_tokens=prep.in_flight_tokens,
        startup_refusal=prep.startup_refusal,
        graph_capture_oom=prep.graph_capture_oom,
        mamba_seq_limit=(cap.num_blocks if prep.mamba_bound_seqs is not None and cap.num_blocks > 0
                         and prep.mamba_bound_seqs > cap.num_blocks else None),
        mamba_seqs_lowered=not prep.max_num_seqs_given,
        mamba_blocks_bound=prep.mamba_bound_seqs is not None,
    )


def v0_state_cache_rows(max_num_seqs: int, enforce_eager: bool, version: tuple[int, int, int] = (0, 10, 1)) -> int:
    """Sequences the V0 MambaCacheManager holds state for: max_num_seqs, padded to the CUDA-graph batch size above
    it (VllmConfig.pad_for_cudagraph over V0's capture sizes 1, 2, 4 and the multiples of 8) unless --enforce-eager
    (models/mamba_cache.py of 0.7.3, 0.8.5 and 0.10.1); 0.6.4's jamba.py pads with _get_graph_batch_size whether
    or not the model runs eagerly."""
    if (enforce_eager and version >= (0, 7, 0)) or max_num_seqs <= 2:
        return max_num_seqs
    return 4 if max_num_seqs <= 4 else -(-max_num_seqs // 8) * 8


def v0_state_cache_bytes(arch: ModelArch, tp: int, state_layers: int, max_num_seqs: int, enforce_eager: bool,
                         version: tuple[int, int, int] = (0, 10, 1)) -> int:
    """The V0 engine's recurrent-state cache on one rank: a conv and an SSM state per mamba layer and sequence,
    allocated by the model on its first forward pass - the profile run - so vLLM's V0 profile counts it in the
    activation peak and sizes the attention-only KV cache from what is left."""
    assert arch.mamba is not None
    return state_layers * v0_state_cache_rows(max_num_seqs, enforce_eager, version) * mamba_state_bytes(
        arch.mamba, tp, arch.dtype_bytes)


def stage_budget(
    arch: ModelArch,
    weight_bytes: int,
    weights_source: str,
    layers_on_stage: int,
    tp: int,
    pp: int,
    settings: EngineSettings,
    rules: VersionRules,
    *,
    first_stage: bool = True,
    last_stage: bool = True,
    extra_terms: dict[str, MemoryTerm] | None = None,
    weight_growth: list[tuple[str, int]] | None = None,
    state_layers_on_stage: int = 0,
    offload_bytes: int = 0,
) -> MemoryBudget:
    """weight_growth: (reason, bytes) of weight_bytes vLLM adds at load, for the note (estimate/weights.py
    LoadGrowth: its ROCm FP8 row padding, the MLA matrices 0.7.1 - 0.7.3 absorb)."""
    source = weights_source if (tp == 1 and pp == 1) else ("derived" if weights_source == "measured" else weights_source)
    note = "repository weight bytes" + (f" split over TP={tp} PP={pp}" if tp * pp > 1 else "")
    for reason, grown in weight_growth or ():
        if grown:
            source = "derived" if source == "measured" else source
            note += f", plus {grown / GIB:.2f} GiB of {reason}"
    if offload_bytes:
        weight_bytes -= offload_bytes
        source = "derived" if source == "measured" else source
        note += (f", less {offload_bytes / GIB:.2f} GiB in host memory (--cpu-offload-gb; vLLM moves whole "
                 "parameters, so up to one parameter more)")
    weights = MemoryTerm(bytes=weight_bytes, source=source, note=note)
    zero = MemoryTerm(bytes=0, source="derived", note="")
    if settings.device == "cpu":
        non_torch = MemoryTerm(bytes=CPU_RUNTIME_OVERHEAD, source="estimated", note="CPU worker runtime (RSS besides weights)")
        runtime = settings.calibrated.get("cpu_runtime")
        measured = settings.calibrated.get("cpu_non_kv")
        if runtime is not None:
            # vLLM CPU worker: KV = requested - RSS consumed by non-KV usage ("Auto set ... GiB for KV
            # cache ... X GiB memory was consumed by non-kv usages"); the runtime part is that RSS
            # minus the calibrated model's weights, so it carries over to other models of the family
            non_torch = runtime
        elif measured is not None:
            non_torch = MemoryTerm(bytes=max(measured.bytes - weight_bytes, 0), source="calibrated",
                                   note=measured.note or "measured non-KV RSS minus weights")
        return kv_budget(
            total_bytes=settings.total_bytes,
            utilization=settings.gpu_memory_utilization,
            weights=weights,
            non_torch=non_torch,
            activation=zero.model_copy(update={"note": "counted in the worker RSS on CPU"}),
            cudagraph=zero.model_copy(update={"note": "no CUDA graphs on CPU"}),
            kv_cache_memory_bytes=settings.kv_cache_memory_bytes,
            extra=dict(extra_terms or {}),
        )
    # the worker that runs charges other processes' memory (and, the V0 one, the CUDA context)
    device_wide = charges_other_processes(settings, rules)
    non_torch = settings.calibrated.get("non_torch") or estimate_non_torch(
        tp, pp, settings.vendor, v0=settings.v0_engine, context_charged=device_wide, nvlink=settings.nvlink_peers)
    fusion = allreduce_fusion_non_torch(
        tp=tp, pp=pp, dp=settings.data_parallel_size, compute_capability=settings.compute_capability,
        version=rules.key, multicast=settings.allreduce_fusion, hidden_size=arch.hidden_size,
        dtype_bytes=arch.dtype_bytes, max_num_batched_tokens=settings.max_num_batched_tokens)
    if fusion and "non_torch" not in settings.calibrated:
        non_torch = MemoryTerm(bytes=non_torch.bytes + fusion, source="estimated",
                               note=f"{non_torch.note} + {fusion / GIB:.2f} GiB of FlashInfer all-reduce fusion "
                                    "workspace (TP on an NVSwitch fabric, vLLM >= 0.17; 2 MiB symmetric-memory "
                                    "granules from 0.22)")
    # only the last pipeline stage samples (profile_run: _dummy_sampler_run on get_pp_group().is_last_rank)
    sampler = sampler_path(settings, rules) if last_stage else "none"
    if sampler != "none" and settings.model_runner_v2:
        sampler = "mrv2"  # its dummy run samples without top-k / top-p (engine/versions.py)
    moe_gather = settings.data_parallel_size if settings.expert_parallel else 1
    profile_tokens, profile_seqs, v0_mm = settings.max_num_batched_tokens, settings.max_num_seqs, None
    if settings.v0_engine and arch.vision is not None:
        v0_mm = v0_mm_profile(arch, settings, rules)
        profile_tokens, profile_seqs = v0_mm.tokens, v0_mm.sequences
    activation = settings.calibrated.get("activation") or estimate_activation(
        arch, tp=tp, max_num_batched_tokens=profile_tokens, max_num_seqs=profile_seqs,
        sampler=sampler, moe_gather=moe_gather,
        sampler_label="FlashInfer" if sampler == "triton" and rules.sampler_flashinfer_topk else "",
        hidden_kept=settings.v0_engine and sampler != "none",
    )
    if v0_mm is not None and v0_mm.tokens > settings.max_num_batched_tokens and "activation" not in settings.calibrated:
        activation = activation.model_copy(update={"note": (
            f"{activation.note} (V0 keeps the whole dummy multimodal prompt, {v0_mm.mm_tokens} tokens, longer than "
            f"max_num_batched_tokens {settings.max_num_batched_tokens})")})
    if settings.v0_engine and arch.mamba is not None and state_layers_on_stage and "activation" not in settings.calibrated:
        rows = v0_state_cache_rows(settings.max_num_seqs, settings.enforce_eager, rules.key)
        state = v0_state_cache_bytes(arch, tp, state_layers_on_stage, settings.max_num_seqs, settings.enforce_eager,
                                     rules.key)
        activation = MemoryTerm(
            bytes=activation.bytes + state, source="estimated",
            note=f"{activation.note} + {state / GIB:.2f} GiB of recurrent state the V0 engine's MambaCacheManager "
                 f"allocates in the profile run ({state_layers_on_stage} layers x {rows} sequences)")
    extra = dict(extra_terms or {})
    if device_wide and settings.gpu_memory_in_use_bytes > 0:
        extra["other_processes"] = MemoryTerm(
            bytes=settings.gpu_memory_in_use_bytes, source="given",
            note=f"vLLM {rules.version} counts memory held by other processes as its own non-torch memory")
    if v0_mm is not None and v0_mm.text_only:
        extra["encoder"] = MemoryTerm(bytes=0, source="derived", note=(
            f"vLLM {rules.version} (V0) profiles a text-only dummy prompt when one prompt's {v0_mm.mm_tokens} "
            f"multimodal tokens exceed the {settings.max_num_batched_tokens // max(v0_mm.sequences, 1)} a sequence "
            "gets: the encoder is not profiled"))
    elif arch.vision is not None and first_stage:
        enc = encoder_term(arch, settings, activation.bytes, settings.mm_max_model_len or arch.native_max_model_len, tp,
                           rules)
        if enc is not None:
            extra["encoder"] = enc
    # Where the sampler sets the profile peak, only what is left beside it is charged of the non-torch
    # constant (memory.py NON_TORCH_SORT_PEAK_REST). The sort-path logs of multi-GPU starts disagree
    # (0.14 TP=2: 0.67-0.74 GiB beside the sort; 0.10 TP=2 / TP=4 x PP=2 without FlashInfer: the whole
    # constant), so there TP / PP > 1 keeps it; the Triton path's TP=2 / TP=4 logs (0.19) agree with the rule.
    uncalibrated = "non_torch" not in settings.calibrated and "activation" not in settings.calibrated
    credit = 0
    no_compile_memory = settings.compile_cache == "warm" or not rules.compile_memory_in_profile
    if not settings.v0_engine and uncalibrated and (settings.enforce_eager or no_compile_memory):
        # nothing is compiled in the profile run (estimate/memory.py COMPILE_SHARE): --enforce-eager turns
        # torch.compile off in the V1 engine (config/__init__.py 0.11.0: NO_COMPILATION; vllm.py 0.12+:
        # -O0), and a restart loads the compiled graphs from vLLM's cache; 0.14 - 0.23 starts show none of
        # it even when compiling (engine/versions.py compile_memory_in_profile)
        share = compile_share(rules.key)
        why = ("--enforce-eager: no torch.compile" if settings.enforce_eager else
               "warm compile cache: nothing compiled" if settings.compile_cache == "warm" else
               f"vLLM {rules.version}'s profile peak holds no compile memory")
        non_torch = MemoryTerm(bytes=non_torch.bytes - share, source=non_torch.source,
                               note=f"{non_torch.note}, less {share / GIB:.2f} GiB of torch.compile's share ({why})")
    elif (sampler in ("sort", "triton", "mrv2") and (tp * pp == 1 or sampler != "sort") and not settings.v0_engine
            and uncalibrated):
        credit = sampler_peak_non_torch_credit(
            arch, tp=tp, max_num_batched_tokens=settings.max_num_batched_tokens,
            max_num_seqs=settings.max_num_seqs, sampler=sampler, version=rules.key, moe_gather=moe_gather)
        # a vision encoder's profile (its ViT peak, or embeddings held through the LM run) lifts the peak
        # above the sampler's by what it adds
        credit = max(credit - (extra["encoder"].bytes if "encoder" in extra else 0), 0)
        if credit:
            non_torch = MemoryTerm(
                bytes=non_torch.bytes - credit, source=non_torch.source,
                note=f"{non_torch.note}, less {credit / GIB:.2f} GiB of torch.compile's share "
                     "(the sampler, not the compiling forward pass, sets the profile peak)")
    if not settings.v0_engine and uncalibrated and not settings.enforce_eager and not no_compile_memory:
        charged = compile_share(rules.key) - credit
        if charged > 0:
            non_torch = MemoryTerm(
                bytes=non_torch.bytes, source=non_torch.source,
                note=f"{non_torch.note}; a first start: {charged / GIB:.2f} GiB of it is torch.compile compiling "
                     "the model, which a restart with vLLM's compile cache does not hold (--compile-cache warm)"
                     + ("; on this release any earlier start of the model on the same machine counts: Inductor "
                        "keeps what it tuned in /tmp/torchinductor_$USER, outside vLLM's cache"
                        if (0, 12, 0) <= rules.key < (0, 20, 0) else ""))
    if settings.enforce_eager:
        cudagraph = MemoryTerm(bytes=0, source="derived", note="--enforce-eager: no CUDA graphs")
    elif settings.model_runner_v2 and not rules.mrv2_graph_estimate:
        cudagraph = MemoryTerm(bytes=0, source="derived",
                               note=f"vLLM {rules.version}'s Model Runner V2 estimates no CUDA-graph memory "
                                    "(captured after the KV cache is sized)")
    elif not rules.cudagraph_counted:
        cudagraph = MemoryTerm(bytes=0, source="derived", note=f"vLLM {rules.version} does not count CUDA-graph memory")
    elif settings.device == "rocm" and not rules.rocm_cudagraph_counted:
        cudagraph = MemoryTerm(bytes=0, source="derived",
                               note=f"vLLM {rules.version} counts CUDA-graph memory on CUDA only (ROCm from 0.24)")
    else:
        layers = splitting_layers(arch, layers_on_stage)
        if settings.device == "cuda":
            moe = arch.moe
            sm100 = settings.compute_capability is not None and 10.0 <= settings.compute_capability < 11.0
            estimate = profiled_cudagraph(
                hidden_size=arch.hidden_size, layers_on_rank=layers_on_stage, tp=tp,
                max_num_seqs=settings.max_num_seqs, max_num_batched_tokens=settings.max_num_batched_tokens,
                moe_topk=moe.experts_per_token if moe is not None else 0,
                moe_width=(moe.moe_intermediate_size or arch.intermediate_size or 0) if moe is not None else 0,
                ceiling=graph_capture_ceiling(sm100=sm100, vllm_version=rules.key))
        else:
            estimate = estimate_cudagraph(layers)
        cudagraph = settings.calibrated.get("cudagraph") or estimate
        if settings.extensible_kv_cache and "cudagraph" not in settings.calibrated:
            cudagraph = MemoryTerm(bytes=cudagraph.bytes, source=cudagraph.source,
                                   note="CUDA graph pool, captured before the extensible KV cache is sized")
        elif ("cudagraph" not in settings.calibrated and rules.gdn_graph_profile_transient
                and arch.mamba is not None and arch.mamba.variant == "gdn"):
            transient = gdn_graph_profile_transient(settings.max_num_batched_tokens, tp)
            cudagraph = MemoryTerm(
                bytes=cudagraph.bytes + transient, source="estimated",
                note=f"{cudagraph.note} + {transient / GIB:.2f} GiB the estimate charges for its long-context GDN "
                     f"warm-up over {settings.max_num_batched_tokens:,} tokens (vllm#50780)")
        if "cudagraph" not in settings.calibrated and settings.device == "rocm":
            pinned = rocm_hipgraph_pinned(pieces=layers + 1, max_num_seqs=settings.max_num_seqs,
                                          max_num_batched_tokens=settings.max_num_batched_tokens)
            cudagraph = MemoryTerm(bytes=cudagraph.bytes + pinned.bytes, source="estimated",
                                   note=f"{cudagraph.note} + {pinned.bytes / GIB:.2f} GiB pinned by {pinned.note}")
    common = dict(total_bytes=settings.total_bytes, utilization=settings.gpu_memory_utilization, weights=weights,
                  non_torch=non_torch, activation=activation, cudagraph=cudagraph, extra=extra)
    if settings.extensible_kv_cache:
        return extensible_kv_budget(**common, vendor=settings.vendor,
                                    in_use_by_others_bytes=settings.gpu_memory_in_use_bytes)
    return kv_budget(**common, kv_cache_memory_bytes=settings.kv_cache_memory_bytes)


def sampler_sorts(settings: EngineSettings, rules: VersionRules) -> bool:
    """Whether the profile's dummy sampler takes the sort-based top-k/top-p path (versions.py)."""
    if settings.v0_engine and settings.device in ("cuda", "rocm"):
        return True
    if settings.device == "rocm":
        # topk_topp_sampler.py takes the FlashInfer branch only under current_platform.is_cuda()
        return rules.sampler_sorts_by_default or rules.sampler_sorts_without_flashinfer
    if settings.device != "cuda":
        return False
    if rules.sampler_sorts_by_default:
        return True
    return rules.sampler_sorts_without_flashinfer and settings.flashinfer_installed is False


def sampler_path(settings: EngineSettings, rules: VersionRules) -> str:
    """The dummy sampler's top-k/top-p path: "sort", "triton" (CUDA, vLLM >= 0.17) or "flashinfer"."""
    if sampler_sorts(settings, rules):
        return "sort"
    if settings.device == "cuda" and rules.sampler_triton:
        return "triton"
    return "flashinfer"


def v0_mm_profile(arch: ModelArch, settings: EngineSettings, rules: VersionRules):
    """The old engine's multimodal profile batch (estimate/multimodal.py v0_multimodal_profile): every modality
    the tower serves at its V0 default limit of 1 (or the user's), images at the largest size, a Qwen2-VL-family
    video of as many frames as fit the context after the image (at least one)."""
    assert arch.vision is not None
    image_limit = 1 if settings.mm_image_limit is None else settings.mm_image_limit
    image = 0 if settings.mm_image_off or image_limit <= 0 else image_limit * arch.vision.max_tokens_per_item
    video = 0
    if "video" in tower_modalities(arch.architectures) and image_limit > 0:
        video = largest_video_tokens(arch, settings, rules, settings.mm_max_model_len or arch.native_max_model_len)
    return v0_multimodal_profile(max_num_batched_tokens=settings.max_num_batched_tokens,
                                 max_num_seqs=settings.max_num_seqs, image_tokens=image, video_tokens=video,
                                 keep_overlong=rules.v0_mm_keeps_overlong_prompt)


def largest_video_tokens(arch: ModelArch, settings: EngineSettings, rules: VersionRules, max_model_len: int) -> int:
    """The largest video item a Qwen2-VL-family tower is profiled with (estimate/multimodal.py
    qwen2_vl_video_tokens); 0 for other towers or a video limit of 0."""
    assert arch.vision is not None
    if arch.vision.family != "qwen2_vl" or settings.mm_video_off:
        return 0
    return qwen2_vl_video_tokens(arch.vision, max_model_len, max_frames=rules.qwen2_vl_video_max_frames,
                                 after_image=rules.qwen2_vl_video_after_image and not settings.mm_image_off)


def encoder_term(arch: ModelArch, settings: EngineSettings, lm_activation_bytes: int,
                 max_model_len: int, tp: int, rules: VersionRules) -> MemoryTerm | None:
    """The vision tower's share of the profile-run peak (estimate/multimodal.py)."""
    assert arch.vision is not None
    video = 0 if settings.v0_engine else largest_video_tokens(arch, settings, rules, max_model_len)
    prof = encoder_profile(
        arch.vision,
        max_num_batched_tokens=settings.max_num_batched_tokens,
        max_num_seqs=settings.max_num_seqs,
        max_model_len=max_model_len,
        limit_per_prompt=settings.mm_image_limit,
        tp=tp,
        video_tokens_per_item=video,
        dense_mask=arch.vision.family == "pixtral" and rules.pixtral_dense_mask,
    )
    if prof.skipped:
        return MemoryTerm(bytes=0, source="derived", note="multimodal limit 0: encoder not profiled")
    kind = "video" if video > arch.vision.max_tokens_per_item else "image"
    return MemoryTerm(
        bytes=encoder_extra_bytes(prof, lm_activation_bytes),
        source="estimated",
        note=(f"vision encoder profiled with {prof.items} {kind} item(s) of {prof.tokens_per_item} tokens "
              f"(encoder cache budget {prof.budget_tokens} tokens)"),
    )
