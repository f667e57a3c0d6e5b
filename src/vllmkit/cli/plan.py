"""`vllmkit plan MODEL --gpu GPU`: will it fit, and how."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vllmkit.cli._common import JSON_OPTION, boundary
from vllmkit.errors import UsageError
from vllmkit.output import emit, gib, thousands
from vllmkit.plan.models import PlanRequest, PlanResult

GPU_OPTION = typer.Option(None, "--gpu", help="GPU profile or product name (see `vllmkit gpus`), or 'cpu'.")


def parse_max_model_len(text: str | None) -> int | str | None:
    """vLLM accepts 4096, 4k / 4K (1000 / 1024), 'auto' or -1."""
    if text is None:
        return None
    t = text.strip()
    if t.lower() in ("auto", "-1"):
        return "auto"
    mult = 1
    if t[-1:] in ("k", "K", "m", "M"):
        mult = {"k": 1000, "K": 1024, "m": 10**6, "M": 1 << 20}[t[-1]]
        t = t[:-1]
    try:
        value = int(float(t) * mult)
    except (ValueError, OverflowError):  # OverflowError: "1e400" is float infinity
        raise UsageError(f"cannot read --max-model-len {text!r}", "use a number (32768, 32k, 32K) or auto") from None
    if value <= 0:
        raise UsageError("--max-model-len must be positive", "use a number or auto")
    return value


def parse_bytes(text: str | None, flag: str) -> int | None:
    if text is None:
        return None
    from vllmkit.hardware.profiles import parse_memory

    try:
        return parse_memory(text)
    except UsageError as exc:
        raise UsageError(f"{flag}: {exc.message}", exc.hint) from None


def plan_request_from_flags(
    model: str,
    *,
    gpu: str | None,
    gpu_memory: str | None,
    gpu_count: int | None,
    device: str | None,
    source: str,
    revision: str | None,
    refresh: bool,
    vllm_version: str | None,
    tensor_parallel_size: int | None,
    pipeline_parallel_size: int | None,
    max_model_len: str | None,
    gpu_memory_utilization: float | None,
    kv_cache_memory_bytes: str | None,
    kv_cache_dtype: str,
    dtype: str,
    quantization: str | None,
    max_num_seqs: int | None,
    max_num_batched_tokens: int | None,
    block_size: int | None,
    enforce_eager: bool,
    profiles_dir: str | None = None,
) -> PlanRequest:
    if device not in (None, "cuda", "rocm", "cpu"):
        raise UsageError(f"unknown --device {device!r}", "use cuda, rocm or cpu")
    if gpu_memory_utilization is not None and not 0 < gpu_memory_utilization <= 1:
        raise UsageError("--gpu-memory-utilization must be in (0, 1]", "e.g. 0.9")
    for flag, value in (("--tensor-parallel-size", tensor_parallel_size), ("--pipeline-parallel-size", pipeline_parallel_size),
                        ("--gpu-count", gpu_count), ("--max-num-seqs", max_num_seqs),
                        ("--max-num-batched-tokens", max_num_batched_tokens), ("--block-size", block_size)):
        if value is not None and value <= 0:
            raise UsageError(f"{flag} must be a positive integer", f"e.g. {flag} 2")
    return PlanRequest(
        model=model,
        source=source,
        revision=revision,
        refresh=refresh,
        gpu=gpu,
        gpu_memory=parse_bytes(gpu_memory, "--gpu-memory"),
        gpu_count=gpu_count,
        device=device,  # type: ignore[arg-type]
        vllm_version=vllm_version,
        tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size,
        max_model_len=parse_max_model_len(max_model_len),  # type: ignore[arg-type]
        gpu_memory_utilization=gpu_memory_utilization,
        kv_cache_memory_bytes=parse_bytes(kv_cache_memory_bytes, "--kv-cache-memory-bytes"),
        kv_cache_dtype=kv_cache_dtype,
        dtype=dtype,
        quantization=quantization,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        block_size=block_size,
        enforce_eager=enforce_eager,
        profiles_dir=profiles_dir,
    )


def save_plan(path: Path, req: PlanRequest, plan: PlanResult) -> None:
    """Write {request, plan} as YAML atomically (serve reads it back)."""
    doc: dict[str, Any] = {
        "vllmkit_plan_version": 1,
        "request": req.model_dump(mode="json", exclude={"api_key"}),
        "plan": plan.model_dump(mode="json"),
    }
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot write {path}: {exc.strerror}", "choose a writable path for --save") from None


def render_plan(console: Console, plan: PlanResult) -> None:
    m, g, mem, kv = plan.model, plan.gpu, plan.memory, plan.kv_cache
    verdict = "FITS" if plan.fits else "DOES NOT FIT"
    console.print(f"[bold]{escape(m.id)}[/bold] ({escape(m.architecture)}, {escape(m.dtype)}"
                  f"{', ' + escape(m.quantization) if m.quantization else ''}) from {m.source}")
    console.print(f"on {g.count} x {g.display_name} ({gib(g.memory_bytes)} each), vLLM {plan.vllm_version} "
                  f"({plan.vllm_version_source}) -> [bold]{verdict}[/bold]")
    console.print(f"TP={plan.parallel.tensor_parallel_size} PP={plan.parallel.pipeline_parallel_size}"
                  f"{f', {plan.parallel.nodes} nodes' if plan.parallel.nodes > 1 else ''}; "
                  f"max_model_len {thousands(plan.settings.max_model_len)} (native {thousands(m.native_max_model_len)})")

    table = Table(title="Memory per GPU (tightest rank)", show_lines=False)
    table.add_column("term")
    table.add_column("size", justify="right")
    table.add_column("source")
    table.add_column("note", overflow="fold")
    rows = [
        ("total (as torch reports)", mem.total_bytes, "measured", ""),
        (f"requested (x {plan.settings.gpu_memory_utilization})", mem.requested_bytes, "derived", ""),
        ("weights", mem.weights_bytes, mem.sources.get("weights", ""), mem.notes.get("weights", "")),
        ("non-torch", mem.non_torch_bytes, mem.sources.get("non_torch", ""), mem.notes.get("non_torch", "")),
        ("peak activation", mem.activation_bytes, mem.sources.get("activation", ""), mem.notes.get("activation", "")),
        ("CUDA graphs", mem.cudagraph_bytes, mem.sources.get("cudagraph", ""), mem.notes.get("cudagraph", "")),
        ("KV cache", mem.kv_cache_bytes, mem.sources.get("kv_cache", ""), mem.notes.get("kv_cache", "")),
    ]
    for name, size, src, note in rows:
        table.add_row(name, gib(size), str(src), escape(note))
    console.print(table)

    console.print(
        f"KV cache: {thousands(kv.tokens)} tokens, maximum concurrency for {thousands(kv.max_model_len)} tokens per "
        f"request: {kv.max_concurrency:.2f}x  ({thousands(kv.num_blocks)} blocks of {kv.block_size} tokens, "
        f"{thousands(kv.bytes_per_token)} B/token/GPU as full attention)"
    )
    if len(kv.groups) > 1:
        kinds: dict[str, int] = {}
        for grp in kv.groups:
            kinds[grp.kind] = kinds.get(grp.kind, 0) + 1
        console.print("KV groups: " + ", ".join(f"{n} x {k}" for k, n in kinds.items()))
    if not plan.fits and plan.estimated_max_model_len is not None:
        console.print(f"vLLM will refuse this context; estimated maximum model length is "
                      f"{thousands(plan.estimated_max_model_len)}")

    if plan.alternatives:
        alt = Table(title="Alternatives considered")
        for col in ("", "precision", "model", "TP", "PP", "context", "fits", "KV tokens", "concurrency", "weights/GPU", "note"):
            alt.add_column(col, justify="right" if col in ("TP", "PP", "context", "KV tokens", "concurrency", "weights/GPU") else "left")
        for a in plan.alternatives[:24]:
            alt.add_row("*" if a.chosen else "", escape(a.precision), escape(a.model_id), str(a.tensor_parallel_size),
                        str(a.pipeline_parallel_size), thousands(a.max_model_len), "yes" if a.fits else "no",
                        thousands(a.kv_tokens), f"{a.max_concurrency:.2f}", gib(a.weights_bytes), escape(a.note))
        console.print(alt)
    for reason in plan.reasons:
        console.print(f"- {reason}", markup=False)
    for warning in plan.warnings:
        console.print(f"warning: {warning}", markup=False)
    from vllmkit.launch.command import format_shell

    console.print("\nvllm serve command:", markup=False)
    console.print(format_shell(plan.serve_command, plan.serve_env, multiline=False), markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    @app.command("plan")
    @boundary("plan")
    def plan_cmd(
        model: str = typer.Argument(..., help="Hub id (Qwen/Qwen3-8B), hf://…, ms://…, or a local folder."),
        gpu: str | None = GPU_OPTION,
        gpu_memory: str | None = typer.Option(None, "--gpu-memory", help="Memory of an unlisted GPU, e.g. 48GiB."),
        gpu_count: int | None = typer.Option(None, "--gpu-count", help="GPUs available (default: decide)."),
        device: str | None = typer.Option(None, "--device", help="cuda | rocm | cpu (default: from the GPU)."),
        source: str = typer.Option("auto", "--source", help="auto | hf | modelscope | local | catalog"),
        revision: str | None = typer.Option(None, "--revision", help="Branch, tag or commit on the hub."),
        refresh: bool = typer.Option(False, "--refresh", help="Refetch hub metadata instead of the cache."),
        vllm_version: str | None = typer.Option(None, "--vllm-version", help="Default: installed vLLM, else newest known."),
        tensor_parallel_size: int | None = typer.Option(None, "--tensor-parallel-size", "-tp"),
        pipeline_parallel_size: int | None = typer.Option(None, "--pipeline-parallel-size", "-pp"),
        max_model_len: str | None = typer.Option(None, "--max-model-len", help="Tokens, 32k, or auto."),
        gpu_memory_utilization: float | None = typer.Option(None, "--gpu-memory-utilization"),
        kv_cache_memory_bytes: str | None = typer.Option(None, "--kv-cache-memory-bytes", help="Fix the KV budget per GPU."),
        kv_cache_dtype: str = typer.Option("auto", "--kv-cache-dtype", help="auto | bfloat16 | fp8 | fp8_e4m3 | fp8_e5m2"),
        dtype: str = typer.Option("auto", "--dtype"),
        quantization: str | None = typer.Option(None, "--quantization"),
        max_num_seqs: int | None = typer.Option(None, "--max-num-seqs"),
        max_num_batched_tokens: int | None = typer.Option(None, "--max-num-batched-tokens"),
        block_size: int | None = typer.Option(None, "--block-size"),
        enforce_eager: bool = typer.Option(False, "--enforce-eager"),
        min_concurrency: float | None = typer.Option(None, "--min-concurrency", help="Requests of full context to keep (default 4)."),
        save: Path | None = typer.Option(None, "--save", help="Write the plan as YAML for `vllmkit serve PLAN.yaml`."),
        json_output: bool = JSON_OPTION,
    ) -> None:
        """Will MODEL fit on GPU, and how: memory per GPU, KV capacity exactly as vLLM computes it,
        precision / TP / PP / context recommendation and the `vllm serve` line."""
        from vllmkit.plan.service import build_plan, does_not_fit_error

        req = plan_request_from_flags(
            model, gpu=gpu, gpu_memory=gpu_memory, gpu_count=gpu_count, device=device, source=source,
            revision=revision, refresh=refresh, vllm_version=vllm_version,
            tensor_parallel_size=tensor_parallel_size, pipeline_parallel_size=pipeline_parallel_size,
            max_model_len=max_model_len, gpu_memory_utilization=gpu_memory_utilization,
            kv_cache_memory_bytes=kv_cache_memory_bytes, kv_cache_dtype=kv_cache_dtype, dtype=dtype,
            quantization=quantization, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
            block_size=block_size, enforce_eager=enforce_eager,
        )
        plan = build_plan(req, dict(os.environ), min_concurrency=min_concurrency)
        if save is not None:
            save_plan(save, req, plan)
        misfit = does_not_fit_error(plan)
        code = int(misfit.exit_code) if misfit else 0
        errors = [{"code": misfit.code, "message": misfit.message, "hint": misfit.hint}] if misfit else []
        emit("plan", plan, json_mode=json_output, render=render_plan, exit_code=code, errors=errors)
        if code:
            raise typer.Exit(code)
