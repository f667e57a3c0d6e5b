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
from vllmkit.estimate.kv import cdiv
from vllmkit.units import GIB, MIB

NON_TORCH_BASE = 1152 * MIB  # CUDA context, cuBLAS workspaces, allocator slack; fitted on public V1 logs (benchmarks/accuracy.py)
NON_TORCH_NCCL = 256 * MIB  # NCCL / custom all-reduce buffers when TP > 1
NON_TORCH_ROCM_EXTRA = 256 * MIB  # HIP runtime / hipBLASLt workspaces
# The FlashInfer all-reduce + RMSNorm fusion's workspace. From vLLM 0.17.0 the default optimisation level
# (O2) turns the fusion on when TP > 1, PP = 1 and DP = 1 on compute capability 9.0 or the 10.x family with
# FlashInfer installed (vllm/config/vllm.py enable_allreduce_rms_fusion, read in the 0.17.0 and 0.19.0
# wheels; off at every level through 0.16.0). FlashInfer 0.6.4 / 0.6.6 (the versions 0.17 - 0.19 pin)
# allocates its TRT-LLM workspace as three SymmDeviceMemory buffers, each rounded up to the multicast
# granularity (flashinfer/comm/mnnvl.py, cuMemCreate: memory torch does not see), during torch.compile
# inside the profile run, so all of it is "non-torch forward increase memory"; on GPUs without multicast
# (PCIe, NVLink-bridge pairs) the allocation fails and vLLM skips the fusion. Measured on H100 80GB HBM3
# with vLLM 0.19.0 (llm-d planner accuracy logs, benchmarks/data/collected-startup-logs-4.jsonl):
# non-torch 0.25 GiB at TP=1, 2.07 (Llama-3.1-8B, gpt-oss-20b) / 2.09 (Qwen2.5-72B) at TP=2, 2.13
# (Llama-3.1-8B) / 2.17 (Llama-4-Scout) at TP=4, 0.07 at PP=2 or 4: a median extra of 1.85 GiB, the
# same for every model and TP size (the workspace's three buffers at 512 MiB each, sglang#18341's
# address stride for this API, plus what 0.18 added to the profiling window: CUDA-graph capture).
# 0.17 itself: the three buffers (1.5 GiB). Older logs have no such term (0.10.2 H200 TP=2, 0.11-era H100).
FUSION_WORKSPACE_NON_TORCH = int(1.85 * 1024) * MIB  # vLLM 0.18 - 0.21, measured
FUSION_WORKSPACE_0_17 = 3 * 512 * MIB  # vLLM 0.17: three buffers at the multicast granularity
# What the 0.18 - 0.21 figure holds besides the three 512 MiB buffers (measured 1.85 GiB, above): kept from 0.22
# on, where the buffers themselves shrink (below); no public log of 0.22+ on an NVSwitch fabric prints its
# non-torch memory to say otherwise.
FUSION_REST_NON_TORCH = FUSION_WORKSPACE_NON_TORCH - FUSION_WORKSPACE_0_17
# From vLLM 0.22 the pinned FlashInfer (0.6.11.post2; 0.6.12 in 0.23 - 0.24, 0.6.13 in 0.25, read in the wheels'
# METADATA) allocates the workspace through PyTorch's symmetric memory (flashinfer/comm/torch_symmetric_memory.py
# _alloc_symm_buffer_bytes -> torch symm_mem.empty), which rounds an allocation up to the CUDA allocation
# granularity (CUDASymmetricMemoryAllocator::alloc, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED: 2 MiB), not to the
# 512 MiB multicast granularity FlashInfer's own SymmDeviceMemory used (flashinfer 0.6.6 - 0.6.8 comm/mnnvl.py).
# The buffers are sized by the largest message the fusion takes (vllm compilation/passes/fusion/
# allreduce_rms_fusion.py: max_token_num = min(FI_ALLREDUCE_FUSION_MAX_SIZE_MB[cc][tp] / (hidden x dtype),
# max_num_batched_tokens)); from 0.25 vLLM picks FlashInfer's MNNVL backend on a single node
# (device_communicators/flashinfer_all_reduce.py _resolve_fi_ar_backend), one buffer of three Lamport slots.
FUSION_SYMM_GRANULE = 2 * MIB
FUSION_MAX_SIZE_MIB = {  # vllm allreduce_rms_fusion.py FI_ALLREDUCE_FUSION_MAX_SIZE_MB (0.19.1 - 0.27.1)
    9.0: {2: 64, 4: 2, 8: 0.5},
    10.0: {2: 64, 4: 32, 8: 1},
    10.3: {2: 64, 4: 64, 8: 2},
}
MNNVL_ONE_SHOT_BYTES = 64 * 1024 * 8 * 2  # flashinfer comm/trtllm_mnnvl_ar.py MNNVL_ONE_SHOT_THRESHOLD
TRTLLM_MAX_COMM_BYTES = 2147483647 & ~((1 << 21) - 1)  # flashinfer comm/trtllm_ar.py MAX_COMM_SIZE (Lamport cap)

