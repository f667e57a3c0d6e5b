"""Bench results -> the performance store (calibration/perfstore.py), one PerfRecord per point."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from vllmkit.bench.models import BenchReport, PointResult
from vllmkit.bench.stats import Summary
from vllmkit.calibration.perfstore import LatencyStats, PerfRecord, add_perf_records, perf_store_path


def _stats(s: Summary) -> LatencyStats:
    return LatencyStats(mean=s.mean, p50=s.p50, p90=s.p90, p99=s.p99)


def storable(report: BenchReport) -> tuple[bool, str]:
    t = report.target
    if not t.gpu:
        return False, "not stored: the GPU is unknown (pass --gpu PROFILE, or bench a `vllmkit serve` run)"
    if not t.model:
        return False, "not stored: the model is unknown (pass --model)"
    if not t.vllm_version:
        return False, "not stored: the server did not tell its vLLM version (/version)"
    return True, ""


# prompt tokens a random workload's point may find in the prefix cache beyond its own shared --prefix-len
# (block rounding, a repeated token run) before the point counts as replayed from an earlier run's cache
STALE_CACHE_HIT_MARGIN = 0.10


def stale_cache_hits(report: BenchReport, point: PointResult) -> float | None:
    """The share of a random point's prompt tokens that were prefix-cache hits beyond its shared prefix, when
    it is above STALE_CACHE_HIT_MARGIN (None otherwise, and for datasets, whose prompts may repeat).
    Random prompts differ from point to point, so such hits come from an earlier `bench` (or vLLM
    benchmark) that sent the same prompts to this server: the same --seed and lengths, or a shorter
    --input-len whose prompts begin these. Their prefill was skipped: TTFT and throughput are optimistic."""
    w = report.workload
    rate = point.server.prefix_cache_hit_rate
    if w.kind != "random" or rate is None or not w.input_len:
        return None
    shared = w.prefix_len / (w.prefix_len + w.input_len)
    repeated = point.prompt_repeats / max(point.num_requests, 1)  # whole prompts this point sent twice
    expected = repeated + (1 - repeated) * shared
    return rate if rate - expected > STALE_CACHE_HIT_MARGIN else None


def point_record(report: BenchReport, point: PointResult, recorded_at: str) -> PerfRecord | None:
    """None for points that cannot be a measurement: cut short (server died, Ctrl-C), nothing
    completed, rate=inf (neither a concurrency nor a rate to match a plan's workload on), or prompts an
    earlier run had left in the prefix cache (stale_cache_hits)."""
    t = report.target
    ok = [s for s in point.samples if s.ok]
    if point.partial or not ok or point.duration_s <= 0 or (point.concurrency is None and point.request_rate is None):
        return None
    if stale_cache_hits(report, point) is not None:
        return None
    assert t.gpu and t.model and t.vllm_version
    input_len = sum(s.input_tokens or 0 for s in ok) / len(ok)
    output_len = sum(s.output_tokens or 0 for s in ok) / len(ok)
    if input_len <= 0 or output_len <= 0:
        return None
    key = {
        "gpu": t.gpu, "model": t.model, "precision": t.precision, "tp": t.tp, "pp": t.pp,
        **({"dp": t.dp} if t.dp > 1 else {}),
        "vllm": t.vllm_version, "label": point.label, "started": report.started_at, "url": t.url,
    }
    record_id = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    notes = {"workload": report.workload.kind, "served_model": t.served_model or ""}
    if t.run_id:
        notes["run_id"] = t.run_id
    if point.verdict is not None:
        notes["bottleneck"] = point.verdict.name
    if report.workload.prefix_len:
        notes["prefix_len"] = str(report.workload.prefix_len)
    return PerfRecord(
        record_id=record_id,
        recorded_at=recorded_at,
        gpu=t.gpu,
        gpu_count=max(t.gpu_count, t.tp * t.pp),
        vllm_version=t.vllm_version,
        model=t.model,
        family=t.family,
        precision=t.precision or "bf16",
        kv_cache_dtype=t.kv_cache_dtype,
        tp=t.tp,
        pp=t.pp,
        dp=t.dp,
        max_num_seqs=t.max_num_seqs,
        max_num_batched_tokens=t.max_num_batched_tokens,
        input_len=input_len,
        output_len=output_len,
        concurrency=point.concurrency,
        request_rate=point.request_rate,
        num_requests=point.num_requests,
        completed=point.completed,
        failed=point.failed,
        duration_s=point.duration_s,
        output_tokens_per_s=point.output_tokens_per_s,
        total_tokens_per_s=point.total_tokens_per_s,
        requests_per_s=point.requests_per_s,
        ttft_ms=_stats(point.ttft_ms),
        tpot_ms=_stats(point.tpot_ms),
        itl_ms=_stats(point.itl_ms),
        e2e_s=_stats(point.e2e_s),
        peak_kv_usage=point.server.peak_kv_usage,
        preemptions=point.server.preemptions,
        max_running=point.server.max_running,
        max_waiting=point.server.max_waiting,
        source=f"bench {t.url}",
        notes=notes,
    )


def store_report(report: BenchReport, env: Mapping[str, str], recorded_at: str) -> tuple[int, str]:
    """Add one record per measured point. Returns (added, path)."""
    path = perf_store_path(env)
    records = [r for r in (point_record(report, p, recorded_at) for p in report.points) if r is not None]
    if not records:
        return 0, str(path)
    added, _ = add_perf_records(path, records)
    return added, str(path)
