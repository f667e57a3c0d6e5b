"""Round 17 GPU profiles (more desktop GeForce cards and the Turing RTX 2080 Ti).

Each profile is checked against facts that do not come from our YAML: the memory total in the public log line
its memory_source cites (quoted here and parsed), the bandwidth as datasheet bus width x data rate, the
architecture / compute capability, that the planner resolves it by its product name, and that none of its names
collides with another profile's."""

from __future__ import annotations

import json
import re

import pytest
from tests.clirun import invoke

from vllmkit.hardware.profiles import GpuProfile, load_profiles, normalize_gpu_name, resolve_gpu

MIB = 2**20
GIB = 2**30

NEW = ["rtx-3060", "rtx-3090-ti", "rtx-4060", "rtx-4060-ti", "rtx-4070", "rtx-4070-super", "rtx-2080-ti"]


@pytest.fixture(scope="module")
def p() -> dict[str, GpuProfile]:
    return {profile.name: profile for profile in load_profiles(include_user_config=False)}


def mib_from_log(line: str) -> int:
    """The total in a torch / Ultralytics line (whole MiB) or a 2-decimal GiB figure (rounded to a MiB)."""
    whole = re.search(r"total_memory=(\d+)MB|(\d+) ?MiB\)?$", line)
    if whole:
        return int(next(g for g in whole.groups() if g))
    gib = re.search(r"(\d+\.\d\d) GiB total|total capacity of (\d+\.\d\d) GiB", line)
    assert gib, line
    return round(float(next(g for g in gib.groups() if g)) * 1024)


# (profile, the line its memory_source cites, copied from the public log; the device name in it, if any)
LOG_LINES = [
    ("rtx-3060",
     "_CudaDeviceProperties(name='NVIDIA GeForce RTX 3060', major=8, minor=6, total_memory=11931MB",
     "NVIDIA GeForce RTX 3060"),
    ("rtx-3090-ti",
     "_CudaDeviceProperties(name='NVIDIA GeForce RTX 3090 Ti', major=8, minor=6, total_memory=24114MB",
     "NVIDIA GeForce RTX 3090 Ti"),
    ("rtx-4060-ti", "machine/GPU: NVIDIA GeForce RTX 4060 Ti, 15.57 GiB total VRAM", "NVIDIA GeForce RTX 4060 Ti"),
    ("rtx-4060", "CUDA:0 (NVIDIA GeForce RTX 4060, 7807MiB)", "NVIDIA GeForce RTX 4060"),
    ("rtx-4070", "CUDA:0 (NVIDIA GeForce RTX 4070, 12002MiB)", "NVIDIA GeForce RTX 4070"),
    ("rtx-2080-ti", "CUDA:0 (NVIDIA GeForce RTX 2080 Ti, 10825MiB)", "NVIDIA GeForce RTX 2080 Ti"),
]


@pytest.mark.parametrize(("name", "line", "device"), LOG_LINES, ids=[row[0] for row in LOG_LINES])
def test_memory_is_the_total_in_the_cited_log_line(p: dict[str, GpuProfile], name: str, line: str,
                                                   device: str) -> None:
    profile = p[name]
    assert profile.memory_bytes == mib_from_log(line) * MIB
    figure = re.search(r"total_memory=\d+MB|\d+ ?MiB|\d+\.\d\d GiB", line)
    assert figure and figure.group(0) in profile.memory_source
    assert resolve_gpu(device, profiles=list(p.values())).name == name


def test_log_parser_reads_each_format() -> None:
    assert mib_from_log("total_memory=24560MB") == 24560
    assert mib_from_log("CUDA:0 (NVIDIA GeForce RTX 4060, 7807MiB)") == 7807
    assert mib_from_log("NVIDIA GeForce RTX 4060 Ti, 15.57 GiB total VRAM") == 15944
    assert mib_from_log("GPU 0 has a total capacity of 47.98 GiB of which 0 bytes is free.") == 49132


