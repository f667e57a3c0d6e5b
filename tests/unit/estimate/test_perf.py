"""The step-cost roofline (estimate/perf.py): hand-worked numbers and physical invariants.

The numbers below are worked by hand from the formulas in the module docstring (no vLLM needed);
the model's accuracy against real vLLM runs is measured by benchmarks/perf_accuracy.py."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllmkit.estimate.perf import (
    ROCM_FP8_COMPUTE_FACTOR,
    ROCM_MXFP4_EXPERT_STREAM,
    ROCM_W4A16_STREAM,
    Efficiency,
    GpuPerf,
    KVRead,
    ModelPerf,
    decode_floor_seconds,
    efficiency_for,
    expert_stream,
    make_step_fn,
    moe_dispatch_seconds,
    naive_roofline_tpot,
    pipeline_microbatches,
    step_cost,
)

H100 = GpuPerf("h100-sxm", "nvidia", "hopper", 3.35e12, {"bf16": 989.5, "fp8": 1979.0}, 450e9)
# an 8B dense model on one rank: 16 GB of weights, 36 layers x 4096 B of KV per token
DENSE = ModelPerf(tp=1, pp=1, layers=36, hidden_size=4096, dense_bytes=16_000_000_000, active_params=8e9,
                  attn_flops_per_pair=4 * 32 * 128 * 36, kv=(KVRead("full", 36, 4096),))
EFF = Efficiency(bandwidth=0.8, compute=0.5, step_overhead_s=0.0, per_seq_overhead_s=0.0, allreduce_latency_s=0.0)


def test_single_decode_step_by_hand() -> None:
    # weights 16e9 B / (3.35e12 x 0.8) = 5.9701 ms (GEMM compute 2 x 8e9 / (989.5e12 x 0.5) = 0.032 ms: memory wins)
    # KV read 1000 ctx x 36 x 4096 = 147.456 MB + write 147,456 B -> 147.604 MB / 2.68e12 = 0.05508 ms
    # attention FLOPs 4 x 32 x 128 x 36 x 1000 = 0.59 GFLOP / 494.75e12 = 0.0012 ms (memory wins)
    # GEMM kernels: 36 layers x 4 x 3.8 us = 0.5472 ms
    cost = step_cost(DENSE, H100, EFF, decode=1, context_sum=1000)
    assert cost.seconds == pytest.approx(5.9701e-3 + 0.05508e-3 + 0.5472e-3, rel=1e-3)
    assert cost.bound == "bandwidth"


def test_prefill_step_by_hand_is_compute_bound() -> None:
    # 4096 prompt tokens: GEMM 2 x 8e9 x 4096 = 65.54 TFLOP / 494.75 TFLOP/s = 132.47 ms (> 5.97 ms of weights),
    # blended with the weight stream: sqrt(132.47^2 + 5.97^2) = 132.60 ms, + 144 GEMM kernels x 3.8 us = 0.55 ms
    # attention pairs 4096 x 2048 = 8.39e6 x 4 x 32 x 128 x 36 = 4.95 TFLOP / 494.75e12 = 10.0 ms
    # (its memory side, the 4096 new tokens' KV = 0.60 GB / 2.68e12 = 0.23 ms, is smaller)
    cost = step_cost(DENSE, H100, EFF, decode=0, context_sum=0, prefill_tokens=4096, prefill_pairs=4096 * 2048)
    assert cost.seconds == pytest.approx(132.60e-3 + 0.5472e-3 + 10.0e-3, rel=1e-3)
    assert cost.bound == "compute"


def test_tensor_parallel_all_reduce_by_hand() -> None:
    # TP2, 64 layers, 8 tokens: 2 all-reduces per layer, each 10 us + 2 x (1/2) x (8192 x 8 x 2 B) / 450e9 B/s
    m = ModelPerf(tp=2, pp=1, layers=64, hidden_size=8192, dense_bytes=1, active_params=1.0)
    eff = Efficiency(allreduce_latency_s=10e-6)
    each = 10e-6 + 2 * 0.5 * 8192 * 8 * 2 / 450e9
    cost = step_cost(m, H100, eff, decode=8, context_sum=0)
    assert cost.comm_s == pytest.approx(2 * 64 * each, rel=1e-9)


def test_all_reduce_without_peer_to_peer_bounces_through_host_memory() -> None:
    # TP2, 28 layers, 2048 tokens, hidden 3584 on PCIe (32 GB/s one way): with P2P vLLM's custom all-reduce
    # runs two PCIe GPUs, each all-reduce 4 x 10 us + 2 x (1/2) x (3584 x 2048 x 2 B) / 32e9; a GeForce Ada
    # card without P2P ("pcie-host") falls back to NCCL staging in host memory: every byte crosses PCIe
    # twice (32e9 / 2), and NCCL's bus reaches half of that rate
    m = ModelPerf(tp=2, pp=1, layers=28, hidden_size=3584, dense_bytes=1, active_params=1.0)
    eff = Efficiency(allreduce_latency_s=10e-6)
    bus = 2 * 0.5 * 3584 * 2048 * 2
    p2p = GpuPerf("x", "nvidia", "ada", 1e12, {"bf16": 100.0}, 32e9, "pcie")
    host = GpuPerf("x", "nvidia", "ada", 1e12, {"bf16": 100.0}, 32e9, "pcie-host")
    assert step_cost(m, p2p, eff, decode=2048, context_sum=0).comm_s == pytest.approx(56 * (40e-6 + bus / 32e9))
    assert step_cost(m, host, eff, decode=2048, context_sum=0).comm_s == pytest.approx(56 * (40e-6 + bus / 8e9))


def test_more_than_two_pcie_gpus_all_reduce_through_nccls_ring() -> None:
    """vLLM's custom all-reduce returns early "because it's not supported on more than two PCIe-only GPUs"
    (custom_all_reduce.py, the installed vLLM's too), so NCCL's ring carries TP4 / TP8 over PCIe:
    2 (tp - 1) steps instead of the two of a pair, each a hop of latency, at half the link's rate.
    NVLink keeps the custom all-reduce: its cost does not grow with the ring."""
    import importlib.util
    import os
    from pathlib import Path

    spec = importlib.util.find_spec("vllm")  # the installed vLLM's source, read as text (not imported)
    if spec is None or not spec.submodule_search_locations:
        assert os.environ.get("CI") != "true", "CI installs vLLM (scripts/setup.sh --with-vllm)"
        pytest.skip("vLLM is not installed here")
    car = Path(spec.submodule_search_locations[0]) / "distributed/device_communicators/custom_all_reduce.py"
    assert "more than two PCIe-only GPUs" in car.read_text(encoding="utf-8")
    eff = Efficiency(allreduce_latency_s=10e-6)
    pcie = GpuPerf("x", "nvidia", "ada", 1e12, {"bf16": 100.0}, 32e9, "pcie")
    nvl = GpuPerf("x", "nvidia", "hopper", 1e12, {"bf16": 100.0}, 32e9, "nvlink")
    for tp in (4, 8):
        m = ModelPerf(tp=tp, pp=1, layers=28, hidden_size=3584, dense_bytes=1, active_params=1.0)
        bus = 2 * (tp - 1) / tp * 3584 * 2048 * 2
        each = 40e-6 + 4e-6 * 2 * (tp - 2) + bus / (0.5 * 32e9)
        assert step_cost(m, pcie, eff, decode=2048, context_sum=0).comm_s == pytest.approx(56 * each)
        assert step_cost(m, nvl, eff, decode=2048, context_sum=0).comm_s == pytest.approx(
            56 * (10e-6 + bus / 32e9))


def test_geforce_profiles_have_no_peer_to_peer() -> None:
    from vllmkit.hardware.profiles import load_profiles, resolve_gpu
    from vllmkit.plan.performance import gpu_perf

    profiles = load_profiles(include_user_config=False)
    # RTX 30 / 40 / 50: "Custom allreduce is disabled because your platform lacks GPU P2P capability" in public
    # logs of 4 x RTX 3090 and 2 x RTX 5090; the 4090's was the first profile to say so
    for name in ("rtx-3090", "rtx-4090", "rtx-5090", "rtx-5070-ti", "rtx-5060-ti"):
        assert gpu_perf(resolve_gpu(name, profiles=profiles)).link_kind == "pcie-host", name
    # datacenter / workstation PCIe cards keep P2P (vLLM's custom all-reduce runs on them)
    assert gpu_perf(resolve_gpu("l40", profiles=profiles)).link_kind == "pcie"
    assert gpu_perf(resolve_gpu("h100-pcie", profiles=profiles)).link_kind == "pcie"


def test_geforce_blackwell_fills_more_of_its_listed_peak() -> None:
    from vllmkit.hardware.profiles import load_profiles, resolve_gpu
    from vllmkit.plan.performance import gpu_perf

    profiles = load_profiles(include_user_config=False)
    rtx5090 = gpu_perf(resolve_gpu("rtx-5090", profiles=profiles))
    assert rtx5090.family == "blackwell-geforce"
    # RTX PRO cards (their datasheets list the full rate), datacenter Blackwell and DGX Spark keep the plain prior
    for name in ("rtx-pro-6000-server", "b200", "gb10"):
        assert gpu_perf(resolve_gpu(name, profiles=profiles)).family == "blackwell"
    # main-horse's torch.matmul on a 5090: 224.3 TFLOP/s of the listed 209.5 = 1.0706; an H100's best matmul
    # reaches 0.803 of its peak: 1.0706 / 0.803 = 1.3333 times the H100's share. A serving step gets the A100's
    # share of that best matmul (mma.sync GEMMs, no wgmma on sm_120): ampere_compute 1.2 over the A100 / H100
    # best-matmul ratio 0.869 / 0.803 = 1.0822 -> 1.1089; 1.3333 x 1.1089 = 1.4785
    base = Efficiency(compute=0.45, bandwidth=0.85, ampere_compute=1.2)
    eff = efficiency_for(base, rtx5090, DENSE)
    assert eff.compute == pytest.approx(0.45 * 1.4785, rel=1e-3)
    assert eff.bandwidth == pytest.approx(0.85)  # its memory is not faster than the datasheet says
    # a prefill, compute bound, is that much faster; a single decode, weight bound, is not
    prefill = step_cost(DENSE, rtx5090, base, decode=0, context_sum=0, prefill_tokens=4096, prefill_pairs=0)
    prefill_geforce = step_cost(DENSE, rtx5090, eff, decode=0, context_sum=0, prefill_tokens=4096, prefill_pairs=0)
    assert prefill.compute_s / prefill_geforce.compute_s == pytest.approx(1.4785, rel=1e-3)
    decode = step_cost(DENSE, rtx5090, base, decode=1, context_sum=1000)
    assert step_cost(DENSE, rtx5090, eff, decode=1, context_sum=1000).seconds == pytest.approx(decode.seconds, rel=1e-3)


def test_geforce_ada_fills_more_of_its_listed_peak() -> None:
    from vllmkit.hardware.profiles import load_profiles, resolve_gpu
    from vllmkit.plan.performance import gpu_perf

    profiles = load_profiles(include_user_config=False)
    rtx4090 = gpu_perf(resolve_gpu("rtx-4090", profiles=profiles))
    assert rtx4090.family == "ada-geforce" and rtx4090.link_kind == "pcie-host"
    # the workstation and datacenter Ada cards list the full FP32-accumulate rate: plain prior
    for name in ("rtx-6000-ada", "rtx-5000-ada", "l40s", "l4"):
        assert gpu_perf(resolve_gpu(name, profiles=profiles)).family == "ada"
    # mamf-finder on an RTX 4090: 178.5 TFLOP/s of the listed 165.2 = 1.0805; over the H100's 0.803: 1.3456 times
    # the fitted (Hopper) share; ampere_compute does not enter (unlike the RTX 50 series)
    base = Efficiency(compute=0.45, bandwidth=0.85, ampere_compute=1.2)
    eff = efficiency_for(base, rtx4090, DENSE)
    assert eff.compute == pytest.approx(0.45 * 1.3456, rel=1e-3)
    assert efficiency_for(replace(base, ampere_compute=1.5), rtx4090, DENSE).compute == pytest.approx(eff.compute)
    assert eff.bandwidth == pytest.approx(0.85)
    l40s = gpu_perf(resolve_gpu("l40s", profiles=profiles))
    assert efficiency_for(base, l40s, DENSE).compute == pytest.approx(0.45)


def test_moe_reads_only_the_experts_a_batch_touches() -> None:
    # Mixtral-like: E=8, k=2. One token touches 2 of 8 experts: 1-(1-2/8)^1 = 0.25; 8 tokens: 1-0.75^8 = 0.8999
    m = ModelPerf(tp=1, pp=1, layers=32, hidden_size=4096, dense_bytes=2_000_000_000, expert_bytes=88_000_000_000,
                  num_experts=8, experts_per_token=2, active_params=13e9)
    assert m.touched_expert_fraction(1) == pytest.approx(0.25)
    assert m.touched_expert_fraction(8) == pytest.approx(1 - 0.75**8)
    assert m.weight_bytes_read(1) == pytest.approx(2e9 + 0.25 * 88e9)
    assert m.weight_bytes_read(10_000) == pytest.approx(90e9)



def test_data_parallel_moe_layers_touch_experts_for_every_engines_tokens() -> None:
    # DP 2 of the Mixtral-like model above: each rank holds half the routed experts (44 GB), and a step of one
    # token on this engine runs the MoE layers over both engines' tokens (vLLM's naive dispatch all-gathers
    # them): 1 - 0.75^2 = 0.4375 of the rank's experts, not 0.25
    m = ModelPerf(tp=1, pp=1, layers=32, hidden_size=4096, dense_bytes=2_000_000_000, expert_bytes=44_000_000_000,
                  num_experts=8, experts_per_token=2, active_params=13e9, moe_layers=32, moe_dp=2)
    assert m.weight_bytes_read(1) == pytest.approx(2e9 + 0.4375 * 44e9)
    assert m.weight_bytes_read(4) == pytest.approx(2e9 + (1 - 0.75**8) * 44e9)


def test_data_parallel_moe_dispatch_by_hand() -> None:
    # per MoE layer: gather the other engine's tokens' hidden states in, send their outputs back:
    # 2 x (12 us + (2 - 1) x 100 tokens x 4096 x 2 B / 450 GB/s) = 2 x (12 + 1.8204) us; 32 layers: 0.8845 ms
    m = ModelPerf(tp=1, pp=1, layers=32, hidden_size=4096, dense_bytes=2_000_000_000, expert_bytes=44_000_000_000,
                  num_experts=8, experts_per_token=2, active_params=13e9, moe_layers=32, moe_dp=2)
    eff = Efficiency(allreduce_latency_s=12e-6)
    assert moe_dispatch_seconds(m, H100, eff, 100) == pytest.approx(32 * 2 * (12e-6 + 819_200 / 450e9), rel=1e-9)
    assert moe_dispatch_seconds(replace(m, moe_dp=1), H100, eff, 100) == 0.0  # one engine: nothing moves
    dense = replace(DENSE, moe_dp=2)
    assert moe_dispatch_seconds(dense, H100, eff, 100) == 0.0  # a dense model's engines run apart
    fn = make_step_fn(m, H100, eff)
    for d, ctx, p, pairs in ((1, 1000.0, 0, 0.0), (64, 64_000.0, 512, 512 * 300.0), (0, 0.0, 4096, 4096 * 2048.0)):
        want = step_cost(m, H100, eff, decode=d, context_sum=ctx, prefill_tokens=p, prefill_pairs=pairs).seconds
        assert fn(d, ctx, p, pairs)[0] == pytest.approx(want, rel=1e-9)
    g = fn.decode_only(8)  # type: ignore[attr-defined]
    assert g(8000.0)[0] == pytest.approx(fn(8, 8000.0, 0, 0.0)[0], rel=1e-12)


def test_fused_moe_layer_fixed_cost_by_hand() -> None:
    # MOE_LAYER_S: benchmark_moe's fixed part on H100 / H200 (32 us: top-k, align, two grouped GEMMs, activation,
    # sum) less the two grouped GEMMs' launches counted with the layer's 4 GEMMs (2 x 3.8 us), plus the router GEMM
    # the benchmark leaves out (3.8 us) = 28.2 us a layer
    from vllmkit.estimate.perf import GEMM_KERNEL_S, MOE_LAYER_S

    assert MOE_LAYER_S == pytest.approx(28.2e-6)
    eff = Efficiency()
    m = ModelPerf(tp=1, pp=1, layers=48, hidden_size=2048, dense_bytes=1, expert_bytes=1, num_experts=128,
                  experts_per_token=8, moe_layers=48, active_params=3e9)
    # 48 layers x 4 GEMMs x 3.8 us = 729.6 us, + 48 x 28.2 us = 1353.6 us: 2083.2 us
    assert m.kernels_seconds(eff) == pytest.approx(48 * 4 * GEMM_KERNEL_S + 48 * 28.2e-6)
    assert m.kernels_seconds(eff) == pytest.approx(2083.2e-6)
    # shared experts add their MLP's two GEMMs a layer: + 48 x 7.6 us
    shared = replace(m, shared_experts=1)
    assert shared.kernels_seconds(eff) - m.kernels_seconds(eff) == pytest.approx(48 * 2 * 3.8e-6)
    # pipeline parallel: the busiest of two stages holds 24 layers, 24 of them MoE
    assert replace(m, pp=2, layers=24).stage_moe_layers == 24
    # three leading dense layers (DeepSeek first_k_dense_replace): 61 layers, 58 MoE; PP 2 -> 31 / 29 on a stage
    assert replace(m, layers=31, pp=2, moe_layers=58).stage_moe_layers == 29
    # gpt-oss's MXFP4 path fuses routing, activation and combine into its two GEMMs: no fixed MoE cost
    assert replace(m, weight_format="mxfp4").stage_moe_layers == 0
    assert replace(m, weight_format="mxfp4").kernels_seconds(eff) == pytest.approx(48 * 4 * GEMM_KERNEL_S)
    # a dense model has none
    assert DENSE.stage_moe_layers == 0


def test_fp4_linear_layers_quantize_their_inputs_but_mxfp4_experts_are_counted_apart() -> None:
    # NVFP4 (W4A4): each GEMM's input is quantised to FP4 first (scaled_fp4_quant), one kernel as W8A8's cast:
    # 36 layers x 4 GEMMs x (3.8 + 1.4 us) = 748.8 us; BF16 the GEMMs alone, 547.2 us
    from vllmkit.estimate.perf import GEMM_KERNEL_S, QUANT_KERNEL_S

    eff = Efficiency()
    m = ModelPerf(tp=1, pp=1, layers=36, hidden_size=4096, dense_bytes=1, expert_bytes=0, active_params=8e9,
                  compute_precision="fp4", weight_kernel="dense")
    assert m.kernels_seconds(eff) == pytest.approx(36 * 4 * (GEMM_KERNEL_S + QUANT_KERNEL_S))
    assert m.kernels_seconds(eff) == pytest.approx(748.8e-6)
    assert replace(m, compute_precision="bf16").kernels_seconds(eff) == pytest.approx(547.2e-6)
    # gpt-oss on an FP4 GPU: its attention GEMMs stay BF16, the MXFP4 experts are the MoE path's
    assert replace(m, weight_format="mxfp4").kernels_seconds(eff) == pytest.approx(547.2e-6)


# an FP8 MoE rank (DeepSeek-like at TP8: 3.2 GB of dense weights, 81.7 GB of routed experts, E=256, k=8)
FP8_MOE = ModelPerf(tp=8, pp=1, layers=61, hidden_size=7168, dense_bytes=3_200_000_000,
                    expert_bytes=81_700_000_000, num_experts=256, experts_per_token=8, active_params=37e9,
                    compute_precision="fp8", gemm_kernels=1)


def test_fp8_moe_experts_stream_at_their_own_rate() -> None:
    # one token touches 8 of 256 experts: 81.7e9 x 8/256 = 2.553e9 B of experts; at stream 0.5 they take as
    # long as 5.106e9 B: (3.2e9 + 5.106e9) / (3.35e12 x 0.8) = 3.0993 ms of weights; at stream 1
    # (3.2e9 + 2.553e9) / 2.68e12 = 2.1467 ms
    slow = Efficiency(bandwidth=0.8, compute=0.5, step_overhead_s=0.0, per_seq_overhead_s=0.0,
                      allreduce_latency_s=0.0, fp8_moe_stream=0.5, gemm_kernel_s=0.0, quant_kernel_s=0.0)
    full = Efficiency(bandwidth=0.8, compute=0.5, step_overhead_s=0.0, per_seq_overhead_s=0.0,
                      allreduce_latency_s=0.0, gemm_kernel_s=0.0, quant_kernel_s=0.0)
    assert step_cost(FP8_MOE, H100, slow, decode=1, context_sum=0).memory_s == pytest.approx(3.0993e-3, rel=1e-3)
    assert step_cost(FP8_MOE, H100, full, decode=1, context_sum=0).memory_s == pytest.approx(2.1467e-3, rel=1e-3)
    # the fast step function agrees (it scales the expert bytes once, at construction)
    fn = make_step_fn(FP8_MOE, H100, slow)
    for d, ctx, p in ((1, 0.0, 0), (16, 8000.0, 0), (4, 3000.0, 2048)):
        want = step_cost(FP8_MOE, H100, slow, decode=d, context_sum=ctx, prefill_tokens=p, prefill_pairs=0.0)
        assert fn(d, ctx, p, 0.0)[0] == pytest.approx(want.seconds, rel=1e-9)


def test_expert_stream_applies_to_w8a8_fp8_moe_only() -> None:
    eff = Efficiency(fp8_moe_stream=0.4)
    assert expert_stream(FP8_MOE, eff) == 0.4
    # BF16 experts, weight-only (Marlin W4A16) experts and a dense FP8 model keep the dense weight stream
    assert expert_stream(ModelPerf(**{**FP8_MOE.__dict__, "compute_precision": "bf16"}), eff) == 1.0
    assert expert_stream(ModelPerf(**{**FP8_MOE.__dict__, "weight_kernel": "w4a16"}), eff) == 1.0
    assert expert_stream(ModelPerf(**{**DENSE.__dict__, "compute_precision": "fp8"}), eff) == 1.0

# gpt-oss-20b-like MXFP4 MoE on one rank: 24 layers, E=32, k=4, weight-only 4-bit experts (ROCm: w4a16)
MXFP4_MOE = ModelPerf(tp=1, pp=1, layers=24, hidden_size=2880, dense_bytes=2_000_000_000,
                      expert_bytes=10_000_000_000, num_experts=32, experts_per_token=4, active_params=3.6e9,
                      compute_precision="bf16", weight_kernel="w4a16", weight_format="mxfp4", moe_layers=24)
MI300X = GpuPerf("mi300x", "amd", "cdna3", 5.3e12, {"bf16": 1307.4, "fp8": 2614.9}, 448e9)
MI355X = GpuPerf("mi355x", "amd", "cdna4", 8.0e12, {"bf16": 2516.6, "fp8": 5033.2, "fp4": 10066.4}, 1075e9)


def test_mxfp4_experts_stream_slower_on_rocm_without_fp4_units() -> None:
    # the rule (estimate/perf.py ROCM_MXFP4_EXPERT_STREAM) holds where the GPU has no FP4 rate: MI300X, not
    # MI355X (gfx950), not an NVIDIA GPU, not a dense model, not an AWQ / GPTQ MoE (another weight format)
    base = Efficiency()
    assert expert_stream(MXFP4_MOE, efficiency_for(base, MI300X, MXFP4_MOE)) == ROCM_MXFP4_EXPERT_STREAM
    assert expert_stream(MXFP4_MOE, efficiency_for(base, MI355X, MXFP4_MOE)) == 1.0
    assert expert_stream(MXFP4_MOE, efficiency_for(base, H100, MXFP4_MOE)) == 1.0
    awq = ModelPerf(**{**MXFP4_MOE.__dict__, "weight_format": ""})
    assert expert_stream(awq, efficiency_for(base, MI300X, awq)) == 1.0
    # one decode token touches 4 of 32 experts: 10e9 x 4/32 = 1.25e9 B, read as if 1.25e9 / 0.45 B
    eff = replace(efficiency_for(EFF, MI300X, MXFP4_MOE), gemm_kernel_s=0.0, quant_kernel_s=0.0)
    got = step_cost(MXFP4_MOE, MI300X, eff, decode=1, context_sum=0).memory_s
    assert got == pytest.approx((2e9 + 1.25e9 / ROCM_MXFP4_EXPERT_STREAM) / (5.3e12 * eff.bandwidth), rel=1e-3)


def test_w4a16_weights_stream_slower_on_rocm() -> None:
    # no Marlin on ROCm (estimate/perf.py ROCM_W4A16_STREAM): a GPTQ / AWQ model's weights are read at that share
    # of the weight-stream rate on an AMD GPU; a W4A16 model on an NVIDIA GPU, a dense one on AMD and MXFP4 experts
    # (their own rule, above) keep the full rate
    w4 = ModelPerf(**{**DENSE.__dict__, "dense_bytes": 4_240_000_000, "compute_precision": "fp16",
                      "weight_kernel": "w4a16"})
    base = Efficiency()
    assert efficiency_for(base, MI300X, w4).weight_stream == ROCM_W4A16_STREAM
    assert efficiency_for(base, H100, w4).weight_stream == 1.0
    assert efficiency_for(base, MI300X, DENSE).weight_stream == 1.0
    assert efficiency_for(base, MI300X, MXFP4_MOE).weight_stream == 1.0
    # one decode token with no context: 4.24e9 B of weights read as if 4.24e9 / 0.5 = 8.48e9 B at 5.3e12 x bw
    eff = replace(efficiency_for(EFF, MI300X, w4), gemm_kernel_s=0.0, quant_kernel_s=0.0)
    got = step_cost(w4, MI300X, eff, decode=1, context_sum=0).memory_s
    assert got == pytest.approx(4.24e9 / ROCM_W4A16_STREAM / (5.3e12 * eff.bandwidth), rel=1e-3)
    # routed experts of a GPTQ MoE too: 2e9 dense + 10e9 x 4/32 touched, both at half the rate
    moe = ModelPerf(**{**MXFP4_MOE.__dict__, "weight_format": ""})
    moe_eff = replace(efficiency_for(EFF, MI300X, moe), gemm_kernel_s=0.0, quant_kernel_s=0.0)
    got = step_cost(moe, MI300X, moe_eff, decode=1, context_sum=0).memory_s
    assert got == pytest.approx((2e9 + 1.25e9) / ROCM_W4A16_STREAM / (5.3e12 * moe_eff.bandwidth), rel=1e-3)
    # the scheduler's closure does the same arithmetic
    for model, e in ((w4, eff), (moe, moe_eff)):
        fn = make_step_fn(model, MI300X, e)
        for d, ctx, p in ((1, 0.0, 0), (16, 8000.0, 0), (4, 3000.0, 2048)):
            want = step_cost(model, MI300X, e, decode=d, context_sum=ctx, prefill_tokens=p, prefill_pairs=0.0)
            assert fn(d, ctx, p, 0.0)[0] == pytest.approx(want.seconds, rel=1e-9)


def test_mxfp4_upcast_compute_applies_to_hopper_mxfp4_experts_only() -> None:
    # plan/performance.py maps MXFP4 on Hopper to dense BF16 compute (triton matmul_ogs unpacks the experts inside
    # the GEMM): that model, and only it, computes at `mxfp4_upcast_compute` of the dense rate. Marlin's W4A16
    # (Ampere, ROCm) keeps `w4a16_compute`, native FP4 (Blackwell) the dense rate, an AWQ MoE its own kernel's
    hopper = ModelPerf(**{**MXFP4_MOE.__dict__, "weight_kernel": "dense"})
    base = Efficiency(compute=0.5, w4a16_compute=0.8, mxfp4_upcast_compute=0.7)
    assert efficiency_for(base, H100, hopper).compute == pytest.approx(0.5 * 0.7)
    assert efficiency_for(base, H100, MXFP4_MOE).compute == pytest.approx(0.5 * 0.8)
    fp4 = ModelPerf(**{**hopper.__dict__, "compute_precision": "fp4"})
    b200 = GpuPerf("b200", "nvidia", "blackwell", 8.0e12, {"bf16": 2250.0, "fp8": 4500.0, "fp4": 9000.0}, 900e9)
    assert efficiency_for(base, b200, fp4).compute == pytest.approx(0.5)
    assert efficiency_for(base, H100, ModelPerf(**{**hopper.__dict__, "weight_format": ""})).compute == pytest.approx(0.5)
    assert efficiency_for(base, H100, DENSE).compute == pytest.approx(0.5)
    # a compute-bound prefill step of the Hopper model takes 1 / 0.7 as long in its GEMMs
    eff = replace(efficiency_for(replace(EFF, mxfp4_upcast_compute=0.7), H100, hopper), gemm_kernel_s=0.0,
                  quant_kernel_s=0.0)
    assert eff.compute == pytest.approx(0.35)
    slow = step_cost(hopper, H100, eff, decode=0, context_sum=0, prefill_tokens=8192).compute_s
    fast = step_cost(hopper, H100, replace(eff, compute=EFF.compute), decode=0, context_sum=0,
                     prefill_tokens=8192).compute_s
    assert slow == pytest.approx(fast / 0.7, rel=1e-3)


def test_rocm_fp8_gemms_compute_at_their_own_factor_under_v1_only() -> None:
    # W8A8 FP8 linear layers on an AMD GPU under V1: the family's compute fraction x the FP8 factor x the ROCm one;
    # BF16 on the same GPU, FP8 on an NVIDIA GPU, and the old engine (rocm_legacy's own rule) keep theirs
    fp8 = ModelPerf(**{**DENSE.__dict__, "compute_precision": "fp8"})
    base = Efficiency(compute=0.5)
    bf16_mi300x = efficiency_for(base, MI300X, DENSE, (0, 11, 0)).compute
    fp8_mi300x = efficiency_for(base, MI300X, fp8, (0, 11, 0)).compute
    assert fp8_mi300x == pytest.approx(bf16_mi300x * 0.902 * ROCM_FP8_COMPUTE_FACTOR)
    assert efficiency_for(base, H100, fp8, (0, 11, 0)).compute == pytest.approx(0.5 * 0.902)
    v0 = efficiency_for(base, MI300X, fp8, (0, 6, 4)).compute
    assert v0 == pytest.approx(bf16_mi300x * 0.902)
    assert 0.5 < ROCM_FP8_COMPUTE_FACTOR < 0.8


def test_kv_reads_by_layer_kind() -> None:
    # 2 sequences, contexts summing to 10,000 tokens
    m = ModelPerf(tp=1, pp=1, layers=4, hidden_size=1024, dense_bytes=1, kv=(
        KVRead("full", 1, 100),                 # 100 B x 10,000 = 1.0 MB
        KVRead("sliding", 2, 100, window=1024),  # capped at 2 seqs x 1024 tokens: 2 x 100 x 2048 = 0.41 MB
        KVRead("mamba", 1, state_bytes=5000),    # constant state, read and written: 2 x 5000 x 2 = 20 kB
    ))
    assert m.kv_bytes_read(2, 10_000) == pytest.approx(1_000_000 + 409_600 + 20_000)


def test_pipeline_microbatches_follow_vllms_batch_queue() -> None:
    # vLLM keeps pipeline_parallel_size batches in flight (max_concurrent_batches); a sequence sits in one
    assert pipeline_microbatches(1, 500, 2048) == 1
    assert pipeline_microbatches(4, 500, 0) == 4
    assert pipeline_microbatches(4, 2, 0) == 2  # two sequences fill two micro-batches
    assert pipeline_microbatches(4, 2, 100) == 3  # the prompt chunk is a sequence of its own
    assert pipeline_microbatches(4, 0, 8192) == 1  # one prompt is not split


# the 8B model as two pipeline stages: each rank holds half the layers and half the weights
DENSE_PP2 = ModelPerf(tp=1, pp=2, layers=18, hidden_size=4096, dense_bytes=8_000_000_000, active_params=8e9,
                      attn_flops_per_pair=4 * 32 * 128 * 18, kv=(KVRead("full", 18, 4096),))


def test_pipeline_parallel_decode_by_hand() -> None:
    # one sequence: one micro-batch passes both stages in turn. Stage: 8e9 B / 2.68e12 = 2.98507 ms of weights;
    # KV 1000 x 18 x 4096 = 73.728 MB + 73,728 B written = 73.80 MB / 2.68e12 = 0.027539 ms; 18 x 4 GEMM
    # kernels x 3.8 us = 0.2736 ms. Step = 2 x (2.98507 + 0.027539 + 0.2736) = 6.5723 ms: the same weights
    # and KV as the one-rank model, read by two GPUs one after the other
    one = step_cost(DENSE_PP2, H100, EFF, decode=1, context_sum=1000)
    assert one.seconds == pytest.approx(2 * (2.98507e-3 + 0.027539e-3 + 0.2736e-3), rel=1e-4)
    # 2048 decoding sequences (contexts summing to 0): two micro-batches of 1024, each stage working on one
    # while the other stage works on the other. A micro-batch's GEMMs: 2 x 4e9 params/stage x 1024 tokens
    # = 8.192 TFLOP / 494.75e12 = 16.557 ms against 2.985 ms of weights: sqrt(16.557^2 + 2.985^2) = 16.824 ms;
    # its new KV 1024 x 18 x 4096 = 75.5 MB / 2.68e12 = 0.028172 ms; + 0.2736 ms of kernels = 17.126 ms a stage.
    # Step = 2 x 17.126 = 34.25 ms. Pushed through as one batch it would be 2 x sqrt(33.114^2 + 2.985^2) + ...
    # = 67.3 ms: the pipeline halves a compute-bound step
    many = step_cost(DENSE_PP2, H100, EFF, decode=2048, context_sum=0)
    stage = math.sqrt(16.557e-3 ** 2 + 2.98507e-3 ** 2) + 0.028172e-3 + 0.2736e-3
    assert many.seconds == pytest.approx(2 * stage, rel=1e-3)
    serial = 2 * (math.sqrt(33.114e-3 ** 2 + 2.98507e-3 ** 2) + 2 * 0.028172e-3 + 0.2736e-3)
    assert many.seconds < 0.55 * serial


# DENSE with a 0.5e9-parameter LM head inside its 8e9 active parameters (Llama-3.1-8B: 128,256 x 4096 = 0.525e9)
DENSE_LM = replace(DENSE, lm_head_params=0.5e9)


@pytest.mark.parametrize("model", [DENSE_PP2, DENSE_LM, replace(DENSE_PP2, lm_head_params=0.5e9)],
                         ids=["pipeline-stages", "lm-head", "pipeline-stages-lm-head"])
def test_fast_step_function_matches_step_cost_with_pipeline_stages(model: ModelPerf) -> None:
    fn = make_step_fn(model, H100, EFF)
    rng = random.Random(11)
    for _ in range(200):
        d = rng.randint(0, 300)
        ctx = rng.random() * 1e5 if d else 0.0
        p = rng.choice([0, rng.randint(1, 4000)])
        pairs = p * rng.random() * 2000
        want = step_cost(model, H100, EFF, decode=d, context_sum=ctx, prefill_tokens=p, prefill_pairs=pairs).seconds
        assert fn(d, ctx, p, pairs)[0] == pytest.approx(want, rel=1e-9)


def test_fast_step_function_matches_step_cost() -> None:
    m = ModelPerf(tp=2, pp=1, layers=32, hidden_size=4096, dense_bytes=5_000_000_000, expert_bytes=40_000_000_000,
                  num_experts=8, experts_per_token=2, active_params=13e9, attn_flops_per_pair=4 * 16 * 128 * 32,
                  kv=(KVRead("full", 16, 2048), KVRead("sliding", 16, 2048, 4096), KVRead("mamba", 4, state_bytes=10**6)))
    eff = Efficiency()
    fn = make_step_fn(m, H100, eff)
    rng = random.Random(7)
    for _ in range(200):
        d = rng.randint(0, 300)
        ctx = rng.random() * 1e5 if d else 0.0
        p = rng.randint(0, 4000)
        pairs = p * rng.random() * 2000
        want = step_cost(m, H100, eff, decode=d, context_sum=ctx, prefill_tokens=p, prefill_pairs=pairs).seconds
        assert fn(d, ctx, p, pairs)[0] == pytest.approx(want, rel=1e-9)


def test_async_scheduling_overlaps_host_work_with_the_gpus_by_hand() -> None:
    """Async scheduling: the step takes max(GPU work + the GPU-side rest of the fixed cost, host work), with
    host work = host share x step overhead + the per-sequence cost. DENSE at 1 sequence, 1000 context:
    GPU 6.5723 ms (test_single_decode_step_by_hand). Step overhead 2.5 ms, 20 us per sequence.
    Synchronous: 6.5723 + 2.5 + 0.02 = 9.0923 ms. Share 0.8: host 2.0 + 0.02 = 2.02 ms < GPU 6.5723 + 0.5
    = 7.0723 ms, so 7.0723 ms. A GPU step shorter than the host's (the weights 100x smaller) waits on the
    host instead: max(0.05972 + 0.05508 + 0.5472 + 0.5, 2.02) = 2.02 ms."""
    eff = Efficiency(bandwidth=0.8, compute=0.5, step_overhead_s=2.5e-3, per_seq_overhead_s=20e-6,
                     allreduce_latency_s=0.0)
    sync = step_cost(DENSE, H100, eff, decode=1, context_sum=1000).seconds
    assert sync == pytest.approx(9.0923e-3, rel=1e-3)
    overlapped = replace(eff, host_overlap=0.8)
    assert step_cost(DENSE, H100, overlapped, decode=1, context_sum=1000).seconds == pytest.approx(7.0723e-3, rel=1e-3)
    small = replace(DENSE, dense_bytes=DENSE.dense_bytes // 100)
    assert step_cost(small, H100, overlapped, decode=1, context_sum=1000).seconds == pytest.approx(2.02e-3, rel=1e-9)
    # the scheduler simulation's closure (and its decode-only stretches) give the same numbers
    fn = make_step_fn(DENSE, H100, overlapped)
    rng = random.Random(5)
    for _ in range(100):
        d = rng.randint(1, 300)
        ctx = rng.random() * 1e5
        p = rng.choice([0, rng.randint(1, 4000)])
        want = step_cost(DENSE, H100, overlapped, decode=d, context_sum=ctx, prefill_tokens=p,
                         prefill_pairs=p * 100.0).seconds
        assert fn(d, ctx, p, p * 100.0)[0] == pytest.approx(want, rel=1e-9)
        if not p:
            assert fn.decode_only(d)(ctx)[0] == fn(d, ctx, 0, 0.0)[0]


def test_family_priors_and_legacy_rocm() -> None:
    mi300 = GpuPerf("mi300x", "amd", "cdna3", 5.3e12, {"bf16": 1307.4}, 448e9, "xgmi")
    base = Efficiency(bandwidth=0.8, compute=0.6, rocm_legacy=0.5)
    new = efficiency_for(base, mi300, DENSE, (0, 11, 0))
    old = efficiency_for(base, mi300, DENSE, (0, 6, 2))
    assert old.bandwidth == pytest.approx(new.bandwidth * 0.5)
    assert efficiency_for(base, H100, DENSE).bandwidth == pytest.approx(0.8)  # Hopper is the baseline
    awq = ModelPerf(**{**DENSE.__dict__, "weight_kernel": "w4a16"})
    assert efficiency_for(base, H100, awq).compute < efficiency_for(base, H100, DENSE).compute


def test_ampere_fills_more_of_its_compute_peak_than_hopper() -> None:
    """An Ampere GPU's compute fraction moves by ampere_compute and its bandwidth fraction by AMPERE_BANDWIDTH_FACTOR
    (0.9); every other family stays as it was. A prefill-bound step gets faster by the compute factor."""
    from vllmkit.estimate.perf import AMPERE_BANDWIDTH_FACTOR

    a100 = GpuPerf("a100-80gb-sxm", "nvidia", "ampere", 2.039e12, {"bf16": 312.0}, 300e9)
    base = Efficiency(bandwidth=0.8, compute=0.4, ampere_compute=1.5)
    amp = efficiency_for(base, a100, DENSE)
    assert AMPERE_BANDWIDTH_FACTOR == 0.9
    assert amp.compute == pytest.approx(0.6) and amp.bandwidth == pytest.approx(0.72)
    assert efficiency_for(base, H100, DENSE).compute == pytest.approx(0.4)
    plain = efficiency_for(Efficiency(bandwidth=0.8, compute=0.4), a100, DENSE)
    slow = step_cost(DENSE, a100, plain, decode=0, context_sum=0, prefill_tokens=8192, prefill_pairs=0)
    fast = step_cost(DENSE, a100, amp, decode=0, context_sum=0, prefill_tokens=8192, prefill_pairs=0)
    assert fast.compute_s == pytest.approx(slow.compute_s / 1.5)


def test_v0_engines_pay_more_per_running_sequence() -> None:
    # vLLM < 0.8 (V0) processes every sequence's output in its step loop: the per-sequence cost is
    # v0_seq_factor x V1's. 64 decodes, 20 us x 5 = 100 us each: 6.4 ms instead of 1.28 ms
    base = Efficiency(bandwidth=0.8, compute=0.5, step_overhead_s=0.0, per_seq_overhead_s=20e-6, v0_seq_factor=5.0)
    v1 = step_cost(DENSE, H100, efficiency_for(base, H100, DENSE, (0, 11, 0)), decode=64, context_sum=0)
    v0 = step_cost(DENSE, H100, efficiency_for(base, H100, DENSE, (0, 6, 3)), decode=64, context_sum=0)
    assert v1.overhead_s == pytest.approx(64 * 20e-6)
    assert v0.overhead_s == pytest.approx(64 * 100e-6)
    assert v0.seconds - v1.seconds == pytest.approx(64 * 80e-6)


models = st.builds(
    lambda dense, ctx_tb, tp: ModelPerf(tp=tp, pp=1, layers=32, hidden_size=4096, dense_bytes=dense,
                                        active_params=dense / 2, attn_flops_per_pair=4 * 32 * 128 * 32 / tp,
                                        kv=(KVRead("full", 32, ctx_tb),)),
    st.integers(10**8, 4 * 10**11), st.integers(256, 8192), st.sampled_from([1, 2, 4, 8]))
effs = st.builds(Efficiency, bandwidth=st.floats(0.2, 1.0), compute=st.floats(0.1, 1.0),
                 step_overhead_s=st.floats(0, 0.01), per_seq_overhead_s=st.floats(0, 1e-4))


@settings(max_examples=200, deadline=None)
@given(models, effs, st.integers(1, 512), st.floats(0, 4096))
def test_a_decode_step_never_beats_weights_over_bandwidth(model, eff, batch, ctx) -> None:
    floor = decode_floor_seconds(model, H100)
    assert floor == pytest.approx(naive_roofline_tpot(model, H100))
    assert step_cost(model, H100, eff, decode=batch, context_sum=batch * ctx).seconds >= floor * (1 - 1e-12)


@settings(max_examples=100, deadline=None)
@given(models, st.integers(1, 256))
def test_step_time_grows_with_the_batch_but_less_than_linearly(model, batch) -> None:
    eff = Efficiency()
    one = step_cost(model, H100, eff, decode=batch, context_sum=batch * 500).seconds
    two = step_cost(model, H100, eff, decode=2 * batch, context_sum=2 * batch * 500).seconds
    assert one <= two <= 2 * one * (1 + 1e-9)
    assert math.isfinite(two)


def test_eager_dispatch_scales_with_the_kernels_a_layer_launches() -> None:
    """Launches per decoder layer counted in vLLM's modules (estimate/perf.py): a dense GQA layer 10 (the
    vllm#20469 calibration's kind); DeepSeek-V2-Lite at TP=2 has 26 fused-MoE layers of 27 (+4 each,
    +4 more for its shared experts), MLA (+4) and two all-reduces (+2): (10 + 26/27 x 8 + 4 + 2) / 10."""
    from vllmkit.estimate.perf import EAGER_DISPATCH_PER_LAYER_S, eager_launch_factor, with_eager

    dense = ModelPerf(tp=1, pp=1, layers=40, hidden_size=5120, dense_bytes=10**10)
    assert eager_launch_factor(dense) == 1.0
    assert with_eager(Efficiency(), dense).eager_dispatch_s == EAGER_DISPATCH_PER_LAYER_S
    lite = ModelPerf(tp=2, pp=1, layers=27, hidden_size=2048, dense_bytes=10**9, expert_bytes=10**10,
                     num_experts=64, experts_per_token=6, moe_layers=26, shared_experts=2,
                     kv=(KVRead(kind="mla", layers=27, token_bytes=1152),))
    assert eager_launch_factor(lite) == pytest.approx((10 + 26 / 27 * 8 + 4 + 2) / 10)


def test_eager_stage_time_overlaps_dispatch_and_gpu() -> None:
    """Per layer sqrt(gpu^2 + dispatch^2): short layers wait on the host, long ones hide it."""
    from vllmkit.estimate.perf import eager_stage_seconds

    assert eager_stage_seconds(40 * 0.1e-3, 40, 0.44e-3) == pytest.approx(40 * (0.1**2 + 0.44**2) ** 0.5 * 1e-3)
    long_layers = eager_stage_seconds(64 * 1.0e-3, 64, 0.44e-3)
    assert 64 * 1.0e-3 < long_layers < 64 * 1.1e-3  # a 1 ms layer hides most of a 0.44 ms dispatch
    assert eager_stage_seconds(0.01, 10, 0.0) == 0.01  # CUDA graphs


def test_largest_graph_capture_size_follows_vllm_defaults() -> None:
    """config/vllm.py _set_cudagraph_sizes (0.32): min(2 x max_num_seqs x decode query length, 512; 1024
    on sm 10.x), never above max_num_batched_tokens; the V0 engine's batch effects are left to its fit."""
    from vllmkit.estimate.perf import max_graph_tokens

    assert max_graph_tokens(1024, 8192) == 512  # H100 API server defaults
    assert max_graph_tokens(128, 8192) == 256
    assert max_graph_tokens(1024, 256) == 256
    assert max_graph_tokens(1024, 8192, sm100=True, vllm_version=(0, 32, 0)) == 1024
    assert max_graph_tokens(1024, 8192, sm100=True, vllm_version=(0, 19, 0)) == 512
    assert max_graph_tokens(256, 8192, vllm_version=(0, 6, 4)) == 0


