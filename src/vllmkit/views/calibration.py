"""`vllmkit calibration …` for people."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vllmkit.output import gib, thousands


def render_list(console: Console, data: dict) -> None:
    if data.get("kind", "all") in ("all", "memory"):
        _render_memory(console, data)
    if data.get("kind", "all") in ("all", "performance"):
        _render_performance(console, data)


def _render_performance(console: Console, data: dict) -> None:
    """What `vllmkit bench` measured (calibration/perfstore.py), one row per load point."""
    records = data.get("performance") or []
    if not records:
        console.print(f"no performance records in {data.get('performance_store')}", markup=False)
        return
    table = Table(title=escape(f"performance ({data.get('performance_store')})"))
    for col in ("id", "date", "GPU", "vLLM", "model", "precision", "TP", "PP", "in/out", "load", "out tok/s",
                "TTFT p50 ms", "TPOT p50 ms", "source"):
        table.add_column(col, overflow="fold")
    for r in records:
        load = f"c={r['concurrency']}" if r.get("concurrency") else f"rate={r.get('request_rate')}"
        table.add_row(*(escape(str(v)) for v in (
            r["record_id"][:12], r["recorded_at"][:10], r["gpu"], r["vllm_version"], r["model"], r["precision"],
            r["tp"], r["pp"], f"{r['input_len']:.0f}/{r['output_len']:.0f}", load, f"{r['output_tokens_per_s']:.1f}",
            "-" if r["ttft_ms"].get("p50") is None else f"{r['ttft_ms']['p50']:.1f}",
            "-" if r["tpot_ms"].get("p50") is None else f"{r['tpot_ms']['p50']:.1f}", r.get("source", ""))))
    console.print(table)


def _render_memory(console: Console, data: dict) -> None:
    records = data["records"]
    if not records:
        console.print(f"no calibrations in {data['store']}", markup=False)
        return
    table = Table(title=escape(f"calibrations ({data['store']})"))
    for col in ("id", "date", "GPU", "vLLM", "family", "model", "batched tokens", "TP", "PP", "eager", "terms", "source"):
        table.add_column(col, justify="right" if col in ("batched tokens", "TP", "PP") else "left", overflow="fold")
    for r in records:
        terms = ", ".join(f"{k} {gib(v)}" for k, v in r["terms"].items()) + (" (lump)" if r.get("lump") else "")
        cells = [r["record_id"][:12], r["recorded_at"][:10], r["gpu"], r["vllm_version"], r["family"], r["model"],
                 thousands(r["max_num_batched_tokens"]), str(r["tp"]), str(r["pp"]),
                 "yes" if r["enforce_eager"] else "no", terms, r.get("source", "")]
        # imported strings: markup escaped here, control characters by the console (output.safe_text)
        table.add_row(*(escape(str(c)) for c in cells))
    console.print(table)


def render_message(console: Console, data: dict) -> None:
    console.print(data["message"], markup=False)
