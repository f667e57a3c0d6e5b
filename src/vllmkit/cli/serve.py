"""`vllmkit serve MODEL|plan.yaml`, `vllmkit stop`, `vllmkit ps`."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from vllmkit.cli.options import JSON_OPTION, PlanFlags, make_plan, plan_request, planning_options
from vllmkit.errors import UsageError
from vllmkit.output import CommandResult, info, waiting, warn

if TYPE_CHECKING:
    from vllmkit.launch.failure import Diagnoser

OUTPUT_OPTION = typer.Option(None, "--output", "-o", help="Write the export to a file.")
VLLM_ARG_OPTION = typer.Option([], "--vllm-arg", help="Extra vLLM flag (repeatable), e.g. --vllm-arg=--seed=1.")
RUN_IDS_ARGUMENT = typer.Argument(None, help="Run ids (or prefixes) from `vllmkit ps`; default: the only running one.")
_S = "Serving"  # help panel


def _parse_devices(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"cannot read --devices {text!r}", "use GPU indices like 0,1") from None
    if not ids or any(i < 0 for i in ids):
        raise UsageError(f"cannot read --devices {text!r}", "use GPU indices like 0,1")
    return ids


def register(app: typer.Typer) -> None:
    @app.command("serve", short_help="Start vLLM as planned, watch it start, smoke-test it.")
    @planning_options
    def serve_cmd(
        target: str = typer.Argument(..., help="Model (hub id or local folder) or a plan saved by `vllmkit plan --save`."),
        generation_config_vllm: bool = typer.Option(
            False, "--generation-config-vllm", help="Pass --generation-config vllm (ignore the model's sampling defaults).", rich_help_panel=_S),
        served_model_name: str | None = typer.Option(None, "--served-model-name", help="Model name clients send (default: the model id).", rich_help_panel=_S),
        host: str | None = typer.Option(None, "--host", help="Bind address (default 127.0.0.1).", rich_help_panel=_S),
        port: int | None = typer.Option(None, "--port", help="Port (default 8000).", rich_help_panel=_S),
        api_key_file: str | None = typer.Option(None, "--api-key-file", help="API key file (else VLLM_API_KEY).", rich_help_panel=_S),
        no_auth: bool = typer.Option(False, "--no-auth", help="Allow a non-loopback --host without an API key.", rich_help_panel=_S),
        dry_run: bool = typer.Option(False, "--dry-run", help="Print the command, start nothing."),
        export: str | None = typer.Option(None, "--export", help="Write a deployment instead: shell | docker | compose | k8s | ray | grafana."),
        output: Path | None = OUTPUT_OPTION,
        image: str | None = typer.Option(None, "--image", help="Container image for exports."),
        name: str | None = typer.Option(None, "--name", help="Container / Kubernetes name for exports."),
        replicas: str = typer.Option("1:4", "--replicas", help="k8s export: MIN:MAX replicas for the autoscaler (no HPA when MAX is 1)."),
        scale_on: str = typer.Option("queue", "--scale-on", help="k8s export: autoscale on queue (waiting requests) | kv (KV-cache usage)."),
        storage_class: str | None = typer.Option(None, "--storage-class", help="k8s export: StorageClass of the model-cache volume."),
        detach: bool = typer.Option(False, "--detach", "-d", help="Leave the server running once healthy."),
        no_smoke: bool = typer.Option(False, "--no-smoke", help="Skip the smoke test after startup."),
        health_timeout: float | None = typer.Option(None, "--health-timeout", help="Seconds to wait for /health (default: scaled to the model)."),
        python: str | None = typer.Option(None, "--python", help="Interpreter with vLLM (default: VLLMKIT_VLLM_PYTHON / ours)."),
        launcher: str = typer.Option("auto", "--launcher", help="auto | console (`vllm serve`) | module (python -m)."),
        devices: str | None = typer.Option(None, "--devices", help="GPU indices to use, e.g. 0,1."),
        vllm_arg: list[str] = VLLM_ARG_OPTION,
        no_check_flags: bool = typer.Option(False, "--no-check-flags", help="Do not check flags against the installed vLLM."),
        follow: bool = typer.Option(False, "--follow", "-f", help="Echo vLLM's log lines to stderr."),
        json_output: bool = JSON_OPTION,
        *,
        flags: PlanFlags,
    ) -> CommandResult:
        """Start vLLM with the planned flags, watch it start, wait for /health, smoke-test it.

        TARGET is a model (planned first, same options as `vllmkit plan`) or a saved plan. --dry-run
        prints the command; --export writes shell/docker/compose/k8s/ray; --detach leaves it running."""
        from vllmkit.launch import service as svc
        from vllmkit.plan.planfile import load_or_plan
        from vllmkit.views import serve as view

        if launcher not in ("auto", "console", "module"):
            raise UsageError(f"unknown --launcher {launcher!r}", "use auto, console or module")
        from vllmkit.launch.command import check_serve_flags

        check_serve_flags(host, port, health_timeout)
        from vllmkit.launch.command import ServeEndpoint

        env = dict(os.environ)
        endpoint = ServeEndpoint(**{k: v for k, v in dict(
            host=host, port=port, served_model_name=served_model_name,
            generation_config_vllm=generation_config_vllm or None,
        ).items() if v is not None})  # fmt: skip

        def replan(model: str):  # -> (PlanRequest, PlanResult)
            req = plan_request(model, flags)
            return req, make_plan(req, env, endpoint)

        # prefix caching and the serving features (issue 14) may be switched on a saved plan too
        # (the endpoint is never part of a plan); other flags re-plan
        switches = ("enable_prefix_caching", "tools", "reasoning")
        given = {k: v for k, v in flags.given().items() if k not in switches}
        with waiting(f"planning {target} ..."):
            req, plan = load_or_plan(target, given, replan)
        req = req.model_copy(update={k: v for k, v in flags.given().items() if k in switches})
        options = svc.ServeOptions(
            detach=detach, smoke=not no_smoke, health_timeout_s=health_timeout, launcher=launcher,  # type: ignore[arg-type]
            python=python, visible_devices=_parse_devices(devices), extra_args=list(vllm_arg),
            check_flags=not no_check_flags, no_auth=no_auth, api_key_file=api_key_file, endpoint=endpoint,
        )  # fmt: skip

        if export is not None:
            exported = svc.export_plan(plan, req, export, options, env, image=image, name=name, output=output,
                                       replicas=replicas, scale_on=scale_on, storage_class=storage_class)
            if output is not None and not json_output:
                info(f"wrote {export} export to {output}")
                return CommandResult("serve", exported)
            return CommandResult("serve", exported, json_mode=json_output, text=exported.content)

        if dry_run:
            with waiting("checking the flags against the installed vLLM ..."):
                result = svc.dry_run_result(svc.prepare(plan, req, options, env, require_vllm=False))
            if not json_output:
                for w in result.warnings:
                    warn(w)
            return CommandResult("serve", result, view=view.render_result, json_mode=json_output)

        with waiting("checking the flags against the installed vLLM ..."):
            prep = svc.prepare(plan, req, options, env)
        for w in prep.command.warnings:
            warn(w)
        if not plan.fits:
            est = f" (estimated maximum model length {plan.estimated_max_model_len:,})" if plan.estimated_max_model_len else ""
            warn(f"the plan predicts vLLM will refuse max_model_len {plan.settings.max_model_len:,}{est}; starting anyway")
        if prep.launcher is not None:
            info(f"launcher: {prep.launcher.reason}; flags checked: {prep.flags_checked}")
        info(prep.command.shell())
        if prep.api_key.origin == "generated":
            warn(f"--host {endpoint.host} is reachable from other machines: generated an API key (use --no-auth to skip)")

        from vllmkit.calibration.checklog import record_startup

        reporter = svc.Reporter(
            phase=None if json_output else view.phase_line,
            line=info if follow else None,
            note=None if json_output else info,
            ready=None if json_output else view.on_ready,
            # every healthy start is a measurement: store its non-KV overheads for later plans
            healthy=lambda log_text, source: record_startup(plan, log_text, env, source=source),
        )
        try:
            result = svc.serve(prep, options, env, reporter=reporter, diagnose=_diagnoser(env))
        except svc.ServeFailed as failure:
            failure.view = view.render_failure  # its report goes to stderr before the error line
            raise
        return CommandResult("serve", result, view=view.render_result, json_mode=json_output)

    @app.command("stop", short_help="Stop servers started by `vllmkit serve`.")
    def stop_cmd(
        run_ids: list[str] = RUN_IDS_ARGUMENT,
        all_runs: bool = typer.Option(False, "--all", help="Stop every running server started by vllmkit."),
        grace: float = typer.Option(30.0, "--grace", help="Seconds to wait for a clean shutdown before killing."),
        json_output: bool = JSON_OPTION,
    ) -> CommandResult:
        """Stop servers started by `vllmkit serve` (their whole process group)."""
        from vllmkit.launch.service import stop_runs
        from vllmkit.views.serve import render_stop

        result = stop_runs(dict(os.environ), list(run_ids or []), all_runs=all_runs, grace_s=grace)
        return CommandResult("stop", result, view=render_stop, json_mode=json_output)

    @app.command("ps", short_help="List servers started by `vllmkit serve`.")
    def ps_cmd(
        all_runs: bool = typer.Option(False, "--all", "-a", help="Include finished runs."),
        json_output: bool = JSON_OPTION,
    ) -> CommandResult:
        """List servers started by `vllmkit serve` (running ones; --all for finished runs too)."""
        from vllmkit.launch.service import list_runs
        from vllmkit.views.serve import render_ps

        views = list_runs(dict(os.environ), include_finished=all_runs)
        return CommandResult("ps", views, view=functools.partial(render_ps, all_runs=all_runs), json_mode=json_output)


def _diagnoser(env: dict[str, str]) -> Diagnoser:
    """serve's failure diagnosis: the doctor's, with the planner's exact alternatives (launch imports neither)."""

    def diagnose(log_text: str):  # type: ignore[no-untyped-def]
        from vllmkit.doctor import diagnose_log
        from vllmkit.plan.log_alternatives import planner_alternatives

        return diagnose_log(log_text, planner=lambda facts: planner_alternatives(facts, env)).diagnoses

    return diagnose
