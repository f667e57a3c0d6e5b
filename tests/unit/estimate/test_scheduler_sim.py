"""The scheduler simulation (estimate/scheduler_sim.py) on cases small enough to work out by hand,
with a step cost that is easy to reason about (mocked: the real one needs a GPU profile)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllmkit.estimate.perf import Efficiency, GpuPerf, KVRead, ModelPerf, make_step_fn
from vllmkit.estimate.scheduler_sim import SchedulerLimits, arrival_times, percentile, simulate
from vllmkit.estimate.serving import (
    Workload,
    predict,
    predict_replicas,
    replica_workloads,
    request_lengths,
    spec_decode_steps,
    speculative_steps,
)

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


def test_async_scheduling_admits_an_arrival_one_step_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM >= 0.14 schedules step N+1 when step N is launched (vllm/config/vllm.py, v1 engine core's
    batch queue): a request that arrives during step N first runs in step N+2. By hand, 10 ms steps:
    request 0 (1 prompt token, 10 tokens out) runs from t=0; request 1 arrives at 15 ms, during step
    2 (10-20 ms). Synchronous: scheduled at 20 ms, first token at 30 ms, TTFT 15 ms. Async: step 3 was
    scheduled at 10 ms without it, so it runs in step 4 (30-40 ms): TTFT 25 ms, one step more. On an
    idle engine nothing is in flight, and an arrival runs in the next step either way."""
    from vllmkit.estimate import scheduler_sim as sim

    monkeypatch.setattr(sim, "arrival_times", lambda n, rate, seed=0: [0.0, 0.015][:n])

    def two(lag: bool) -> list[float]:
        return simulate([1, 1], [10, 3], replace(WIDE, async_scheduling=lag), flat, request_rate=1.0).ttft_s

    assert two(False) == pytest.approx([0.010, 0.015])
    assert two(True) == pytest.approx([0.010, 0.025])
    lone = replace(WIDE, async_scheduling=True)
    assert simulate([100], [10], lone, flat).ttft_s == [pytest.approx(0.010)]


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


def _prefill_tokens(lengths_in, lengths_out, limits) -> tuple[int, int]:
    seen: list[int] = []

    def fn(decode: int, ctx: float, prefill: int, pairs: float) -> tuple[float, bool]:
        seen.append(prefill)
        return 0.010, False

    r = simulate(lengths_in, lengths_out, limits, fn)
    assert r.completed == len(lengths_in)
    return sum(seen), r.preemptions


def test_a_preempted_requests_cache_hit_is_what_was_not_reallocated() -> None:
    # 300 KV slots, two prompts of 100 (200 prefill tokens in step 1). After 50 decode steps the two
    # contexts are 150 + 150 = 300: B (the newest) is preempted with 150 tokens computed and no free
    # slot ahead of its blocks in the free queue. V1 hands out the oldest-freed blocks first, so every
    # token A allocates afterwards takes one of B's (vllm/v1/core/block_pool.py).
    limits = SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=8192, kv_capacity_tokens=300)
    # A outputs 200: B cannot come back before A ends (151 + A's context > 300); A allocates 149 more
    # slots, B keeps 150 - 149 = 1 token, no full 16-token block: B recomputes 100 + 51 = 151 tokens
    assert _prefill_tokens([100, 100], [200, 200], limits) == (200 + 151, 1)
    # A outputs 60: it ends 9 steps after the preemption; B keeps 150 - 9 = 141 tokens = 8 full blocks
    # (128), recomputes 151 - 128 = 23
    assert _prefill_tokens([100, 100], [60, 200], limits) == (200 + 23, 1)
    # without prefix caching it recomputes all 151
    assert _prefill_tokens([100, 100], [60, 200], replace(limits, prefix_caching=False)) == (200 + 151, 1)


