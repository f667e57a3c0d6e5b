"""vllmkit's user folders, from an environment mapping (never read at import time).

kind     override             XDG variable      default
cache    VLLMKIT_CACHE_DIR    XDG_CACHE_HOME    ~/.cache/vllmkit
data     VLLMKIT_DATA_DIR     XDG_DATA_HOME     ~/.local/share/vllmkit
state    VLLMKIT_STATE_DIR    XDG_STATE_HOME    ~/.local/state/vllmkit
config   (none)               XDG_CONFIG_HOME   ~/.config/vllmkit
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

Kind = Literal["cache", "data", "state", "config"]

_SPEC: dict[str, tuple[str | None, str, tuple[str, ...]]] = {
    "cache": ("VLLMKIT_CACHE_DIR", "XDG_CACHE_HOME", (".cache",)),
    "data": ("VLLMKIT_DATA_DIR", "XDG_DATA_HOME", (".local", "share")),
    "state": ("VLLMKIT_STATE_DIR", "XDG_STATE_HOME", (".local", "state")),
    "config": (None, "XDG_CONFIG_HOME", (".config",)),
}


def home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def expand(value: str, env: Mapping[str, str]) -> Path:
    """`~` is the HOME of `env` (the environment the command runs with), not of this process."""
    if value.startswith("~"):
        return home(env) / value[1:].lstrip("/")
    return Path(value)


def user_dir(kind: Kind, env: Mapping[str, str]) -> Path:
    override, xdg_var, default = _SPEC[kind]
    if override and env.get(override):
        return expand(env[override], env)
    if env.get(xdg_var):
        return expand(env[xdg_var], env) / "vllmkit"
    return home(env).joinpath(*default, "vllmkit")


# --- serve runs: `vllmkit serve` writes, `vllmkit doctor --log` reads (one layout, owned here so that
# neither launch nor doctor imports the other):  runs_dir(env) / <run-id> / vllm.log

RUN_LOG_NAME = "vllm.log"


def runs_dir(env: Mapping[str, str]) -> Path:
    """Folder holding one sub-folder per `vllmkit serve` run (<run-id>/vllm.log), in the state folder."""
    return user_dir("state", env) / "runs"


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


def write_text_atomic(path: Path, text: str, *, mode: int = 0o666) -> None:
    """Write `path` (UTF-8) whole or not at all, through a temp file of its own in the same folder:
    two writers of the same file (a foreground serve and `vllmkit stop` ending the same run; two
    processes filling the same cache entry) must not rename each other's temp file away
    (FileNotFoundError) or publish a half-written one. `mode` before the umask (0o666: as open()).
    Raises OSError like open()."""
    import uuid  # only writers pay for it

    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