ACT_HIDDEN_FACTOR = 4  # live hidden-size bf16 buffers (residual, norm out, attn out …) per token
ACT_INTER_FACTOR = 3  # gate_up output (2 x intermediate) + activation output (1 x) per token, bf16
SAMPLER_BYTES = 6  # fp32 logits + half-size temporaries per (sequence, vocab) in the sampler dummy run
# The sort-based PyTorch top-k/top-p path of the dummy sampler (vllm 0.11.0 v1/sample: sampler.py
# forward, ops/topk_topp_sampler.py apply_top_k_top_p lines 183-203), live at its peak per (row,
# vocab) element, which is inside logits.sort(): model-dtype logits 2 (compute_logits; V1
# all-gathers the full vocabulary on every TP rank, platforms/interface.py use_all_gather) +
# float32 copy 4 + sorted values 4 + int64 indices 8 + PyTorch's int64 reverse indices 8
# (aten/src/ATen/native/cuda/SortStable.cu segmented_sort_pairs, the path for >= 128 rows of
# < 1,000,000 columns) + cub's alternate key and value buffers 4 + 8 (aten/src/ATen/cuda/cub.cuh
# calls the non-DoubleBuffer cub::DeviceSegmentedRadixSort::SortPairs) = 38 bytes. After the sort
# the top-k / top-p masks, softmax and scatter peak lower (2 + 4 + 4 + 8 + 1 + 4 + 1 + 4 = 28).
SAMPLER_SORT_BYTES = 38
# NON_TORCH_BASE was fitted on logs whose profile peak is the forward pass, so it also carries forward-pass
# memory the per-token terms above do not see (workspaces, compiled-graph temporaries). Where the sort-based
# sampler sets the peak, vLLM's own split shows what is left: "peak activation" + "non-torch" - the sort's
# 1024 x vocab x 38 B = 0.242 GiB (Llama-3.1-8B), 0.223 (gpt-oss-20b), 0.274 (Qwen3-32B) on H100 with vLLM
# 0.14 (llm-d-benchmark empirical-vllm-memory-results.md) and 0.264 (Qwen3-14B, 0.15.0 and 0.16.0, llm-d
# planner version sweep), all at TP=1: about 256 MiB (non-torch 0.13-0.14 GiB plus the runner's persistent
# buffers). The rest of the constant is the forward pass's share.
NON_TORCH_SORT_PEAK_REST = 256 * MIB
# From vLLM 0.17 apply_top_k_top_p runs a Triton top-k/top-p kernel on the float32 logits in place
# (v1/sample/ops/topk_topp_sampler.py; topk_topp_triton.py apply_top_k_top_p_triton), then softmax into
# float32 probs and random_sample's exponential noise q, divided in place (sample_with_exponential_noise:
# probs.div_(q)): model-dtype logits 2 + float32 logits 4 + probs 4 + q 4 = 14 bytes per (row, vocab)
# element. The llm-d planner's 0.19 H100 logs (benchmarks/data/collected-startup-logs-4.jsonl, 1024 rows)
# print "torch peak memory increase" 1.52 (Phi-4, vocab 100,352), 1.89 (Llama-3.1-8B, 128,256), 2.21
# (Qwen3-8B / Qwen2.5-7B, 151,936), 2.87 (gpt-oss-20b, 201,088), 3.65 GiB (gemma-2-9b, 256,000): a line of
# slope 14.1 bytes and intercept 0.17 GiB (the kernel's cached per-SM buffers and the runner's persistent
# ones): with 14 B, within 0.015 GiB of every point but gemma-2-9b's (+0.06 GiB; its logits are soft-capped).
SAMPLER_TRITON_BYTES = 14
# COMPILE_SHARE (compile_share): what that forward-pass share is. On a first start the V1 engine compiles
# the model with torch.compile inside the memory profile (the first dummy run at max_num_batched_tokens),
# and what the compile allocates counts as profile memory; a restart that loads the compiled graphs from
# vLLM's cache (~/.cache/vllm/torch_compile_cache) does not. Same RTX 4090, same flags, one minute apart
# (vLLM 0.27.1, Qwen3-8B, alexostapiuk11/coldstart-recon-worker, benchmarks/data/collected-startup-logs-10.jsonl):
# "torch.compile took 38.96 s" and 1.18 GiB of peak activation, 4.92 GiB of KV; then "Directly load AOT
# compilation from path ..." and 0.19 GiB, 5.91 GiB of KV. The RTX 3090 sweep on 0.17.1 (-9.jsonl, KV sized
# 4-5 s after the weights loaded, where a compile takes 20-50 s) leaves 0.52-0.62 GiB beside the weights
# where a cold start is planned at 1.35. --enforce-eager compiles nothing either (the V1 engine sets
# NO_COMPILATION, config/__init__.py in 0.11.0; -O0 from 0.12). The plan assumes a first start
# (PlanRequest.compile_cache "cold"); "warm" and --enforce-eager leave the share out, and so do first starts of
# 0.14 - 0.23, whose public logs show no compile memory in the profile peak (engine/versions.py
# compile_memory_in_profile; the RTX 3090 sweep above is one of them).
# vLLM 0.18 added 0.12 GiB to the single-GPU "non-torch forward increase memory" (0.13 GiB in 0.17.0,
# 0.25 in 0.18.0, same Qwen3-14B start on an H100 in the llm-d planner's version sweep; 0.24-0.27 in the
# 0.19 logs): what is left beside a sampler peak from that release on
NON_TORCH_0_18_EXTRA = 128 * MIB
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
    cpu_offload_bytes: int = 0  # weights held in host memory instead (--cpu-offload-gb): not in weights


