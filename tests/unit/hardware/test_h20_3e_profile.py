"""The 141 GB H20 ("H20-3e") is its own SKU: nvidia-smi names it "NVIDIA H20-3e" with 143771 MiB (the
H200's total), a CUDA probe on one read 139.84 GiB, and vLLM tunes kernels for it under
device_name=NVIDIA_H20-3e; the 96 GB "NVIDIA H20" keeps its own profile (torch total_memory=97285MB)."""

from __future__ import annotations

from vllmkit.hardware.profiles import load_profiles, resolve_gpu

GIB = 1 << 30


def test_the_141gb_h20_resolves_apart_from_the_96gb_one() -> None:
    profiles = load_profiles(include_user_config=False)
    big = resolve_gpu("NVIDIA H20-3e", profiles=profiles)
    assert big.name == "h20-3e"
    assert resolve_gpu("H20-3e 141GB", profiles=profiles).name == "h20-3e"
    small = resolve_gpu("NVIDIA H20", profiles=profiles)
    assert small.name == "h20" and small.memory_bytes == 97285 * 2**20
    assert abs(big.memory_bytes / GIB - 139.84) < 0.05
    # the same chip as the 96 GB card: compute and NVLink unchanged, HBM3e memory
    assert big.tflops_bf16 == small.tflops_bf16 == 148
    assert big.memory_bandwidth_gbps > small.memory_bandwidth_gbps
