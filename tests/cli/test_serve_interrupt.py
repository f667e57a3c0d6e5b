"""Ctrl-C while vLLM is still starting: `vllmkit serve` stops the whole server group at once and exits 130.

vLLM here is the fake (tests/unit/launch/fakevllm.py) in its "hang" mode: it logs its startup,
starts an "EngineCore" grandchild in its process group and then never becomes healthy; like the
real API server before it serves, it installs no signal handler, so SIGTERM ends only the front
process and the grandchild goes on. The CLI runs in a real subprocess and gets a real SIGINT, as
a terminal's Ctrl-C delivers it (the server is in its own session, so only vllmkit receives it).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.unit.launch.fakevllm import fake_env, install_fake_vllm
from tests.unit.launch.plans import cpu_plan

from vllmkit.launch import runs
from vllmkit.plan.planfile import save_plan

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ctrl_c_during_startup_stops_the_group_at_once_and_exits_130(tmp_path: Path) -> None:
    site = install_fake_vllm(tmp_path)
    req, plan = cpu_plan()
    plan_file = tmp_path / "plan.yaml"
    save_plan(plan_file, req, plan)
    env = fake_env(site, FAKE_VLLM_MODE="hang", VLLMKIT_STATE_DIR=str(tmp_path / "state"),
                   VLLMKIT_CACHE_DIR=str(tmp_path / "cache"), VLLMKIT_DATA_DIR=str(tmp_path / "data"))
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO / "src"), str(REPO)])
    cmd = [sys.executable, "-m", "vllmkit", "serve", str(plan_file), "--port", str(_free_port()), "--no-smoke"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    server_pid = None
    seen = []
    deadline = time.monotonic() + 60
    # wait until the fake is inside its startup (it printed its KV cache line and hangs)
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        match = re.search(r"started vLLM \(pid (\d+)", line)
        if match:
            server_pid = int(match.group(1))
        if server_pid and ("init engine" in line.lower() or "KV cache" in line):
            break
    assert server_pid is not None, "".join(seen)
    time.sleep(1.0)
    assert runs.group_members(server_pid), "the fake server group should be running"
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    took = time.monotonic() - started
    assert proc.returncode == 130, err
    assert "interrupted" in err
    # SIGTERM to the group, SIGKILL after INTERRUPT_GRACE_S (2 s): never vLLM's 30 s shutdown grace
    assert took < 10.0, f"Ctrl-C took {took:.1f} s"
    assert runs.group_members(server_pid) == []
