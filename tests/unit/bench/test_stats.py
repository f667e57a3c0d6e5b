"""bench statistics on hand-made timings; percentiles checked against numpy (vLLM's benchmark uses
np.percentile with its default linear method, vllm/benchmarks/serve.py calculate_metrics)."""

from __future__ import annotations

import numpy as np
import pytest

from vllmkit.bench.aggregate import aggregate, throughput_windows
from vllmkit.bench.models import PointResult, RequestSample
from vllmkit.bench.stats import (
    Slo,
    bootstrap_ci,
    median,
    meets_slo,
    parse_duration,
    parse_slo,
    percentile,
    summarize,
    tpot_s,
)


@pytest.mark.parametrize("values", [[1.0], [3.0, 1.0], [5, 1, 4, 2, 3], list(range(100)), [0.1 * i * i for i in range(37)]])
@pytest.mark.parametrize("q", [0, 1, 25, 50, 90, 99, 100])
def test_percentile_matches_numpy_linear(values, q):
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_percentile_by_hand():
    # 4 values: p50 sits halfway between the 2nd and 3rd (rank 1.5); p90 at rank 2.7 -> 3 + 0.7*(10-3)
    assert percentile([1, 2, 3, 10], 50) == 2.5
    assert percentile([1, 2, 3, 10], 90) == pytest.approx(7.9)
    assert percentile([], 50) is None


def test_tpot_excludes_first_token():
    # 11 tokens, first at 0.5 s, last at 1.5 s: 10 gaps of 100 ms
    assert tpot_s(1.5, 0.5, 11) == pytest.approx(0.1)
    assert tpot_s(0.5, 0.5, 1) is None


def test_summary_scales_to_ms():
    s = summarize([0.1, 0.2, 0.3], 1000.0)
    assert (s.n, s.mean, s.p50) == (3, pytest.approx(200.0), pytest.approx(200.0))


def test_slo_parsing():
    assert parse_slo("ttft=2s,tpot=50ms") == Slo(ttft_s=2.0, tpot_s=0.05)
    assert parse_slo("e2el:10") == Slo(e2e_s=10.0)
    assert parse_duration("250ms") == pytest.approx(0.25)
    for bad in ("ttft=fast", "latency=2s", "ttft", "ttft=-1s"):
        with pytest.raises(ValueError):
            parse_slo(bad)


def test_goodput_on_hand_made_requests():
    slo = Slo(ttft_s=2.0, tpot_s=0.05)
    assert meets_slo(slo, ttft=1.9, tpot=0.049, e2e=9.0)
    assert not meets_slo(slo, ttft=2.1, tpot=0.01, e2e=3.0)  # TTFT too slow
    assert not meets_slo(slo, ttft=0.1, tpot=0.06, e2e=3.0)  # TPOT too slow
    assert meets_slo(slo, ttft=2.0, tpot=None, e2e=2.0)  # one-token answer: TPOT counts 0, bound inclusive


def _sample(start, ttft, e2e, out, ok=True, error=None, inp=10):
    return RequestSample(start_s=start, ok=ok, error=error, ttft_s=ttft if ok else None, e2e_s=e2e if ok else None,
                         tpot_s=tpot_s(e2e, ttft, out) if ok else None, output_tokens=out if ok else None,
                         input_tokens=inp if ok else None, requested_output_tokens=out)


def test_aggregate_point_by_hand():
    samples = [
        _sample(0.0, 0.5, 1.5, 11),  # TPOT 100 ms: fails tpot=50ms
        _sample(0.0, 0.2, 0.7, 11),  # TPOT 50 ms: good
        _sample(1.0, 3.0, 3.5, 11),  # TTFT 3 s: fails ttft=2s (TPOT 50 ms); TPOTs 100/50/50 -> p50 50
        _sample(1.0, 0, 0, 0, ok=False, error="http-500"),
        _sample(1.5, 0, 0, 0, ok=False, error="timeout"),
    ]
    p = aggregate(PointResult(label="c=2", concurrency=2), samples, duration_s=4.0,
                  slo=Slo(ttft_s=2.0, tpot_s=0.05))
    assert (p.num_requests, p.completed, p.failed) == (5, 3, 2)
    assert p.failures == {"http-500": 1, "timeout": 1}
    assert p.output_tokens == 33 and p.input_tokens == 30
    assert p.output_tokens_per_s == pytest.approx(33 / 4.0)
    assert p.total_tokens_per_s == pytest.approx(63 / 4.0)
    assert p.requests_per_s == pytest.approx(0.75)
    assert p.good_requests == 1 and p.goodput_rps == pytest.approx(0.25)
    assert p.ttft_ms.p50 == pytest.approx(500.0)
    assert p.tpot_ms.p50 == pytest.approx(50.0) and p.tpot_ms.mean == pytest.approx(200 / 3)
    assert p.e2e_s.p50 == pytest.approx(1.5)
    assert p.length_mismatch == 0


def test_throughput_windows_conserve_tokens():
    samples = [_sample(i * 0.1, 0.05, 1.0, 20) for i in range(30)]
    rates = throughput_windows(samples, windows=10)
    span = 2.9 + 1.0
    assert sum(r * span / 10 for r in rates) == pytest.approx(600)


def test_bootstrap_ci_separates_a_real_shift_and_not_noise():
    import random

    rng = random.Random(1)
    a = [rng.gauss(100, 10) for _ in range(200)]
    b = [x * 0.88 for x in (rng.gauss(100, 10) for _ in range(200))]
    lo, hi = bootstrap_ci(a, b, median)
    assert lo < -0.08 and hi < -0.05  # 12 % lower, CI excludes 0
    c = [rng.gauss(100, 10) for _ in range(200)]
    lo2, hi2 = bootstrap_ci(a, c, median)
    assert lo2 < 0 < hi2  # same distribution: the CI straddles 0
    assert bootstrap_ci([1.0, 2.0], c, median) is None


def test_durations():
    assert parse_duration("5m") == 300 and parse_duration("1h") == 3600 and parse_duration("2min") == 120
    assert parse_duration("90") == 90 and parse_duration("1.5s") == 1.5


def test_burst_delivery_by_hand():
    from vllmkit.bench.aggregate import delivered_in_burst

    def s(ttft, gaps, ok=True):
        e2e = ttft + sum(gaps)
        return RequestSample(start_s=0.0, ok=ok, ttft_s=ttft, e2e_s=e2e, itl_s=gaps, output_tokens=len(gaps) + 1)

    # 32 tokens read within 0.3 ms after 80 ms of silence: the CPU build's starved API server
    assert delivered_in_burst(s(0.080, [0.00001] * 31))
    # a long prompt (TTFT most of the request) whose tokens still come one engine step apart
    assert not delivered_in_burst(s(2.0, [0.004] * 31))
    # fast chunks right after a quick first token: TTFT is not most of the request
    assert not delivered_in_burst(s(0.001, [0.0001] * 31))
    # too few chunks to tell, and failed requests
    assert not delivered_in_burst(s(0.080, [0.00001] * 2))
    assert not delivered_in_burst(s(0.080, [0.00001] * 31, ok=False))
    # the median decides: a few chunks read together in an otherwise paced stream are not a burst
    assert not delivered_in_burst(s(0.5, [0.00001] * 10 + [0.02] * 21))
    p = aggregate(PointResult(label="c=1"), [s(0.080, [0.00001] * 31), s(0.01, [0.004] * 31)], duration_s=1.0,
                  slo=Slo())
    assert p.burst_requests == 1
