"""`vllmkit doctor [MODEL] [--log FILE|-|last] [--url URL]`: environment, model, log and live checks."""

from __future__ import annotations

import os
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vllmkit.cli._common import JSON_OPTION, boundary
from vllmkit.errors import UsageError
from vllmkit.output import emit, gib, thousands

_STATUS_STYLE = {"ok": "green", "warn": "yellow", "fail": "red", "info": "cyan", "error": "red"}


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    @boundary("doctor")
    def doctor_cmd(
        model: str | None = typer.Argument(None, help="Also check this model (hub id or folder): template, "
                                           "generation config, custom code, context, disk space."),
        log: str | None = typer.Option(None, "--log", help="Diagnose a vLLM log: FILE, '-' for stdin, 'last' for "
                                       "the newest `vllmkit serve` run."),
        url: str | None = typer.Option(None, "--url", help="Triage a running server from its /metrics."),
        interval: float = typer.Option(0.0, "--interval", help="With --url: scrape twice, this many seconds apart."),
        host: str = typer.Option("0.0.0.0", "--host", help="Address vLLM will listen on (port check)."),
        port: int = typer.Option(8000, "--port", help="Port vLLM will listen on (port check)."),
        tensor_parallel_size: int = typer.Option(1, "--tensor-parallel-size", "-tp", help="Checks /dev/shm when > 1."),
        pipeline_parallel_size: int = typer.Option(1, "--pipeline-parallel-size", "-pp"),
        source: str = typer.Option("auto", "--source", help="auto | hf | modelscope | local | catalog"),
        revision: str | None = typer.Option(None, "--revision"),
        offline: bool = typer.Option(False, "--offline", help="Do not probe the model hubs over the network."),
        json_output: bool = JSON_OPTION,
    ) -> None:
        from vllmkit.doctor.service import run_doctor

        if model is not None and (log is not None or url is not None):
            raise UsageError("MODEL cannot be combined with --log or --url",
                             "run `vllmkit doctor MODEL` and `vllmkit doctor --log FILE` separately")
        if interval < 0:
            raise UsageError("--interval must be >= 0", "e.g. --interval 10")
        from vllmkit.plan.log_alternatives import planner_alternatives

        env = dict(os.environ)
        result = run_doctor(
            env=env, model=model, log=log, url=url, host=host, port=port,
            tensor_parallel_size=tensor_parallel_size, pipeline_parallel_size=pipeline_parallel_size,
            source=source, revision=revision, offline=offline, interval_s=interval,
            planner=lambda facts: planner_alternatives(facts, env),
        )
        code, errors = 0, []
        if result.failed:
            code = 3
            errors.append({
                "code": "check-failed",
                "message": f"doctor found problems: {result.failure_summary()}",
                "hint": "apply the fixes listed above",
            })
        emit("doctor", _data(result), json_mode=json_output, render=_render, exit_code=code, errors=errors)
        if code:
            raise typer.Exit(code)


def _data(result: Any) -> dict[str, Any]:
    """The JSON shape: --log gives {"facts", "diagnoses"} at the top; other modes their sections."""
    data = result.model_dump(mode="json", exclude_none=True)
    if data.get("checks") == []:
        data.pop("checks")
    return data


# --- human output ------------------------------------------------------------------------------


def _status(text: str) -> str:
    return f"[{_STATUS_STYLE.get(text, 'white')}]{text}[/]"


def _checks_table(console: Console, title: str, checks: list[dict[str, Any]]) -> None:
    table = Table(title=escape(title), title_justify="left", show_lines=False)
    table.add_column("status")
    table.add_column("check")
    table.add_column("detail", overflow="fold")
    for c in checks:
        table.add_row(_status(c["status"]), escape(c["name"]), escape(c["detail"]))
    console.print(table)
    for c in checks:
        if c.get("fix") and c["status"] != "ok":
            code = escape(f" [{c['code']}]") if c.get("code") else ""
            console.print(f"  {_status(c['status'])} {c['name']}{code}: ", end="")
            console.print(c["fix"], markup=False, highlight=False)


