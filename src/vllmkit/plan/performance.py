"""Bridge from a planned candidate (architecture, evaluation, engine settings, GPU profile) to the
performance model's inputs, and the `performance` section of a plan.

The pure maths lives in estimate/perf.py (step cost), estimate/scheduler_sim.py (scheduler) and
estimate/serving.py (workloads); this module only gathers the numbers the plan already has.
Measured records (`vllmkit bench`, calibration/perfstore.py) come in as an argument: the planner never
imports bench. At a measured point the measured numbers are reported (source "measured"); elsewhere the
efficiencies for that GPU and precision are corrected from the records (source "calibrated").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, Field

from vllmkit.arch.model import LayerKind, ModelArch
from vllmkit.engine.versions import parse_version, rules_for
from vllmkit.errors import DoesNotFitError, UsageError
from vllmkit.estimate.kv import mixes_layer_kinds, running_pool_tokens
from vllmkit.estimate.perf import (
    ASYNC_HOST_SHARE,
    EARLY_ASYNC_HOST_SHARE,
    GEMM_KERNEL_S,
    ROCM_FP8_COMPUTE_FACTOR,
    Efficiency,
    GpuPerf,
    KVRead,
    ModelPerf,
    decode_floor_seconds,
    efficiency_for,
    expert_stream,
    max_graph_tokens,
    mxfp4_upcast,
    rocm_fp8_gemms,
    rocm_w4a16_weights,
    with_eager,
    with_graph_limit,
)
from vllmkit.estimate.scheduler_sim import SchedulerLimits
from vllmkit.estimate.serving import (
    DP_API_SERVER_PER_ENGINE,
    ServingPrediction,
    Stat,
    Workload,
    default_num_requests,
    predict,
    predict_replicas,
)
from vllmkit.estimate.speculative import EAGLE_METHODS, NO_WEIGHT_METHODS, draft_token_count, is_mtp
from vllmkit.estimate.weights import attention_params, rope_cache_bytes, routed_expert_params

# Efficiencies fitted on the public vLLM runs in benchmarks/data (benchmarks/perf_accuracy.py --fit-all,
# 2026-12-02, round 13: the round-10 fit redone on the model as it now stands -- graph-capture ceiling,
# tied LM head, RoPE caches, shared prefixes, pipeline micro-batches; 120 Nelder-Mead iterations with two
# restarts, at most 12 runs per publisher; its leave-one-source-out report is the accuracy on runs not
# fitted on, and the held-out files are never fitted on). NVIDIA datacenter baseline;
# estimate/perf.py FAMILY_PRIORS adjusts other families. bandwidth and compute are bounded by what an
# H200 measured (benchmarks/data/gpu-probe-h200*.json): the 4.28 TB/s copy rate (0.892 of 4.8 TB/s; the
# GEMMs' per-kernel cost is modelled apart) and the best BF16 GEMM plateau (688 TFLOP/s, 0.695 of 989.5);
# the fit put bandwidth at its bound. The per-request API-server cost is bounded by what a real vLLM's
# API server costs (benchmarks/frontend_overhead.py, benchmarks/data/frontend-overhead-cpu.json: 8.1 ms
# on the chat endpoint of the CPU build on two shared cores). The per-kernel GEMM / quantisation costs are
# measured, not fitted. Round 17 added the FP8 fused-MoE expert stream (estimate/perf.py `fp8_moe_stream`):
# its value is that of a joint refit of all the parameters (`--fit-all`, 0.633; 0.53-0.62 in every
# leave-one-publisher-out fold that keeps GPUStack's FP8 MoE runs, 0.99 in the one without them), while
# the others keep their round-13 values: the joint refit moved them within their fold-to-fold spread, and
# keeping them leaves every run without FP8 MoE experts as it was. Round 19 fitted the 4-bit weight-only
# (Marlin) GEMM rate alone on the 31 bundled W4A16 runs (`perf_accuracy.py --fit-one w4a16_compute`: 0.839,
# against the 0.6 prior read off the Marlin paper), the others fixed, so only W4A16 runs moved. Round 42 fitted
# the rate of Hopper's MXFP4 MoE GEMMs (triton matmul_ogs, experts unpacked to BF16 in the kernel) alone on the
# 27 bundled H100 gpt-oss runs (`--fit-one mxfp4_upcast_compute`: 0.705, prior 1), so only those runs moved.
FITTED_EFFICIENCY = Efficiency(
    bandwidth=0.8917,
    compute=0.4343,
    step_overhead_s=2.385e-3,
    per_seq_overhead_s=2.508e-5,
    allreduce_latency_s=1.2e-5,
    moe_compute=0.598,
    moe_width_ref=819.3,
    request_overhead_s=0.007198,
    rocm_legacy=0.3529,
    v0_seq_factor=4.493,
    ampere_compute=1.249,
    fp8_moe_stream=0.6332,
    w4a16_compute=0.839,
    mxfp4_upcast_compute=0.705,
    source="estimated",
    note="fitted on public vLLM runs of 8 publishers (benchmarks/perf_accuracy.py --fit-all, round 13; FP8-MoE expert "
         "stream round 17; W4A16 compute round 19; Hopper MXFP4 compute round 42), bounded by the "
         "GEMM ceilings measured on an H200 and the API-server cost measured on a real vLLM",
)

BYTES_PER_WEIGHT = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "gptq-int8": 1.0, "awq": 0.53,
                    "gptq-int4": 0.53, "int4": 0.53, "mxfp4": 0.53, "nvfp4": 0.56,
                    "bitsandbytes": 0.52}

_FAMILIES = (
    ("sm_7", "volta"), ("sm_75", "turing"), ("sm_80", "ampere"), ("sm_86", "ampere"), ("sm_87", "ampere"),
    ("sm_89", "ada"), ("sm_90", "hopper"), ("sm_10", "blackwell"), ("sm_11", "blackwell"),
    ("sm_12", "blackwell"),
    ("gfx908", "cdna1"), ("gfx90a", "cdna2"), ("gfx942", "cdna3"), ("gfx950", "cdna4"),
    ("gfx11", "rdna3"), ("gfx12", "rdna4"),
)


def gpu_family(architecture: str) -> str:
    if architecture == "cpu":
        return "cpu"
    if architecture == "sm_75":
        return "turing"
    found = "unknown"
    for prefix, family in _FAMILIES:
        if architecture.startswith(prefix):
            found = family
    return found


# The rate at which a GPU reads --cpu-offload-gb weights from pinned host memory. vLLM's UVA offloader lets the
# kernels read them in place over PCIe (model_executor/offloader/uva.py, 0.32), which sustains far less than the
# link's copy rate: TheBuccaneer/vllm-offload-profiles (vLLM 0.17.1, one RTX 3090 in a PCIe 4.0 x16 Threadripper
# 3970X host, 0 - 16 GiB offloaded, 1 - 16 concurrent requests) measured TPOT rising by 114 ms per offloaded GiB
# for Llama-3.1-8B (2 / 4 / 8 / 12 GiB: 226 / 460 / 914 / 1,365 ms over the 20 ms without offload) - 9.4 GB/s,
# 0.30 of the PCIe 4.0 x16 signalling rate (PCI-SIG: 16 GT/s a lane, 128b/130b: 31.5 GB/s). That fraction is
# the rule, set on the Llama runs; the same study's Qwen2.5-7B runs are its check (tests/unit/estimate/
# test_cpu_offload.py). PCIe 5.0 hosts (Hopper, Blackwell, CDNA 3 / 4 and RDNA 4 cards) are taken at twice the
# rate, not measured; the Grace superchips read host memory over NVLink-C2C (450 GB/s a direction, NVIDIA; the
# same fraction assumed), and unified-memory parts (GB10, Jetson) have no separate host memory.
UVA_READ_FRACTION = 9.42e9 / 31.5e9
PCIE4_X16_BYTES_S = 16e9 * 16 / 8 * 128 / 130
PCIE5_X16_BYTES_S = 2 * PCIE4_X16_BYTES_S
_PCIE5_ARCHS = ("sm_90", "sm_100", "sm_103", "sm_12", "gfx942", "gfx950", "gfx12")


def host_link_bytes_s(profile: Any, bandwidth_bytes_s: float) -> float:
    """How fast this GPU reads weights kept in host memory (--cpu-offload-gb)."""
    name = str(profile.name).lower()
    arch = str(profile.architecture)
    if getattr(profile, "unified_memory", False):
        return bandwidth_bytes_s  # unified memory: the "host" copy sits in the same memory
    if name.startswith(("gh200", "gb200", "gb300")):
        return 450e9 * UVA_READ_FRACTION
    return (PCIE5_X16_BYTES_S if arch.startswith(_PCIE5_ARCHS) else PCIE4_X16_BYTES_S) * UVA_READ_FRACTION


def gpu_perf(profile: Any) -> GpuPerf:
    """Peaks from the GPU profile (vendor datasheets, cited in the YAML's specs_source)."""
    tflops = {k: float(v) for k, v in (("bf16", profile.tflops_bf16), ("fp16", profile.tflops_fp16),
                                      ("fp8", profile.tflops_fp8), ("int8", profile.tflops_int8),
                                      ("fp4", profile.tflops_fp4)) if v}
    link = profile.interconnect
    kind = profile.link_kind
    family = gpu_family(profile.architecture)
    geforce = "geforce" in str(profile.display_name).lower()
    if geforce and family == "blackwell" and str(profile.architecture).startswith("sm_12"):
        family = "blackwell-geforce"  # its own compute prior (estimate/perf.py GEFORCE_BLACKWELL_MATMUL_RATIO)
    if geforce and kind == "pcie":
        # GeForce cards (RTX 30 / 40 / 50) have no GPU peer-to-peer access over PCIe with NVIDIA's drivers:
        # vLLM's custom all-reduce needs P2P (vllm/distributed/device_communicators/custom_all_reduce.py,
        # "lacks GPU P2P capability") and falls back to NCCL, whose SHM transport bounces every byte through
        # host memory. Public logs print the warning on 4 x RTX 3090 (collected-startup-logs-23 / -24) and
        # 2 x RTX 5090 (vLLM 0.10 - 0.19 setups; NVIDIA's forum confirms no P2P on the RTX 5090)
        kind = "pcie-host"
    if geforce and family == "ada":
        family = "ada-geforce"  # its own compute prior (estimate/perf.py GEFORCE_ADA_MATMUL_RATIO)
    link_bw = (link.bandwidth_gbps or 0.0) if link else 0.0
    bandwidth = float(profile.memory_bandwidth_gbps or 100.0) * 1e9
    return GpuPerf(
        name=profile.name,
        vendor=profile.vendor,
        family=family,
        # the host CPU profile carries no peaks: a placeholder of one DDR5 socket's order of magnitude
        bandwidth_bytes_s=bandwidth,
        tflops=tflops or {"bf16": 1.0},
        # vendors quote the total of both directions; a ring all-reduce moves data one way per link
        link_bytes_s=max(link_bw / 2.0, 1.0) * 1e9,
        link_kind=kind,
        host_link_bytes_s=host_link_bytes_s(profile, bandwidth),
    )


def compute_mode(label: str, profile: Any) -> tuple[str, str]:
    """(GEMM precision, weight kernel) for a precision label on this GPU."""
    fp8 = bool(getattr(profile, "fp8_supported", False))
    fp4 = bool(getattr(profile.supports, "fp4", False)) if getattr(profile, "supports", None) else False
    if label in ("bf16", "fp16", "fp32"):
        return label, "dense"
    if label == "fp8":
        return ("fp8", "dense") if fp8 else ("bf16", "w8a16")  # Marlin W8A16 below sm 8.9
    if label == "int8":
        return "int8", "dense"
    if label == "gptq-int8":
        return "fp16", "w8a16"
    if label in ("mxfp4", "nvfp4"):
        if fp4:
            return "fp4", "dense"
        # Hopper runs MXFP4 MoE through triton matmul_ogs (vllm/model_executor/layers/quantization/mxfp4.py,
        # TRITON backend on sm 9.x) with the scales applied inside a BF16 GEMM at close to the BF16 rate;
        # Ampere falls back to Marlin W4A16
        sm = getattr(profile, "sm", None)
        return ("bf16", "dense") if (sm or 0) >= 90 else ("bf16", "w4a16")
    return "fp16", "w4a16"  # awq / gptq-int4 / int4: Marlin W4A16


def _expert_params(arch: ModelArch) -> tuple[float, int]:
    """(routed-expert parameters of the whole model, MoE layers)."""
    if arch.moe is None:
        return 0.0, 0
    return float(routed_expert_params(arch)), arch.moe.moe_layer_count(arch.num_hidden_layers)


SINGLE_BLOCK_GEMMS = 2  # GEMM kernels of a one-block layer (ModelArch.single_block_layers)


def model_perf(arch: ModelArch, evaluation: Any, label: str, profile: Any, *, dp: int = 1,
               expert_parallel: bool = False) -> ModelPerf:
    """ModelPerf for one evaluated candidate (evaluation: plan.evaluate.Evaluation) on one rank of one of `dp`
    data-parallel replicas: an MoE's routed experts are spread over all TP x DP ranks (estimate/weights.py
    data_parallel_total), each rank holding a 1/(TP x DP) slice of every expert, or whole experts under
    --enable-expert-parallel, whose width per rank stays the TP one (round 44: whole-expert widths scored
    worse)."""
    tp, pp = evaluation.tp, evaluation.pp
    moe_dp = dp if dp > 1 and arch.moe is not None and arch.moe.num_experts else 1
    split = evaluation.weights
    bpw = BYTES_PER_WEIGHT.get(label, 2.0)
    layers_stage = math.ceil(arch.num_hidden_layers / pp)
    expert_params, moe_layers = _expert_params(arch)
    rope = rope_cache_bytes(arch)  # cos/sin rows looked up by position, never read whole
    body_total = max(split.total_bytes - split.embedding_bytes - split.lm_head_bytes
                     - split.per_layer_embedding_bytes - tp * pp * rope, 1)
    # routed experts are up to ~99 % of a large MoE body (Kimi-K2: 1014.7 of 1024.2 GB): no fixed share cap
    expert_total = min(expert_params * bpw, body_total)
    rank_bytes = split.max_rank_bytes
    expert_rank = expert_total / (tp * moe_dp) * layers_stage / max(arch.num_hidden_layers, 1)
    # the input embedding is a gather (a few rows per step), not a full read; a tied one is also the LM head,
    # whose logits GEMM reads all of it every step
    gather = split.embedding_bytes / tp if pp == 1 and split.lm_head_bytes else 0
    gather += split.per_layer_embedding_bytes / tp  # Gemma-3n/4 per-layer embeddings: rows gathered per token
    gather += rope
    # --cpu-offload-gb: what the busiest rank keeps in host memory is read over the host link instead. vLLM
    # offloads whole decoder layers' parameters in order, so the offload holds dense and routed-expert weights in
    # the layers' proportion; the experts are read in place, only those a batch touches
    host_bytes = float(max((b.cpu_offload_bytes for b in evaluation.budgets), default=0))
    host_expert = min(host_bytes * expert_rank / max(rank_bytes - gather, 1.0), expert_rank)
    dense_rank = max(rank_bytes - expert_rank - gather - (host_bytes - host_expert), 1.0)
    expert_rank -= host_expert
    if label == "mxfp4" and arch.moe is not None and arch.moe.num_experts:
        # MXFP4 checkpoints (gpt-oss) quantize only the routed experts; attention and router stay 16-bit
        # (quantization_config.modules_to_not_convert), and the loaded bytes include the experts'
        # repacking, so count parameters from the config's shapes
        router = arch.num_hidden_layers * arch.hidden_size * arch.moe.num_experts
        active_params = (attention_params(arch) + router
                         + expert_params * arch.moe.experts_per_token / arch.moe.num_experts)
    else:
        active_bytes = body_total - expert_total
        if arch.moe is not None and arch.moe.num_experts:
            active_bytes += expert_total * arch.moe.experts_per_token / arch.moe.num_experts
        active_params = active_bytes / bpw
    lm_head_params = (split.lm_head_bytes or split.embedding_bytes) / 2.0  # the LM head (16-bit)
    active_params += lm_head_params
    attn_layers = sum(1 for k in arch.layer_kinds if k in (LayerKind.FULL, LayerKind.SLIDING, LayerKind.CHUNKED,
                                                            LayerKind.MLA))
    q_heads_rank = max(arch.num_attention_heads // tp, 1)
    head = arch.head_dim
    attn_pair = 4.0 * q_heads_rank * head * attn_layers / pp
    mla = arch.mla
    sparse_topk = (mla.index_topk or 0) if mla is not None and mla.index_head_dim else 0
    indexer_pair = 0.0
    if sparse_topk:
        # the indexer scores every context token: index_n_heads x index_head_dim multiply-adds per pair
        # and layer in FP8 (half the BF16 time), replicated on every TP rank (vLLM deepseek_v2.py Indexer)
        indexed = mla.indexer_layer_count(attn_layers)  # type: ignore[union-attr]
        indexer_pair = float((mla.index_n_heads or 64) * mla.index_head_dim * indexed) / pp  # type: ignore[union-attr,operator]
    reads: dict[tuple[str, int, int | None, int], int] = {}
    for group in evaluation.groups:
        for spec in group.specs:
            kind = spec.kind.value
            window = spec.sliding_window if kind == "sliding" else (spec.chunk_size if kind == "chunked" else None)
            if sparse_topk and kind == "mla" and spec.token_bytes != mla.indexer_token_bytes:  # type: ignore[union-attr]
                kind, window = "sliding", sparse_topk  # the latent is read for the top-k tokens only
            key = (kind, int(spec.token_bytes), window, int(spec.state_bytes))
            reads[key] = reads.get(key, 0) + 1
    kv = tuple(KVRead(kind=k, layers=max(1, round(n / pp)), token_bytes=tb, window=w, state_bytes=sb)
               for (k, tb, w, sb), n in reads.items())
    precision, kernel = compute_mode(label, profile)
    return ModelPerf(
        tp=tp, pp=pp, layers=layers_stage, hidden_size=arch.hidden_size,
        dense_bytes=int(dense_rank), expert_bytes=int(expert_rank),
        num_experts=arch.moe.num_experts if arch.moe else 0,
        experts_per_token=arch.moe.experts_per_token if arch.moe else 0,
        active_params=active_params, lm_head_params=lm_head_params, attn_flops_per_pair=attn_pair, kv=kv,
        compute_precision=precision, weight_kernel=kernel, moe_layers=moe_layers,
        expert_width=((arch.moe.moe_intermediate_size or arch.intermediate_size or 0)
                      // (tp if expert_parallel else tp * moe_dp)) if arch.moe else 0,
        shared_experts=arch.moe.num_shared_experts if arch.moe else 0,
        sparse_topk=sparse_topk, indexer_flops_per_pair=indexer_pair,
        weight_format="mxfp4" if label == "mxfp4" else "",
        # one block a layer: two GEMMs each (mamba in/out projections, qkv/o, an MLP's up/down, an MoE's two
        # grouped GEMMs, whose fused kernel's own cost is MOE_LAYER_S), not the four of attention plus an MLP
        gemm_kernels=SINGLE_BLOCK_GEMMS * layers_stage if arch.single_block_layers else 0,
        host_bytes=host_bytes,
        host_expert_bytes=host_expert,
        moe_dp=moe_dp,
    )


def hybrid_kv_pool(evaluation: Any) -> Callable[[float], int] | None:
    """The KV pool, in tokens of context, for requests of a given length, where the cache holds more than one
    kind of layer (sliding-window, chunked-local or mamba layers beside full attention), else None.

    The scheduler simulation spends a request's context from one pool of tokens. With full attention alone that
    pool is the blocks x the block size. With other layer kinds it is what running requests of that length hold
    (estimate/kv.py running_pool_tokens: a decoding request keeps only its window in each sliding group, the
    in-flight pages held back once), not vLLM's start-up charge, which its printed "Maximum concurrency" divides
    by. Checked against the real vLLM CPU build (tests/e2e/test_kv_pool_e2e.py: 9 requests at once where the
    start-up charge holds 3) and on the public runs it changes (round 48: a GB10 serving Gemma-4-31B to Poisson
    traffic on vLLM 0.26 decoded 69 requests at a time, output tokens/s x TPOT, this pool holds 69 in the replay,
    the start-up charge 24; an RTX 5090 ran four 8k-token Gemma-3-27B requests at once where the start-up charge
    holds one)."""
    groups, cap, in_flight = evaluation.groups, evaluation.capacity, evaluation.in_flight_tokens
    if not mixes_layer_kinds(groups) or not cap.num_blocks:
        return None
    num_blocks = int(cap.num_blocks)

    def pool(length: float) -> int:
        tokens = running_pool_tokens(groups, num_blocks, max(round(length), 1), in_flight)
        return tokens if tokens is not None else max(int(cap.tokens), 1)

    return pool


def scheduler_limits(evaluation: Any, settings: Any, *, max_num_seqs: int | None = None,
                     chunked_prefill: bool = True) -> SchedulerLimits:
    cap = evaluation.capacity
    tokens = cap.num_blocks * evaluation.specs.block_size if cap.num_blocks else cap.tokens
    seqs = max_num_seqs or settings.max_num_seqs
    if getattr(evaluation, "mamba_blocks_bound", False) and cap.num_blocks:
        seqs = min(seqs, cap.num_blocks)  # one mamba cache block per decoding sequence (vLLM >= 0.19)
    specs = getattr(evaluation.specs, "specs", ())
    if specs and all(s.kind.value == "mamba" for s in specs) and cap.num_blocks:
        # attention-free (Mamba / Mamba-2): a request holds its state pages whatever its length, so the cache
        # bounds how many run at once, not how many tokens they hold
        seqs = min(seqs, max(cap.num_blocks // max(cap.pages_per_request, 1), 1))
        tokens = max(cap.tokens, seqs * cap.max_model_len)
    return SchedulerLimits(
        max_num_seqs=seqs,
        max_num_batched_tokens=settings.max_num_batched_tokens,
        kv_capacity_tokens=max(int(min(tokens, cap.tokens * 1.05 + 1) if cap.tokens else tokens), 1),
        chunked_prefill=chunked_prefill,
    )


# --------------------------------------------------------------------------- calibration from records


def calibrated_efficiency(base: Efficiency, gpu: GpuPerf, model: ModelPerf, limits: SchedulerLimits,
                          records: Sequence[Any], *, gpu_name: str, precision: str,
                          vllm_version: tuple[int, int, int] | None = None) -> Efficiency:
    """The family-adjusted efficiency, scaled so the model reproduces the measured output tokens/s of
    the records taken on this GPU and precision (median ratio; bandwidth and compute scale together,
    clamped to [0.3, 3])."""
    eff = efficiency_for(base, gpu, model, vllm_version, v0_engine=limits.v0_engine,
                         chunked_prefill=limits.chunked_prefill)
    mine = [r for r in records if r.gpu == gpu_name and r.precision == precision and r.output_tokens_per_s > 0]
    if not mine:
        return eff
    ratios = []
    for rec in mine[-8:]:
        wl = Workload(rec.input_len, rec.output_len, concurrency=rec.concurrency, request_rate=rec.request_rate,
                      num_requests=max(rec.completed, 1))
        # a record of N data-parallel engines measured the fleet: predicted as N engines sharing its traffic
        pred = predict_replicas(lambda w, share: predict(model, gpu, eff, limits, w, steady=False,
                                                         efficiency_is_final=True, frontend_share=share),
                                wl, rec.dp, api_servers=rec.dp)
        if pred.output_tokens_per_s > 0:
            ratios.append(rec.output_tokens_per_s / pred.output_tokens_per_s)
    if not ratios:
        return eff
    ratios.sort()
    k = min(max(ratios[len(ratios) // 2], 0.3), 3.0)
    return replace(
        eff,
        bandwidth=min(eff.bandwidth * k, 0.98),
        compute=min(eff.compute * k, 0.98),
        attention_compute=min((eff.attention_compute or eff.compute) * k, 0.98),
        step_overhead_s=eff.step_overhead_s / k,
        per_seq_overhead_s=eff.per_seq_overhead_s / k,
        source="calibrated",
        note=f"scaled x{k:.2f} from {len(ratios)} measured run(s) on {gpu_name} {precision}",
    )


# --------------------------------------------------------------------------- result section


class LatencyInfo(BaseModel):
    mean: float
    p50: float
    p99: float


class PerformanceInfo(BaseModel):
    """`data.performance` of `vllmkit plan --json` with a workload."""

    source: str  # estimated | calibrated | measured
    workload: dict[str, Any]
    output_tokens_per_s: float
    total_tokens_per_s: float
    requests_per_s: float
    ttft_ms: LatencyInfo
    tpot_ms: LatencyInfo
    itl_ms: float
    e2e_latency_s: LatencyInfo
    batch: float
    kv_usage: float
    peak_kv_usage: float
    bound: str
    preemption_risk: str
    tpot_floor_ms: float
    # requests of the workload's length (prompt + output) the KV cache holds at once while they run (0: unknown)
    kv_requests: int = 0
    assumptions: list[str] = Field(default_factory=list)
    # a request rate above what the replica completes: the queue and TTFT grow while the traffic lasts
    overloaded: bool = False


def _lat(stat: Any) -> LatencyInfo:
    def r(x: float) -> float:
        return round(x, 3) if x == x else 0.0
    return LatencyInfo(mean=r(stat.mean), p50=r(stat.p50), p99=r(stat.p99))


def workload_dict(wl: Workload) -> dict[str, Any]:
    return {"name": wl.name, "input_len": wl.input_len, "output_len": wl.output_len,
            "concurrency": wl.concurrency, "request_rate": wl.request_rate, "dataset": wl.dataset,
            "shared_prefix_len": wl.shared_prefix, "spec_acceptance": wl.spec_acceptance}


def requests_held(limits: SchedulerLimits, wl: Workload) -> int:
    """Requests of the workload's length (prompt + output) that the KV pool of `limits` holds at once."""
    return int(limits.kv_capacity_tokens // max(round(wl.input_len + wl.output_len), 1))


def performance_info(pred: ServingPrediction, wl: Workload, model: ModelPerf, gpu: GpuPerf,
                     limits: SchedulerLimits) -> PerformanceInfo:
    eff = pred.efficiency
    return PerformanceInfo(
        source=eff.source,
        workload=workload_dict(wl),
        output_tokens_per_s=round(pred.output_tokens_per_s, 1),
        total_tokens_per_s=round(pred.total_tokens_per_s, 1),
        requests_per_s=round(pred.requests_per_s, 3),
        ttft_ms=_lat(pred.ttft_ms),
        tpot_ms=_lat(pred.tpot_ms),
        itl_ms=round(pred.itl_ms, 3) if pred.itl_ms == pred.itl_ms else 0.0,
        e2e_latency_s=_lat(pred.e2e_s),
        batch=round(pred.batch, 2),
        kv_usage=round(pred.kv_usage, 4),
        peak_kv_usage=round(pred.peak_kv_usage, 4),
        bound=pred.bound,
        preemption_risk=pred.preemption_risk,
        tpot_floor_ms=round(decode_floor_seconds(model, gpu) * 1000, 3),
        kv_requests=requests_held(limits, wl),
        overloaded=overloaded(pred, wl.request_rate) and not wl.concurrency,
        assumptions=[
            f"achievable bandwidth {eff.bandwidth:.0%} and compute {eff.compute:.0%} of the datasheet peaks "
            f"({eff.source}{': ' + eff.note if eff.note else ''})",
            f"step overhead {eff.step_overhead_s * 1e3:.2f} ms + {eff.per_seq_overhead_s * 1e6:.0f} us per sequence",
            f"{pred.num_requests} requests simulated through vLLM's scheduler ("
            + ("chunked prefill" if limits.mixed_batches else
               "the old engine without chunked prefill: waiting prompts run first, in steps of their own, decodes paused")
            + ", recompute preemption); steady-state throughput over the middle of the run"
            + (f"; latencies of the requests sent {pred.window_s[0]:,.0f}-{pred.window_s[1]:,.0f} s into it (sustained "
               "traffic: after the engine filled, before it drained)" if pred.window_s else ""),
            (f"the first {wl.shared_prefix:,} prompt tokens are shared: computed once, then prefix-cache hits "
             "(full 16-token blocks)" if wl.shared_prefix else "no prefix-cache hits")
            + ", no speculative decoding; MoE routing assumed uniform",
        ] + ([(f"MXFP4 MoE on a GPU without FP4 units: the routed experts' weights stream at "
               f"{expert_stream(model, eff):.0%} of the dense weight rate (unpacked inside the GEMM; chosen on public "
               "MI300X runs)") if model.weight_format == "mxfp4" else
              (f"FP8 MoE: the routed experts' weights stream at {expert_stream(model, eff):.0%} of the dense weight "
               "rate (vLLM's FP8 fused-MoE kernels; fitted on public runs)")] if expert_stream(model, eff) < 1.0 else [])
        + ([("async scheduling (vLLM's default from 0.14)" if (eff.host_overlap or ASYNC_HOST_SHARE) == ASYNC_HOST_SHARE
              else "async scheduling (--async-scheduling, opt-in before 0.14)")
            + ": the next step is scheduled while one runs, so a request that arrives meanwhile starts a step later, "
            f"and the host's per-step work ({eff.host_overlap or ASYNC_HOST_SHARE:.0%} of the fixed step cost and the "
            "per-sequence cost) overlaps the GPU's"] if limits.async_scheduling else [])
        + ([f"ROCm: each kernel's fixed cost in a step is {eff.gemm_kernel_s / GEMM_KERNEL_S:.1f}x CUDA's (HIP graphs; "
            "chosen on public ROCm runs at a few clients)"] if eff.gemm_kernel_s > GEMM_KERNEL_S else [])
        + ([f"the old engine on ROCm: a prompt chunk after the first attends to the cached ones in the Triton "
            f"prefix-prefill kernel, at {eff.prefill_attention:.0%} of the GEMM rate (chosen on public MI300X runs)"]
           if eff.prefill_attention < 1.0 else [])
        + ([f"pipeline parallel {model.pp}: one batch passes the stages in turn (async scheduling on Model Runner "
            "V1 puts every running request in every batch, which waits for the previous one's tokens)" if model.pp_serial
            else f"pipeline parallel {model.pp}: up to {model.pp} micro-batches in flight (vLLM's batch queue), each "
            "stage working on one while a token passes every stage"] if model.pp > 1 else [])
        + ([f"--enforce-eager: {eff.eager_dispatch_s * 1e3:.2f} ms of host kernel dispatch per decoder layer, "
              "overlapping the GPU's work (sqrt(gpu^2 + dispatch^2) a layer)"] if eff.eager_dispatch_s > 0 else [])
        + ([f"CUDA graphs cover steps of up to {eff.graph_max_tokens} tokens (vLLM's default capture sizes); a "
            f"larger step pays {eff.graphless_dispatch_s * 1e3:.2f} ms of host dispatch per decoder layer, as "
            "under --enforce-eager"] if eff.graph_max_tokens and max(pred.max_batch, wl.input_len) > eff.graph_max_tokens else [])
        + ([f"MXFP4 MoE without FP4 tensor units ({gpu.name}): the experts' 4-bit weights are unpacked to BF16 "
            f"inside triton matmul_ogs, computing at {eff.mxfp4_upcast_compute:.0%} of a dense BF16 GEMM's rate "
            "(fitted on public H100 gpt-oss runs)"] if mxfp4_upcast(model) and eff.mxfp4_upcast_compute < 1.0 else [])
        + ([f"FP8 GEMMs on ROCm ({gpu.name}): {ROCM_FP8_COMPUTE_FACTOR:.0%} of the compute rate an H200's FP8 GEMMs "
            "reach relative to their peak (chosen on public MI300X / MI355X / R9700 FP8 runs, leave-one-publisher-out)"]
           if rocm_fp8_gemms(gpu, model, v0=limits.v0_engine) else [])
        + ([f"4-bit weights on ROCm: vLLM has no Marlin kernels there (awq_marlin / gptq_marlin fall back to its AWQ "
            f"Triton and GPTQ kernels), so the weights stream at {eff.weight_stream:.0%} of the dense rate (chosen on "
            "public R9700 and MI100 GPTQ / AWQ runs, leave-one-publisher-out); the compute rate is CUDA Marlin's"]
           if rocm_w4a16_weights(gpu, model) and eff.weight_stream < 1.0 else [])
        + ([f"{gpu.name}: the profile has no datasheet peaks; assumed {gpu.bandwidth_bytes_s / 1e9:.0f} GB/s and "
              f"{max(gpu.tflops.values()):g} TFLOPS (a rough placeholder, not fitted)"] if gpu.vendor == "cpu" else []),
    )


def measured_info(rec: Any, wl: Workload, model: ModelPerf, gpu: GpuPerf, limits: SchedulerLimits) -> PerformanceInfo:
    """The measured numbers of a `vllmkit bench` record at this exact point."""
    def lat(s: Any, scale: float = 1.0) -> LatencyInfo:
        return LatencyInfo(mean=(s.mean or 0.0) * scale, p50=(s.p50 or 0.0) * scale, p99=(s.p99 or 0.0) * scale)
    return PerformanceInfo(
        source="measured",
        workload=workload_dict(wl),
        output_tokens_per_s=rec.output_tokens_per_s,
        total_tokens_per_s=rec.total_tokens_per_s,
        requests_per_s=rec.requests_per_s,
        ttft_ms=lat(rec.ttft_ms), tpot_ms=lat(rec.tpot_ms), itl_ms=rec.itl_ms.mean or 0.0,
        e2e_latency_s=lat(rec.e2e_s),
        batch=float(rec.max_running or 0), kv_usage=float(rec.peak_kv_usage or 0.0),
        peak_kv_usage=float(rec.peak_kv_usage or 0.0), bound="measured",
        preemption_risk="high" if rec.preemptions else "low",
        tpot_floor_ms=round(decode_floor_seconds(model, gpu) * 1000, 3),
        kv_requests=requests_held(limits, wl),
        assumptions=[f"measured by vllmkit bench ({rec.source or rec.record_id}) at {rec.recorded_at}"],
    )


# A replica that completes fewer requests than this share of the offered rate is overloaded: its queue
# (and the TTFT) grows for as long as the traffic lasts
OVERLOAD_SERVED_SHARE = 0.9


# a p99 TTFT above this is a queue growing for as long as the traffic lasts, not a steady state
RUNAWAY_TTFT_S = 30.0


def overloaded(pred: ServingPrediction, rate: float | None) -> bool:
    """The replica completes less than the offered rate: judged once the run has lasted two request
    lifetimes (before that completions lag arrivals in any run), or at once when the queue runs away."""
    if not rate or math.isinf(rate):
        return False
    if pred.ttft_ms.p99 > RUNAWAY_TTFT_S * 1000:
        return True
    span = pred.num_requests / rate
    return span >= 2.0 * pred.e2e_s.mean and pred.requests_per_s < OVERLOAD_SERVED_SHARE * rate


# Sustained traffic, not a short run: a replica at R req/s holds R x (request lifetime) requests once
# full, and fills only about one lifetime after the traffic starts. A run whose arrivals span less than a
# few lifetimes measures the filling engine: DeepSeek-R1 on 8 x MI300X, 2048 / 512 tokens at 5 req/s,
# requests live ~60 s; 20 s of arrivals gave p99 TPOT 68 ms where the sustained p99 was 122 ms (before round 42's
# ROCm FP8 rate, which puts that replica's limit below 5 req/s; tests/unit/plan/test_capacity.py now uses 4). So the
# latencies of sustained traffic are taken over the requests sent after SUSTAINED_WARM_LIFETIMES lifetimes
# (the mean e2e latency) and before the last SUSTAINED_DRAIN_LIFETIMES (whose end sees the engine empty
# out), in a window of at least SUSTAINED_WINDOW_LIFETIMES lifetimes and SUSTAINED_MIN_WINDOW requests.
SUSTAINED_WARM_LIFETIMES = 2.0
SUSTAINED_DRAIN_LIFETIMES = 1.0
SUSTAINED_WINDOW_LIFETIMES = 2.0
SUSTAINED_MIN_WINDOW = 100
SUSTAINED_MAX_REQUESTS = 5000


@dataclass
class CandidatePerf:
    """Everything needed to predict one candidate under any workload."""

    model: ModelPerf
    gpu: GpuPerf
    limits: SchedulerLimits
    efficiency: Efficiency  # final (family / calibration applied)
    precision: str
    gpus: int
    graph_top: int = 0  # the largest graph capture size before the 2 x max_num_seqs cap (0: none)
    # the KV pool in tokens for requests of a given length where the cache mixes layer kinds (hybrid_kv_pool);
    # None: limits.kv_capacity_tokens whatever the length
    kv_pool: Callable[[float], int] | None = None
    # --data-parallel-size: engines behind the one endpoint, each with `gpus` GPUs and its share of the traffic
    # (estimate/serving.py predict_replicas), and the API server processes in front of them
    replicas: int = 1
    api_servers: int = 1
    expert_parallel: bool = False  # --enable-expert-parallel (whole experts per rank)

    def kv_capacity_tokens(self, request_tokens: float) -> int:
        """The scheduler's KV pool for requests of `request_tokens` tokens of context (prompt + output)."""
        return self.kv_pool(request_tokens) if self.kv_pool is not None else self.limits.kv_capacity_tokens

    def limits_for(self, wl: Workload) -> SchedulerLimits:
        """The scheduler's limits for this workload: the KV pool at its requests' length (kv_capacity_tokens)."""
        if self.kv_pool is None:
            return self.limits
        return replace(self.limits, kv_capacity_tokens=self.kv_capacity_tokens(wl.input_len + wl.output_len))

    def predict_sustained(self, wl: Workload, *, max_num_seqs: int | None = None,
                          settled: Callable[[ServingPrediction], bool] | None = None,
                          min_window_requests: int = SUSTAINED_MIN_WINDOW) -> ServingPrediction:
        """`predict` for Poisson traffic that goes on: TTFT, TPOT and e2e latency of the requests in a
        steady-state window (see SUSTAINED_*), the run lengthened as far as that needs (up to
        SUSTAINED_MAX_REQUESTS) unless `settled(prediction)` says a longer run cannot change what the
        caller decides. A closed loop or a burst is predicted as it is. Data-parallel replicas: each engine's
        share of the traffic (predict_replicas)."""
        if self.replicas > 1:
            return predict_replicas(
                lambda w, share: replace(self, replicas=1, api_servers=1)._sustained(
                    w, max_num_seqs=max_num_seqs, settled=settled, min_window_requests=min_window_requests,
                    frontend_share=share),
                wl, self.replicas, api_servers=self.api_servers)
        return self._sustained(wl, max_num_seqs=max_num_seqs, settled=settled, min_window_requests=min_window_requests)

    def _sustained(self, wl: Workload, *, max_num_seqs: int | None, settled: Callable[[ServingPrediction], bool] | None,
                   min_window_requests: int, frontend_share: float = 1.0) -> ServingPrediction:
        rate = wl.request_rate
        if not rate or math.isinf(rate) or wl.concurrency:
            return self._predict_one(wl, max_num_seqs=max_num_seqs, frontend_share=frontend_share)
        n = default_num_requests(wl)
        pred = self._predict_one(replace(wl, num_requests=n), max_num_seqs=max_num_seqs, frontend_share=frontend_share)
        for attempt in range(4):
            e2e = pred.e2e_s.mean
            life = max(e2e, 1e-3) if e2e == e2e else math.inf
            window = max(SUSTAINED_WINDOW_LIFETIMES * life, min_window_requests / rate)
            need = rate * ((SUSTAINED_WARM_LIFETIMES + SUSTAINED_DRAIN_LIFETIMES) * life + window)
            if need <= n:
                t0 = SUSTAINED_WARM_LIFETIMES * life
                t1 = (n - 1) / rate - SUSTAINED_DRAIN_LIFETIMES * life
                ttft, tpot, lat = pred.sim.latencies_of_arrivals(t0, t1)
                if len(ttft) < min_window_requests // 2:
                    return pred
                return replace(pred, ttft_ms=Stat.of(ttft, 1000.0), tpot_ms=Stat.of(tpot, 1000.0) if tpot else pred.tpot_ms,
                               e2e_s=Stat.of(lat) if lat else pred.e2e_s, window_s=(t0, t1))
            if rate * life < 1.0:
                return pred  # requests rarely overlap: every one meets an idle engine, the run is steady as it is
            if (attempt == 3 or n >= SUSTAINED_MAX_REQUESTS or overloaded(pred, rate)
                    or (settled is not None and settled(pred))):
                return pred  # an overloaded replica has no steady state: its queue grows while traffic lasts
            n = int(min(max(math.ceil(need), n * 1.5), SUSTAINED_MAX_REQUESTS))
            pred = self._predict_one(replace(wl, num_requests=n), max_num_seqs=max_num_seqs,
                                     frontend_share=frontend_share)
        return pred

    def predict(self, wl: Workload, *, max_num_seqs: int | None = None, steady: bool = True) -> ServingPrediction:
        if self.replicas > 1:
            return predict_replicas(lambda w, share: self._predict_one(w, max_num_seqs=max_num_seqs, steady=steady,
                                                                       frontend_share=share),
                                    wl, self.replicas, api_servers=self.api_servers)
        return self._predict_one(wl, max_num_seqs=max_num_seqs, steady=steady)

    def _predict_one(self, wl: Workload, *, max_num_seqs: int | None = None, steady: bool = True,
                     frontend_share: float = 1.0) -> ServingPrediction:
        limits = self.limits_for(wl)
        if max_num_seqs is not None:
            limits = replace(limits, max_num_seqs=max_num_seqs)
        eff = self.efficiency
        if max_num_seqs is not None and eff.graph_max_tokens and self.graph_top:
            eff = replace(eff, graph_max_tokens=max(min(2 * max_num_seqs, self.graph_top), 1))
        return predict(self.model, self.gpu, eff, limits, wl, steady=steady, efficiency_is_final=True,
                       frontend_share=frontend_share)


# Model Runner V2 keeps pipeline micro-batches under async scheduling from 0.23: its AsyncScheduler spaces a request's
# decodes pp steps apart (`next_decode_eligible_step`, in the 0.23.0, 0.24.0, 0.26.0 and 0.27.1 wheels; not in
# 0.22.0's, where MRV2 -- Qwen3 dense by default -- rescheduled a request in flight like V1, ModelPerf.pp_serial)
MRV2_PP_MICROBATCHES = (0, 23, 0)


def async_scheduling_conflict(version: tuple[int, int, int], *, pp: int, speculative: dict | None, mrv2: bool,
                              explicit: bool) -> str | None:
    """What keeps vLLM from running async scheduling with this configuration (None: nothing). `explicit`: the
    flag was given, and vLLM refuses to start on a conflict; else its default turns async off with a warning.
    Read in vllm/config/vllm.py (engine/arg_utils.py before 0.12) of the 0.10.0 - 0.17 and 0.32 - 0.34 wheels:
    pipeline parallelism conflicts through 0.14, not from 0.15; on 0.32 - 0.33 again on the V1 model runner (its
    default turns async off there; 0.33 also refuses the flag); speculative decoding conflicts before 0.12, then
    every method but EAGLE / MTP, from 0.16 not a draft model, from 0.32 not n-gram on the GPU, DSpark or DFlash,
    on 0.33 only on the V1 model runner, on 0.34 never. 0.18 - 0.31 are taken as 0.17 (not re-read)."""
    if speculative:
        method = str(speculative.get("method") or "").lower()
        ok = version >= (0, 12, 0) and (method in EAGLE_METHODS or is_mtp(method))
        ok = ok or (version >= (0, 16, 0) and method == "draft_model")
        ok = ok or (version >= (0, 32, 0) and method in ("ngram_gpu", "dspark", "dflash"))
        ok = ok or version >= (0, 34, 0) or (version >= (0, 33, 0) and mrv2)
        if not ok:
            return ("speculative decoding (none before 0.12)" if version < (0, 12, 0)
                    else f"{method or 'this'}-based speculative decoding")
    if pp > 1:
        if version < (0, 15, 0):
            return "pipeline parallelism"
        if (0, 32, 0) <= version < (0, 34, 0) and not mrv2 and (not explicit or version >= (0, 33, 0)):
            return "pipeline parallelism on the V1 model runner"
    return None


def async_scheduling_runs(settings: Any, vendor: str, pp: int, vllm_version: str | None) -> bool:
    """Whether the planned server runs async scheduling: as --async-scheduling / --no-async-scheduling say
    (EngineSettings.async_scheduling), else the release's default (VersionRules.async_scheduling) unless the
    configuration conflicts with it (async_scheduling_conflict). The CPU build keeps the synchronous loop
    (evaluate.in_flight_tokens)."""
    if vendor == "cpu":
        return False
    asked = getattr(settings, "async_scheduling", None)
    if asked is not None:
        return asked
    if vllm_version is None or not rules_for(vllm_version).async_scheduling:
        return False
    return async_scheduling_conflict(parse_version(vllm_version), pp=pp, speculative=getattr(settings, "speculative", None),
                                     mrv2=bool(getattr(settings, "model_runner_v2", False)), explicit=False) is None


def candidate_perf(arch: ModelArch, evaluation: Any, settings: Any, label: str, profile: Any,
                   records: Sequence[Any] = (), base: Efficiency = FITTED_EFFICIENCY,
                   vllm_version: str | None = None) -> CandidatePerf:
    dp = max(int(getattr(settings, "data_parallel_size", 1) or 1), 1)
    model = model_perf(arch, evaluation, label, profile, dp=dp,
                       expert_parallel=bool(getattr(settings, "expert_parallel", False)))
    spec = getattr(settings, "speculative", None)
    if spec:
        model = replace(model, **speculative_drafter(spec, evaluation, getattr(settings, "speculative_draft", None)))
    gpu = gpu_perf(profile)
    version = parse_version(vllm_version) if vllm_version else None
    lag = async_scheduling_runs(settings, gpu.vendor, evaluation.pp, vllm_version)
    if lag and evaluation.pp > 1 and not (getattr(settings, "model_runner_v2", False)
                                          and version is not None and version >= MRV2_PP_MICROBATCHES):
        model = replace(model, pp_serial=True)  # estimate/perf.py pipeline_microbatches
    chunked = bool(getattr(settings, "chunked_prefill", True))
    early = lag and version is not None and version < (0, 14, 0)  # the opt-in loop (estimate/perf.py)
    limits = replace(scheduler_limits(evaluation, settings, chunked_prefill=chunked),
                     prefix_caching=bool(settings.prefix_caching), async_scheduling=lag,
                     async_host_share=EARLY_ASYNC_HOST_SHARE if early else 0.0,
                     v0_engine=bool(getattr(settings, "v0_engine", False)),
                     mixed_batches=chunked or not getattr(settings, "v0_engine", False))
    eff = calibrated_efficiency(base, gpu, model, limits, records, gpu_name=profile.name, precision=label,
                                vllm_version=version)
    if getattr(settings, "enforce_eager", False) and eff.source != "calibrated":
        eff = with_eager(eff, model)  # a calibration measured on this engine already includes it
    graph_top = 0
    if not getattr(settings, "enforce_eager", False) and eff.source != "calibrated" and gpu.vendor != "cpu":
        sm100 = str(getattr(profile, "architecture", "")).startswith("sm_10")
        graph_top = max_graph_tokens(1 << 30, limits.max_num_batched_tokens, sm100=sm100, vllm_version=version)
        eff = with_graph_limit(eff, model, max_graph_tokens(limits.max_num_seqs, limits.max_num_batched_tokens,
                                                            sm100=sm100, vllm_version=version))
    api_servers = dp if version is None or version >= DP_API_SERVER_PER_ENGINE else 1
    return CandidatePerf(model, gpu, limits, eff, label, evaluation.tp * evaluation.pp, graph_top,
                         kv_pool=hybrid_kv_pool(evaluation), replicas=dp, api_servers=api_servers,
                         expert_parallel=bool(getattr(settings, "expert_parallel", False)))


__all__ = ["FITTED_EFFICIENCY", "CandidatePerf", "PerformanceInfo", "candidate_perf", "gpu_perf",
           "measured_info", "model_perf", "performance_info", "scheduler_limits"]


# --------------------------------------------------------------------------- request length


def request_tokens(input_len: float, output_len: float) -> int:
    """Context one request of the workload occupies (prompt + generated tokens)."""
    return math.ceil(input_len + output_len)


def check_request_length(need: int, native: int, user_len: int | None) -> None:
    """A workload whose requests exceed the context cannot be served as asked: vLLM answers HTTP 400
    to a prompt longer than max_model_len and rejects (older releases) or truncates (0.32
    entrypoints/serve/utils/api_utils.py get_max_tokens) the output of one that ends past it."""
    limit = user_len or native
    if need <= limit:
        return
    where = f"--max-model-len {user_len:,}" if user_len else f"the model's context ({native:,})"
    hint = (f"raise --max-model-len to {need} (native {native:,}) or shorten the requests" if user_len and need <= native
            else "shorten --input-len / --output-len (a RoPE-scaled context needs --max-model-len and "
                 "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1)")
    raise UsageError(f"requests of {need:,} tokens (input + output) are longer than {where}: vLLM rejects or cuts "
                     "them short", hint)


# --------------------------------------------------------------------------- plan hook


@dataclass
class PerfOptions:
    """What `build_plan` needs for the performance section: the workload (None: only collect the
    candidates, as `capacity` does), the measured records (`vllmkit bench`) with the store's matcher
    (`calibration.perfstore.match_measured`: handed in, the planner reads no stores), and whether to
    keep every fitting candidate's CandidatePerf on the result (private, for `capacity`)."""

    workload: Workload | None = None
    records: Sequence[Any] = ()
    match: Callable[..., Any] | None = None
    collect: bool = False
    alternatives: bool = True  # tokens/s for every listed fitting alternative too
    min_context: int = 0  # tokens one request takes when only candidates are collected (capacity)


# requests simulated for the alternatives' tokens/s column (cheaper than the chosen one's run)
_ALT_REQUESTS = 60


def synchronous_pipeline_note(cand: Any, ev: Any, profile: Any, opts: PerfOptions, vllm_version: str | None,
                              wl: Workload, pred: ServingPrediction) -> str:
    """What --no-async-scheduling would give a pipeline-parallel plan that async scheduling runs serially
    (ModelPerf.pp_serial): without it vLLM schedules a request only once its last step is back, so the batch
    queue fills with micro-batches of different requests (the rule of V0 and of V1 before async scheduling),
    and the host's per-step work no longer overlaps the GPU's."""
    sync = candidate_perf(cand.variant.arch, ev, replace(cand.settings, async_scheduling=False), cand.variant.label,
                          profile, opts.records, vllm_version=vllm_version)
    other = sync.predict_sustained(wl)
    return (f"with --no-async-scheduling vLLM would keep up to {ev.pp} micro-batches in flight: about "
            f"{other.output_tokens_per_s:,.0f} output tokens/s and {other.tpot_ms.mean:,.1f} ms TPOT for this "
            f"workload, against {pred.output_tokens_per_s:,.0f} and {pred.tpot_ms.mean:,.1f} ms as planned")


def speculative_drafter(spec: dict, evaluation: Any, draft: Any) -> dict[str, Any]:
    """ModelPerf's drafting fields for a --speculative-config: k draft tokens a step, the drafter's weights on a rank
    (the plan's `speculative` memory term, on the last pipeline stage) and its decoder layers (an EAGLE head or an MTP
    layer: one; a draft model: its own; n-gram: none)."""
    k = draft_token_count(spec)
    per_rank = max((float(b.extra["speculative"].bytes) for b in evaluation.budgets if "speculative" in b.extra),
                   default=0.0)
    method = str(spec.get("method") or "draft_model").lower()
    layers = 1
    if draft is not None and method not in EAGLE_METHODS and not is_mtp(method):
        layers = int(getattr(draft[1], "num_hidden_layers", 1) or 1)
    return {"spec_tokens": k, "draft_bytes": per_rank, "draft_layers": layers}


def speculative_note(spec: dict, model: ModelPerf, wl: Workload) -> str:
    """The performance section's line for --speculative-config: modelled at the acceptance rate the workload gives
    (--spec-acceptance), else not modelled, and what it changes."""
    method = str(spec.get("method") or "draft model")
    k = spec.get("num_speculative_tokens")
    drafts = f"{k} draft tokens" if k else "its draft tokens"
    if wl.spec_acceptance is not None and model.spec_tokens:
        per_step = 1 + model.spec_tokens * wl.spec_acceptance
        drafter = (f"the drafter reads {model.draft_bytes / 1e9:,.2f} GB a rank per draft pass" if model.draft_bytes
                   else "n-gram drafts come from the prompt on the CPU")
        ngram = ("; n-gram proposals draft only where the text repeats itself and vLLM's rate counts the drafted tokens "
                 "alone, so for them give the accepted tokens over k x all decode steps"
                 ) if method.lower() in NO_WEIGHT_METHODS else ""
        return (f"speculative decoding ({method}, {drafts} a step) at a {wl.spec_acceptance:.0%} acceptance rate "
                f"(--spec-acceptance): each decode step verifies {model.spec_tokens + 1} tokens a request and emits "
                f"{per_step:.2f} on average; {drafter}; the acceptance rate depends on the text (vLLM logs it as 'Avg "
                f"Draft acceptance rate'), so measure it with `vllmkit bench` on your prompts{ngram}")
    return (f"speculative decoding ({method}, {drafts} a step) is not modelled: these are the numbers of the server "
            "without it (its memory is in the plan). With it each decode step verifies 1 + k tokens a request and emits "
            "1 + k x the acceptance rate, which depends on the text (vLLM logs it as 'Avg Draft acceptance rate'; "
            "random prompts accept few): give it with --spec-acceptance, or measure it with `vllmkit bench`")


def data_parallel_versus_tp(dp_alt: Any, dp_perf: CandidatePerf, alternatives: Sequence[Any],
                            perfs: dict[int, CandidatePerf], wl: Workload) -> str:
    """For the workload, the --data-parallel-size option against the alternative of the same precision that spreads one
    engine over as many GPUs (tensor / pipeline parallel), when the plan lists one: both simulated at the workload's
    full size (the alternatives' column comes from shorter runs), and which gives more output tokens/s."""
    gpus = dp_alt.tensor_parallel_size * dp_alt.pipeline_parallel_size * dp_alt.data_parallel_size
    wide = [a for a in alternatives if a.data_parallel_size == 1 and a.fits and id(a) in perfs
            and a.precision == dp_alt.precision and a.tensor_parallel_size * a.pipeline_parallel_size == gpus]
    if not wide:
        return ""
    best = max(wide, key=lambda a: a.output_tokens_per_s or 0.0)
    dp_pred, wide_pred = dp_perf.predict_sustained(wl), perfs[id(best)].predict_sustained(wl)
    dp_tps, wide_tps = dp_pred.output_tokens_per_s, wide_pred.output_tokens_per_s
    shape = f"TP={best.tensor_parallel_size}" + (f" PP={best.pipeline_parallel_size}" if best.pipeline_parallel_size > 1 else "")
    rate = wl.request_rate if wl.request_rate and not math.isinf(wl.request_rate) and not wl.concurrency else None
    if rate and not overloaded(dp_pred, rate) and not overloaded(wide_pred, rate):
        # both keep up with the offered rate: the same tokens/s, so the latencies decide
        dp_faster = dp_pred.tpot_ms.mean <= wide_pred.tpot_ms.mean
        return (f"for this workload ({wl.input_len:g} in / {wl.output_len:g} out, {rate:g} req/s) both keep up: "
                f"--data-parallel-size {dp_alt.data_parallel_size} at about {dp_pred.tpot_ms.mean:,.1f} ms TPOT and "
                f"{dp_pred.ttft_ms.mean:,.0f} ms TTFT, {shape} at {wide_pred.tpot_ms.mean:,.1f} ms and "
                f"{wide_pred.ttft_ms.mean:,.0f} ms: {'data parallel' if dp_faster else shape} answers faster"
                + ("" if dp_faster else " (one wider engine splits every step's weight reads; each data-parallel "
                   "engine reads all of its own)"))
    load = (f"{wl.concurrency} clients" if wl.concurrency else f"{rate:g} req/s" if rate else "a burst")
    dp_wins = dp_tps >= wide_tps
    why = ("independent engines: no all-reduces, and each engine's batch is large enough to use its GPU" if dp_wins
           else "each data-parallel engine reads all its weights every step for a smaller batch")
    return (f"for this workload ({wl.input_len:g} in / {wl.output_len:g} out, {load}): --data-parallel-size "
            f"{dp_alt.data_parallel_size} about {dp_tps:,.0f} output tokens/s, {shape} about {wide_tps:,.0f}: "
            f"{'data parallel' if dp_wins else shape} gives more ({why})")


def data_parallel_note(cp: CandidatePerf) -> str:
    """The performance section's line for --data-parallel-size."""
    d, m = cp.replicas, cp.model
    note = (f"--data-parallel-size {d}: the traffic is split over {d} engines of {cp.gpus} GPU{'s' if cp.gpus > 1 else ''} "
            "each (vLLM's front end sends a request to the engine with the fewest waiting and running ones); tokens/s "
            "and requests/s are the fleet's, latencies the requests', batch and KV usage one engine's")
    if m.moe_dp > 1:
        note += (f"; the MoE layers run over all {d * m.tp} ranks: each holds 1/{d * m.tp} of the routed experts "
                 f"({'whole experts: --enable-expert-parallel' if cp.expert_parallel else 'a slice of every expert'}), "
                 "the engines step together and every MoE layer gathers the other engines' tokens and sends their "
                 "outputs back")
    if cp.api_servers < d:
        note += f"; one API server feeds all {d} engines (vLLM before 0.15), its per-request work shared by them"
    return note


def attach_performance(result: Any, chosen: Any, candidates: Sequence[Any], profile: Any, rules: Any,
                       opts: PerfOptions, tp_given: int | None = None) -> None:
    """Fill result.performance (chosen candidate) and the alternatives' tokens/s; keep the candidates'
    CandidatePerf when opts.collect. `chosen` / `candidates` are plan.candidates.Candidate objects;
    result.alternatives lists the candidates that are `listed` (or chosen), in order."""
    from vllmkit.plan.result import alternative, more_gpus_hint

    wl = opts.workload
    listed = iter(result.alternatives)
    kept: list[tuple[Any, CandidatePerf]] = []
    perfs: dict[int, CandidatePerf] = {}  # by id() of the listed alternative
    for cand in candidates:
        alt = next(listed) if (cand.listed or cand is chosen) else None
        ev = cand.evaluation
        if not ev.fits:
            continue
        cp = candidate_perf(cand.variant.arch, ev, cand.settings, cand.variant.label, profile, opts.records,
                            vllm_version=rules.version)
        if opts.collect and cand.allowed:
            kept.append((alt if alt is not None else alternative(cand, chosen), cp))
        if wl is None or alt is None:
            continue
        perfs[id(alt)] = cp
        if cand is chosen:
            need = request_tokens(wl.input_len, wl.output_len)
            if need > ev.max_model_len:  # memory, not the flags, shortened the context below one request
                raise DoesNotFitError(
                    f"{result.model.id}: this plan's KV cache holds a context of {ev.max_model_len:,} tokens, "
                    f"shorter than one request of the workload ({need:,})",
                    more_gpus_hint(["--kv-cache-dtype fp8"], ev.tp * ev.pp,
                                   quantized=result.model.quantization is not None, tp_given=tp_given))
            rec = opts.match(
                opts.records, gpu=profile.name, model=cand.variant.meta.id, precision=cand.variant.label,
                tp=ev.tp, pp=ev.pp, vllm_version=rules.version, input_len=wl.input_len, output_len=wl.output_len,
                concurrency=wl.concurrency, request_rate=wl.request_rate, dp=cp.replicas,
            ) if (opts.match is not None and opts.records) else None
            if rec is not None:
                result.performance = measured_info(rec, wl, cp.model, cp.gpu, cp.limits_for(wl))
                alt.output_tokens_per_s = round(rec.output_tokens_per_s, 1)
                continue
            pred = cp.predict_sustained(wl)
            result.performance = performance_info(pred, wl, cp.model, cp.gpu, cp.limits_for(wl))
            alt.output_tokens_per_s = result.performance.output_tokens_per_s
            if cp.replicas > 1:
                result.performance.assumptions.append(data_parallel_note(cp))
            spec = getattr(cand.settings, "speculative", None)
            if spec:
                result.performance.assumptions = [
                    a.replace(", no speculative decoding;", ";") for a in result.performance.assumptions]
                result.performance.assumptions.append(speculative_note(spec, cp.model, wl))
            if cp.model.pp_serial:
                result.performance.assumptions.append(
                    synchronous_pipeline_note(cand, ev, profile, opts, rules.version, wl, pred))
        elif opts.alternatives:
            small = replace(wl, num_requests=min(wl.num_requests or _ALT_REQUESTS, _ALT_REQUESTS))
            alt.output_tokens_per_s = round(cp.predict(small).output_tokens_per_s, 1)
    if wl is not None and opts.alternatives and chosen.evaluation.fits:
        # the --data-parallel-size option offered when more GPUs are given than the plan needs (plan/result.py)
        dp = result._data_parallel_candidate
        for alt in result.alternatives:
            if alt.data_parallel_size > 1 and alt.output_tokens_per_s is None and dp is not None:
                cp = candidate_perf(dp.variant.arch, dp.evaluation, dp.settings, dp.variant.label, profile,
                                    opts.records, vllm_version=rules.version)
                small = replace(wl, num_requests=min(wl.num_requests or _ALT_REQUESTS * cp.replicas,
                                                     _ALT_REQUESTS * cp.replicas))
                alt.output_tokens_per_s = round(cp.predict(small).output_tokens_per_s, 1)
                line = data_parallel_versus_tp(alt, cp, result.alternatives, perfs, wl)
                if line:
                    result.reasons.append(line)
    result._perf_candidates = kept