def requested_bytes(total_bytes: int, utilization: float) -> int:
    """vLLM: requested_memory = math.ceil(total * gpu_memory_utilization)."""
    return math.ceil(total_bytes * utilization)


# The V0 engine (vllm/worker/worker.py determine_num_available_blocks: with utils.memory_profiling in the
# 0.7.2 and 0.8.2 wheels, the same code; as init_gpu_memory - free memory after the profile run in 0.6.3)
# charges only the non-torch memory that grew after the baseline init_device reads once the CUDA context
# exists (NCCL / custom all-reduce buffers, attention workspaces), and its activation term is the profile
# run's torch peak, which the per-token terms above reproduce (2.02 GiB predicted and logged for
# Qwen2.5-1.5B over 32,768 tokens on 0.7.2), so none of NON_TORCH_BASE's context and forward-pass share
# applies. Public V0 logs print non_torch_memory 0.01 GiB
# (0.7.2, T4, TP=1) and 0.10 (A100-40GB, TP=1, vllm#12330), 0.25 (2 x RTX 4090, TP=2, vllm#13061) and
# 0.28 (0.7.3, 32 x L40S, TP=8 x PP=4, vllm#15598). 0.6.4 alone subtracts torch-allocated memory from the
# whole device's use (engine/versions.py others_charged_to_budget), so its non-torch term also holds the
# CUDA context: 0.35 GiB on an RTX 3090 (vllm#10517: initial_memory_usage=15.34GiB after 14.99 GiB of
# weights, non_torch_memory=0.35GiB).
V0_NON_TORCH_SINGLE = 64 * MIB
V0_NON_TORCH_PARALLEL = 256 * MIB
V0_CUDA_CONTEXT = int(0.35 * 1024) * MIB
# ... but that 0.25 GiB holds only where the ranks talk over PCIe, where NCCL's shared-memory transport keeps its
# buffers in host memory. Between NVLink peers NCCL's P2P transport allocates its per-channel buffers on the GPU
# (and vLLM's custom all-reduce its IPC buffers), all after V0's baseline (worker.py init_device takes the
# snapshot before init_worker_distributed_environment, 0.7.3 wheel). Public V0 logs with TP x PP > 1 print
# non_torch_memory 1.39 (A800 TP4, 0.8.2), 1.54 (A100 40GB TP2, 0.7.2), 1.82 (A100 80GB TP8, 0.8.5), 1.96
# (A100 80GB TP2, a 0.6 dev build), 2.10 (A100 40GB TP8, 0.7.1), 2.11, 2.11, 2.15, 2.24 GiB (A100 40GB TP4 / TP8
# x PP2, 0.8.3; two publishers) on NVLink, against 0.20 - 0.33 on PCIe (RTX 3090 / 4090 / 5090, L40S, A40); the
# median of the nine NVLink logs. V1 counts these buffers in its own non-torch term (NON_TORCH_NCCL fits its logs
# on either link). One H200 TP8 log (0.7.3, DeepSeek-R1) prints 7.16 GiB: more than this, not modelled.
V0_NON_TORCH_NVLINK = int(2.1 * 1024) * MIB


def estimate_non_torch(tp: int, pp: int, vendor: str, *, v0: bool = False, context_charged: bool = False,
                       nvlink: bool = False) -> MemoryTerm:
    """v0: the V0 engine's profile (only what grew after init_device); context_charged: the release counts
    the whole device's non-torch use, CUDA context included (0.6.4); nvlink: the ranks are NVLink peers (V0:
    NCCL's buffers on the GPU, V0_NON_TORCH_NVLINK)."""
    if v0:
        parallel = 0
        if tp * pp > 1:
            parallel = V0_NON_TORCH_NVLINK if nvlink else V0_NON_TORCH_PARALLEL
        link = " over NVLink" if nvlink else ""
        if context_charged:
            b = V0_CUDA_CONTEXT + parallel
            note = "V0 engine: the whole device's non-torch use, CUDA context included" + (
                f" + NCCL buffers (TP/PP > 1{link})" if parallel else "")
        else:
            b = parallel or V0_NON_TORCH_SINGLE
            note = ("V0 engine: only non-torch memory that grew after the CUDA context"
                    + (f" (NCCL buffers, TP/PP > 1{link})" if parallel else ""))
        if vendor == "amd":
            b += NON_TORCH_ROCM_EXTRA
            note += " + HIP runtime"
        return MemoryTerm(bytes=b, source="estimated", note=note)
    b = NON_TORCH_BASE
    note = "CUDA context + library workspaces"
    if tp * pp > 1:
        b += NON_TORCH_NCCL
        note += " + NCCL buffers (TP/PP > 1)"
    if vendor == "amd":
        b += NON_TORCH_ROCM_EXTRA
        note += " + HIP runtime"
    return MemoryTerm(bytes=b, source="estimated", note=note)


