"""GPU profiles: packaged data sanity, name resolution, memory parsing, user files."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllmkit.errors import ExitCode, HardwareError, UsageError
from vllmkit.hardware.profiles import (
    DEFAULT_FOR_SHORT_NAME,
    GpuProfile,
    Supports,
    cpu_profile,
    custom_profile,
    load_profiles,
    normalize_gpu_name,
    parse_memory,
    profile_dirs_from_env,
    resolve_gpu,
    user_config_dir,
)

GIB = 2**30
MIB = 2**20


@pytest.fixture(scope="module")
def packaged() -> list[GpuProfile]:
    return load_profiles(include_user_config=False)


def by_name(profiles: list[GpuProfile]) -> dict[str, GpuProfile]:
    return {p.name: p for p in profiles}


# ----------------------------------------------------------------------------- packaged data

# Issue #2 section 5: the GPUs that must have a profile (slug chosen by us).
REQUIRED = [
    "v100-sxm2-16gb",
    "v100-sxm2-32gb",
    "v100-pcie-16gb",
    "v100-pcie-32gb",
    "t4",
    "a10",
    "a10g",
    "l4",
    "l40s",
    "a100-40gb-sxm",
    "a100-40gb-pcie",
    "a100-80gb-sxm",
    "a100-80gb-pcie",
    "a800-80gb-sxm",
    "h100-pcie",
    "h100-sxm",
    "h100-nvl",
    "h20",
    "h200",
    "gh200",
    "b200",
    "rtx-3090",
    "rtx-4090",
    "rtx-5090",
    "rtx-5070-ti",
    "rtx-a5000",
    "rtx-6000-ada",
    "rtx-5000-ada",
    "rtx-pro-6000-server",
    "rtx-pro-6000-workstation",
    "mi210",
    "mi250x",
    # issue 13 item 9
    "h800",
    "l20",
    "l40",
    "a40",
    "rtx-a6000",
    "b300",
    "gb200",
    "mi300x",
    "mi325x",
    "mi355x",
    "mi300a",
    "cpu",
]


def test_every_required_gpu_has_a_profile(packaged: list[GpuProfile]) -> None:
    missing = sorted(set(REQUIRED) - set(by_name(packaged)))
    assert missing == []


def test_names_are_unique_and_keys_do_not_clash(packaged: list[GpuProfile]) -> None:
    names = [p.name for p in packaged]
    assert len(names) == len(set(names))
    owner: dict[str, str] = {}
    for profile in packaged:
        keys = {
            normalize_gpu_name(n)
            for n in [profile.name, profile.display_name, *profile.product_names, *profile.aliases]
        }
        for key in keys:
            assert owner.setdefault(key, profile.name) == profile.name, (
                f"{key!r}: {owner[key]} vs {profile.name}"
            )


@pytest.mark.parametrize("profile", load_profiles(include_user_config=False), ids=lambda p: p.name)
def test_profile_values_are_sane(profile: GpuProfile) -> None:
    assert profile.memory_source.strip()
    if profile.vendor == "cpu":
        assert profile.memory_bytes is None  # filled in from the host at run time
        return
    assert profile.memory_bytes is not None
    # 8 GB desktop cards (RTX 4060) show torch ~7.6 GiB; the largest, B300 / MI355X, under 300 GiB
    assert 7 * GIB <= profile.memory_bytes <= 300 * GIB
    # The source must say how the bytes were obtained (a MiB reading or a GiB figure).
    assert "MiB" in profile.memory_source or "GiB" in profile.memory_source
    assert profile.memory_bandwidth_gbps is not None and 100 <= profile.memory_bandwidth_gbps <= 10_000
    assert profile.tflops_fp16 is not None
    assert 1 <= profile.gpus_per_node <= 8
    assert profile.specs_source
    s = profile.supports
    if profile.vendor == "nvidia":
        sm = profile.sm
        assert sm is not None
        assert profile.runtime == "cuda"
        assert s.fp8 == (sm >= 89)  # native FP8 tensor cores: Ada, Hopper, Blackwell
        assert s.int4_marlin == (sm >= 80)  # Marlin W4A16 on CUDA sm >= 8.0 (issue #2)
        assert s.bf16 == (sm >= 80)
        assert s.fp4 == (sm >= 100)
        if s.fp8:
            assert s.fp8_format == "e4m3fn"
        if sm < 89:
            assert profile.tflops_fp8 is None
        if sm < 80:
            assert profile.tflops_bf16 is None
    else:
        assert profile.vendor == "amd"
        assert profile.runtime == "rocm"
        # Instinct (CDNA) and Radeon (RDNA 3 gfx11xx, RDNA 4 gfx12xx)
        assert profile.gfx_target in {"gfx908", "gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"}
        assert not s.int4_marlin and not profile.marlin_supported  # Marlin is a CUDA kernel
        # vLLM platforms/rocm.py supports_fp8: on_cdna() (gfx94 / gfx95 here) or on_rdna4()
        assert s.fp8 == (profile.gfx_target in {"gfx942", "gfx950", "gfx1201"})
        # vLLM platforms/rocm.py: "gfx94" -> float8_e4m3fnuz, gfx950 and RDNA 4 -> OCP e4m3fn.
        expected_format = {"gfx942": "e4m3fnuz", "gfx950": "e4m3fn", "gfx1201": "e4m3fn"}.get(profile.gfx_target)
        assert s.fp8_format == expected_format
        assert s.fp4 == (profile.gfx_target == "gfx950")
    if s.fp8:
        assert profile.tflops_fp8 is not None and profile.tflops_bf16 is not None
        # FP8 is twice BF16 on every tensor-core generation (L40S datasheet: 362.05 vs 733).
        assert profile.tflops_fp8 == pytest.approx(2 * profile.tflops_bf16, rel=0.02)
    assert profile.fp8_supported == s.fp8


# What torch / vLLM printed for these GPUs (2-decimal GiB), read from the public logs, not
# from our YAML. A profile's bytes must print the same.
TORCH_REPORTED_GIB = [
    ("h100-sxm", "79.19"),  # vLLM logs / torch OOMs on H100 80GB HBM3; torch total_memory=81090MB
    ("h100-pcie", "79.11"),  # torch total_memory=81008MB
    ("h100-nvl", "93.09"),  # torch OOM on H100 NVL
    ("h200", "139.81"),  # vLLM "Free memory on device (139.21/139.81 GiB)"
    ("l40s", "44.42"),  # https://github.com/stepfun-ai/Step-Video-T2V/issues/8
    ("l4", "22.05"),  # vLLM CI "Free memory on device cuda:0 (1.53/22.05 GiB)"
    ("a100-80gb-sxm", "79.15"),  # torch OOMs / vLLM total_gpu_memory on A100-SXM4-80GB
    ("a100-40gb-sxm", "39.50"),  # https://github.com/vllm-project/vllm/issues/12330
    ("a800-80gb-sxm", "79.33"),  # https://github.com/hahnyuan/PB-LLM/issues/3, vLLM total_gpu_memory
    ("rtx-4090", "23.64"),  # https://github.com/3DTopia/Phidias-Diffusion/issues/8
    ("rtx-5090", "31.36"),
    ("rtx-pro-6000-server", "95.01"),  # shared/truth blog-rtxpro6000-qwen3-32b-tp2
    ("gh200", "94.50"),  # https://github.com/vllm-project/vllm/issues/9630
    ("b200", "178.35"),  # vLLM "Free memory on device cuda:0 (48.48/178.35 GiB)"
    ("t4", "14.75"),  # Colab OOM "total capacity of 14.75 GiB"
    ("v100-sxm2-16gb", "15.78"),  # torch total_memory=16160MB
    ("mi300x", "191.98"),  # HIP OOM "total capacity of 191.98 GiB"; total_memory=196592MB
    ("mi325x", "255.98"),  # https://github.com/vllm-project/vllm/issues/41962
    ("mi355x", "287.98"),  # vLLM "Free memory on device cuda:0 (84.11/287.98 GiB)"
    ("mi250x", "63.98"),  # torch total_memory=65520MB per GCD
    ("mi100", "31.98"),
    ("rtx-4070-laptop", "7.65"),  # vLLM 0.8.2 "total_gpu_memory (7.65GiB)", collected-startup-logs-23  # HIP OOM "total capacity of 31.98 GiB" of a vLLM ROCm worker without hipBLASLt (gfx908)
    ("a40", "44.35"),  # torch total_memory=45416MB
    ("rtx-a6000", "47.54"),  # torch total_memory=48676MB
    ("b300", "267.69"),  # torch OOMs "total capacity of 267.69 GiB" on B300 SXM6 AC
    ("gb200", "184.31"),  # torch OOMs "total capacity of 184.31 GiB" on GB200
]


@pytest.mark.parametrize(("name", "printed"), TORCH_REPORTED_GIB)
def test_memory_matches_what_torch_printed(packaged: list[GpuProfile], name: str, printed: str) -> None:
    memory = by_name(packaged)[name].memory_bytes
    assert memory is not None
    assert f"{memory / GIB:.2f}" == printed


def test_memory_readings_in_whole_mib(packaged: list[GpuProfile]) -> None:
    # torch prints totals as whole MiB and we store GiB figures rounded to whole MiB.
    for profile in packaged:
        if profile.memory_bytes is not None:
            assert profile.memory_bytes % MIB == 0, profile.name


def test_exact_torch_readings() -> None:
    # Hand arithmetic from torch's get_device_properties() prints (total_memory=NMB = N MiB).
    profiles = by_name(load_profiles(include_user_config=False))
    assert profiles["h100-sxm"].memory_bytes == 81090 * 1_048_576 == 85_029_027_840
    assert profiles["mi300x"].memory_bytes == 196592 * 1_048_576 == 206_141_652_992
    assert profiles["b200"].memory_bytes == 182631 * 1_048_576 == 191_502_483_456
    # nvidia-smi's H100 total (81559 MiB) is not what torch sees.
    assert profiles["h100-sxm"].memory_bytes != 81559 * 1_048_576


# ----------------------------------------------------------------------------- resolution


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("H100", "h100-sxm"),  # documented default for the bare family name
        ("h100", "h100-sxm"),
        ("h100-sxm", "h100-sxm"),
        ("H100 SXM", "h100-sxm"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),  # nvidia-smi name of the SXM5 part
        ("nvidia   h100 80gb hbm3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("NVIDIA H200", "h200"),
        ("h200", "h200"),
        ("NVIDIA GH200 480GB", "gh200"),
        ("NVIDIA B200", "b200"),
        ("a100", "a100-80gb-sxm"),  # documented default
        ("A100-80GB", "a100-80gb-sxm"),
        ("a100 40gb", "a100-40gb-sxm"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
        ("NVIDIA A100 80GB PCIe", "a100-80gb-pcie"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
        ("NVIDIA A100-PCIE-40GB", "a100-40gb-pcie"),
        ("NVIDIA A800-SXM4-80GB", "a800-80gb-sxm"),
        ("Tesla T4", "t4"),
        ("Tesla V100-SXM2-32GB", "v100-sxm2-32gb"),
        ("Tesla V100-PCIE-16GB", "v100-pcie-16gb"),
        ("v100", "v100-sxm2-16gb"),
        ("NVIDIA A10G", "a10g"),
        ("NVIDIA A10", "a10"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA L40S", "l40s"),
        ("  L40S  ", "l40s"),
        ("rtx4090", "rtx-4090"),
        ("GeForce RTX 4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("RTX-4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 3090", "rtx-3090"),
        ("NVIDIA GeForce RTX 5090", "rtx-5090"),
        ("NVIDIA GeForce RTX 5070 Ti", "rtx-5070-ti"),
        ("NVIDIA RTX A5000", "rtx-a5000"),
        ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
        ("NVIDIA RTX 5000 Ada Generation", "rtx-5000-ada"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-server"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000-workstation"),
        ("rtx pro 6000", "rtx-pro-6000-server"),
        ("NVIDIA H20", "h20"),
        ("mi300x", "mi300x"),
        ("MI300X", "mi300x"),
        ("AMD Instinct MI300X", "mi300x"),  # rocm-smi / torch name
        ("AMD Instinct MI325X", "mi325x"),
        ("AMD Instinct MI355X", "mi355x"),
        ("AMD Instinct MI250X", "mi250x"),
        ("mi250", "mi250x"),
        ("AMD Instinct MI210", "mi210"),
        ("AMD Instinct MI100", "mi100"),
        ("NVIDIA GeForce RTX 4070 Laptop GPU", "rtx-4070-laptop"),
        ("NVIDIA GeForce RTX 4070", "rtx-4070"),
        ("mi100", "mi100"),
        ("cpu", "cpu"),
    ],
)
def test_resolve(packaged: list[GpuProfile], query: str, expected: str) -> None:
    assert resolve_gpu(query, profiles=packaged).name == expected


# issue 13 item 9: each new GPU resolves by the product name nvidia-smi / torch print for it.
@pytest.mark.parametrize(
    ("product_name", "expected"),
    [
        ("NVIDIA H800", "h800"),  # nvidia-smi "NVIDIA H800, 81559 MiB"
        ("NVIDIA L20", "l20"),
        ("NVIDIA L40", "l40"),
        ("NVIDIA A40", "a40"),
        ("NVIDIA RTX A6000", "rtx-a6000"),
        ("NVIDIA B300 SXM6 AC", "b300"),  # nvidia-smi -L on HGX B300
        ("NVIDIA GB200", "gb200"),
        ("NVIDIA H20", "h20"),
        ("NVIDIA GeForce RTX 5090", "rtx-5090"),
        ("NVIDIA A30", "a30"),
        ("AMD Instinct MI300A", "mi300a"),  # rocminfo "Marketing Name: AMD Instinct MI300A"
        ("AMD Instinct MI300X", "mi300x"),  # the APU does not capture its GPU-only sibling
    ],
)
def test_new_gpus_resolve_by_product_name(packaged: list[GpuProfile], product_name: str, expected: str) -> None:
    # an L40 is not an L40S and an H800 is not an H100: the exact product name wins, not a neighbour
    assert resolve_gpu(product_name, profiles=packaged).name == expected


def test_new_gpu_figures_against_the_datasheets(packaged: list[GpuProfile]) -> None:
    p = by_name(packaged)
    # Dense = half the sparse datasheet figure: L40 BF16 362.1 sparse, FP8 724 sparse.
    assert p["l40"].tflops_bf16 == pytest.approx(362.1 / 2, rel=0.01)
    assert p["l40"].tflops_fp8 == pytest.approx(724 / 2, rel=0.01)
    # HGX B300 = 8 GPUs: 108 PFLOPS FP4 dense, 64 TB/s HBM -> 13.5 PF, 8 TB/s each.
    assert p["b300"].tflops_fp4 == 108_000 / 8 and p["b300"].memory_bandwidth_gbps == 64_000 / 8
    # GB200 NVL72 = 72 GPUs: 720 PFLOPS FP8 sparse -> 5 PF dense, 576 TB/s -> 8 TB/s each.
    assert p["gb200"].tflops_fp8 == 720_000 / 72 / 2 and p["gb200"].memory_bandwidth_gbps == 576_000 / 72
    # H800 = H100 SXM compute and memory, NVLink cut to 400 GB/s.
    assert p["h800"].tflops_bf16 == p["h100-sxm"].tflops_bf16
    assert p["h800"].memory_bytes == p["h100-sxm"].memory_bytes
    assert p["h800"].interconnect is not None and p["h800"].interconnect.bandwidth_gbps == 400
    # B300 has 288 GB HBM3e: torch sees 267.69 GiB, i.e. between 93 % and 100 % of 288e9 bytes.
    assert 0.93 * 288e9 < p["b300"].memory_bytes < 288e9
    assert p["b300"].compute_capability == "10.3" and p["b300"].supports.fp4


def test_short_name_defaults_point_at_existing_profiles(packaged: list[GpuProfile]) -> None:
    names = set(by_name(packaged))
    assert set(DEFAULT_FOR_SHORT_NAME.values()) <= names


def test_normalize_ignores_case_punctuation_and_vendor_words() -> None:
    assert normalize_gpu_name("NVIDIA GeForce RTX-4090") == "rtx4090"
    assert normalize_gpu_name("AMD Instinct MI300X") == "mi300x"
    assert normalize_gpu_name("Tesla V100-SXM2-16GB") == "v100sxm216gb"
    assert normalize_gpu_name("NVIDIA") == ""


def test_unknown_gpu_names_three_closest(packaged: list[GpuProfile]) -> None:
    with pytest.raises(HardwareError) as info:
        resolve_gpu("H100 SXM4", profiles=packaged)
    err = info.value
    assert err.exit_code == ExitCode.HARDWARE == 5
    assert "H100 SXM4" in err.message
    assert err.hint is not None
    closest = err.hint.split("closest: ", 1)[1].split(";", 1)[0].split(", ")
    assert len(closest) == 3
    assert closest[0] == "h100-sxm"
    assert "--gpu-memory 48GiB" in err.hint


@pytest.mark.parametrize("query", ["", "   ", "NVIDIA", "quantum-gpu-9000"])
def test_unresolvable_inputs(packaged: list[GpuProfile], query: str) -> None:
    with pytest.raises(HardwareError):
        resolve_gpu(query, profiles=packaged)


# ----------------------------------------------------------------------------- parse_memory


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("48GiB", 48 * 1_073_741_824),  # = 51_539_607_552
        ("48 GiB", 51_539_607_552),
        ("48gib", 51_539_607_552),
        ("80GB", 80_000_000_000),  # decimal
        ("80 gb", 80_000_000_000),
        ("81920MiB", 85_899_345_920),  # 81920 * 1_048_576
        ("85899345920", 85_899_345_920),  # plain bytes
        ("512 B", 512),
        ("1.5TiB", 1_649_267_441_664),  # 1.5 * 2**40
        ("2TB", 2_000_000_000_000),
        ("64KiB", 65_536),
        ("24G", 25_769_803_776),  # vLLM human_readable_int: uppercase = binary
        ("24g", 24_000_000_000),  # lowercase = decimal
        ("79.19GiB", 85_029_615_043),  # 79.19 * 1_073_741_824 = 85_029_615_042.56 -> nearest byte
    ],
)
def test_parse_memory(text: str, expected: int) -> None:
    assert parse_memory(text) == expected


@pytest.mark.parametrize(
    "text", ["", "   ", "abc", "48 parsecs", "-5GiB", "0", "0GiB", "GiB", "4 8GiB", "1e9", "48GiBs"]
)
def test_parse_memory_rejects(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_memory(text)
    assert info.value.exit_code == 2
    assert info.value.hint


# ----------------------------------------------------------------------------- user files

USER_H100 = """
gpus:
  - extends: h100-sxm
    name: h100-sxm
    memory_bytes: 85899345920
    memory_source: measured on our box (torch total_memory=81920MB)
