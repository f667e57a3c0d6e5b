"""The performance model against what a real H200 measured (benchmarks/data/gpu-probe-h200.json,
written by benchmarks/gpu_probe.py on a lent H200, 2026-11-30): Llama-3.1-8B-shaped linear layers
(32 distinct layers, 6,979,321,856 parameters) timed at M = 1 ... 8192 tokens in BF16 and FP8.

An engine step runs these GEMMs plus attention, sampling and scheduling, so the model's GEMM time
for a step can never be shorter than the measured GEMMs alone: the fitted fractions of the datasheet
peaks (FITTED_EFFICIENCY, fitted by benchmarks/perf_accuracy.py on public vLLM runs) must stay at or
below what the kernels reached. No GPU is needed here: the probe's numbers are the measurement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllmkit.estimate.perf import (
    PRECISION_BANDWIDTH_FACTOR,
    PRECISION_COMPUTE_FACTOR,
    Efficiency,
    ModelPerf,
    efficiency_for,
    gemm_seconds,
    make_step_fn,
    step_cost,
)
from vllmkit.hardware.profiles import load_profiles, resolve_gpu
from vllmkit.plan.performance import FITTED_EFFICIENCY, gpu_perf

PROBE = json.loads((Path(__file__).parents[3] / "benchmarks" / "data" / "gpu-probe-h200.json").read_text())
ROWS = PROBE["linear_layers"]["rows"]
PARAMS = PROBE["linear_layers"]["params"]
H200 = gpu_perf(resolve_gpu("h200", profiles=load_profiles(include_user_config=False)))


def linear_layers(precision: str) -> ModelPerf:
    """The probe's layers as the model sees them: weights only (no KV, no attention, no embedding)."""
    return ModelPerf(tp=1, pp=1, layers=32, hidden_size=4096, dense_bytes=PARAMS * (1 if precision == "fp8" else 2),
                     active_params=float(PARAMS), compute_precision=precision)


def rows(precision: str) -> list[dict]:
    return [r for r in ROWS if r["precision"] == precision]


def test_the_probe_is_the_h200_and_the_8b_shapes() -> None:
    # 32 x (4096 x 6144 qkv + 4096 x 4096 o + 3 x 4096 x 14336 mlp) = 6,979,321,856
    assert PARAMS == 32 * (4096 * 6144 + 4096 * 4096 + 3 * 4096 * 14336)
    assert H200.bandwidth_bytes_s == pytest.approx(4.8e12) and H200.tflops["bf16"] == pytest.approx(989.5)


def test_fitted_fractions_do_not_exceed_the_measured_kernel_ceilings() -> None:
    best_stream = max(r["weight_bytes_per_s"] for r in rows("bf16"))  # 3.556 TB/s at M = 1-2
    best_flops = max(r["flops_per_s"] for r in rows("bf16"))  # 673 TFLOP/s at M = 8192
    assert FITTED_EFFICIENCY.bandwidth * H200.bandwidth_bytes_s <= best_stream
    assert FITTED_EFFICIENCY.compute * H200.tflops["bf16"] * 1e12 <= best_flops
    fp8 = efficiency_for(FITTED_EFFICIENCY, H200, linear_layers("fp8"))
    assert fp8.weight_bandwidth * H200.bandwidth_bytes_s <= max(r["weight_bytes_per_s"] for r in rows("fp8"))
    assert fp8.compute * H200.tflops["fp8"] * 1e12 <= max(r["flops_per_s"] for r in rows("fp8"))


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_a_step_never_runs_its_gemms_faster_than_the_h200_did(precision: str) -> None:
    model = linear_layers(precision)
    eff = efficiency_for(FITTED_EFFICIENCY, H200, model)
    for r in rows(precision):
        cost = step_cost(model, H200, eff, decode=0, context_sum=0, prefill_tokens=r["tokens"])
        # no KV, no attention, no all-reduce: what is left besides the overhead is the GEMMs
        gemms = cost.seconds - cost.overhead_s
        assert gemms == pytest.approx(gemm_seconds(cost.memory_s, cost.compute_s))
        # 2 %: the probe's own noise between neighbouring token counts (FP8 streams at 2.84 TB/s at
        # M = 8 and 2.99 at M = 16)
        assert gemms >= 0.98 * r["seconds"], (precision, r["tokens"], gemms, r["seconds"])
        # ... and not far slower either: the fitted model is within 35 % of the bare kernels
        assert gemms <= 1.35 * r["seconds"], (precision, r["tokens"], gemms, r["seconds"])


