"""`vllmkit doctor` for people."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vllmkit.output import gib, thousands

_STATUS_STYLE = {"ok": "green", "warn": "yellow", "fail": "red", "info": "cyan", "error": "red"}


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
    if table.row_count:
        console.print(table)
    else:  # a pasted error alone: no fact to tabulate, only the header
        console.print(f"vLLM log: {label}", markup=False, highlight=False)
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
            flags = " ".join(alt["flags"])
            console.print(f"    or: {flags + ' - ' if flags else ''}{alt['effect']} [{alt['source']}]", markup=False,
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


def render(console: Console, data: dict[str, Any]) -> None:
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
