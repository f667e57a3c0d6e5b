"""Capacity planning (plan/capacity.py): the fleet arithmetic and its invariants, and the search on a
catalog model (offline). The step costs come from the performance model, whose accuracy is measured
against public runs in benchmarks/perf_accuracy.py; here only the search's logic is checked."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllmkit.errors import DoesNotFitError, UsageError
from vllmkit.plan.capacity import (
    CapacityRequest,
    parse_duration_ms,
    parse_redundancy,
    plan_capacity,
    replicas_needed,
)

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}


def test_replicas_by_hand() -> None:
    # 20 req/s on replicas that sustain 7 req/s, run at 70 %: 20 / 4.9 = 4.08 -> 5, plus one spare
    assert replicas_needed(20, 7, 0.3, 1) == 6
    assert replicas_needed(4.9, 7, 0.3, 0) == 1  # exactly at the limit needs no second replica


@settings(max_examples=300, deadline=None)
@given(st.floats(0.01, 1e4), st.floats(0.01, 1e3), st.floats(0, 0.9), st.integers(0, 3))
def test_doubling_qps_doubles_serving_replicas_within_rounding(qps, goodput, headroom, spare) -> None:
    one = replicas_needed(qps, goodput, headroom, spare) - spare
    two = replicas_needed(2 * qps, goodput, headroom, spare) - spare
    assert 2 * one - 1 <= two <= 2 * one


@settings(max_examples=300, deadline=None)
@given(st.floats(0.01, 1e4), st.floats(0.01, 1e3), st.floats(0.01, 1e3), st.floats(0, 0.9))
def test_less_goodput_never_needs_fewer_replicas(qps, g1, g2, headroom) -> None:
    lo, hi = sorted((g1, g2))
    assert replicas_needed(qps, lo, headroom, 1) >= replicas_needed(qps, hi, headroom, 1)


def test_parse_slo_and_redundancy() -> None:
    assert parse_duration_ms("2s", "--ttft-p99") == 2000
    assert parse_duration_ms("50ms", "--tpot-p99") == 50
    assert parse_duration_ms("0.5s", "--ttft-p99") == 500
    assert parse_redundancy("N+1") == 1 and parse_redundancy("n+2") == 2 and parse_redundancy("0") == 0
    with pytest.raises(UsageError):
        parse_duration_ms("fast", "--tpot-p99")
    with pytest.raises(UsageError):
        parse_redundancy("lots")


def _plan(**kw):
    base = dict(model="Qwen/Qwen3-8B", gpu="h100", qps=20, input_len=1024, output_len=256, source="catalog")
    return plan_capacity(CapacityRequest(**{**base, **kw}), ENV)


def test_capacity_result_is_consistent() -> None:
    res = _plan(tpot_p99_ms=50, gpu_price_per_hour=2.5)
    r = res.per_replica
    assert res.gpus_total == res.replicas * res.gpus_per_replica
    assert res.gpus_per_replica == r.tensor_parallel_size * r.pipeline_parallel_size
    assert res.replicas == replicas_needed(20, r.goodput_rps, 0.3, 1)
    assert r.tpot_ms_p99 <= 50 and r.ttft_ms_p99 <= 2000
    # at peak each serving replica runs below its goodput, so within the SLOs
    assert res.at_peak.requests_per_s_per_replica <= r.goodput_rps * 0.7 + 1e-9
    assert res.at_peak.tpot_ms_p99 <= 50
    assert res.cost is not None and res.cost.per_hour == pytest.approx(2.5 * res.gpus_total)
    # $ per 1M output tokens = $/hour / (20 req/s x 256 tokens x 3600 s) x 1e6
    assert res.cost.per_million_output_tokens == pytest.approx(res.cost.per_hour / (20 * 256 * 3600) * 1e6, rel=1e-3)
    chosen = [c for c in res.candidates if c.chosen]
    assert len(chosen) == 1 and chosen[0].gpus_total == min(c.gpus_total for c in res.candidates if c.gpus_total)


def test_a_tighter_slo_never_needs_fewer_gpus() -> None:
    loose = _plan(tpot_p99_ms=100)
    tight = _plan(tpot_p99_ms=20)
    assert tight.gpus_total >= loose.gpus_total


def test_impossible_tpot_names_the_floor() -> None:
    # Qwen3-8B: ~15 GB of weights per step, ~0.6 ms split over 8 H100s at 3.35 TB/s; its AWQ sibling in the
    # catalog (~6.1 GB, ~4.9 GB without the gathered embedding) still needs ~0.18 ms at TP 8
    with pytest.raises(DoesNotFitError) as exc:
        _plan(tpot_p99_ms=0.05)
    err = exc.value
    assert err.code == "slo-impossible" and int(err.exit_code) == 3
    assert "TPOT" in err.message and "physically impossible" in err.message


def test_the_suggested_slo_is_one_the_plan_meets() -> None:
    # the hint names the p99 TPOT the best configuration reaches: asking for that must succeed
    import re

    with pytest.raises(DoesNotFitError) as exc:
        _plan(tpot_p99_ms=0.05)
    suggested = float(re.search(r"relax --tpot-p99 to (\d+)ms or more", exc.value.hint or "").group(1))
    assert _plan(tpot_p99_ms=suggested).gpus_total >= 1


def test_max_gpus_too_small_is_exit_3() -> None:
    with pytest.raises(DoesNotFitError):
        _plan(qps=500, max_gpus=2)


def _llama70b_tp4_fp8():
    """nvidia/Llama-3.3-70B-Instruct-FP8 at TP=4 on H100s, from the bundled catalog (offline)."""
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.performance import PerfOptions
    from vllmkit.plan.service import build_plan

    plan = build_plan(PlanRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100", gpu_count=4,
                                  source="catalog"), ENV,
                      perf=PerfOptions(workload=None, collect=True, min_context=1280))
    return next(cp for alt, cp in plan._perf_candidates
                if alt.model_id == "nvidia/Llama-3.3-70B-Instruct-FP8" and alt.tensor_parallel_size == 4)


def test_goodput_is_the_highest_rate_that_meets_the_slos() -> None:
    # The search brackets the rate between 2 % and 102 % of the closed-loop saturation rate, which at
    # --max-num-seqs 1024 is ~190 req/s here while the TPOT SLO binds near 10 req/s. Six linear halvings of
    # that bracket had stopped 3 req/s apart and returned 6.99 req/s, though 9.5 req/s still met both SLOs
    # (p99 TPOT 46.6 ms < 50). The answer must be a rate that meets the SLOs with one 4 % above it that
    # does not, and must not depend on how far above it the bracket starts.
    from vllmkit.plan.capacity import _meets, goodput, sustained_predict

    cp = _llama70b_tp4_fp8()
    req = CapacityRequest(model="x", gpu="h100", qps=20, input_len=1024, output_len=256, ttft_p99_ms=2000,
                          tpot_p99_ms=50)
    rate, pred = goodput(cp, req, 1024)
    assert _meets(pred, 2000, 50)
    above = sustained_predict(cp, req, rate * 1.04, 1024)
    assert not _meets(above, 2000, 50)
    # a batch cap of 256 is never reached at these rates, so it serves the same rate (saturation ~17 req/s)
    rate_256, _ = goodput(cp, req, 256)
    assert rate_256 == pytest.approx(rate, rel=0.04)


def test_searched_candidates_are_listed_by_replica_size_and_skips_say_why() -> None:
    res = _plan(tpot_p99_ms=50)
    sizes = [c.gpus_per_replica for c in res.candidates]
    assert sizes == sorted(sizes)
    for c in res.candidates:
        if not c.searched:
            assert c.goodput_rps == 0 and c.replicas is None and c.note


def test_latencies_at_a_rate_are_the_sustained_ones() -> None:
    # DeepSeek-R1 on 8 x MI300X, 2048 / 512 tokens at 4 req/s: a request lives about a minute, so by
    # Little's law the engine holds ~4 x 60 = 240 requests once full, and fills only after a minute or
    # so. The fixed 20 s of arrivals the search used to simulate ended while the engine was still filling
    # (p99 TPOT ~65 ms against ~135 ms sustained). The reference here is independent of the search's window
    # rule: a run of 3000 arrivals (12.5 minutes), scored on the middle third of them. (The rate was 5 req/s
    # until round 42's ROCm FP8 compute rate made that rate overload the replica: its TTFT then grows through
    # the run, and the search rightly stops lengthening a run that already misses the SLO.) The SLO is loose
    # enough that the steady state meets it, so the search does lengthen the run.
    from vllmkit.estimate.scheduler_sim import percentile
    from vllmkit.plan.capacity import _rate_workload, sustained_predict
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.performance import PerfOptions
    from vllmkit.plan.service import build_plan

    plan = build_plan(PlanRequest(model="deepseek-ai/DeepSeek-R1", gpu="mi300x", gpu_count=8, source="catalog"),
                      ENV, perf=PerfOptions(workload=None, collect=True, min_context=2560))
    cp = next(cp for alt, cp in plan._perf_candidates if alt.tensor_parallel_size == 8)
    req = CapacityRequest(model="x", gpu="mi300x", qps=4, input_len=2048, output_len=512, tpot_p99_ms=200)
    long = cp.predict(_rate_workload(req, 4.0, 3000), max_num_seqs=1024)
    span = 2999 / 4.0
    ttft, tpot, _ = long.sim.latencies_of_arrivals(span / 3, 2 * span / 3)
    late_ttft, _, _ = long.sim.latencies_of_arrivals(2 * span / 3, span)
    assert long.batch > 150  # the long run does fill the engine
    assert percentile(late_ttft, 99) < 1.5 * percentile(ttft, 99)  # and is not overloaded (no growing queue)
    sustained = sustained_predict(cp, req, 4.0, 1024)
    assert sustained.tpot_ms.p99 == pytest.approx(percentile(tpot, 99) * 1000, rel=0.1)
    assert sustained.ttft_ms.p99 == pytest.approx(percentile(ttft, 99) * 1000, rel=0.25)
    short = cp.predict(_rate_workload(req, 4.0, 100), max_num_seqs=1024)
    assert short.tpot_ms.p99 < 0.8 * percentile(tpot, 99) * 1000


@pytest.mark.parametrize("model_id, tp", [("nvidia/Llama-3.3-70B-Instruct-FP8", 4),
                                          ("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", 2)])
def test_saturation_rate_is_what_a_sustained_stream_can_reach(model_id, tp) -> None:
    # The closed-loop saturation rate caps the goodput search and bounds each candidate's GPUs from below,
    # so it must sit near what the replica sustains. It used to run 1024 clients for 600 requests: with a
    # cache for 583 whole requests (TP=4) they all started in one wave, finished together, and the rate
    # over that instant read 88 req/s; with a cache for 97 (TP=2) they churned through preemptions. The
    # check here is a Poisson stream under a 2 s p99 TTFT: met at 70 % of the saturation rate, missed at 130 %.
    from vllmkit.plan.capacity import _meets, saturation_rps, sustained_predict
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.performance import PerfOptions
    from vllmkit.plan.service import build_plan

    plan = build_plan(PlanRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100", gpu_count=4,
                                  source="catalog"), ENV,
                      perf=PerfOptions(workload=None, collect=True, min_context=2304))
    cp = next(cp for alt, cp in plan._perf_candidates
              if alt.model_id == model_id and alt.tensor_parallel_size == tp)
    req = CapacityRequest(model="x", gpu="h100", qps=20, input_len=2048, output_len=256, ttft_p99_ms=2000)
    sat = saturation_rps(cp, req, 1024)
    assert _meets(sustained_predict(cp, req, 0.7 * sat, 1024), 2000, None)
    assert not _meets(sustained_predict(cp, req, 1.3 * sat, 1024), 2000, None)


def test_candidates_left_out_early_could_not_have_won() -> None:
    # A candidate is left out once its GPU lower bound (at its saturation rate, or at a rate its goodput
    # search saw it miss) exceeds the best fleet found. Searched in full, each must indeed need more GPUs.
    from vllmkit.plan.capacity import goodput
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.performance import PerfOptions
    from vllmkit.plan.service import build_plan

    kw = dict(model="Qwen/Qwen3-8B", gpu="l4", qps=5, input_len=4096, output_len=512, source="catalog")
    res = plan_capacity(CapacityRequest(**kw), ENV)
    skipped = [c for c in res.candidates if not c.searched and c.note.startswith("skipped")]
    assert skipped  # this workload leaves several out
    plan = build_plan(PlanRequest(model="Qwen/Qwen3-8B", gpu="l4", gpu_count=8, source="catalog"), ENV,
                      perf=PerfOptions(workload=None, collect=True, min_context=4608))
    req = CapacityRequest(**kw)
    for c in skipped:
        cp = next(cp for alt, cp in plan._perf_candidates if alt.model_id == c.model_id
                  and alt.tensor_parallel_size == c.tensor_parallel_size
                  and alt.pipeline_parallel_size == c.pipeline_parallel_size)
        rate, _ = goodput(cp, req, c.max_num_seqs)
        if rate > 0:
            assert replicas_needed(5, rate, 0.3, 1) * c.gpus_per_replica > res.gpus_total, c


_QWEN_CP: list = []


def _qwen3_8b_h100():
    if not _QWEN_CP:
        from vllmkit.plan.models import PlanRequest
        from vllmkit.plan.performance import PerfOptions
        from vllmkit.plan.service import build_plan

        plan = build_plan(PlanRequest(model="Qwen/Qwen3-8B", gpu="h100", gpu_count=1, source="catalog"), ENV,
                          perf=PerfOptions(workload=None, collect=True, min_context=1280))
        _QWEN_CP.append(next(cp for alt, cp in plan._perf_candidates if alt.model_id == "Qwen/Qwen3-8B"))
    return _QWEN_CP[0]


@settings(max_examples=12, deadline=None)
@given(st.floats(12, 60), st.floats(12, 60), st.sampled_from([None, 300.0, 2000.0]))
def test_a_looser_tpot_slo_never_lowers_the_goodput(t1, t2, ttft) -> None:
    # the sustained-run rule decides how long to simulate from the SLOs themselves, so check that the
    # search stays monotone in them: within its 2 % tolerance, a looser SLO is met at least as fast a rate
    from vllmkit.plan.capacity import goodput

    cp = _qwen3_8b_h100()
    tight, loose = sorted((t1, t2))
    kw = dict(model="x", gpu="h100", qps=20, input_len=1024, output_len=256, ttft_p99_ms=ttft)
    g_tight, _ = goodput(cp, CapacityRequest(**kw, tpot_p99_ms=tight), 256)
    g_loose, _ = goodput(cp, CapacityRequest(**kw, tpot_p99_ms=loose), 256)
    assert g_loose >= g_tight / 1.03


def test_a_model_one_node_cannot_hold_gets_multi_node_replicas() -> None:
    # DeepSeek-V3 (FP8 checkpoint, 641.3 GiB of weight files in the catalog) on H100s: eight GPUs request
    # 8 x 0.92 x 79.2 = 583 GiB, less than the weights alone, so a replica spans two nodes (TP=8 PP=2), as
    # `plan` finds without --gpu-count; before, capacity stopped at one node and told the user to raise
    # --max-gpus, which did not change the search
    req = CapacityRequest(model="deepseek-ai/DeepSeek-V3", gpu="h100", qps=5, input_len=1024, output_len=256,
                          source="catalog")
    res = plan_capacity(req, ENV)
    assert res.gpus_per_replica == 16
    assert res.per_replica.tensor_parallel_size * res.per_replica.pipeline_parallel_size == 16
    # --max-gpus below two nodes: no replica fits, and the hint names the flag that would change that
    with pytest.raises(DoesNotFitError) as err:
        plan_capacity(req.model_copy(update={"max_gpus": 8}), ENV)
    assert "--max-gpus" in err.value.hint