def test_memory_is_below_the_nvidia_smi_total(p: dict[str, GpuProfile]) -> None:
    # nvidia-smi's "Total" (quoted in each memory_source) includes the driver reservation torch cannot see
    smi_mib = {"rtx-3060": 12288, "rtx-3090-ti": 24564, "rtx-4060-ti": 16380,
               "rtx-4070": 12282, "rtx-2080-ti": 11264}
    for name, total in smi_mib.items():
        profile = p[name]
        assert f"{total} MiB" in profile.memory_source, name
        assert 200 * MIB < total * MIB - profile.memory_bytes < 500 * MIB, name  # type: ignore[operator]


def test_derived_totals(p: dict[str, GpuProfile]) -> None:
    # 4070 SUPER: the 4070's Linux total (both read 12282 MiB on Windows: same 12 GB AD104 board memory)
    assert p["rtx-4070-super"].memory_bytes == p["rtx-4070"].memory_bytes == 12002 * MIB
    assert "derived" in p["rtx-4070-super"].memory_source
    assert "4070 SUPER, 12282MiB" in p["rtx-4070-super"].memory_source


@pytest.mark.parametrize(("name", "bus_bits", "gbps_per_pin"), [
    ("rtx-3060", 192, 15.0),  # GDDR6
    ("rtx-3090-ti", 384, 21.0),  # GDDR6X
    ("rtx-4060", 128, 17.0),  # GDDR6
    ("rtx-4060-ti", 128, 18.0),  # GDDR6
    ("rtx-4070", 192, 21.0),  # GDDR6X
    ("rtx-4070-super", 192, 21.0),  # GDDR6X
    ("rtx-2080-ti", 352, 14.0),  # GDDR6
])
def test_bandwidth_is_bus_width_times_data_rate(p: dict[str, GpuProfile], name: str, bus_bits: int,
                                                gbps_per_pin: float) -> None:
    assert p[name].memory_bandwidth_gbps == pytest.approx(bus_bits * gbps_per_pin / 8, abs=0.5)


@pytest.mark.parametrize(("name", "cc", "family"), [
    ("rtx-3060", "8.6", "ampere"),
    ("rtx-3090-ti", "8.6", "ampere"),
    ("rtx-4060", "8.9", "ada"),
    ("rtx-4060-ti", "8.9", "ada"),
    ("rtx-4070", "8.9", "ada"),
    ("rtx-4070-super", "8.9", "ada"),
    ("rtx-2080-ti", "7.5", "turing"),
])
def test_compute_capability_matches_the_architecture(p: dict[str, GpuProfile], name: str, cc: str,
                                                     family: str) -> None:
    profile = p[name]
    assert profile.vendor == "nvidia" and profile.runtime == "cuda"
    assert profile.compute_capability == cc
    assert profile.architecture == "sm_" + cc.replace(".", "")
    s = profile.supports
    # Turing: FP16 + INT8 tensor cores only (as the t4 profile); Ampere: + BF16 and Marlin; Ada: + FP8
    assert s.bf16 == s.int4_marlin == (family != "turing") == (profile.tflops_bf16 is not None)
    assert s.fp8 == (family == "ada") == (profile.tflops_fp8 is not None)
    assert s.fp4 is False and profile.tflops_fp4 is None
    assert s.int8 is True


def test_turing_follows_the_t4(p: dict[str, GpuProfile]) -> None:
    t4, ti = p["t4"], p["rtx-2080-ti"]
    assert ti.supports == t4.supports
    assert (ti.architecture, ti.compute_capability) == (t4.architecture, t4.compute_capability) == ("sm_75", "7.5")
    assert "awq_marlin" not in ti.supports.quantization_methods


