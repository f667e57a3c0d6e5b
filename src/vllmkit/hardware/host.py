"""Facts about this host that the vLLM CPU build sizes against (read from /sys and /proc)."""

from __future__ import annotations

import functools
import os


def host_memory_bytes() -> int:
    """Memory the vLLM CPU worker sizes against: NUMA node 0's MemTotal
    (vllm/utils/cpu_resource_utils.py get_memory_node_info), else the system total, clamped to the
    cgroup memory limit (containers)."""
    total = 0
    try:
        with open("/sys/devices/system/node/node0/meminfo", encoding="ascii") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 4 and parts[2] == "MemTotal:":
                    total = int(parts[3]) * 1024
                    break
    except OSError:
        pass
    if not total:
        try:
            with open("/proc/meminfo", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("MemTotal:"):
                        total = int(line.split()[1]) * 1024
                        break
        except OSError:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as fh:
            limit = fh.read().strip()
        if limit.isdigit() and 0 < int(limit) < total:
            total = int(limit)
    except OSError:
        pass
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