"""

NEW_GPU = """
gpus:
  - name: lab-gpu
    display_name: Lab GPU 48GB
    product_names: [ACME Lab GPU 48GB]
    aliases: [labby]
    vendor: nvidia
    architecture: sm_89
    compute_capability: "8.9"
    memory_bytes: 51539607552
    memory_source: our own torch reading
    gpus_per_node: 4
    supports: {bf16: true, fp8: true, fp8_format: e4m3fn, int4_marlin: true}
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_user_profile_overrides_packaged_by_name(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    write(extra, "h100.yaml", USER_H100)
    profiles = load_profiles([extra], env={"HOME": str(tmp_path / "home")})
    h100 = resolve_gpu("NVIDIA H100 80GB HBM3", profiles=profiles)  # names kept from the base
    assert h100.name == "h100-sxm"
    assert h100.memory_bytes == 85_899_345_920
    assert h100.memory_source.startswith("measured on our box")
    assert h100.supports.fp8_format == "e4m3fn"  # inherited via extends
    assert [p.name for p in profiles].count("h100-sxm") == 1
    # Packaged loading is not changed by a user file.
    assert by_name(load_profiles(include_user_config=False))["h100-sxm"].memory_bytes == 81090 * MIB


def test_xdg_config_dir_is_read_and_explicit_dirs_win(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    write(xdg / "vllmkit" / "profiles", "lab.yaml", NEW_GPU)
    env = {"XDG_CONFIG_HOME": str(xdg), "HOME": str(tmp_path / "home")}
    assert user_config_dir(env) == xdg / "vllmkit" / "profiles"
    profiles = load_profiles(env=env)
    assert resolve_gpu("labby", profiles=profiles).memory_bytes == 48 * GIB
    assert resolve_gpu("ACME Lab GPU 48GB", profiles=profiles).name == "lab-gpu"
    explicit = tmp_path / "explicit"
    write(explicit / "gpus", "lab.yaml", NEW_GPU.replace("51539607552", "42949672960"))
    profiles = load_profiles([explicit], env=env)
    assert resolve_gpu("lab-gpu", profiles=profiles).memory_bytes == 40 * GIB


def test_home_config_dir_without_xdg(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".config" / "vllmkit" / "profiles", "lab.yaml", NEW_GPU)
    profiles = load_profiles(env={"HOME": str(home)})
    assert "lab-gpu" in by_name(profiles)
    assert "lab-gpu" not in by_name(load_profiles(env={"HOME": str(home)}, include_user_config=False))


def test_profile_dirs_from_env(tmp_path: Path) -> None:
    env = {"VLLMKIT_PROFILES_DIR": f"{tmp_path / 'a'}:{tmp_path / 'b'}:"}
    assert profile_dirs_from_env(env) == [tmp_path / "a", tmp_path / "b"]
    assert profile_dirs_from_env({}) == []


def test_missing_dirs_are_skipped(tmp_path: Path) -> None:
    profiles = load_profiles([tmp_path / "does-not-exist"], env={"HOME": str(tmp_path)})
    assert len(profiles) == len(load_profiles(include_user_config=False))


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("gpus:\n  - name: x\n    memory_bytes: [unclosed\n", "line"),  # YAML syntax error
        (NEW_GPU.replace("memory_bytes: 51539607552", "memory_bytes: lots"), "memory_bytes"),
        (NEW_GPU.replace("memory_source: our own torch reading", "memroy_source: typo"), "memroy_source"),
        (NEW_GPU.replace('compute_capability: "8.9"', 'compute_capability: "8.0"'), "architecture"),
        (NEW_GPU.replace("fp8_format: e4m3fn, ", ""), "supports"),
        ("gpus: 42\n", "gpus"),
        ("gpus:\n  - just a string\n", "profile #1"),
        ("gpus:\n  - extends: h999\n    name: y\n", "extends"),
    ],
)
def test_malformed_user_yaml_names_file_and_field(tmp_path: Path, text: str, field: str) -> None:
    path = write(tmp_path / "user", "broken.yaml", text)
    with pytest.raises(HardwareError) as info:
        load_profiles([tmp_path / "user"], env={"HOME": str(tmp_path)})
    assert str(path) in info.value.message
    assert field in info.value.message
    assert info.value.exit_code == 5
    assert info.value.hint


