"""`vllmkit bench [URL | RUN_ID]`: load-test a live server; `--compare A.json B.json`."""

from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from vllmkit.bench.compare import Comparison, compare_reports
from vllmkit.bench.models import BenchReport, PointResult
from vllmkit.bench.service import BenchOptions, LoadPoint, Reporter, run_bench
from vllmkit.bench.stats import Slo, parse_duration, parse_slo
from vllmkit.cli._common import JSON_OPTION, boundary
from vllmkit.errors import ExitCode, UsageError
from vllmkit.output import console, emit, info, to_jsonable

# --- parsing --------------------------------------------------------------------------------------


def parse_points(concurrency: str | None, request_rate: str | None) -> list[LoadPoint]:
    points: list[LoadPoint] = []
    for part in (concurrency or "").split(","):
        if not part.strip():
            continue
        try:
            value = int(part)
        except ValueError:
            raise UsageError(f"--concurrency {part.strip()!r} is not a whole number", "e.g. --concurrency 1,8,32") from None
        if value < 1:
            raise UsageError("--concurrency values must be >= 1", "e.g. --concurrency 1,8,32")
        points.append(LoadPoint(concurrency=value))
    for part in (request_rate or "").split(","):
        if not part.strip():
            continue
        try:
            rate = float(part)
        except ValueError:
            raise UsageError(f"--request-rate {part.strip()!r} is not a number", "e.g. --request-rate 2,4,inf") from None
        if not rate > 0 or math.isnan(rate):
            raise UsageError("--request-rate values must be > 0", "e.g. --request-rate 2,4,inf")
        points.append(LoadPoint(request_rate=rate))
    return points or [LoadPoint(concurrency=1)]


def _slo(text: str | None) -> Slo:
    if not text:
        return Slo()
    try:
        return parse_slo(text)
    except ValueError as exc:
        raise UsageError(f"--slo: {exc}", "e.g. --slo ttft=2s,tpot=50ms") from None


def _read_key(api_key: str | None, api_key_file: Path | None) -> str | None:
    if api_key:
        return api_key
    if api_key_file is not None:
        try:
            key = api_key_file.expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise UsageError(f"cannot read --api-key-file {api_key_file}: {exc.strerror}", "check the path") from None
        if not key:
            raise UsageError(f"--api-key-file {api_key_file} is empty", "put the key on the first line")
        return key
    return os.environ.get("VLLM_API_KEY") or None


# --- human output -----------------------------------------------------------------------------------


def _f(value: float | None, fmt: str = ".1f") -> str:
    return "-" if value is None else format(value, fmt)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def render_report(con: Console, report: BenchReport) -> None:
    t = report.target
    head = f"bench {t.url}" + (f" ({t.served_model})" if t.served_model else "")
    table = Table(title=escape(head), title_justify="left")
    # short headers: the table must fit 160 columns (output.py's width when not a terminal)
    cols = ("point", "ok/fail", "out tok/s", "tot tok/s", "req/s", "good req/s",
            "TTFT ms p50/p99", "TPOT ms p50/p99", "ITL ms p50", "e2e s p50/p99",
            "KV peak", "preempt", "run/wait max", "bottleneck")
    for c in cols:
        table.add_column(c, overflow="fold", no_wrap=c in ("point", "bottleneck"))
    for p in report.points:
        table.add_row(
            p.label + (" (partial)" if p.partial else ""),
            f"{p.completed}/{p.failed}",
            _f(p.output_tokens_per_s),
            _f(p.total_tokens_per_s),
            _f(p.requests_per_s, ".2f"),
            _f(p.goodput_rps, ".2f"),
            f"{_f(p.ttft_ms.p50)}/{_f(p.ttft_ms.p99)}",
            f"{_f(p.tpot_ms.p50)}/{_f(p.tpot_ms.p99)}",
            _f(p.itl_ms.p50),
            f"{_f(p.e2e_s.p50, '.2f')}/{_f(p.e2e_s.p99, '.2f')}",
            _pct(p.server.peak_kv_usage),
            "-" if p.server.preemptions is None else str(p.server.preemptions),
            f"{'-' if p.server.max_running is None else p.server.max_running}/"
            f"{'-' if p.server.max_waiting is None else p.server.max_waiting}",
            escape(p.verdict.name if p.verdict else "-"),
        )
    con.print(table)
    w = report.workload
    lens = (f"input {w.prefix_len}+{w.input_len}" if w.prefix_len else f"input {w.input_len}") if w.input_len else "input from dataset"
    con.print(escape(f"workload: {w.kind}, {lens}, output {w.output_len or 'from dataset'} tokens, prompts as "
                     f"{w.prompt_format}" + (f" (vocabulary: {w.tokenizer})" if w.tokenizer else "")))
    if t.gpu or t.vllm_version:
        con.print(escape(f"target: gpu {t.gpu or '?'}, model {t.model or '?'}, {t.precision or '?'}, TP {t.tp} PP {t.pp}, "
                         f"vLLM {t.vllm_version or '?'}" + (f", run {t.run_id}" if t.run_id else "")))
    for p in report.points:
        if p.failures:
            reasons = ", ".join(f"{k} x{v}" for k, v in p.failures.items())
            con.print(escape(f"{p.label}: {p.failed} failed ({reasons})"))
            first = next((s for s in p.samples if not s.ok and s.detail), None)
            if first is not None:
                con.print(f"  first: {first.error}: {first.detail}", markup=False)
        if p.length_mismatch:
            con.print(escape(f"{p.label}: {p.length_mismatch} answers had another length than requested "
                             "(the server ignored ignore_eos, or hit max_model_len)"))
        if p.verdict is not None and p.verdict.fix and p.verdict.name not in ("compute", "unknown"):
            con.print(f"{p.label}: {p.verdict.name}: {p.verdict.detail}. {p.verdict.fix}", markup=False)
    chart = latency_chart(report.points)
    if chart:
        con.print(chart, markup=False, highlight=False)
    for note in report.notes:
        con.print(f"note: {note}", markup=False)
    if report.stored:
        con.print(f"stored {report.stored} performance record(s) in {report.store_path}", markup=False)


