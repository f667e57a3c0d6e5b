"""`vllmkit doctor` as a service: environment, model, log and live-server checks -> one result.

The CLI only parses flags, calls `run_doctor` and hands the result to output. Exit code 3 when a
check fails or a log diagnosis is an error; bad input (missing file, unreadable URL) raises a domain
error instead.
"""

from __future__ import annotations

import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from vllmkit.dirs import latest_run_log, runs_dir
from vllmkit.doctor.diagnose import Diagnosis, LogReport, PlannerHook, diagnose_log
from vllmkit.doctor.envchecks import Check, EnvProbes, EnvReport, EnvRequest, run_env_checks
from vllmkit.doctor.metrics import Fetcher, Triage, is_vllm_metrics, metrics_url, triage
from vllmkit.doctor.modelchecks import run_model_checks
from vllmkit.errors import LaunchError, UsageError
from vllmkit.files import FileProblem, read_text
from vllmkit.hub.base import ModelMetadata
from vllmkit.logs import MAX_LOG_BYTES, LogFacts, parse_log
from vllmkit.urls import server_url

LAST_RUN = "last"


class LogSection(BaseModel):
    log: str  # path, "-" for stdin
    facts: LogFacts
    diagnoses: list[Diagnosis]


class ModelSection(BaseModel):
    id: str
    source: str
    checks: list[Check]


class DoctorResult(BaseModel):
    mode: list[str] = Field(default_factory=list)  # env, model, log, url
    checks: list[Check] = Field(default_factory=list)
    gpus: dict[str, Any] | None = None
    vllm: dict[str, Any] | None = None
    torch: dict[str, Any] | None = None
    model: ModelSection | None = None
    # --log: facts and diagnoses at the top level (doctor --log --json: data.facts / data.diagnoses)
    log: str | None = None
    facts: LogFacts | None = None
    diagnoses: list[Diagnosis] | None = None
    last_run: LogSection | None = None
    live: Triage | None = None

    @property
    def failed(self) -> bool:
        if any(c.status == "fail" for c in self.checks):
            return True
        if self.model and any(c.status == "fail" for c in self.model.checks):
            return True
        if self.diagnoses and any(d.severity == "error" for d in self.diagnoses):
            return True
        if self.last_run and any(d.severity == "error" for d in self.last_run.diagnoses):
            return True
        return bool(self.live and self.live.failed)

    def failure_summary(self) -> str:
        parts = [c.name for c in self.checks if c.status == "fail"]
        if self.model:
            parts += [c.name for c in self.model.checks if c.status == "fail"]
        for diags in (self.diagnoses or [], self.last_run.diagnoses if self.last_run else []):
            parts += [d.code for d in diags if d.severity == "error"]
        if self.live:
            parts += [f.name for f in self.live.findings if f.status == "fail"]
        return ", ".join(dict.fromkeys(parts))


# --- inputs ------------------------------------------------------------------------------------


def read_log_text(spec: str, env: Mapping[str, str], stdin: Callable[[], str] | None = None) -> tuple[str, str]:
    """(label, text) for --log FILE | - | last."""
    if spec == "-":
        reader = stdin or sys.stdin.read
        return "-", reader()
    if spec == LAST_RUN:
        path = latest_run_log(env)
        if path is None:
            raise UsageError(
                f"no `vllmkit serve` run log found under {runs_dir(env)}",
                "pass the log explicitly: vllmkit doctor --log FILE (or --log - to read stdin)",
                code="no-run-log",
            )
    else:
        path = Path(spec).expanduser()
    try:
        return str(path), read_text(path, max_bytes=MAX_LOG_BYTES, over="tail", replace=True)
    except FileProblem as exc:
        if exc.kind == "folder":
            raise UsageError(f"{path} is a folder, not a log file", "pass the path of a vLLM log file inside it "
                             "(a `vllmkit serve` run folder holds vllm.log), or --log last",
                             code="log-is-folder") from None
        if exc.kind in ("missing", "device"):
            what = "log file not found" if exc.kind == "missing" else "a device, not a log file"
            raise UsageError(f"{what}: {path}", "pass the path of a vLLM log, or --log - to read stdin",
                             code="log-not-found") from None
        raise UsageError(exc.message, "check the path and its permissions", code="log-unreadable") from None


