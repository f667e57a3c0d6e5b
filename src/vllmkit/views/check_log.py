"""`vllmkit check-log` for people."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from vllmkit.output import gib, thousands

if TYPE_CHECKING:
    from vllmkit.calibration.checklog import CheckLogResult

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


def render(console: Console, result: CheckLogResult) -> None:
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
