"""Round 11 GPU profiles (desktop GeForce / RTX cards, DGX Spark GB10, Jetson AGX Thor).

Each profile is checked against a fact that does not come from our YAML: the memory total in the public
log line its memory_source cites (quoted here as a string and parsed), the memory bandwidth from the
datasheet bus width x data rate, the compute capability of its architecture, and that the planner resolves
it from the command line."""

from __future__ import annotations

import json
import re

import pytest
from tests.clirun import invoke

from vllmkit.hardware.profiles import GpuProfile, load_profiles, resolve_gpu

MIB = 2**20
GIB = 2**30

NEW = [
    "rtx-3080",
    "rtx-3080-12gb",
    "rtx-a4000",
    "rtx-4080",
    "rtx-4080-super",
    "rtx-4070-ti-super",
    "rtx-5080",
    "rtx-5060-ti",
    "rtx-5090-d",
    "gb10",
    "jetson-agx-thor",
]


@pytest.fixture(scope="module")
def p() -> dict[str, GpuProfile]:
    return {profile.name: profile for profile in load_profiles(include_user_config=False)}


def mib_from_log(line: str) -> int:
    """The total in a torch / Ultralytics / llama.cpp / vLLM line, in whole MiB.

    torch prints get_device_properties totals as whole MiB ("total_memory=16049MB"), Ultralytics and
    llama.cpp as "NNNNNMiB"; vLLM and torch OOMs give a 2-decimal GiB figure, which rounds to a MiB."""
    whole = re.search(r"total_memory=(\d+)MB|(\d+) ?MiB\)?$|VRAM: (\d+) MiB", line)
    if whole:
        return int(next(g for g in whole.groups() if g))
    gib = re.search(r"/(\d+\.\d\d) GiB\)|total capacity of (\d+\.\d\d) GiB|free of (\d+\.\d\d) GiB", line)
    assert gib, line
    return round(float(next(g for g in gib.groups() if g)) * 1024)


# (profile, the line its memory_source cites, copied from the public log; the device name in it, if any)
LOG_LINES = [
    ("rtx-3080", "CUDA:0 (NVIDIA GeForce RTX 3080, 10002MiB)", "NVIDIA GeForce RTX 3080"),
    ("rtx-3080-12gb", "CUDA:0 (NVIDIA GeForce RTX 3080, 12117MiB)", None),  # same name as the 10 GB card
    ("rtx-a4000", "GPU 0 has a total capacity of 15.61 GiB", None),  # VGGT-Long issue 6, an RTX A4000
    ("rtx-4080",
     "_CudaDeviceProperties(name='NVIDIA GeForce RTX 4080', major=8, minor=9, total_memory=16049MB",
     "NVIDIA GeForce RTX 4080"),
    ("rtx-4080-super", "CUDA:0 (NVIDIA GeForce RTX 4080 SUPER, 15944MiB)", "NVIDIA GeForce RTX 4080 SUPER"),
    ("rtx-4070-ti-super",
     "_CudaDeviceProperties(name='NVIDIA GeForce RTX 4070 Ti SUPER', major=8, minor=9, total_memory=15974MB",
     "NVIDIA GeForce RTX 4070 Ti SUPER"),
    ("rtx-5080", "CUDA:0 (NVIDIA GeForce RTX 5080, 15840MiB)", "NVIDIA GeForce RTX 5080"),
    ("rtx-5060-ti", "_CudaDeviceProperties(name='NVIDIA GeForce RTX 5060 Ti', total_memory=15841MB",
     "NVIDIA GeForce RTX 5060 Ti"),
    ("gb10", "Free memory on device cuda:0 (100.94/121.69 GiB) on startup", None),  # a GB10 node
    ("jetson-agx-thor", "Device 0: NVIDIA Thor, compute capability 11.0, VMM: yes, VRAM: 125748 MiB",
     "NVIDIA Thor"),
]


@pytest.mark.parametrize(("name", "line", "device"), LOG_LINES, ids=[row[0] for row in LOG_LINES])
def test_memory_is_the_total_in_the_cited_log_line(p: dict[str, GpuProfile], name: str, line: str,
                                                   device: str | None) -> None:
    profile = p[name]
    assert profile.memory_bytes == mib_from_log(line) * MIB
    # the cited figure is quoted in the profile's own memory_source
    figure = re.search(r"total_memory=\d+MB|\d+ ?MiB|\d+\.\d\d GiB", line)
    assert figure and figure.group(0) in profile.memory_source
    if device is not None:
        assert resolve_gpu(device, profiles=list(p.values())).name == name


def test_log_parser_reads_each_format() -> None:
    assert mib_from_log("total_memory=81090MB") == 81090
    assert mib_from_log("CUDA:0 (NVIDIA GeForce RTX 3090, 24259MiB)") == 24259
    assert mib_from_log("Free memory on device (139.21/139.81 GiB) on startup") == round(139.81 * 1024)


