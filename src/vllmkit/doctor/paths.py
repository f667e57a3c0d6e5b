"""Where `vllmkit serve` keeps its runs, and which run log `doctor --log` reads by default.

One function owns the layout so the serve helper (which writes) and doctor (which reads) agree:
    runs_dir(env) / <run-id> / vllm.log
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from vllmkit.dirs import user_dir

RUN_LOG_NAME = "vllm.log"


def state_dir(env: Mapping[str, str]) -> Path:
    """vllmkit's state folder: $VLLMKIT_STATE_DIR, else $XDG_STATE_HOME/vllmkit,
    else ~/.local/state/vllmkit (the XDG base-directory default for state)."""
    return user_dir("state", env)

def runs_dir(env: Mapping[str, str]) -> Path:
    """Folder holding one sub-folder per `vllmkit serve` run (<run-id>/vllm.log)."""
    return state_dir(env) / "runs"


def latest_run_log(env: Mapping[str, str]) -> Path | None:
    """The newest run's vllm.log (by modification time), or None when there is no run yet."""
    root = runs_dir(env)
    try:
        candidates = [p / RUN_LOG_NAME for p in root.iterdir() if (p / RUN_LOG_NAME).is_file()]
    except OSError:
        return None
    if not candidates:
        return None
    return max(candidates, key=lambda p: (p.stat().st_mtime, p.parent.name))
