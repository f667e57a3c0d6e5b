"""Live-server triage from vLLM's Prometheus /metrics (the text exposition format is parsed by
prometheus_client.parser, the reference implementation vLLM itself exports with).

Metric names: shared/reference/vllm-memory.md §5 and vllm/v1/metrics/loggers.py (0.32); counters are
exported with a `_total` suffix. Older (V0, <=0.10) names are read as fallbacks
(vllm:gpu_cache_usage_perc, vllm:time_per_output_token_seconds, vllm:gpu_prefix_cache_*).

The triage walks three layers in order (seed 000, "排错按三层顺序走"):
1. are the optimizations on - attention backend, CUDA graphs (no --enforce-eager), prefix caching;
2. GPU and memory - preemptions mean the KV cache is too small for the load; KV usage near 1 means
   concurrency is at the ceiling (lower --max-num-seqs or add TP); low usage means memory to spare;
3. the request side - P99 TTFT far above the mean means time goes to queueing; growing inputs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from vllmkit.logs import LogFacts

Status = Literal["ok", "warn", "fail", "info"]

# --- Prometheus text format ----------------------------------------------------------------------

class Sample(BaseModel):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    value: float


def _parse_value(text: str) -> float | None:
    t = text.strip()
    lowered = t.lower()
    if lowered in ("nan",):
        return math.nan
    if lowered in ("+inf", "inf"):
        return math.inf
    if lowered == "-inf":
        return -math.inf
    try:
        return float(t)
    except ValueError:
        return None


def _samples(text: str) -> list[Sample]:
    from prometheus_client.parser import text_string_to_metric_families

    return [
        Sample(name=s.name, labels=dict(s.labels), value=float(s.value))
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def parse_prometheus(text: str) -> dict[str, list[Sample]]:
    """sample name (with its _total/_bucket/_sum/_count suffix) -> samples. Never raises: when the
    whole text does not parse (a truncated scrape, a proxy's error page), each line is parsed on its
    own and the lines that do not parse are skipped."""
    try:
        samples = _samples(text)
    except (ValueError, TypeError, IndexError, KeyError):
        samples = []
        for line in text.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                samples.extend(_samples(line + "\n"))
            except (ValueError, TypeError, IndexError, KeyError):
                continue
    out: dict[str, list[Sample]] = {}
    for sample in samples:
        out.setdefault(sample.name, []).append(sample)
    return out


# --- reading vLLM metrics ----------------------------------------------------------------------


class Histogram(BaseModel):
    buckets: list[tuple[float, float]]  # (upper bound, cumulative count), summed over label sets
    count: float
    sum: float

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count > 0 else None

    def quantile(self, q: float) -> float | None:
        """Prometheus histogram_quantile: linear interpolation inside the bucket holding rank q*count."""
        if self.count <= 0 or not self.buckets:
            return None
        rank = q * self.count
        prev_bound, prev_count = 0.0, 0.0
        for bound, cum in self.buckets:
            if cum >= rank:
                if math.isinf(bound):
                    return prev_bound  # the +Inf bucket: best lower estimate is the last finite bound
                in_bucket = cum - prev_count
                if in_bucket <= 0:
                    return bound
                return prev_bound + (bound - prev_bound) * (rank - prev_count) / in_bucket
            prev_bound, prev_count = bound, cum
        return prev_bound

    def minus(self, older: Histogram) -> Histogram:
        old = dict(older.buckets)
        return Histogram(
            buckets=[(b, c - old.get(b, 0.0)) for b, c in self.buckets],
            count=self.count - older.count,
            sum=self.sum - older.sum,
        )


def _sum(metrics: dict[str, list[Sample]], *names: str) -> float | None:
    for name in names:
        samples = metrics.get(name)
        if samples:
            values = [s.value for s in samples if math.isfinite(s.value)]
            if values:
                return float(sum(values))
    return None


def _mean_gauge(metrics: dict[str, list[Sample]], *names: str) -> float | None:
    for name in names:
        samples = metrics.get(name)
        if samples:
            values = [s.value for s in samples if math.isfinite(s.value)]
            if values:
                return float(max(values))  # per-engine gauges: the fullest engine is what matters
    return None


def histogram(metrics: dict[str, list[Sample]], *names: str) -> Histogram | None:
    for name in names:
        buckets = metrics.get(f"{name}_bucket")
        if not buckets:
            continue
        by_le: dict[float, float] = {}
        for s in buckets:
            le = _parse_value(s.labels.get("le", ""))
            if le is None or math.isnan(le) or not math.isfinite(s.value):
                continue
            by_le[le] = by_le.get(le, 0.0) + s.value
        return Histogram(
            buckets=sorted(by_le.items()),
            count=_sum(metrics, f"{name}_count") or 0.0,
            sum=_sum(metrics, f"{name}_sum") or 0.0,
        )
    return None


class MetricsSnapshot(BaseModel):
    kv_cache_usage: float | None = None  # 0..1
    running: float | None = None
    waiting: float | None = None
    preemptions: float | None = None
    prefix_cache_queries: float | None = None
    prefix_cache_hits: float | None = None
    prompt_tokens: float | None = None
    generation_tokens: float | None = None
    requests_finished: float | None = None
    ttft: Histogram | None = None
    itl: Histogram | None = None
    e2e: Histogram | None = None
    queue_time: Histogram | None = None
    prompt_len: Histogram | None = None
    cache_config: dict[str, str] = Field(default_factory=dict)
    metric_names: int = 0

    @property
    def prefix_hit_rate(self) -> float | None:
        if self.prefix_cache_queries and self.prefix_cache_queries > 0 and self.prefix_cache_hits is not None:
            return self.prefix_cache_hits / self.prefix_cache_queries
        return None


def snapshot(metrics: dict[str, list[Sample]]) -> MetricsSnapshot:
    cache_info = metrics.get("vllm:cache_config_info") or []
    return MetricsSnapshot(
        kv_cache_usage=_mean_gauge(metrics, "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
        running=_sum(metrics, "vllm:num_requests_running"),
        waiting=_sum(metrics, "vllm:num_requests_waiting"),
        preemptions=_sum(metrics, "vllm:num_preemptions_total", "vllm:num_preemptions"),
        prefix_cache_queries=_sum(metrics, "vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
        prefix_cache_hits=_sum(metrics, "vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
        prompt_tokens=_sum(metrics, "vllm:prompt_tokens_total"),
        generation_tokens=_sum(metrics, "vllm:generation_tokens_total"),
        requests_finished=_sum(metrics, "vllm:request_success_total"),
        ttft=histogram(metrics, "vllm:time_to_first_token_seconds"),
        itl=histogram(metrics, "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
        e2e=histogram(metrics, "vllm:e2e_request_latency_seconds"),
        queue_time=histogram(metrics, "vllm:request_queue_time_seconds"),
        prompt_len=histogram(metrics, "vllm:request_prompt_tokens"),
        cache_config=dict(cache_info[0].labels) if cache_info else {},
        metric_names=sum(1 for k in metrics if k.startswith("vllm:")),
    )


# --- triage ------------------------------------------------------------------------------------


class Finding(BaseModel):
    layer: int  # 1 optimizations, 2 GPU/memory, 3 requests
    name: str
    status: Status
    detail: str
    fix: str | None = None


class Triage(BaseModel):
    url: str
    metrics: dict[str, Any]
    findings: list[Finding]
    log_used: str | None = None

    @property
    def failed(self) -> bool:
        return any(f.status == "fail" for f in self.findings)


_SLOW_BACKENDS = re.compile(r"xformers|torch_sdpa|sdpa|naive", re.I)


def _truthy(value: str | None) -> bool | None:
    if value is None:
        return None
    v = value.strip().lower()
    if v in ("true", "1"):
        return True
    if v in ("false", "0"):
        return False
    return None


def layer1(snap: MetricsSnapshot, facts: LogFacts | None) -> list[Finding]:
    out: list[Finding] = []
    cpu = facts is not None and (facts.platform == "cpu" or facts.kv_pool == "CPU")
    # attention backend
    backend = facts.attention_backend if facts else None
    if backend is None:
        out.append(Finding(layer=1, name="attention-backend", status="info",
                           detail="unknown (pass --log with the server's startup log to check it)"))
    elif _SLOW_BACKENDS.search(backend) and not cpu:
        out.append(Finding(layer=1, name="attention-backend", status="warn", detail=f"{backend} (a fallback backend)",
                           fix="Check why FLASH_ATTN / FLASHINFER was not selected (GPU generation, head size, dtype, "
                           "VLLM_ATTENTION_BACKEND set by hand)."))
    else:
        out.append(Finding(layer=1, name="attention-backend", status="ok", detail=backend))
    # CUDA graphs
    if facts is None or facts.enforce_eager is None:
        out.append(Finding(layer=1, name="cuda-graphs", status="info", detail="unknown (needs the startup log)"))
    elif cpu:
        out.append(Finding(layer=1, name="cuda-graphs", status="ok", detail="CPU backend (no CUDA graphs)"))
    elif facts.enforce_eager:
        out.append(Finding(layer=1, name="cuda-graphs", status="warn", detail="off (--enforce-eager)",
                           fix="Fix this first: restart without --enforce-eager; eager decoding is much slower."))
    else:
        out.append(Finding(layer=1, name="cuda-graphs", status="ok", detail="on"))
    # prefix caching
    apc = _truthy(snap.cache_config.get("enable_prefix_caching"))
    if apc is None and facts is not None:
        apc = facts.enable_prefix_caching
    if apc is None:
        out.append(Finding(layer=1, name="prefix-caching", status="info", detail="unknown"))
    elif apc:
        rate = snap.prefix_hit_rate
        detail = "on" + (f", hit rate {rate:.1%}" if rate is not None else "")
        out.append(Finding(layer=1, name="prefix-caching", status="ok", detail=detail))
    else:
        out.append(Finding(layer=1, name="prefix-caching", status="warn", detail="off",
                           fix="Restart with --enable-prefix-caching (default on in V1): shared system prompts and "
                           "multi-turn chats then skip recomputing their prefix."))
    return out


def layer2(snap: MetricsSnapshot) -> list[Finding]:
    out: list[Finding] = []
    if snap.preemptions:
        out.append(Finding(layer=2, name="preemptions", status="warn",
                           detail=f"{snap.preemptions:.0f} preemptions: running requests were evicted from the KV cache and recomputed",
                           fix="The KV cache is too small for this load: give it more memory (higher "
                           "--gpu-memory-utilization, --kv-cache-dtype fp8, more tensor parallelism) or admit fewer "
                           "requests at once (lower --max-num-seqs)."))
    elif snap.preemptions is not None:
        out.append(Finding(layer=2, name="preemptions", status="ok", detail="none"))
    usage = snap.kv_cache_usage
    if usage is None:
        out.append(Finding(layer=2, name="kv-cache-usage", status="info", detail="not exported"))
    elif usage >= 0.9:
        out.append(Finding(layer=2, name="kv-cache-usage", status="warn", detail=f"{usage:.1%} of the KV cache in use",
                           fix="Concurrency is at the KV ceiling: lower --max-num-seqs, or add GPUs "
                           "(--tensor-parallel-size) for more KV memory."))
    elif usage < 0.3 and (snap.running or 0) > 0:
        out.append(Finding(layer=2, name="kv-cache-usage", status="info", detail=f"{usage:.1%} of the KV cache in use",
                           fix="Plenty of KV memory is idle: this server can take more concurrent or longer requests "
                           "(raise --max-num-seqs); --gpu-memory-utilization only matters once usage gets high."))
    else:
        out.append(Finding(layer=2, name="kv-cache-usage", status="ok", detail=f"{usage:.1%} of the KV cache in use"))
    if (snap.waiting or 0) > 0 and usage is not None and usage < 0.5:
        out.append(Finding(layer=2, name="waiting", status="warn",
                           detail=f"{snap.waiting:.0f} requests waiting while the KV cache is {usage:.0%} used",
                           fix="The scheduler limit, not memory, holds them back: raise --max-num-seqs / "
                           "--max-num-batched-tokens."))
    else:
        running = "-" if snap.running is None else f"{snap.running:.0f}"
        waiting = "-" if snap.waiting is None else f"{snap.waiting:.0f}"
        out.append(Finding(layer=2, name="requests", status="ok", detail=f"running {running}, waiting {waiting}"))
    return out


def layer3(snap: MetricsSnapshot, previous: MetricsSnapshot | None = None) -> list[Finding]:
    out: list[Finding] = []
    ttft = snap.ttft
    if ttft is None or ttft.count <= 0:
        out.append(Finding(layer=3, name="ttft", status="info", detail="no finished requests yet"))
    else:
        mean, p99 = ttft.mean, ttft.quantile(0.99)
        detail = f"TTFT mean {mean:.3f}s, P99 ~{p99:.3f}s over {ttft.count:.0f} requests"
        queue = snap.queue_time.mean if snap.queue_time else None
        if queue is not None:
            detail += f"; mean queue time {queue:.3f}s"
        if mean and p99 is not None and p99 > 3 * mean and p99 > 0.5:
            out.append(Finding(layer=3, name="ttft", status="warn", detail=detail,
                               fix="P99 is far above the mean: the time goes to queueing, not compute. Add replicas "
                               "or capacity for the peaks; tuning sampling or quantization will not help."))
        else:
            out.append(Finding(layer=3, name="ttft", status="ok", detail=detail))
    if snap.itl is not None and snap.itl.count > 0 and snap.itl.mean is not None:
        out.append(Finding(layer=3, name="inter-token-latency", status="ok",
                           detail=f"mean {snap.itl.mean * 1000:.1f} ms, P99 ~{(snap.itl.quantile(0.99) or 0) * 1000:.1f} ms"))
    plen = snap.prompt_len
    if plen is not None and plen.count > 0 and plen.mean is not None:
        detail = f"mean prompt {plen.mean:.0f} tokens over {plen.count:.0f} requests"
        if previous is not None and previous.prompt_len is not None:
            recent = plen.minus(previous.prompt_len)
            if recent.count > 0 and recent.mean is not None and recent.mean > 1.5 * plen.mean:
                out.append(Finding(layer=3, name="input-length", status="warn",
                                   detail=f"{detail}; recent requests average {recent.mean:.0f} tokens",
                                   fix="Inputs are getting longer: check prompts / RAG retrieval before tuning the server."))
                return out
        out.append(Finding(layer=3, name="input-length", status="ok", detail=detail))
    return out


def metrics_summary(snap: MetricsSnapshot) -> dict[str, Any]:
    def q(h: Histogram | None, p: float) -> float | None:
        return h.quantile(p) if h is not None else None

    return {
        "kv_cache_usage": snap.kv_cache_usage,
        "running": snap.running,
        "waiting": snap.waiting,
        "preemptions": snap.preemptions,
        "prefix_cache_hit_rate": snap.prefix_hit_rate,
        "prompt_tokens": snap.prompt_tokens,
        "generation_tokens": snap.generation_tokens,
        "ttft_mean_s": snap.ttft.mean if snap.ttft else None,
        "ttft_p99_s": q(snap.ttft, 0.99),
        "itl_mean_s": snap.itl.mean if snap.itl else None,
        "itl_p99_s": q(snap.itl, 0.99),
        "requests_with_ttft": snap.ttft.count if snap.ttft else None,
        "cache_config": snap.cache_config,
    }


def triage(
    url: str,
    text: str,
    *,
    facts: LogFacts | None = None,
    previous_text: str | None = None,
    log_used: str | None = None,
) -> Triage:
    snap = snapshot(parse_prometheus(text))
    prev = snapshot(parse_prometheus(previous_text)) if previous_text else None
    findings = [*layer1(snap, facts), *layer2(snap), *layer3(snap, prev)]
    return Triage(url=url, metrics=metrics_summary(snap), findings=findings, log_used=log_used)


def metrics_url(url: str) -> str:
    base = url.rstrip("/")
    return base if base.endswith("/metrics") else base + "/metrics"


Fetcher = Callable[[str, float], str]


def is_vllm_metrics(text: str) -> bool:
    return any(name.startswith("vllm:") for name in parse_prometheus(text))

