"""The planner's pieces: ranking rules, the context search, and that per-candidate work is done once.

Expected values follow from the rules the planner documents (plan/ranking.py, plan/candidates.py
docstrings: seeds/004 §6 and vLLM's kernel support), not from running the planner."""

from __future__ import annotations

import pytest

from vllmkit.hardware.profiles import load_profiles, resolve_gpu
from vllmkit.plan import candidates as cand_module
from vllmkit.plan.evaluate import at_length
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.ranking import precision_allowed, precision_rank, rank
from vllmkit.plan.service import build_plan

ENV = {"VLLMKIT_NO_CALIBRATION": "1"}


def gpu(name: str):
    return resolve_gpu(name, profiles=load_profiles([], env={}))


def test_fp8_needs_native_fp8() -> None:
    # FP8 GEMMs need sm >= 8.9 (Ada/Hopper) or gfx942+ (MI300): A100 is sm 8.0
    assert precision_allowed("fp8", gpu("a100"))[0] is False
    assert precision_allowed("fp8", gpu("h100"))[0] is True
    assert precision_allowed("fp8", gpu("mi300x"))[0] is True


def test_int4_below_ampere_is_allowed_with_a_note() -> None:
    allowed, note = precision_allowed("awq", gpu("v100"))
    assert allowed and "Marlin" in note


def test_mi300_prefers_fp8_and_nvidia_prefers_bf16() -> None:
    assert precision_rank("fp8", gpu("mi300x")) < precision_rank("bf16", gpu("mi300x"))
    assert precision_rank("bf16", gpu("h100")) < precision_rank("fp8", gpu("h100"))


def test_rank_orders_tier_then_gpus_then_precision() -> None:
    h100 = gpu("h100")
    common = dict(base_weight_bytes=64 * 10**9, max_model_len=32768, profile=h100, gpu_count_given=False)
    fits_2_bf16 = rank(useful=True, fits=True, label="bf16", gpus=2, **common)
    fits_1_fp8 = rank(useful=True, fits=True, label="fp8", gpus=1, **common)
    tiny_ctx_1 = rank(useful=False, fits=True, label="bf16", gpus=1, **common)
    assert fits_1_fp8 < fits_2_bf16 < tiny_ctx_1  # fewer GPUs first; a useless context last
    # with --gpu-count the GPUs are paid for: precision first
    given = {**common, "gpu_count_given": True}
    assert rank(useful=True, fits=True, label="bf16", gpus=2, **given) < rank(
        useful=True, fits=True, label="fp8", gpus=1, **given)


def test_each_candidate_is_prepared_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The context search varies only the KV capacity: specs, grouping, weights and the budget are
    computed once per candidate (the issue counted 41 full evaluations for this plan)."""
    prepared: list[tuple[int, int]] = []
    evaluated: list[int] = []
    real_prepare, real_eval = cand_module.prepare_candidate, cand_module.evaluate_candidates

    def counting_prepare(variant, tp, pp, settings, rules):
        prepared.append((variant.label, tp, pp, settings.max_num_seqs))
        return real_prepare(variant, tp, pp, settings, rules)

    def counting_eval(*args, **kwargs):
        out = real_eval(*args, **kwargs)
        evaluated.append(len(out))
        return out

    monkeypatch.setattr(cand_module, "prepare_candidate", counting_prepare)
    monkeypatch.setattr("vllmkit.plan.service.evaluate_candidates", counting_eval)
    plan = build_plan(PlanRequest(model="Qwen/Qwen3-32B", source="catalog", gpu="l40s"), ENV)
    assert plan.fits
    # once per candidate, and once per lower --max-num-seqs tried where the default leaves no usable context
    # (candidates.fewer_sequences): never twice the same
    assert evaluated and len(prepared) >= evaluated[0] and len(set(prepared)) == len(prepared)


@pytest.mark.parametrize(("model", "gpu_name"), [("Qwen/Qwen3-32B", "l40s"), ("meta-llama/Llama-3.1-70B-Instruct", "h100")])
def test_fitted_context_is_the_largest_kib_multiple_that_keeps_four_requests(model: str, gpu_name: str) -> None:
    """`fit_context` (min_concurrency 4): the chosen length holds >= 4 requests and the next multiple
    of 1024 would not (or the length is the native one)."""
    req = PlanRequest(model=model, source="catalog", gpu=gpu_name, tensor_parallel_size=None)
    plan = build_plan(req, ENV)
    length = plan.settings.max_model_len
    assert plan.kv_cache.max_concurrency >= 4
    if length == plan.model.native_max_model_len:
        return
    assert length % 1024 == 0
    # re-evaluate the chosen candidate one step longer, through the same pure functions
    from vllmkit.engine.versions import rules_for
    from vllmkit.hub.resolve import resolve_model
    from vllmkit.plan.candidates import engine_settings, prepare_candidate
    from vllmkit.plan.variants import make_variant

    rules = rules_for(plan.vllm_version)
    meta = resolve_model(plan.model.id, source="catalog", revision=None, refresh=False, env=ENV)
    variant = make_variant(meta, rules)
    tp, pp = plan.parallel.tensor_parallel_size, plan.parallel.pipeline_parallel_size
    settings = engine_settings(req, gpu(gpu_name), rules, "auto", variant.arch, tp, pp, None)
    prep = prepare_candidate(variant, tp, pp, settings, rules)
    assert at_length(prep, length).capacity.max_concurrency >= 4
    assert at_length(prep, length + 1024).capacity.max_concurrency < 4


def test_every_plan_request_field_can_be_given_as_an_override() -> None:
    """check-log takes the planning options plan takes (cli/options.py declares them once) as PlanOverrides; a
    PlanRequest field missing there is a flag check-log accepts and drops (it dropped --enable-lora,
    --speculative-config, --no-flashinfer and seven more until round 22)."""
    from vllmkit.plan.models import PlanOverrides, PlanRequest

    assert set(PlanOverrides.model_fields) == set(PlanRequest.model_fields)
    for name, field in PlanOverrides.model_fields.items():
        assert field.default is None, name  # None = not given, so the log or the default decides
