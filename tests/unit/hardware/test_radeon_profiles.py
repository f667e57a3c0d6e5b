"""Round 35 GPU profiles: AMD Radeon RDNA 3 / RDNA 4 cards that vLLM's ROCm build runs (profiles/gpus/amd-radeon.yaml).

Each number is checked against facts that do not come from our YAML: the total in the public torch / HIP line the
memory_source cites (and, where one exists, an exact MiB figure from rocminfo, LACT or llama.cpp), the bandwidth as
bus width x data rate, the WMMA rate as AMD's per-CU table (GPUOpen, "Using the Matrix Cores of AMD RDNA 4
architecture GPUs": FLOPS per clock per CU, RDNA 3 FP16 / BF16 / INT8 512, RDNA 4 FP16 / BF16 1024 and INT8 2048)
x CUs x boost clock, and what vLLM's ROCm platform does on them (platforms/rocm.py, 0.32.0 wheel).
"""

from __future__ import annotations

import json

import pytest
from tests.clirun import invoke

from vllmkit.hardware.profiles import GpuProfile, load_profiles, resolve_gpu
from vllmkit.plan.performance import gpu_family

MIB = 2**20
GIB = 2**30
RADEON = ["rx-7900-xtx", "rx-7900-xt", "rx-7900-gre", "radeon-pro-w7900", "rx-9070-xt", "radeon-ai-pro-r9700"]


@pytest.fixture(scope="module")
def p() -> dict[str, GpuProfile]:
    return {profile.name: profile for profile in load_profiles(include_user_config=False)}


