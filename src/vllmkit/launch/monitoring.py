"""Kubernetes monitoring and autoscaling objects for a vLLM service: HorizontalPodAutoscaler,
ServiceMonitor, Grafana dashboard, and the prometheus-adapter rules the HPA needs. Pure builders
(dicts out), reused by the k8s exporter and by `vllmkit capacity --export k8s`.

Why External metrics: vLLM exposes its gauges per server pod, but a multi-node replica (a
LeaderWorkerSet group) has only one pod that serves; an External metric aggregated in Prometheus
(sum of waiting requests, mean KV usage, over the Service's endpoints) works the same for a
Deployment and an LWS. prometheus-adapter turns the Prometheus series into
external.metrics.k8s.io metrics (rules below); Kubernetes metric names cannot hold ':', so
`vllm:num_requests_waiting` is served as `vllm_num_requests_waiting`.

HPA arithmetic (kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/): with an
External metric, target `AverageValue` divides the metric by the current replica count
(desired = ceil(total / target)); target `Value` compares the metric itself
(desired = ceil(replicas * value / target)).
"""

from __future__ import annotations

from typing import Any, Literal

from vllmkit.engine.metricnames import MetricNames, metric_names

ScaleMetric = Literal["queue", "kv"]
DEFAULT_WAITING_PER_REPLICA = 5  # queued requests per replica before adding one
DEFAULT_KV_USAGE_TARGET = 0.8  # mean KV-cache usage before adding a replica
SCALE_DOWN_WINDOW_S = 600  # a replica takes minutes to load: do not drop one on a short lull


def external_metric_name(prom_name: str) -> str:
    return prom_name.replace(":", "_")


def _quantity(value: float) -> str:
    """A Kubernetes quantity: integers as is, fractions in milli-units (0.8 -> 800m)."""
    if float(value).is_integer():
        return str(int(value))
    return f"{round(value * 1000)}m"


def hpa_manifest(
    name: str,
    min_replicas: int,
    max_replicas: int,
    *,
    metric: ScaleMetric = "queue",
    target: float | None = None,
    vllm_version: str = "0.32.0",
    kind: str = "Deployment",
    api_version: str = "apps/v1",
    service: str | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An autoscaling/v2 HorizontalPodAutoscaler scaling `kind/name` between the given replica
    counts on vLLM's queue length (sum of vllm:num_requests_waiting per replica) or its mean
    KV-cache usage. `service`: the Service whose endpoints' series are aggregated (default: name)."""
    if min_replicas < 1 or max_replicas < min_replicas:
        raise ValueError(f"replicas must satisfy 1 <= min <= max, got {min_replicas}..{max_replicas}")
    names = metric_names(vllm_version)
    selector = {"matchLabels": {"service": service or name}}
    if metric == "queue":
        value = DEFAULT_WAITING_PER_REPLICA if target is None else target
        spec_metric = {
            "type": "External",
            "external": {
                "metric": {"name": external_metric_name(names.num_requests_waiting), "selector": selector},
                "target": {"type": "AverageValue", "averageValue": _quantity(value)},
            },
        }
    elif metric == "kv":
        value = DEFAULT_KV_USAGE_TARGET if target is None else target
        spec_metric = {
            "type": "External",
            "external": {
                "metric": {"name": external_metric_name(names.kv_cache_usage), "selector": selector},
                "target": {"type": "Value", "value": _quantity(value)},
            },
        }
    else:
        raise ValueError(f"unknown metric {metric!r} (queue | kv)")
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": meta,
        "spec": {
            "scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": name},
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
            "metrics": [spec_metric],
            "behavior": {
                "scaleDown": {
                    "stabilizationWindowSeconds": SCALE_DOWN_WINDOW_S,
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}],
                },
                "scaleUp": {
                    "stabilizationWindowSeconds": 0,
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                },
            },
        },
    }


def prometheus_adapter_rules(vllm_version: str) -> dict[str, Any]:
    """`externalRules` for prometheus-adapter (its Helm chart's `rules.external`) that serve the
    HPA's metrics, aggregated per Service (the `service` label the Prometheus Operator puts on
    every series scraped through a ServiceMonitor)."""
    names = metric_names(vllm_version)
    rules = []
    for series, agg in ((names.num_requests_waiting, "sum"), (names.kv_cache_usage, "avg")):
        rules.append(
            {
                "seriesQuery": f'{{__name__="{series}",namespace!="",service!=""}}',
                "resources": {"overrides": {"namespace": {"resource": "namespace"}}},
                "name": {"matches": f"^{series}$", "as": external_metric_name(series)},
                "metricsQuery": f"{agg}(<<.Series>>{{<<.LabelMatchers>>}}) by (service)",
            }
        )
    return {"rules": {"external": rules}}