def test_second_readings_agree(p: dict[str, GpuProfile]) -> None:
    # A second, independent line for the same card prints the same 2-decimal GiB figure.
    assert f"{p['rtx-5080'].memory_bytes / GIB:.2f}" == "15.47"  # "RTX 5080 (15.47 GiB)"
    assert f"{p['jetson-agx-thor'].memory_bytes / GIB:.2f}" == "122.80"  # "3.95 GiB free of 122.80 GiB"
    assert mib_from_log("3.95 GiB free of 122.80 GiB") == 125747  # the 2-decimal rounding of 125748 MiB
    # the 16 GB GDDR7 cards lose the same driver reservation: 5060 Ti, 5070 Ti, 5080 all read 15.47 GiB
    assert {f"{p[n].memory_bytes / GIB:.2f}" for n in ("rtx-5060-ti", "rtx-5070-ti", "rtx-5080")} == {"15.47"}


def test_5090_d_is_derived_from_the_5090(p: dict[str, GpuProfile]) -> None:
    # nvidia-smi: "NVIDIA GeForce RTX 5090 D ... 6407MiB /  32607MiB", the RTX 5090's 32607 MiB
    smi = "|   0  NVIDIA GeForce RTX 5090 D      Off | ... |    6407MiB /  32607MiB |"
    assert re.search(r"/\s+(\d+)MiB", smi).group(1) == "32607"  # type: ignore[union-attr]
    assert "32607 MiB" in p["rtx-5090"].memory_source  # the 5090 profile's own nvidia-smi figure
    assert p["rtx-5090-d"].memory_bytes == p["rtx-5090"].memory_bytes
    assert "derived" in p["rtx-5090-d"].memory_source
    assert resolve_gpu("NVIDIA GeForce RTX 5090 D", profiles=list(p.values())).name == "rtx-5090-d"
    assert resolve_gpu("NVIDIA GeForce RTX 5090", profiles=list(p.values())).name == "rtx-5090"
    # same memory system, export-capped tensor cores: 2375 vs 3352 AI TOPS (FP4 sparse)
    assert p["rtx-5090-d"].memory_bandwidth_gbps == p["rtx-5090"].memory_bandwidth_gbps
    assert p["rtx-5090-d"].tflops_fp4 == 2375 / 2


@pytest.mark.parametrize(("name", "bus_bits", "gbps_per_pin"), [
    ("rtx-3080", 320, 19.0),  # GDDR6X
    ("rtx-3080-12gb", 384, 19.0),
    ("rtx-a4000", 256, 14.0),  # GDDR6
    ("rtx-4080", 256, 22.4),  # GDDR6X
    ("rtx-4080-super", 256, 23.0),
    ("rtx-4070-ti-super", 256, 21.0),
    ("rtx-5080", 256, 30.0),  # GDDR7
    ("rtx-5060-ti", 128, 28.0),
    ("rtx-5090-d", 512, 28.0),
    ("gb10", 256, 8.533),  # LPDDR5X-8533
    ("jetson-agx-thor", 256, 8.533),
])
def test_bandwidth_is_bus_width_times_data_rate(p: dict[str, GpuProfile], name: str, bus_bits: int,
                                                gbps_per_pin: float) -> None:
    assert p[name].memory_bandwidth_gbps == pytest.approx(bus_bits * gbps_per_pin / 8, abs=0.5)


@pytest.mark.parametrize(("name", "cc", "family"), [
    ("rtx-3080", "8.6", "ampere"),
    ("rtx-3080-12gb", "8.6", "ampere"),
    ("rtx-a4000", "8.6", "ampere"),
    ("rtx-4080", "8.9", "ada"),
    ("rtx-4080-super", "8.9", "ada"),
    ("rtx-4070-ti-super", "8.9", "ada"),
    ("rtx-5080", "12.0", "blackwell"),  # GeForce Blackwell: sm_120
    ("rtx-5060-ti", "12.0", "blackwell"),
    ("rtx-5090-d", "12.0", "blackwell"),
    ("gb10", "12.1", "blackwell"),  # DGX Spark: torch capability (12, 1), sm_121
    ("jetson-agx-thor", "11.0", "blackwell"),  # Thor iGPU: "compute capability 11.0", sm_110
])
def test_compute_capability_matches_the_architecture(p: dict[str, GpuProfile], name: str, cc: str,
                                                     family: str) -> None:
    profile = p[name]
    assert profile.compute_capability == cc
    assert profile.architecture == "sm_" + cc.replace(".", "")
    s = profile.supports
    # Ampere: BF16 + Marlin, no FP8 tensor cores; Ada: + FP8; Blackwell: + FP4 (nvfp4 / mxfp4)
    assert (s.bf16, s.int4_marlin) == (True, True)
    assert s.fp8 == (family in {"ada", "blackwell"})
    assert s.fp4 == (family == "blackwell") == (profile.tflops_fp4 is not None)
    assert (profile.tflops_fp8 is None) == (family == "ampere")


