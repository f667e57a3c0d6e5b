"""The scheduler simulation (estimate/scheduler_sim.py) on cases small enough to work out by hand,
with a step cost that is easy to reason about (mocked: the real one needs a GPU profile)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllmkit.estimate.perf import Efficiency, GpuPerf, KVRead, ModelPerf
from vllmkit.estimate.scheduler_sim import SchedulerLimits, percentile, simulate
from vllmkit.estimate.serving import Workload, predict, request_lengths

WIDE = SchedulerLimits(max_num_seqs=256, max_num_batched_tokens=8192, kv_capacity_tokens=10**7)


def flat(decode: int, ctx: float, prefill: int, pairs: float) -> tuple[float, bool]:
    return 0.010, False  # every step 10 ms, whatever it holds


def test_one_request_by_hand() -> None:
    # prompt in one step (first token at 10 ms), then 9 more tokens, one per 10 ms step
    r = simulate([100], [10], WIDE, flat)
    assert r.ttft_s == [pytest.approx(0.010)]
    assert r.tpot_s == [pytest.approx(0.010)]
    assert r.e2e_s == [pytest.approx(0.100)]
    assert r.duration_s == pytest.approx(0.100)


def test_chunked_prefill_splits_a_long_prompt() -> None:
    # 10,000 prompt tokens with a 4096-token budget: 3 steps before the first token
    limits = SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=4096, kv_capacity_tokens=10**6)
    r = simulate([10_000], [2], limits, flat)
    assert r.ttft_s == [pytest.approx(0.030)]


def test_max_num_seqs_queues_a_burst() -> None:
    # 4 requests at t=0, one may run at a time, each takes 5 steps (prefill + 4 decodes)
    limits = SchedulerLimits(max_num_seqs=1, max_num_batched_tokens=8192, kv_capacity_tokens=10**6)
    r = simulate([10] * 4, [5] * 4, limits, flat)
    assert sorted(r.ttft_s) == pytest.approx([0.01, 0.06, 0.11, 0.16])
    assert r.duration_s == pytest.approx(0.20)
    assert r.limited_by["max-num-seqs"] > 0.5


def test_closed_loop_keeps_concurrency_requests_in_flight() -> None:
    r = simulate([10] * 12, [5] * 12, WIDE, flat, concurrency=3)
    assert r.max_running == 3 and r.completed == 12
    assert r.duration_s == pytest.approx(4 * 0.05)  # 4 waves of 3


def test_full_kv_cache_preempts_and_still_finishes() -> None:
    # 3 requests of 100 + 100 tokens need 600 slots; only 350 exist: someone is preempted
    limits = SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=8192, kv_capacity_tokens=350)
    r = simulate([100] * 3, [100] * 3, limits, flat)
    assert r.completed == 3 and r.preemptions >= 1 and r.peak_kv_usage <= 1.0


def test_a_prompt_larger_than_the_cache_is_rejected_not_counted() -> None:
    limits = SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=8192, kv_capacity_tokens=500)
    r = simulate([1000, 10], [5, 5], limits, flat)
    assert r.output_tokens == 5 and len(r.e2e_s) == 1


def test_poisson_arrivals_at_a_low_rate_do_not_queue() -> None:
    r = simulate([10] * 50, [5] * 50, WIDE, flat, request_rate=1.0)
    assert max(r.ttft_s) < 0.025  # at most one step of wait + its own prefill step


def test_percentile_matches_numpy_linear() -> None:
    assert percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    assert percentile([1, 2, 3, 4], 99) == pytest.approx(3.97)


def test_sharegpt_lengths_keep_the_means_and_limits() -> None:
    ins, outs = request_lengths(Workload(230, 215, dataset="sharegpt"), 1000)
    assert sum(ins) / 1000 == pytest.approx(230, abs=1) and sum(outs) / 1000 == pytest.approx(215, abs=1)
    assert max(ins) <= 1024 and all(i + o <= 2048 for i, o in zip(ins, outs, strict=True)) and min(outs) >= 4


GPU = GpuPerf("h100-sxm", "nvidia", "hopper", 3.35e12, {"bf16": 989.5}, 450e9)
MODEL = ModelPerf(tp=1, pp=1, layers=36, hidden_size=4096, dense_bytes=16_000_000_000, active_params=8e9,
                  attn_flops_per_pair=4 * 32 * 128 * 36, kv=(KVRead("full", 36, 4096),))


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 48), st.integers(1, 3))
def test_throughput_never_falls_when_concurrency_rises_below_the_kv_limit(conc, factor) -> None:
    limits = SchedulerLimits(max_num_seqs=1024, max_num_batched_tokens=8192, kv_capacity_tokens=400_000)
    lo = predict(MODEL, GPU, Efficiency(), limits, Workload(512, 128, concurrency=conc, num_requests=4 * conc * factor))
    hi = predict(MODEL, GPU, Efficiency(), limits, Workload(512, 128, concurrency=2 * conc,
                                                             num_requests=8 * conc * factor))
    assert hi.output_tokens_per_s >= lo.output_tokens_per_s * 0.97