def test_tensor_rates(p: dict[str, GpuProfile]) -> None:
    # Ada refreshes: the whitepaper's RTX 4080 (97.5 FP16 dense, FP32 accumulate) scaled by SMs x boost MHz,
    # which equals NVIDIA's AI TOPS (FP8 sparse) / 8
    for name, sms, mhz, ai_tops in (("rtx-4060", 24, 2460, 242), ("rtx-4060-ti", 34, 2535, 353), ("rtx-4070", 46, 2475, 466), ("rtx-4070-super", 56, 2475, 568)):
        scaled = 97.5 * sms * mhz / (76 * 2505)
        profile = p[name]
        assert profile.tflops_bf16 == pytest.approx(scaled, abs=0.1) == pytest.approx(ai_tops / 8, abs=0.1)
        assert profile.tflops_fp8 == pytest.approx(194.9 * sms * mhz / (76 * 2505), abs=0.1)
        assert profile.tflops_int8 == pytest.approx(389.9 * sms * mhz / (76 * 2505), abs=0.1)
    # Ampere: the GA102 whitepaper's RTX 3080 (59.5 FP16 dense FP32-acc, 68 SMs at 1710 MHz) scaled
    assert p["rtx-3060"].tflops_bf16 == pytest.approx(59.5 * 28 * 1777 / (68 * 1710), abs=0.1)
    assert p["rtx-3060"].tflops_int8 == pytest.approx(4 * 59.5 * 28 * 1777 / (68 * 1710), abs=0.1)
    assert p["rtx-3090-ti"].tflops_bf16 == 320 / 4 == pytest.approx(59.5 * 84 * 1860 / (68 * 1710), abs=0.2)
    # Turing whitepaper, RTX 2080 Ti reference: 53.8 FP16 (FP32 accumulate), 215.2 INT8 TOPS
    assert (p["rtx-2080-ti"].tflops_fp16, p["rtx-2080-ti"].tflops_int8) == (53.8, 215.2)


def test_names_resolve_and_do_not_collide(p: dict[str, GpuProfile]) -> None:
    profiles = list(p.values())
    owner: dict[str, set[str]] = {}
    for profile in profiles:
        for text in [profile.name, profile.display_name, *profile.product_names, *profile.aliases]:
            key = normalize_gpu_name(text)
            if key:
                owner.setdefault(key, set()).add(profile.name)
    for name in NEW:
        profile = p[name]
        for text in [profile.name, profile.display_name, *profile.product_names, *profile.aliases]:
            assert owner[normalize_gpu_name(text)] == {name}, (name, text)
            assert resolve_gpu(text, profiles=profiles).name == name, (name, text)
    # the older cards keep their names
    for text, name in (("NVIDIA GeForce RTX 3090", "rtx-3090"), ("NVIDIA GeForce RTX 4070 Ti SUPER",
                                                                 "rtx-4070-ti-super"),
                       ("NVIDIA GeForce RTX 3080", "rtx-3080"), ("Tesla T4", "t4")):
        assert resolve_gpu(text, profiles=profiles).name == name


def test_geforce_links_are_pcie(p: dict[str, GpuProfile]) -> None:
    expected = {"rtx-3060": ("Gen4 x16", 64), "rtx-3090-ti": ("Gen4 x16", 64), "rtx-4060-ti": ("Gen4 x8", 32),
                "rtx-4070": ("Gen4 x16", 64), "rtx-4070-super": ("Gen4 x16", 64),
                "rtx-2080-ti": ("Gen3 x16", 32)}
    for name, (lanes, gbps) in expected.items():
        link = p[name].interconnect
        assert link is not None and f"PCIe {lanes}" in link.name and link.bandwidth_gbps == gbps, name


PRODUCT_NAMES = [
    ("rtx-3060", "NVIDIA GeForce RTX 3060"),
    ("rtx-3090-ti", "NVIDIA GeForce RTX 3090 Ti"),
    ("rtx-4060-ti", "NVIDIA GeForce RTX 4060 Ti"),
    ("rtx-4070", "NVIDIA GeForce RTX 4070"),
    ("rtx-4070-super", "NVIDIA GeForce RTX 4070 SUPER"),
    ("rtx-2080-ti", "NVIDIA GeForce RTX 2080 Ti"),
]


@pytest.mark.parametrize(("name", "product"), PRODUCT_NAMES, ids=[row[0] for row in PRODUCT_NAMES])
def test_plan_resolves_the_gpu_by_product_name(name: str, product: str) -> None:
    res = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", product, "--source", "catalog", "--json"],
                 env={"HF_HUB_OFFLINE": "1"})
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["status"] == "ok"
    gpu = out["data"]["gpu"]
    assert gpu["name"] == name
    assert gpu["memory_bytes"] == {p.name: p for p in load_profiles(include_user_config=False)}[name].memory_bytes
