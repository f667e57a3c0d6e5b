"""`vllmkit serve`, `stop`, `ps` for people."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from vllmkit.output import console as out_console
from vllmkit.output import info, thousands
from vllmkit.views.smoke import render as render_smoke


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


def on_ready(result: Any) -> None:
    """Live: the server answered /health (printed while serve keeps supervising)."""
    render_ready(out_console(), result)
    info("serving; Ctrl-C stops the server")


def phase_line(ev: Any) -> None:
    """Live: one startup phase (stderr)."""
    info(f"[{ev.elapsed_s:7.1f}s] {ev.label}" + (f" ({ev.detail})" if ev.detail else ""))


def render_stop(console: Console, r: Any) -> None:
    for rid in r.stopped:
        console.print(f"stopped {rid}", markup=False)
    for rid in r.not_running:
        console.print(f"{rid} was not running", markup=False)
    if not r.stopped and not r.not_running:
        console.print("no running server", markup=False)


def render_ps(console: Console, rows: Any, all_runs: bool = False) -> None:
    if not rows:
        console.print("no servers" + ("" if all_runs else " running (see --all)"), markup=False)
        return
    table = Table()
    for col in ("run", "status", "pid", "url", "model", "started"):
        table.add_column(col, overflow="fold")
    for v in rows:
        table.add_row(v.run_id, v.status, str(v.pid or "-"), v.url, v.served_model_name, v.started_at)
    console.print(table)