def test_v0_without_chunked_prefill_runs_prompts_and_decodes_in_separate_steps() -> None:
    # two prompts of 10 tokens, 5 outputs each, a budget of 11 tokens, 10 ms steps. Step 1: A's prompt
    # (B's 10 tokens do not fit beside it). V1 / chunked: step 2 runs A's decode and B's prompt together,
    # A's 4 decodes end at step 5 (50 ms). V0 without chunked prefill: step 2 is B's prompt only, A
    # waits; both decode in steps 3-6 and end at 60 ms.
    base = SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=11, kv_capacity_tokens=10**6, chunked_prefill=False)
    mixed = simulate([10, 10], [5, 5], base, flat)
    v0 = simulate([10, 10], [5, 5], replace(base, mixed_batches=False), flat)
    assert mixed.ttft_s == pytest.approx([0.01, 0.02]) == v0.ttft_s
    assert mixed.e2e_s == pytest.approx([0.05, 0.06])
    assert v0.e2e_s == pytest.approx([0.06, 0.06])


def test_a_prompt_larger_than_the_cache_is_rejected_not_counted() -> None:
    limits = SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=8192, kv_capacity_tokens=500)
    r = simulate([1000, 10], [5, 5], limits, flat)
    assert r.output_tokens == 5 and len(r.e2e_s) == 1


def test_poisson_arrivals_at_a_low_rate_do_not_queue() -> None:
    r = simulate([10] * 50, [5] * 50, WIDE, flat, request_rate=1.0)
    assert max(r.ttft_s) < 0.025  # at most one step of wait + its own prefill step


def test_a_rate_with_a_concurrency_cap_paces_the_closed_loop() -> None:
    """`vllm bench serve --request-rate R --max-concurrency C`: Poisson arrivals, at most C in flight.
    A slow rate leaves the cap idle and the run lasts about n / R (cssnoeasy's Qwen3-32B ladder: 128
    requests at 0.6 req/s, cap 32, 0.567 req/s achieved); a fast rate is held to C at a time."""
    slow = simulate([10] * 40, [5] * 40, WIDE, flat, concurrency=8, request_rate=2.0)
    last = arrival_times(40, 2.0)[-1]
    assert slow.duration_s == pytest.approx(last + 0.05, abs=1e-9)  # the last arrival + its 5 steps
    assert slow.max_running <= 2  # each lasts 50 ms, a gap is 500 ms on average: no overlap to speak of
    assert max(slow.ttft_s) < 0.025
    fast = simulate([10] * 12, [5] * 12, WIDE, flat, concurrency=3, request_rate=1000.0)
    assert fast.max_running == 3 and fast.completed == 12
    # the cap binds: four waves of three, as the plain closed loop, give or take the first arrivals
    assert fast.duration_s == pytest.approx(4 * 0.05, abs=0.02)
    # the client's wait for a slot is not part of TTFT (the client starts its clock when it sends)
    assert max(fast.ttft_s) < 0.025


def test_poisson_arrivals_are_vllm_bench_serves_numpy_draws() -> None:
    # vllm bench serve: np.random.seed(0), then one np.random.gamma(shape=1, scale=1/rate) per request;
    # benchmark_serving.py sends the first at t=0 and sleeps after each send; newer versions rescale so
    # the last request leaves at n / rate. numpy itself is the reference here (vLLM depends on it).
    np = pytest.importorskip("numpy")
    np.random.seed(0)
    gaps = [float(np.random.gamma(shape=1.0, scale=1 / 4.0)) for _ in range(50)]
    expected = [sum(gaps[:i]) for i in range(50)]
    assert arrival_times(50, 4.0) == pytest.approx(expected, rel=1e-12)
    norm = arrival_times(50, 4.0, normalized=True)
    assert norm[-1] == pytest.approx(50 / 4.0)
    assert norm[0] == pytest.approx(gaps[0] * (50 / 4.0) / sum(gaps))
    assert arrival_times(3, None) == [0.0, 0.0, 0.0]


def test_percentile_matches_numpy_linear() -> None:
    assert percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    assert percentile([1, 2, 3, 4], 99) == pytest.approx(3.97)


