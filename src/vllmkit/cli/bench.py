"""`vllmkit bench [URL | RUN_ID]`: load-test a live server; `--compare A.json B.json`."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from vllmkit.cli.options import JSON_OPTION
from vllmkit.errors import ExitCode, UsageError
from vllmkit.output import CommandResult, to_jsonable

if TYPE_CHECKING:  # the bench room (httpx, the doctor's metrics) loads only when bench runs
    from vllmkit.bench.models import BenchReport
    from vllmkit.bench.service import LoadPoint
    from vllmkit.bench.stats import Slo

# --- parsing --------------------------------------------------------------------------------------


def parse_points(concurrency: str | None, request_rate: str | None) -> list[LoadPoint]:
    from vllmkit.bench.service import LoadPoint

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
    from vllmkit.bench.stats import Slo, parse_slo

    if not text:
        return Slo()
    try:
        return parse_slo(text)
    except ValueError as exc:
        raise UsageError(f"--slo: {exc}", "e.g. --slo ttft=2s,tpot=50ms") from None


def _write(path: Path, text: str, what: str) -> None:
    try:
        path.expanduser().write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {what} {path}: {exc.strerror}", "check the folder exists and is writable") from None


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
    @app.command("bench", short_help="Load-test a running server; compare two results.")
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
        tp: int | None = typer.Option(None, "--tp", "--tensor-parallel-size", min=1,
                                      help="Tensor parallel size of the server (to store results for a bare URL)."),
        pp: int | None = typer.Option(None, "--pp", "--pipeline-parallel-size", min=1,
                                      help="Pipeline parallel size of the server (to store results for a bare URL)."),
        dp: int | None = typer.Option(None, "--dp", "--data-parallel-size", min=1,
                                      help="Data-parallel engines behind the URL (to store results for a bare URL)."),
        precision: str | None = typer.Option(None, "--precision", help="bf16 | fp16 | fp8 | awq | ... (as `plan` names it)."),
        kv_cache_dtype: str | None = typer.Option(None, "--kv-cache-dtype", help="KV-cache dtype of the server "
                                                  "(to store results for a bare URL)."),
        no_store: bool = typer.Option(False, "--no-store", help="Do not add the results to the performance store."),
        metrics_interval: float = typer.Option(0.5, "--metrics-interval", min=0.0, help="Seconds between /metrics "
                                               "scrapes during a point; 0: do not scrape."),
        save: Path | None = typer.Option(None, "--save", help="Write the full result (per-request samples) as JSON."),
        csv_file: Path | None = typer.Option(None, "--csv", help="Write one row per point as CSV."),
        json_output: bool = JSON_OPTION,
    ) -> CommandResult:
        """Load-test a running vLLM (or any OpenAI-compatible server) at the target concurrency or
        request rate: TTFT, TPOT, ITL, latency, throughput, goodput, KV usage and the bottleneck.
        Results go to the performance store that `plan` reads. Exit 6 if the server dies mid-run
        (partial results printed), 3 if requests failed, 130 on Ctrl-C."""
        from vllmkit.bench.compare import compare_reports
        from vllmkit.bench.service import BenchOptions, run_bench
        from vllmkit.files import FileProblem, check_file
        from vllmkit.launch.smoke import read_api_key
        from vllmkit.views import bench as view

        if compare is not None:
            cmp = compare_reports(compare[0], compare[1])
            return CommandResult("bench", cmp, view=view.render_comparison, json_mode=json_output)
        if dataset is not None and prompts is not None:
            raise UsageError("--dataset and --prompts cannot be combined", "pick one workload")
        for flag, path in (("--prompts ", prompts), ("--dataset ", dataset)):
            # said before the server is contacted (it was "cannot reach" first when both were wrong)
            try:
                if path is not None:
                    check_file(path.expanduser())
            except FileProblem as exc:
                hint = ("one prompt per line, or JSONL {\"prompt\": ...}" if flag == "--prompts "
                        else "give a ShareGPT-format JSON file")
                raise UsageError(exc.describe(flag), hint) from None
        dur = None
        if duration is not None:
            try:
                from vllmkit.bench.stats import parse_duration

                dur = parse_duration(duration)
            except ValueError:
                raise UsageError(f"--duration {duration!r} is not a duration", "e.g. --duration 60s") from None
            if num_prompts is not None:
                raise UsageError("--duration and --num-prompts cannot be combined", "pick one")
        from vllmkit.cli.options import check_kv_cache_dtype, check_positive

        check_positive(timeout, "--timeout", "e.g. --timeout 300")
        if tokenizer is not None:
            folder = Path(tokenizer).expanduser()
            if not ((folder / "tokenizer.json").is_file() or (folder / "tokenizer_config.json").is_file()):
                raise UsageError(f"--tokenizer {tokenizer!r} is not a folder with tokenizer.json or tokenizer_config.json",
                                 "pass the model folder (or leave --tokenizer out: the server's /tokenize is used)")
        check_kv_cache_dtype(kv_cache_dtype)
        workload = "sharegpt" if dataset is not None else "prompts" if prompts is not None else "random"
        opts = BenchOptions(
            target=target, api_key=read_api_key(api_key, api_key_file), served_model=served_model,
            workload=workload, dataset=dataset or prompts, input_len=input_len,
            output_len=output_len if output_len is not None else (None if workload == "sharegpt" else 128),
            prefix_len=prefix_len, points=parse_points(concurrency, request_rate), num_prompts=num_prompts,
            duration_s=dur, warmup=warmup, slo=_slo(slo), seed=seed, timeout_s=timeout, tokenizer=tokenizer,
            store=not no_store, metrics_interval_s=metrics_interval or None, gpu=gpu, model=model, tp=tp, pp=pp, dp=dp, precision=precision, kv_cache_dtype=kv_cache_dtype,
        )
        live = view.LiveProgress()
        try:
            report = run_bench(opts, dict(os.environ), live.reporter())
        finally:
            live.stop()
        if save is not None:
            _write(save, json.dumps(to_jsonable(report), indent=1) + "\n", "--save")
        if csv_file is not None:
            _write(csv_file, view.report_csv(report), "--csv")
        code, errors = _exit_code(report)
        return CommandResult("bench", report, view=view.render, json_mode=json_output, exit_code=code, errors=errors)