def test_a_step_above_the_largest_graph_pays_eager_dispatch() -> None:
    """Up to the capture size the step replays a graph (no dispatch term); above it each layer's kernels
    are dispatched from the host, exactly as an --enforce-eager step of the same size."""
    from vllmkit.estimate.perf import with_eager, with_graph_limit

    limited = make_step_fn(DENSE, H100, with_graph_limit(EFF, DENSE, 512))
    graphed = make_step_fn(DENSE, H100, EFF)
    eager = make_step_fn(DENSE, H100, with_eager(EFF, DENSE))
    assert limited(512, 512 * 1000.0, 0, 0.0)[0] == graphed(512, 512 * 1000.0, 0, 0.0)[0]
    big = (600, 600 * 1000.0, 0, 0.0)
    assert limited(*big)[0] == pytest.approx(eager(*big)[0], rel=1e-12)
    assert limited(*big)[0] > graphed(*big)[0]
    # the slow path and step_cost agree
    eff = with_graph_limit(EFF, DENSE, 512)
    assert limited(*big)[0] == pytest.approx(step_cost(DENSE, H100, eff, decode=600, context_sum=600 * 1000.0).seconds,
                                             rel=1e-9)
    # --enforce-eager keeps its own term; a graph limit adds nothing to it
    assert with_graph_limit(with_eager(EFF, DENSE), DENSE, 512).graph_max_tokens == 0