# ----------------------------------------------------------------------------- builders


def test_custom_profile_is_conservative() -> None:
    gpu = custom_profile(48 * GIB)
    assert gpu.name == "custom"
    assert gpu.memory_bytes == 51_539_607_552
    assert gpu.vendor == "nvidia" and gpu.runtime == "cuda"
    assert not gpu.fp8_supported
    assert not gpu.marlin_supported
    assert "--gpu-memory" in gpu.memory_source
    amd = custom_profile(64 * GIB, vendor="amd", name="my-mi")
    assert amd.runtime == "rocm" and amd.name == "my-mi"


def test_custom_profile_with_base_keeps_capabilities(packaged: list[GpuProfile]) -> None:
    h100 = resolve_gpu("h100", profiles=packaged)
    mig = custom_profile(40 * GIB, base=h100)
    assert mig.memory_bytes == 40 * GIB
    assert mig.fp8_supported and mig.marlin_supported
    assert mig.architecture == "sm_90"
    assert h100.memory_bytes == 81090 * MIB  # the base is not modified


def test_custom_profile_rejects_non_positive() -> None:
    with pytest.raises(UsageError):
        custom_profile(0)


def test_cpu_profile_takes_host_ram(packaged: list[GpuProfile]) -> None:
    cpu = cpu_profile(64 * GIB, profiles=packaged)
    assert cpu.vendor == "cpu" and cpu.runtime == "cpu"
    assert cpu.memory_bytes == 68_719_476_736
    assert not cpu.marlin_supported and not cpu.fp8_supported
    assert cpu_profile(GIB).memory_bytes == GIB  # loads the packaged template itself
    with pytest.raises(UsageError):
        cpu_profile(-1)


