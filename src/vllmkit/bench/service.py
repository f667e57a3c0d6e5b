"""`vllmkit bench`: resolve the target, check it, build the workload, run the sweep, store results.

Faults (exit codes in errors.py / README):
- server unreachable before the first request -> LaunchError (6);
- 401 from the server -> BenchAuthError (2) with the key hint;
- server gone mid-run -> the report so far, status "server-died" (the CLI prints it and exits 6);
- Ctrl-C -> the report so far, status "interrupted" (exit 130);
- every failed request is counted in its point's `failures` by reason, never dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from vllmkit.bench.aggregate import aggregate
from vllmkit.bench.client import error_message, make_client
from vllmkit.bench.loadgen import PointRun, ProgressFn, run_point, warmup
from vllmkit.bench.models import BenchReport, PointResult, Target, Workload
from vllmkit.bench.stats import Slo
from vllmkit.bench.store import stale_cache_hits, storable, store_report
from vllmkit.bench.verdict import bottleneck
from vllmkit.bench.workload import (
    _HARVEST_TEXT,
    Prompt,
    file_prompts,
    harvest_ids,
    load_tokenizer,
    random_prompts,
    sharegpt_prompts,
    text_prompts,
    vocabulary_from_tokenizer,
)
from vllmkit.errors import ExitCode, LaunchError, UsageError, VllmkitError
from vllmkit.launch import runs
from vllmkit.urls import server_url

AUTH_HINT = ("pass the server's key with --api-key / --api-key-file or VLLM_API_KEY (a key vllmkit "
             "generated for a `vllmkit serve` run is read from its run folder when you bench the run)")


class BenchAuthError(VllmkitError):
    exit_code = ExitCode.USAGE
    code = "auth"


@dataclass
class LoadPoint:
    concurrency: int | None = None
    request_rate: float | None = None  # math.inf allowed

    @property
    def label(self) -> str:
        if self.concurrency is not None:
            return f"c={self.concurrency}"
        assert self.request_rate is not None
        return "rate=inf" if math.isinf(self.request_rate) else f"rate={self.request_rate:g}"


@dataclass
class BenchOptions:
    target: str | None = None  # URL, run id (prefix), or None = the newest live `vllmkit serve` run
    api_key: str | None = None
    served_model: str | None = None
    workload: str = "random"  # random | sharegpt | prompts
    dataset: Path | None = None
    input_len: int = 128
    output_len: int | None = 128
    prefix_len: int = 0
    points: list[LoadPoint] = field(default_factory=lambda: [LoadPoint(concurrency=1)])
    num_prompts: int | None = None
    duration_s: float | None = None
    warmup: int = 4
    slo: Slo = field(default_factory=Slo)
    seed: int = 0
    timeout_s: float = 300.0
    tokenizer: str | None = None
    store: bool = True
    metrics_interval_s: float | None = 0.5  # None: do not scrape /metrics
    # describe a bare URL (a run's plan supplies these)
    gpu: str | None = None
    model: str | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    precision: str | None = None
    kv_cache_dtype: str | None = None


@dataclass
class Reporter:
    point_start: Callable[[str, int | None], None] | None = None
    progress: ProgressFn | None = None
    point_end: Callable[[PointResult], None] | None = None
    note: Callable[[str], None] | None = None


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).astimezone().isoformat(timespec="seconds")


# --- target -------------------------------------------------------------------------------------

_URLISH = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://|[\w.-]+:\d+(/|$)|\[[0-9a-fA-F:]+\]:\d+)")


@dataclass
class ResolvedTarget:
    url: str
    api_key: str | None
    run: runs.RunRecord | None = None
    plan: dict[str, Any] | None = None


def resolve_target(env: Mapping[str, str], target: str | None, api_key: str | None) -> ResolvedTarget:
    if target and _URLISH.match(target):
        return ResolvedTarget(url=server_url(target), api_key=api_key)
    records = runs.all_runs(env)
    if target:
        matches = [r for r in records if r.run_id == target or r.run_id.startswith(target)]
        if len(matches) != 1:
            raise UsageError(
                f"no run {target!r}" if not matches else f"{target!r} matches {len(matches)} runs",
                "give a URL (http://HOST:PORT) or a run id from `vllmkit ps --all`",
            )
        record = matches[0]
    else:
        live = [r for r in records if runs.is_live(r)]
        if not live:
            raise UsageError("no running `vllmkit serve` server to benchmark",
                             "start one (`vllmkit serve MODEL --detach`) or give its URL: vllmkit bench http://HOST:PORT")
        record = max(live, key=lambda r: (r.started_at, r.run_id))
    key = api_key
    if key is None and record.api_key_file:
        with contextlib.suppress(OSError):
            key = Path(record.api_key_file).read_text(encoding="utf-8").strip() or None
    plan = None
    plan_file = Path(record.folder) / "plan.yaml"
    with contextlib.suppress(OSError, yaml.YAMLError):
        doc = yaml.safe_load(plan_file.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and isinstance(doc.get("plan"), dict):
            plan = doc["plan"]
    return ResolvedTarget(url=record.url.rstrip("/"), api_key=key, run=record, plan=plan)


def _plan_precision(plan: Mapping[str, Any]) -> str | None:
    for alt in plan.get("alternatives") or []:
        if isinstance(alt, dict) and alt.get("chosen"):
            return str(alt.get("precision"))
    settings = plan.get("settings") or {}
    quant = settings.get("quantization")
    if quant:
        return "fp8" if "fp8" in str(quant) else str(quant)
    return "fp16" if settings.get("dtype") == "float16" else "bf16"


def describe_target(resolved: ResolvedTarget, opts: BenchOptions) -> Target:
    """The record key: from the run's plan when bench targets a run, else from the flags
    (flags win over the plan when both are given)."""
    t = Target(url=resolved.url)
    plan = resolved.plan or {}
    if resolved.run is not None:
        t.run_id = resolved.run.run_id
    if plan:
        model = plan.get("model") or {}
        settings = plan.get("settings") or {}
        parallel = plan.get("parallel") or {}
        t.model = model.get("id")
        t.family = model.get("model_type") or ""
        t.gpu = (plan.get("gpu") or {}).get("name")
        t.tp = int(parallel.get("tensor_parallel_size") or 1)
        t.pp = int(parallel.get("pipeline_parallel_size") or 1)
        t.dp = int(parallel.get("data_parallel_size") or 1)
        t.gpu_count = int((plan.get("gpu") or {}).get("count") or t.tp * t.pp)
        t.precision = _plan_precision(plan)
        t.kv_cache_dtype = settings.get("kv_cache_dtype") or "auto"
        t.max_num_seqs = settings.get("max_num_seqs")
        t.max_num_batched_tokens = settings.get("max_num_batched_tokens")
    t.gpu = opts.gpu or t.gpu
    t.model = opts.model or t.model
    t.tp = opts.tp or t.tp
    t.pp = opts.pp or t.pp
    t.dp = opts.dp or t.dp
    if opts.tp or opts.pp:
        t.gpu_count = t.tp * t.pp
    t.precision = opts.precision or t.precision
    t.kv_cache_dtype = opts.kv_cache_dtype or t.kv_cache_dtype
    return t


# --- preflight ------------------------------------------------------------------------------------


async def _preflight(client: httpx.AsyncClient, target: Target, served: str | None) -> None:
    try:
        resp = await client.get("/v1/models", timeout=30.0)
    except httpx.HTTPError as exc:
        raise LaunchError(f"cannot reach {target.url}: {type(exc).__name__}",
                          "is the server running? (`vllmkit ps`, `vllmkit smoke URL`)", code="unreachable") from None
    if resp.status_code == 401:
        raise BenchAuthError(f"{target.url} refused the request: 401 Unauthorized "
                             f"({error_message(resp.content) or 'wrong or missing API key'})", AUTH_HINT)
    if resp.status_code != 200:
        raise LaunchError(f"{target.url}/v1/models answered {resp.status_code}: {error_message(resp.content)}",
                          "check the server log (`vllmkit doctor --log last`)", code="unhealthy")
    try:
        data = resp.json().get("data") or []
    except (ValueError, AttributeError):
        data = []
    names = [str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id")]
    if served is not None:
        if names and served not in names:
            raise UsageError(f"the server does not serve {served!r} (it serves: {', '.join(names)})",
                             "pass one of those to --served-model")
        target.served_model = served
    elif names:
        target.served_model = names[0]
    else:
        raise LaunchError(f"{target.url} serves no model", "is this an OpenAI-compatible server?", code="unhealthy")
    for m in data:
        if isinstance(m, dict) and m.get("id") == target.served_model and m.get("max_model_len"):
            target.max_model_len = int(m["max_model_len"])
    with contextlib.suppress(httpx.HTTPError, ValueError, AttributeError):
        ver = await client.get("/version", timeout=10.0)
        if ver.status_code == 200:
            target.vllm_version = str(ver.json().get("version")) or None


async def _server_vocab(client: httpx.AsyncClient, served: str) -> list[int]:
    """Token ids the server's tokenizer gives a fixed text (vLLM's POST /tokenize)."""
    try:
        resp = await client.post("/tokenize", json={"model": served, "prompt": _HARVEST_TEXT,
                                                     "add_special_tokens": False}, timeout=30.0)
        if resp.status_code != 200:
            return []
        tokens = resp.json().get("tokens") or []
    except (httpx.HTTPError, ValueError, AttributeError):
        return []
    return harvest_ids([[t for t in tokens if isinstance(t, int)]])


def _tokenizer_folder(opts: BenchOptions, resolved: ResolvedTarget) -> str | None:
    if opts.tokenizer:
        return opts.tokenizer
    candidates = []
    if resolved.plan:
        candidates.append((resolved.plan.get("model") or {}).get("path"))
    if resolved.run is not None:
        candidates.append(resolved.run.model)
    if opts.model:
        candidates.append(opts.model)
    for c in candidates:
        if c and Path(c).expanduser().is_dir():
            return str(c)
    return None


# --- the sweep ------------------------------------------------------------------------------------


def _planned(opts: BenchOptions) -> int | None:
    if opts.num_prompts is not None:
        return opts.num_prompts
    return None if opts.duration_s is not None else 100


def _pool_size(opts: BenchOptions, point: LoadPoint) -> int:
    planned = _planned(opts)
    if planned is not None:
        return planned
    # --duration: enough distinct prompts that few repeat (they are cycled after this)
    assert opts.duration_s is not None
    rate = point.request_rate if point.request_rate and not math.isinf(point.request_rate) else 20.0
    return int(min(max(opts.duration_s * max(rate, point.concurrency or 1) * 2, 64), 4096))


class _Workload:
    def __init__(self, opts: BenchOptions, report: BenchReport, tokenizer: Any | None, vocab: list[int]) -> None:
        self.opts, self.report, self.tokenizer, self.vocab = opts, report, tokenizer, vocab

    def prompts(self, index: int, count: int) -> list[Prompt]:
        """Prompts for point `index` (-1 = warm-up). Random prompts differ per point (their own seed)
        so one point never hits the prefix cache with another point's prompts."""
        o = self.opts
        seed = o.seed * 1000 + index + 1
        out_len = o.output_len if o.output_len is not None else 128
        if o.workload == "random":
            if self.vocab:
                return random_prompts(self.vocab, count, input_len=o.input_len, output_len=out_len,
                                      prefix_len=o.prefix_len, seed=seed)
            return text_prompts(count, input_len=o.input_len, output_len=out_len, prefix_len=o.prefix_len, seed=seed)
        assert o.dataset is not None
        if o.workload == "sharegpt":
            counter = None
            if self.tokenizer is not None:
                tok = self.tokenizer

                def counter(text: str) -> int:
                    return len(tok(text, add_special_tokens=False)["input_ids"])

            return sharegpt_prompts(o.dataset, count, output_len=o.output_len, count_tokens=counter, seed=o.seed)
        return file_prompts(o.dataset, count, output_len=out_len, seed=o.seed)