@settings(max_examples=200, deadline=None)
@given(tp=st.sampled_from([1, 2, 8]), pp=st.sampled_from([1, 2, 4]), moe=st.booleans(), window=st.booleans(),
       mamba=st.booleans(), sparse=st.booleans(), dispatch=st.sampled_from(["graphs", "eager", "graph-limit"]),
       kernel=st.sampled_from(["dense", "w4a16"]), decode=st.integers(1, 600),
       ctx=st.floats(0, 5e7, allow_nan=False))
def test_decode_only_is_the_step_function_to_the_last_bit(tp, pp, moe, window, mamba, sparse, dispatch, kernel,
                                                          decode, ctx) -> None:
    """make_step_fn's `decode_only(d)(ctx)` (used for the scheduler simulation's decode-only stretches)
    precomputes what does not depend on the context; it must return exactly fn(d, ctx, 0, 0.0) for every
    kind of model: pipeline micro-batches, MoE experts, sliding windows, mamba state, sparse attention,
    eager or graph-limited dispatch, all-reduces."""
    kv = [KVRead("full", 8, 4096)]
    if window:
        kv.append(KVRead("sliding", 24, 2048, window=4096))
    if mamba:
        kv.append(KVRead("mamba", 12, state_bytes=3_000_000))
    model = ModelPerf(tp=tp, pp=pp, layers=32, hidden_size=4096, dense_bytes=9_000_000_000, active_params=8e9,
                      attn_flops_per_pair=4 * 32 * 128 * 32, kv=tuple(kv), weight_kernel=kernel,
                      **({"expert_bytes": 40_000_000_000, "num_experts": 128, "experts_per_token": 8,
                          "moe_layers": 32, "expert_width": 768} if moe else {}),
                      **({"sparse_topk": 2048, "indexer_flops_per_pair": 4096.0} if sparse else {}))
    eff = Efficiency(bandwidth=0.85, compute=0.45, eager_dispatch_s=2e-5 if dispatch == "eager" else 0.0,
                     graph_max_tokens=256 if dispatch == "graph-limit" else 0, graphless_dispatch_s=1e-5)
    fn = make_step_fn(model, H100, eff)
    assert fn.decode_only(decode)(ctx) == fn(decode, ctx, 0, 0.0)



