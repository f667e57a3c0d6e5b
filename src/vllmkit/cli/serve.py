"""`vllmkit serve MODEL|plan.yaml`, `vllmkit stop`, `vllmkit ps`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from vllmkit.cli import _features as F
from vllmkit.cli._common import JSON_OPTION, boundary
from vllmkit.cli.smoke import render_smoke
from vllmkit.errors import ExitCode, UsageError
from vllmkit.output import console as out_console
from vllmkit.output import emit, info, print_json, thousands, warn
from vllmkit.plan.models import PlanRequest, PlanResult

PLAN_SUFFIXES = (".yaml", ".yml", ".json")
OUTPUT_OPTION = typer.Option(None, "--output", "-o", help="Write the export to a file.")
VLLM_ARG_OPTION = typer.Option(
    [], "--vllm-arg", help="Extra vLLM flag (repeatable), e.g. --vllm-arg=--seed=1."
)
RUN_IDS_ARGUMENT = typer.Argument(
    None, help="Run ids (or prefixes) from `vllmkit ps`; default: the only running one."
)


# ---------------------------------------------------------------------------------------------
# rendering


def _render_comparison(console: Console, result: Any) -> None:
    if not result.predicted_vs_actual:
        return
    table = Table(title="predicted vs vLLM")
    for col in ("quantity", "vllmkit", "vLLM", "match"):
        table.add_column(col, justify="right" if col != "quantity" else "left")
    for c in result.predicted_vs_actual:
        fmt = lambda v: thousands(v) if isinstance(v, int) else ("-" if v is None else f"{v:,.2f}")  # noqa: E731
        match = "-" if c.match is None else ("yes" if c.match else "NO")
        table.add_row(c.quantity, f"{fmt(c.predicted)} {c.unit}", f"{fmt(c.actual)} {c.unit}", match)
    console.print(table)


def render_ready(console: Console, result: Any) -> None:
    console.print(f"vLLM is up at {result.url} (model name: {result.served_model_name})", markup=False)
    if result.time_to_healthy_s is not None:
        console.print(
            f"healthy after {result.time_to_healthy_s:.1f} s; run {result.run_id}; log {result.log}",
            markup=False,
        )
    _render_comparison(console, result)
    if result.smoke is not None:
        render_smoke(console, result.smoke)
    if result.api_key == "generated":
        console.print(
            f"an API key was generated (the server listens beyond loopback): export VLLM_API_KEY=$(cat {result.api_key_file})",
            markup=False,
        )
    if result.examples:
        console.print("\ntry it:", markup=False)
        console.print(result.examples["curl"], markup=False)
        console.print("\n" + result.examples["python"], markup=False)


def render_result(console: Console, result: Any) -> None:
    if result.status == "dry-run":
        console.print(result.shell, markup=False)
        return
    if result.status == "detached":
        render_ready(console, result)
        console.print(
            f"\nrunning in the background (pid {result.pid}); stop it with: vllmkit stop {result.run_id}",
            markup=False,
        )
        return
    if result.status == "stopped":
        console.print(f"stopped {result.run_id} (log {result.log})", markup=False)
        return
    render_failure(console, result)


def render_failure(console: Console, result: Any) -> None:
    for f in result.failure:
        console.print(f"cause: {f.title} [{f.code}]", markup=False)
        if f.evidence:
            console.print(f"  vLLM said: {f.evidence}", markup=False)
        if f.estimated_max_model_len is not None:
            console.print(
                f"  vLLM's estimated maximum model length: {f.estimated_max_model_len}", markup=False
            )
        if f.fix:
            console.print(f"  fix: {f.fix}", markup=False)
        for alt in f.alternatives:
            console.print(f"  or: {alt}", markup=False)
    if result.log:
        console.print(f"log: {result.log}", markup=False)


def _on_ready(result: Any) -> None:
    render_ready(out_console(), result)
    info("serving; Ctrl-C stops the server")


def _phase_line(ev: Any) -> None:
    info(f"[{ev.elapsed_s:7.1f}s] {ev.label}" + (f" ({ev.detail})" if ev.detail else ""))


# ---------------------------------------------------------------------------------------------
# inputs


def _parse_devices(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"cannot read --devices {text!r}", "use GPU indices like 0,1") from None
    if not ids or any(i < 0 for i in ids):
        raise UsageError(f"cannot read --devices {text!r}", "use GPU indices like 0,1")
    return ids


def _is_plan_file(target: str) -> bool:
    p = Path(target)
    return p.suffix.lower() in PLAN_SUFFIXES and p.is_file()


def _load_or_plan(
    target: str, plan_kwargs: dict[str, Any], overrides: dict[str, Any]
) -> tuple[PlanRequest, PlanResult]:
    from vllmkit.launch.service import load_plan_file

    if _is_plan_file(target):
        given = [k for k, v in plan_kwargs.items() if v not in (None, False, "auto")]
        if given:
            raise UsageError(
                f"planning options ({', '.join('--' + k.replace('_', '-') for k in given)}) cannot change a saved plan",
                "re-plan with `vllmkit plan ... --save`, or serve the model directly",
            )
        req, plan = load_plan_file(Path(target))
    else:
        from vllmkit.cli.plan import plan_request_from_flags
        from vllmkit.plan.service import build_plan

        req = plan_request_from_flags(target, refresh=False, vllm_version=None, **plan_kwargs)
        plan = build_plan(
            req.model_copy(update={k: v for k, v in overrides.items() if v is not None}), dict(os.environ)
        )
    update = {k: v for k, v in overrides.items() if v is not None}
    return req.model_copy(update=update), plan


# ---------------------------------------------------------------------------------------------
# commands


def register(app: typer.Typer) -> None:
    @app.command("serve")
    @boundary("serve")
    def serve_cmd(
        target: str = typer.Argument(
            ..., help="Model (hub id or local folder) or a plan saved by `vllmkit plan --save`."
        ),
        gpu: str | None = typer.Option(None, "--gpu", help="GPU profile (see `vllmkit gpus`), or 'cpu'."),
        gpu_memory: str | None = typer.Option(
            None, "--gpu-memory", help="Memory of an unlisted GPU, e.g. 48GiB."
        ),
        gpu_count: int | None = typer.Option(None, "--gpu-count"),
        device: str | None = typer.Option(None, "--device", help="cuda | rocm | cpu"),
        source: str = typer.Option("auto", "--source", help="auto | hf | modelscope | local | catalog"),
        revision: str | None = typer.Option(None, "--revision"),
        tensor_parallel_size: int | None = typer.Option(None, "--tensor-parallel-size", "-tp"),
        pipeline_parallel_size: int | None = typer.Option(None, "--pipeline-parallel-size", "-pp"),
        max_model_len: str | None = typer.Option(None, "--max-model-len", help="Tokens, 32k, or auto."),
        gpu_memory_utilization: float | None = typer.Option(None, "--gpu-memory-utilization"),
        kv_cache_memory_bytes: str | None = typer.Option(None, "--kv-cache-memory-bytes"),
        kv_cache_dtype: str = typer.Option("auto", "--kv-cache-dtype"),
        dtype: str = typer.Option("auto", "--dtype"),
        quantization: str | None = typer.Option(None, "--quantization"),
        max_num_seqs: int | None = typer.Option(None, "--max-num-seqs"),
        max_num_batched_tokens: int | None = typer.Option(None, "--max-num-batched-tokens"),
        block_size: int | None = typer.Option(None, "--block-size"),
        enforce_eager: bool = typer.Option(False, "--enforce-eager"),
        enable_prefix_caching: bool | None = typer.Option(
            None, "--enable-prefix-caching/--no-enable-prefix-caching", help="Default: vLLM's."
        ),
        generation_config_vllm: bool = typer.Option(
            False,
            "--generation-config-vllm",
            help="Pass --generation-config vllm (ignore the model's sampling defaults).",
        ),
        served_model_name: str | None = typer.Option(None, "--served-model-name"),
        host: str | None = typer.Option(None, "--host", help="Bind address (default 127.0.0.1)."),
        port: int | None = typer.Option(None, "--port", help="Port (default 8000)."),
        api_key_file: str | None = typer.Option(
            None, "--api-key-file", help="API key file (else VLLM_API_KEY)."
        ),
        no_auth: bool = typer.Option(
            False, "--no-auth", help="Allow a non-loopback --host without an API key."
        ),
        dry_run: bool = typer.Option(False, "--dry-run", help="Print the command, start nothing."),
        export: str | None = typer.Option(None, "--export", help="shell | docker | compose | k8s | ray"),
        output: Path | None = OUTPUT_OPTION,
        image: str | None = typer.Option(None, "--image", help="Container image for exports."),
        name: str | None = typer.Option(None, "--name", help="Container / Kubernetes name for exports."),
        detach: bool = typer.Option(False, "--detach", "-d", help="Leave the server running once healthy."),
        no_smoke: bool = typer.Option(False, "--no-smoke", help="Skip the smoke test after startup."),
        health_timeout: float | None = typer.Option(
            None, "--health-timeout", help="Seconds (default: scaled to the model)."
        ),
        python: str | None = typer.Option(
            None, "--python", help="Interpreter with vLLM (default: VLLMKIT_VLLM_PYTHON / ours)."
        ),
        launcher: str = typer.Option(
            "auto", "--launcher", help="auto | console (`vllm serve`) | module (python -m)."
        ),
        devices: str | None = typer.Option(None, "--devices", help="GPU indices to use, e.g. 0,1."),
        vllm_arg: list[str] = VLLM_ARG_OPTION,
        no_check_flags: bool = typer.Option(
            False, "--no-check-flags", help="Do not check flags against the installed vLLM."
        ),
        follow: bool = typer.Option(False, "--follow", "-f", help="Echo vLLM's log lines to stderr."),
        json_output: bool = JSON_OPTION,
        # issue 13 feature flags (cli/_features.py)
        limit_mm_per_prompt: str | None = F.LIMIT_MM_OPTION,
        language_model_only: bool = F.LANGUAGE_MODEL_ONLY_OPTION,
        enable_lora: bool = F.ENABLE_LORA_OPTION,
        max_loras: int | None = F.MAX_LORAS_OPTION,
        max_lora_rank: int | None = F.MAX_LORA_RANK_OPTION,
        max_cpu_loras: int | None = F.MAX_CPU_LORAS_OPTION,
        speculative_config: str | None = F.SPECULATIVE_OPTION,
        data_parallel_size: int | None = F.DATA_PARALLEL_OPTION,
        enable_expert_parallel: bool = F.EXPERT_PARALLEL_OPTION,
    ) -> None:
        """Start vLLM with the planned flags, watch it start, wait for /health, smoke-test it.

        TARGET is a model (planned first, same flags as `vllmkit plan`) or a saved plan. --dry-run
        prints the command; --export writes shell/docker/compose/k8s/ray; --detach leaves it running."""
        from vllmkit.launch import service as svc
        from vllmkit.launch.exporters import FORMATS
        from vllmkit.launch.exporters import export as do_export
        from vllmkit.launch.supervisor import health_timeout_s

        if launcher not in ("auto", "console", "module"):
            raise UsageError(f"unknown --launcher {launcher!r}", "use auto, console or module")
        if export is not None and export not in FORMATS:
            raise UsageError(f"unknown --export {export!r}", "use " + ", ".join(FORMATS))
        env = dict(os.environ)
        plan_kwargs = dict(
            gpu=gpu, gpu_memory=gpu_memory, gpu_count=gpu_count, device=device, source=source, revision=revision,
            tensor_parallel_size=tensor_parallel_size, pipeline_parallel_size=pipeline_parallel_size,
            max_model_len=max_model_len, gpu_memory_utilization=gpu_memory_utilization,
            kv_cache_memory_bytes=kv_cache_memory_bytes, kv_cache_dtype=kv_cache_dtype, dtype=dtype,
            quantization=quantization, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
            block_size=block_size, enforce_eager=enforce_eager,
        )  # fmt: skip
        overrides = dict(
            host=host, port=port, served_model_name=served_model_name,
            enable_prefix_caching=enable_prefix_caching, generation_config_vllm=generation_config_vllm or None,
        )  # fmt: skip
        features = F.apply_feature_flags(
            PlanRequest(model=target), limit_mm_per_prompt=limit_mm_per_prompt,
            language_model_only=language_model_only, enable_lora=enable_lora, max_loras=max_loras,
            max_lora_rank=max_lora_rank, max_cpu_loras=max_cpu_loras, speculative_config=speculative_config,
            data_parallel_size=data_parallel_size, enable_expert_parallel=enable_expert_parallel,
        ).model_dump(include=set(F.FEATURE_FIELDS))
        given_features = {k: v for k, v in features.items() if v not in (None, False)}
        if given_features and _is_plan_file(target):
            raise UsageError("feature options (LoRA, speculative decoding, multimodal limits, DP/EP) cannot change "
                             "a saved plan", "re-plan with `vllmkit plan ... --save`, or serve the model directly")
        overrides.update(given_features)
        req, plan = _load_or_plan(target, plan_kwargs, overrides)
        options = svc.ServeOptions(
            detach=detach, smoke=not no_smoke, health_timeout_s=health_timeout, launcher=launcher,  # type: ignore[arg-type]
            python=python, visible_devices=_parse_devices(devices), extra_args=list(vllm_arg),
            check_flags=not no_check_flags, no_auth=no_auth, api_key_file=api_key_file,
        )  # fmt: skip

        if export is not None:
            key = svc.resolve_api_key(req.host, env, api_key_file=api_key_file, no_auth=no_auth)
            auth = not no_auth and (key.key is not None or export == "k8s")
            timeout = health_timeout or health_timeout_s(
                plan.model.weight_files_bytes or plan.memory.weights_bytes,
                remote=plan.model.source != "local",
            )
            text = do_export(
                plan, req, export, image=image, name=name, auth=auth, visible_devices=options.visible_devices,
                health_timeout_s=timeout,
            )  # fmt: skip
            if output is not None:
                output.write_text(text, encoding="utf-8")
            data = {"format": export, "output": str(output) if output else None, "content": text}
            if json_output:
                emit("serve", data, json_mode=True)
            elif output is None:
                typer.echo(text, nl=False)
            else:
                info(f"wrote {export} export to {output}")
            return

        if dry_run:
            prep = svc.prepare(plan, req, options, env, require_vllm=False)
            result = svc.dry_run_result(prep)
            for w in result.warnings:
                warn(w)
            emit("serve", result, json_mode=json_output, render=render_result)
            return

        prep = svc.prepare(plan, req, options, env)
        for w in prep.command.warnings:
            warn(w)
        if not plan.fits:
            est = (
                f" (estimated maximum model length {plan.estimated_max_model_len:,})"
                if plan.estimated_max_model_len
                else ""
            )
            warn(
                f"the plan predicts vLLM will refuse max_model_len {plan.settings.max_model_len:,}{est}; starting anyway"
            )
        if prep.launcher is not None:
            info(f"launcher: {prep.launcher.reason}; flags checked: {prep.flags_checked}")
        info(prep.command.shell())
        if prep.api_key.origin == "generated":
            warn(
                f"--host {req.host} is reachable from other machines: generated an API key (use --no-auth to skip)"
            )

        reporter = svc.Reporter(
            phase=None if json_output else _phase_line,
            line=(lambda text: info(text)) if follow else None,
            note=None if json_output else info,
            ready=None if json_output else _on_ready,
        )
        try:
            result = svc.serve(prep, options, env, reporter=reporter)
        except svc.ServeFailed as failure:
            errors = [{"code": failure.code, "message": failure.message, "hint": failure.hint}]
            if json_output:
                print_json(_envelope(failure.result, int(ExitCode.LAUNCH), errors))
            else:
                render_failure(out_console(stderr=True), failure.result)
                emit("serve", None, json_mode=False, errors=errors)
            raise typer.Exit(int(ExitCode.LAUNCH)) from None
        emit("serve", result, json_mode=json_output, render=render_result)

    @app.command("stop")
    @boundary("stop")
    def stop_cmd(
        run_ids: list[str] = RUN_IDS_ARGUMENT,
        all_runs: bool = typer.Option(False, "--all", help="Stop every running server started by vllmkit."),
        grace: float = typer.Option(
            30.0, "--grace", help="Seconds to wait for a clean shutdown before killing."
        ),
        json_output: bool = JSON_OPTION,
    ) -> None:
        """Stop servers started by `vllmkit serve` (their whole process group)."""
        from vllmkit.launch.service import stop_runs

        result = stop_runs(dict(os.environ), list(run_ids or []), all_runs=all_runs, grace_s=grace)

        def render(console: Console, r: Any) -> None:
            for rid in r.stopped:
                console.print(f"stopped {rid}", markup=False)
            for rid in r.not_running:
                console.print(f"{rid} was not running", markup=False)
            if not r.stopped and not r.not_running:
                console.print("no running server", markup=False)

        emit("stop", result, json_mode=json_output, render=render)

    @app.command("ps")
    @boundary("ps")
    def ps_cmd(
        all_runs: bool = typer.Option(False, "--all", "-a", help="Include finished runs."),
        json_output: bool = JSON_OPTION,
    ) -> None:
        """List servers started by `vllmkit serve` (running ones; --all for finished runs too)."""
        from vllmkit.launch.service import list_runs

        views = list_runs(dict(os.environ), include_finished=all_runs)

        def render(console: Console, rows: Any) -> None:
            if not rows:
                console.print("no servers" + ("" if all_runs else " running (see --all)"), markup=False)
                return
            table = Table()
            for col in ("run", "status", "pid", "url", "model", "started"):
                table.add_column(col, overflow="fold")
            for v in rows:
                table.add_row(v.run_id, v.status, str(v.pid or "-"), v.url, v.served_model_name, v.started_at)
            console.print(table)

        emit("ps", views, json_mode=json_output, render=render)


def _envelope(result: Any, code: int, errors: list[dict[str, Any]]) -> dict[str, Any]:
    from vllmkit.output import envelope

    return envelope("serve", result, exit_code=code, errors=errors)