def latency_chart(points: list[PointResult], width: int = 72, height: int = 16) -> str | None:
    """Median e2e latency against output tokens/s across the sweep (plotext); None for < 2 points."""
    pts = [p for p in points if p.completed and p.e2e_s.p50 is not None]
    if len(pts) < 2:
        return None
    import plotext as plt

    fig = plt.figure
    fig.clear()
    fig.theme("colorless")
    fig.plot_size(width, height)
    xs = [p.output_tokens_per_s for p in pts]
    ys = [p.e2e_s.p50 or 0.0 for p in pts]
    fig.draw(fig.signal(xs, ys, marker="o"))
    right = max(xs)
    for x, y, p in zip(xs, ys, pts, strict=True):
        fig.draw(fig.text(x, y, f" {p.label}", alignment="right" if x == right else "left"))
    fig.title("median latency vs throughput")
    fig.label("output tokens/s", "x")
    fig.label("p50 e2e (s)", "y")
    text = plt.uncolorize(str(fig.build()))
    fig.clear()
    return text


def render_comparison(con: Console, cmp: Comparison) -> None:
    table = Table(title=escape(f"A = {cmp.a}   B = {cmp.b}"), title_justify="left")
    for c in ("point", "metric", "A", "B", "change", "95% CI", "verdict"):
        table.add_column(c)
    for point in cmp.points:
        for d in point.metrics:
            ci = "-" if d.ci_low is None or d.ci_high is None else f"{d.ci_low:+.1%} .. {d.ci_high:+.1%}"
            table.add_row(point.label, d.metric, _f(d.a, ".2f"), _f(d.b, ".2f"),
                          "-" if d.change is None else f"{d.change:+.1%}", ci,
                          {"same": "no significant difference"}.get(d.call, d.call))
    con.print(table)
    for key in ("gpu", "model", "precision", "tp", "pp", "vllm_version"):
        if cmp.a_target.get(key) != cmp.b_target.get(key):
            con.print(escape(f"{key}: A {cmp.a_target.get(key)} / B {cmp.b_target.get(key)}"))
    for line in cmp.summary:
        con.print(line, markup=False)
    if cmp.only_in_a or cmp.only_in_b:
        con.print(escape(f"not compared: only in A {cmp.only_in_a}, only in B {cmp.only_in_b}"))


# --- files ----------------------------------------------------------------------------------------

CSV_COLUMNS = (
    "label", "concurrency", "request_rate", "all_at_once", "num_requests", "completed", "failed", "duration_s",
    "input_tokens", "output_tokens", "output_tokens_per_s", "total_tokens_per_s", "requests_per_s", "goodput_rps",
    "ttft_ms_mean", "ttft_ms_p50", "ttft_ms_p90", "ttft_ms_p99", "tpot_ms_mean", "tpot_ms_p50", "tpot_ms_p90",
    "tpot_ms_p99", "itl_ms_mean", "itl_ms_p50", "itl_ms_p90", "itl_ms_p99", "e2e_s_mean", "e2e_s_p50", "e2e_s_p90",
    "e2e_s_p99", "peak_kv_usage", "preemptions", "max_running", "max_waiting", "bottleneck", "failures", "partial",
)


