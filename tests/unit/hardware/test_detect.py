"""GPU detection with scripted nvidia-smi / rocm-smi / rocminfo on a fake PATH (formats and sources in
the scripts' comments), a fake NVML module, and machines without any GPU tool."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

from tests.unit.fakes import env_for, fake_path

from vllmkit.hardware.detect import (
    GpuDetection,
    _nvidia_nvml,
    detect_gpus,
    make_runner,
    parse_nvidia_smi_gpus,
    parse_rocm_smi_json,
    parse_rocminfo,
)

MIB = 1 << 20


def test_nvidia_smi_fake_path(tmp_path: Path) -> None:
    env = env_for([fake_path(tmp_path, "nvidia")], tmp_path)
    det = detect_gpus(env)
    assert det.vendor == "nvidia" and det.sources == ["nvidia-smi"]
    assert [g.name for g in det.gpus] == ["NVIDIA H100 80GB HBM3"] * 2
    g0, g1 = det.gpus
    assert g0.memory_total_bytes == 81559 * MIB  # nvidia-smi prints MiB (nounits)
    assert g1.memory_free_bytes == 3069 * MIB
    assert (g0.compute_capability, g0.driver_version) == ("9.0", "550.54.15")
    assert det.cuda_driver_version == "12.4"  # from the banner
    assert len(det.processes) == 1
    p = det.processes[0]
    assert (p.pid, p.name, p.used_bytes, p.gpu_index) == (4242, "/usr/bin/python3", 78000 * MIB, 1)


def test_amd_fake_path(tmp_path: Path) -> None:
    env = env_for([fake_path(tmp_path, "amd")], tmp_path, ROCM_PATH=str(tmp_path / "rocm"))
    (tmp_path / "rocm" / ".info").mkdir(parents=True)
    (tmp_path / "rocm" / ".info" / "version").write_text("6.2.0-66\n")
    det = detect_gpus(env)
    assert det.vendor == "amd"
    assert det.sources == ["rocm-smi", "rocminfo"]
    assert [g.name for g in det.gpus] == ["AMD Instinct MI300X"] * 2
    assert det.gpus[0].memory_total_bytes == 206141652992
    assert det.gpus[0].memory_free_bytes == 206141652992 - 297771008
    assert det.gpus[0].gfx_target == "gfx942"
    assert det.gpus[0].driver_version == "6.8.5"
    assert det.rocm_version == "6.2.0"
    assert [(p.pid, p.name, p.used_bytes) for p in det.processes] == [(1168514, "pt_main_thread", 177386942464)]


def test_no_gpu_tools(tmp_path: Path) -> None:
    env = env_for([fake_path(tmp_path, "none")], tmp_path)
    det = detect_gpus(env)
    assert det == GpuDetection()


def test_failing_nvidia_smi_is_a_note(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    # the text nvidia-smi prints when the driver is not loaded (exit 9)
    smi.write_text(
        "#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\"\nexit 9\n"
    )
    smi.chmod(0o755)
    det = detect_gpus(env_for([bin_dir], tmp_path))
    assert det.gpus == [] and det.vendor == "none"
    assert any("nvidia-smi failed (exit 9)" in n for n in det.notes)


def test_hanging_tool_times_out(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\nsleep 5\n")
    smi.chmod(0o755)
    det = detect_gpus(env_for([bin_dir], tmp_path), timeout=0.5)
    assert det.gpus == [] and any("did not answer" in n for n in det.notes)


def test_old_driver_without_compute_cap_is_retried(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    # drivers around 470 reject the field (huggingface/candle#733)
    smi.write_text(
        "#!/bin/sh\ncase \"$*\" in\n"
        "  *compute_cap*) echo 'Field \"compute_cap\" is not a valid field to query.'; exit 2 ;;\n"
        "  *--query-gpu=*) echo '0, GPU-1, Tesla T4, 15360, 0, 15109, 470.182.03' ;;\n"
        "  *) exit 0 ;;\nesac\n"
    )
    smi.chmod(0o755)
    det = detect_gpus(env_for([bin_dir], tmp_path))
    assert [(g.name, g.memory_total_bytes, g.compute_capability) for g in det.gpus] == [("Tesla T4", 15360 * MIB, None)]


def test_parsers_tolerate_garbage() -> None:
    assert parse_nvidia_smi_gpus("garbage\n\n[N/A], x") == []
    assert parse_rocm_smi_json("WARNING: no GPUs\n") == []
    assert parse_rocm_smi_json("{not json") == []
    assert parse_rocminfo("") == []
    # [N/A] memory fields become None
    g = parse_nvidia_smi_gpus("0, GPU-1, NVIDIA A100-SXM4-80GB, [N/A], [N/A], [N/A], 535.104.05, 8.0")[0]
    assert g.memory_total_bytes is None and g.compute_capability == "8.0"


def test_rocm_smi_old_key_case_and_hex_series() -> None:
    # older rocm-smi prints "Card series" and sometimes the device id there (easybuild#3978, ROCm#1351)
    gpus = parse_rocm_smi_json('{"card0": {"Card series": "0x738c", "Card model": "0xc34", "VRAM Total Memory (B)": "34342961152"}}')
    assert gpus[0].name == "0x738c" and gpus[0].memory_total_bytes == 34342961152


def test_nvml_path_with_fake_module() -> None:
    mem = SimpleNamespace(total=85520809984, used=1 << 30, free=85520809984 - (1 << 30))
    calls: list[str] = []
    fake = SimpleNamespace(
        nvmlInit=lambda: calls.append("init"),
        nvmlShutdown=lambda: calls.append("shutdown"),
        nvmlSystemGetDriverVersion=lambda: b"550.54.15",
        nvmlSystemGetCudaDriverVersion=lambda: 12040,
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: f"h{i}",
        nvmlDeviceGetMemoryInfo=lambda h: mem,
        nvmlDeviceGetCudaComputeCapability=lambda h: (9, 0),
        nvmlDeviceGetUUID=lambda h: "GPU-abc",
        nvmlDeviceGetName=lambda h: "NVIDIA H100 80GB HBM3",
        nvmlDeviceGetComputeRunningProcesses=lambda h: [SimpleNamespace(pid=7, usedGpuMemory=512 * MIB)],
        nvmlSystemGetProcessName=lambda pid: b"python",
    )
    det = GpuDetection()
    assert _nvidia_nvml(fake, det) is True
    assert det.sources == ["nvml"] and calls == ["init", "shutdown"]
    g = det.gpus[0]
    assert (g.name, g.memory_total_bytes, g.compute_capability, g.driver_version) == (
        "NVIDIA H100 80GB HBM3", 85520809984, "9.0", "550.54.15")
    assert det.cuda_driver_version == "12.4"  # 12040 -> 12.4
    assert [(p.pid, p.name, p.used_bytes) for p in det.processes] == [(7, "python", 512 * MIB)]


def test_nvml_init_failure_falls_back() -> None:
    def boom() -> None:
        raise RuntimeError("NVML Shared Library Not Found")

    det = GpuDetection()
    assert _nvidia_nvml(SimpleNamespace(nvmlInit=boom), det) is False and det.gpus == []


def test_runner_missing_tool_is_none(tmp_path: Path) -> None:
    run = make_runner(env_for([], tmp_path))
    assert run(["definitely-not-a-tool-xyz"], 1.0) is None
    res = run(["sh", "-c", "echo hi"], 5.0)
    assert isinstance(res, subprocess.CompletedProcess) and res.stdout == "hi\n"
