"""vLLM's Prometheus metric names by version (what dashboards and autoscalers query).

vLLM's deprecation policy (docs.vllm.ai/en/stable/usage/metrics/): a metric deprecated in X.Y is
hidden in X.Y+1 (re-enabled with --show-hidden-metrics-for-version=X.Y) and removed in X.Y+2.
- `vllm:gpu_cache_usage_perc` -> `vllm:kv_cache_usage_perc`, and `vllm:gpu_prefix_cache_*` ->
  `vllm:prefix_cache_*`: vllm PR #18354 (merged May 2025, first in the 0.10 line); the old names
  were removed by PR #29330 (Nov 2025).
- `vllm:time_per_output_token_seconds` -> `vllm:inter_token_latency_seconds` (PR #24110,
  deprecated in the 0.11 line, hidden by PR #29330). Per-request TPOT is
  `vllm:request_time_per_output_token_seconds` from the same change.
Thresholds are the first minor release that has the new name; 0.32's names are checked against
vllm/v1/metrics/loggers.py and shared/reference/vllm-memory.md §5.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllmkit.engine.versions import parse_version

KV_USAGE_RENAMED = (0, 10, 0)
ITL_RENAMED = (0, 11, 0)


@dataclass(frozen=True)
class MetricNames:
    kv_cache_usage: str
    num_requests_waiting: str = "vllm:num_requests_waiting"
    num_requests_running: str = "vllm:num_requests_running"
    num_preemptions: str = "vllm:num_preemptions_total"
    time_to_first_token: str = "vllm:time_to_first_token_seconds"
    inter_token_latency: str = "vllm:inter_token_latency_seconds"
    time_per_output_token: str = "vllm:request_time_per_output_token_seconds"
    e2e_latency: str = "vllm:e2e_request_latency_seconds"
    prompt_tokens: str = "vllm:prompt_tokens_total"
    generation_tokens: str = "vllm:generation_tokens_total"
    prefix_cache_queries: str = "vllm:prefix_cache_queries_total"
    prefix_cache_hits: str = "vllm:prefix_cache_hits_total"


def metric_names(version: str) -> MetricNames:
    v = parse_version(version)
    kv_new = v >= KV_USAGE_RENAMED
    itl_new = v >= ITL_RENAMED
    return MetricNames(
        kv_cache_usage="vllm:kv_cache_usage_perc" if kv_new else "vllm:gpu_cache_usage_perc",
        inter_token_latency="vllm:inter_token_latency_seconds" if itl_new else "vllm:time_per_output_token_seconds",
        time_per_output_token=(
            "vllm:request_time_per_output_token_seconds" if itl_new else "vllm:time_per_output_token_seconds"
        ),
        prefix_cache_queries="vllm:prefix_cache_queries_total" if kv_new else "vllm:gpu_prefix_cache_queries_total",
        prefix_cache_hits="vllm:prefix_cache_hits_total" if kv_new else "vllm:gpu_prefix_cache_hits_total",
    )
