"""Doctor room: environment checks, diagnoses (log events and facts from the logs room -> cause + fix
with stable codes), model checks and live /metrics triage.

Public API used by other commands:
- diagnose_log(text, planner=None) -> LogReport   (`doctor --log`; the CLI's serve on a failed start)
- runs_dir(env), latest_run_log(env)             (serve writes <runs_dir>/<run-id>/vllm.log)
- run_env_checks(EnvRequest, EnvProbes) -> EnvReport
"""

from __future__ import annotations

from vllmkit.dirs import latest_run_log, runs_dir
from vllmkit.doctor.diagnose import Alternative, Diagnosis, LogReport, PlannerHook, diagnose_log
from vllmkit.doctor.envchecks import Check, EnvProbes, EnvReport, EnvRequest, run_env_checks

__all__ = [
    "Alternative",
    "Check",
    "Diagnosis",
    "EnvProbes",
    "EnvReport",
    "EnvRequest",
    "LogReport",
    "PlannerHook",
    "diagnose_log",
    "latest_run_log",
    "run_env_checks",
    "runs_dir",
]
