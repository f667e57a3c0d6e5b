"""`vllmkit plan` for people."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vllmkit.estimate.memory import EXTRA_TERM_LABELS
from vllmkit.output import gib, thousands
from vllmkit.plan.models import PlanResult
from vllmkit.views.features import render_features


def render(console: Console, plan: PlanResult) -> None:
    m, g, mem, kv = plan.model, plan.gpu, plan.memory, plan.kv_cache
    verdict = "FITS" if plan.fits else "DOES NOT FIT"
    console.print(f"[bold]{escape(m.id)}[/bold] ({escape(m.architecture)}, {escape(m.dtype)}"
                  f"{', ' + escape(m.quantization) if m.quantization else ''}) from {escape(m.source)}")
    console.print(f"on {g.count} x {escape(g.display_name)} ({gib(g.memory_bytes)} each), vLLM {escape(plan.vllm_version)} "
                  f"({escape(plan.vllm_version_source)}) -> [bold]{verdict}[/bold]")
    console.print(f"TP={plan.parallel.tensor_parallel_size} PP={plan.parallel.pipeline_parallel_size}"
                  f"{f', {plan.parallel.nodes} nodes' if plan.parallel.nodes > 1 else ''}; "
                  f"max_model_len {thousands(plan.settings.max_model_len)} (native {thousands(m.native_max_model_len)})")
    # warnings first (an offline catalog answer, a dtype change): read before the numbers they qualify
    for warning in plan.warnings:
        console.print(f"warning: {warning}", markup=False)

    table = Table(title="Memory per GPU (tightest rank)", show_lines=False)
    table.add_column("term")
    table.add_column("size", justify="right")
    table.add_column("source")
    table.add_column("note", overflow="fold")
    weights_note = mem.notes.get("weights", "")
    if len(set(mem.stage_weights_bytes)) > 1:
        weights_note += "; one rank of each pipeline stage: " + " / ".join(gib(b) for b in mem.stage_weights_bytes)
    rows = [
        ("total (as torch reports)", mem.total_bytes, mem.sources.get("total", "measured"), ""),
        (f"requested (x {plan.settings.gpu_memory_utilization})", mem.requested_bytes, "derived", ""),
        ("weights", mem.weights_bytes, mem.sources.get("weights", ""), weights_note),
        ("non-torch", mem.non_torch_bytes, mem.sources.get("non_torch", ""), mem.notes.get("non_torch", "")),
        ("peak activation", mem.activation_bytes, mem.sources.get("activation", ""), mem.notes.get("activation", "")),
        ("CUDA graphs", mem.cudagraph_bytes, mem.sources.get("cudagraph", ""), mem.notes.get("cudagraph", "")),
        # the further non-KV terms, where the plan has them, so that the rows add up to the request
        *((label, getattr(mem, f"{key}_bytes"), mem.sources.get(key, ""), mem.notes.get(key, ""))
          for key, label in EXTRA_TERM_LABELS.items() if getattr(mem, f"{key}_bytes")),
        ("KV cache", mem.kv_cache_bytes, mem.sources.get("kv_cache", ""), mem.notes.get("kv_cache", "")),
    ]
    for name, size, src, note in rows:
        if name == "KV cache" and size is not None and size < 0:
            table.add_row(name, f"none ({gib(-size)} short)", str(src), escape(note))
            continue
        table.add_row(name, gib(size), str(src), escape(note))
    console.print(table)

    if kv.state_only:
        # attention-free (Mamba / Mamba-2): no per-token cache, one state page per request and layer group
        detail = f"{thousands(kv.num_blocks)} state blocks, one per request; no attention KV"
    else:
        detail = (f"{thousands(kv.num_blocks)} blocks of {kv.block_size} tokens, "
                  f"{thousands(kv.bytes_per_token)} B/token/GPU as full attention")
    console.print(
        f"KV cache: {thousands(kv.tokens)} tokens, maximum concurrency for {thousands(kv.max_model_len)} tokens per "
        f"request: {kv.max_concurrency:.2f}x  ({detail})"
    )
    if kv.running_concurrency:
        console.print(f"  running requests of {thousands(kv.max_model_len)} tokens: about {kv.running_concurrency:.2f} at "
                      "once (vLLM's figure above charges every request its sliding windows plus the tokens in flight; "
                      "the running scheduler frees what a window has left behind)", markup=False)
    if len(kv.groups) > 1:
        kinds: dict[str, int] = {}
        for grp in kv.groups:
            kinds[grp.kind] = kinds.get(grp.kind, 0) + 1
        console.print("KV groups: " + ", ".join(f"{n} x {k}" for k, n in kinds.items()))
    if not plan.fits and plan.estimated_max_model_len:
        console.print(f"vLLM will refuse this context; estimated maximum model length is "
                      f"{thousands(plan.estimated_max_model_len)}")
        usable = plan.usable_max_model_len
        if usable is not None and usable < plan.estimated_max_model_len:
            console.print("  (vLLM reports the first pipeline stage that fails; a heavier one holds "
                          + ("no KV cache at any length)" if usable == 0 else f"only {thousands(usable)} tokens)"))

    if plan.alternatives:
        alt = Table(title="Alternatives considered")
        with_tps = plan.performance is not None  # issue 11: a tokens/s column with a workload
        cols = ["", "precision", "model", "TP", "PP", "context", "fits", "KV tokens", "concurrency", "weights/GPU"]
        cols += ["out tok/s"] if with_tps else []
        for col in (*cols, "note"):
            alt.add_column(col, justify="left" if col in ("", "precision", "model", "fits", "note") else "right")
        for a in plan.alternatives[:24]:
            tps = [f"{a.output_tokens_per_s:,.0f}" if a.output_tokens_per_s else "-"] if with_tps else []
            alt.add_row("*" if a.chosen else "", escape(a.precision), escape(a.model_id), str(a.tensor_parallel_size),
                        str(a.pipeline_parallel_size), thousands(a.max_model_len), "yes" if a.fits else "no",
                        thousands(a.kv_tokens), f"{a.max_concurrency:.2f}", gib(a.weights_bytes), *tps, escape(a.note))
        console.print(alt)
    if plan.performance is not None:
        from vllmkit.views.performance import render_performance

        render_performance(console, plan.performance)
    for reason in plan.reasons:
        console.print(f"- {reason}", markup=False)
    render_features(console, plan.features)  # issue 14
    if not plan.fits:
        return  # no serve line for a plan vLLM would refuse (the error line says what to change)
    from vllmkit.launch.command import format_shell

    console.print("\nvllm serve command:", markup=False)
    # quoted for bash, so a copied line runs exactly this argv (a folder named $(...) is not executed)
    console.print(format_shell(plan.serve_command, plan.serve_env, multiline=False), markup=False, soft_wrap=True)
