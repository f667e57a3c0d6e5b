"""How `vllmkit capacity` looks to people (plan/capacity.py CapacityResult)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from vllmkit.plan.capacity import CapacityResult


def render(console: Console, res: CapacityResult) -> None:
    r = res.per_replica
    console.print(f"[bold]{res.model}[/bold] on {res.gpu_display_name}: {res.qps:g} req/s peak, "
                  f"{res.input_len:g} in / {res.output_len:g} out tokens"
                  f"{f' ({res.workload} preset)' if res.workload else ''}, vLLM {res.vllm_version}")
    slo = ", ".join(f"{k.replace('_ms', '').replace('_', ' ')} <= {v:g} ms" for k, v in res.slo.items() if v)
    console.print(f"SLOs: {slo or 'none'}; headroom {res.headroom:.0%}; redundancy N+{res.redundancy}", markup=False)
    for warning in res.warnings:  # before the numbers they qualify, as in `plan`
        console.print(f"warning: {warning}", markup=False)
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
                      str(c.pipeline_parallel_size), str(c.max_num_seqs), f"{c.goodput_rps:.2f}" if c.searched else "-",
                      str(c.replicas or "-"), str(c.gpus_total or "-"), c.note)
    console.print(table)
    console.print(f"source: {res.source}", markup=False)
    for line in res.assumptions:
        console.print(f"assumes: {line}", markup=False)
    console.print("\nper-replica vllm serve command:", markup=False)
    console.print(" ".join(r.serve_command), markup=False, soft_wrap=True)
