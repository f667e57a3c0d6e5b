"""`vllmkit check-log LOG`: the plan for the run a startup log shows, side by side with what vLLM measured."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from vllmkit.cli.options import JSON_OPTION, PlanFlags, planning_options, request_overrides
from vllmkit.output import CommandResult, waiting

LOG_ARGUMENT = typer.Argument(..., help="A vLLM startup log (e.g. a run's vllm.log).", show_default=False)


def register(app: typer.Typer) -> None:
    @app.command("check-log", short_help="Compare a vLLM startup log with the plan for the same run.")
    @planning_options
    def check_log_cmd(
        log: Path = LOG_ARGUMENT,
        model: str | None = typer.Option(None, "--model", help="Model (default: from the log's engine config line)."),
        record: bool = typer.Option(False, "--record", help="Store the measured non-KV memory as a calibration."),
        use_calibration: bool = typer.Option(False, "--use-calibration",
                                             help="Predict with stored calibrations (default: the uncalibrated model)."),
        json_output: bool = JSON_OPTION,
        *,
        flags: PlanFlags,
    ) -> CommandResult:
        """Compare a real vLLM startup log with the plan for the same run: weights, non-torch, activation,
        CUDA graphs, available KV, KV tokens, concurrency (predicted, measured, error). Inputs come
        from the log's own lines; the planning options override them; what the log lacks is listed as
        assumed. --record stores the measured non-KV memory as a calibration for `vllmkit plan`.
        Exit codes: 0 ok, 2 bad file or flag, 3 no startup facts in the log (or --record had nothing to record)."""
        from vllmkit.calibration.checklog import check_log
        from vllmkit.plan.models import PlanOverrides
        from vllmkit.views.check_log import render

        inputs = PlanOverrides(model=model, **request_overrides(flags))
        with waiting(f"reading {log} and planning the same run ..."):
            result = check_log(log, inputs, dict(os.environ), record=record, use_calibration=use_calibration)
        out = CommandResult("check-log", result, view=render, json_mode=json_output)
        if record and result.record is not None and not result.record.recorded:
            out.exit_code = 3
            out.errors.append({"code": "nothing-to-record", "message": f"no calibration recorded from {log}",
                               "hint": result.record.reason})
        return out
