"""bench against a `--data-parallel-size` server measures the fleet behind the URL: the stored record says how many
engines (from the run's plan, or --dp for a bare URL), so `plan` never reports a fleet's numbers for one engine."""

from __future__ import annotations

from tests.unit.bench.test_stale_cache import _point, _report
from vllmkit.bench.service import BenchOptions, ResolvedTarget, describe_target
from vllmkit.bench.store import point_record


def _plan(dp: int | None) -> dict:
    parallel = {"tensor_parallel_size": 1, "pipeline_parallel_size": 1}
    if dp is not None:
        parallel["data_parallel_size"] = dp
    return {"model": {"id": "Qwen/Qwen3-8B", "model_type": "qwen3"}, "gpu": {"name": "h100-sxm", "count": 2},
            "parallel": parallel, "settings": {"kv_cache_dtype": "auto"}}


def test_the_runs_plan_names_its_engines() -> None:
    t = describe_target(ResolvedTarget(url="http://127.0.0.1:8000", api_key=None, plan=_plan(2)), BenchOptions())
    assert (t.tp, t.pp, t.dp) == (1, 1, 2)
    t = describe_target(ResolvedTarget(url="http://127.0.0.1:8000", api_key=None, plan=_plan(None)), BenchOptions())
    assert t.dp == 1  # plans written before the field, and single-engine plans


def test_a_bare_url_takes_dp_from_the_flag_and_the_record_keeps_it() -> None:
    t = describe_target(ResolvedTarget(url="http://127.0.0.1:8000", api_key=None), BenchOptions(dp=4))
    assert t.dp == 4
    report = _report()
    one = point_record(report, _point(None), "2026-12-05T00:01:00Z")
    report.target.dp = 4
    fleet = point_record(report, _point(None), "2026-12-05T00:01:00Z")
    assert one is not None and fleet is not None
    assert (one.dp, fleet.dp) == (1, 4)
    assert one.record_id != fleet.record_id  # two measurements, not one stored twice