async def _sweep(
    opts: BenchOptions, resolved: ResolvedTarget, report: BenchReport, reporter: Reporter, current: list[PointRun]
) -> None:
    target = report.target
    connections = max([p.concurrency or 0 for p in opts.points] + [64]) + 8
    async with make_client(target.url, resolved.api_key, timeout_s=opts.timeout_s, connections=connections) as client:
        await _preflight(client, target, opts.served_model)
        assert target.served_model is not None
        tokenizer = None
        vocab: list[int] = []
        folder = _tokenizer_folder(opts, resolved)
        if folder is not None:
            tokenizer = load_tokenizer(folder)
        if tokenizer is not None:
            vocab = vocabulary_from_tokenizer(tokenizer)
            report.workload.tokenizer = folder
        elif opts.workload == "random":
            vocab = await _server_vocab(client, target.served_model)
            if vocab:
                report.workload.tokenizer = "server /tokenize"
        if opts.workload == "random" and not vocab:
            report.workload.prompt_format = "text"
            report.workload.exact_input = False
            report.notes.append("no tokenizer here and no /tokenize on the server: text prompts, input lengths "
                                "are read from the server's usage (not exact)")
        elif opts.workload != "random":
            report.workload.prompt_format = "text"
            report.workload.exact_input = tokenizer is not None
        if opts.workload == "random" and target.max_model_len:
            need = opts.prefix_len + opts.input_len + (opts.output_len or 0)
            if need > target.max_model_len:
                raise UsageError(f"prefix + input + output = {need} tokens exceeds the server's max_model_len "
                                 f"{target.max_model_len}", "shorten --input-len / --output-len / --prefix-len")
        work = _Workload(opts, report, tokenizer, vocab)
        if opts.warmup > 0:
            top = max((p.concurrency or 1) for p in opts.points)
            samples = await warmup(client, target.served_model, work.prompts(-1, opts.warmup), opts.warmup, top)
            bad = [s for s in samples if not s.ok]
            auth = next((s for s in bad if s.error == "http-401"), None)
            if auth is not None:
                raise BenchAuthError(f"{target.url} refused the request: 401 Unauthorized ({auth.detail})", AUTH_HINT)
            if bad and len(bad) == len(samples):
                first = bad[0]
                raise LaunchError(f"every warm-up request failed ({first.error}: {first.detail})",
                                  "check `vllmkit smoke URL` and the server log", code="warmup-failed")
        for index, point in enumerate(opts.points):
            planned = _planned(opts)
            if reporter.point_start:
                reporter.point_start(point.label, planned)
            prompts = work.prompts(index, _pool_size(opts, point))
            run = PointRun()
            current[:] = [run]
            result = PointResult(
                label=point.label,
                concurrency=point.concurrency,
                request_rate=None if point.request_rate is None or math.isinf(point.request_rate) else point.request_rate,
                all_at_once=point.request_rate is not None and math.isinf(point.request_rate),
            )
            await run_point(
                client, target.served_model, prompts, run,
                concurrency=point.concurrency, request_rate=point.request_rate,
                num_prompts=planned, duration_s=opts.duration_s, seed=opts.seed + index,
                progress=reporter.progress, scrape_interval_s=opts.metrics_interval_s,
            )
            current[:] = []
            result.partial = run.server_gone or run.auth_failed is not None
            result.prompt_repeats = max(len(run.samples) - len(prompts), 0)
            offered = point.concurrency
            aggregate(result, run.samples, duration_s=run.duration_s, slo=opts.slo, server=run.load,
                      verdict=bottleneck(run.load, offered=offered) if not run.server_gone else None)
            report.points.append(result)
            if (hit := stale_cache_hits(report, result)) is not None:
                report.notes.append(
                    f"{result.label}: {hit:.0%} of the prompt tokens were prefix-cache hits: an earlier run sent "
                    "these prompts to this server (same --seed and lengths, or a shorter --input-len), so their "
                    "prefill was skipped and TTFT / throughput are optimistic; the point is not stored for "
                    "calibration. Rerun with another --seed")
            if reporter.point_end:
                reporter.point_end(result)
            if run.auth_failed is not None:
                raise BenchAuthError(f"{target.url} refused the request: 401 Unauthorized ({run.auth_failed})", AUTH_HINT)
            if run.server_gone:
                report.status = "server-died"
                return