def allreduce_fusion_non_torch(*, tp: int, pp: int, dp: int, compute_capability: float | None,
                               version: tuple[int, int, int], multicast: bool, hidden_size: int = 0,
                               dtype_bytes: int = 2, max_num_batched_tokens: int = 8192) -> int:
    """Bytes the all-reduce + RMSNorm fusion workspace costs a TP rank outside PyTorch (0 where vLLM
    does not build it). The caller rules out --enforce-eager and a missing FlashInfer. From 0.21 the fusion
    is on with PP or DP > 1 too (vllm/config/vllm.py enable_allreduce_rms_fusion: the 0.20 wheel's TP-PP / TP-DP
    exclusions are gone in 0.21's); each TP group builds its own workspace."""
    if tp < 2 or not multicast or compute_capability is None or version < (0, 17, 0):
        return 0
    if version < (0, 21, 0) and (pp != 1 or dp != 1):
        return 0
    cc = round(compute_capability, 1)
    # 0.17 checks is_device_capability(100); 0.19 the whole 10.x family (B200, GB200, B300)
    if not (cc == 9.0 or cc == 10.0 or (10.0 < cc < 11.0 and version >= (0, 19, 0))):
        return 0
    max_mib = _fusion_max_mib(cc, tp)
    if max_mib is None:
        return 0  # no message size for this TP size: vLLM skips the fusion ("not supported for world size")
    if version < (0, 18, 0):
        return FUSION_WORKSPACE_0_17
    if version < (0, 22, 0) or hidden_size <= 0:
        return FUSION_WORKSPACE_NON_TORCH
    return FUSION_REST_NON_TORCH + fusion_symm_workspace(
        tp=tp, max_mib=max_mib, version=version, hidden_size=hidden_size, dtype_bytes=dtype_bytes,
        max_num_batched_tokens=max_num_batched_tokens)


def _fusion_max_mib(compute_capability: float, tp: int) -> float | None:
    """The largest all-reduce message (MiB) the fusion takes at this TP size, None where vLLM has no size."""
    family = 10.0 if 10.0 <= compute_capability < 10.3 else compute_capability
    return FUSION_MAX_SIZE_MIB.get(round(family, 1), {}).get(tp)


