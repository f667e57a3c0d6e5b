"""`vllmkit doctor [MODEL] [--log FILE|-|last] [--url URL]`: environment, model, log and live checks."""

from __future__ import annotations

import os
from typing import Any

import typer

from vllmkit.cli.options import JSON_OPTION
from vllmkit.errors import UsageError
from vllmkit.output import CommandResult, waiting


def register(app: typer.Typer) -> None:
    @app.command("doctor", short_help="What is wrong (machine, log, model, live server) and the fix.")
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
        pipeline_parallel_size: int = typer.Option(1, "--pipeline-parallel-size", "-pp", help="Pipeline stages vLLM will use (shared-memory check)."),
        source: str = typer.Option("auto", "--source", help="auto | hf | modelscope | local | catalog"),
        revision: str | None = typer.Option(None, "--revision", help="Branch, tag or commit of MODEL on the hub."),
        offline: bool = typer.Option(False, "--offline", help="Do not probe the model hubs over the network."),
        json_output: bool = JSON_OPTION,
    ) -> None:
        """Find what is wrong and the exact fix. Without arguments: this machine (GPUs, drivers, the torch
        and vLLM builds, ports, shared memory, limits). MODEL: its chat template, generation config,
        custom code, context and disk space. --log: diagnose a vLLM startup log (stable codes, exact
        flags). --url: triage a running server from its /metrics."""
        from vllmkit.doctor.service import run_doctor
        from vllmkit.views.doctor import render

        if model is not None and (log is not None or url is not None):
            raise UsageError("MODEL cannot be combined with --log or --url",
                             "run `vllmkit doctor MODEL` and `vllmkit doctor --log FILE` separately")
        if interval < 0:
            raise UsageError("--interval must be >= 0", "e.g. --interval 10")
        from vllmkit.plan.log_alternatives import planner_alternatives

        env = dict(os.environ)
        with waiting("checking ..."):
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
        return CommandResult("doctor", _data(result), view=render, json_mode=json_output, exit_code=code, errors=errors)


def _data(result: Any) -> dict[str, Any]:
    """The JSON shape: --log gives {"facts", "diagnoses"} at the top; other modes their sections."""
    data = result.model_dump(mode="json", exclude_none=True)
    if data.get("checks") == []:
        data.pop("checks")
    return data


