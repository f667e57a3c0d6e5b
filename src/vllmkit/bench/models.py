"""What bench measures: per-request samples, per-point results, the report saved by --save."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from vllmkit.bench.stats import Slo, Summary

BENCH_FILE_VERSION = 1
BenchStatus = Literal["complete", "server-died", "interrupted"]


class RequestSample(BaseModel):
    """One request. Times in seconds; offsets from the start of its load point (perf_counter)."""

    start_s: float
    ok: bool
    error: str | None = None  # failure reason slug: http-500, connect, disconnected, timeout, interrupted ...
    detail: str | None = None  # first line of the server's message (escaped when printed)
    ttft_s: float | None = None
    e2e_s: float | None = None
    tpot_s: float | None = None
    input_tokens: int | None = None  # server usage.prompt_tokens
    output_tokens: int | None = None  # server usage.completion_tokens (chunk count when usage is missing)
    requested_output_tokens: int | None = None
    tokens_from: Literal["usage", "chunks"] = "usage"
    # gaps between streamed chunks: used for the ITL statistics, not saved (size)
    itl_s: list[float] = Field(default_factory=list, exclude=True)


class ServerLoad(BaseModel):
    """Sampled from the server's /metrics during the point (None when not exported)."""

    scrapes: int = 0
    peak_kv_usage: float | None = None  # 0..1
    preemptions: int | None = None  # counter increase over the point
    max_running: int | None = None
    max_waiting: int | None = None
    prefix_cache_hit_rate: float | None = None  # over the point


class Verdict(BaseModel):
    """The bottleneck at this point, from doctor's live triage rules (doctor/metrics.py layer 2)."""

    name: str  # kv-cache-preemption | kv-cache-full | scheduler-limit | saturated | not-saturated | unknown
    detail: str
    fix: str | None = None


class PointResult(BaseModel):
    label: str  # "c=8" | "rate=4" | "rate=inf"
    concurrency: int | None = None
    request_rate: float | None = None  # Poisson arrivals (req/s); None for closed loop and for inf
    all_at_once: bool = False  # --request-rate inf: every request sent at t=0 (vLLM's "inf")
    num_requests: int = 0  # sent (completed + failed)
    completed: int = 0
    failed: int = 0
    failures: dict[str, int] = Field(default_factory=dict)
    length_mismatch: int = 0  # completed with output tokens != requested (ignore_eos not honoured?)
    # completed answers whose tokens reached the client together after a wait (aggregate.delivered_in_burst):
    # their TTFT and ITL time the server's front end (or this client) falling behind, not the engine
    burst_requests: int = 0
    partial: bool = False  # stopped early (server died / interrupted)
    # requests that reused a prompt of the point's own pool (--duration cycles it): prefix-cache hits by design
    prompt_repeats: int = 0
    duration_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    output_tokens_per_s: float = 0.0
    total_tokens_per_s: float = 0.0
    requests_per_s: float = 0.0
    good_requests: int | None = None
    goodput_rps: float | None = None
    ttft_ms: Summary = Field(default_factory=Summary)
    tpot_ms: Summary = Field(default_factory=Summary)
    itl_ms: Summary = Field(default_factory=Summary)
    e2e_s: Summary = Field(default_factory=Summary)
    server: ServerLoad = Field(default_factory=ServerLoad)
    verdict: Verdict | None = None
    samples: list[RequestSample] = Field(default_factory=list)


class Target(BaseModel):
    """What was measured: the key of the stored performance records."""

    url: str
    served_model: str | None = None
    run_id: str | None = None
    model: str | None = None  # the plan's model id (or --model)
    family: str = ""
    gpu: str | None = None  # GPU profile name; "cpu" on the CPU build
    gpu_count: int = 1
    precision: str | None = None
    kv_cache_dtype: str = "auto"
    tp: int = 1
    pp: int = 1
    dp: int = 1  # data-parallel engines behind the URL (--data-parallel-size)
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    vllm_version: str | None = None  # from the server's /version
    max_model_len: int | None = None


class Workload(BaseModel):
    kind: Literal["random", "sharegpt", "prompts"] = "random"
    input_len: int | None = None
    output_len: int | None = None
    prefix_len: int = 0
    dataset: str | None = None
    prompt_format: Literal["token-ids", "text"] = "token-ids"
    tokenizer: str | None = None  # where the token ids came from (folder, "server /tokenize")
    exact_input: bool = True
    seed: int = 0


class BenchReport(BaseModel):
    vllmkit_bench_version: int = BENCH_FILE_VERSION
    status: BenchStatus = "complete"
    started_at: str
    finished_at: str | None = None
    target: Target
    workload: Workload
    slo: Slo = Field(default_factory=Slo)
    warmup: int = 0
    points: list[PointResult] = Field(default_factory=list)
    stored: int = 0
    store_path: str | None = None
    notes: list[str] = Field(default_factory=list)