def test_tensor_rates_against_the_whitepapers(p: dict[str, GpuProfile]) -> None:
    # Ada whitepaper, RTX 4080 (dense, FP32 accumulate): 97.5 FP16, 194.9 FP8, 389.9 INT8 TOPS
    r4080 = p["rtx-4080"]
    assert (r4080.tflops_bf16, r4080.tflops_fp8, r4080.tflops_int8) == (97.5, 194.9, 389.9)
    # The SUPER refreshes are the 4080 scaled by SMs x boost MHz, i.e. NVIDIA's 836 / 706 AI TOPS / 8
    for name, sms, mhz, ai_tops in (("rtx-4080-super", 80, 2550, 836), ("rtx-4070-ti-super", 66, 2610, 706)):
        scaled = 97.5 * sms * mhz / (76 * 2505)
        assert p[name].tflops_bf16 == pytest.approx(scaled, abs=0.1) == pytest.approx(ai_tops / 8, abs=0.1)
    # GA102 whitepaper, RTX 3080: 59.5 FP16/BF16 (FP32 accumulate), 238 INT8 dense
    assert (p["rtx-3080"].tflops_bf16, p["rtx-3080"].tflops_int8) == (59.5, 238)
    # RTX A4000 datasheet: 153.4 tensor TFLOPS with sparsity
    assert p["rtx-a4000"].tflops_fp16 == pytest.approx(153.4 / 2)
    # GeForce Blackwell: AI TOPS are FP4 sparse; dense FP4 is half, FP8 a quarter of that (the 5090's ratios)
    for name, ai_tops in (("rtx-5080", 1801), ("rtx-5060-ti", 759), ("rtx-5090-d", 2375)):
        assert p[name].tflops_fp4 == pytest.approx(ai_tops / 2, abs=0.1)
        assert p[name].tflops_fp8 == pytest.approx(ai_tops / 8, abs=0.1)
    # DGX Spark: 1 PFLOP FP4 with sparsity; Jetson AGX Thor: 2070 FP4 TFLOPS with sparsity
    assert p["gb10"].tflops_fp4 == 1000 / 2
    assert p["jetson-agx-thor"].tflops_fp4 == 2070 / 2


def test_unified_memory_devices(p: dict[str, GpuProfile]) -> None:
    for name in ("gb10", "jetson-agx-thor"):
        profile = p[name]
        # the whole 128 GB LPDDR5X less what firmware and the kernel keep: below 128 GiB, above 118
        assert 118 * GIB < profile.memory_bytes < 128 * GIB
        assert "shared with the" in profile.memory_source and "unified" in profile.memory_source.lower()
        assert profile.gpus_per_node == 1
    c2c = p["gb10"].interconnect
    assert c2c is not None and "NVLink-C2C" in c2c.name and "not a GPU-GPU link" in c2c.name
    assert p["jetson-agx-thor"].interconnect is None  # an iGPU: no GPU-GPU link at all
    names = list(p.values())
    assert resolve_gpu("NVIDIA GB10", profiles=names).name == "gb10"
    assert resolve_gpu("dgx-spark", profiles=names).name == "gb10"
    assert resolve_gpu("NVIDIA Thor", profiles=names).name == "jetson-agx-thor"


def test_geforce_links_are_pcie(p: dict[str, GpuProfile]) -> None:
    expected = {"rtx-3080": ("Gen4 x16", 64), "rtx-4080": ("Gen4 x16", 64), "rtx-4080-super": ("Gen4 x16", 64),
                "rtx-4070-ti-super": ("Gen4 x16", 64), "rtx-5080": ("Gen5 x16", 128),
                "rtx-5060-ti": ("Gen5 x8", 64), "rtx-5090-d": ("Gen5 x16", 128), "rtx-a4000": ("Gen4 x16", 64)}
    for name, (lanes, gbps) in expected.items():
        link = p[name].interconnect
        assert link is not None and f"PCIe {lanes}" in link.name and link.bandwidth_gbps == gbps, name


def test_the_12gb_3080_needs_its_slug(p: dict[str, GpuProfile]) -> None:
    names = list(p.values())
    # torch and nvidia-smi name both cards "NVIDIA GeForce RTX 3080": the product name means the 10 GB one
    assert resolve_gpu("NVIDIA GeForce RTX 3080", profiles=names).name == "rtx-3080"
    assert resolve_gpu("rtx-3080-12gb", profiles=names).name == "rtx-3080-12gb"
    assert p["rtx-3080-12gb"].product_names == []
    assert p["rtx-3080-12gb"].memory_bytes > p["rtx-3080"].memory_bytes


@pytest.mark.parametrize("name", NEW)
def test_plan_resolves_the_gpu(name: str) -> None:
    res = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", name, "--source", "catalog", "--json"])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["status"] == "ok"
    gpu = out["data"]["gpu"]
    assert gpu["name"] == name
    assert gpu["memory_bytes"] == {p.name: p for p in load_profiles(include_user_config=False)}[name].memory_bytes
