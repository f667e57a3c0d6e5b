"""The performance model against what a real H200 measured, 2026-11-30 (no GPU needed here: the
probe files are the measurement):

- benchmarks/data/gpu-probe-h200.json (benchmarks/gpu_probe.py): memory, copy bandwidth, and
  Llama-3.1-8B-shaped linear layers launched one by one, M = 1 ... 8192 tokens, BF16 and FP8;
- benchmarks/data/gpu-probe-h200-shapes.json (benchmarks/gpu_probe_shapes.py): the linear layers of
  Llama-3.1-8B at TP1 / TP4 and Llama-3.1-70B at TP4 per rank, captured in one CUDA graph (as vLLM
  decodes) and eagerly; BF16, FP8, and FP8 with a cast kernel before each GEMM (W8A8).

An engine step runs these GEMMs plus attention, sampling and scheduling, so the model's GEMM time can
never be much shorter than the measured GEMMs alone, and its fitted fractions of the datasheet peaks
(FITTED_EFFICIENCY, fitted by benchmarks/perf_accuracy.py on public vLLM runs) cannot exceed what the
kernels reached."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllmkit.estimate.perf import (
    GEMM_KERNEL_S,
    PRECISION_COMPUTE_FACTOR,
    QUANT_KERNEL_S,
    Efficiency,
    ModelPerf,
    efficiency_for,
    gemm_seconds,
    make_step_fn,
    step_cost,
)
from vllmkit.hardware.profiles import load_profiles, resolve_gpu
from vllmkit.plan.performance import FITTED_EFFICIENCY, gpu_perf

DATA = Path(__file__).parents[3] / "benchmarks" / "data"
PROBE = json.loads((DATA / "gpu-probe-h200.json").read_text())
SHAPES = json.loads((DATA / "gpu-probe-h200-shapes.json").read_text())
GRAPHS = SHAPES["graphs"]
H200 = gpu_perf(resolve_gpu("h200", profiles=load_profiles(include_user_config=False)))
COPY = PROBE["copy_bytes_per_s"]  # 4.28 TB/s, bytes read + written


def layers_of(shape: dict, precision: str) -> ModelPerf:
    """The probe's layers as the model sees them: weights only (no KV, no attention, no embedding)."""
    return ModelPerf(tp=1, pp=1, layers=shape["layers"], hidden_size=4096,
                     dense_bytes=shape["params"] * (2 if precision == "bf16" else 1),
                     active_params=float(shape["params"]), compute_precision=precision)


def graph_row(name: str, precision: str, tokens: int) -> dict:
    return next(r for r in GRAPHS[name]["rows"] if r["precision"] == precision and r["tokens"] == tokens)


def all_rows(precision: str) -> list[dict]:
    rows = [r for r in PROBE["linear_layers"]["rows"] if r["precision"] == precision]
    for timing in ("graphs", "eager"):
        for shape in SHAPES[timing].values():
            rows += [r for r in shape["rows"] if r["precision"] == precision]
    return rows


def test_the_probes_are_the_h200_and_the_llama_shapes() -> None:
    # 8B: 32 x (4096 x 6144 qkv + 4096 x 4096 o + 4096 x 28672 gate_up + 14336 x 4096 down) = 6,979,321,856
    assert PROBE["linear_layers"]["params"] == GRAPHS["8b-tp1"]["params"] == 6_979_321_856
    # 70B at TP4, per rank: 80 x (8192 x 2560 + 2048 x 8192 + 8192 x 14336 + 7168 x 8192) = 17,112,760,320
    assert GRAPHS["70b-tp4"]["params"] == 80 * (8192 * 2560 + 2048 * 8192 + 8192 * 14336 + 7168 * 8192)
    assert H200.bandwidth_bytes_s == pytest.approx(4.8e12) and H200.tflops["bf16"] == pytest.approx(989.5)


def test_fitted_fractions_do_not_exceed_the_measured_ceilings() -> None:
    # the weight stream is bounded by the copy bandwidth (the GEMMs' fixed kernel cost is counted apart);
    # compute by the best BF16 linear-layer rate of any shape at >= 1024 tokens (688 TFLOP/s; compute-bound
    # steps are prefill chunks that large)
    assert FITTED_EFFICIENCY.bandwidth * H200.bandwidth_bytes_s <= COPY
    plateau = max(r["flops_per_s"] for r in all_rows("bf16") if r["tokens"] >= 1024)
    assert FITTED_EFFICIENCY.compute * H200.tflops["bf16"] * 1e12 <= plateau
    fp8 = efficiency_for(FITTED_EFFICIENCY, H200, layers_of(GRAPHS["8b-tp1"], "fp8"))
    best_fp8 = max(r["flops_per_s"] for r in all_rows("fp8") if r["tokens"] >= 1024)  # 1247 TFLOP/s
    assert fp8.compute * H200.tflops["fp8"] * 1e12 <= best_fp8


@pytest.mark.parametrize("name", ["8b-tp1", "70b-tp4"])
@pytest.mark.parametrize("precision", ["bf16", "fp8q"])
def test_a_step_never_runs_its_gemms_faster_than_the_h200_did(name: str, precision: str) -> None:
    shape = GRAPHS[name]
    model = layers_of(shape, "bf16" if precision == "bf16" else "fp8")
    eff = efficiency_for(FITTED_EFFICIENCY, H200, model)
    for r in (x for x in shape["rows"] if x["precision"] == precision):
        cost = step_cost(model, H200, eff, decode=0, context_sum=0, prefill_tokens=r["tokens"])
        gemms = cost.seconds - cost.overhead_s  # no KV, attention or all-reduce: the linear layers alone
        # 10 %: the blend's own error against the probe (< 10 % with the probe's own ceilings, see
        # test_kernel_costs_and_blend_reproduce_the_graph_probe) and the plateau's spread between runs
        # and shapes (646-688 TFLOP/s BF16 at M >= 1024)
        assert gemms >= 0.90 * r["seconds"], (name, precision, r["tokens"], gemms, r["seconds"])
        assert gemms <= 1.6 * r["seconds"], (name, precision, r["tokens"], gemms, r["seconds"])