_FACT_ROWS: tuple[tuple[str, str, str], ...] = (
    ("vllm_version", "vLLM", "text"),
    ("engine", "engine", "text"),
    ("platform", "platform", "text"),
    ("gpu_name", "GPU", "text"),
    ("gpu_total_bytes", "GPU memory", "bytes"),
    ("model", "model", "text"),
    ("architecture", "architecture", "text"),
    ("tensor_parallel_size", "tensor parallel", "int"),
    ("pipeline_parallel_size", "pipeline parallel", "int"),
    ("dtype", "dtype", "text"),
    ("quantization", "quantization", "text"),
    ("kv_cache_dtype", "KV cache dtype", "text"),
    ("max_model_len", "max_model_len", "int"),
    ("gpu_memory_utilization", "gpu_memory_utilization", "text"),
    ("enforce_eager", "enforce_eager", "text"),
    ("attention_backend", "attention backend", "text"),
    ("weights_bytes", "weights", "bytes"),
    ("available_kv_bytes", "available KV memory", "bytes"),
    ("kv_cache_tokens", "KV cache tokens", "int"),
    ("num_gpu_blocks", "KV blocks", "int"),
    ("max_concurrency", "max concurrency", "x"),
    ("graph_memory_bytes", "CUDA graph memory", "bytes"),
    ("init_engine_seconds", "engine init", "s"),
    ("estimated_max_model_len", "vLLM's estimated max length", "int"),
)


def _fmt(value: Any, kind: str, facts: dict[str, Any]) -> str:
    if kind == "bytes":
        return gib(value)
    if kind == "int":
        return thousands(int(value))
    if kind == "x":
        per = facts.get("concurrency_tokens_per_request")
        return f"{value:.2f}x" + (f" at {thousands(per)} tokens/request" if per else "")
    if kind == "s":
        return f"{value:.1f} s"
    return str(value)


def _render_log(console: Console, label: str, facts: dict[str, Any], diagnoses: list[dict[str, Any]]) -> None:
    table = Table(title=escape(f"vLLM log: {label}"), title_justify="left")
    table.add_column("fact")
    table.add_column("value", overflow="fold")
    for key, name, kind in _FACT_ROWS:
        value = facts.get(key)
        if value is not None:
            table.add_row(name, escape(_fmt(value, kind, facts)))
    console.print(table)
    if not diagnoses:
        console.print("no problems recognised in the log")
        return
    for d in diagnoses:
        where = f" (line {d['line']})" if d.get("line") else ""
        console.print(f"{_status(d['severity'])} [bold]{escape(d['code'])}[/]: {escape(d['title'])}")
        console.print(f"    evidence{where}: {d['evidence'][:300]}", markup=False, highlight=False)
        console.print(f"    fix: {d['fix']}", markup=False, highlight=False)
        if d.get("suggested_flags"):
            console.print(f"    flags: {' '.join(d['suggested_flags'])}", markup=False, highlight=False)
        if d.get("remove_flags"):
            console.print(f"    remove: {' '.join(d['remove_flags'])}", markup=False, highlight=False)
        if d.get("suggested_env"):
            env = " ".join(f"{k}={v}" for k, v in d["suggested_env"].items())
            console.print(f"    env: {env}", markup=False, highlight=False)
        for alt in d.get("alternatives", []):
            console.print(f"    or: {' '.join(alt['flags'])} - {alt['effect']} [{alt['source']}]", markup=False,
                          highlight=False)


def _render_live(console: Console, live: dict[str, Any]) -> None:
    layers = {0: "endpoint", 1: "1. optimizations", 2: "2. GPU and memory", 3: "3. requests"}
    title = f"live server {live['url']}" + (f" (startup log {live['log_used']})" if live.get("log_used") else "")
    table = Table(title=escape(title), title_justify="left")
    table.add_column("layer")
    table.add_column("status")
    table.add_column("check")
    table.add_column("detail", overflow="fold")
    for f in live["findings"]:
        table.add_row(layers.get(f["layer"], str(f["layer"])), _status(f["status"]), escape(f["name"]), escape(f["detail"]))
    console.print(table)
    for f in live["findings"]:
        if f.get("fix") and f["status"] in ("warn", "fail"):
            console.print(f"  {_status(f['status'])} {escape(f['name'])}: {escape(f['fix'])}")


def _render(console: Console, data: dict[str, Any]) -> None:
    if "facts" in data:
        _render_log(console, data.get("log", "-"), data["facts"], data.get("diagnoses", []))
    if data.get("live"):
        _render_live(console, data["live"])
    if data.get("checks"):
        _checks_table(console, "environment", data["checks"])
    if data.get("model"):
        m = data["model"]
        _checks_table(console, f"model {m['id']} ({m['source']})", m["checks"])
    if data.get("last_run"):
        lr = data["last_run"]
        console.print()
        _render_log(console, f"last run {lr['log']}", lr["facts"], lr["diagnoses"])