# (profile, the total the cited HIP out-of-memory line prints, an exact MiB reading of the same card or None)
READINGS = [
    ("rx-7900-xtx", "GPU 0 has a total capacity of 23.98 GiB", 24560),  # LACT "VRAM Size: 24560 MiB"
    ("rx-7900-xt", "GPU 0 has a total capacity of 19.98 GiB", None),
    ("rx-9070-xt", "GPU 0 has a total capacity of 15.92 GiB", 16695296 // 1024),  # rocminfo pool, KB
    ("radeon-ai-pro-r9700", "GPU 0 has a total capacity of 31.86 GiB", 32624),  # llama.cpp "(32624 MiB, ...)"
]


@pytest.mark.parametrize(("name", "line", "mib"), READINGS, ids=[r[0] for r in READINGS])
def test_memory_is_the_total_torch_printed(p: dict[str, GpuProfile], name: str, line: str, mib: int | None) -> None:
    profile = p[name]
    printed = line.rsplit(" of ", 1)[1]  # "23.98 GiB"
    assert f"{profile.memory_bytes / GIB:.2f} GiB" == printed  # type: ignore[operator]
    assert printed.split()[0] in profile.memory_source
    assert profile.memory_source_tag == "measured"
    if mib is not None:
        assert profile.memory_bytes == mib * MIB


def test_rdna3_totals_are_the_vram_less_16_mib_and_the_unread_ones_say_derived(p: dict[str, GpuProfile]) -> None:
    for name, gib in (("rx-7900-xtx", 24), ("rx-7900-xt", 20), ("rx-7900-gre", 16), ("radeon-pro-w7900", 48)):
        assert p[name].memory_bytes == gib * GIB - 16 * MIB, name
    for name in ("rx-7900-gre", "radeon-pro-w7900"):
        assert p[name].memory_source_tag == "derived"


@pytest.mark.parametrize(("name", "bus_bits", "gbps_per_pin"), [
    ("rx-7900-xtx", 384, 20.0), ("rx-7900-xt", 320, 20.0), ("rx-7900-gre", 256, 18.0),
    ("radeon-pro-w7900", 384, 18.0), ("rx-9070-xt", 256, 20.0), ("radeon-ai-pro-r9700", 256, 20.0),
])
def test_bandwidth_is_bus_width_times_data_rate(p: dict[str, GpuProfile], name: str, bus_bits: int,
                                                gbps_per_pin: float) -> None:
    assert p[name].memory_bandwidth_gbps == pytest.approx(bus_bits * gbps_per_pin / 8, abs=0.5)


@pytest.mark.parametrize(("name", "cus", "ghz"), [
    ("rx-7900-xtx", 96, 2.5), ("rx-7900-xt", 84, 2.4), ("rx-7900-gre", 80, 2.245), ("radeon-pro-w7900", 96, 2.495),
    ("rx-9070-xt", 64, 2.97), ("radeon-ai-pro-r9700", 64, 2.92),
])
def test_matrix_rates_are_cus_times_the_per_cu_rate_times_the_clock(p: dict[str, GpuProfile], name: str, cus: int,
                                                                    ghz: float) -> None:
    profile = p[name]
    rdna4 = profile.gfx_target.startswith("gfx12")  # type: ignore[union-attr]
    half, eight = (1024, 2048) if rdna4 else (512, 512)
    assert profile.tflops_fp16 == profile.tflops_bf16 == pytest.approx(cus * half * ghz / 1000, rel=0.005)
    assert profile.tflops_int8 == pytest.approx(cus * eight * ghz / 1000, rel=0.005)
    # vLLM: supports_fp8() is on_cdna() or on_rdna4(); OCP e4m3fn off gfx94 (is_fp8_fnuz)
    assert profile.supports.fp8 is rdna4
    assert (profile.tflops_fp8 is not None) is rdna4
    if rdna4:
        assert profile.supports.fp8_format == "e4m3fn" and profile.tflops_fp8 == profile.tflops_int8
    # Marlin is CUDA-only; no custom all-reduce off gfx94 / gfx95: TP goes over PCIe
    assert profile.supports.int4_marlin is False and profile.marlin_supported is False
    assert profile.interconnect is not None and "PCIe" in profile.interconnect.name


@pytest.mark.parametrize(("device", "name"), [
    ("AMD Radeon RX 7900 XTX", "rx-7900-xtx"),
    ("AMD_Radeon_RX7900XTX", "rx-7900-xtx"),  # vLLM's own device name (platforms/rocm.py device map, 0x744c)
    ("AMD Radeon RX 7900 GRE", "rx-7900-gre"),
    ("AMD Radeon 9070 XT", "rx-9070-xt"),
    ("AMD_Radeon_R9700", "radeon-ai-pro-r9700"),  # 0x7551
    ("AMD Radeon PRO W7900", "radeon-pro-w7900"),
])
def test_device_names_resolve(p: dict[str, GpuProfile], device: str, name: str) -> None:
    assert resolve_gpu(device, profiles=list(p.values())).name == name


def test_names_do_not_collide(p: dict[str, GpuProfile]) -> None:
    seen: dict[str, str] = {}
    for profile in p.values():
        for key in {profile.name, *profile.aliases, *profile.product_names}:
            k = key.lower()
            assert seen.get(k, profile.name) == profile.name, (key, seen.get(k), profile.name)
            seen[k] = profile.name


def test_speed_family_and_planning(p: dict[str, GpuProfile]) -> None:
    assert gpu_family("gfx1100") == "rdna3" and gpu_family("gfx1201") == "rdna4"
    for name in RADEON:
        assert gpu_family(p[name].architecture) in ("rdna3", "rdna4")
    # RDNA 3 has no FP8: the plan offers no FP8 checkpoint; RDNA 4 does; ROCm keeps 16-token KV blocks
    r3 = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "rx-7900-xtx", "--source", "catalog", "--vllm-version", "0.32.0",
                 "--json"])
    r4 = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "radeon-ai-pro-r9700", "--source", "catalog", "--vllm-version",
                 "0.32.0", "--json"])
    assert r3.exit_code == 0 and r4.exit_code == 0, (r3.output, r4.output)
    d3, d4 = json.loads(r3.stdout)["data"], json.loads(r4.stdout)["data"]
    fp8_3 = [a for a in d3["alternatives"] if a["precision"] == "fp8"]
    fp8_4 = [a for a in d4["alternatives"] if a["precision"] == "fp8"]
    assert fp8_3 and all("no native FP8" in a["note"] for a in fp8_3)
    assert fp8_4 and not any("no native FP8" in a["note"] for a in fp8_4)
    assert d3["kv_cache"]["block_size"] == d4["kv_cache"]["block_size"] == 16
    assert d3["gpu"]["memory_bytes"] == 24560 * MIB
