"""`vllmkit bench` for people: the results table, the latency/throughput chart, the comparison,
the CSV rows, and the live progress on stderr."""

from __future__ import annotations

import csv
import io
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from vllmkit.bench.compare import Comparison
from vllmkit.bench.models import BenchReport, PointResult
from vllmkit.bench.service import Reporter
from vllmkit.output import console, info, safe_text

# --- human output -----------------------------------------------------------------------------------


def _f(value: float | None, fmt: str = ".1f") -> str:
    return "-" if value is None else format(value, fmt)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def render(con: Console, report: BenchReport) -> None:
    t = report.target
    head = f"bench {t.url}" + (f" ({safe_text(t.served_model)})" if t.served_model else "")
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
                         f"vLLM {safe_text(t.vllm_version or '?')}" + (f", run {t.run_id}" if t.run_id else "")))
    for p in report.points:
        if p.failures:
            reasons = ", ".join(f"{k} x{v}" for k, v in p.failures.items())
            con.print(escape(f"{p.label}: {p.failed} failed ({reasons})"))
            first = next((s for s in p.samples if not s.ok and s.detail), None)
            if first is not None:
                con.print(f"  first: {first.error}: {safe_text(first.detail)}", markup=False)
        if p.length_mismatch:
            con.print(escape(f"{p.label}: {p.length_mismatch} answers had another length than requested "
                             "(the server ignored ignore_eos, or hit max_model_len)"))
        if p.burst_requests:
            con.print(escape(f"{p.label}: {p.burst_requests} of {p.completed} answers arrived in one burst after a "
                             "wait: their TTFT and ITL time the server's API process (or this client) falling "
                             "behind, not the engine. Give the server CPU cores to spare (its API server, "
                             "engine core and GPU workers each keep one busy), or run the client on another host"))
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


# --- live progress --------------------------------------------------------------------------------


class LiveProgress:
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