def test_sharegpt_lengths_keep_the_means_and_limits() -> None:
    ins, outs = request_lengths(Workload(230, 215, dataset="sharegpt"), 1000)
    assert sum(ins) / 1000 == pytest.approx(230, abs=1) and sum(outs) / 1000 == pytest.approx(215, abs=1)
    assert max(ins) <= 1024 and all(i + o <= 2048 for i, o in zip(ins, outs, strict=True)) and min(outs) >= 4


def test_completions_stopped_at_eos_spread_below_their_cap() -> None:
    """A random dataset without --ignore-eos: a blog's 256-in / 128-max run printed 377 output tok/s at
    3.78 req/s, i.e. 99.7 tokens per request (mushfiqrahman.dev, RTX 4090). The replay keeps the prompt
    length, the mean and the cap, and the completions differ from one another (they de-synchronise a
    closed loop as the real ones do)."""
    ins, outs = request_lengths(Workload(256, 99.7, dataset="fixed", output_cap=128), 300)
    assert set(ins) == {256}
    assert sum(outs) / 300 == pytest.approx(99.7, abs=0.5)
    assert max(outs) == 128 and min(outs) >= 1 and len(set(outs)) > 20
    # a mean at the cap (--ignore-eos, or every completion reached max_tokens) stays one fixed length
    assert set(request_lengths(Workload(256, 127, output_cap=128), 50)[1]) == {127}
    assert set(request_lengths(Workload(256, 128), 50)[1]) == {128}


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


def test_a_benchmark_warm_up_leaves_the_first_prompt_cached() -> None:
    """`vllm bench serve` sends input_requests[0] once before timing (vllm/benchmarks/serve.py, "initial
    single prompt test run"). With prefix caching on, the timed run's first request finds its full 16-token
    blocks cached and recomputes the rest (at least its last token): 10,000 tokens -> 9,984 cached, one
    16-token chunk (one step) instead of three 4,096-token steps. The second request is not helped, and
    without prefix caching neither is."""
    limits = SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=4096, kv_capacity_tokens=10**6)
    warm = simulate([10_000, 10_000], [2, 2], limits, flat, concurrency=1, cached_prefix=[10_000])
    assert warm.ttft_s[0] == pytest.approx(0.010)
    assert warm.ttft_s[1] == pytest.approx(0.030)
    cold = simulate([10_000, 10_000], [2, 2], replace(limits, prefix_caching=False), flat, concurrency=1,
                    cached_prefix=[10_000])
    assert cold.ttft_s == [pytest.approx(0.030)] * 2

    def per_token(decode: int, ctx: float, prefill: int, pairs: float) -> tuple[float, bool]:
        return 0.001 * prefill + 0.001, False

    # 10,000 is a whole number of blocks: the hit stops one block short (16 tokens recomputed, 17 ms)
    assert simulate([10_000], [2], limits, per_token, cached_prefix=[10_000]).ttft_s == [pytest.approx(0.017)]


def test_the_warm_up_flag_reaches_the_simulation() -> None:
    wl = Workload(10_000, 2, num_requests=1)
    model = ModelPerf(tp=1, pp=1, layers=32, hidden_size=4096, dense_bytes=16 * 10**9, active_params=8e9,
                      attn_flops_per_pair=4 * 32 * 128 * 32, kv=(KVRead("full", 32, 4096),))
    gpu = GpuPerf("h100-sxm", "nvidia", "hopper", 3.35e12, {"bf16": 989.5}, 450e9)
    eff = Efficiency(request_overhead_s=0.0)
    cold = predict(model, gpu, eff, WIDE, wl, steady=False, efficiency_is_final=True)
    warm = predict(model, gpu, eff, WIDE, replace(wl, warmup_first_prompt=True), steady=False, efficiency_is_final=True)
    assert warm.ttft_ms.mean < 0.2 * cold.ttft_ms.mean