def service_monitor(name: str, selector: dict[str, str], labels: dict[str, str] | None = None,
                    interval_s: int = 15) -> dict[str, Any]:
    """A monitoring.coreos.com/v1 ServiceMonitor scraping vLLM's /metrics on the Service's `http`
    port (/metrics is not behind --api-key: vLLM protects /v1/* only)."""
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": meta,
        "spec": {
            "selector": {"matchLabels": dict(selector)},
            "endpoints": [{"port": "http", "path": "/metrics", "interval": f"{interval_s}s"}],
        },
    }


def _panel(pid: int, title: str, exprs: list[tuple[str, str]], unit: str, x: int, y: int) -> dict[str, Any]:
    return {
        "id": pid,
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [{"refId": chr(65 + i), "expr": e, "legendFormat": legend} for i, (e, legend) in enumerate(exprs)],
    }


def dashboard_panels(names: MetricNames) -> list[tuple[str, list[tuple[str, str]], str]]:
    """(title, [(PromQL, legend)], unit) for the seed's serving metrics: TTFT, TPOT/ITL, running /
    waiting, KV usage, preemptions, token throughput, prefix-cache hit rate."""
    sel = '{model_name=~"$model"}'

    def q(metric: str, quantile: float) -> str:
        return f"histogram_quantile({quantile}, sum by (le) (rate({metric}_bucket{sel}[5m])))"

    return [
        ("Time to first token", [(q(names.time_to_first_token, 0.5), "p50"), (q(names.time_to_first_token, 0.99), "p99")], "s"),
        ("Time per output token", [(q(names.time_per_output_token, 0.5), "TPOT p50"),
                                   (q(names.time_per_output_token, 0.99), "TPOT p99"),
                                   (q(names.inter_token_latency, 0.99), "ITL p99")], "s"),
        ("Requests running / waiting", [(f"sum({names.num_requests_running}{sel})", "running"),
                                        (f"sum({names.num_requests_waiting}{sel})", "waiting")], "short"),
        ("KV-cache usage", [(f"avg({names.kv_cache_usage}{sel})", "mean"),
                            (f"max({names.kv_cache_usage}{sel})", "max")], "percentunit"),
        ("Preemptions / s", [(f"sum(rate({names.num_preemptions}{sel}[5m]))", "preemptions")], "short"),
        ("Tokens / s", [(f"sum(rate({names.prompt_tokens}{sel}[5m]))", "prompt"),
                        (f"sum(rate({names.generation_tokens}{sel}[5m]))", "generation")], "short"),
        ("Prefix-cache hit rate", [(f"sum(rate({names.prefix_cache_hits}{sel}[5m])) / "
                                    f"sum(rate({names.prefix_cache_queries}{sel}[5m]))", "hit rate")], "percentunit"),
        ("End-to-end latency", [(q(names.e2e_latency, 0.5), "p50"), (q(names.e2e_latency, 0.99), "p99")], "s"),
    ]


def grafana_dashboard(title: str, vllm_version: str) -> dict[str, Any]:
    """A Grafana dashboard (JSON model, schemaVersion 39) over a Prometheus data source."""
    names = metric_names(vllm_version)
    panels = [
        _panel(i + 1, t, exprs, unit, x=(i % 2) * 12, y=(i // 2) * 8)
        for i, (t, exprs, unit) in enumerate(dashboard_panels(names))
    ]
    return {
        "title": title,
        "uid": None,
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "tags": ["vllm", "vllmkit"],
        "templating": {
            "list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
                {
                    "name": "model",
                    "type": "query",
                    "datasource": {"type": "prometheus", "uid": "${datasource}"},
                    "query": f"label_values({names.num_requests_running}, model_name)",
                    "includeAll": True,
                    "multi": True,
                    "allValue": ".*",
                    "current": {"text": "All", "value": "$__all"},
                },
            ]
        },
        "panels": panels,
    }


def dashboard_configmap(name: str, dashboard: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    """The dashboard in a ConfigMap labelled grafana_dashboard=1, which the Grafana sidecar of
    kube-prometheus-stack loads (its default `sidecar.dashboards.label`)."""
    import json

    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {**(labels or {}), "grafana_dashboard": "1"}},
        "data": {f"{name}.json": json.dumps(dashboard, indent=1)},
    }
