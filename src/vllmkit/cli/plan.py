"""`vllmkit plan MODEL --gpu GPU`: will it fit, and how."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from vllmkit.cli._workload import (
    CONCURRENCY_OPTION,
    INPUT_LEN_OPTION,
    OUTPUT_LEN_OPTION,
    REQUEST_RATE_OPTION,
    SHARED_PREFIX_OPTION,
    SPEC_ACCEPTANCE_OPTION,
    WORKLOAD_OPTION,
    perf_options,
    workload_from_flags,
)
from vllmkit.cli.options import (
    JSON_OPTION,
    PlanFlags,
    check_positive,
    make_plan,
    plan_request,
    planning_options,
)
from vllmkit.errors import UsageError
from vllmkit.output import CommandResult, waiting


def register(app: typer.Typer) -> None:
    @app.command("plan", short_help="Will it fit, and how: memory, KV, TP, context, serve line.")
    @planning_options
    def plan_cmd(
        model: str = typer.Argument(..., help="Hub id (Qwen/Qwen3-8B), hf://…, ms://…, or a local folder."),
        min_concurrency: float | None = typer.Option(
            None, "--min-concurrency", help="Requests of the full context the KV cache must hold when the planner picks the context (default 4)."),
        save: Path | None = typer.Option(None, "--save", help="Write the plan as YAML for `vllmkit serve PLAN.yaml`."),
        input_len: int | None = INPUT_LEN_OPTION,
        output_len: int | None = OUTPUT_LEN_OPTION,
        concurrency: int | None = CONCURRENCY_OPTION,
        request_rate: float | None = REQUEST_RATE_OPTION,
        shared_prefix_len: int | None = SHARED_PREFIX_OPTION,
        spec_acceptance: float | None = SPEC_ACCEPTANCE_OPTION,
        workload: str | None = WORKLOAD_OPTION,
        json_output: bool = JSON_OPTION,
        *,
        flags: PlanFlags,
    ) -> CommandResult:
        """Will MODEL fit on GPU, and how: memory per GPU, KV capacity exactly as vLLM computes it,
        precision / TP / PP / context, and the `vllm serve` line."""
        from vllmkit.plan.result import does_not_fit_error

        if min_concurrency is not None:
            check_positive(min_concurrency, "--min-concurrency", "e.g. --min-concurrency 4")
            if min_concurrency > 1e6:
                raise UsageError("--min-concurrency must be a positive number of requests (at most 1,000,000)",
                                 "e.g. --min-concurrency 4")
        req = plan_request(model, flags)
        env = dict(os.environ)
        # --- performance model (issue 11): a workload adds data.performance ---
        wl = workload_from_flags(input_len=input_len, output_len=output_len, concurrency=concurrency,
                                 request_rate=request_rate, preset=workload, shared_prefix_len=shared_prefix_len,
                                 spec_acceptance=spec_acceptance, speculative=bool(req.speculative_config))
        perf = perf_options(wl, env) if wl is not None else None
        with waiting(f"planning {model} ..."):
            plan = make_plan(req, env, min_concurrency=min_concurrency, perf=perf)
        if save is not None:
            from vllmkit.plan.planfile import save_plan

            save_plan(save, req, plan)
        result = CommandResult("plan", plan, view="vllmkit.views.plan:render", json_mode=json_output)
        misfit = does_not_fit_error(plan, tp_given=req.tensor_parallel_size)
        return result.fail(misfit) if misfit else result