def _shared_prefill(n: int, prompt: int, shared: int, limits: SchedulerLimits = WIDE, **kw) -> list[int]:
    seen: list[int] = []

    def fn(decode: int, ctx: float, prefill: int, pairs: float) -> tuple[float, bool]:
        seen.append(prefill)
        return 0.010, False

    r = simulate([prompt] * n, [5] * n, limits, fn, shared_prefix=shared, **kw)
    assert r.completed == n
    return [p for p in seen if p]


def test_a_shared_prefix_is_computed_once_then_hit_in_whole_blocks() -> None:
    # one client, four identical 1000-token prompts: the first computes all 1000; each later one finds
    # 62 full 16-token blocks (992 tokens) cached -- vLLM caps a hit at num_tokens - 1 = 999 before
    # counting whole blocks (kv_cache_manager.get_computed_blocks) -- and computes the last 8
    assert _shared_prefill(4, 1000, 1000, concurrency=1) == [1000, 8, 8, 8]
    # a 512-token system prompt before 488 own tokens: 512 cached (32 blocks), 488 computed
    assert _shared_prefill(3, 1000, 512, concurrency=1) == [1000, 488, 488]
    # prefix caching off (--no-enable-prefix-caching): every prompt in full
    assert _shared_prefill(3, 1000, 1000, replace(WIDE, prefix_caching=False), concurrency=1) == [1000] * 3


def test_requests_admitted_with_the_first_find_nothing_cached_yet() -> None:
    # four clients at once: all four prompts go into the first step (4,000 of 8,192 tokens), before any
    # block is cached; the next four (sent as those finish) hit
    assert _shared_prefill(8, 1000, 1000, concurrency=4) == [4000, 32]
    # a benchmark's warm-up request sent the prompt before timing: every request hits
    assert _shared_prefill(4, 1000, 1000, concurrency=4, prefix_warm=True) == [32]


def test_the_shared_prefix_lowers_ttft_through_predict() -> None:
    base = Workload(4096, 64, concurrency=8, num_requests=64)
    plain = predict(MODEL, GPU, Efficiency(), WIDE, base)
    shared = predict(MODEL, GPU, Efficiency(), WIDE, replace(base, shared_prefix=4000))
    assert shared.ttft_ms.mean < 0.5 * plain.ttft_ms.mean
    assert shared.output_tokens_per_s > plain.output_tokens_per_s


def _ctx_step(decode: int, ctx: float, prefill: int, pairs: float) -> tuple[float, bool]:
    """A step whose time grows with what it reads and computes (so that any reordering shows)."""
    mem = 2e-3 + 1e-9 * ctx + 3e-6 * decode
    cmp = 5e-7 * prefill + 1e-12 * pairs
    return max(mem, cmp) + 1e-5 * decode, cmp > mem


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 50), inp=st.integers(1, 3000), out=st.integers(1, 300),
       seqs=st.integers(1, 64), budget=st.sampled_from([256, 2048, 8192]), cap=st.integers(500, 60_000),
       mode=st.sampled_from(["burst", "rate", "closed"]), chunked=st.booleans(), mixed=st.booleans(),
       prefix=st.booleans(), shared=st.sampled_from([0, 64, 512]), warm=st.booleans(), real=st.booleans(),
       lag=st.booleans())
