"""Detect the local GPUs: NVML (nvidia-ml-py) / amdsmi when importable, else the vendor CLIs.

CLI formats parsed here (samples in tests/unit/doctor/fakebin and the issues they came from):
- `nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,memory.free,driver_version,compute_cap
  --format=csv,noheader,nounits`: one line per GPU, ", "-separated, MiB without unit
  ("7.0, Default, 570.86.15, NVIDIA TITAN V, 0" style rows: triton-inference-server/server#8070;
  H100 total 81559 MiB: modal-labs/modal-client#2797). Drivers before ~510 reject compute_cap
  ("Field \"compute_cap\" is not a valid field to query": huggingface/candle#733), so we retry without.
- `nvidia-smi` (no arguments): the banner carries "CUDA Version: 12.4" (the driver's CUDA).
- `nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,noheader,nounits`
  (utkuozdemir/nvidia_gpu_exporter#108).
- `rocm-smi --showproductname --showmeminfo vram --json`: {"card0": {"VRAM Total Memory (B)": "...",
  "VRAM Total Used Memory (B)": "...", "Card Series": "...", "GFX Version": "gfx1100", ...}}
  (marimo-team/marimo#9237; key case varies: "Card series" in older releases, easybuild#3978).
- `rocminfo`: "Agent N" blocks with "Name: gfx942", "Marketing Name: AMD Instinct MI300X",
  "Device Type: GPU" (ROCm/legacy-rocm-build#4750).
- `rocm-smi --showpids`: "KFD process information:" table PID / PROCESS NAME / GPU(s) / VRAM USED
  (ROCm/ROC-smi#60, ROCm/rocm-systems#4405).
- `rocm-smi --showdriverversion --json`: {"system": {"Driver version": "6.8.5"}}; ROCm release from
  $ROCM_PATH/.info/version (default /opt/rocm).

Every subprocess runs with a timeout; a missing tool, a timeout or garbage output gives an empty,
clean result with a note, never an exception.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from vllmkit.proc import Runner, Which, make_runner, make_which
from vllmkit.units import MIB

DEFAULT_TIMEOUT_S = 10.0


class GpuDevice(BaseModel):
    index: int
    vendor: Literal["nvidia", "amd"]
    name: str
    uuid: str | None = None
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    memory_free_bytes: int | None = None
    driver_version: str | None = None
    compute_capability: str | None = None  # NVIDIA "9.0"
    gfx_target: str | None = None  # AMD "gfx942"


class GpuProcess(BaseModel):
    pid: int
    name: str
    used_bytes: int | None = None
    gpu_index: int | None = None
    gpu_uuid: str | None = None


class GpuDetection(BaseModel):
    vendor: Literal["nvidia", "amd", "mixed", "none"] = "none"
    gpus: list[GpuDevice] = Field(default_factory=list)
    processes: list[GpuProcess] = Field(default_factory=list)
    cuda_driver_version: str | None = None  # highest CUDA the driver supports
    rocm_version: str | None = None
    sources: list[str] = Field(default_factory=list)  # nvml, nvidia-smi, amdsmi, rocm-smi, rocminfo
    notes: list[str] = Field(default_factory=list)


# --- plumbing ----------------------------------------------------------------------------------




def _num(value: str | None) -> float | None:
    if value is None:
        return None
    v = value.strip()
    if not v or v.startswith("[") or v.upper() in ("N/A", "UNKNOWN"):
        return None
    try:
        return float(v)
    except ValueError:
        return None


def _mib(value: str | None) -> int | None:
    n = _num(value)
    return None if n is None else int(n * MIB)


def _int_bytes(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    v = value.strip()
    return None if not v or v.startswith("[") or v.upper() in ("N/A", "UNKNOWN") else v


# --- NVIDIA: nvidia-smi ------------------------------------------------------------------------

NVIDIA_QUERY = "index,uuid,name,memory.total,memory.used,memory.free,driver_version,compute_cap"
NVIDIA_QUERY_OLD = "index,uuid,name,memory.total,memory.used,memory.free,driver_version"


def parse_nvidia_smi_gpus(text: str) -> list[GpuDevice]:
    gpus: list[GpuDevice] = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 7 or not parts[0].isdigit():
            continue
        total, used, free = _mib(parts[3]), _mib(parts[4]), _mib(parts[5])
        gpus.append(
            GpuDevice(
                index=int(parts[0]),
                vendor="nvidia",
                uuid=_clean(parts[1]),
                name=parts[2],
                memory_total_bytes=total,
                memory_used_bytes=used,
                memory_free_bytes=free,
                driver_version=_clean(parts[6]),
                compute_capability=_clean(parts[7]) if len(parts) > 7 else None,
            )
        )
    return gpus


def parse_nvidia_smi_apps(text: str, gpus: Sequence[GpuDevice]) -> list[GpuProcess]:
    by_uuid = {g.uuid: g.index for g in gpus if g.uuid}
    procs: list[GpuProcess] = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4 or not parts[1].isdigit():
            continue
        procs.append(
            GpuProcess(
                gpu_uuid=parts[0],
                gpu_index=by_uuid.get(parts[0]),
                pid=int(parts[1]),
                name=",".join(parts[2:-1]).strip(),
                used_bytes=_mib(parts[-1]),
            )
        )
    return procs


def parse_cuda_version(banner: str) -> str | None:
    m = re.search(r"CUDA Version\s*:?\s*([\d.]+)", banner)
    return m.group(1) if m else None


def _nvidia_cli(run: Runner, det: GpuDetection, timeout: float) -> None:
    res = run(["nvidia-smi", f"--query-gpu={NVIDIA_QUERY}", "--format=csv,noheader,nounits"], timeout)
    if res is not None and res.returncode != 0 and "compute_cap" in (res.stdout + res.stderr):
        res = run(["nvidia-smi", f"--query-gpu={NVIDIA_QUERY_OLD}", "--format=csv,noheader,nounits"], timeout)
    if res is None:
        det.notes.append("nvidia-smi did not answer (timed out or could not start)")
        return
    if res.returncode != 0:
        first = (res.stdout or res.stderr).strip().splitlines()
        det.notes.append(f"nvidia-smi failed (exit {res.returncode}): {first[0] if first else ''}".strip())
        return
    gpus = parse_nvidia_smi_gpus(res.stdout)
    if not gpus:
        det.notes.append("nvidia-smi listed no GPUs")
        return
    det.gpus.extend(gpus)
    det.sources.append("nvidia-smi")
    banner = run(["nvidia-smi"], timeout)
    if banner is not None and banner.returncode == 0:
        det.cuda_driver_version = parse_cuda_version(banner.stdout)
    apps = run(
        ["nvidia-smi", "--query-compute-apps=gpu_uuid,pid,process_name,used_memory", "--format=csv,noheader,nounits"],
        timeout,
    )
    if apps is not None and apps.returncode == 0:
        det.processes.extend(parse_nvidia_smi_apps(apps.stdout, gpus))


# --- NVIDIA: NVML ------------------------------------------------------------------------------


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _nvidia_nvml(nvml: Any, det: GpuDetection) -> bool:
    """nvidia-ml-py (`import pynvml`). Returns False when NVML cannot initialise."""
    try:
        nvml.nvmlInit()
    except Exception:  # NVMLError (no driver, no library): fall back to the CLI
        return False
    try:
        driver = None
        with contextlib.suppress(Exception):
            driver = _text(nvml.nvmlSystemGetDriverVersion())
        with contextlib.suppress(Exception):
            cuda = int(nvml.nvmlSystemGetCudaDriverVersion())  # e.g. 12040
            det.cuda_driver_version = f"{cuda // 1000}.{(cuda % 1000) // 10}"
        count = int(nvml.nvmlDeviceGetCount())
        for i in range(count):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            mem = nvml.nvmlDeviceGetMemoryInfo(h)
            cc = None
            with contextlib.suppress(Exception):
                major, minor = nvml.nvmlDeviceGetCudaComputeCapability(h)
                cc = f"{major}.{minor}"
            uuid = None
            with contextlib.suppress(Exception):
                uuid = _text(nvml.nvmlDeviceGetUUID(h))
            det.gpus.append(
                GpuDevice(
                    index=i,
                    vendor="nvidia",
                    name=_text(nvml.nvmlDeviceGetName(h)),
                    uuid=uuid,
                    memory_total_bytes=int(mem.total),
                    memory_used_bytes=int(mem.used),
                    memory_free_bytes=int(mem.free),
                    driver_version=driver,
                    compute_capability=cc,
                )
            )
            with contextlib.suppress(Exception):
                for p in nvml.nvmlDeviceGetComputeRunningProcesses(h):
                    name = ""
                    with contextlib.suppress(Exception):
                        name = _text(nvml.nvmlSystemGetProcessName(p.pid))
                    used = getattr(p, "usedGpuMemory", None)
                    det.processes.append(
                        GpuProcess(pid=int(p.pid), name=name, used_bytes=int(used) if used else None, gpu_index=i, gpu_uuid=uuid)
                    )
        det.sources.append("nvml")
        return bool(det.gpus)
    except Exception as exc:  # any NVML error mid-way: let the CLI path try
        det.gpus = [g for g in det.gpus if g.vendor != "nvidia"]
        det.notes.append(f"NVML failed: {exc}")
        return False
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


# --- AMD ---------------------------------------------------------------------------------------


def _card_number(key: str) -> int:
    m = re.search(r"(\d+)$", key)
    return int(m.group(1)) if m else 1 << 30


def _field(card: Mapping[str, Any], *names: str) -> str | None:
    lowered = {k.lower(): v for k, v in card.items()}
    for n in names:
        v = lowered.get(n.lower())
        if v is not None and str(v).strip() and str(v).strip().upper() not in ("N/A", "UNKNOWN"):
            return str(v).strip()
    return None


def parse_rocm_smi_json(text: str) -> list[GpuDevice]:
    start = text.find("{")
    if start < 0:
        return []
    try:
        data = json.loads(text[start:])
    except (ValueError, RecursionError):
        return []
    if not isinstance(data, dict):
        return []
    if "system" in data and isinstance(data["system"], dict) and any(k.startswith("card") for k in data["system"]):
        data = data["system"]
    cards = sorted((k for k, v in data.items() if k.lower().startswith("card") and isinstance(v, dict)), key=_card_number)
    gpus: list[GpuDevice] = []
    for pos, key in enumerate(cards):
        card = data[key]
        total = _int_bytes(_field(card, "VRAM Total Memory (B)"))
        used = _int_bytes(_field(card, "VRAM Total Used Memory (B)"))
        series = _field(card, "Card Series", "Card series", "Device Name", "Card Model", "Card model")
        if series and re.fullmatch(r"0x[0-9a-fA-F]+", series):
            series = _field(card, "Device Name") or series  # old releases print the device id here
        gfx = _field(card, "GFX Version")
        gpus.append(
            GpuDevice(
                index=pos,
                vendor="amd",
                name=series or key,
                uuid=_field(card, "Unique ID", "GUID"),
                memory_total_bytes=total,
                memory_used_bytes=used,
                memory_free_bytes=(total - used) if total is not None and used is not None else None,
                gfx_target=gfx if gfx and gfx.startswith("gfx") else None,
            )
        )
    return gpus


def parse_rocminfo(text: str) -> list[dict[str, str]]:
    """GPU agents in order: {"name": "gfx942", "marketing_name": "AMD Instinct MI300X", "device_type": "GPU"}."""
    blocks = re.split(r"^\s*Agent \d+\s*$", text, flags=re.M)[1:]
    agents: list[dict[str, str]] = []
    for block in blocks:
        fields: dict[str, str] = {}
        for line in block.splitlines():
            # the agent's own fields are indented by two spaces; ISA/pool entries deeper
            m = re.match(r"^\s{0,4}(Name|Marketing Name|Device Type):\s*(.*?)\s*$", line)
            if m:
                fields.setdefault(m.group(1).lower().replace(" ", "_"), m.group(2))
        if fields.get("device_type") == "GPU":
            agents.append(fields)
    return agents


def parse_rocm_smi_pids(text: str) -> list[GpuProcess]:
    procs: list[GpuProcess] = []
    in_table = False
    for line in text.splitlines():
        if "KFD process information" in line:
            in_table = True
            continue
        if not in_table:
            continue
        if line.strip().startswith("PID") or not line.strip():
            continue
        if line.strip().startswith("="):
            break
        parts = line.split()  # tab- or space-separated depending on the release
        if len(parts) < 4 or not parts[0].strip().isdigit():
            continue
        procs.append(GpuProcess(pid=int(parts[0]), name=parts[1].strip(), used_bytes=_int_bytes(parts[3])))
    return procs


def read_rocm_version(env: Mapping[str, str]) -> str | None:
    root = Path(env.get("ROCM_PATH") or "/opt/rocm")
    try:
        text = (root / ".info" / "version").read_text().strip()
    except OSError:
        return None
    return text.split("-")[0] or None


def _amd_cli(run: Runner, which: Which, det: GpuDetection, env: Mapping[str, str], timeout: float) -> None:
    gpus: list[GpuDevice] = []
    if which("rocm-smi"):
        res = run(["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"], timeout)
        if res is None:
            det.notes.append("rocm-smi did not answer (timed out or could not start)")
        else:
            # rocm-smi exits 0 even when it fails; the parsed output is the signal
            gpus = parse_rocm_smi_json(res.stdout)
            if gpus:
                det.sources.append("rocm-smi")
            else:
                det.notes.append("rocm-smi listed no GPUs")
    agents: list[dict[str, str]] = []
    if which("rocminfo"):
        info = run(["rocminfo"], timeout)
        if info is not None and info.returncode == 0:
            agents = parse_rocminfo(info.stdout)
            if agents:
                det.sources.append("rocminfo")
    if not gpus and agents:
        gpus = [
            GpuDevice(index=i, vendor="amd", name=a.get("marketing_name") or a.get("name", "AMD GPU"), gfx_target=a.get("name"))
            for i, a in enumerate(agents)
        ]
    for gpu, agent in zip(gpus, agents, strict=False):  # rocminfo may list fewer agents than cards
        if gpu.gfx_target is None and agent.get("name", "").startswith("gfx"):
            gpu.gfx_target = agent["name"]
        marketing = agent.get("marketing_name")
        if marketing and (gpu.name.startswith("card") or re.fullmatch(r"0x[0-9a-fA-F]+", gpu.name)):
            gpu.name = marketing
    if not gpus:
        return
    if which("rocm-smi"):
        drv = run(["rocm-smi", "--showdriverversion", "--json"], timeout)
        if drv is not None:
            version = _driver_from_json(drv.stdout)
            for g in gpus:
                g.driver_version = g.driver_version or version
        pids = run(["rocm-smi", "--showpids"], timeout)
        if pids is not None:
            det.processes.extend(parse_rocm_smi_pids(pids.stdout))
    det.rocm_version = read_rocm_version(env)
    det.gpus.extend(gpus)


def _driver_from_json(text: str) -> str | None:
    start = text.find("{")
    if start < 0:
        return None
    try:
        data = json.loads(text[start:])
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    for section in data.values():
        if isinstance(section, dict):
            v = _field(section, "Driver version")
            if v:
                return v
    return None


def _amd_amdsmi(amdsmi: Any, det: GpuDetection, env: Mapping[str, str]) -> bool:
    """amdsmi Python bindings (ROCm 6+). Field names vary by release: any error -> CLI fallback."""
    try:
        amdsmi.amdsmi_init()
    except Exception:
        return False
    try:
        handles = amdsmi.amdsmi_get_processor_handles()
        for i, h in enumerate(handles):
            asic = amdsmi.amdsmi_get_gpu_asic_info(h)
            vram = amdsmi.amdsmi_get_gpu_vram_usage(h)  # MB
            total = int(vram["vram_total"]) * MIB
            used = int(vram["vram_used"]) * MIB
            driver = None
            with contextlib.suppress(Exception):
                driver = amdsmi.amdsmi_get_gpu_driver_info(h).get("driver_version")
            gfx = asic.get("target_graphics_version")
            det.gpus.append(
                GpuDevice(
                    index=i,
                    vendor="amd",
                    name=str(asic.get("market_name") or "AMD GPU"),
                    memory_total_bytes=total,
                    memory_used_bytes=used,
                    memory_free_bytes=total - used,
                    driver_version=driver,
                    gfx_target=str(gfx) if gfx else None,
                )
            )
        det.sources.append("amdsmi")
        det.rocm_version = read_rocm_version(env)
        return bool(handles)
    except Exception as exc:
        det.gpus = [g for g in det.gpus if g.vendor != "amd"]
        det.notes.append(f"amdsmi failed: {exc}")
        return False
    finally:
        with contextlib.suppress(Exception):
            amdsmi.amdsmi_shut_down()


def _import_optional(name: str) -> Any | None:
    try:
        return importlib.import_module(name)
    except Exception:  # ImportError, or a broken vendor library raising at import
        return None


# --- entry point -------------------------------------------------------------------------------


def detect_gpus(
    env: Mapping[str, str],
    *,
    which: Which | None = None,
    run: Runner | None = None,
    use_libraries: bool | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> GpuDetection:
    """Local GPUs, their memory and the processes holding it.

    use_libraries: try NVML / amdsmi first (default: yes unless VLLMKIT_GPU_DETECT=cli, so tests with
    a fake PATH are not shadowed by a real NVML).
    """
    which = which or make_which(env)
    run = run or make_runner(env)
    if use_libraries is None:
        use_libraries = env.get("VLLMKIT_GPU_DETECT", "auto").lower() != "cli"
    det = GpuDetection()

    nvidia_done = False
    if use_libraries:
        nvml = _import_optional("pynvml")
        if nvml is not None:
            nvidia_done = _nvidia_nvml(nvml, det)
    if not nvidia_done and which("nvidia-smi"):
        _nvidia_cli(run, det, timeout)

    amd_done = False
    if use_libraries:
        amdsmi = _import_optional("amdsmi")
        if amdsmi is not None:
            amd_done = _amd_amdsmi(amdsmi, det, env)
    if not amd_done and (which("rocm-smi") or which("rocminfo")):
        _amd_cli(run, which, det, env, timeout)

    vendors = {g.vendor for g in det.gpus}
    det.vendor = "mixed" if len(vendors) > 1 else (next(iter(vendors)) if vendors else "none")  # type: ignore[assignment]
    return det
