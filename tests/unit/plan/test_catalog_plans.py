"""Every bundled catalog model plans offline on a few GPUs without crashing, and the plan is
internally consistent (the checks below follow from vLLM's formulas, not from our output)."""

from __future__ import annotations

import pytest

from vllmkit.hub.catalog import load_catalog
from vllmkit.launch.command import attach_serve_command
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

IDS = [e.id for e in load_catalog()]


@pytest.mark.parametrize("model_id", IDS)
@pytest.mark.parametrize("gpu", ["h100", "mi300x"])
def test_catalog_model_plans(model_id: str, gpu: str) -> None:
    req = PlanRequest(model=model_id, source="catalog", gpu=gpu)
    plan = attach_serve_command(build_plan(req, {"VLLMKIT_NO_CALIBRATION": "1"}), req)
    kv = plan.kv_cache
    mem = plan.memory
    assert plan.gpu.count == plan.parallel.tensor_parallel_size * plan.parallel.pipeline_parallel_size
    if plan.fits:
        # num_blocks = available // bytes_per_block (vLLM get_kv_cache_config_from_groups)
        assert kv.num_blocks == mem.kv_cache_bytes // kv.bytes_per_block
        # tokens = int(concurrency * max_model_len) (vLLM >= 0.21)
        assert abs(kv.tokens - kv.max_concurrency * kv.max_model_len) <= kv.max_model_len * 1e-4 + 1
        assert kv.max_model_len <= plan.model.native_max_model_len
    assert mem.requested_bytes <= mem.total_bytes
    assert plan.serve_command and plan.serve_command[0] == "vllm"


@pytest.mark.parametrize(("model_id", "hybrid"), [
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", False),  # chunked local + full attention, no recurrent state
    ("google/gemma-3-12b-it", False),  # sliding + full attention
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", True),  # gated delta net + attention
    ("ibm-granite/granite-4.0-h-small", True),  # mamba2 + attention
])
def test_prefix_caching_note_names_align_mode_only_for_recurrent_hybrids(model_id: str, hybrid: bool) -> None:
    """vLLM's 'align' mode is a mamba-state cache mode; attention-only layer mixes never use it."""
    from vllmkit.launch.presets import plan_features

    req = PlanRequest(model=model_id, source="catalog", gpu="h200")
    plan = build_plan(req, {"VLLMKIT_NO_CALIBRATION": "1"})
    assert plan.model.is_hybrid is hybrid
    note = plan_features(plan, req, registry=None).prefix_caching.detail
    assert ("'align' mode" in note) is hybrid
