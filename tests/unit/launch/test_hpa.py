"""`capacity --export k8s` objects validated against the Kubernetes 1.37 JSON schema (strict; vendored
subsets in tests/data/k8s-schema, README there)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from vllmkit.launch.hpa import hpa_object

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "data" / "k8s-schema"
HPA_SCHEMA = json.loads((SCHEMA_DIR / "k8s-v1.37.0-hpa-subset.json").read_text())
HPA = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler"


def _validate(obj: dict[str, Any]) -> None:
    schema = {"$schema": HPA_SCHEMA["$schema"], "$defs": HPA_SCHEMA["$defs"], "$ref": f"#/$defs/{HPA}"}
    errors = sorted(Draft202012Validator(schema).iter_errors(obj), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def _hpa(**kw: Any) -> dict[str, Any]:
    args = dict(kind="Deployment", api_version="apps/v1", min_replicas=2, max_replicas=6, queue_target=5, kv_target=0.8)
    return hpa_object("vllm-qwen3-8b", **{**args, **kw})


def test_hpa_validates() -> None:
    _validate(_hpa())
    _validate(_hpa(kind="LeaderWorkerSet", api_version="leaderworkerset.x-k8s.io/v1"))


def test_schema_rejects_a_broken_hpa() -> None:
    bad = _hpa()
    bad["spec"]["maxReplicas"] = "six"
    bad["spec"]["metrics"][0]["pods"]["targt"] = {}
    with pytest.raises(AssertionError):
        _validate(bad)


def test_hpa_targets_the_workload_and_bounds() -> None:
    h = _hpa()
    assert h["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm-qwen3-8b"}
    assert (h["spec"]["minReplicas"], h["spec"]["maxReplicas"]) == (2, 6)
    names = [m["pods"]["metric"]["name"] for m in h["spec"]["metrics"]]
    assert names == ["vllm_num_requests_waiting", "vllm_kv_cache_usage_perc"]


def test_capacity_export_objects_validate() -> None:
    from types import SimpleNamespace

    from tests.unit.launch.plans import cuda_plan, multinode_plan
    from vllmkit.launch.hpa import capacity_objects

    apps = json.loads((SCHEMA_DIR / "k8s-v1.37.0-strict-subset.json").read_text())
    capacity = SimpleNamespace(replicas=5, redundancy=1, slo={"ttft_p99_ms": 2000.0},
                               per_replica=SimpleNamespace(goodput_rps=6.0))
    for plan_fn in (cuda_plan, multinode_plan):
        req, plan = plan_fn()
        objs = capacity_objects(plan, req, capacity)
        workload, hpa = objs[0], objs[-1]
        assert workload["spec"]["replicas"] == 5
        _validate(hpa)
        assert hpa["spec"]["scaleTargetRef"]["kind"] == workload["kind"]
        assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 5)
        # 6 req/s x 2 s x 0.5: about half a TTFT budget of queue per replica
        assert hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"] == "6"
        if workload["kind"] == "Deployment":
            schema = {"$schema": apps["$schema"], "$defs": apps["$defs"], "$ref": "#/$defs/io.k8s.api.apps.v1.Deployment"}
            assert not list(Draft202012Validator(schema).iter_errors(workload))
