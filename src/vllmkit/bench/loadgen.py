"""Drive one load point: a closed loop at N concurrent users, or Poisson arrivals at a rate.

- closed loop (`concurrency`): N workers, each sends its next request when the previous answer ends;
- Poisson (`request_rate`): exponential gaps with mean 1/rate (seeded), every request sent on time
  whatever the server does; rate inf sends everything at once (vLLM's `--request-rate inf`);
- the point ends after `num_prompts` requests, or when `duration_s` has passed (no new sends after
  it; in-flight requests finish);
- /metrics is scraped every `scrape_interval_s` for peak KV usage, preemptions and queue lengths;
- a connection failure is checked against /health: a dead server stops the point (`server_gone`);
  an HTTP 401 stops it too (`auth_failed`): every further request would fail the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import httpx

from vllmkit.bench.client import CONNECTION_REASONS, completion_body, stream_completion
from vllmkit.bench.models import RequestSample, ServerLoad
from vllmkit.bench.workload import Prompt
from vllmkit.doctor.metrics import parse_prometheus, snapshot

ProgressFn = Callable[[int, int, int | None], None]  # (done, failed, planned or None)


@dataclass
class PointRun:
    """What a point produced so far; filled while it runs, so an interrupted point keeps its samples."""

    samples: list[RequestSample] = field(default_factory=list)
    load: ServerLoad = field(default_factory=ServerLoad)
    started: float | None = None
    ended: float | None = None
    server_gone: bool = False
    auth_failed: str | None = None  # the server's message

    @property
    def duration_s(self) -> float:
        if self.started is None:
            return 0.0
        return (self.ended or time.perf_counter()) - self.started


async def _server_alive(client: httpx.AsyncClient) -> bool:
    try:
        resp = await client.get("/health", timeout=5.0)
    except httpx.HTTPError:
        return False
    return resp.status_code < 500


# The only samples the sampler reads (doctor/metrics.snapshot names, V1 and V0). vLLM's /metrics runs
# to thousands of lines (histograms x buckets x labels); parsing all of it four times a second would
# block this event loop for tens of milliseconds each time and inflate every TTFT measured meanwhile.
_SAMPLED = (
    "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc", "vllm:num_preemptions", "vllm:prefix_cache_queries", "vllm:prefix_cache_hits",
    "vllm:gpu_prefix_cache_queries", "vllm:gpu_prefix_cache_hits",
)


def sampled_lines(text: str) -> str:
    """The sample lines bench needs, out of a whole /metrics page (a cheap prefix filter)."""
    return "".join(line + "\n" for line in text.splitlines() if line.startswith(_SAMPLED))


class _MetricsSampler:
    def __init__(self, client: httpx.AsyncClient, load: ServerLoad, interval_s: float) -> None:
        self.client, self.load, self.interval = client, load, interval_s
        self.base_preempt: float | None = None
        self.base_queries: float | None = None
        self.base_hits: float | None = None
        self.enabled = True

    async def scrape(self) -> None:
        if not self.enabled:
            return
        try:
            resp = await self.client.get("/metrics", timeout=5.0)
        except httpx.HTTPError:
            return
        lines = sampled_lines(resp.text) if resp.status_code == 200 else ""
        if not lines:
            self.enabled = resp.status_code >= 500  # not exported: stop asking; 5xx may be transient
            return
        snap = snapshot(parse_prometheus(lines))
        load = self.load
        load.scrapes += 1
        if snap.kv_cache_usage is not None:
            load.peak_kv_usage = max(load.peak_kv_usage or 0.0, min(snap.kv_cache_usage, 1.0))
        if snap.running is not None:
            load.max_running = max(load.max_running or 0, int(snap.running))
        if snap.waiting is not None:
            load.max_waiting = max(load.max_waiting or 0, int(snap.waiting))
        if snap.preemptions is not None:
            if self.base_preempt is None:
                self.base_preempt = snap.preemptions
            load.preemptions = int(snap.preemptions - self.base_preempt)
        if snap.prefix_cache_queries is not None and snap.prefix_cache_hits is not None:
            if self.base_queries is None:
                self.base_queries, self.base_hits = snap.prefix_cache_queries, snap.prefix_cache_hits
            queries = snap.prefix_cache_queries - self.base_queries
            if queries > 0:
                load.prefix_cache_hit_rate = (snap.prefix_cache_hits - (self.base_hits or 0.0)) / queries

    async def run(self) -> None:
        while self.enabled:
            await self.scrape()
            await asyncio.sleep(self.interval)


async def run_point(
    client: httpx.AsyncClient,
    model: str,
    prompts: Sequence[Prompt],
    run: PointRun,
    *,
    concurrency: int | None = None,
    request_rate: float | None = None,
    num_prompts: int | None = None,
    duration_s: float | None = None,
    seed: int = 0,
    scrape_interval_s: float | None = 0.5,
    progress: ProgressFn | None = None,
    ignore_eos: bool = True,
) -> PointRun:
    """Run one point into `run`. Exactly one of concurrency / request_rate; one of num_prompts /
    duration_s. Prompts are used in order (cycled when the duration outlasts them)."""
    assert (concurrency is None) != (request_rate is None)
    assert prompts
    planned = num_prompts
    sampler = _MetricsSampler(client, run.load, scrape_interval_s or 0.0)
    sampler.enabled = scrape_interval_s is not None
    next_index = 0
    sent = 0
    stop = asyncio.Event()
    lock = asyncio.Lock()

    def report() -> None:
        if progress is not None:
            done = len(run.samples)
            progress(done, sum(1 for s in run.samples if not s.ok), planned)

    def take() -> Prompt | None:
        nonlocal next_index, sent
        if stop.is_set():
            return None
        if num_prompts is not None and sent >= num_prompts:
            return None
        if duration_s is not None and run.started is not None and time.perf_counter() - run.started >= duration_s:
            return None
        prompt = prompts[next_index % len(prompts)]
        next_index += 1
        sent += 1
        return prompt

    async def one(prompt: Prompt) -> None:
        assert run.started is not None
        body = completion_body(model, prompt.prompt, prompt.output_len, ignore_eos=ignore_eos)
        sample = await stream_completion(client, body, origin=run.started, sink=run.samples)
        report()
        if sample.error == "http-401":
            run.auth_failed = sample.detail or "401 Unauthorized"
            stop.set()
        elif sample.error in CONNECTION_REASONS:
            async with lock:
                if not run.server_gone and not stop.is_set() and not await _server_alive(client):
                    run.server_gone = True
                    stop.set()

    async def worker() -> None:
        while (prompt := take()) is not None:
            await one(prompt)

    await sampler.scrape()  # baseline counters before the first request
    run.started = time.perf_counter()
    sampler_task = asyncio.create_task(sampler.run())
    tasks: list[asyncio.Task[None]] = []
    try:
        if concurrency is not None:
            tasks = [asyncio.create_task(worker()) for _ in range(concurrency)]
            await asyncio.gather(*tasks)
        else:
            assert request_rate is not None
            rng = random.Random(seed)
            due = 0.0
            while (prompt := take()) is not None:
                if not math.isinf(request_rate):
                    wait = run.started + due - time.perf_counter()
                    if wait > 0:
                        # wake early when the point is stopped
                        with contextlib.suppress(asyncio.TimeoutError):
                            await asyncio.wait_for(stop.wait(), timeout=wait)
                        if stop.is_set():
                            break
                    due += rng.expovariate(request_rate)
                tasks.append(asyncio.create_task(one(prompt)))
                tasks = [t for t in tasks if not t.done()] if len(tasks) > 256 else tasks
            await asyncio.gather(*tasks)
        run.ended = time.perf_counter()
    finally:
        # Ctrl-C or an error: cancel what is in flight (each records itself as "interrupted")
        pending = [t for t in tasks if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        if run.ended is None:
            run.ended = time.perf_counter()
        sampler_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler_task
    if not run.server_gone:
        await sampler.scrape()  # the last word on counters (preemptions at the very end)
    return run


async def warmup(client: httpx.AsyncClient, model: str, prompts: Sequence[Prompt], count: int, concurrency: int) -> list[RequestSample]:
    """`count` requests before the measured points (not recorded): compiles, fills caches, opens
    connections. Returns their samples so a failing warm-up can be reported."""
    if count <= 0:
        return []
    run = PointRun()
    await run_point(client, model, prompts, run, concurrency=max(1, min(concurrency, count)),
                    num_prompts=count, scrape_interval_s=None)
    return run.samples