def test_rocm_legacy_slows_16_bit_models_on_rocm_before_0_8_only() -> None:
    """The factor stands for BF16 runs of ROCm vLLM 0.6 (dstack, Argonne); FP8 checkpoints there ran hipBLASLt FP8
    GEMMs near the unpenalised rates (three publishers), and from 0.8 (V1, AITER) neither is slowed."""
    from vllmkit.estimate.perf import rocm_legacy_applies

    mi300 = GpuPerf("mi300x", "amd", "cdna3", 5.3e12, {"bf16": 1307.4, "fp8": 2614.9}, 448e9, "xgmi")
    fp8 = replace(DENSE, compute_precision="fp8")
    awq = replace(DENSE, compute_precision="fp16", weight_kernel="w4a16")
    assert rocm_legacy_applies(mi300, DENSE, (0, 6, 3))
    assert not rocm_legacy_applies(mi300, fp8, (0, 6, 3))
    assert not rocm_legacy_applies(mi300, awq, (0, 6, 1))  # vllm#8646's AWQ runs (round 32)
    assert not rocm_legacy_applies(mi300, DENSE, (0, 8, 0))
    assert not rocm_legacy_applies(H100, DENSE, (0, 6, 3))
    base = Efficiency(bandwidth=0.8, compute=0.6, rocm_legacy=0.5)
    new = efficiency_for(base, mi300, fp8, (0, 11, 0))
    assert efficiency_for(base, mi300, fp8, (0, 6, 3)).bandwidth == pytest.approx(new.bandwidth)
    assert efficiency_for(base, mi300, DENSE, (0, 6, 3)).bandwidth == pytest.approx(new.bandwidth * 0.5)


