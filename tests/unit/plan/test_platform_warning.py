"""Plans for GPUs the release's published builds do not run on say so (plan/candidates.py platform_warning).

The boundary is read from vLLM's own wheels, not from our code: the CUDA fat binaries in vllm/_C.abi3.so of the
PyPI wheels (an entry's header names its target) hold sm_70 cubins in 0.14.0, 0.17.0, 0.18.0 and 0.19.0 and none
in 0.20.0 (nor in 0.26.0's _C_stable_libtorch.abi3.so), whose lowest target is 7.5; the installation guide reads
"compute capability 7.5 or higher (e.g., T4, RTX20xx, ...)" at v0.21.0 where v0.14.0's listed V100. vLLM's ROCm
guide lists gfx90a / gfx942 / gfx950 and Radeon RX 7900 / 9000 targets, not the MI100's gfx908."""

from __future__ import annotations

import pytest

from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}


def _warnings(gpu: str, version: str) -> list[str]:
    req = PlanRequest(model="Qwen/Qwen2.5-7B-Instruct", source="catalog", gpu=gpu, vllm_version=version)
    return [w for w in build_plan(req, ENV).warnings if "kernel" in w or "installation guide" in w]


@pytest.mark.parametrize(("gpu", "version", "warned"), [
    ("v100-sxm2-32gb", "0.20.0", True),
    ("v100-sxm2-32gb", "0.26.0", True),
    ("v100-pcie-16gb", "0.30.0", True),
    ("v100-sxm2-32gb", "0.19.0", False),  # the last release with sm_70 kernels
    ("v100-sxm2-32gb", "0.8.5", False),
    ("t4", "0.30.0", False),  # 7.5: the lowest target the wheels keep
    ("rtx-2080-ti", "0.30.0", False),
    ("a100-80gb-sxm", "0.30.0", False),
])
def test_volta_is_flagged_from_0_20(gpu: str, version: str, warned: bool) -> None:
    found = _warnings(gpu, version)
    assert bool(found) == warned, found
    if warned:
        assert "compute capability 7.0" in found[0] and "--vllm-version 0.19.0" in found[0]


@pytest.mark.parametrize(("gpu", "warned"), [("mi100", True), ("mi210", False), ("mi300x", False), ("mi355x", False)])
def test_rocm_targets_outside_the_guide_are_flagged(gpu: str, warned: bool) -> None:
    found = _warnings(gpu, "0.26.0")
    assert bool(found) == warned, found
    if warned:
        assert "gfx908" in found[0] and "PYTORCH_ROCM_ARCH=gfx908" in found[0]
