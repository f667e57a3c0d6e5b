"""The CUDA-graph estimate of hybrid Gated-DeltaNet models from vLLM 0.26 (vllm#50780): its first FULL
capture is warmed with about max_num_batched_tokens tokens of context, and what the GDN path allocates
for them (~128 KiB a token on the 64-layer Qwen3.5-27B class) is charged as graph memory."""

from __future__ import annotations

from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
KIB = 1024


def _graphs(model: str, **kw) -> tuple[int, str]:
    req = PlanRequest(model=model, source="catalog", gpu="h100", max_model_len=32768, **kw)
    plan = build_plan(req, ENV)
    return plan.memory.cudagraph_bytes, plan.memory.notes.get("cudagraph", "")


def test_qwen35_27b_is_charged_128_kib_per_batched_token_from_0_26() -> None:
    # H100 80 GB: vLLM's default budget is 8192 batched tokens (EngineArgs.get_batch_defaults, >= 70 GiB)
    before, _ = _graphs("Qwen/Qwen3.5-27B", vllm_version="0.25.1", tensor_parallel_size=1)
    after, note = _graphs("Qwen/Qwen3.5-27B", vllm_version="0.26.1", tensor_parallel_size=1)
    assert after - before == 128 * KIB * 8192  # 1.0 GiB
    assert "vllm#50780" in note
    # the token budget sets it: 2048 batched tokens -> a quarter
    small, _ = _graphs("Qwen/Qwen3.5-27B", vllm_version="0.26.1", tensor_parallel_size=1, max_num_batched_tokens=2048)
    assert small - before == 128 * KIB * 2048


def test_split_over_tp_and_absent_without_graphs_or_gdn() -> None:
    before, _ = _graphs("Qwen/Qwen3-Next-80B-A3B-Instruct", vllm_version="0.25.1", tensor_parallel_size=2)
    after, _ = _graphs("Qwen/Qwen3-Next-80B-A3B-Instruct", vllm_version="0.26.1", tensor_parallel_size=2)
    assert after - before == 128 * KIB * 8192 // 2
    eager, _ = _graphs("Qwen/Qwen3.5-27B", vllm_version="0.26.1", enforce_eager=True)
    assert eager == 0
    # a model without GDN layers is not charged
    dense_25, _ = _graphs("Qwen/Qwen3-8B", vllm_version="0.25.1")
    dense_26, _ = _graphs("Qwen/Qwen3-8B", vllm_version="0.26.1")
    assert dense_25 == dense_26