def fetch_text(url: str, timeout: float) -> str:
    req = urllib.request.Request(url, headers={"User-Agent": "vllmkit-doctor", "Accept": "text/plain"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return resp.read(32 << 20).decode("utf-8", errors="replace")


def _check_url(url: str) -> str:
    return server_url(url, "--url")


def _port_of(url: str) -> int | None:
    parsed = urllib.parse.urlparse(url)
    if parsed.port:
        return parsed.port
    return 443 if parsed.scheme == "https" else 80


# --- modes -------------------------------------------------------------------------------------


def log_section(spec: str, env: Mapping[str, str], stdin: Callable[[], str] | None = None, *,
                planner: PlannerHook | None = None) -> LogSection:
    label, text = read_log_text(spec, env, stdin)
    report: LogReport = diagnose_log(text, planner=planner)
    if not report.diagnoses and not looks_like_vllm_log(text, report):
        what = "empty" if not text.strip() else ("binary data" if _binary(text) else "not a vLLM log")
        raise UsageError(
            f"{label} is {what}: no line of it reads like vLLM's output",
            "pass the log vLLM printed (its stdout/stderr, e.g. `vllm serve ... 2>&1 | tee vllm.log`), or --log last",
            code="not-a-vllm-log",
        )
    return LogSection(log=label, facts=report.facts, diagnoses=report.diagnoses)


# vLLM's logger format ("INFO 01-23 15:49:08 [file.py:123] ...", vllm/logger.py _FORMAT), possibly
# after a process prefix ("(APIServer pid=1) ") or a container/timestamp prefix
_VLLM_LINE = re.compile(r"(?:^|\s)(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}\S*\s+\[?[\w./-]+\.py:\d+\]")


def _binary(text: str) -> bool:
    sample = text[:65536]
    bad = sum(1 for ch in sample if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\n\r\t"))
    return bad > len(sample) // 20


def looks_like_vllm_log(text: str, report: LogReport) -> bool:
    """True when the text is vLLM's output: a fact or diagnosis was recognised, or a line has vLLM's
    logger format, or it names vllm (a traceback through vllm/ modules)."""
    if report.diagnoses or report.facts.model_dump(exclude_defaults=True):
        return True
    if _binary(text):
        return False
    return bool(_VLLM_LINE.search(text[:4 << 20])) or "vllm" in text.lower()


def live_triage(
    url: str,
    env: Mapping[str, str],
    *,
    log_spec: str | None = None,
    interval_s: float = 0.0,
    fetch: Fetcher = fetch_text,
    sleep: Callable[[float], None] = time.sleep,
) -> Triage:
    base = _check_url(url)
    target = metrics_url(base)
    try:
        first = fetch(target, 10.0)
        second = None
        if interval_s > 0:
            sleep(interval_s)
            second = fetch(target, 10.0)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise LaunchError(
            f"cannot read {target}: {reason}",
            f"is the server up and is this its address? try `curl {base.rstrip('/')}/health`",
            code="metrics-unreachable",
        ) from None
    current, previous = (second, first) if second is not None else (first, None)
    facts, used = _facts_for_url(base, env, log_spec)
    result = triage(base, current, facts=facts, previous_text=previous, log_used=used)
    if not is_vllm_metrics(current):
        from vllmkit.doctor.metrics import Finding

        result.findings.insert(
            0,
            Finding(layer=0, name="metrics", status="fail", detail=f"{target} has no vllm:* metrics",
                    fix="Point --url at the vLLM server itself (its /metrics), not a proxy or another service."),
        )
    return result


def _facts_for_url(base: str, env: Mapping[str, str], log_spec: str | None) -> tuple[LogFacts | None, str | None]:
    """Startup-log facts for layer 1: --log when given, else the newest run whose log shows this port."""
    if log_spec:
        label, text = read_log_text(log_spec, env)
        return parse_log(text), label
    path = latest_run_log(env)
    if path is None:
        return None, None
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None, None
    facts = parse_log(text)
    if facts.port is not None and facts.port == _port_of(base):
        return facts, str(path)
    return None, None


def run_doctor(
    *,
    env: Mapping[str, str],
    model: str | None = None,
    log: str | None = None,
    url: str | None = None,
    host: str = "0.0.0.0",
    port: int = 8000,
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    source: str = "auto",
    revision: str | None = None,
    offline: bool = False,
    interval_s: float = 0.0,
    probes: EnvProbes | None = None,
    resolve: Callable[..., ModelMetadata] | None = None,
    fetch: Fetcher = fetch_text,
    stdin: Callable[[], str] | None = None,
    planner: PlannerHook | None = None,
) -> DoctorResult:
    """`planner`: exact alternatives for a KV cache too small (the CLI passes the planner's; see PlannerHook)."""
    result = DoctorResult()
    if log is not None and url is None:
        section = log_section(log, env, stdin, planner=planner)
        result.mode.append("log")
        result.log, result.facts, result.diagnoses = section.log, section.facts, section.diagnoses
        return result
    if url is not None:
        result.mode.append("url")
        result.live = live_triage(url, env, log_spec=log, interval_s=interval_s, fetch=fetch)
        return result

    meta: ModelMetadata | None = None
    if model is not None:
        if resolve is None:
            from vllmkit.hub.resolve import resolve_model as resolve
        meta = resolve(model, source=source, revision=revision, env=env)
    probes = probes or EnvProbes.default(env)
    if offline:
        probes.http_status = None
    request = EnvRequest(
        model=model,
        model_meta=meta,
        model_is_local=bool(meta and meta.source == "local"),
        host=host,
        port=port,
        tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size,
    )
    report: EnvReport = run_env_checks(request, probes)
    result.mode.append("env")
    result.checks = report.checks
    result.gpus = report.gpus.model_dump(mode="json")
    result.vllm = report.vllm.model_dump(mode="json") if report.vllm else None
    result.torch = report.torch.model_dump(mode="json") if report.torch else None
    if meta is not None:
        result.mode.append("model")
        result.model = ModelSection(id=meta.id, source=meta.source, checks=run_model_checks(meta))
    else:
        last = latest_run_log(env)
        if last is not None:
            result.last_run = log_section(str(last), env, planner=planner)
    return result
