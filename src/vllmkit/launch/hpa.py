"""Kubernetes manifests for `vllmkit capacity --export k8s`: the serve Deployment (or LeaderWorkerSet)
with the replica count the capacity plan found, its Service, and a HorizontalPodAutoscaler.

The autoscaler scales on two per-pod metrics vLLM exports on /metrics: the queue
(`vllm:num_requests_waiting`) and the KV cache in use (`vllm:kv_cache_usage_perc`, called
`vllm:gpu_cache_usage_perc` before vLLM 0.10). Kubernetes reads them through a custom-metrics adapter
(e.g. prometheus-adapter) that must expose them under the names used here (`vllm_num_requests_waiting`,
`vllm_kv_cache_usage_perc`: colons are not allowed in custom metric names); the header says so.
Scaling runs between the spares-included minimum and the peak replica count.
"""

from __future__ import annotations

from typing import Any

from vllmkit.launch.exporters import ExportContext, _comment, _yaml, k8s_objects

QUEUE_METRIC = "vllm_num_requests_waiting"
KV_METRIC = "vllm_kv_cache_usage_perc"


def hpa_object(name: str, *, kind: str, api_version: str, min_replicas: int, max_replicas: int,
               queue_target: int, kv_target: float) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "vllmkit"}},
        "spec": {
            "scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": name},
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
            "metrics": [
                {"type": "Pods", "pods": {"metric": {"name": QUEUE_METRIC},
                                          "target": {"type": "AverageValue", "averageValue": str(queue_target)}}},
                {"type": "Pods", "pods": {"metric": {"name": KV_METRIC},
                                          "target": {"type": "AverageValue", "averageValue": f"{kv_target:g}"}}},
            ],
            # a new vLLM replica takes minutes to load: scale up at once, scale down slowly
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 0,
                            "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]},
                "scaleDown": {"stabilizationWindowSeconds": 600,
                              "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}]},
            },
        },
    }


def capacity_objects(plan: Any, req: Any, capacity: Any) -> list[dict[str, Any]]:
    """Deployment/LWS + Service from the launch exporters, with `replicas` set, plus the HPA."""
    ctx = ExportContext(plan, req)
    objects = k8s_objects(ctx)
    workload = objects[0]
    workload["spec"]["replicas"] = int(capacity.replicas)
    # queue target: a replica at goodput keeps about goodput x TTFT-SLO requests waiting at most
    slo_s = (capacity.slo.get("ttft_p99_ms") or 2000.0) / 1000.0
    queue_target = max(1, round(capacity.per_replica.goodput_rps * slo_s * 0.5))
    hpa = hpa_object(
        ctx.name, kind=workload["kind"], api_version=workload["apiVersion"],
        min_replicas=max(1, min(int(capacity.replicas), 1 + int(capacity.redundancy))),
        max_replicas=int(capacity.replicas), queue_target=queue_target, kv_target=0.8,
    )
    return [*objects, hpa]


def capacity_manifests(plan: Any, req: Any, capacity: Any) -> str:
    objects = capacity_objects(plan, req, capacity)
    ctx = ExportContext(plan, req)
    header = [*ctx.header("Kubernetes manifests (capacity plan)"), f"{capacity.replicas} replicas x {capacity.gpus_per_replica} GPU for {capacity.qps:g} req/s peak " f"({capacity.redundancy} spare, headroom {capacity.headroom:.0%})", f"HPA metrics {QUEUE_METRIC} / {KV_METRIC}: expose vLLM's vllm:num_requests_waiting and", "vllm:kv_cache_usage_perc (vllm:gpu_cache_usage_perc before 0.10) under these names with a", "custom-metrics adapter (e.g. prometheus-adapter)"]
    return _comment(header) + "---\n".join(_yaml(o) for o in objects)


__all__ = ["capacity_manifests", "capacity_objects", "hpa_object"]