def fusion_symm_workspace(*, tp: int, max_mib: float, version: tuple[int, int, int], hidden_size: int,
                          dtype_bytes: int, max_num_batched_tokens: int) -> int:
    """The fusion workspace from vLLM 0.22 (FlashInfer's buffers in PyTorch symmetric memory, 2 MiB granules): the
    TRT-LLM backend's three buffers (0.22 - 0.24: flashinfer comm/trtllm_ar.py
    trtllm_create_ipc_workspace_for_all_reduce_fusion: tp x tokens x hidden x 2 B, the barrier flags, three
    Lamport copies of the message), the MNNVL backend's one (0.25+: comm/trtllm_mnnvl_ar.py
    MNNVLAllReduceFusionWorkspace, three Lamport slots of the larger of the one-shot and two-shot message; 0.25
    keeps a TRT-LLM one beside it for the quantizing patterns). max_mib: the largest message the fusion takes at
    this TP size (FUSION_MAX_SIZE_MIB)."""
    tokens = min(int(max_mib * MIB) // (hidden_size * dtype_bytes), max_num_batched_tokens)

    def granules(size: int) -> int:
        return cdiv(size, FUSION_SYMM_GRANULE) * FUSION_SYMM_GRANULE

    lamport_elem = 4 if dtype_bytes == 4 else 2  # use_fp32_lamport for float32 models
    message = tp * tokens * hidden_size * 2
    lamport = 3 * min(tp * tokens * hidden_size * lamport_elem, TRTLLM_MAX_COMM_BYTES)
    trtllm = granules(message) + granules(tp * 256 * 4) + granules(lamport)
    if version < (0, 25, 0):
        return trtllm
    one_shot_tokens = min(MNNVL_ONE_SHOT_BYTES // (tp * dtype_bytes * hidden_size), tokens)
    one_shot = one_shot_tokens * hidden_size * tp * dtype_bytes
    two_shot = 2 * cdiv(tokens, tp) * tp * hidden_size * dtype_bytes
    mnnvl = granules(3 * max(one_shot, two_shot))
    # 0.25 builds the quant-pattern workspace apart with the TRT-LLM backend (get_fi_ar_quant_workspace: "Always
    # uses trtllm backend", reusing only a TRT-LLM main workspace; the pass asks for it whatever the model);
    # from 0.26 it reuses the main workspace when the backends match
    return mnnvl + trtllm if version < (0, 26, 0) else mnnvl


def sampler_bytes_per_element(path: str) -> int:
    """Bytes per (row, vocab) element at the dummy sampler's peak: "sort" (PyTorch sort-based
    top-k/top-p), "triton" (the Triton top-k/top-p kernel, vLLM >= 0.17), "none" (a pipeline stage
    before the last, which does not sample), else FlashInfer's sampling or Model Runner V2's ("mrv2": a
    float32 copy of the logits beside them, no top-k / top-p in the dummy run)."""
    return {"sort": SAMPLER_SORT_BYTES, "triton": SAMPLER_TRITON_BYTES, "none": 0}.get(path, SAMPLER_BYTES)  # "mrv2" too


def _activation_parts(arch: ModelArch, *, tp: int, max_num_batched_tokens: int, max_num_seqs: int,
                      sampler: str, moe_gather: int) -> tuple[int, int, int, int]:
    """(forward bytes, sampler bytes, sampler rows, tokens the MoE layers see) of the profile run."""
    inter = arch.intermediate_size or 4 * arch.hidden_size
    if arch.moe is not None and arch.moe.moe_intermediate_size:
        # fused-MoE: routed tokens x top-k through the expert MLP
        inter = int(arch.moe.moe_intermediate_size) * max(arch.moe.experts_per_token, 1)
    inter_rank = max(inter // tp, 1)
    hidden_part = max_num_batched_tokens * arch.hidden_size * 2 * ACT_HIDDEN_FACTOR
    gathered = max_num_batched_tokens * (max(moe_gather, 1) if arch.moe is not None else 1)
    inter_part = gathered * inter_rank * 2 * ACT_INTER_FACTOR
    rows = min(max_num_seqs, max_num_batched_tokens)
    return hidden_part + inter_part, rows * arch.vocab_size * sampler_bytes_per_element(sampler), rows, gathered


def estimate_activation(arch: ModelArch, *, tp: int, max_num_batched_tokens: int, max_num_seqs: int,
                        sampler: str = "flashinfer", moe_gather: int = 1, sampler_label: str = "",
                        hidden_kept: bool = False) -> MemoryTerm:
    """Peak of the profile run: the larger of one forward over max_num_batched_tokens and the
    sampler dummy run over min(max_num_seqs, max_num_batched_tokens) rows (they run one after the
    other). sampler: the dummy sampler's top-k/top-p path, "sort" (SAMPLER_SORT_BYTES per row x vocab
    element), "triton" (SAMPLER_TRITON_BYTES) or "flashinfer" (SAMPLER_BYTES); engine/versions.py says
    in which releases.
    moe_gather: data-parallel ranks whose tokens every MoE layer gathers (expert parallelism under
    --data-parallel-size: the all-to-all dispatch all-gathers the DP ranks' batches, and the fused-MoE
    workspace is sized for all of them x top-k).
    sampler_label: the kernel's name in the note where it is not the path's own ("FlashInfer" for the
    "triton"-sized path of vLLM >= 0.21).
    hidden_kept: the old engine samples while the forward pass's output hidden states (every batched token, model
    dtype) are still referenced (worker/model_runner.py execute_model holds hidden_or_intermediate_states through
    sample()): 32,768 x 8,192 x 2 B = 0.50 GiB beside the 18.59 GiB sort of Llama-3.1-70B at 4,096 sequences, the
    19.09 GiB its vLLM 0.6.4 log printed (collected-startup-logs-23). V1's fitted rest constants carry it."""
    forward, sampled, rows, gathered = _activation_parts(
        arch, tp=tp, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
        sampler=sampler, moe_gather=moe_gather)
    if hidden_kept and sampled:
        sampled += max_num_batched_tokens * arch.hidden_size * 2
    note = f"profile run over {max_num_batched_tokens} batched tokens + sampler over {max_num_seqs} sequences"
    if gathered != max_num_batched_tokens:
        note += f"; MoE layers over the {moe_gather} data-parallel ranks' tokens ({gathered})"
    if sampler == "mrv2" and sampled > forward:
        note = (f"sampler dummy run: Model Runner V2's Gumbel sampler, no top-k/top-p, over {rows} x "
                f"{arch.vocab_size} logits ({sampler_bytes_per_element(sampler)} B each)")
    if sampler in ("sort", "triton") and sampled > forward:
        kind = sampler_label or ("sort-based" if sampler == "sort" else "Triton")
        note = (f"sampler dummy run: {kind} top-k/top-p over {rows} x {arch.vocab_size} logits "
                f"({sampler_bytes_per_element(sampler)} B each)")
    return MemoryTerm(bytes=max(forward, sampled), source="estimated", note=note)


def sampler_peak_rest(version: tuple[int, int, int]) -> int:
    """What a single-GPU start holds beside a sampler-set profile peak (NON_TORCH_SORT_PEAK_REST, plus
    the 0.18 non-torch step)."""
    return NON_TORCH_SORT_PEAK_REST + (NON_TORCH_0_18_EXTRA if version >= (0, 18, 0) else 0)


def sampler_peak_non_torch_credit(arch: ModelArch, *, tp: int, max_num_batched_tokens: int, max_num_seqs: int,
                                  sampler: str, version: tuple[int, int, int], moe_gather: int = 1) -> int:
    """Bytes of NON_TORCH_BASE not charged when the dummy sampler ("sort" or "triton"), not the forward
    pass, sets the profile's peak: the part of the constant that stands for forward-pass memory the
    per-token terms miss (NON_TORCH_BASE - sampler_peak_rest). The peak is max(forward + share, sampler),
    so the credit is the share less whatever of it the forward pass still reaches above the sampler."""
    forward, sampled, _, _ = _activation_parts(
        arch, tp=tp, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
        sampler=sampler, moe_gather=moe_gather)
    share = compile_share(version)
    return min(max(sampled - forward, 0), share)


def compile_share(version: tuple[int, int, int]) -> int:
    """The part of NON_TORCH_BASE a V1 start holds only while torch.compile compiles the model in the profile
    run (COMPILE_SHARE note): NON_TORCH_BASE less what is left beside a sampler-set peak."""
    return max(NON_TORCH_BASE - sampler_peak_rest(version), 0)


def estimate_cudagraph(layers_on_rank: int) -> MemoryTerm:
    return MemoryTerm(
        bytes=CUDAGRAPH_BASE + CUDAGRAPH_PER_LAYER * layers_on_rank,
        source="estimated",
        note="CUDA graph pool for the default capture sizes",
    )


# Hybrid Gated-DeltaNet models from vLLM 0.26 on: the CUDA-graph estimate (gpu_model_runner.py
# profile_cudagraph_memory, read in 0.32) warms its first FULL capture with a long-context sample --
# profile_seq_lens = min(max_model_len, max_num_tokens // B) for each of the B requests of the largest
# FULL size, about max_num_batched_tokens context tokens in all -- and measures the drop in free
# memory, so what the GDN decode-with-context path allocates for that context is charged as graph
# memory. vllm#50780 (open; a 0.23 -> 0.26 regression, 0.23.1 reported 0.5 GiB for the same sample,
# the real FULL graphs cost ~24 MiB each): ~128 KiB per context token on a 64-layer (16 full attention
# + 48 GDN) Qwen3.5-27B-class model. vllm#52872 (RTX 5090, the same layer pattern) saw the graph
# estimate grow from 0.52 to 0.89 GiB between --max-num-batched-tokens 4096 and 8192 (~94 KiB a token).
# Per rank the GDN heads are split by TP (our inference: the issues ran TP=1).
GDN_PROFILE_TRANSIENT_PER_TOKEN = 128 * 1024


def gdn_graph_profile_transient(max_num_batched_tokens: int, tp: int) -> int:
    """Bytes the CUDA-graph estimate of a hybrid GDN model charges for its long-context warm-up."""
    return GDN_PROFILE_TRANSIENT_PER_TOKEN * max_num_batched_tokens // max(tp, 1)


# CUDA graphs captured after the KV cache is allocated, in releases that do not budget them
# (engine/versions.py cudagraph_counted False): vllm 0.8.5 v1/worker/gpu_worker.py
# determine_available_memory (lines 165-212) has no graph term, and compile_or_warm_up_model (lines
# 228-242) captures after initialize_from_config allocated the KV cache. The capture then has to fit
# in what the budget leaves: total - requested, plus the profile run's activation peak, which
# torch.cuda.empty_cache() (line 200) hands back before the KV cache is sized.
# Capture memory per piecewise graph (one per capture size and per piece between attention /
# mixer layers) from the public logs' "Graph capturing finished in N secs, took X GiB" (rows in
# benchmarks/data/collected-startup-logs*.jsonl: 0.26-1.0 MiB; median of the eight V1 rows below
# 0.20 = 0.39 MiB): Qwen2-7B 0.10.1.1 0.26/0.34, Qwen3-30B-A3B TP4 PP2 0.10.1.2 0.38, gpt-oss-120b
# TP4 0.10.1.1 0.40, Qwen3-235B TP8 0.10.2 0.55, Qwen3-Next TP2 0.10.2 0.74, granite-4.0-micro
# 0.11.0 0.27, Qwen3-8B 0.9.2 0.92.
GRAPH_CAPTURE_PER_GRAPH = int(0.39 * MIB)
V1_CAPTURE_SIZES = [1, 2, 4, *range(8, 513, 8)]  # 0.8.5 config.py _set_cudagraph_sizes (V1), <= max_num_batched_tokens


def unbudgeted_graph_capture(*, pieces: int, max_num_batched_tokens: int) -> MemoryTerm:
    """What capturing the default V1 piecewise CUDA graphs takes: capture sizes x pieces x the
    per-graph median of public logs."""
    sizes = sum(1 for s in V1_CAPTURE_SIZES if s <= max_num_batched_tokens)
    graphs = sizes * max(pieces, 1)
    return MemoryTerm(bytes=graphs * GRAPH_CAPTURE_PER_GRAPH, source="estimated",
                      note=f"{sizes} capture sizes x {pieces} piecewise graphs, ~0.39 MiB each (public logs)")


# ROCm: every captured hipGraph pins device memory of its own. ROCm/pytorch#2286 (AMD, 2025-07-08):
# "hipGraph requires memory each time one is captured" -- 0.003906 GiB (4 MiB) per captured graph in
# vLLM's capture loop re-using one memory pool, visible with HSA_DISABLE_FRAGMENT_ALLOCATOR=1; vllm#19579:
# piecewise capture on an MI300 took 6.32 GiB, far more than the same models on an H100, while full-graph
# capture was "fine" (many small graphs, not big ones). From the release that counts graph memory on ROCm
# (engine/versions.py rocm_cudagraph_counted; vllm PR#48526) the estimate measures the free-memory drop
# of the second capture size of each mode and multiplies it by the sizes left (v1/worker/
# gpu_model_runner.py profile_cudagraph_memory, read in 0.32: first capture + per_graph x (n - 1)), so
# these blocks are charged to the budget for every size after the first: all pieces of a PIECEWISE size,
# one graph of a FULL decode size.
HIPGRAPH_PINNED_PER_GRAPH = 4 * MIB


def default_capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, *, decode_query_len: int = 1,
                          ceiling: int = 512) -> list[int]:
    """vLLM's default CUDA-graph capture sizes from 0.11 (config/vllm.py _set_cudagraph_sizes, read in
    0.19.1 and 0.32): 1, 2, 4, multiples of 8 below 256, then of 16, up to min(2 x max_num_seqs x decode
    query length, 512 -- `ceiling`: 1,024 on compute capability 10.x from 0.32 --), none above
    max_num_batched_tokens."""
    top = min(2 * max_num_seqs * decode_query_len, ceiling)
    sizes = [1, 2, 4, *range(8, 256, 8), *range(256, top + 1, 16)]
    return [s for s in sizes if s <= min(top, max_num_batched_tokens)]


# vLLM's CUDA-graph memory estimate (v1/worker/gpu_model_runner.py profile_cudagraph_memory; the same in the
# 0.19.1, 0.22.0, 0.26.0 and 0.32 wheels), printed as "Estimated CUDA graph memory" and, from 0.20, taken off
# the KV budget: per graph mode, the free-memory drop of its first (largest) capture plus that of the second
# largest, at least 1 MiB, times the other sizes. Under the default FULL_AND_PIECEWISE mode the piecewise graphs
# cover every capture size and the full graphs the uniform-decode sizes up to max_num_seqs
# (v1/cudagraph_dispatcher.py), so the estimate grows with the number of sizes -- twice max_num_seqs, up to 512
# -- and with what each graph holds: graph nodes for every layer, and at the second-largest size its tokens x
# the layers x the hidden size (activations between the pieces; tensor parallelism divides about 70 % of it), and
# for MoE layers the fused-MoE workspace (tokens x experts per token x the expert width, split by TP). Fitted
# (least squares on the log ratio) on the 87 public starts of vLLM 0.19 - 0.31 that print the estimate (not
# eager, not ROCm, not hybrid, not Gemma-4, no LoRA or drafter; benchmarks/data/*startup-logs*.jsonl
# `cudagraph_estimate_gib`: 0.13 GiB for Qwen2.5-Coder-7B at --max-num-seqs 32 up to 2.39 GiB for Qwen2.5-72B at
# 1,024): median error 11 % (dense 75 starts 11 %, MoE 12 starts 30 %), 9.5 % leaving each publisher out in
# turn; the constant-plus-per-layer figure before it (estimate_cudagraph, kept for ROCm, whose pinned hipGraph
# memory was fitted beside it) was 68 % off them.
GRAPH_ESTIMATE_BASE = int(0.0885 * GIB)
GRAPH_ESTIMATE_PER_GRAPH_LAYER = int(0.0838 * MIB)
GRAPH_ESTIMATE_RESIDUAL = 0.0631  # bytes per token x layer x hidden unit of the second-largest size, per graph
GRAPH_ESTIMATE_RESIDUAL_TP_SPLIT = 0.7  # the share of it tensor parallelism divides
GRAPH_ESTIMATE_MOE = 1.07  # bytes per token x expert per token x expert width (per TP rank), per graph


def profiled_cudagraph(*, hidden_size: int, layers_on_rank: int, tp: int, max_num_seqs: int,
                       max_num_batched_tokens: int, moe_topk: int = 0, moe_width: int = 0,
                       ceiling: int = 512) -> MemoryTerm:
    """vLLM's profiled CUDA-graph estimate for the default capture sizes and FULL_AND_PIECEWISE mode."""
    piecewise = default_capture_sizes(max_num_seqs, max_num_batched_tokens, ceiling=ceiling)
    full = [s for s in piecewise if s <= max_num_seqs]
    rest = sum((len(sizes) - 1) * sizes[-2] for sizes in (piecewise, full) if len(sizes) > 1)
    tp = max(tp, 1)
    split = 1 - GRAPH_ESTIMATE_RESIDUAL_TP_SPLIT + GRAPH_ESTIMATE_RESIDUAL_TP_SPLIT / tp
    total = (GRAPH_ESTIMATE_BASE + GRAPH_ESTIMATE_PER_GRAPH_LAYER * (len(piecewise) + len(full)) * layers_on_rank
             + GRAPH_ESTIMATE_RESIDUAL * rest * layers_on_rank * hidden_size * split
             + GRAPH_ESTIMATE_MOE * rest * moe_topk * moe_width / tp)
    top = piecewise[-1] if piecewise else 0
    return MemoryTerm(bytes=int(total), source="estimated",
                      note=f"vLLM's CUDA-graph estimate: {len(piecewise)} piecewise + {len(full)} full graphs "
                           f"(capture sizes up to {top}, set by --max-num-seqs {max_num_seqs})")


def rocm_hipgraph_pinned(*, pieces: int, max_num_seqs: int, max_num_batched_tokens: int) -> MemoryTerm:
    """What the ROCm graph estimate charges for the memory each captured hipGraph pins, beyond the
    first capture size: PIECEWISE sizes x pieces, plus one FULL decode graph per size up to max_num_seqs."""
    piecewise = default_capture_sizes(max_num_seqs, max_num_batched_tokens)
    full = [s for s in piecewise if s <= max_num_seqs]
    graphs = (len(piecewise) - 1) * max(pieces, 1) + max(len(full) - 1, 0)
    return MemoryTerm(bytes=graphs * HIPGRAPH_PINNED_PER_GRAPH, source="estimated",
                      note=f"{graphs} hipGraphs after the first capture size ({len(piecewise)} sizes x {pieces} "
                           f"pieces + {len(full)} full decode graphs) x 4 MiB each (ROCm/pytorch#2286)")


def graph_capture_headroom(budget: MemoryBudget, in_use_by_others_bytes: int = 0) -> int:
    """Free memory when unbudgeted CUDA graphs are captured: total - requested - memory other
    processes hold (when it was not already charged to the budget) + the released activation peak."""
    return budget.total_bytes - budget.requested_bytes - in_use_by_others_bytes + budget.activation.bytes


# the further non-KV terms a budget may carry (MemoryBudget.extra keys), as a plan's memory table names them
EXTRA_TERM_LABELS = {"encoder": "encoder profile", "lora": "LoRA stacks", "speculative": "drafter",
                     "other_processes": "other processes", "headroom": "kept free"}

# vLLM 0.34's extensible KV cache (engine/versions.py extensible_kv_cache), read in the 0.34.0 wheel: the cache is
# sized after warm-up and CUDA-graph capture from the memory then in use (v1/worker/extensible_kv_cache.py
# measure_kv_cache_bytes):
#   non_kv_used = init_free - free - committed   (weights, non-torch growth, graph pools, persistent buffers)
#   available   = min(requested - non_kv_used, init_free - non_kv_used - margin) - max(P, G)
#   margin      = max(KV_CACHE_MARGIN_FLOOR_BYTES, KV_CACHE_MARGIN_FRACTION x P)
# with P the largest transient allocation peak (the profile run's, or the sizing warm-up's full-budget step) and
# G torch's reserved-memory growth over a sizing step (taken as P: no public log of 0.34 gives G). requested is
# total x the utilization, which defaults to 1.0 here, and init_free is what the device has free when the worker
# starts: total - the CUDA context - other processes.
EXTENSIBLE_MARGIN_FLOOR = 1 * GIB  # KV_CACHE_MARGIN_FLOOR_BYTES (CUDA)
EXTENSIBLE_MARGIN_FLOOR_ROCM = 3 * GIB  # ... on ROCm
EXTENSIBLE_MARGIN_FRACTION = 0.75  # KV_CACHE_MARGIN_FRACTION
# the CUDA context the device holds before the worker's first snapshot: public logs' "Free memory on device
# (F/T GiB) on startup" leave 0.41 - 0.61 GiB on A100 / H100 / H200 / B300 / RTX 5090 / RTX PRO 6000 (0.51 on 71
# H100 / H200 starts), 0.33 on an MI300X; smaller cards hold less (T4 0.10, L4 0.19), which the plan leaves as margin
CUDA_CONTEXT_AT_START = 512 * MIB
ROCM_CONTEXT_AT_START = int(0.33 * 1024) * MIB


def extensible_kv_budget(
    *,
    total_bytes: int,
    utilization: float,
    weights: MemoryTerm,
    non_torch: MemoryTerm,
    activation: MemoryTerm,
    cudagraph: MemoryTerm,
    vendor: str,
    in_use_by_others_bytes: int = 0,
    extra: dict[str, MemoryTerm] | None = None,
) -> MemoryBudget:
    """The KV budget of vLLM 0.34's extensible KV cache (the formula above). extra: the further non-KV terms; the
    encoder profile is a transient of the profile run (it joins P), the others (LoRA stacks, a drafter) stay
    allocated (they join non_kv_used). The kept-free part (CUDA context, other processes, the margin) becomes the
    budget's "headroom" term when it, and not the requested share, bounds the cache."""
    extra = dict(extra or {})
    extra.pop("other_processes", None)  # not charged to a budget here: it lowers init_free instead
    requested = requested_bytes(total_bytes, utilization)
    transient = activation.bytes + (extra["encoder"].bytes if "encoder" in extra else 0)
    used = weights.bytes + non_torch.bytes + cudagraph.bytes + sum(t.bytes for k, t in extra.items() if k != "encoder")
    context = ROCM_CONTEXT_AT_START if vendor == "amd" else CUDA_CONTEXT_AT_START
    floor = EXTENSIBLE_MARGIN_FLOOR_ROCM if vendor == "amd" else EXTENSIBLE_MARGIN_FLOOR
    margin = max(floor, int(EXTENSIBLE_MARGIN_FRACTION * transient))
    init_free = total_bytes - context - in_use_by_others_bytes
    by_request = requested - used
    by_free = init_free - used - margin
    if by_free < by_request:
        others = f" + {in_use_by_others_bytes / GIB:.2f} GiB other processes" if in_use_by_others_bytes else ""
        extra["headroom"] = MemoryTerm(
            bytes=requested - init_free + margin, source="estimated",
            note=(f"vLLM 0.34's extensible KV cache keeps free the CUDA context ({context / GIB:.2f} GiB){others} "
                  f"and a margin of max({floor / GIB:.0f} GiB, {EXTENSIBLE_MARGIN_FRACTION} x the "
                  f"{transient / GIB:.2f} GiB transient peak) = {margin / GIB:.2f} GiB"
                  + (f", beyond the {1 - utilization:.0%} of the GPU --gpu-memory-utilization leaves"
                     if utilization < 1 else "")))
    # requested - every term (the kept-free one included) = min(by_request, by_free) - transient: the profile
    # budget's arithmetic gives the size
    budget = kv_budget(total_bytes=total_bytes, utilization=utilization, weights=weights, non_torch=non_torch,
                       activation=activation, cudagraph=cudagraph, extra=extra)
    kv = budget.kv_cache
    return budget.model_copy(update={"kv_cache": kv.model_copy(update={
        "note": "measured after warm-up and graph capture (vLLM 0.34 extensible KV cache): " + kv.note})})


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
        kv = MemoryTerm(bytes=left, source=src, note=" - ".join(
            ("requested - weights - non-torch - activation - CUDA graphs",
             *(EXTRA_TERM_LABELS.get(k, k) for k in extra))))
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
