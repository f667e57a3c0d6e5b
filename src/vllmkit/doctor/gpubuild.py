"""Which GPUs a torch build carries kernels for, and what to install when it has none for this one.

One reading of torch's architecture names (torch.cuda.get_arch_list(): "sm_90", "sm_90a", "compute_90"; its
"... sm_120 is not compatible with the current PyTorch installation" warning) for the log diagnosis
(doctor/diagnose.py gpu-arch-not-in-build) and the environment check (doctor/envchecks.py check_torch).
"""

from __future__ import annotations

import re

_ARCH = re.compile(r"(sm|compute)_(\d+)(\d)(a|f)?")

# RTX 50 / RTX PRO Blackwell (sm_120) and GB10 (sm_121): PyTorch 2.7 was the first release with CUDA 12.8 wheels and
# Blackwell support; vllm#21633 shows a vLLM image whose torch listed sm_50 ... sm_90 only
BLACKWELL_BUILD_FIX = (
    "Blackwell consumer and workstation GPUs (sm_120, GB10 sm_121) need a PyTorch built with CUDA 12.8 or newer (the "
    "cu128+ wheels) and a vLLM built against that PyTorch: reinstall vLLM into a fresh environment with its own pinned "
    "torch, or use a newer vllm/vllm-openai image, and check `python -c \"import torch; "
    "print(torch.cuda.get_arch_list())\"` lists sm_120."
)


def parse_arch(name: str) -> tuple[str, int, int, str | None] | None:
    """'sm_90a' -> ('sm', 9, 0, 'a'); 'compute_120' -> ('compute', 12, 0, None); anything else -> None."""
    m = _ARCH.fullmatch(name.strip())
    return (m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)) if m else None


def arch_covers(arch_list: list[str], capability: str) -> bool:
    """Whether a torch build with these architectures runs on a GPU of this compute capability ("12.0"): a cubin
    for sm_XY runs on the same major at minor >= Y (CUDA binary compatibility), an arch-specific sm_XYa only on X.Y,
    and PTX (compute_XY) is compiled just in time for any X.Y at or below the GPU's."""
    try:
        major, minor = (int(x) for x in capability.split(".")[:2])
    except ValueError:
        return True  # unknown capability: nothing to say
    for a in arch_list:
        parsed = parse_arch(a)
        if parsed is None:
            continue
        kind, big, small, suffix = parsed
        if kind == "compute" and (big, small) <= (major, minor):
            return True
        if kind == "sm" and big == major and (small == minor if suffix else small <= minor):
            return True
    return False


def all_newer(arch_list: list[str], sm: int) -> bool:
    """Every entry a cubin for a newer GPU than sm_<sm> (120 for sm_120): a build that dropped this architecture."""
    parsed = [parse_arch(a) for a in arch_list]
    return bool(parsed) and all(p is not None and p[0] == "sm" and p[1] * 10 + p[2] > sm for p in parsed)
