"""Memory budget of one GPU as vLLM computes it (V1 worker, >= 0.27 formula).

available KV = ceil(total * gpu_memory_utilization) - weights - non_torch - peak_activation
               - cudagraph (when the version counts it and --enforce-eager is off)
--kv-cache-memory-bytes bypasses all of it (vllm/v1/worker/gpu_worker.py determine_available_memory).

weights are measured (repository bytes) and split exactly; the other three terms are estimated
heuristics (constants below), calibrated on public startup logs (benchmarks/accuracy.py reports
their error) and replaced by `calibrated` values from the local calibration store when present.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

from vllmkit.arch.model import ModelArch

MIB = 1 << 20
NON_TORCH_BASE = 1152 * MIB  # CUDA context, cuBLAS workspaces, allocator slack; fitted on public V1 logs (benchmarks/accuracy.py)
NON_TORCH_NCCL = 256 * MIB  # NCCL / custom all-reduce buffers when TP > 1
NON_TORCH_ROCM_EXTRA = 256 * MIB  # HIP runtime / hipBLASLt workspaces
ACT_HIDDEN_FACTOR = 4  # live hidden-size bf16 buffers (residual, norm out, attn out …) per token
ACT_INTER_FACTOR = 3  # gate_up output (2 x intermediate) + activation output (1 x) per token, bf16
SAMPLER_BYTES = 6  # fp32 logits + half-size temporaries per (sequence, vocab) in the sampler dummy run
CUDAGRAPH_BASE = 150 * MIB
CUDAGRAPH_PER_LAYER = 4 * MIB


class MemoryTerm(BaseModel):
    bytes: int
    source: str  # measured | derived | estimated | calibrated | given
    note: str = ""


class MemoryBudget(BaseModel):
    total_bytes: int
    requested_bytes: int
    weights: MemoryTerm
    non_torch: MemoryTerm
    activation: MemoryTerm
    cudagraph: MemoryTerm
    kv_cache: MemoryTerm
    extra: dict[str, MemoryTerm] = Field(default_factory=dict)


def requested_bytes(total_bytes: int, utilization: float) -> int:
    """vLLM: requested_memory = math.ceil(total * gpu_memory_utilization)."""
    return math.ceil(total_bytes * utilization)


def estimate_non_torch(tp: int, pp: int, vendor: str) -> MemoryTerm:
    b = NON_TORCH_BASE
    note = "CUDA context + library workspaces"
    if tp * pp > 1:
        b += NON_TORCH_NCCL
        note += " + NCCL buffers (TP/PP > 1)"
    if vendor == "amd":
        b += NON_TORCH_ROCM_EXTRA
        note += " + HIP runtime"
    return MemoryTerm(bytes=b, source="estimated", note=note)


def estimate_activation(arch: ModelArch, *, tp: int, max_num_batched_tokens: int, max_num_seqs: int) -> MemoryTerm:
    """Peak of the profile run: the larger of one forward over max_num_batched_tokens and the
    sampler dummy run over max_num_seqs rows (they run one after the other)."""
    inter = arch.intermediate_size or 4 * arch.hidden_size
    if arch.moe is not None and arch.moe.moe_intermediate_size:
        # fused-MoE: routed tokens x top-k through the expert MLP
        inter = int(arch.moe.moe_intermediate_size) * max(arch.moe.experts_per_token, 1)
    inter_rank = max(inter // tp, 1)
    hidden_part = max_num_batched_tokens * arch.hidden_size * 2 * ACT_HIDDEN_FACTOR
    inter_part = max_num_batched_tokens * inter_rank * 2 * ACT_INTER_FACTOR
    sampler = min(max_num_seqs, max_num_batched_tokens) * arch.vocab_size * SAMPLER_BYTES
    return MemoryTerm(
        bytes=max(hidden_part + inter_part, sampler),
        source="estimated",
        note=f"profile run over {max_num_batched_tokens} batched tokens + sampler over {max_num_seqs} sequences",
    )


def estimate_cudagraph(layers_on_rank: int) -> MemoryTerm:
    return MemoryTerm(
        bytes=CUDAGRAPH_BASE + CUDAGRAPH_PER_LAYER * layers_on_rank,
        source="estimated",
        note="CUDA graph pool for the default capture sizes",
    )


def kv_budget(
    *,
    total_bytes: int,
    utilization: float,
    weights: MemoryTerm,
    non_torch: MemoryTerm,
    activation: MemoryTerm,
    cudagraph: MemoryTerm,
    kv_cache_memory_bytes: int | None = None,
    extra: dict[str, MemoryTerm] | None = None,
) -> MemoryBudget:
    """extra: further non-KV terms of the profile run (e.g. the multimodal encoder), subtracted too."""
    extra = dict(extra or {})
    requested = requested_bytes(total_bytes, utilization)
    if kv_cache_memory_bytes is not None:
        kv = MemoryTerm(bytes=kv_cache_memory_bytes, source="given", note="--kv-cache-memory-bytes")
    else:
        left = (requested - weights.bytes - non_torch.bytes - activation.bytes - cudagraph.bytes
                - sum(t.bytes for t in extra.values()))
        src = "derived" if all(t.source in ("measured", "derived", "calibrated") for t in
                               (weights, non_torch, activation, cudagraph, *extra.values())) else "estimated"
        kv = MemoryTerm(bytes=left, source=src, note="requested - weights - non-torch - activation - CUDA graphs")
    return MemoryBudget(
        total_bytes=total_bytes,
        requested_bytes=requested,
        weights=weights,
        non_torch=non_torch,
        activation=activation,
        cudagraph=cudagraph,
        kv_cache=kv,
        extra=extra,
    )
