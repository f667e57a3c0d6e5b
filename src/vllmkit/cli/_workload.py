"""Workload options shared by `plan` and `capacity`, the measured-records input, and the text rendering
of a plan's performance section (issue 11)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import typer
from rich.console import Console

from vllmkit.errors import UsageError
from vllmkit.estimate.serving import WORKLOAD_PRESETS, Workload

INPUT_LEN_OPTION = typer.Option(None, "--input-len", help="Prompt tokens per request (performance estimate).")
OUTPUT_LEN_OPTION = typer.Option(None, "--output-len", help="Generated tokens per request.")
CONCURRENCY_OPTION = typer.Option(None, "--concurrency", help="Closed loop: requests in flight at all times.")
REQUEST_RATE_OPTION = typer.Option(None, "--request-rate", help="Poisson arrivals, requests per second.")
WORKLOAD_OPTION = typer.Option(
    None, "--workload",
    help="Preset lengths: " + ", ".join(f"{k} ({i} in / {o} out)" for k, (i, o) in WORKLOAD_PRESETS.items()) + ".",
)


def workload_from_flags(*, input_len: int | None, output_len: int | None, concurrency: int | None,
                        request_rate: float | None, preset: str | None) -> Workload | None:
    """None when no workload flag was given (plan stays a memory plan)."""
    if all(v is None for v in (input_len, output_len, concurrency, request_rate, preset)):
        return None
    name = None
    if preset is not None:
        key = preset.strip().lower()
        if key not in WORKLOAD_PRESETS:
            raise UsageError(f"unknown --workload {preset!r}", "use one of: " + ", ".join(WORKLOAD_PRESETS))
        name = key
        pin, pout = WORKLOAD_PRESETS[key]
        input_len = input_len or pin
        output_len = output_len or pout
    if input_len is None or output_len is None:
        raise UsageError("a workload needs --input-len and --output-len (or --workload chat|rag|summarize|code)",
                         "e.g. --input-len 1024 --output-len 256 --concurrency 32")
    for flag, value in (("--input-len", input_len), ("--output-len", output_len)):
        if value <= 0:
            raise UsageError(f"{flag} must be a positive integer", f"e.g. {flag} 512")
    if concurrency is not None and request_rate is not None:
        raise UsageError("give --concurrency or --request-rate, not both",
                         "--concurrency N: N clients in a closed loop; --request-rate R: Poisson arrivals")
    if concurrency is not None and concurrency <= 0:
        raise UsageError("--concurrency must be a positive integer", "e.g. --concurrency 32")
    if request_rate is not None and (not math.isfinite(request_rate) or request_rate <= 0):
        raise UsageError("--request-rate must be a positive number of requests per second", "e.g. --request-rate 5")
    if concurrency is None and request_rate is None:
        concurrency = 1
    return Workload(float(input_len), float(output_len), concurrency=concurrency, request_rate=request_rate, name=name)


def perf_records(env: Mapping[str, str]) -> list[Any]:
    """What `vllmkit bench` measured (calibration/perfstore.py); none with VLLMKIT_NO_CALIBRATION=1."""
    if env.get("VLLMKIT_NO_CALIBRATION") == "1":
        return []
    from vllmkit.calibration.perfstore import load_perf_records, perf_store_path

    records, _ = load_perf_records(perf_store_path(env))
    return records


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
    console.print(f"  TTFT mean {perf.ttft_ms.mean:,.0f} ms, p99 {perf.ttft_ms.p99:,.0f} ms; TPOT mean "
                  f"{perf.tpot_ms.mean:.1f} ms, p99 {perf.tpot_ms.p99:.1f} ms (floor {perf.tpot_floor_ms:.1f} ms); "
                  f"e2e mean {perf.e2e_latency_s.mean:.2f} s", markup=False)
    for line in perf.assumptions:
        console.print(f"  assumes: {line}", markup=False)
