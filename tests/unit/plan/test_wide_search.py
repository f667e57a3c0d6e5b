"""A model far larger than the GPU: the planner keeps adding pipeline stages past its usual four nodes
until the context is usable, instead of recommending a plan that fits only a few hundred tokens.

Kimi-K2.5 (INT4 experts, 554 GiB of weights in the catalog's size listing) on L4s (22.05 GiB as torch
reports, 0.92 x that requested = 20.29 GiB): 32 GPUs (TP 8 x PP 4) hold 554 / 32 = 17.3 GiB of weights each
on average, but the third stage holds 16 of the 61 layers, all with experts (the first stage's first layer is
dense, first_k_dense_replace = 1): 18.85 GiB, which with non-torch (> 1 GiB with TP/PP, torch.compile's
share), activation and CUDA graphs leaves no KV memory there; 64 GPUs hold half that and leave ~9 GiB each for
KV. So the usable plan needs 64."""

from __future__ import annotations

from vllmkit.plan.candidates import CONTEXT_FLOOR
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"VLLMKIT_NO_CALIBRATION": "1"}


def test_searches_past_four_nodes_for_a_usable_context() -> None:
    plan = build_plan(PlanRequest(model="moonshotai/Kimi-K2.5", source="catalog", gpu="l4"), ENV)
    assert plan.fits
    assert plan.gpu.count > 32  # four nodes of eight L4s were not enough
    assert plan.kv_cache.max_model_len >= CONTEXT_FLOOR
    # the 32-GPU option is listed without KV memory: vLLM would name the first stage's 107,872 tokens as its
    # estimate, which the heavier third stage does not hold (it said "fits up to 107,872 tokens")
    notes = [a.note for a in plan.alternatives if a.tensor_parallel_size == 8 and a.pipeline_parallel_size == 4]
    assert notes == ["no KV memory"]


def test_given_gpu_count_is_not_widened() -> None:
    plan = build_plan(PlanRequest(model="moonshotai/Kimi-K2.5", source="catalog", gpu="l4", gpu_count=32), ENV)
    assert plan.gpu.count <= 32
    assert not plan.fits  # what 32 L4s leave, reported as is: vLLM's estimate and what every stage holds
    assert plan.estimated_max_model_len and plan.usable_max_model_len == 0


def test_a_model_that_fits_within_four_nodes_is_unchanged() -> None:
    # Llama-3.3-70B BF16 (~131 GiB) on H100s: two or four GPUs, never a wide search
    plan = build_plan(PlanRequest(model="meta-llama/Llama-3.3-70B-Instruct", source="catalog", gpu="h100"), ENV)
    assert plan.fits and plan.gpu.count <= 8


def test_a_single_gpu_that_fits_only_a_short_context_is_one_gpu() -> None:
    # Llama-3.3-70B FP8 (67.7 GiB) on H100s: one GPU (72.85 GiB requested) leaves ~2 GiB of KV, a few
    # thousand tokens; the reason names that option as one GPU, not "1 GPUs"
    plan = build_plan(PlanRequest(model="meta-llama/Llama-3.3-70B-Instruct", source="catalog", gpu="h100",
                                  gpu_count=2), ENV)
    assert plan.gpu.count == 2
    assert any("TP=1 PP=1 (1 GPU) fits only a" in r for r in plan.reasons)
