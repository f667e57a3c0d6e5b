"""When nothing fits: the option shown is the one the least memory short, and the hint names a flag that
would change the outcome.

Llama-3.1-70B on two L4s (22.05 GiB as torch reports, x 0.92 = 20.29 GiB requested per GPU): BF16 needs
131.45 GiB of weights (65.7 per GPU at TP=2), FP8 67.7 (33.9 per GPU), AWQ-INT4 37.07 (18.55 per GPU).
Only AWQ at TP=2 comes near: 20.29 - 18.55 = 1.74 GiB left for non-torch (~1.4 with NCCL), activation and
CUDA graphs, a fraction of a GiB short. Before, the planner showed BF16 at TP=1 (the first in its order),
131 GiB of weights on a 22 GiB card, and its hint asked for --tensor-parallel-size, which with
--gpu-count 2 already given could not help."""

from __future__ import annotations

from vllmkit.plan.models import PlanRequest
from vllmkit.plan.ranking import rank
from vllmkit.plan.result import does_not_fit_error, more_gpus_hint
from vllmkit.plan.service import build_plan

ENV = {"VLLMKIT_NO_CALIBRATION": "1"}
GIB = 1 << 30


def test_closest_is_the_least_short_option() -> None:
    plan = build_plan(PlanRequest(model="meta-llama/Llama-3.1-70B-Instruct", source="catalog", gpu="l4", gpu_count=2),
                      ENV)
    assert not plan.fits
    assert plan.parallel.tensor_parallel_size == 2
    assert plan.model.quantization == "awq"
    short = -plan.memory.kv_cache_bytes
    # AWQ on two L4s: within 1.5 GiB (vLLM >= 0.20 charges its CUDA-graph estimate, ~1.4 GiB for 80 layers of
    # 8,192 at 256 sequences), the others are tens of GiB short
    assert 0 < short < 1.5 * GIB
    err = does_not_fit_error(plan)
    assert err is not None
    # already quantized: the hint does not offer a quantized variant, and asks for twice the GPUs given
    assert err.hint == "the weights leave no KV memory: use more GPUs (--gpu-count 4)"


def test_fixed_tp_hint_doubles_the_tp() -> None:
    # --tensor-parallel-size fixes TP and the precision: --gpu-count would not change the plan
    req = PlanRequest(model="Qwen/Qwen3-32B", source="catalog", gpu="l4", tensor_parallel_size=2, max_model_len=40960)
    plan = build_plan(req, ENV)
    assert not plan.fits
    err = does_not_fit_error(plan, tp_given=2)
    assert err is not None and "--tensor-parallel-size 4" in err.hint and "a quantized variant" in err.hint
    assert "--gpu-count" not in err.hint


def test_rank_orders_misfits_by_shortfall_only_among_misfits() -> None:
    common = dict(label="bf16", base_weight_bytes=140 * 10**9, max_model_len=8192, profile=_Profile(),
                  gpu_count_given=True)
    near = rank(useful=False, fits=False, gpus=2, short_bytes=GIB // 2, **common)
    far = rank(useful=False, fits=False, gpus=1, short_bytes=100 * GIB, **common)
    fits = rank(useful=False, fits=True, gpus=8, short_bytes=0, **common)
    assert near < far  # fewer GPUs used to win among misfits; the memory short now decides
    assert fits < near  # anything that fits still comes before every misfit


def test_hint_wording() -> None:
    assert more_gpus_hint(["--kv-cache-dtype fp8"], 2, quantized=False) == (
        "use --kv-cache-dtype fp8, a quantized variant or more GPUs (--gpu-count 4)")
    assert more_gpus_hint([], 8, quantized=True) == "use more GPUs (--gpu-count 16)"


class _Profile:
    vendor = "nvidia"
    fp8_supported = True
