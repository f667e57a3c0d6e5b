"""Per-step cost of one vLLM engine step on one GPU type (pure: no I/O).

An engine step runs `decode` sequences (one token each) and `prefill` tokens (chunked prefill) through
the model on every rank at once. Its time is a roofline plus fixed costs:

    t_step = pp * (gemm(gemm_memory, gemm_compute) + kernels + max(attn_memory, attn_compute)) + t_allreduce + t_overhead

GEMMs and attention are separate kernels, so each is its own roofline and their times add. With
pipeline parallelism the bracket is one stage's work on one micro-batch (1/k of the step's sequences,
k = min(pp, sequences): vLLM keeps pp batches in flight, `pipeline_microbatches`), done pp times while a
token passes every stage.
- gemm(m, c) = sqrt(m^2 + c^2): a GEMM does not switch sharply from streaming its weights to being
  compute bound; between the two (M ~ 64-1024 tokens) it is slower than either roofline. Measured on
  an H200 with Llama-3.1-8B-shaped layers (benchmarks/data/gpu-probe-h200.json), this blend matches
  every token count from 1 to 8192 within 6 % (BF16) / 9 % (FP8); max(m, c) is 19 % / 17 % fast at
  M = 256.
- kernels: every GEMM kernel has a fixed cost inside a CUDA graph (GEMM_KERNEL_S, measured), and W8A8
  layers add an activation-quantisation kernel before each GEMM (QUANT_KERNEL_S): 4 GEMMs per layer.
- memory: bytes read per rank / (peak bandwidth x achievable fraction). Bytes = dense weights of the
  rank (read once per step whatever the batch) + routed-expert weights actually touched (a batch of B
  tokens touches E * (1 - (1 - k/E)^B) of the E experts of a layer, in expectation) + the KV cache /
  recurrent state the step reads (full attention: the whole context; sliding window: at most the
  window; MLA: one latent per token; mamba / linear attention: the constant state, read and written).
- compute: FLOPs per rank / (dense peak for the compute precision x achievable fraction). FLOPs =
  2 x active parameters per token x tokens + attention (4 x heads x head_dim per query-key pair), less the
  LM head at the positions whose logits vLLM never computes (all but one per request: lm_head_excess_flops).
- t_allreduce: tensor parallel runs two all-reduces per layer (after attention and after the MLP,
  vLLM RowParallelLinear); each is latency + 2 (tp-1)/tp x message / link bandwidth, message =
  hidden x tokens x 2 bytes (ring all-reduce bus traffic). Over PCIe with more than two GPUs (or
  without peer-to-peer) NCCL's ring carries it: a hop of latency per extra ring step and half the
  link's one-way rate (`nccl_over_pcie`).
- t_overhead: scheduler + sampling + launch cost per step, plus a per-sequence term (input preparation,
  sampling, detokenisation scale with the batch).

The achievable fractions and overheads come from `Efficiency`: "estimated" defaults fitted on public
vLLM benchmark runs (benchmarks/perf_accuracy.py, leave-one-source-out), adjusted per GPU family and
precision by physically motivated priors, or "calibrated" from what `vllmkit bench` measured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from math import sqrt

# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class GpuPerf:
    """What the roofline needs from a GPU profile (all per GPU)."""

    name: str
    vendor: str  # nvidia | amd | cpu
    family: str  # volta | turing | ampere | ada | ada-geforce | hopper | blackwell | blackwell-geforce | cdna1-4 | rdna3 | rdna4 | cpu
    bandwidth_bytes_s: float  # peak memory bandwidth
    tflops: dict[str, float]  # dense peak TFLOPS by compute precision: bf16, fp16, fp8, int8, fp4
    link_bytes_s: float  # GPU-to-GPU bandwidth, one direction (vendor totals are bidirectional)
    link_kind: str = "nvlink"  # nvlink | xgmi | pcie | pcie-host (no P2P) | none
    # the rate at which the GPU reads --cpu-offload-gb weights in host memory (plan/performance.py
    # host_link_bytes_s; this default: a PCIe 4.0 x16 host)
    host_link_bytes_s: float = 9.42e9

    def peak_flops(self, precision: str) -> float:
        """Dense FLOP/s for a compute precision, falling back to the next wider one the GPU has.
        float32 (--dtype float32): PyTorch leaves TF32 off for matmuls, so GEMMs run on the FP32 SIMT
        units; profiles carry no FP32 rate, so it is the BF16 tensor rate x FP32_OF_BF16."""
        if precision == "fp32":
            return (self.tflops.get("fp32") or FP32_OF_BF16 * (self.tflops.get("bf16") or self.tflops.get("fp16") or 1.0)) * 1e12
        order = {"fp4": ("fp4", "fp8", "bf16", "fp16"), "fp8": ("fp8", "bf16", "fp16"),
                 "int8": ("int8", "fp8", "bf16", "fp16"), "bf16": ("bf16", "fp16"), "fp16": ("fp16", "bf16")}
        for key in order.get(precision, ("bf16", "fp16")):
            value = self.tflops.get(key)
            if value:
                return value * 1e12
        return max(self.tflops.values(), default=1.0) * 1e12


# FP32 (non-tensor) against dense BF16 tensor throughput on the datacenter parts most plans target:
# A100 19.5 / 312 = 0.0625, H100 SXM 66.9 / 989.5 = 0.0676 TFLOPS (NVIDIA datasheets). GeForce and
# workstation Ada / Blackwell cards keep a larger FP32 share (RTX 4090 82.6 / 165), so there it is a floor.
FP32_OF_BF16 = 0.0676


@dataclass(frozen=True)
class KVRead:
    """One kind of cache layer on one rank (of the busiest pipeline stage)."""

    kind: str  # full | sliding | chunked | mla | mamba
    layers: int
    token_bytes: int = 0  # per token per layer (attention kinds)
    window: int | None = None  # sliding window / chunk size
    state_bytes: int = 0  # per request per layer (mamba)


@dataclass(frozen=True)
class ModelPerf:
    """The model as the roofline sees it, per rank of the busiest pipeline stage."""

    tp: int
    pp: int
    layers: int  # decoder layers on the busiest stage
    hidden_size: int
    dense_bytes: int  # weights read every step: everything but routed experts
    expert_bytes: int = 0  # all routed experts held by the rank
    num_experts: int = 0
    experts_per_token: int = 0
    active_params: float = 0.0  # parameters one token goes through, whole model (all ranks, stages)
    # of which the LM head (vocabulary x hidden): vLLM computes logits only at each scheduled request's last
    # position (v1/worker/gpu_model_runner.py: compute_logits(hidden_states[logits_indices]), one index per
    # request), so a prompt chunk of n tokens runs it once, not n times
    lm_head_params: float = 0.0
    attn_flops_per_pair: float = 0.0  # FLOPs per (query token, context token) pair, per rank and stage
    kv: tuple[KVRead, ...] = ()
    compute_precision: str = "bf16"  # bf16 | fp16 | fp8 | int8 | fp4 (what the GEMMs run in)
    weight_kernel: str = "dense"  # dense | w4a16 | w8a16 (weight-only kernels dequantise on the fly)
    weight_format: str = ""  # the checkpoint's 4-bit float format where it matters ("mxfp4"), else ""
    moe_layers: int = 0
    expert_width: int = 0  # one expert's intermediate size on this rank (moe_intermediate_size / tp)
    gemm_kernels: int = 0  # GEMM kernels per step on a rank of the busiest stage; 0: 4 per layer
    shared_experts: int = 0  # shared experts of an MoE layer (DeepSeek, Qwen2-MoE)
    # DeepSeek sparse attention: each query attends to at most `sparse_topk` context tokens, chosen by an
    # indexer that scores every context token (`indexer_flops_per_pair` FLOPs per pair, per rank and stage)
    sparse_topk: int = 0
    indexer_flops_per_pair: float = 0.0
    # weights this rank keeps in host memory (--cpu-offload-gb): read over the host link in every forward pass
    # (vLLM's UVA offloader: "the GPU can then directly access the CPU memory ... at the cost of PCIe bandwidth")
    host_bytes: float = 0.0
    # of which routed experts: the GPU reads them in place, so only the experts a batch touches cross the link
    host_expert_bytes: float = 0.0
    # pipeline parallel with one batch pushed through the stages in turn, not pp micro-batches
    # (pipeline_microbatches): async scheduling on Model Runner V1 puts every running request in every batch
    pp_serial: bool = False
    # data-parallel ranks whose tokens every fused-MoE layer runs together (--data-parallel-size of an MoE): vLLM
    # spreads the routed experts over all TP x DP ranks (expert_bytes holds this rank's 1/(TP x DP)), gathers the
    # DP ranks' hidden states before each MoE layer and scatters the outputs back after it (naive dispatch /
    # combine: 0.32 fused_moe/runner/moe_runner.py do_naive_dispatch_combine "dp_size > 1"; 0.8.5
    # fused_moe/layer.py), and runs the DP ranks' forward passes in step (an idle rank runs a dummy batch). So a
    # step's MoE layers touch experts for moe_dp x its tokens, and each moves (moe_dp - 1) x its tokens' hidden
    # states in and out (moe_dispatch_seconds). 1: no data parallelism, or a dense model (independent replicas)
    moe_dp: int = 1
    # speculative decoding (--speculative-config): draft tokens a step (k), and what drafting them costs on this rank:
    # the drafter's weights, read once per draft pass (an EAGLE head or MTP layer; a draft model: all of it; n-gram
    # proposals: nothing on the GPU), and its decoder layers' GEMM kernels (draft_seconds)
    spec_tokens: int = 0
    draft_bytes: float = 0.0
    draft_layers: int = 0

    def host_seconds(self, gpu: GpuPerf, tokens: float) -> float:
        """Time to read this step's share of the host-resident weights (--cpu-offload-gb)."""
        if not self.host_bytes:
            return 0.0
        dense = self.host_bytes - self.host_expert_bytes
        return (dense + self.host_expert_bytes * self.touched_expert_fraction(tokens * self.moe_dp)) / gpu.host_link_bytes_s

    def attention_flops(self, decode: int, context_sum: float, prefill_tokens: float, prefill_pairs: float,
                        prefill_rate: float = 1.0) -> float:
        """Attention FLOPs of one step: decode queries over their contexts, prompt tokens over theirs. The
        prompt tokens' FLOPs are divided by `prefill_rate` (Efficiency.prefill_attention: the prefill attention
        kernel's rate relative to the GEMMs'), so that the result converts to time at the GEMM rate."""
        slow = 1.0 / prefill_rate
        pairs = context_sum + prefill_pairs * slow
        if not self.sparse_topk:
            return self.attn_flops_per_pair * pairs
        attended = (min(context_sum, decode * self.sparse_topk)
                    + min(prefill_pairs, prefill_tokens * self.sparse_topk) * slow)
        return self.attn_flops_per_pair * attended + self.indexer_flops_per_pair * pairs

    def kernels_seconds(self, eff: Efficiency) -> float:
        """Fixed kernel costs of the linear layers of one step on one stage: GEMMs, plus W8A8's
        activation quantisation before each."""
        n = self.gemm_kernels or GEMMS_PER_LAYER * self.layers
        # W8A8 quantises each GEMM's input to FP8 / INT8 first; NVFP4's W4A4 linear layers likewise to FP4
        # (vLLM ModelOptNvFp4LinearMethod / CompressedTensorsW4A4Fp4.apply: scaled_fp4_quant, then the FP4 GEMM).
        # MXFP4 checkpoints (gpt-oss) quantize only the routed experts, whose path is counted apart (stage_moe_layers)
        quant = self.weight_kernel == "dense" and (self.compute_precision in ("fp8", "int8")
                                                  or (self.compute_precision == "fp4" and self.weight_format != "mxfp4"))
        moe = eff.moe_layer_s + (2 * eff.gemm_kernel_s if self.shared_experts else 0.0)
        return n * (eff.gemm_kernel_s + (eff.quant_kernel_s if quant else 0.0)) + self.stage_moe_layers * moe

    @property
    def batches_in_flight(self) -> int:
        """The most micro-batches a pipeline-parallel step runs as (pipeline_microbatches): pp, or 1 where one
        batch passes the stages in turn (pp_serial)."""
        return 1 if self.pp_serial else self.pp

    @property
    def stage_moe_layers(self) -> int:
        """Fused-MoE layers on the busiest stage that pay MOE_LAYER_S (not MXFP4's fused routing path)."""
        if not self.is_moe or self.weight_format == "mxfp4":
            return 0
        return min(self.layers, -(-self.moe_layers // max(self.pp, 1)))

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0 and self.experts_per_token > 0

    def touched_expert_fraction(self, tokens: float) -> float:
        """Expected fraction of a layer's experts a batch of `tokens` tokens routes to:
        1 - (1 - k/E)^B (each token picks k of E experts; uniform routing)."""
        if not self.is_moe or tokens <= 0:
            return 0.0
        return 1.0 - (1.0 - self.experts_per_token / self.num_experts) ** tokens

    def weight_bytes_read(self, tokens: float) -> float:
        return self.dense_bytes + self.expert_bytes * self.touched_expert_fraction(tokens * self.moe_dp)

    def kv_bytes_read(self, sequences: int, context_sum: float) -> float:
        """KV / state bytes one step reads for `sequences` running sequences whose contexts sum to
        `context_sum` tokens (sliding / chunked layers read at most their window per sequence)."""
        total = 0.0
        for g in self.kv:
            if g.kind in ("full", "mla"):
                total += g.layers * g.token_bytes * context_sum
            elif g.kind in ("sliding", "chunked"):
                capped = min(context_sum, sequences * float(g.window or context_sum))
                total += g.layers * g.token_bytes * capped
            elif g.kind == "mamba":
                total += 2 * g.layers * g.state_bytes * sequences  # read and written back
        return total

    def kv_bytes_per_token(self) -> int:
        """Bytes one new token adds to the cache on this rank (attention layers)."""
        return sum(g.layers * g.token_bytes for g in self.kv if g.kind != "mamba")

    def flops(self, tokens: float, attention_pairs: float) -> float:
        per_rank = self.active_params / (self.tp * self.pp)
        return 2.0 * per_rank * tokens + self.attn_flops_per_pair * attention_pairs


# --------------------------------------------------------------------------- efficiency


# Fixed cost of one GEMM kernel inside a CUDA graph, and of the activation-quantisation kernel W8A8
# layers run before each GEMM, measured on an H200 under CUDA graphs (benchmarks/gpu_probe_shapes.py,
# benchmarks/data/gpu-probe-h200-shapes.json): at 1 token, BF16 layers take weights / 4.28 TB/s (the
# copy bandwidth) plus 3.8 us per GEMM (8B TP1: 3.743 ms for 128 GEMMs of 13.96 GB -> 3.76 us each;
# 70B TP4: 9.183 ms for 320 GEMMs of 34.2 GB -> 3.73 us; 8B TP4: 4.6 us), FP8 the same with their 1-byte
# weights (8B: 2.088 ms -> 3.57 us), and a bf16->fp8 cast before each GEMM adds 1.4 us (8B: 2.268 ms,
# 70B TP4: 5.531 ms vs 5.094). So FP8 decode is ~1.65x faster than BF16 here, not 2x, because of these
# fixed costs, not a slower weight stream. (The eager probe's 2.93 TB/s for FP8 at small M was ~18 us
# per Python launch of torch._scaled_mm, not the GPU.)
GEMM_KERNEL_S = 3.8e-6
QUANT_KERNEL_S = 1.4e-6
# A fused-MoE layer's fixed cost per step beyond its weight stream. vLLM's benchmarks/kernels/benchmark_moe.py
# times routing top-k plus the fused-MoE kernels (align, two grouped GEMMs, activation, sum) in a CUDA graph;
# fitting time = fixed + touched-expert bytes / bandwidth over batches 1 - 16 to the timings published in vLLM
# PRs (benchmarks/data/moe-kernel-timings.md: each with its PR, shapes and GPU) gives 32 - 36 us fixed on
# H100 / H200 (vllm#24700: Mixtral BF16 TP2 36 us, Qwen3-30B-A3B FP8 32 us; vllm#36554 / #36559: DeepSeek-R1
# FP8 TP2 on H200 33 us) -- a floor those PRs also show for expert slices whose
# bytes take 3 - 10 us. Of that, the two grouped GEMMs' launch cost is in GEMMS_PER_LAYER already; the router
# GEMM, which the benchmark leaves out, is one GEMM more: 32 - 2 x 3.8 + 3.8 = 28.2 us. Shared experts add their
# MLP's two GEMMs (kernels_seconds). Not fitted. The MXFP4 path of gpt-oss (OpenAI's triton_kernels
# matmul_ogs: gather, SwiGLU and combine fused into the two GEMMs, one routing launch) has no align, activation
# or sum kernels and is left out (ModelPerf.stage_moe_layers). Round 37: on the public runs this moves the
# median signed TPOT error of MoE runs at one or two concurrent requests from -31 % to -21 % (median absolute
# error of all held-out runs: tokens/s 10.5 %, TPOT 12.7 -> 12.6 %, TTFT 27.6 -> 28.0 %).
MOE_BENCH_FIXED_S = 32e-6
MOE_LAYER_S = MOE_BENCH_FIXED_S - 2 * GEMM_KERNEL_S + GEMM_KERNEL_S


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions of the datasheet peaks and fixed costs, for one GPU + precision."""

    bandwidth: float = 0.75  # fraction of peak memory bandwidth a decode step achieves
    compute: float = 0.55  # fraction of dense peak FLOPs a prefill-heavy step achieves
    step_overhead_s: float = 2.5e-3  # per engine step (scheduler, sampling, launches)
    per_seq_overhead_s: float = 2.0e-5  # per running sequence per step
    allreduce_latency_s: float = 1.2e-5  # one small all-reduce over NVLink / xGMI
    moe_compute: float = 0.5  # grouped-GEMM efficiency relative to dense GEMMs (wide experts)
    # experts narrower than this per rank (fine-grained MoE, or TP splitting each expert) run their
    # grouped GEMMs proportionally less efficiently: small N tiles leave the tensor cores idle
    moe_width_ref: float = 1024.0
    # fixed cost of one fused-MoE layer in a step beyond its grouped GEMMs' weight stream and FLOPs (measured,
    # not fitted: MOE_LAYER_S above)
    moe_layer_s: float = MOE_LAYER_S
    request_overhead_s: float = 0.01  # API server work per request before the engine sees it (serial)
    # fixed cost per GEMM kernel and per activation-quantisation kernel in a CUDA graph (measured, not
    # fitted: GEMM_KERNEL_S, QUANT_KERNEL_S above)
    gemm_kernel_s: float = GEMM_KERNEL_S
    quant_kernel_s: float = QUANT_KERNEL_S
    # ROCm builds of vLLM before 0.8 (no AITER kernels, V0 engine) ran far below the roofline on MI300X
    rocm_legacy: float = 0.35
    # the V0 engine (vLLM < 0.8) processes every running sequence's output (sampling results,
    # detokenisation, output objects; with --disable-frontend-multiprocessing the HTTP stream too)
    # synchronously in its step loop; V1 moved that to the front-end process and overlaps it
    v0_seq_factor: float = 1.0
    # Ampere (A100, sm 8.x) reaches a larger fraction of its dense peak in a serving step than Hopper,
    # for which `compute` is fitted: a smaller peak is easier to fill with the same GEMM and attention
    # shapes (MAMF, best shape: A100 SXM 86.9 % vs H100 SXM 80.3 %; at LLM shapes an H200 reached 67 %,
    # benchmarks/data/gpu-probe-h200.json); fitted, bounded below by the MAMF ratio
    ampere_compute: float = 1.0
    # The rate at which a W8A8-FP8 fused-MoE layer streams its routed experts' weights, as a fraction of
    # the dense GEMMs' weight stream (`bandwidth`); fitted on public runs (benchmarks/perf_accuracy.py).
    # Every FP8 MoE checkpoint in the public runs decodes slower than its expert bytes at `bandwidth`
    # allow (DeepSeek-R1 on H200 and MI300X, GLM-4.6-FP8 on H100 and RTX PRO 6000, MiniMax-M2 on H20,
    # Qwen3-235B-FP8 on H100; five publishers), while BF16 and weight-only MoE do not. The FP8 MoE path runs
    # other kernels than the dense FP8 GEMMs (grouped GEMMs with per-block or per-channel scales, Triton /
    # DeepGEMM / CUTLASS by version and GPU); which of their costs it is was not measured (no GPU), so the
    # rate is fitted, not derived. See `expert_stream`.
    fp8_moe_stream: float = 1.0
    # the rate at which other routed experts are streamed, where a kernel path is known to run below the
    # weight stream (efficiency_for: ROCM_MXFP4_EXPERT_STREAM); 1 elsewhere
    expert_stream_scale: float = 1.0
    # the rate at which every GEMM's weights (dense and routed) are read, as a fraction of `bandwidth`, where a
    # kernel path is known to run below it (efficiency_for: ROCM_W4A16_STREAM); 1 elsewhere
    weight_stream: float = 1.0
    # The compute rate of a 4-bit weight-only GEMM (Marlin: AWQ, GPTQ, MXFP4 without native FP4 units) as a
    # fraction of a dense one's at the same shapes; fitted (see KERNEL_COMPUTE_FACTOR for the prior)
    w4a16_compute: float = 0.6
    # The fraction of the 16-bit dense peak the attention kernels reach (efficiency_for: `compute` with the GPU
    # family's factors but none of the GEMM kernel's or the weights' precision; 0: `compute` itself). Attention
    # runs on 16-bit query, key and value whatever the linear layers compute in (FP8 / INT8 / 4-bit weights):
    # see attention_peak_flops
    attention_compute: float = 0.0
    # The compute rate of an MXFP4 MoE's GEMMs on a GPU that has FP4 weights but no FP4 tensor units and does
    # not fall back to Marlin (Hopper: OpenAI's triton_kernels matmul_ogs unpacks the 4-bit experts to BF16
    # inside the kernel), as a fraction of a dense BF16 GEMM's at the same shapes; fitted (1: the dense rate)
    mxfp4_upcast_compute: float = 1.0
    # --enforce-eager: the host's cost of dispatching one decoder layer's kernels (with_eager; 0: CUDA
    # graphs replay the step without it)
    eager_dispatch_s: float = 0.0
    # CUDA graphs are captured up to `graph_max_tokens` tokens a step (0: no limit); a larger step runs
    # the compiled model without a graph and pays `graphless_dispatch_s` of host dispatch per layer
    graph_max_tokens: int = 0
    graphless_dispatch_s: float = 0.0
    # async scheduling (vLLM >= 0.14 on GPUs): the share of `step_overhead_s` that is host work (scheduling,
    # input preparation, output processing) done for step N+1 while the GPU runs step N; with the
    # per-sequence cost it overlaps the GPU's work instead of adding to it. 0: the release's default
    # (ASYNC_HOST_SHARE where async scheduling is on, estimate/serving.py predict); negative: the
    # synchronous loop in any case.
    host_overlap: float = 0.0
    # the share of the per-sequence cost that overlaps the GPU's work under async scheduling (1: all of it, the
    # default loop of 0.14+; the opt-in loop of 0.10 - 0.13 hides as little of it as of the fixed cost)
    host_overlap_seq: float = 1.0
    # the rate of the prompt tokens' attention kernels relative to the GEMMs' (`compute`): 1 where one compute
    # fraction serves both (the fitted runs); efficiency_for lowers it for the old engine on ROCm (ROCM_V0_PREFIX_ATTENTION)
    prefill_attention: float = 1.0
    source: str = "estimated"
    note: str = ""


# Async scheduling (vLLM's default from 0.14 on GPUs, engine/versions.py; plan/performance.py
# async_scheduling_runs says where it applies): the engine core schedules and prepares step N+1 and processes
# step N-1's outputs while the GPU runs step N, so that host work overlaps the GPU's instead of adding to it,
# and a step takes max(GPU work + the GPU-side rest of the fixed cost, host work). The fitted step overhead
# (`Efficiency.step_overhead_s`) comes from runs of the synchronous loop (every bundled run predates 0.14) and
# holds both kinds of cost, which no public run separates; this is the share counted as host work, with the
# per-sequence cost (all host-side: per-request input and output bookkeeping). Chosen on the asynchronous runs
# of the held-out files collected-bench-results-2 ... -7 (116 runs, 69 with a TPOT): their median TPOT error
# is 25.8 % with no overlap, 15.4 / 12.7 / 12.3 / 12.6 / 13.1 % at 0.6 / 0.7 / 0.8 / 0.9 / 1.0 (round 10 had
# tried 1.0 on three publishers and kept none); 0.8 is the middle of that plateau. The runs of
# collected-bench-results-8 (collected after) check it: a Qwen2.5-0.5B on an RTX 5070 Ti (vLLM 0.22)
# decodes at 2.0-2.2 ms a token at 1-16 clients, twice the synchronous model's 4.0-4.5 ms. README, round 23.
ASYNC_HOST_SHARE = 0.8
# Before 0.14 async scheduling is opt-in (--async-scheduling, from 0.10.0) and overlaps less: Anyscale's A/B runs
# of gpt-oss-20b at TP 8 on H100s under vLLM 0.11 (collected-bench-results-33, the same server command with and
# without the flag, 5,000-token prompts, 1 / 4 / 8 clients) decode at 0.77 / 0.75 / 0.84 x the synchronous
# loop's TPOT; the 0.14 share gives 0.54 - 0.56 x, a share of 0.3 of both the fixed and the per-sequence host work
# 0.80 / 0.82 / 0.80 x. Chosen on those three pairs (one publisher); GPUStack's six gpt-oss A/B pairs on 0.10.2 /
# 0.11 (1,000-prompt bursts) then replay at 1.00 - 1.12 x the synchronous tokens/s against 1.01 - 1.16 x measured,
# 1.00 - 1.35 x with the per-sequence cost fully overlapped (Efficiency.host_overlap_seq).
EARLY_ASYNC_HOST_SHARE = 0.3


# Best-shape matmul efficiency of an A100 SXM over an H100 SXM (86.9 % vs 80.3 % of dense BF16 peak,
# stas00/ml-engineering compute/accelerator, "Maximum Achievable Matmul FLOPS" table): the least
# `Efficiency.ampere_compute` may be (benchmarks/perf_accuracy.py bounds the fit with it)
AMPERE_MAMF_RATIO = 0.869 / 0.803

# A GeForce Blackwell card (RTX 50xx, sm 12.0) runs real BF16 GEMMs above the FP32-accumulate rate its
# datasheet lists (which is what its profile's tflops_bf16 holds): on an RTX 5090, torch.matmul at
# (16384, 8192, 1280) measured 224.3 TFLOP/s against the listed 209.5 (1.07; its raw BF16 mma with FP32
# accumulate 370.6), main-horse.github.io/posts/5090-mm-perf. An H100 SXM's best matmul reaches 0.803 of
# its peak (AMPERE_MAMF_RATIO's table): a 5090's best matmul is 1.07 / 0.803 = 1.33 times an H100's share
# of the listed peak. (Measured on one card and one shape; applied to the GeForce RTX 50 series, not to the
# RTX PRO cards, whose datasheets list the full rate.)
# How much of that best matmul a serving step gets follows the GEMM path, not the datasheet: sm_120 has no
# wgmma / TMA warp-specialised kernels and runs the mma.sync GEMMs of the Ampere / Ada generation, so its
# share is the A100's (the fitted `ampere_compute` over AMPERE_MAMF_RATIO: 1.249 / 1.082 = 1.154 times the
# Hopper share of the best matmul), not the H100's. Together 1.33 x 1.154 = 1.54 times the fitted (Hopper)
# compute fraction, 0.67 of the 5090's listed peak (efficiency_for). Round 13 had 1.33 (the H100's share);
# round 25 took the A100's after the RTX 50 runs of four held-out publishers (pegainfer / openinfer,
# cloudrift, AccelMark, pillaiharish) prefilled faster than modelled: all held-out runs 11.9 / 12.4 / 30.0 %
# -> 11.7 / 12.3 / 29.2 % (tokens/s, TPOT, TTFT), those runs seen, so evidence rather than a blind test (README).
GEFORCE_BLACKWELL_MATMUL_RATIO = (224.3 / 209.5) / 0.803
# A GeForce Ada card (RTX 40xx, sm 8.9) likewise: its datasheet's BF16 rate is the FP32-accumulate one (165.2
# TFLOPS on an RTX 4090, the profile's tflops_bf16), and Stas Bekman's mamf-finder (the method of
# AMPERE_MAMF_RATIO's table), run on an RTX 4090, found 178.5 TFLOP/s at its best shape (15360 x 6784 x 8192;
# mag-/gpu_benchmark README, "Stats", which lists the H100 SXM at 792.1 of 989, the table's 0.80): 1.08 of the
# listed rate, as the RTX 5090's 1.07. Applied to the GeForce RTX 40 series (their listed BF16 rate is half the
# FP16-accumulate one); the workstation and datacenter Ada cards (RTX 6000 / 5000 Ada, L40S, L4, L20) list the
# full rate and keep the plain prior. Unlike the RTX 50 series it keeps the Hopper share of that best matmul:
# with the A100's share on top (1.49 in all) the leave-one-publisher-out refits moved `ampere_compute`, which
# the two would then share, and every fold got worse (12.3 / 19.8 / 44.3 -> 12.7 / 22.7 / 47.1 %); with the
# ratio alone 12.3 / 21.1 / 41.8 %, and the held-out files, scored with the shipped parameters, 10.4 / 12.8 /
# 28.6 -> 10.4 / 12.5 / 25.5 % (README, round 36). Chosen from the matmul measurement, not fitted; the held-out
# RTX 40 runs (three publishers, TTFT +32 % median on 35 RTX 4090 runs) are what drew attention to it.
GEFORCE_ADA_MATMUL_RATIO = (178.5 / 165.2) / 0.803

# Ampere (A100 / A800 HBM2e, A30 HBM2, A10 / A40 / RTX 30 GDDR6(X)) streams weights at a lower share of its datasheet
# bandwidth than the Hopper parts the fitted `bandwidth` comes from (the H200 probe's 1-token GEMMs: 4.28 of 4.8 TB/s,
# 0.89; GEMM_KERNEL_S). PyTorch's gpt-fast measured Llama-2-7B decoding at 1,397 GB/s on an A100 80GB and puts that
# card's achievable peak at "about 1700 GB/s" of its 2,039 (0.83; github.com/pytorch-labs/gpt-fast README, A100
# tables and the note under "Speculative Sampling"): 0.94 of the Hopper share. The held-out Ampere runs decoded
# slower than modelled (TPOT -10.5 % median on 67 A100 80GB runs, up to -20 % at one client where the weight stream
# is most of a step). The factor was chosen as round 42's ROCm FP8 one: leaving each of the 21 held-out publishers
# with Ampere runs out in turn and taking the grid value (0.8 - 1.0) that minimises the others' summed median
# errors: 0.9 in 20 folds, 0.85 in one; on the left-out publishers (285 runs) tokens/s 9.7 -> 7.1 %, TPOT 10.3 ->
# 8.0 %, TTFT 22.1 -> 23.4 % (pooled medians). So the held-out Ampere runs are in-sample for this constant (README,
# round 43).
AMPERE_BANDWIDTH_FACTOR = 0.9

# Family priors relative to the fitted (Hopper/Ampere NVIDIA) efficiencies, chosen from public
# microbenchmarks, not fitted: MI300X sustains ~4.1-4.3 of 5.3 TB/s in stream tests and ~600-700 of
# 1307 dense BF16 TFLOPS in GEMM sweeps (vs ~3.0 of 3.35 TB/s and ~650-750 of 989 on H100 SXM);
# GeForce / workstation cards reach their (lower) peaks about as well as datacenter ones (GeForce
# Blackwell better: GEFORCE_BLACKWELL_MATMUL_RATIO). Ampere's bandwidth factor alone was chosen on public serving
# runs (above).
FAMILY_PRIORS: dict[str, tuple[float, float, float]] = {
    # family: (bandwidth factor, compute factor, overhead factor)
    "ampere": (AMPERE_BANDWIDTH_FACTOR, 1.0, 1.0),
    "blackwell-geforce": (1.0, GEFORCE_BLACKWELL_MATMUL_RATIO, 1.0),
    "ada-geforce": (1.0, GEFORCE_ADA_MATMUL_RATIO, 1.0),
    "cdna3": (0.88, 0.70, 1.3),
    "cdna4": (0.88, 0.70, 1.3),
    "cdna2": (0.80, 0.60, 1.5),
    # MI100 (gfx908): no public microbenchmarks to set its own; CDNA 2's priors, not fitted (the MI100 runs
    # of collected-bench-results-18.jsonl were scored blind with them)
    "cdna1": (0.80, 0.60, 1.5),
    # Radeon RX 7900 / 9000 and Radeon PRO / AI PRO (RDNA 3 / 4): no public microbenchmarks of their WMMA GEMMs
    # or stream rates were found; they run the same ROCm stack (ROCM_ATTN / Triton attention, hipBLASLt GEMMs,
    # RCCL), so CDNA 3's priors, not fitted
    "rdna3": (0.88, 0.70, 1.3),
    "rdna4": (0.88, 0.70, 1.3),
    "volta": (0.95, 0.85, 1.3),
    "turing": (0.95, 0.85, 1.3),
    "cpu": (0.50, 0.30, 3.0),
}
# Weight-only kernels (Marlin / AWQ W4A16) read 4-bit weights but dequantise inside the GEMM: near the
# bandwidth roofline at small batches, below the dense GEMM rate at large ones (Marlin paper,
# arXiv 2408.11743, fig. 1: speedup over FP16 falls from ~3.9x at batch 16 to ~1.5x at 128 and below
# 1x past that). The factor is the compute rate relative to a dense GEMM. W4A16's is fitted
# (`Efficiency.w4a16_compute`); 0.6, read off that figure, is its prior (the value a fit with no W4A16
# run keeps) and was the fixed factor until round 19.
KERNEL_COMPUTE_FACTOR = {"dense": 1.0, "w8a16": 0.8}
# FP8 GEMMs reach a lower fraction of their (doubled) peak than BF16 ones: measured on an H200 with
# Llama-3.1-8B-shaped linear layers (benchmarks/gpu_probe.py, benchmarks/data/gpu-probe-h200.json), at
# 1024-8192 tokens FP8 plateaus at 1189 TFLOP/s = 0.601 of 1979 against BF16's 659 TFLOP/s = 0.666 of
# 989.5 (ratio 0.902). The fitted compute fraction is a BF16 one; this scales it. (At small M the FP8
# weights stream as fast as BF16 ones once launches are out of the way: see GEMM_KERNEL_S.)
PRECISION_COMPUTE_FACTOR = {"fp8": 0.902}
# GEMM kernels per decoder layer: qkv, o, gate_up, down (vLLM fuses q/k/v and gate/up; a fused MoE
# layer runs its two grouped GEMMs plus the router and, where present, the shared expert)
GEMMS_PER_LAYER = 4


def expert_stream(model: ModelPerf, eff: Efficiency) -> float:
    """Fraction of the weight-stream rate at which this model's routed experts are read: `fp8_moe_stream`
    for an MoE whose experts run as W8A8 FP8 (not weight-only kernels), else 1."""
    if model.is_moe and model.weight_kernel == "dense" and model.compute_precision == "fp8":
        return min(max(eff.fp8_moe_stream, 0.05), 1.0)
    return min(max(eff.expert_stream_scale, 0.05), 1.0)


def attention_peak_flops(model: ModelPerf, gpu: GpuPerf, eff: Efficiency) -> float:
    """The FLOP/s the attention kernels reach: the 16-bit dense peak (fp32 under --dtype float32) at
    `attention_compute`. vLLM's attention backends (FlashAttention, FlashInfer, Triton) compute on the model's
    16-bit activations; quantized linear layers (FP8 / INT8 W8A8, NVFP4, weight-only 4-bit) change the GEMMs'
    rate, not theirs (an FP8 KV cache is dequantized or, with FlashAttention 3, a case not modelled)."""
    precision = model.compute_precision if model.compute_precision in ("bf16", "fp16", "fp32") else "bf16"
    return gpu.peak_flops(precision) * (eff.attention_compute or eff.compute)


def kernel_compute_factor(model: ModelPerf, eff: Efficiency) -> float:
    """The model's GEMM compute rate relative to a dense GEMM's, by its weight kernel."""
    if model.weight_kernel == "w4a16":
        return eff.w4a16_compute
    if mxfp4_upcast(model):
        return eff.mxfp4_upcast_compute
    return KERNEL_COMPUTE_FACTOR.get(model.weight_kernel, 1.0)


def mxfp4_upcast(model: ModelPerf) -> bool:
    """Whether the model's MXFP4 experts run as BF16 GEMMs over weights unpacked inside the kernel (Hopper's
    triton matmul_ogs path: plan/performance.py maps MXFP4 there to dense BF16 compute)."""
    return (model.is_moe and model.weight_format == "mxfp4" and model.weight_kernel == "dense"
            and model.compute_precision in ("bf16", "fp16"))


def rocm_fp8_gemms(gpu: GpuPerf, model: ModelPerf, v0: bool) -> bool:
    """Whether the model's linear layers run as W8A8 FP8 GEMMs on an AMD GPU under the V1 engine
    (ROCM_FP8_COMPUTE_FACTOR)."""
    return gpu.vendor == "amd" and not v0 and model.weight_kernel == "dense" and model.compute_precision == "fp8"


def rocm_w4a16_weights(gpu: GpuPerf, model: ModelPerf) -> bool:
    """Whether the model's 4-bit weight-only GEMMs run on ROCm, where vLLM has no Marlin kernels
    (ROCM_W4A16_STREAM); MXFP4 experts have their own rule (ROCM_MXFP4_EXPERT_STREAM)."""
    return gpu.vendor == "amd" and model.weight_kernel == "w4a16" and model.weight_format != "mxfp4"


def rocm_legacy_applies(gpu: GpuPerf, model: ModelPerf, vllm_version: tuple[int, int, int] | None) -> bool:
    """Whether `Efficiency.rocm_legacy` slows this run: a 16-bit dense model on a ROCm build of vLLM before 0.8.
    FP8 checkpoints there run their linear layers as hipBLASLt FP8 GEMMs (torch._scaled_mm: ROCm has no
    CUTLASS, 0.6.3.post1 quantization/utils/w8a8_utils.py apply_fp8_linear) and ran near the unpenalised rates:
    Oracle's 8x MI300X Llama-3.1-405B FP8 latency batches (collected-bench-results-12), AMD's 0.6.6 dev-docker
    70B / 405B FP8 tables (-8) and dstack's two 405B FP8 checkpoints on 0.6.3 / 0.6.4 (bundled) -- 18 runs of three
    publishers, median abs tokens/s error 41 % with the factor, 22 % without. The factor itself is set by dstack's
    BF16 405B sweeps and agrees with Argonne's BF16 Llama-3-8B runs on 0.6.1 (-7: -27 / +18 / +11 %).
    Weight-only 4-bit models are not slowed either (round 32): AWQ on ROCm runs vLLM's Triton awq_gemm for small
    batches and, from 256 tokens, dequantizes and multiplies in float16 (0.6.1 quantization/awq.py
    FP16_MATMUL_HEURISTIC_CONDITION); vllm#8646's Qwen2-7B-AWQ throughput and latency runs on one MI300 / MI250 on
    0.6.1 replayed 25 - 85 % slow with the factor (collected-bench-results-20, scored blind: 78 % median tokens/s
    error; the rule was then chosen on them, so for it they are not blind)."""
    if gpu.vendor != "amd" or vllm_version is None or vllm_version >= (0, 8, 0):
        return False
    return model.weight_kernel == "dense" and model.compute_precision != "fp8"


# MXFP4 MoE on ROCm without FP4 units (every AMD GPU but gfx950): the experts' 4-bit weights are unpacked inside
# the GEMM (vLLM 0.32 fused_moe/oracle/mxfp4.py picks, for gpt-oss, the AITER backends where AITER is on, else the
# OAI Triton matmul_ogs kernels), and the public runs decode far slower than their 4-bit expert bytes at the dense
# weight-stream rate allow: gpt-oss-20b /
# 120b on one MI300X (held-out files -2 and -13, two publishers) ran 1.5 - 1.8 x the modelled TPOT. Chosen on those
# six runs (tokens/s 69 -> 7 %, TPOT 42 -> 11 % median abs error at 0.45, the best of 0.35 - 1.0), then scored
# blind on the Radeon AI PRO R9700's gpt-oss runs (-27, another publisher and GPU family): 17 / 55 / 44 -> 12 / 19 /
# 20 % (tokens/s, TPOT, TTFT). The rate at which such experts stream, as a fraction of the dense weight stream.
ROCM_MXFP4_EXPERT_STREAM = 0.45

# 4-bit weight-only GEMMs (GPTQ / AWQ / compressed-tensors W4A16) on ROCm: vLLM has no Marlin kernels there
# (gptq_marlin / awq_marlin are CUDA-only; ROCm runs its ExLlama-derived GPTQ kernel or the AWQ / W4A16 Triton
# kernels), and the public runs decode far slower than their 4-bit weights at the dense weight-stream rate allow:
# at one to four clients, where the weight stream dominates a step, TPOT is modelled 33 % (kyuz0, Radeon AI PRO
# R9700, GPTQ / AWQ Qwen3-Coder-30B-A3B and Qwen3-Next-80B, held-out file -27) and 44 % (btbtyler09, 4x MI100,
# GPTQ Qwen3 / Qwen3.5 / Qwen3.6, files -18 and -44) too fast at the median with the CUDA rate. The rate at which
# such a GEMM reads its weights, as a fraction of the dense weight stream. Chosen by leaving each of the two
# publishers out: the R9700 runs alone give 0.5 (median TPOT -33 -> -1 %), which takes the MI100 runs from -44 to
# -34 % (tokens/s +61 -> +39 %: the MI100's BF16 / FP16 runs at TP 4 are 19 - 30 % fast as well, so not all of its
# gap is this kernel's); the MI100 runs alone want less than 0.4, which takes the R9700's TPOT to +18 %. Round 47;
# held-out TPOT 12.8 -> 12.5 %, TTFT 29.2 -> 28.9 % (median abs, 1,111 runs). Not measured on a GPU here.
ROCM_W4A16_STREAM = 0.5


# The old engine on ROCm runs a prompt chunk that has cached context before it (every chunk after a chunked
# prompt's first, or a prefix-cache hit) through PagedAttention.forward_prefix, the Triton prefix-prefill kernel
# (ops/prefix_prefill.py context_attention_fwd), not the flash-attention kernel that a whole prompt gets
# (0.6.4 attention/backends/rocm_flash_attn.py forward: "prefix-enabled attention"); the CUDA backend reads the
# paged cache in flash_attn_varlen_func instead. V0 chunks prompts whenever max_model_len > 32768
# (engine/versions.py v0_batch_defaults: Llama-3.x at its 128k default), 512 tokens a step. dstack's single
# requests of 10k - 128k tokens to Llama-3.1-405B (BF16, 8x MI300X, 0.6.3, bundled) take 12.3 / 23.8 / 66.5 /
# 210 / 734 s: a + b L^2 with the GEMMs' linear part as modelled and a quadratic part ~10x the attention FLOPs
# at the GEMM rate. The rate of prefill attention relative to the GEMMs' in that case, chosen on those five
# runs (TTFT -33 / -44 / -57 / -69 / -78 % -> -6 / -8 / -6 / -4 / -4 %); no held-out ROCm run of the old engine
# has prompts long enough to test it (those of 2k tokens move by a point or two).
ROCM_V0_PREFIX_ATTENTION = 0.1

# The fixed cost of each kernel of a decode step (GEMM_KERNEL_S, QUANT_KERNEL_S and MOE_LAYER_S: measured on
# Hopper in CUDA graphs) under ROCm's V1 engine, as a multiple of CUDA's. Every held-out ROCm publisher of
# 0.8+ runs at one to sixteen clients decoded slower than modelled with CUDA's costs (TPOT 16 - 69 % fast:
# one MI300X at TP 1 -- Millstone's Qwen3.5-122B-A10B, jagrutsharma's Qwen2.5-3B, wfwan's gpt-oss -- and eight
# MI355X at TP 8, llm-d and Moreh), while their large batches, where the weight stream dominates, were near.
# Chosen by leaving each ROCm publisher of the held-out files out in turn and taking the multiple (1 - 4, in
# steps of 0.5) that minimises the others' median TPOT error: 2.5 in 8 of 10 folds. On the left-out publishers
# the per-publisher median TPOT error went 21.0 -> 18.5 % (median of the ten), tokens/s 19.8 -> 16.3 % (11).
# Kernel launch and small-M tails cost more under HIP graphs than CUDA graphs; which share is which was not
# measured (no GPU here). The old engine's ROCm runs are covered by `Efficiency.rocm_legacy` instead.
ROCM_KERNEL_COST_FACTOR = 2.5

# W8A8 FP8 GEMMs under ROCm's V1 engine (hipBLASLt / AITER scaled GEMMs on MI300X, MI355X and the R9700) reach a
# smaller share of the FP8 peak than the H200-measured PRECISION_COMPUTE_FACTOR gives: the held-out ROCm FP8 runs
# of 0.8+ prefilled slower than modelled (median TTFT 21 - 50 % fast by GPU family and dense / MoE; 11 publishers,
# 72 runs), while the dense BF16 runs on the same GPUs did not (CDNA 3 +17 %, RDNA 4 +28 %). Chosen by leaving
# each of those publishers out in turn and taking the factor (0.4 - 1, a grid of eight) that minimises the others'
# summed median tokens/s, TPOT and TTFT errors: 0.6 - 0.7 in every fold; on the left-out publishers TTFT 38.1 ->
# 29.6 %, tokens/s 12.5 -> 12.1 %, TPOT 14.8 -> 17.7 % (pooled medians). Round 42. Not measured on a GPU here.
ROCM_FP8_COMPUTE_FACTOR = 0.65


def efficiency_for(base: Efficiency, gpu: GpuPerf, model: ModelPerf,
                   vllm_version: tuple[int, int, int] | None = None, *, v0_engine: bool | None = None,
                   chunked_prefill: bool = False) -> Efficiency:
    """The base efficiency for this GPU family, model and release. `v0_engine`: whether the old engine runs (its
    synchronous per-sequence output work, `Efficiency.v0_seq_factor`); None: as the release's default engine
    (V0 before 0.8). vLLM 0.8 - 0.10 run it with VLLM_USE_V1=0 or where the V1 oracle falls back.
    `chunked_prefill`: whether prompts are chunked (ROCM_V0_PREFIX_ATTENTION)."""
    bw, comp, over = FAMILY_PRIORS.get(gpu.family, (1.0, 1.0, 1.0))
    if gpu.family == "ampere":
        comp *= base.ampere_compute
    elif gpu.family == "blackwell-geforce":
        comp *= base.ampere_compute / AMPERE_MAMF_RATIO  # mma.sync GEMMs: the A100's share of the best matmul
    if rocm_legacy_applies(gpu, model, vllm_version):
        bw, comp = bw * base.rocm_legacy, comp * base.rocm_legacy
    v0 = v0_engine if v0_engine is not None else (vllm_version is not None and vllm_version < (0, 8, 0))
    attention = min(base.compute * comp, 0.95)  # before the GEMM-only factors below
    if rocm_fp8_gemms(gpu, model, v0):
        comp *= ROCM_FP8_COMPUTE_FACTOR
    seq = base.v0_seq_factor if v0 else 1.0
    precision = model.compute_precision if model.weight_kernel == "dense" else ""
    stream = base.expert_stream_scale
    if gpu.vendor == "amd" and model.weight_format == "mxfp4" and "fp4" not in gpu.tflops and model.is_moe:
        stream = ROCM_MXFP4_EXPERT_STREAM
    weights = ROCM_W4A16_STREAM if rocm_w4a16_weights(gpu, model) else base.weight_stream
    pa = ROCM_V0_PREFIX_ATTENTION if gpu.vendor == "amd" and v0 and chunked_prefill else base.prefill_attention
    kernel = ROCM_KERNEL_COST_FACTOR if gpu.vendor == "amd" and not v0 else 1.0
    return replace(
        base,
        gemm_kernel_s=base.gemm_kernel_s * kernel,
        quant_kernel_s=base.quant_kernel_s * kernel,
        moe_layer_s=base.moe_layer_s * kernel,
        prefill_attention=pa,
        expert_stream_scale=stream,
        weight_stream=weights,
        bandwidth=min(base.bandwidth * bw, 0.95),
        compute=min(base.compute * comp * kernel_compute_factor(model, base)
                    * PRECISION_COMPUTE_FACTOR.get(precision, 1.0), 0.95),
        attention_compute=attention,
        step_overhead_s=base.step_overhead_s * over,
        per_seq_overhead_s=base.per_seq_overhead_s * over * seq,
    )


# --enforce-eager: no CUDA graphs, so every kernel of a step is launched from Python (PyTorch dispatch
# plus the launch, tens of microseconds each). The host dispatches asynchronously, ahead of the GPU: a
# layer whose kernels run longer than their dispatch hides most of it, one whose kernels are short waits
# on it. Per decoder layer the step takes sqrt(gpu^2 + dispatch^2) (the same soft maximum as the GEMM
# roofline: neither side stays perfectly ahead of the other). The dispatch cost comes from the one stock
# public eager run with one request at a time: vllm#20469 (Qwen3-14B-AWQ, 40 layers, A100 80GB, vLLM
# 0.9.1 --enforce-eager): median TPOT 20.94 ms against 9.8 ms modelled with graphs, whose layers take
# 0.19 ms each on the GPU: sqrt(0.4685^2 - 0.19^2) = 0.43 ms ((20.94 - 2.2 ms of step overhead) / 40
# = 0.4685 ms a layer). That is a dense layer's; other layers scale it by what they launch (below). (Until
# round 43, without the Ampere bandwidth factor, the graphs' step was 8.8 ms, its layers 0.165 ms: 0.44 ms.)
EAGER_DISPATCH_PER_LAYER_S = 0.43e-3
# The dispatch cost scales with the kernels a layer launches, counted in vLLM's modules (0.32: qwen3.py,
# deepseek_v2.py, fused_moe/fused_moe.py fused_experts_impl). A dense GQA layer, the calibration's kind:
# two fused add + RMSNorms, qkv, rotary, KV-cache write, attention, o_proj, gate_up, SiLU-and-mul, down =
# 10. A fused-MoE block replaces the MLP's 3 with 7 (router GEMM, top-k softmax, moe_align_block_size,
# two grouped GEMMs, the activation, moe_sum); shared experts add their MLP and the sum (4); MLA adds
# the latent projections, their norm and the absorbed up-projections (4); tensor parallelism two
# all-reduces.
EAGER_LAUNCHES_DENSE_LAYER = 10
EAGER_LAUNCHES_MOE_EXTRA = 4
EAGER_LAUNCHES_SHARED_EXPERTS = 4
EAGER_LAUNCHES_MLA_EXTRA = 4
EAGER_LAUNCHES_TP_ALLREDUCE = 2


def eager_launch_factor(model: ModelPerf) -> float:
    """Kernels an average decoder layer of the model launches, relative to the calibration's dense layer."""
    total_layers = max(model.layers * model.pp, 1)
    moe_share = min(model.moe_layers / total_layers, 1.0) if model.is_moe else 0.0
    launches = float(EAGER_LAUNCHES_DENSE_LAYER)
    launches += moe_share * (EAGER_LAUNCHES_MOE_EXTRA + (EAGER_LAUNCHES_SHARED_EXPERTS if model.shared_experts else 0))
    if any(g.kind == "mla" for g in model.kv):
        launches += EAGER_LAUNCHES_MLA_EXTRA
    if model.tp > 1:
        launches += EAGER_LAUNCHES_TP_ALLREDUCE
    return launches / EAGER_LAUNCHES_DENSE_LAYER


def with_eager(eff: Efficiency, model: ModelPerf) -> Efficiency:
    """The efficiency of an --enforce-eager engine: each decoder layer's kernel dispatch on every step."""
    return replace(eff, eager_dispatch_s=EAGER_DISPATCH_PER_LAYER_S * eager_launch_factor(model))


def with_multi_step(eff: Efficiency, steps: int) -> Efficiency:
    """The old engine's multi-step scheduling (`--num-scheduler-steps k`, vLLM 0.5.x - 0.7.x, V0 only): the
    scheduler runs and the outputs are processed once per k forward passes (engine/llm_engine.py
    `_has_remaining_steps`; the model runner advances the k steps on the GPU), so the host's per-step work, fixed
    and per sequence, is paid once every k steps. Not modelled: prompts are admitted only at a round's start."""
    if steps <= 1:
        return eff
    return replace(eff, step_overhead_s=eff.step_overhead_s / steps, per_seq_overhead_s=eff.per_seq_overhead_s / steps)


def with_graph_limit(eff: Efficiency, model: ModelPerf, max_capture_tokens: int) -> Efficiency:
    """Steps of more tokens than the largest captured CUDA graph run the model without a graph (vLLM's
    CUDAGraphWrapper falls through above max_cudagraph_capture_size): each layer's kernels are dispatched
    by the host, as under --enforce-eager (GRAPHLESS_DISPATCH_SHARE of it: Inductor fuses some kernels)."""
    if max_capture_tokens <= 0 or eff.eager_dispatch_s > 0:
        return eff
    return replace(eff, graph_max_tokens=max_capture_tokens,
                   graphless_dispatch_s=EAGER_DISPATCH_PER_LAYER_S * eager_launch_factor(model) * GRAPHLESS_DISPATCH_SHARE)


# not fitted: the --enforce-eager dispatch cost as it stands (a compiled step launches somewhat fewer kernels)
GRAPHLESS_DISPATCH_SHARE = 1.0


def max_graph_tokens(max_num_seqs: int, max_num_batched_tokens: int, *, sm100: bool = False,
                     vllm_version: tuple[int, int, int] | None = None) -> int:
    """The largest step vLLM captures a CUDA graph for by default (config/vllm.py
    _set_cudagraph_sizes, read in 0.32): min(2 x max_num_seqs, 512 -- 1024 on sm 10.x in 0.32 --,
    max_num_batched_tokens). 0 for the V0 engine (< 0.8), whose batch effects the fit carries."""
    if vllm_version is not None and vllm_version < (0, 8, 0):
        return 0
    top = graph_capture_ceiling(sm100=sm100, vllm_version=vllm_version)
    return max(min(2 * max_num_seqs, top, max_num_batched_tokens), 1)


def graph_capture_ceiling(*, sm100: bool, vllm_version: tuple[int, int, int] | None) -> int:
    """The most tokens vLLM's default CUDA-graph sizes reach (config/vllm.py _set_cudagraph_sizes): 512, 1,024 on
    compute capability 10.x from 0.32 (no version: the newest)."""
    return 1024 if sm100 and (vllm_version is None or vllm_version >= (0, 32, 0)) else 512


def eager_stage_seconds(stage_s: float, layers: int, dispatch_s: float) -> float:
    """One stage's time under eager dispatch: per layer sqrt(gpu^2 + dispatch^2) (see above)."""
    if dispatch_s <= 0 or layers <= 0:
        return stage_s
    per = stage_s / layers
    return layers * sqrt(per * per + dispatch_s * dispatch_s)


# --------------------------------------------------------------------------- one step


@dataclass(frozen=True)
class StepCost:
    seconds: float
    memory_s: float
    compute_s: float
    comm_s: float
    overhead_s: float

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s > self.memory_s else "bandwidth"


# NCCL carrying the all-reduce over PCIe (more than two PCIe-only GPUs, or no peer-to-peer at all):
# vLLM's custom all-reduce returns early "because it's not supported on more than two PCIe-only GPUs"
# (vllm/distributed/device_communicators/custom_all_reduce.py, 0.5 to 0.32) and needs P2P besides, so
# NCCL's ring runs it: 2 (tp - 1) steps, each a PCIe hop, where two ranks take 2; and its bus bandwidth
# over PCIe is a fraction of the link's one-way rate. Both values were chosen on the bundled 4- and
# 8-GPU RTX 4090 runs (iog, collected-bench-results.jsonl) and checked on held-out publishers never
# used to choose them (Crusoe 8x L40S, CloudRift 4x RTX 5090 / 8x RTX PRO 6000, kubesimplify 4x RTX
# PRO 6000): their median TPOT / throughput / TTFT errors went 42 / 48 / 45 % -> 14 / 13 / 14 %.
NCCL_PCIE_HOP_S = 4e-6
NCCL_PCIE_BUS_FRACTION = 0.5


def nccl_over_pcie(model: ModelPerf, gpu: GpuPerf) -> bool:
    """True when NCCL, not vLLM's custom all-reduce, carries this TP group's all-reduces over PCIe."""
    return gpu.link_kind == "pcie-host" or (gpu.link_kind == "pcie" and model.tp > 2)


def collective_link(gpu: GpuPerf, eff: Efficiency, ranks: int) -> tuple[float, float]:
    """(latency, usable bandwidth) of one collective over `ranks` GPUs: the small all-reduce's latency, 4x over
    PCIe; without peer-to-peer (link "pcie-host") NCCL stages data in host memory, GPU -> host -> GPU, each byte
    crossing a PCIe link twice, so half the link; where NCCL's ring carries it over PCIe (nccl_over_pcie), a hop
    of latency per extra ring step and NCCL_PCIE_BUS_FRACTION of the link."""
    latency = eff.allreduce_latency_s * (4.0 if gpu.link_kind in ("pcie", "pcie-host") else 1.0)
    link = gpu.link_bytes_s / (2.0 if gpu.link_kind == "pcie-host" else 1.0)
    if gpu.link_kind == "pcie-host" or (gpu.link_kind == "pcie" and ranks > 2):
        latency += NCCL_PCIE_HOP_S * 2 * max(ranks - 2, 0)
        link *= NCCL_PCIE_BUS_FRACTION
    return latency, link


def allreduce_seconds(model: ModelPerf, gpu: GpuPerf, eff: Efficiency, tokens: float) -> float:
    if model.tp <= 1:
        return 0.0
    message = model.hidden_size * tokens * 2.0  # activations in 16-bit
    bus = 2.0 * (model.tp - 1) / model.tp * message
    latency, link = collective_link(gpu, eff, model.tp)
    return 2 * model.layers * (latency + bus / max(link, 1.0))


def draft_seconds(model: ModelPerf, gpu: GpuPerf, eff: Efficiency, decode: float) -> float:
    """Drafting k tokens for a step's `decode` sequences (vLLM V1: the drafter runs k passes after the target's
    forward, one draft token a sequence each): each pass reads the drafter's weights -- at decode batches a few
    layers are bandwidth-bound -- and launches its layers' GEMM kernels. Their FLOPs are left out (one layer and a
    head for EAGLE / MTP). 0 for n-gram proposals, drafted on the CPU."""
    if not model.spec_tokens or decode <= 0 or model.draft_bytes <= 0:
        return 0.0
    per_pass = (model.draft_bytes / (gpu.bandwidth_bytes_s * eff.bandwidth)
                + max(model.draft_layers, 1) * GEMMS_PER_LAYER * eff.gemm_kernel_s)
    return model.spec_tokens * per_pass


def moe_dispatch_seconds(model: ModelPerf, gpu: GpuPerf, eff: Efficiency, tokens: float) -> float:
    """Data parallel with an MoE (ModelPerf.moe_dp): before each fused-MoE layer of the stage a rank gathers the
    other DP ranks' hidden states and after it sends their outputs back (naive dispatch / combine), each way
    (moe_dp - 1) x tokens x hidden x 2 bytes over the GPU link, at the all-reduce's latency (allreduce_seconds:
    NCCL's PCIe rate where it carries the group's collectives). Not fitted: the DP runs are few and all score
    with it."""
    if model.moe_dp <= 1 or not model.is_moe:
        return 0.0
    moved = (model.moe_dp - 1) * tokens * model.hidden_size * 2.0
    latency, link = collective_link(gpu, eff, model.tp * model.moe_dp)
    layers = min(model.layers, -(-model.moe_layers // max(model.pp, 1)))
    return 2 * layers * (latency + moved / max(link, 1.0))


def step_cost(model: ModelPerf, gpu: GpuPerf, eff: Efficiency, *, decode: int, context_sum: float,
              prefill_tokens: int = 0, prefill_pairs: float = 0.0) -> StepCost:
    """Time of one engine step with `decode` decoding sequences (contexts summing to `context_sum`)
    and `prefill_tokens` prompt tokens whose attention covers `prefill_pairs` (query, key) pairs."""
    bw = gpu.bandwidth_bytes_s * eff.bandwidth
    peak = gpu.peak_flops(model.compute_precision) * eff.compute
    # pipeline parallel: the step's sequences run as up to pp micro-batches in flight (see
    # pipeline_microbatches); each stage handles one micro-batch at a time, so a stage's work is that of
    # 1/k of the step, done pp times over while a token passes every stage
    k = pipeline_microbatches(model.batches_in_flight, decode, prefill_tokens)
    all_tokens = decode + prefill_tokens
    tokens = all_tokens / k
    context_sum, prefill_tokens, prefill_pairs = context_sum / k, prefill_tokens / k, prefill_pairs / k
    decode_mb = decode / k
    # linear layers (GEMMs): weights streamed once per step, 2 FLOPs per parameter per token
    gemm_mem = (model.dense_bytes + model.expert_bytes * model.touched_expert_fraction(tokens * model.moe_dp)
                / expert_stream(model, eff)) / (bw * eff.weight_stream)
    gemm_flops = model.flops(tokens, 0.0)
    if model.is_moe and model.active_params > 0:
        # the routed-expert share of the FLOPs runs as grouped GEMMs at a lower rate
        share = min(_expert_flop_share(model), 1.0)
        gemm_flops = gemm_flops * (1 - share) + gemm_flops * share / moe_efficiency(model, eff)
    # the LM head runs at each request's last position only: a decoding sequence's token, and one position of
    # the step's prompt chunks (the rest of a chunk's tokens pass the decoder layers only)
    gemm_flops -= lm_head_excess_flops(model, tokens, decode_mb + (1 if prefill_tokens else 0))
    gemm_cmp = gemm_flops / peak
    # attention kernels run after / between the GEMMs (separate kernels): their time adds
    attn_mem = (model.kv_bytes_read(decode_mb, context_sum) + model.kv_bytes_per_token() * tokens) / bw
    attn_cmp = (model.attention_flops(decode_mb, context_sum, prefill_tokens, prefill_pairs, eff.prefill_attention)
                / attention_peak_flops(model, gpu, eff))
    host_s = model.host_seconds(gpu, tokens)
    t_mem = gemm_mem + attn_mem + host_s
    t_cmp = gemm_cmp + attn_cmp
    dispatch_s = eff.eager_dispatch_s or (eff.graphless_dispatch_s if 0 < eff.graph_max_tokens < tokens else 0.0)
    stage = eager_stage_seconds(gemm_seconds(gemm_mem, gemm_cmp) + model.kernels_seconds(eff)
                                + max(attn_mem, attn_cmp), model.layers, dispatch_s) + host_s
    comm = allreduce_seconds(model, gpu, eff, all_tokens) + moe_dispatch_seconds(model, gpu, eff, all_tokens)
    overhead = eff.step_overhead_s + eff.per_seq_overhead_s * (decode + (1 if prefill_tokens else 0))
    seconds = model.pp * stage + comm + overhead
    if eff.host_overlap > 0:
        host = (eff.host_overlap * eff.step_overhead_s
                + eff.host_overlap_seq * eff.per_seq_overhead_s * (decode + (1 if prefill_tokens else 0)))
        seconds = max(seconds - host, host)
    return StepCost(seconds=seconds, memory_s=model.pp * t_mem,
                    compute_s=model.pp * t_cmp, comm_s=comm, overhead_s=overhead)


def make_step_fn(model: ModelPerf, gpu: GpuPerf, eff: Efficiency):
    """`step_cost` as a closure over precomputed constants (the scheduler simulation calls it once per
    step): returns (seconds, compute_bound). Same arithmetic as step_cost."""
    bw = gpu.bandwidth_bytes_s * eff.bandwidth
    peak = gpu.peak_flops(model.compute_precision) * eff.compute
    attn_peak = attention_peak_flops(model, gpu, eff)
    # routed experts at their own stream rate (expert_stream): as that many more bytes at `bw`
    dense_b = float(model.dense_bytes) / eff.weight_stream
    expert_b = float(model.expert_bytes) / expert_stream(model, eff) / eff.weight_stream
    miss = 1.0 - model.experts_per_token / model.num_experts if model.is_moe else 1.0
    moe_dp = float(model.moe_dp)  # the MoE layers run the tokens of this many DP ranks (ModelPerf.moe_dp)
    flop_tok = 2.0 * model.active_params / (model.tp * model.pp)
    if model.is_moe and model.active_params > 0:
        share = min(_expert_flop_share(model), 1.0)
        flop_tok = flop_tok * (1 - share) + flop_tok * share / moe_efficiency(model, eff)
    lm_tok = 2.0 * model.lm_head_params / (model.tp * model.pp)  # lm_head_excess_flops per unsampled token
    full_tb = float(sum(g.layers * g.token_bytes for g in model.kv if g.kind in ("full", "mla")))
    windowed = [(float(g.layers * g.token_bytes), float(g.window or 0)) for g in model.kv
                if g.kind in ("sliding", "chunked")]
    state_b = float(sum(2 * g.layers * g.state_bytes for g in model.kv if g.kind == "mamba"))
    write_tb = float(model.kv_bytes_per_token())
    attn_pair = model.attn_flops_per_pair
    prefill_rate = eff.prefill_attention
    slow_prefill = 1.0 / prefill_rate
    sparse = model.sparse_topk > 0
    pp = model.pp
    mb_pp = model.batches_in_flight
    kernels = model.kernels_seconds(eff)
    offloaded = model.host_bytes > 0
    ar = allreduce_seconds(model, gpu, eff, 1.0) if model.tp > 1 else 0.0
    ar_lat = allreduce_seconds(model, gpu, eff, 0.0) if model.tp > 1 else 0.0
    if model.moe_dp > 1 and model.is_moe:
        ar += moe_dispatch_seconds(model, gpu, eff, 1.0)
        ar_lat += moe_dispatch_seconds(model, gpu, eff, 0.0)
    over, per_seq = eff.step_overhead_s, eff.per_seq_overhead_s
    overlap = eff.host_overlap > 0
    host_over = eff.host_overlap * over if overlap else 0.0
    seq_share = eff.host_overlap_seq
    # host dispatch per layer: every step under --enforce-eager, else only steps above the graph ceiling
    layers = model.layers
    eager = eff.eager_dispatch_s if layers > 0 else 0.0
    graph_max = eff.graph_max_tokens if not eager and layers > 0 else 0
    graphless = eff.graphless_dispatch_s

    def fn(decode: int, context_sum: float, prefill: int, pairs: float) -> tuple[float, bool]:
        all_tokens = decode + prefill
        k = pipeline_microbatches(mb_pp, decode, prefill)
        if k > 1:  # one micro-batch's share of the step (step_cost)
            decode_mb, context_sum, prefill, pairs = decode / k, context_sum / k, prefill / k, pairs / k
        else:
            decode_mb = decode
        tokens = decode_mb + prefill
        wbytes = dense_b + (expert_b * (1.0 - miss ** (tokens * moe_dp)) if expert_b else 0.0)
        gemm_mem = wbytes / bw
        gemm_cmp = flop_tok * tokens / peak
        if prefill and lm_tok:
            gemm_cmp -= lm_tok * max(tokens - decode_mb - 1, 0.0) / peak
        kv = full_tb * context_sum + state_b * decode_mb
        for tb, w in windowed:
            kv += tb * (min(context_sum, decode_mb * w) if w else context_sum)
        attn_mem = (kv + write_tb * tokens) / bw
        attn_cmp = (attn_pair * (context_sum + pairs * slow_prefill) if not sparse
                    else model.attention_flops(decode_mb, context_sum, prefill, pairs, prefill_rate)) / attn_peak
        stage = (sqrt(gemm_mem * gemm_mem + gemm_cmp * gemm_cmp) + kernels
                 + (attn_mem if attn_mem > attn_cmp else attn_cmp))
        dispatch = eager or (graphless if 0 < graph_max < tokens else 0.0)
        if dispatch:
            per = stage / layers
            stage = layers * sqrt(per * per + dispatch * dispatch)
        host_s = model.host_seconds(gpu, tokens) if offloaded else 0.0
        stage += host_s
        comm = ar_lat + (ar - ar_lat) * all_tokens
        host = per_seq * (decode + (1 if prefill else 0))
        seconds = pp * stage + comm + over + host
        if overlap:
            host = host_over + (host if seq_share == 1.0 else host * seq_share)
            seconds = max(seconds - host, host)
        return seconds, (gemm_cmp + attn_cmp) > (gemm_mem + attn_mem + host_s)

    def decode_only(decode: int) -> Callable[[float], tuple[float, bool]]:
        """`fn(decode, context_sum, 0, 0.0)` as a function of the context alone, for a run of decode-only
        steps of `decode` sequences (the scheduler simulation's stretches): what does not depend on the
        context is computed once; the rest is fn's arithmetic in fn's order, so the results are the same
        to the last bit."""
        k = pipeline_microbatches(mb_pp, decode, 0)
        split = k > 1
        decode_mb = decode / k if split else decode
        prefill = 0 / k if split else 0
        pairs = 0.0 / k if split else 0.0
        tokens = decode_mb + prefill
        wbytes = dense_b + (expert_b * (1.0 - miss ** (tokens * moe_dp)) if expert_b else 0.0)
        gemm_mem = wbytes / bw
        gemm_cmp = flop_tok * tokens / peak
        head = sqrt(gemm_mem * gemm_mem + gemm_cmp * gemm_cmp) + kernels
        host_s = model.host_seconds(gpu, tokens) if offloaded else 0.0
        state = state_b * decode_mb
        write = write_tb * tokens
        dispatch = eager or (graphless if 0 < graph_max < tokens else 0.0)
        comm = ar_lat + (ar - ar_lat) * (decode + 0)
        seq = per_seq * (decode + 0)

        def g(context_sum: float) -> tuple[float, bool]:
            if split:
                context_sum = context_sum / k
            kv = full_tb * context_sum + state
            for tb, w in windowed:
                kv += tb * (min(context_sum, decode_mb * w) if w else context_sum)
            attn_mem = (kv + write) / bw
            attn_cmp = (attn_pair * (context_sum + pairs * slow_prefill) if not sparse
                        else model.attention_flops(decode_mb, context_sum, prefill, pairs, prefill_rate)) / attn_peak
            stage = head + (attn_mem if attn_mem > attn_cmp else attn_cmp)
            if dispatch:
                per = stage / layers
                stage = layers * sqrt(per * per + dispatch * dispatch)
            stage += host_s
            seconds = pp * stage + comm + over + seq
            if overlap:
                host = (seq if seq_share == 1.0 else seq * seq_share) + host_over
                seconds = max(seconds - host, host)
            return seconds, (gemm_cmp + attn_cmp) > (gemm_mem + attn_mem + host_s)

        return g

    fn.decode_only = decode_only  # type: ignore[attr-defined]
    return fn


def pipeline_microbatches(pp: int, decode: int, prefill_tokens: float) -> int:
    """Micro-batches a pipeline-parallel step's sequences run as. vLLM keeps `pipeline_parallel_size`
    batches in flight so that every stage has work (vllm/config/vllm.py `max_concurrent_batches`: "PP
    requires PP-size concurrent batches to fill the pipeline"; v1/engine/core.py
    `step_with_batch_queue`; the V0 engine had a virtual engine per stage), and a request waits for its
    token before it is scheduled again, so the running sequences are spread over at most pp
    micro-batches. A token still passes every stage in turn, but each stage works on 1/k of the
    sequences at a time: compute-bound steps run up to pp times faster than one batch pushed through
    the stages one after another; weight reads do not shrink (each micro-batch streams the stage's
    weights). A prompt chunk is not split: fewer sequences than stages fill fewer micro-batches."""
    if pp <= 1:
        return 1
    return max(1, min(pp, decode + (1 if prefill_tokens else 0)))


def gemm_seconds(memory_s: float, compute_s: float) -> float:
    """Time of the linear layers from their two rooflines: sqrt(m^2 + c^2) (module docstring)."""
    return sqrt(memory_s * memory_s + compute_s * compute_s)


def moe_efficiency(model: ModelPerf, eff: Efficiency) -> float:
    if not model.expert_width:
        return eff.moe_compute
    return eff.moe_compute * min(1.0, model.expert_width / max(eff.moe_width_ref, 1.0))


def lm_head_excess_flops(model: ModelPerf, tokens: float, sampled: float) -> float:
    """FLOPs that 2 x active parameters x tokens counts for the LM head at positions whose logits vLLM never
    computes (all but `sampled` of the step's `tokens`), per rank."""
    if not model.lm_head_params or sampled >= tokens:
        return 0.0
    return 2.0 * model.lm_head_params / (model.tp * model.pp) * (tokens - sampled)


def _expert_flop_share(model: ModelPerf) -> float:
    """Share of a token's FLOPs spent in routed experts (from the byte split of the rank's weights:
    the active experts are k/E of the expert bytes)."""
    if not model.is_moe:
        return 0.0
    active_expert = model.expert_bytes * model.experts_per_token / model.num_experts
    return active_expert / max(active_expert + model.dense_bytes, 1)


def decode_floor_seconds(model: ModelPerf, gpu: GpuPerf) -> float:
    """The physical TPOT floor: one token for one sequence reads the rank's active weights at the full
    datasheet bandwidth (no efficiency, no overhead, no KV)."""
    return model.pp * model.weight_bytes_read(1) / gpu.bandwidth_bytes_s


def naive_roofline_tpot(model: ModelPerf, gpu: GpuPerf) -> float:
    """The naive predictor the accuracy benchmark compares against: all weights of a rank / peak
    bandwidth per token step, no KV, no efficiency, no overhead."""
    return model.pp * (model.dense_bytes + model.expert_bytes) / gpu.bandwidth_bytes_s


__all__ = [
    "AMPERE_BANDWIDTH_FACTOR",
    "AMPERE_MAMF_RATIO",
    "ASYNC_HOST_SHARE",
    "EAGER_DISPATCH_PER_LAYER_S",
    "Efficiency",
    "GpuPerf",
    "KVRead",
    "ModelPerf",
    "StepCost",
    "decode_floor_seconds",
    "draft_seconds",
    "eager_launch_factor",
    "eager_stage_seconds",
    "efficiency_for",
    "gemm_seconds",
    "make_step_fn",
    "max_graph_tokens",
    "moe_dispatch_seconds",
    "mxfp4_upcast",
    "naive_roofline_tpot",
    "rocm_fp8_gemms",
    "rocm_w4a16_weights",
    "step_cost",
    "with_eager",
    "with_graph_limit",
]
