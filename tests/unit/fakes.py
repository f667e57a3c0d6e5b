"""Test doubles for the doctor env checks: a fake PATH from fakebin/<scenario>, a scripted python
that answers the vLLM/torch probes with given JSON, and probe functions that never touch the machine."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from vllmkit.doctor.envchecks import EnvProbes
from vllmkit.hardware.detect import make_runner, make_which

FAKEBIN = Path(__file__).parent / "fakebin"
GIB = 1 << 30


def fake_path(tmp: Path, scenario: str) -> Path:
    """Copy fakebin/<scenario> to tmp (restoring the exec bits) and return the folder."""
    dest = tmp / f"bin-{scenario}"
    dest.mkdir(parents=True, exist_ok=True)
    for src in (FAKEBIN / scenario).iterdir():
        if src.name.startswith("."):
            continue
        target = dest / src.name
        shutil.copy(src, target)
        target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return dest


def _sh(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def fake_python(folder: Path, *, vllm: dict[str, Any], torch: dict[str, Any], vllm_version_out: str | None = None) -> Path:
    """A `python` that prints the probe JSON: torch's when the -c code imports torch, else vLLM's.
    With vllm_version_out, a `vllm` script beside it answers `vllm --version`."""
    folder.mkdir(parents=True, exist_ok=True)
    py = folder / "python"
    torch_line = "VLLMKIT_PROBE " + json.dumps(torch)
    vllm_line = "VLLMKIT_PROBE " + json.dumps(vllm)
    _sh(
        py,
        'case "$2" in\n'
        "  *'import torch'*) cat <<'PROBE_EOF'\n"
        f"{torch_line}\n"
        "PROBE_EOF\n"
        "  ;;\n"
        "  *) cat <<'PROBE_EOF'\n"
        f"{vllm_line}\n"
        "PROBE_EOF\n"
        "  ;;\n"
        "esac\n",
    )
    if vllm_version_out is not None:
        _sh(folder / "vllm", f'echo "{vllm_version_out}"\n')
    return py


def env_for(path_dirs: list[Path], tmp: Path, **extra: str) -> dict[str, str]:
    """An environment whose PATH holds only the fake tools (+ /bin for sh)."""
    env = {
        "PATH": os.pathsep.join([*map(str, path_dirs), "/usr/bin", "/bin"]),
        "HOME": str(tmp / "home"),
        "HF_HUB_OFFLINE": "1",
        "VLLMKIT_GPU_DETECT": "cli",
        "VLLMKIT_STATE_DIR": str(tmp / "state"),
    }
    env.update(extra)
    return env


def probes_for(env: dict[str, str], python: str, **overrides: Any) -> EnvProbes:
    probes = EnvProbes(
        env=env,
        which=make_which(env),
        run=make_runner(env),
        python=python,
        http_status=None,
        port_free=lambda host, port: True,
        disk_free=lambda path: 500 * GIB,
        rlimit_nofile=lambda: (1048576, 1048576),
        shm_size=lambda: 64 * GIB,
        platform_info=lambda: {"system": "Linux", "release": "6.8.0", "machine": "x86_64"},
        use_gpu_libraries=False,
        run_console=True,
    )
    for key, value in overrides.items():
        setattr(probes, key, value)
    return probes


# Probe answers for the scenarios (the fields _VLLM_PROBE / _TORCH_PROBE print).
VLLM_CUDA = {
    "installed": True, "python_version": "3.12.3", "dist": "vllm", "version": "0.11.0", "console_metadata_ok": True,
    "module_entry": True, "transformers_version": "4.57.1", "transformers_requirement": "transformers>=4.56.0",
    "transformers_satisfied": True, "torch_dist_version": "2.8.0+cu128",
}
TORCH_CUDA_OK = {"installed": True, "version": "2.8.0+cu128", "cuda": "12.8", "hip": None, "gpu_available": True,
                 "device_count": 2}
TORCH_CUDA_NO_GPU = {"installed": True, "version": "2.8.0+cu128", "cuda": "12.8", "hip": None, "gpu_available": False,
                     "device_count": 0}
TORCH_ROCM = {"installed": True, "version": "2.7.0+rocm6.3", "cuda": None, "hip": "6.3.42131", "gpu_available": True,
              "device_count": 2}
VLLM_ROCM = {**VLLM_CUDA, "version": "0.11.0+rocm700", "torch_dist_version": "2.7.0+rocm6.3"}
VLLM_MISSING = {"installed": False, "python_version": "3.12.3"}
TORCH_MISSING = {"installed": False, "error": "ModuleNotFoundError(\"No module named 'torch'\")"}
