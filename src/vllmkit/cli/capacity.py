"""`vllmkit capacity MODEL --gpu G --qps Q --input-len I --output-len O`: replicas and GPUs for a peak
load under latency SLOs (plan/capacity.py)."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from vllmkit.cli._common import JSON_OPTION, boundary
from vllmkit.cli._workload import perf_records
from vllmkit.errors import UsageError
from vllmkit.output import emit
from vllmkit.plan.capacity import CapacityRequest, CapacityResult, parse_duration_ms, parse_redundancy


def render_capacity(console: Console, res: CapacityResult) -> None:
    r = res.per_replica
    console.print(f"[bold]{res.model}[/bold] on {res.gpu_display_name}: {res.qps:g} req/s peak, "
                  f"{res.input_len:g} in / {res.output_len:g} out tokens, vLLM {res.vllm_version}")
    slo = ", ".join(f"{k.replace('_ms', '').replace('_', ' ')} <= {v:g} ms" for k, v in res.slo.items() if v)
    console.print(f"SLOs: {slo or 'none'}; headroom {res.headroom:.0%}; redundancy N+{res.redundancy}", markup=False)
    console.print(f"\n[bold]{res.replicas} replicas x {res.gpus_per_replica} GPU = {res.gpus_total} GPUs[/bold] "
                  f"({r.precision}, TP={r.tensor_parallel_size} PP={r.pipeline_parallel_size}, "
                  f"--max-num-seqs {r.max_num_seqs})")
    console.print(f"one replica: goodput {r.goodput_rps:.2f} req/s ({r.output_tokens_per_s:,.0f} output tok/s) "
                  f"with p99 TTFT {r.ttft_ms_p99:,.0f} ms and p99 TPOT {r.tpot_ms_p99:.1f} ms", markup=False)
    p = res.at_peak
    console.print(f"at peak ({p.requests_per_s_per_replica:.2f} req/s per replica, spares down): TTFT p50 "
                  f"{p.ttft_ms_p50:,.0f} / p99 {p.ttft_ms_p99:,.0f} ms; TPOT p50 {p.tpot_ms_p50:.1f} / p99 "
                  f"{p.tpot_ms_p99:.1f} ms; KV in use {p.kv_usage:.0%}; bound: {p.bound}", markup=False)
    if res.cost:
        console.print(f"cost: ${res.cost.per_hour:,.2f}/hour (${res.cost.gpu_price_per_hour:g} per GPU-hour), "
                      f"${res.cost.per_million_output_tokens:,.3f} per 1M output tokens at peak", markup=False)
    table = Table(title="Configurations searched")
    for col in ("", "precision", "model", "TP", "PP", "max-num-seqs", "goodput req/s", "replicas", "GPUs", "note"):
        table.add_column(col, justify="right" if col in ("TP", "PP", "max-num-seqs", "goodput req/s", "replicas",
                                                          "GPUs") else "left")
    for c in res.candidates:
        table.add_row("*" if c.chosen else "", c.precision, c.model_id, str(c.tensor_parallel_size),
                      str(c.pipeline_parallel_size), str(c.max_num_seqs), f"{c.goodput_rps:.2f}",
                      str(c.replicas or "-"), str(c.gpus_total or "-"), c.note)
    console.print(table)
    console.print(f"source: {res.source}", markup=False)
    for line in res.assumptions:
        console.print(f"assumes: {line}", markup=False)
    console.print("\nper-replica vllm serve command:", markup=False)
    console.print(" ".join(r.serve_command), markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    @app.command("capacity")
    @boundary("capacity")
    def capacity_cmd(
        model: str = typer.Argument(..., help="Hub id (Qwen/Qwen3-8B), hf://…, ms://…, or a local folder."),
        gpu: str = typer.Option(..., "--gpu", help="GPU profile or product name (see `vllmkit gpus`)."),
        qps: float = typer.Option(..., "--qps", help="Peak requests per second to serve."),
        input_len: int = typer.Option(..., "--input-len", help="Prompt tokens per request."),
        output_len: int = typer.Option(..., "--output-len", help="Generated tokens per request."),
        ttft_p99: str = typer.Option("2s", "--ttft-p99", help="p99 time-to-first-token SLO (2s, 500ms)."),
        tpot_p99: str = typer.Option("100ms", "--tpot-p99", help="p99 time-per-output-token SLO (50ms)."),
        headroom: float = typer.Option(0.3, "--headroom", help="Fraction of goodput kept free (0.3 = run at 70%)."),
        redundancy: str = typer.Option("N+1", "--redundancy", help="Spare replicas: N+1, N+2 or 0."),
        gpu_price: float | None = typer.Option(None, "--gpu-price", help="Price of one GPU-hour, for $/hour."),
        max_gpus: int | None = typer.Option(None, "--max-gpus", help="Most GPUs available in total."),
        source: str = typer.Option("auto", "--source", help="auto | hf | modelscope | local | catalog"),
        revision: str | None = typer.Option(None, "--revision"),
        vllm_version: str | None = typer.Option(None, "--vllm-version"),
        kv_cache_dtype: str = typer.Option("auto", "--kv-cache-dtype"),
        export: str | None = typer.Option(None, "--export", help="k8s: write the serve manifests with an HPA."),
        output_dir: Path = typer.Option(Path("."), "--output-dir", "-o", help="Where --export writes."),
        json_output: bool = JSON_OPTION,
    ) -> None:
        """How many replicas and GPUs serve QPS within the TTFT / TPOT SLOs: searches precision x TP/PP x
        max-num-seqs with the performance model and sizes the fleet with headroom and spares."""
        from vllmkit.plan.capacity import plan_capacity

        if qps <= 0:
            raise UsageError("--qps must be positive", "e.g. --qps 20")
        if input_len <= 0 or output_len <= 0:
            raise UsageError("--input-len and --output-len must be positive integers", "e.g. --input-len 1024")
        if not 0 <= headroom < 1:
            raise UsageError("--headroom must be in [0, 1)", "e.g. --headroom 0.3")
        if gpu_price is not None and gpu_price <= 0:
            raise UsageError("--gpu-price must be positive", "e.g. --gpu-price 2.50")
        if max_gpus is not None and max_gpus <= 0:
            raise UsageError("--max-gpus must be a positive integer", "e.g. --max-gpus 16")
        if export not in (None, "k8s"):
            raise UsageError(f"unknown --export {export!r}", "use --export k8s")
        env = dict(os.environ)
        req = CapacityRequest(
            model=model, gpu=gpu, qps=qps, input_len=input_len, output_len=output_len,
            ttft_p99_ms=parse_duration_ms(ttft_p99, "--ttft-p99"), tpot_p99_ms=parse_duration_ms(tpot_p99, "--tpot-p99"),
            headroom=headroom, redundancy=parse_redundancy(redundancy), gpu_price_per_hour=gpu_price,
            max_gpus=max_gpus, source=source, revision=revision, vllm_version=vllm_version,
            kv_cache_dtype=kv_cache_dtype,
        )
        result = plan_capacity(req, env, records=perf_records(env))
        if export == "k8s":
            from vllmkit.launch.hpa import write_capacity_manifests

            for path in write_capacity_manifests(result, output_dir):
                Console(stderr=True).print(f"wrote {path}", markup=False)
        emit("capacity", result, json_mode=json_output, render=render_capacity)
