"""Per-request samples -> one load point's numbers (pure)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from vllmkit.bench.models import PointResult, RequestSample, ServerLoad, Verdict
from vllmkit.bench.stats import Slo, meets_slo, summarize

# A chunk gap this short is two chunks read together, not two engine steps: a vLLM decode step takes
# more than a millisecond (scheduling, the model, sampling, detokenisation), so a stream whose typical gap
# is below this came out of a buffer.
BURST_GAP_S = 0.0005


def delivered_in_burst(sample: RequestSample) -> bool:
    """The answer's tokens arrived together near its end: at least four chunks, the median gap between
    them under BURST_GAP_S, and the first one after at least half of the request's time. Seen on the vLLM
    CPU build when its engine core's polling loop takes the API server's core (tests/e2e/test_bench_e2e.py
    measures 157 of 288 answers so on a 2-core host): the engine made its tokens at the usual pace, but
    the API server sent them only when it got the CPU."""
    gaps = sorted(sample.itl_s)
    if not sample.ok or len(gaps) < 3 or sample.ttft_s is None or not sample.e2e_s:
        return False
    return gaps[len(gaps) // 2] < BURST_GAP_S and sample.ttft_s >= 0.5 * sample.e2e_s


def aggregate(
    point: PointResult,
    samples: Sequence[RequestSample],
    *,
    duration_s: float,
    slo: Slo,
    server: ServerLoad | None = None,
    verdict: Verdict | None = None,
) -> PointResult:
    """Fill `point` from its samples. Throughput divides by the point's wall time (first send to
    last answer), as vLLM's benchmark does (`benchmark_duration`)."""
    ok = [s for s in samples if s.ok]
    bad = [s for s in samples if not s.ok]
    point.samples = sorted(samples, key=lambda s: s.start_s)
    point.num_requests = len(samples)
    point.completed = len(ok)
    point.failed = len(bad)
    point.failures = dict(sorted(Counter(s.error or "unknown" for s in bad).items()))
    point.length_mismatch = sum(
        1 for s in ok if s.requested_output_tokens is not None and s.output_tokens != s.requested_output_tokens
    )
    point.burst_requests = sum(1 for s in ok if delivered_in_burst(s))
    point.duration_s = duration_s
    point.input_tokens = sum(s.input_tokens or 0 for s in ok)
    point.output_tokens = sum(s.output_tokens or 0 for s in ok)
    if duration_s > 0:
        point.output_tokens_per_s = point.output_tokens / duration_s
        point.total_tokens_per_s = (point.input_tokens + point.output_tokens) / duration_s
        point.requests_per_s = point.completed / duration_s
    point.ttft_ms = summarize([s.ttft_s for s in ok if s.ttft_s is not None], 1000.0)
    point.tpot_ms = summarize([s.tpot_s for s in ok if s.tpot_s is not None], 1000.0)
    point.itl_ms = summarize([gap for s in ok for gap in s.itl_s], 1000.0)
    point.e2e_s = summarize([s.e2e_s for s in ok if s.e2e_s is not None])
    if slo.is_set():
        good = sum(
            1 for s in ok
            if s.ttft_s is not None and s.e2e_s is not None
            and meets_slo(slo, ttft=s.ttft_s, tpot=s.tpot_s, e2e=s.e2e_s)
        )
        point.good_requests = good
        point.goodput_rps = good / duration_s if duration_s > 0 else 0.0
    if server is not None:
        point.server = server
    point.verdict = verdict
    return point


def throughput_windows(samples: Sequence[RequestSample], windows: int = 10) -> list[float]:
    """Output tokens/s in `windows` equal slices of the point (batch means), for a throughput CI.
    A request's tokens are spread evenly from its first token to its end (the saved samples keep
    no per-token times)."""
    ok = [s for s in samples if s.ok and s.ttft_s is not None and s.e2e_s is not None and s.output_tokens]
    if len(ok) < windows:
        return []
    t0 = min(s.start_s for s in ok)
    t1 = max(s.start_s + (s.e2e_s or 0.0) for s in ok)
    span = t1 - t0
    if span <= 0:
        return []
    width = span / windows
    counts = [0.0] * windows
    for s in ok:
        assert s.ttft_s is not None and s.e2e_s is not None and s.output_tokens
        first = s.start_s + s.ttft_s - t0
        last = s.start_s + s.e2e_s - t0
        n = s.output_tokens
        for k in range(n):
            t = first if n == 1 else first + (last - first) * k / (n - 1)
            counts[min(int(t / width), windows - 1)] += 1
    return [c / width for c in counts]
