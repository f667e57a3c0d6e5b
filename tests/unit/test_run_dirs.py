"""Where serve runs live, and which one doctor reads by default."""

from __future__ import annotations

import os
from pathlib import Path

from vllmkit.dirs import latest_run_log, runs_dir


def test_runs_dir_precedence(tmp_path: Path) -> None:
    assert runs_dir({"VLLMKIT_STATE_DIR": str(tmp_path / "s"), "XDG_STATE_HOME": "/x"}) == tmp_path / "s" / "runs"
    assert runs_dir({"XDG_STATE_HOME": str(tmp_path / "xdg")}) == tmp_path / "xdg" / "vllmkit" / "runs"
    # XDG base-directory default for state: ~/.local/state
    assert runs_dir({"HOME": str(tmp_path)}) == tmp_path / ".local" / "state" / "vllmkit" / "runs"


def test_latest_run_log_by_mtime(tmp_path: Path) -> None:
    env = {"VLLMKIT_STATE_DIR": str(tmp_path)}
    assert latest_run_log(env) is None
    for i, name in enumerate(["20260101-a", "20260102-b", "20251231-c"]):
        log = tmp_path / "runs" / name / "vllm.log"
        log.parent.mkdir(parents=True)
        log.write_text(name)
        os.utime(log, (1_700_000_000 + i * 10, 1_700_000_000 + i * 10))
    (tmp_path / "runs" / "no-log-here").mkdir()
    assert latest_run_log(env) == tmp_path / "runs" / "20251231-c" / "vllm.log"
