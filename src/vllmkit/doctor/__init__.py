"""Doctor room: environment checks, the vLLM log parser (text -> events/facts), diagnoses
(events -> cause + fix with stable codes), model checks and live /metrics triage.

Public API used by other commands:
- parse_log(text) -> LogFacts                (check-log)
- diagnose_log(text) -> LogReport            (serve, on a failed start)
- runs_dir(env), latest_run_log(env)         (serve writes <runs_dir>/<run-id>/vllm.log)
- run_env_checks(EnvRequest, EnvProbes) -> EnvReport
"""

from __future__ import annotations

from vllmkit.doctor.diagnose import Alternative, Diagnosis, LogReport, diagnose_log, suggest_with_planner
from vllmkit.doctor.envchecks import Check, EnvProbes, EnvReport, EnvRequest, run_env_checks
from vllmkit.doctor.logparse import LogFacts, parse_log
from vllmkit.doctor.paths import latest_run_log, runs_dir

__all__ = [
    "Alternative",
    "Check",
    "Diagnosis",
    "EnvProbes",
    "EnvReport",
    "EnvRequest",
    "LogFacts",
    "LogReport",
    "diagnose_log",
    "latest_run_log",
    "parse_log",
    "run_env_checks",
    "runs_dir",
    "suggest_with_planner",
]
