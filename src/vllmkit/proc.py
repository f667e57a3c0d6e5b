"""Running external tools (nvidia-smi, rocm-smi, a target Python) with an injected environment.

One place for the runner / which pair that detection code takes as parameters, so tests pass a fake
PATH or a scripted runner instead of patching modules. Stdlib only."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence

Runner = Callable[[Sequence[str], float], "subprocess.CompletedProcess[str] | None"]
Which = Callable[[str], "str | None"]


def make_which(env: Mapping[str, str]) -> Which:
    path = env.get("PATH", "")

    def which(name: str) -> str | None:
        return shutil.which(name, path=path)

    return which


def make_runner(env: Mapping[str, str]) -> Runner:
    """Run argv with `env` (its PATH finds the tool); None when absent, failing to start or timing out."""
    which = make_which(env)

    def run(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str] | None:
        exe = argv[0] if "/" in argv[0] else which(argv[0])
        if exe is None:
            return None
        try:
            return subprocess.run(
                [exe, *argv[1:]],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                check=False,
                errors="replace",
            )
        except (OSError, subprocess.SubprocessError, ValueError):
            return None

    return run
