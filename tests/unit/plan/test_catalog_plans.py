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