def run_bench(opts: BenchOptions, env: Mapping[str, str], reporter: Reporter | None = None) -> BenchReport:
    """Run the sweep. Returns the report (also when the server died or on Ctrl-C: see `status`);
    raises for errors before any measurement (unreachable, 401, bad workload)."""
    reporter = reporter or Reporter()
    resolved = resolve_target(env, opts.target, opts.api_key)
    report = BenchReport(
        started_at=_now(),
        target=describe_target(resolved, opts),
        workload=Workload(
            kind=opts.workload,  # type: ignore[arg-type]
            input_len=opts.input_len if opts.workload == "random" else None,
            output_len=opts.output_len,
            prefix_len=opts.prefix_len,
            dataset=str(opts.dataset) if opts.dataset else None,
            seed=opts.seed,
        ),
        slo=opts.slo,
        warmup=opts.warmup,
    )
    current: list[PointRun] = []
    try:
        asyncio.run(_sweep(opts, resolved, report, reporter, current))
    except KeyboardInterrupt:
        report.status = "interrupted"
        for run in current:  # the point in progress: keep what it measured
            label = opts.points[len(report.points)].label if len(report.points) < len(opts.points) else "?"
            point = opts.points[len(report.points)] if len(report.points) < len(opts.points) else LoadPoint()
            result = PointResult(label=label, concurrency=point.concurrency, partial=True,
                                 request_rate=None if point.request_rate is None or math.isinf(point.request_rate)
                                 else point.request_rate)
            report.points.append(aggregate(result, run.samples, duration_s=run.duration_s, slo=opts.slo,
                                           server=run.load))
    report.finished_at = _now()
    if opts.store and report.points:
        ok, why = storable(report)
        if ok:
            report.stored, report.store_path = store_report(report, env, report.finished_at)
        else:
            report.notes.append(why)
    return report