def report_csv(report: BenchReport) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for p in report.points:
        row: dict[str, Any] = {k: getattr(p, k) for k in CSV_COLUMNS if hasattr(p, k) and k not in ("failures",)}
        for name in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_s"):
            s = getattr(p, name)
            for q in ("mean", "p50", "p90", "p99"):
                row[f"{name}_{q}"] = getattr(s, q)
        row.update(peak_kv_usage=p.server.peak_kv_usage, preemptions=p.server.preemptions,
                   max_running=p.server.max_running, max_waiting=p.server.max_waiting,
                   bottleneck=p.verdict.name if p.verdict else "",
                   failures=";".join(f"{k}={v}" for k, v in p.failures.items()))
        writer.writerow(row)
    return buf.getvalue()


def _write(path: Path, text: str, what: str) -> None:
    try:
        path.expanduser().write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {what} {path}: {exc.strerror}", "check the folder exists and is writable") from None


# --- live progress --------------------------------------------------------------------------------


class _LiveProgress:
    """A rich progress bar per point on stderr (plain lines when stderr is not a terminal)."""

    def __init__(self) -> None:
        self.con = console(stderr=True)
        self.progress: Progress | None = None
        self.task: Any = None
        self.label = ""

    def reporter(self) -> Reporter:
        return Reporter(point_start=self.start, progress=self.update, point_end=self.end)

    def start(self, label: str, planned: int | None) -> None:
        self.label = label
        if not self.con.is_terminal:
            info(f"point {label}: running" + (f" {planned} requests" if planned else ""))
            return
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(),
                                 console=self.con, transient=True)
        self.progress.start()
        self.task = self.progress.add_task(f"point {label}", total=planned, failed=0)

    def update(self, done: int, failed: int, planned: int | None) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=done, failed=failed)

    def end(self, point: PointResult) -> None:
        self.stop()
        info(f"point {point.label}: {point.completed} ok, {point.failed} failed, "
             f"{point.output_tokens_per_s:.1f} output tok/s, TTFT p50 {_f(point.ttft_ms.p50)} ms")

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


# --- the command ----------------------------------------------------------------------------------


def _exit_code(report: BenchReport) -> tuple[int, list[dict[str, Any]]]:
    if report.status == "interrupted":
        return int(ExitCode.INTERRUPTED), [{"code": "interrupted", "message": "interrupted: partial results",
                                            "hint": None}]
    if report.status == "server-died":
        return int(ExitCode.LAUNCH), [{"code": "server-died",
                                       "message": f"the server at {report.target.url} went away during the run: partial results",
                                       "hint": "see its log (`vllmkit doctor --log last`)"}]
    failed = sum(p.failed for p in report.points)
    if failed:
        total = sum(p.num_requests for p in report.points)
        return int(ExitCode.DOES_NOT_FIT), [{"code": "requests-failed",
                                             "message": f"{failed} of {total} requests failed",
                                             "hint": "see the failure reasons above; lower the load or raise --timeout"}]
    return 0, []


