"""Facts about this host that the vLLM CPU build sizes against (read from /sys and /proc)."""

from __future__ import annotations

import functools
import os


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def cgroup_memory_limit(root: str = "/sys/fs/cgroup") -> int | None:
    """The container's memory limit as vLLM reads it (vllm/utils/cpu_resource_utils.py
    get_cgroup_memory_limit): cgroup v2 `memory.max`, else cgroup v1 `memory/memory.limit_in_bytes`
    where a value of 2**62 or more is v1's "unlimited" sentinel; None without a limit."""
    v2 = _read_int(f"{root}/memory.max")  # "max" (no limit) is not a number
    if v2 is not None:
        return v2
    v1 = _read_int(f"{root}/memory/memory.limit_in_bytes")
    if v1 is not None and v1 < (1 << 62):
        return v1
    return None


def host_memory_bytes(sys_root: str = "/sys", proc_root: str = "/proc") -> int:
    """Memory the vLLM CPU worker sizes against: NUMA node 0's MemTotal
    (vllm/utils/cpu_resource_utils.py get_memory_node_info), else the system total, clamped to the
    cgroup memory limit (containers, cgroup v2 or v1) when that is lower."""
    total = 0
    try:
        with open(f"{sys_root}/devices/system/node/node0/meminfo", encoding="ascii") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 4 and parts[2] == "MemTotal:":
                    total = int(parts[3]) * 1024
                    break
    except OSError:
        pass
    if not total:
        try:
            with open(f"{proc_root}/meminfo", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("MemTotal:"):
                        total = int(line.split()[1]) * 1024
                        break
        except OSError:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    limit = cgroup_memory_limit(f"{sys_root}/fs/cgroup")
    if limit is not None and 0 < limit < total:
        total = limit
    return total


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU feature flags of /proc/cpuinfo (read once per process)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def cpu_has_amx() -> bool:
    """vLLM's CPU MLA uses AMX kernels (block size 128) when torch sees AMX tiles."""
    return "amx_tile" in cpu_flags()


def cpu_has_avx512_bf16() -> bool:
    """vLLM's CPU platform then stores SSM state in float32 (accelerated GDN backend)."""
    return "avx512_bf16" in cpu_flags()
