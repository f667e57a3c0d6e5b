"""`vllmkit check-log LOG`: the plan for the run a startup log shows, side by side with what vLLM measured."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from vllmkit.cli._common import JSON_OPTION, boundary
from vllmkit.errors import UsageError
from vllmkit.output import emit, gib, thousands

if TYPE_CHECKING:
    from vllmkit.calibration.checklog import CheckLogResult

LOG_ARGUMENT = typer.Argument(..., help="A vLLM startup log (e.g. a run's vllm.log).", show_default=False)

ROWS = (  # key, label, kind
    ("weights", "weights", "bytes"),
    ("non_torch", "non-torch", "bytes"),
    ("activation", "peak activation", "bytes"),
    ("cudagraph", "CUDA graphs", "bytes"),
    ("overhead", "non-KV besides weights", "bytes"),
    ("cpu_non_kv", "non-KV RSS (CPU worker)", "bytes"),
    ("available_kv", "available KV", "bytes"),
    ("kv_tokens", "KV tokens", "tokens"),
    ("max_concurrency", "concurrency", "x"),
)


def _fmt(value: float | int | None, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "bytes":
        return gib(value)
    if kind == "tokens":
        return thousands(int(value))
    return f"{value:.2f}x"


def render_check(console: Console, result: CheckLogResult) -> None:
    where = result.gpu_display_name or result.gpu or result.device
    console.print(f"{result.log}: {result.model or 'unknown model'}"
                  f"{f' ({result.family})' if result.family else ''} on {where}, vLLM {result.vllm_version or '?'}",
                  markup=False)
    table = Table(title="predicted vs measured")
    for col in ("quantity", "predicted", "measured", "error"):
        table.add_column(col, justify="left" if col == "quantity" else "right")
    for key, label, kind in ROWS:
        pred, meas = getattr(result.predicted, key), getattr(result.measured, key)
        if pred is None and meas is None:
            continue
        err = result.errors_pct.get(key)
        table.add_row(label, _fmt(pred, kind), _fmt(meas, kind), "-" if err is None else f"{err:+.2f}%")
    console.print(table)
    if result.basis:
        console.print(f"measured non-KV split: {result.basis}", markup=False)
    for name, value in result.assumptions.items():
        console.print(f"assumed {name}: {value}", markup=False)
    if result.defaults:
        console.print("vLLM defaults (not in the log's non-default args): " + ", ".join(result.defaults), markup=False)
    if result.calibration:
        console.print(f"prediction uses {result.calibration}", markup=False)
    for note in result.notes:
        console.print(f"note: {note}", markup=False)
    rec = result.record
    if rec is not None and rec.recorded:
        state = "already stored" if rec.duplicate else "recorded"
        terms = ", ".join(f"{k} {gib(v)}" for k, v in rec.terms.items())
        console.print(f"calibration {state}: {rec.record_id} ({terms}) in {rec.store}", markup=False)


def _bytes(text: str | None, flag: str) -> int | None:
    from vllmkit.cli.plan import parse_bytes

    return parse_bytes(text, flag)


def register(app: typer.Typer) -> None:
    @app.command("check-log")
    @boundary("check-log")
    def check_log_cmd(
        log: Path = LOG_ARGUMENT,
        model: str | None = typer.Option(None, "--model", help="Model (default: from the log's engine config line)."),
        gpu: str | None = typer.Option(None, "--gpu", help="GPU profile (default: from the log, else assumed)."),
        gpu_memory: str | None = typer.Option(None, "--gpu-memory", help="Memory of an unlisted GPU, e.g. 48GiB."),
        device: str | None = typer.Option(None, "--device", help="cuda | rocm | cpu (default: from the log)."),
        source: str = typer.Option("auto", "--source", help="auto | hf | modelscope | local | catalog"),
        revision: str | None = typer.Option(None, "--revision"),
        vllm_version: str | None = typer.Option(None, "--vllm-version", help="Default: the version the log prints."),
        tensor_parallel_size: int | None = typer.Option(None, "--tensor-parallel-size", "-tp"),
        pipeline_parallel_size: int | None = typer.Option(None, "--pipeline-parallel-size", "-pp"),
        max_model_len: str | None = typer.Option(None, "--max-model-len"),
        gpu_memory_utilization: float | None = typer.Option(None, "--gpu-memory-utilization"),
        kv_cache_memory_bytes: str | None = typer.Option(None, "--kv-cache-memory-bytes"),
        kv_cache_dtype: str | None = typer.Option(None, "--kv-cache-dtype"),
        dtype: str | None = typer.Option(None, "--dtype"),
        quantization: str | None = typer.Option(None, "--quantization"),
        max_num_seqs: int | None = typer.Option(None, "--max-num-seqs"),
        max_num_batched_tokens: int | None = typer.Option(None, "--max-num-batched-tokens"),
        block_size: int | None = typer.Option(None, "--block-size"),
        enforce_eager: bool | None = typer.Option(None, "--enforce-eager/--no-enforce-eager", show_default=False),
        record: bool = typer.Option(False, "--record", help="Store the measured non-KV memory as a calibration."),
        use_calibration: bool = typer.Option(False, "--use-calibration",
                                             help="Predict with stored calibrations (default: the uncalibrated model)."),
        json_output: bool = JSON_OPTION,
    ) -> None:
        """Compare a real vLLM startup log with the plan for the same run: weights, non-torch, activation,
        CUDA graphs, available KV, KV tokens, concurrency (predicted, measured, error). Inputs come
        from the log's own lines; flags override; what the log lacks is listed as assumed.
        --record stores the measured non-KV memory as a calibration for `vllmkit plan`.
        Exit codes: 0 ok, 2 bad file or flag, 3 no startup facts in the log (or --record had nothing to record)."""
        from vllmkit.calibration.checklog import CheckLogInputs, check_log
        from vllmkit.cli.plan import parse_max_model_len

        if device not in (None, "cuda", "rocm", "cpu"):
            raise UsageError(f"unknown --device {device!r}", "use cuda, rocm or cpu")
        if gpu_memory_utilization is not None and not 0 < gpu_memory_utilization <= 1:
            raise UsageError("--gpu-memory-utilization must be in (0, 1]", "e.g. 0.9")
        for flag, value in (("--tensor-parallel-size", tensor_parallel_size),
                            ("--pipeline-parallel-size", pipeline_parallel_size), ("--max-num-seqs", max_num_seqs),
                            ("--max-num-batched-tokens", max_num_batched_tokens), ("--block-size", block_size)):
            if value is not None and value <= 0:
                raise UsageError(f"{flag} must be a positive integer", f"e.g. {flag} 2")
        inputs = CheckLogInputs(
            model=model, source=source, revision=revision, gpu=gpu, gpu_memory=_bytes(gpu_memory, "--gpu-memory"),
            device=device, vllm_version=vllm_version, tensor_parallel_size=tensor_parallel_size,  # type: ignore[arg-type]
            pipeline_parallel_size=pipeline_parallel_size, max_model_len=parse_max_model_len(max_model_len),  # type: ignore[arg-type]
            gpu_memory_utilization=gpu_memory_utilization,
            kv_cache_memory_bytes=_bytes(kv_cache_memory_bytes, "--kv-cache-memory-bytes"),
            kv_cache_dtype=kv_cache_dtype, dtype=dtype, quantization=quantization, max_num_seqs=max_num_seqs,
            max_num_batched_tokens=max_num_batched_tokens, block_size=block_size, enforce_eager=enforce_eager,
        )
        result = check_log(log, inputs, dict(os.environ), record=record, use_calibration=use_calibration)
        errors = []
        code = 0
        if record and result.record is not None and not result.record.recorded:
            code = 3
            errors.append({"code": "nothing-to-record", "message": f"no calibration recorded from {log}",
                           "hint": result.record.reason})
        emit("check-log", result, json_mode=json_output, render=render_check, exit_code=code, errors=errors)
        if code:
            raise typer.Exit(code)