def test_a_prompt_chunk_runs_the_lm_head_at_its_last_position_only() -> None:
    # vLLM computes logits at one position per request (gpu_model_runner.py: compute_logits on
    # hidden_states[logits_indices]). 4096 prompt tokens: GEMM 2 x 7.5e9 x 4096 + 2 x 0.5e9 x 1
    # = 61.44 TFLOP / 494.75 TFLOP/s = 124.19 ms, blended with the weight stream sqrt(124.19^2 + 5.97^2)
    # = 124.33 ms, + 0.5472 ms of GEMM kernels + 10.0 ms of attention (test_prefill_step_by_hand_is_compute_bound)
    cost = step_cost(DENSE_LM, H100, EFF, decode=0, context_sum=0, prefill_tokens=4096, prefill_pairs=4096 * 2048)
    assert cost.seconds == pytest.approx(124.33e-3 + 0.5472e-3 + 10.0e-3, rel=1e-3)
    # the same step without the split counts the LM head at all 4096 positions: 8.3 ms more
    plain = step_cost(DENSE, H100, EFF, decode=0, context_sum=0, prefill_tokens=4096, prefill_pairs=4096 * 2048)
    assert plain.seconds - cost.seconds == pytest.approx(8.27e-3, rel=2e-2)


def test_decode_steps_compute_the_lm_head_for_every_sequence() -> None:
    # every decoding sequence samples a token: nothing to subtract, the step is the plain model's
    for batch in (1, 64, 512):
        assert (step_cost(DENSE_LM, H100, EFF, decode=batch, context_sum=1000.0 * batch).seconds
                == step_cost(DENSE, H100, EFF, decode=batch, context_sum=1000.0 * batch).seconds)