def test_marlin_needs_cuda_even_if_a_file_claims_it() -> None:
    amd = GpuProfile(
        name="odd-amd",
        display_name="Odd",
        vendor="amd",
        architecture="gfx942",
        gfx_target="gfx942",
        memory_bytes=GIB * 10,
        memory_source="test",
        supports=Supports(bf16=True, fp8=True, fp8_format="e4m3fnuz", int4_marlin=True),
    )
    assert amd.runtime == "rocm"
    assert not amd.marlin_supported


def test_gpu_memory_required_except_for_cpu() -> None:
    with pytest.raises(ValueError, match="memory_bytes is required"):
        GpuProfile(
            name="no-mem",
            display_name="No memory",
            vendor="nvidia",
            architecture="sm_90",
            compute_capability="9.0",
            memory_source="test",
            supports=Supports(bf16=True, fp8=False),
        )


def test_mi300a_is_an_mi300x_with_228_of_304_cus_and_a_96_gib_device_pool(packaged: list[GpuProfile]) -> None:
    p = by_name(packaged)
    a, x = p["mi300a"], p["mi300x"]
    # same CDNA3 CU and clock (2100 MHz), 228 CUs (rocminfo) vs 304: the datasheet's 980.6 / 1961.2 TFLOPS
    assert a.tflops_bf16 == pytest.approx(x.tflops_bf16 * 228 / 304, rel=1e-3)
    assert a.tflops_fp8 == pytest.approx(x.tflops_fp8 * 228 / 304, rel=1e-3)
    assert a.memory_bandwidth_gbps == x.memory_bandwidth_gbps == 5300  # same 8 HBM3 stacks
    assert a.gfx_target == x.gfx_target == "gfx942" and a.supports.fp8_format == "e4m3fnuz"
    # nominal: the default HIP device-allocation limit (96 GiB of the 128 GiB unified pool), not a torch reading
    assert a.memory_bytes == 96 * 2**30
    assert "NOMINAL" in a.memory_source


def test_memory_source_tags(packaged: list[GpuProfile]) -> None:
    """The plan's `total` row says where the size came from, read off each profile's own memory_source:
    a torch/vLLM reading of that SKU is measured, one taken from another SKU or from nvidia-smi's MiB is
    derived, a nominal size is estimated, --gpu-memory is given."""
    by_name = {p.name: p for p in packaged}
    # h100-sxm: torch get_device_properties; l20: "derived, not a torch reading"; h20-3e: nvidia-smi MiB
    assert by_name["h100-sxm"].memory_source_tag == "measured"
    assert by_name["l20"].memory_source_tag == "derived"
    assert by_name["h20-3e"].memory_source_tag == "derived"
    assert custom_profile(48 * GIB).memory_source_tag == "given"
    assert custom_profile(5 * GIB, base=by_name["h100-sxm"]).memory_source_tag == "given"
    for p in packaged:
        text = p.memory_source.lower()
        if text.startswith(("derived", "taken equal")):
            assert p.memory_source_tag == "derived", p.name
        if "nominal" in text[:20]:
            assert p.memory_source_tag == "estimated", p.name
    assert {p.memory_source_tag for p in packaged} <= {"measured", "derived", "estimated"}