def register(app: typer.Typer) -> None:
    @app.command("bench")
    @boundary("bench")
    def bench_cmd(
        target: str | None = typer.Argument(None, help="URL (http://HOST:PORT) or run id; default: the newest "
                                            "running `vllmkit serve` server."),
        compare: tuple[Path, Path] | None = typer.Option(None, "--compare", help="Compare two saved results "
                                                         "(A.json B.json) instead of running."),
        api_key: str | None = typer.Option(None, "--api-key", help="Key to send (default: the run's key, VLLM_API_KEY)."),
        api_key_file: Path | None = typer.Option(None, "--api-key-file", help="Read the key from a file."),
        served_model: str | None = typer.Option(None, "--served-model", help="Model name to request (default: the first served)."),
        dataset: Path | None = typer.Option(None, "--dataset", help="ShareGPT-format JSON file (first turn = prompt)."),
        prompts: Path | None = typer.Option(None, "--prompts", help="Prompts file: one per line, or JSONL {\"prompt\": ...}."),
        input_len: int = typer.Option(128, "--input-len", min=1, help="Random workload: prompt tokens (exact)."),
        output_len: int | None = typer.Option(None, "--output-len", min=1, help="Output tokens per request (exact: "
                                              "ignore_eos); default 128, ShareGPT: the reply's length."),
        prefix_len: int = typer.Option(0, "--prefix-len", min=0, help="Random workload: tokens of a prefix shared by all prompts."),
        concurrency: str | None = typer.Option(None, "--concurrency", "-c", help="Closed-loop users, a sweep: 1,8,32."),
        request_rate: str | None = typer.Option(None, "--request-rate", help="Poisson arrivals, req/s, a sweep: 2,4,inf."),
        num_prompts: int | None = typer.Option(None, "--num-prompts", "-n", min=1, help="Requests per point (default 100)."),
        duration: str | None = typer.Option(None, "--duration", help="Time per point instead of --num-prompts (60s, 5m)."),
        warmup: int = typer.Option(4, "--warmup", min=0, help="Requests before the first point, not measured."),
        slo: str | None = typer.Option(None, "--slo", help="Goodput targets, e.g. ttft=2s,tpot=50ms[,e2e=10s]."),
        seed: int = typer.Option(0, "--seed", help="Random seed (prompts, arrivals)."),
        timeout: float = typer.Option(300.0, "--timeout", help="Seconds a request may stay silent."),
        tokenizer: str | None = typer.Option(None, "--tokenizer", help="Tokenizer folder (default: the run's model folder)."),
        gpu: str | None = typer.Option(None, "--gpu", help="GPU profile of the server (to store results for a bare URL)."),
        model: str | None = typer.Option(None, "--model", help="Model id as `plan` names it (to store results)."),
        tp: int | None = typer.Option(None, "--tp", "--tensor-parallel-size", min=1),
        pp: int | None = typer.Option(None, "--pp", "--pipeline-parallel-size", min=1),
        precision: str | None = typer.Option(None, "--precision", help="bf16 | fp16 | fp8 | awq | ... (as `plan` names it)."),
        kv_cache_dtype: str | None = typer.Option(None, "--kv-cache-dtype"),
        no_store: bool = typer.Option(False, "--no-store", help="Do not add the results to the performance store."),
        metrics_interval: float = typer.Option(0.25, "--metrics-interval", min=0.0, help="Seconds between /metrics "
                                               "scrapes during a point; 0: do not scrape."),
        save: Path | None = typer.Option(None, "--save", help="Write the full result (per-request samples) as JSON."),
        csv_file: Path | None = typer.Option(None, "--csv", help="Write one row per point as CSV."),
        json_output: bool = JSON_OPTION,
    ) -> None:
        """Load-test a running vLLM (or any OpenAI-compatible server) at the target concurrency or
        request rate: TTFT, TPOT, ITL, latency, throughput, goodput, KV usage and the bottleneck.
        Results go to the performance store that `plan` reads. Exit 6 if the server dies mid-run
        (partial results printed), 3 if requests failed, 130 on Ctrl-C."""
        if compare is not None:
            cmp = compare_reports(compare[0], compare[1])
            emit("bench", cmp, json_mode=json_output, render=render_comparison)
            return
        if dataset is not None and prompts is not None:
            raise UsageError("--dataset and --prompts cannot be combined", "pick one workload")
        dur = None
        if duration is not None:
            try:
                dur = parse_duration(duration)
            except ValueError:
                raise UsageError(f"--duration {duration!r} is not a duration", "e.g. --duration 60s") from None
            if num_prompts is not None:
                raise UsageError("--duration and --num-prompts cannot be combined", "pick one")
        workload = "sharegpt" if dataset is not None else "prompts" if prompts is not None else "random"
        opts = BenchOptions(
            target=target, api_key=_read_key(api_key, api_key_file), served_model=served_model,
            workload=workload, dataset=dataset or prompts, input_len=input_len,
            output_len=output_len if output_len is not None else (None if workload == "sharegpt" else 128),
            prefix_len=prefix_len, points=parse_points(concurrency, request_rate), num_prompts=num_prompts,
            duration_s=dur, warmup=warmup, slo=_slo(slo), seed=seed, timeout_s=timeout, tokenizer=tokenizer,
            store=not no_store, metrics_interval_s=metrics_interval or None, gpu=gpu, model=model, tp=tp, pp=pp, precision=precision, kv_cache_dtype=kv_cache_dtype,
        )
        live = _LiveProgress()
        try:
            report = run_bench(opts, dict(os.environ), live.reporter())
        finally:
            live.stop()
        if save is not None:
            import json

            _write(save, json.dumps(to_jsonable(report), indent=1) + "\n", "--save")
        if csv_file is not None:
            _write(csv_file, report_csv(report), "--csv")
        code, errors = _exit_code(report)
        emit("bench", report, json_mode=json_output, render=render_report, exit_code=code, errors=errors)
        if code:
            raise typer.Exit(code)