def test_ampere_streams_weights_at_nine_tenths_of_the_hopper_share() -> None:
    """A decode step of one sequence on an A100 80GB (2,039 GB/s) streams the weights at 0.9 x the fitted Hopper
    share: 16 GB at 0.8 x 0.9 x 2.039 TB/s = 10.90 ms of memory time (hand-worked), where the same share on an
    H100-like part would give 9.81 ms. GDDR Ampere (an RTX 3090) gets the factor too, an Ada L40S does not (AMPERE_
    BANDWIDTH_FACTOR: chosen leaving each held-out Ampere publisher out, 0.9 in 20 of 21 folds)."""
    dense16 = ModelPerf(**{**DENSE.__dict__, "dense_bytes": 16e9})
    a100 = GpuPerf("a100-80gb-sxm", "nvidia", "ampere", 2.039e12, {"bf16": 312.0}, 300e9)
    base = Efficiency(bandwidth=0.8, compute=0.4)
    step = step_cost(dense16, a100, efficiency_for(base, a100, dense16), decode=1, context_sum=0)
    assert step.memory_s == pytest.approx(16e9 / (0.8 * 0.9 * 2.039e12), rel=0.01)
    rtx3090 = GpuPerf("rtx-3090", "nvidia", "ampere", 936e9, {"bf16": 71.0}, 64e9)
    l40s = GpuPerf("l40s", "nvidia", "ada", 864e9, {"bf16": 362.05}, 64e9)
    assert efficiency_for(base, rtx3090, dense16).bandwidth == pytest.approx(0.72)
    assert efficiency_for(base, l40s, dense16).bandwidth == pytest.approx(0.8)


