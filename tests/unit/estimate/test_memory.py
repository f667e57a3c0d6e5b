"""The memory budget arithmetic (vllm/v1/worker/gpu_worker.py, reference §1)."""

from __future__ import annotations

import math

from vllmkit.estimate.memory import MemoryTerm, kv_budget, requested_bytes

GIB = 1 << 30


def term(n: int, source: str = "estimated") -> MemoryTerm:
    return MemoryTerm(bytes=n, source=source)


def test_requested_is_ceil_of_total_times_utilization() -> None:
    total = 85_031_714_816  # H100 SXM as torch reports it (79.19 GiB)
    assert requested_bytes(total, 0.92) == math.ceil(total * 0.92)


def test_kv_is_what_is_left() -> None:
    # RTX PRO 6000 Qwen3-32B TP=2 log (benchmarks/data): 95.01 GiB x 0.426, weights 30.59 GiB,
    # and 1.66 GiB of other memory leave the printed 8.22 GiB (to the log's 0.01 GiB rounding)
    total = int(95.01 * GIB)
    b = kv_budget(total_bytes=total, utilization=0.426, weights=term(int(30.59 * GIB), "measured"),
                  non_torch=term(int(0.66 * GIB)), activation=term(int(0.8 * GIB)), cudagraph=term(int(0.2 * GIB)))
    assert round(b.kv_cache.bytes / GIB, 2) == 8.22
    assert b.kv_cache.source == "estimated"


def test_kv_cache_memory_bytes_bypasses_the_budget() -> None:
    b = kv_budget(total_bytes=80 * GIB, utilization=0.9, weights=term(90 * GIB), non_torch=term(0),
                  activation=term(0), cudagraph=term(0), kv_cache_memory_bytes=123_456)
    assert b.kv_cache.bytes == 123_456 and b.kv_cache.source == "given"


def test_all_measured_terms_make_a_derived_kv() -> None:
    b = kv_budget(total_bytes=10 * GIB, utilization=1.0, weights=term(GIB, "measured"),
                  non_torch=term(GIB, "calibrated"), activation=term(GIB, "calibrated"), cudagraph=term(0, "derived"))
    assert b.kv_cache.bytes == 7 * GIB and b.kv_cache.source == "derived"