def test_decode_stretches_change_nothing(n, seed, inp, out, seqs, budget, cap, mode, chunked, mixed, prefix,
                                         shared, warm, real, lag) -> None:
    """Step 0 of `simulate` runs decode-only stretches without the scheduling passes. With it off every
    step goes through the general path; the two must agree bit for bit on every output, over bursts,
    Poisson rates and closed loops, full caches (preemption), batch caps, prefix caching, V0 batches,
    async scheduling."""
    import random

    import vllmkit.estimate.scheduler_sim as sim

    rng = random.Random(seed)
    ins = [max(1, int(inp * rng.uniform(0.3, 1.0))) for _ in range(n)]
    outs = [max(1, int(out * rng.uniform(0.3, 1.0))) for _ in range(n)]
    limits = SchedulerLimits(max_num_seqs=seqs, max_num_batched_tokens=budget, kv_capacity_tokens=cap,
                             chunked_prefill=chunked, prefix_caching=prefix, mixed_batches=mixed or chunked,
                             async_scheduling=lag)
    kw = {"burst": {}, "rate": {"request_rate": 20.0}, "closed": {"concurrency": max(1, seqs // 2)}}[mode]
    kw.update(seed=seed, request_overhead_s=0.004, shared_prefix=shared, prefix_warm=warm,
              cached_prefix=[inp // 2] * (n // 3))

    # the product's step function (with its decode_only stretches) or a plain one (without)
    step = make_step_fn(ModelPerf(tp=2, pp=1, layers=32, hidden_size=4096, dense_bytes=8_000_000_000,
                                  active_params=8e9, attn_flops_per_pair=4 * 32 * 128 * 32,
                                  kv=(KVRead("full", 32, 65536),)),
                        GpuPerf("h100-sxm", "nvidia", "hopper", 3.35e12, {"bf16": 989.5}, 450e9),
                        Efficiency(bandwidth=0.85, compute=0.45)) if real else _ctx_step

    def run() -> dict:
        r = simulate(ins, outs, limits, step, **kw)
        return {k: v for k, v in vars(r).items()}

    fast = run()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sim, "FAST_DECODE_STRETCHES", False)
        slow = run()
    assert repr(fast) == repr(slow)


def _prefill_costs(decode: int, ctx: float, prefill: int, pairs: float) -> tuple[float, bool]:
    return 0.010 + prefill * 0.0001, prefill > 0  # 10 ms a step, +0.1 ms a prompt token


def test_a_ramped_closed_loop_does_not_run_in_step() -> None:
    """16 clients of 512-token prompts and 256-token outputs, budget 2,048 tokens a step. Started together they
    run in waves: four prompts fill a step (4 x 512 = 2,048), so the first four get their first token after
    10 + 2,048 x 0.1 = 214.8 ms and the rest later; they finish together and send together again. Started 0.5 s apart (a load tester's ramp,
    ramp_s=8), each arrives alone while the others decode, is admitted at the next step and gets its first token
    from that step: 10 + 512 x 0.1 = 61.2 ms -- and the clients stay apart, since a request's life (256 steps,
    ~2.6 s) is the same for all (a request that arrives mid-step waits for it: under 2 x 61.2 ms). A ramp's later
    starts do not hold up the requests its first clients send."""
    limits = SchedulerLimits(max_num_seqs=256, max_num_batched_tokens=2048, kv_capacity_tokens=10**6)
    n = 200
    together = simulate([512] * n, [256] * n, limits, _prefill_costs, concurrency=16)
    ramped = simulate([512] * n, [256] * n, limits, _prefill_costs, concurrency=16, ramp_s=8.0)
    first_wave = sorted(together.ttft_by_request[:16])
    assert first_wave[:4] == pytest.approx([0.2148] * 4) and first_wave[-1] > 0.4
    assert [round(a, 6) for a in ramped.arrival_by_request[:16]] == [k * 0.5 for k in range(16)]
    # ramped: at most the rest of a step already running plus its own (61.2 ms each): never behind a wave
    assert min(ramped.ttft_by_request) == pytest.approx(0.0612) and max(ramped.ttft_by_request) < 2 * 0.0612
    assert ramped.completed == n
    # together: later requests still meet prompts sent with theirs (the waves persist)
    assert percentile(together.ttft_by_request[16:], 50) > 2 * percentile(ramped.ttft_by_request, 50)


def test_a_measurement_window_reports_the_requests_sent_inside_it() -> None:
    # through serving.predict: the latencies of the requests sent in [20 s, 40 s] only, and the output tokens
    # per second of that window, not of the whole run with its ramp and tail
    wl = Workload(512, 256, concurrency=16, num_requests=400, ramp_s=8.0)
    whole = predict(MODEL, GPU, Efficiency(), WIDE, wl, steady=False)
    windowed = predict(MODEL, GPU, Efficiency(), WIDE, replace(wl, window_s=(20.0, 40.0)), steady=False)
    assert whole.window_s is None and windowed.window_s == (20.0, 40.0)
    sim = windowed.sim
    inside = [f for a, f in zip(sim.arrival_by_request, sim.ttft_by_request, strict=True) if 20.0 <= a <= 40.0]
    assert windowed.ttft_ms.mean == pytest.approx(sum(inside) / len(inside) * 1000)
    assert windowed.output_tokens_per_s == pytest.approx(sim.output_tokens_between(20.0, 40.0) / 20.0)
    assert len(inside) < len(sim.arrival_by_request) / 2


# --------------------------------------------------------------------------- data parallel


def test_data_parallel_engines_share_the_clients_evenly() -> None:
    # vLLM's front end sends each request to the engine with the fewest waiting and running requests: 10 clients
    # on 4 engines run 3, 3, 2, 2; a burst of 9 requests 3, 2, 2, 2; Poisson traffic at 8 req/s 2 req/s each;
    # 2 clients on 8 engines leave 6 idle
    assert replica_workloads(Workload(512, 128, concurrency=10, num_requests=100), 4) == [
        (Workload(512, 128, concurrency=3, num_requests=30), 2), (Workload(512, 128, concurrency=2, num_requests=20), 2)]
    assert replica_workloads(Workload(512, 128, num_requests=9), 4) == [
        (Workload(512, 128, num_requests=3), 1), (Workload(512, 128, num_requests=2), 3)]
    assert replica_workloads(Workload(512, 128, request_rate=8.0, num_requests=400), 4) == [
        (Workload(512, 128, request_rate=2.0, num_requests=100), 4)]
    assert replica_workloads(Workload(512, 128, concurrency=2), 8) == [(Workload(512, 128, concurrency=1), 2)]
    assert replica_workloads(Workload(512, 128, concurrency=2), 1) == [(Workload(512, 128, concurrency=2), 1)]


def test_two_data_parallel_engines_serve_twice_the_clients_of_one() -> None:
    # independent engines (a dense model) with one API server each: 64 clients over 2 engines are two runs of 32
    limits = SchedulerLimits(max_num_seqs=1024, max_num_batched_tokens=8192, kv_capacity_tokens=400_000)
    one = predict(MODEL, GPU, Efficiency(), limits, Workload(512, 128, concurrency=32, num_requests=128))
    both = predict_replicas(lambda w, share: predict(MODEL, GPU, Efficiency(), limits, w, frontend_share=share),
                            Workload(512, 128, concurrency=64, num_requests=256), 2, api_servers=2)
    assert both.output_tokens_per_s == pytest.approx(2 * one.output_tokens_per_s, rel=1e-12)
    assert both.requests_per_s == pytest.approx(2 * one.requests_per_s, rel=1e-12)
    assert both.ttft_ms == one.ttft_ms and both.tpot_ms == one.tpot_ms
    assert both.batch == pytest.approx(one.batch) and both.num_requests == 256
    # 65 clients: one engine runs 33, the other 32; the fleet's rate is their sum, its p99 the worse engine's
    odd = predict_replicas(lambda w, share: predict(MODEL, GPU, Efficiency(), limits, w, frontend_share=share),
                           Workload(512, 128, concurrency=65, num_requests=260), 2, api_servers=2)
    busy = predict(MODEL, GPU, Efficiency(), limits, Workload(512, 128, concurrency=33, num_requests=132))
    assert odd.output_tokens_per_s == pytest.approx(busy.output_tokens_per_s + one.output_tokens_per_s, rel=1e-12)
    assert odd.tpot_ms.p99 == max(busy.tpot_ms.p99, one.tpot_ms.p99)


def test_one_api_server_feeding_several_engines_queues_their_requests_together() -> None:
    # each request takes the API server 10 ms on average (0.5 - 1.5 x, de-synchronising); a burst of 50 reaches an
    # engine over ~0.5 s from its own server, over ~1.5 s when the server also handles two other engines' bursts
    # (frontend_share 3) -- while one request alone still waits its own 10 ms
    def last_arrival(share: float) -> float:
        r = simulate([16] * 50, [2] * 50, WIDE, lambda d, c, p, q: (1e-4, False), request_overhead_s=0.01,
                     frontend_share=share)
        return max(r.ttft_s)

    own, shared = last_arrival(1.0), last_arrival(3.0)
    assert 0.4 < own < 0.6 and shared == pytest.approx(3 * own, rel=0.05)
    alone = simulate([16], [2], WIDE, lambda d, c, p, q: (1e-4, False), request_overhead_s=0.01, frontend_share=3.0)
    assert 0.005 <= alone.ttft_s[0] <= 0.0151


# --------------------------------------------------------------------------- speculative decoding


def test_speculative_decoding_steps_by_hand() -> None:
    # k = 3 draft tokens at a 50 % acceptance rate: 1 + 3 x 0.5 = 2.5 tokens a step (vLLM's "Mean acceptance length");
    # a 201-token completion: its first token from the prompt's step, the other 200 in ceil(200 / 2.5) = 80 steps
    spec = replace(MODEL, spec_tokens=3, draft_bytes=0.5e9, draft_layers=1)
    assert speculative_steps(spec, Workload(512, 201, spec_acceptance=0.5)) == 2.5
    assert speculative_steps(spec, Workload(512, 201)) is None  # no acceptance rate: not modelled
    assert speculative_steps(MODEL, Workload(512, 201, spec_acceptance=0.5)) is None  # no drafter
    assert spec_decode_steps(201, 2.5) == 81 and spec_decode_steps(1, 2.5) == 1 and spec_decode_steps(2, 4.0) == 2


def test_one_client_decodes_acceptance_length_tokens_per_verified_step() -> None:
    """One request on an H100 (8B dense, 16 GB of weights): a decode step reads the weights whatever the batch, so
    verifying 4 tokens costs about what 1 does; with every draft accepted (4 tokens a step) and a 0.5 GB drafter
    read 3 times a step (3 x (0.5 GB / 2.68 TB/s + 4 GEMMs x 3.8 us) = 0.61 ms), the time per output token is
    (plain step + 0.61 ms) / 4."""
    limits = SchedulerLimits(max_num_seqs=256, max_num_batched_tokens=8192, kv_capacity_tokens=10**6)
    eff = Efficiency(bandwidth=0.8, compute=0.5, step_overhead_s=0.0, per_seq_overhead_s=0.0)
    plain = predict(MODEL, GPU, eff, limits, Workload(512, 401, concurrency=1, num_requests=3))
    spec = replace(MODEL, spec_tokens=3, draft_bytes=0.5e9, draft_layers=1)
    fast = predict(spec, GPU, eff, limits, Workload(512, 401, concurrency=1, num_requests=3, spec_acceptance=1.0))
    draft = 3 * (0.5e9 / (3.35e12 * 0.8) + 4 * 3.8e-6)
    assert fast.tpot_ms.mean == pytest.approx((plain.tpot_ms.mean + draft * 1e3) / 4, rel=0.03)
    assert fast.output_tokens_per_s == pytest.approx(plain.output_tokens_per_s * plain.e2e_s.mean / fast.e2e_s.mean,
                                                     rel=0.03)
    none = predict(spec, GPU, eff, limits, Workload(512, 401, concurrency=1, num_requests=3, spec_acceptance=0.0))
    assert none.tpot_ms.mean > plain.tpot_ms.mean  # nothing accepted: the drafting is pure cost
