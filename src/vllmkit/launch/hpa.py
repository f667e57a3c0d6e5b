"""Kubernetes manifests for `vllmkit capacity --export k8s`: the serve export (model-cache PVC,
download Job, Deployment or LeaderWorkerSet, Service, ServiceMonitor, Grafana dashboard) with the
replica count the capacity plan found, and its HorizontalPodAutoscaler scaling between the spares
(1 + redundancy) and the peak replica count on vLLM's queue length.

The autoscaler reads `vllm:num_requests_waiting` through an external-metrics adapter
(prometheus-adapter); launch/monitoring.py documents the rule it needs and names the metric by vLLM
version. The queue target per replica follows the capacity plan: a replica at goodput keeps about
goodput x TTFT-SLO / 2 requests waiting at most.
"""

from __future__ import annotations

from typing import Any

from vllmkit.launch.exporters import ExportContext, _comment, _yaml, k8s_objects

WORKLOAD_KINDS = ("Deployment", "LeaderWorkerSet")


def capacity_objects(plan: Any, req: Any, capacity: Any) -> list[dict[str, Any]]:
    """The serve objects with `replicas` set and the HPA between the spares and the peak count."""
    peak = max(1, int(capacity.replicas))
    low = max(1, min(peak, 1 + int(capacity.redundancy)))
    ctx = ExportContext(plan, req, replicas=(low, max(peak, low)), scale_metric="queue")
    objects = k8s_objects(ctx)
    slo_s = (capacity.slo.get("ttft_p99_ms") or 2000.0) / 1000.0
    queue_target = max(1, round(capacity.per_replica.goodput_rps * slo_s * 0.5))
    for obj in objects:
        if obj.get("kind") in WORKLOAD_KINDS:
            obj["spec"]["replicas"] = peak
        elif obj.get("kind") == "HorizontalPodAutoscaler":
            for metric in obj["spec"].get("metrics", []):
                target = metric.get("external", {}).get("target", {})
                if target.get("type") == "AverageValue":
                    target["averageValue"] = str(queue_target)
    return objects


def capacity_manifests(plan: Any, req: Any, capacity: Any) -> str:
    ctx = ExportContext(plan, req)
    header = [
        *ctx.header("Kubernetes manifests (capacity plan)"),
        f"{capacity.replicas} replicas x {capacity.gpus_per_replica} GPU for {capacity.qps:g} req/s peak "
        f"({capacity.redundancy} spare, headroom {capacity.headroom:.0%})",
        "the HorizontalPodAutoscaler reads vllm:num_requests_waiting through an external-metrics adapter "
        "(prometheus-adapter; see the rule in the serve export's header)",
    ]
    return _comment(header) + "---\n".join(_yaml(o) for o in capacity_objects(plan, req, capacity))


__all__ = ["capacity_manifests", "capacity_objects"]