def test_attention_of_an_fp8_model_runs_at_the_16_bit_rate_by_hand() -> None:
    """vLLM's attention kernels compute on the 16-bit activations whatever the linear layers run in; only the
    GEMMs of an FP8 checkpoint get FP8 tensor cores. The 4096-token prompt of test_prefill_step_by_hand as FP8
    W8A8 (8 GB of weights): GEMMs 65.54 TFLOP at 1979 x 0.5 TFLOP/s = 66.24 ms, blended with the weight stream
    (8e9 / 2.68e12 = 2.985 ms) sqrt(66.24^2 + 2.985^2) = 66.31 ms, + 144 GEMM kernels and 144 quantisation
    kernels; attention 4.95 TFLOP at the BF16 494.75 TFLOP/s = 10.0 ms, as for the BF16 model (at the FP8 rate
    it would be 5.0 ms)."""
    fp8 = replace(DENSE, dense_bytes=8_000_000_000, compute_precision="fp8")
    eff = replace(EFF, gemm_kernel_s=3.8e-6, quant_kernel_s=2.0e-6)
    cost = step_cost(fp8, H100, eff, decode=0, context_sum=0, prefill_tokens=4096, prefill_pairs=4096 * 2048)
    assert cost.seconds == pytest.approx(66.31e-3 + 144 * 3.8e-6 + 144 * 2.0e-6 + 10.0e-3, rel=1e-3)
    step = make_step_fn(fp8, H100, eff)
    assert step(0, 0.0, 4096, 4096 * 2048)[0] == pytest.approx(cost.seconds, rel=1e-9)


