"""A bench point whose random prompts an earlier run had left in the server's prefix cache is not a
measurement of that workload: vLLM skips their prefill. Public runs showed how far off that goes:
Scicom's `vllm bench serve` sweep (collected-bench-results-14.jsonl) ran --random-input-len 1024, 2048, ...
15000 back to back with seed 0 on one server; vLLM's random prompts start with the same tokens for the same
seed (datasets.py RandomDataset: allowed_tokens[(offset_i + i + arange(input_len)) % n], offsets drawn
after the lengths), and their TTFT came out about half of a cold prefill's. Bench reads vLLM's own
prefix-cache counters over each point (ServerLoad.prefix_cache_hit_rate)."""

from __future__ import annotations

from vllmkit.bench.models import BenchReport, PointResult, RequestSample, ServerLoad, Target, Workload
from vllmkit.bench.store import point_record, stale_cache_hits


def _report(prefix_len: int = 0, kind: str = "random") -> BenchReport:
    return BenchReport(started_at="2026-12-05T00:00:00Z",
                       target=Target(url="http://127.0.0.1:8000", model="Qwen/Qwen3-8B", gpu="h100-sxm",
                                     vllm_version="0.32.0"),
                       workload=Workload(kind=kind, input_len=1000, output_len=100, prefix_len=prefix_len))


def _point(hit_rate: float | None, *, n: int = 50, repeats: int = 0) -> PointResult:
    samples = [RequestSample(start_s=0.1 * i, ok=True, ttft_s=0.05, e2e_s=1.0, tpot_s=0.01, input_tokens=1000,
                             output_tokens=100) for i in range(n)]
    return PointResult(label="c=8", concurrency=8, num_requests=n, completed=n, duration_s=10.0,
                       prompt_repeats=repeats, samples=samples, output_tokens_per_s=500.0, total_tokens_per_s=5500.0,
                       requests_per_s=5.0,
                       server=ServerLoad(prefix_cache_hit_rate=hit_rate))


def test_hits_from_an_earlier_run_are_flagged_and_not_stored() -> None:
    report = _report()
    stale = _point(0.87)
    assert stale_cache_hits(report, stale) == 0.87
    assert point_record(report, stale, "2026-12-05T00:01:00Z") is None
    fresh = _point(0.02)
    assert stale_cache_hits(report, fresh) is None
    assert point_record(report, fresh, "2026-12-05T00:01:00Z") is not None


def test_the_shared_prefix_and_the_points_own_repeats_are_expected_hits() -> None:
    # --prefix-len 1000 before 1000 random tokens: half of every prompt is shared by design
    assert stale_cache_hits(_report(prefix_len=1000), _point(0.52)) is None
    assert stale_cache_hits(_report(prefix_len=1000), _point(0.75)) == 0.75
    # --duration cycles the point's pool: 25 of 50 requests resent a prompt of this point
    assert stale_cache_hits(_report(), _point(0.55, repeats=25)) is None


def test_datasets_and_servers_without_the_counters_are_left_alone() -> None:
    assert stale_cache_hits(_report(kind="sharegpt"), _point(0.9)) is None
    assert stale_cache_hits(_report(), _point(None)) is None