def test_the_blended_roofline_follows_the_probe_where_max_does_not() -> None:
    # with the probe's own ceilings (3.556 TB/s, 673 TFLOP/s) at M = 256 BF16:
    # memory 13,958,643,712 B / 3.556e12 = 3.925 ms; compute 2 x 6,979,321,856 x 256 / 673e12 = 5.310 ms
    # max = 5.310 ms (19 % fast), sqrt(3.925^2 + 5.310^2) = 6.603 ms; measured 6.543 ms
    m = 2 * PARAMS / 3.556e12
    c = 2 * PARAMS * 256 / 673e12
    assert m == pytest.approx(3.925e-3, rel=1e-3) and c == pytest.approx(5.310e-3, rel=1e-3)
    assert gemm_seconds(m, c) == pytest.approx(6.603e-3, rel=1e-3)
    measured = next(r["seconds"] for r in rows("bf16") if r["tokens"] == 256)
    assert abs(gemm_seconds(m, c) / measured - 1) < 0.02 < abs(max(m, c) / measured - 1)


def test_fp8_decode_is_the_probes_1_65x_not_2x_by_hand() -> None:
    # bf16: 2 x 6,979,321,856 B / (4.8e12 x 0.7)          = 13,958,643,712 / 3.36e12   = 4.1544 ms
    # fp8:  6,979,321,856 B / (4.8e12 x 0.7 x 0.826)      =  6,979,321,856 / 2.77536e12 = 2.5148 ms
    # ratio 4.1544 / 2.5148 = 2 x 0.826 = 1.652
    base = Efficiency(bandwidth=0.7, compute=0.6, step_overhead_s=0.0, per_seq_overhead_s=0.0)
    bf16 = step_cost(linear_layers("bf16"), H200, efficiency_for(base, H200, linear_layers("bf16")),
                     decode=1, context_sum=0)
    fp8 = step_cost(linear_layers("fp8"), H200, efficiency_for(base, H200, linear_layers("fp8")),
                    decode=1, context_sum=0)
    assert bf16.seconds == pytest.approx(4.1544e-3, rel=1e-4)
    assert fp8.seconds == pytest.approx(2.5148e-3, rel=1e-4)
    # the measured ratio at M = 1..8 (the probe's own seconds): 1.65-1.72
    measured = [b["seconds"] / f["seconds"] for b, f in zip(rows("bf16")[:4], rows("fp8")[:4], strict=True)]
    assert min(measured) - 0.05 <= bf16.seconds / fp8.seconds <= max(measured) + 0.05


def test_precision_factors_are_the_probes_ratios() -> None:
    small = [1, 2, 4, 8]
    big = [1024, 2048, 4096, 8192]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    stream = {p: mean([r["weight_bytes_per_s"] for r in rows(p) if r["tokens"] in small]) for p in ("bf16", "fp8")}
    flops = {p: mean([r["flops_per_s"] / H200.tflops[p] / 1e12 for r in rows(p) if r["tokens"] in big])
             for p in ("bf16", "fp8")}
    assert PRECISION_BANDWIDTH_FACTOR["fp8"] == pytest.approx(stream["fp8"] / stream["bf16"], abs=0.005)
    assert PRECISION_COMPUTE_FACTOR["fp8"] == pytest.approx(flops["fp8"] / flops["bf16"], abs=0.005)


def test_fast_step_function_uses_the_weight_bandwidth_too() -> None:
    model = linear_layers("fp8")
    eff = efficiency_for(FITTED_EFFICIENCY, H200, model)
    fn = make_step_fn(model, H200, eff)
    for d, p in ((1, 0), (8, 0), (0, 512), (32, 2048)):
        want = step_cost(model, H200, eff, decode=d, context_sum=100.0 * d, prefill_tokens=p,
                         prefill_pairs=p * 100.0).seconds
        assert fn(d, 100.0 * d, p, p * 100.0)[0] == pytest.approx(want, rel=1e-9)
