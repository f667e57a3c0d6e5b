"""The performance section of `vllmkit plan` with a workload (plan/performance.py PerformanceInfo)."""

from __future__ import annotations

from typing import Any

from rich.console import Console


def render_performance(console: Console, perf: Any) -> None:
    """The performance section of `vllmkit plan` (perf: plan.performance.PerformanceInfo)."""
    wl = perf.workload
    load = f"{wl['concurrency']} concurrent" if wl.get("concurrency") else f"{wl['request_rate']:g} req/s (Poisson)"
    console.print(f"\nPerformance ({perf.source}) for {wl['input_len']:g} in / {wl['output_len']:g} out tokens, "
                  f"{load}:", markup=False)
    console.print(f"  output {perf.output_tokens_per_s:,.0f} tok/s, total {perf.total_tokens_per_s:,.0f} tok/s, "
                  f"{perf.requests_per_s:.2f} req/s; batch {perf.batch:.1f}, KV in use {perf.kv_usage:.0%} "
                  f"(peak {perf.peak_kv_usage:.0%}); bound: {perf.bound}; preemption risk: {perf.preemption_risk}",
                  markup=False)
    if getattr(perf, "kv_requests", 0):
        console.print(f"  the KV cache holds {perf.kv_requests:,} requests of this length at once while they run",
                      markup=False)
    console.print(f"  TTFT mean {perf.ttft_ms.mean:,.0f} ms, p99 {perf.ttft_ms.p99:,.0f} ms; TPOT mean "
                  f"{perf.tpot_ms.mean:.1f} ms, p99 {perf.tpot_ms.p99:.1f} ms (floor {perf.tpot_floor_ms:.1f} ms); "
                  f"e2e mean {perf.e2e_latency_s.mean:.2f} s", markup=False)
    if getattr(perf, "overloaded", False):
        console.print(f"  warning: overloaded: it completes {perf.requests_per_s:.2f} of the {wl['request_rate']:g} "
                      "req/s offered, so the queue and TTFT grow for as long as the traffic lasts (the TTFT above "
                      "is that of this simulated run); lower the rate, or add replicas (vllmkit capacity)",
                      markup=False)
    for line in perf.assumptions:
        console.print(f"  assumes: {line}", markup=False)
