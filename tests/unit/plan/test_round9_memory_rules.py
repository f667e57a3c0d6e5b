"""Memory rules added in round 9, each checked against the public log it was read from.

Where the sort-based dummy sampler (vLLM 0.11.1-0.16 by default; 0.8-0.11.0 without FlashInfer) sets
the profile-run peak, vLLM's own split of the budget leaves about 0.25 GiB beside the sort at TP=1
(its "non-torch" 0.13 GiB plus the runner's persistent buffers), not the 1.125 GiB the non-torch
constant charges when the forward pass sets the peak. Logs: llm-d planner's Qwen3-14B version sweep on
an H100 (0.15.0 / 0.16.0: activation 5.64 GiB, non-torch 0.13, KV 41.94 GiB at 0.95; 0.17.0 with the
Triton kernel: KV 45.34 GiB), llm-d-benchmark's H100 runs (0.14: Llama-3.1-8B KV 51.38 GiB, Qwen3-32B
4.45 GiB at 0.9 and 16,000 tokens) and vllm#27508 (gpt-oss-120b, 0.11.0 without FlashInfer: 1.71 GiB,
tests/unit/plan/test_start_verdicts.py).
"""

from __future__ import annotations

import pytest

from vllmkit.estimate.memory import NON_TORCH_BASE, NON_TORCH_FORWARD_SHARE, NON_TORCH_SORT_PEAK_REST
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
GIB = 1 << 30
MIB = 1 << 20


def _plan(model: str, version: str, util: float, max_len: int, **kw):
    base = dict(model=model, source="catalog", gpu="h100-sxm", vllm_version=version, tensor_parallel_size=1,
                gpu_memory_utilization=util, max_model_len=max_len, block_size=128)
    base.update(kw)
    return build_plan(PlanRequest(**base), ENV)


def test_the_rest_beside_the_sort_is_what_the_logs_split_out() -> None:
    # activation + non-torch - 1024 x vocab x 38 B, in GiB: Qwen3-14B 5.64 + 0.13 - 5.506 = 0.264 (0.15 / 0.16),
    # Llama-3.1-8B 4.76 + 0.13 - 4.648 = 0.242, gpt-oss-20b 7.38 + 0.13 - 7.287 = 0.223,
    # Qwen3-32B 5.64 + 0.14 - 5.506 = 0.274 (0.14)
    rests = [5.64 + 0.13 - 1024 * 151936 * 38 / GIB, 4.76 + 0.13 - 1024 * 128256 * 38 / GIB,
             7.38 + 0.13 - 1024 * 201088 * 38 / GIB, 5.64 + 0.14 - 1024 * 151936 * 38 / GIB]
    assert all(abs(r - NON_TORCH_SORT_PEAK_REST / GIB) < 0.04 for r in rests)
    assert NON_TORCH_FORWARD_SHARE == NON_TORCH_BASE - NON_TORCH_SORT_PEAK_REST


@pytest.mark.parametrize(("version", "logged_kv_gib"), [("0.15.0", 41.94), ("0.16.0", 41.94), ("0.17.0", 45.34)])
def test_qwen3_14b_version_sweep(version: str, logged_kv_gib: float) -> None:
    """The same start on three releases: the sort (0.15, 0.16) costs 3.4 GiB of KV, not 4.3."""
    plan = _plan("Qwen/Qwen3-14B", version, 0.95, 40960)
    assert plan.memory.kv_cache_bytes / GIB == pytest.approx(logged_kv_gib, rel=0.01)


@pytest.mark.parametrize(("model", "logged_kv_gib"), [("meta-llama/Llama-3.1-8B-Instruct", 51.38),
                                                      ("Qwen/Qwen3-32B", 4.45)])
def test_llm_d_benchmark_h100_runs(model: str, logged_kv_gib: float) -> None:
    plan = _plan(model, "0.14.0", 0.9, 16000)
    assert plan.memory.kv_cache_bytes / GIB == pytest.approx(logged_kv_gib, rel=0.02)
    assert "forward-pass share" in plan.memory.notes["non_torch"]


def test_qwen3_32b_starts_with_one_16000_token_request() -> None:
    """4.45 GiB left for 16,000 x 256 KiB = 3.91 GiB: it started. With the whole constant charged the
    plan left 3.61 GiB and predicted a failure."""
    assert _plan("Qwen/Qwen3-32B", "0.14.0", 0.9, 16000).fits


def test_the_forward_pass_peak_keeps_the_whole_constant() -> None:
    """0.17+ (Triton top-k/top-p) and multi-GPU sort-path starts charge the constant as before:
    the llm-d planner 0.19 logs, and the 0.10 TP=2 / TP=4 x PP=2 logs without FlashInfer, fit it."""
    light = _plan("Qwen/Qwen3-14B", "0.17.0", 0.95, 40960)
    assert "forward-pass share" not in light.memory.notes["non_torch"]
    assert light.memory.non_torch_bytes == NON_TORCH_BASE
    tp2 = _plan("Qwen/Qwen3-32B", "0.14.0", 0.9, 16000, tensor_parallel_size=2)
    assert "forward-pass share" not in tp2.memory.notes["non_torch"]
    # llm-d-benchmark TP=2 log: 34.49 GiB (the plan stays within 2 %, on the safe side)
    assert tp2.memory.kv_cache_bytes / GIB == pytest.approx(34.49, rel=0.02)
    assert tp2.memory.kv_cache_bytes / GIB < 34.49
