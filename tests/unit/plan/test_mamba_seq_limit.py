"""Hybrids (mamba / gated-delta-net + attention) need one mamba cache block per decoding sequence under FULL
decode CUDA graphs; since vllm PR #38270 (0.19) the engine refuses to start when max_num_seqs exceeds the
block count ("max_num_seqs (1024) exceeds available Mamba cache blocks (856) ... Please lower max_num_seqs to
at most 856 or increase gpu_memory_utilization", config/compilation.py in 0.32).

Public case: vllm-project/recipes PR #551 - Qwen/Qwen3.6-27B-FP8 on one H100 at --gpu-memory-utilization
0.95 fails with exactly that message (856 blocks against the default 1024). The bundled catalog has the
BF16 checkpoint; served with --quantization fp8 it loads slightly smaller weights than the published FP8
checkpoint (which keeps its vision tower and a few layers in BF16), so the block count is compared loosely.
"""

from __future__ import annotations

import json

from tests.clirun import invoke
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}


def _plan(**kw):
    base = dict(model="Qwen/Qwen3.6-27B", gpu="h100", source="catalog", tensor_parallel_size=1,
                quantization="fp8", gpu_memory_utilization=0.95)
    return build_plan(PlanRequest(**{**base, **kw}), ENV)


def test_recipe_case_lowers_the_default_below_the_blocks() -> None:
    plan = _plan(vllm_version="0.32.0")
    assert plan.fits
    # the default 1024 is refused; the plan serves at most one sequence per block
    assert plan.settings.max_num_seqs < 1024
    assert plan.settings.max_num_seqs <= plan.kv_cache.num_blocks
    assert abs(plan.settings.max_num_seqs - 856) / 856 < 0.05  # the published log: 856 blocks
    assert any("Mamba cache blocks" in w for w in plan.warnings)
    # the serve line carries the lowered value
    result = invoke(["plan", "Qwen/Qwen3.6-27B", "--gpu", "h100", "--source", "catalog", "-tp", "1",
                     "--quantization", "fp8", "--gpu-memory-utilization", "0.95", "--vllm-version", "0.32.0",
                     "--json"], env=ENV)
    assert result.exit_code == 0
    command = json.loads(result.stdout)["data"]["serve_command"]
    assert command[command.index("--max-num-seqs") + 1] == str(plan.settings.max_num_seqs)


def test_no_check_before_0_19_nor_without_cuda_graphs_nor_for_pure_attention() -> None:
    assert _plan(vllm_version="0.18.0").settings.max_num_seqs == 1024
    assert _plan(vllm_version="0.32.0", enforce_eager=True).settings.max_num_seqs == 1024
    dense = build_plan(PlanRequest(model="Qwen/Qwen3-32B", gpu="h100", source="catalog", tensor_parallel_size=1,
                                   quantization="fp8", gpu_memory_utilization=0.95, max_model_len=40960), ENV)
    assert dense.settings.max_num_seqs == 1024  # 1024 > its block count too, but it has no mamba layers


def test_an_explicit_max_num_seqs_above_the_blocks_is_refused_with_the_fix() -> None:
    result = invoke(["plan", "Qwen/Qwen3.6-27B", "--gpu", "h100", "--source", "catalog", "-tp", "1",
                     "--quantization", "fp8", "--gpu-memory-utilization", "0.95", "--max-num-seqs", "1024",
                     "--vllm-version", "0.32.0", "--json"], env=ENV)
    assert result.exit_code == 3
    err = json.loads(result.stdout)["errors"][0]
    assert "exceeds the" in err["message"] and "Mamba cache blocks" in err["message"]
    assert "--max-num-seqs" in err["hint"]


def test_the_performance_model_runs_no_more_sequences_than_blocks() -> None:
    """With 2,000 clients the scheduler may run at most max_num_seqs sequences; on a hybrid that vLLM bounds
    by its mamba blocks the simulated batch stays at or below the block count."""
    from vllmkit.estimate.serving import Workload
    from vllmkit.plan.performance import PerfOptions

    plan = build_plan(PlanRequest(model="Qwen/Qwen3.6-27B", gpu="h100", source="catalog", tensor_parallel_size=1,
                                  quantization="fp8", gpu_memory_utilization=0.95, max_model_len=8192,
                                  vllm_version="0.32.0"),
                      ENV, perf=PerfOptions(workload=Workload(512, 64, concurrency=2000, num_requests=4000)))
    blocks = plan.kv_cache.num_blocks
    assert plan.settings.max_num_seqs <= blocks < 1024 or plan.settings.max_num_seqs == 1024
    assert plan.performance is not None
    assert plan.performance.batch <= min(blocks, plan.settings.max_num_seqs)
