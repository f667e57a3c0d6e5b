"""Waits show a status line on a terminal's stderr, and nothing of it reaches stdout (the --json envelope
stays one parseable document). The process runs for real, its stderr on a pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path


def _run_with_tty_stderr(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    exe = Path(sys.executable).with_name("vllmkit")
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([str(exe), *args], stdout=subprocess.PIPE, stderr=slave, env=env)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed its side
                break
            if not data:
                break
            chunks.append(data)
        out = proc.stdout.read().decode() if proc.stdout else ""
        code = proc.wait(timeout=120)
    finally:
        os.close(master)
    return code, out, b"".join(chunks).decode(errors="replace")


def test_status_line_on_a_terminal_and_a_clean_json_stdout(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLMKIT_CACHE_DIR": str(tmp_path / "cache"),
           "VLLMKIT_DATA_DIR": str(tmp_path / "data"), "TERM": "xterm"}
    env.pop("VLLMKIT_NO_PROGRESS", None)
    code, out, err = _run_with_tty_stderr(["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--json"], env)
    assert code == 0, err
    assert "planning Qwen/Qwen3-8B" in err
    doc = json.loads(out)  # exactly one document: no spinner frames, no status text
    assert doc["command"] == "plan" and doc["status"] == "ok"


def test_no_status_line_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("vllmkit")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLMKIT_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([str(exe), "plan", "Qwen/Qwen3-8B", "--gpu", "h100"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0
    assert "planning" not in proc.stderr  # a log file or a pipe gets no spinner frames
