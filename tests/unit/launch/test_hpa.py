"""`capacity --export k8s` objects validated against the Kubernetes 1.37 JSON schema (strict; vendored
subsets in tests/data/k8s-schema, README there): the serve export with the capacity plan's replica
count, one HPA between the spares and the peak, its queue target from the plan's goodput and SLO."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from jsonschema import Draft202012Validator

from tests.unit.launch.plans import cuda_plan, multinode_plan
from vllmkit.launch.hpa import capacity_objects

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "data" / "k8s-schema"
HPA_SCHEMA = json.loads((SCHEMA_DIR / "k8s-v1.37.0-hpa-subset.json").read_text())
HPA = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler"


def _validate(obj: dict[str, Any], schema_doc: dict[str, Any], ref: str) -> None:
    schema = {"$schema": schema_doc["$schema"], "$defs": schema_doc["$defs"], "$ref": f"#/$defs/{ref}"}
    errors = sorted(Draft202012Validator(schema).iter_errors(obj), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def test_capacity_export_objects_validate() -> None:
    apps = json.loads((SCHEMA_DIR / "k8s-v1.37.0-strict-subset.json").read_text())
    capacity = SimpleNamespace(replicas=5, redundancy=1, slo={"ttft_p99_ms": 2000.0},
                               per_replica=SimpleNamespace(goodput_rps=6.0))
    for plan_fn in (cuda_plan, multinode_plan):
        req, plan = plan_fn()
        objs = capacity_objects(plan, req, capacity)
        kinds = [o["kind"] for o in objs]
        assert kinds.count("HorizontalPodAutoscaler") == 1
        workload = next(o for o in objs if o["kind"] in ("Deployment", "LeaderWorkerSet"))
        hpa = objs[kinds.index("HorizontalPodAutoscaler")]
        assert workload["spec"]["replicas"] == 5
        _validate(hpa, HPA_SCHEMA, HPA)
        assert hpa["spec"]["scaleTargetRef"]["kind"] == workload["kind"]
        assert hpa["spec"]["scaleTargetRef"]["name"] == workload["metadata"]["name"]
        # 1 spare: between 1 + 1 and the peak of 5
        assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 5)
        # 6 req/s x 2 s x 0.5: about half a TTFT budget of queue per replica
        assert hpa["spec"]["metrics"][0]["external"]["target"]["averageValue"] == "6"
        if workload["kind"] == "Deployment":
            _validate(workload, apps, "io.k8s.api.apps.v1.Deployment")