def test_efficiency_for_keeps_the_gemm_factors_out_of_attention() -> None:
    """efficiency_for scales `compute` by the GEMM kernel's rate (W4A16, MXFP4 upcast), the FP8 GEMMs' measured
    share of their peak (0.902) and ROCm's FP8 GEMM rate; the attention kernels keep the family's 16-bit share."""
    base = Efficiency(compute=0.5, w4a16_compute=0.8)
    bf16 = efficiency_for(base, H100, DENSE)
    fp8 = efficiency_for(base, H100, replace(DENSE, compute_precision="fp8"))
    w4 = efficiency_for(base, H100, replace(DENSE, weight_kernel="w4a16"))
    assert bf16.attention_compute == pytest.approx(bf16.compute)
    assert fp8.compute == pytest.approx(bf16.compute * 0.902)
    assert w4.compute == pytest.approx(bf16.compute * 0.8)
    assert fp8.attention_compute == pytest.approx(bf16.compute) == pytest.approx(w4.attention_compute)
    mi300x = GpuPerf("mi300x", "amd", "cdna3", 5.3e12, {"bf16": 1307.4, "fp8": 2614.9}, 64e9, "xgmi")
    rocm_bf16 = efficiency_for(base, mi300x, DENSE, (0, 10, 0))
    rocm_fp8 = efficiency_for(base, mi300x, replace(DENSE, compute_precision="fp8"), (0, 10, 0))
    assert rocm_fp8.compute == pytest.approx(rocm_bf16.compute * 0.902 * ROCM_FP8_COMPUTE_FACTOR)
    assert rocm_fp8.attention_compute == pytest.approx(rocm_bf16.compute)
