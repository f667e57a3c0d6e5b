"""`vllmkit capacity MODEL --gpu G --qps Q --input-len I --output-len O`: replicas and GPUs for a peak
load under latency SLOs (plan/capacity.py)."""

from __future__ import annotations

import functools
import math
import os

import typer

from vllmkit.cli._workload import MAX_REQUEST_RATE, SHARED_PREFIX_OPTION, WORKLOAD_OPTION
from vllmkit.cli.options import JSON_OPTION
from vllmkit.errors import UsageError
from vllmkit.output import CommandResult, waiting


def register(app: typer.Typer) -> None:
    @app.command("capacity", short_help="Replicas and GPUs for a peak QPS under TTFT / TPOT SLOs.")
    def capacity_cmd(
        model: str = typer.Argument(..., help="Hub id (Qwen/Qwen3-8B), hf://…, ms://…, or a local folder."),
        gpu: str = typer.Option(..., "--gpu", help="GPU profile or product name (see `vllmkit gpus`)."),
        qps: float = typer.Option(..., "--qps", help="Peak requests per second to serve."),
        input_len: int | None = typer.Option(None, "--input-len", help="Prompt tokens per request (or --workload)."),
        output_len: int | None = typer.Option(None, "--output-len", help="Generated tokens per request (or --workload)."),
        workload: str | None = WORKLOAD_OPTION,
        shared_prefix_len: int | None = SHARED_PREFIX_OPTION,
        ttft_p99: str = typer.Option("2s", "--ttft-p99", help="p99 time-to-first-token SLO (2s, 500ms)."),
        tpot_p99: str = typer.Option("100ms", "--tpot-p99", help="p99 time-per-output-token SLO (50ms)."),
        headroom: float = typer.Option(0.3, "--headroom", help="Share of a replica's goodput kept free (0.3: run at 70%)."),
        redundancy: str = typer.Option("N+1", "--redundancy", help="Spare replicas: N+1, N+2 or 0."),
        gpu_price: float | None = typer.Option(None, "--gpu-price", help="Price of one GPU-hour, for $/hour and $/1M tokens."),
        max_gpus: int | None = typer.Option(None, "--max-gpus", help="Most GPUs available in total."),
        source: str = typer.Option("auto", "--source", help="Where the model comes from: auto | hf | modelscope | local | catalog."),
        revision: str | None = typer.Option(None, "--revision", help="Branch, tag or commit on the hub."),
        vllm_version: str | None = typer.Option(None, "--vllm-version", help="vLLM version to plan for (default: installed, else newest known)."),
        kv_cache_dtype: str = typer.Option("auto", "--kv-cache-dtype", help="auto | fp8 | fp8_e4m3 | fp8_e5m2 | bfloat16."),
        quantization: str | None = typer.Option(None, "--quantization", help="fp8: size replicas with vLLM's online FP8 "
                                                "of a 16-bit checkpoint (--quantization fp8 on the serve line)."),
        export: str | None = typer.Option(None, "--export", help="k8s: print the serve manifests with that replica count and an HPA."),
        json_output: bool = JSON_OPTION,
    ) -> CommandResult:
        """How many replicas and GPUs serve QPS within the TTFT / TPOT SLOs: searches precision x TP/PP x
        --max-num-seqs with the performance model, then sizes the fleet with headroom and spares."""
        from vllmkit.cli._workload import check_shared_prefix, perf_records, workload_lengths
        from vllmkit.cli.options import check_kv_cache_dtype, make_plan
        from vllmkit.plan.capacity import (
            CapacityRequest,
            parse_duration_ms,
            parse_redundancy,
            plan_capacity,
            replica_request,
        )

        if not (math.isfinite(qps) and qps > 0):
            raise UsageError("--qps must be a positive number of requests per second", "e.g. --qps 20")
        if qps > MAX_REQUEST_RATE:
            raise UsageError(f"--qps {qps:g} is more than one deployment plan covers (at most {MAX_REQUEST_RATE:,.0f} "
                             "req/s)",
                             "split the traffic (per region, per model) and size each part")
        input_len, output_len, preset = workload_lengths(input_len, output_len, workload,
                                                    example="--input-len 1024 --output-len 256 (or --workload chat)")
        if not 0 <= headroom < 1:
            raise UsageError("--headroom must be in [0, 1)", "e.g. --headroom 0.3")
        check_kv_cache_dtype(kv_cache_dtype)
        if gpu_price is not None and not (math.isfinite(gpu_price) and gpu_price > 0):
            raise UsageError("--gpu-price must be positive", "e.g. --gpu-price 2.50")
        if max_gpus is not None and max_gpus <= 0:
            raise UsageError("--max-gpus must be a positive integer", "e.g. --max-gpus 16")
        if quantization not in (None, "fp8"):
            raise UsageError(f"--quantization {quantization!r} is not one capacity sizes",
                             "use --quantization fp8 (online FP8), or name a quantized checkpoint as MODEL")
        if export not in (None, "k8s"):
            raise UsageError(f"unknown --export {export!r}", "use --export k8s")
        env = dict(os.environ)
        req = CapacityRequest(
            model=model, gpu=gpu, qps=qps, input_len=input_len, output_len=output_len, workload=preset,
            shared_prefix_len=check_shared_prefix(shared_prefix_len, input_len),
            ttft_p99_ms=parse_duration_ms(ttft_p99, "--ttft-p99"), tpot_p99_ms=parse_duration_ms(tpot_p99, "--tpot-p99"),
            headroom=headroom, redundancy=parse_redundancy(redundancy), gpu_price_per_hour=gpu_price,
            max_gpus=max_gpus, source=source, revision=revision, vllm_version=vllm_version,
            kv_cache_dtype=kv_cache_dtype, quantization=quantization,
        )
        records = perf_records(env)
        calibration = None
        match = None
        if env.get("VLLMKIT_NO_CALIBRATION") != "1":
            from vllmkit.calibration.perfstore import match_measured
            from vllmkit.calibration.store import lookup_terms

            calibration = functools.partial(lookup_terms, env=env)
            match = match_measured
        with waiting(f"sizing {model} for {qps:g} req/s ..."):
            result = plan_capacity(req, env, records=records, match=match, calibration=calibration)
            replica_req = replica_request(req, result)
            replica_plan = make_plan(replica_req, env)
        result.per_replica.serve_command = list(replica_plan.serve_command)
        if export == "k8s":
            from vllmkit.launch.hpa import capacity_manifests

            text = capacity_manifests(replica_plan, replica_req, result)
            result.export = {"format": "k8s", "content": text}
            return CommandResult("capacity", result, json_mode=json_output, text=text)
        return CommandResult("capacity", result, view="vllmkit.views.capacity:render", json_mode=json_output)