def test_kernel_costs_by_hand_from_the_graph_probe() -> None:
    # one token, BF16: weights / copy bandwidth + 4 GEMMs per layer x 3.8 us
    # 8B TP1: 13,958,643,712 B / 4.28e12 = 3.261 ms + 128 x 3.8 us = 0.486 ms -> 3.748 ms (measured 3.743)
    # 70B TP4: 34,225,520,640 B / 4.28e12 = 7.997 ms + 320 x 3.8 us = 1.216 ms -> 9.213 ms (measured 9.183)
    # FP8 + quant, 8B: 6,979,321,856 / 4.28e12 = 1.631 ms + 128 x (3.8 + 1.4) us = 0.666 ms -> 2.296 (2.268)
    for name, precision, want in (("8b-tp1", "bf16", 3.748e-3), ("70b-tp4", "bf16", 9.213e-3),
                                  ("8b-tp1", "fp8q", 2.296e-3)):
        shape = GRAPHS[name]
        bpw = 2 if precision == "bf16" else 1
        layers = shape["layers"]
        predicted = shape["params"] * bpw / 4.28e12 + 4 * layers * (
            GEMM_KERNEL_S + (QUANT_KERNEL_S if precision == "fp8q" else 0.0))
        assert predicted == pytest.approx(want, rel=1e-3)
        assert predicted == pytest.approx(graph_row(name, precision, 1)["seconds"], rel=0.02)


def test_kernel_costs_and_blend_reproduce_the_graph_probe() -> None:
    # the model's GEMM form with the probe's own ceilings (copy bandwidth, ~660 / 1190 TFLOP/s plateaus)
    # against every CUDA-graph row of the two wide shapes: within 10 %
    eff = Efficiency(bandwidth=COPY / H200.bandwidth_bytes_s, compute=660e12 / 989.5e12 / 1.0,
                     step_overhead_s=0.0, per_seq_overhead_s=0.0)
    worst = 0.0
    for name in ("8b-tp1", "70b-tp4"):
        for r in GRAPHS[name]["rows"]:
            if r["precision"] == "fp8":
                continue  # activations already FP8: no quant kernel, which the model always counts
            model = layers_of(GRAPHS[name], "bf16" if r["precision"] == "bf16" else "fp8")
            e = efficiency_for(eff, H200, model)
            cost = step_cost(model, H200, e, decode=0, context_sum=0, prefill_tokens=r["tokens"])
            worst = max(worst, abs((cost.seconds - cost.overhead_s) / r["seconds"] - 1))
    assert worst < 0.10
    # the blend is why: max(m, c) + kernels misses M = 256 on 8B by more than the blend does
    r = graph_row("8b-tp1", "bf16", 256)
    m, c = 2 * 6_979_321_856 / COPY, 2 * 6_979_321_856 * 256 / 660e12
    kernels = 128 * GEMM_KERNEL_S
    assert abs(gemm_seconds(m, c) + kernels - r["seconds"]) < abs(max(m, c) + kernels - r["seconds"])


def test_fp8_decode_is_about_1_65x_bf16_not_2x() -> None:
    # measured under CUDA graphs at one token: 8B 3.743 / 2.268 = 1.65, 70B TP4 9.183 / 5.531 = 1.66
    base = Efficiency(bandwidth=0.8, compute=0.6, step_overhead_s=0.0, per_seq_overhead_s=0.0)
    for name in ("8b-tp1", "70b-tp4"):
        shape = GRAPHS[name]
        times = {}
        for precision in ("bf16", "fp8"):
            model = layers_of(shape, precision)
            times[precision] = step_cost(model, H200, efficiency_for(base, H200, model), decode=1, context_sum=0).seconds
        measured = graph_row(name, "bf16", 1)["seconds"] / graph_row(name, "fp8q", 1)["seconds"]
        assert 1.5 < times["bf16"] / times["fp8"] < 1.8
        assert times["bf16"] / times["fp8"] == pytest.approx(measured, abs=0.1)


def test_fp8_compute_factor_is_the_probes_plateau_ratio() -> None:
    rows = PROBE["linear_layers"]["rows"]

    def plateau(precision: str) -> float:
        xs = [r["flops_per_s"] / (H200.tflops[precision] * 1e12) for r in rows
              if r["precision"] == precision and r["tokens"] >= 1024]
        return sum(xs) / len(xs)

    assert PRECISION_COMPUTE_FACTOR["fp8"] == pytest.approx(plateau("fp8") / plateau("bf16"), abs=0.005)


def test_fast_step_function_counts_the_kernels_too() -> None:
    for precision in ("bf16", "fp8"):
        model = layers_of(GRAPHS["70b-tp4"], precision)
        eff = efficiency_for(FITTED_EFFICIENCY, H200, model)
        fn = make_step_fn(model, H200, eff)
        for d, p in ((1, 0), (8, 0), (0, 512), (32, 2048)):
            want = step_cost(model, H200, eff, decode=d, context_sum=100.0 * d, prefill_tokens=p,
                             prefill_pairs=p * 100.0).seconds
            assert fn(d, 100.0 * d, p, p * 100.0)[0] == pytest.approx(want, rel=1e-9)
