"""Every export format x single-node / multi-node plan, validated with real schemas (issue 14):

- Kubernetes objects: the Kubernetes 1.37 strict JSON schema (kubernetes-validate 1.37.0, vendored
  subset, tests/data/k8s-schema/README.md) for Deployment, Service, PersistentVolumeClaim, Job,
  HorizontalPodAutoscaler (autoscaling/v2), ConfigMap, and the LWS pod templates;
- ServiceMonitor: the prometheus-operator CRD's openAPIV3Schema (tests/data/prometheus-operator);
- compose: the Compose Specification schema (tests/data/compose-schema), which is what
  `docker compose config` validates against; docker itself is not installed here, so the compose
  semantics the schema cannot express (one service, ports, device reservations) are checked by hand.
Each validator is shown to reject a broken document first, so it can fail.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator, Draft202012Validator

from tests.unit.launch.plans import CUDA_ENDPOINT, cpu_plan, cuda_plan, multinode_plan, rocm_plan
from vllmkit.errors import UsageError
from vllmkit.launch.command import ServeEndpoint
from vllmkit.launch.exporters import FORMATS, export
from vllmkit.launch.monitoring import hpa_manifest, prometheus_adapter_rules

DATA = Path(__file__).resolve().parents[2] / "data"
K8S = json.loads((DATA / "k8s-schema" / "k8s-v1.37.0-strict-subset.json").read_text())
SERVICE_MONITOR = json.loads((DATA / "prometheus-operator" / "servicemonitor-v1.json").read_text())
COMPOSE = json.loads((DATA / "compose-schema" / "compose-spec.json").read_text())
GIB = 1 << 30

KIND_DEFS = {
    "Deployment": "io.k8s.api.apps.v1.Deployment",
    "Service": "io.k8s.api.core.v1.Service",
    "PersistentVolumeClaim": "io.k8s.api.core.v1.PersistentVolumeClaim",
    "Job": "io.k8s.api.batch.v1.Job",
    "HorizontalPodAutoscaler": "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
    "ConfigMap": "io.k8s.api.core.v1.ConfigMap",
}
PLANS = {"cuda": cuda_plan, "rocm": rocm_plan, "cpu": cpu_plan, "multinode": multinode_plan}


def _errors(validator: Any, obj: Any) -> list[str]:
    return [f"{list(e.path)}: {e.message}" for e in sorted(validator.iter_errors(obj), key=lambda e: list(e.path))]


def k8s_errors(obj: dict[str, Any], definition: str) -> list[str]:
    schema = {"$schema": K8S["$schema"], "$defs": K8S["$defs"], "$ref": f"#/$defs/{definition}"}
    return _errors(Draft202012Validator(schema), obj)


def validate_k8s_doc(doc: dict[str, Any]) -> None:
    kind = doc["kind"]
    if kind in KIND_DEFS:
        errs = k8s_errors(doc, KIND_DEFS[kind])
    elif kind == "ServiceMonitor":
        assert doc["apiVersion"] == "monitoring.coreos.com/v1"
        errs = _errors(Draft7Validator(SERVICE_MONITOR), doc)
    elif kind == "LeaderWorkerSet":
        # a CRD without a vendored schema: its pod templates are core PodTemplateSpecs
        tmpl = doc["spec"]["leaderWorkerTemplate"]
        errs = k8s_errors(tmpl["leaderTemplate"], "io.k8s.api.core.v1.PodTemplateSpec")
        errs += k8s_errors(tmpl["workerTemplate"], "io.k8s.api.core.v1.PodTemplateSpec")
    else:
        raise AssertionError(f"unexpected kind {kind}")
    assert not errs, f"{kind}:\n" + "\n".join(errs[:10])


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


# --- the validators can fail ---------------------------------------------------------------------


def test_validators_reject_broken_documents() -> None:
    hpa = hpa_manifest("x", 1, 3)
    hpa["spec"]["maxReplicas"] = "three"
    assert k8s_errors(hpa, KIND_DEFS["HorizontalPodAutoscaler"])
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"request": {"storage": "1Gi"}}}}  # fmt: skip
    assert k8s_errors(pvc, KIND_DEFS["PersistentVolumeClaim"])  # "request" is not a field
    sm = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "m"},
          "spec": {"selector": {}, "endpoints": [{"port": "http", "intervall": "15s"}]}}  # fmt: skip
    assert _errors(Draft7Validator(SERVICE_MONITOR), sm)
    assert _errors(Draft7Validator(COMPOSE), {"services": {"a": {"image": "x", "imagee": "y"}}})
    assert _errors(Draft7Validator(COMPOSE), {"services": {"a": {"image": "x", "ports": {"http": 8000}}}})


# --- every format x plan -------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("plan_name", list(PLANS))
def test_every_export_is_valid_or_refused(fmt: str, plan_name: str, tmp_path: Path) -> None:
    req, plan = PLANS[plan_name]()
    multinode = plan.parallel.nodes > 1
    if multinode and fmt in ("shell", "docker", "compose"):
        with pytest.raises(UsageError) as info:
            export(plan, req, fmt, auth=True)
        assert "--export ray" in info.value.hint and "--export k8s" in info.value.hint
        assert "2 nodes" in info.value.message and "16 GPUs" in info.value.message
        return
    text = export(plan, req, fmt, auth=True)
    assert "sk-secret" not in text
    if fmt == "k8s":
        docs = _docs(text)
        for doc in docs:
            validate_k8s_doc(doc)
        kinds = [d["kind"] for d in docs]
        workload = "LeaderWorkerSet" if multinode else "Deployment"
        assert workload in kinds and "Service" in kinds and "ServiceMonitor" in kinds and "ConfigMap" in kinds
        assert "HorizontalPodAutoscaler" in kinds
        assert ("PersistentVolumeClaim" in kinds) == (plan.model.source != "local")
    elif fmt == "compose":
        doc = yaml.safe_load(text)
        errs = _errors(Draft7Validator(COMPOSE), doc)
        assert not errs, "\n".join(errs)
        ((_, svc),) = doc["services"].items()  # one service: one machine
        host_port, container_port = svc["ports"][0].rsplit(":", 1)[0], svc["ports"][0].rsplit(":", 1)[1]
        assert container_port == "8000" and host_port.endswith(str(ServeEndpoint().port))
        assert svc["command"][svc["command"].index("--host") + 1] == "0.0.0.0"
    elif fmt in ("shell", "ray"):
        if shutil.which("bash"):
            script = tmp_path / "x.sh"
            script.write_text(text)
            assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    elif fmt == "grafana":
        dash = json.loads(text)
        exprs = " ".join(t["expr"] for p in dash["panels"] for t in p["targets"])
        for metric in ("vllm:time_to_first_token_seconds_bucket", "vllm:num_requests_waiting",
                       "vllm:kv_cache_usage_perc", "vllm:num_preemptions_total",
                       "vllm:request_time_per_output_token_seconds_bucket", "vllm:prefix_cache_hits_total"):
            assert metric in exprs, metric


# --- details -------------------------------------------------------------------------------------


def test_model_cache_is_a_pvc_sized_from_the_weights() -> None:
    req, plan = cuda_plan()
    plan.model.weight_files_bytes = 65 * GIB  # Qwen3-32B bf16 safetensors are ~65.5 GB on the hub
    docs = _docs(export(plan, req, "k8s", replicas=(1, 1)))
    pvc = next(d for d in docs if d["kind"] == "PersistentVolumeClaim")
    # 65 GiB * 1.1 + 5 GiB = 76.5 -> 77Gi; one replica -> ReadWriteOnce
    assert pvc["spec"]["resources"]["requests"]["storage"] == "77Gi"
    assert pvc["spec"]["accessModes"] == ["ReadWriteOnce"]
    dep = next(d for d in docs if d["kind"] == "Deployment")
    vols = dep["spec"]["template"]["spec"]["volumes"]
    cache = next(v for v in vols if v["name"] == "model-cache")
    assert cache == {"name": "model-cache", "persistentVolumeClaim": {"claimName": pvc["metadata"]["name"]}}
    assert not any("emptyDir" in v and v["name"] == "model-cache" for v in vols)
    assert "HorizontalPodAutoscaler" not in [d["kind"] for d in docs]  # max 1 replica: nothing to scale
    job = next(d for d in docs if d["kind"] == "Job")
    code = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert "snapshot_download" in code and '"Qwen/Qwen3-32B"' in code and "original/*" in code
    compile(code, "job", "exec")  # the Job's program is valid Python


def test_shared_cache_and_hpa_for_several_replicas() -> None:
    req, plan = cuda_plan()
    docs = _docs(export(plan, req, "k8s", endpoint=CUDA_ENDPOINT, replicas=(2, 6), scale_metric="kv"))
    pvc = next(d for d in docs if d["kind"] == "PersistentVolumeClaim")
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    hpa = next(d for d in docs if d["kind"] == "HorizontalPodAutoscaler")
    assert hpa["spec"]["minReplicas"] == 2 and hpa["spec"]["maxReplicas"] == 6
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm-qwen32b"}
    ext = hpa["spec"]["metrics"][0]["external"]
    assert ext["metric"]["name"] == "vllm_kv_cache_usage_perc"
    assert ext["target"] == {"type": "Value", "value": "800m"}


def test_hpa_targets_the_leaderworkerset_for_multinode() -> None:
    req, plan = multinode_plan()
    docs = _docs(export(plan, req, "k8s", auth=True))  # the CLI always asks for a key on k8s
    hpa = next(d for d in docs if d["kind"] == "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["kind"] == "LeaderWorkerSet"
    assert hpa["spec"]["scaleTargetRef"]["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    assert "--host 0.0.0.0" in leader["containers"][0]["args"][0]
    assert any(e["name"] == "VLLM_API_KEY" for e in leader["containers"][0]["env"])
    pvc = next(d for d in docs if d["kind"] == "PersistentVolumeClaim")
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]  # leader and workers mount it on two nodes


@pytest.mark.parametrize(("version", "kv", "itl"), [
    ("0.9.2", "vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds"),
    ("0.10.1", "vllm:kv_cache_usage_perc", "vllm:time_per_output_token_seconds"),
    ("0.32.0", "vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds"),
])  # fmt: skip
def test_metric_names_follow_the_version(version: str, kv: str, itl: str) -> None:
    hpa = hpa_manifest("m", 1, 2, metric="kv", vllm_version=version)
    assert hpa["spec"]["metrics"][0]["external"]["metric"]["name"] == kv.replace(":", "_")
    rules = prometheus_adapter_rules(version)["rules"]["external"]
    assert [r["name"]["as"] for r in rules] == ["vllm_num_requests_waiting", kv.replace(":", "_")]
    assert all("<<.Series>>" in r["metricsQuery"] for r in rules)
    req, plan = cuda_plan()
    plan.vllm_version = version
    dash = json.loads(export(plan, req, "grafana"))
    exprs = " ".join(t["expr"] for p in dash["panels"] for t in p["targets"])
    assert kv in exprs and itl in exprs


def test_hpa_rejects_bad_replica_counts() -> None:
    with pytest.raises(ValueError):
        hpa_manifest("x", 3, 2)
    with pytest.raises(ValueError):
        hpa_manifest("x", 0, 2)


def test_images_are_pinned() -> None:
    for plan_fn, image in ((cuda_plan, "vllm/vllm-openai:v0.32.0"), (rocm_plan, "vllm/vllm-openai-rocm:v0.32.0"),
                           (cpu_plan, "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.32.0")):  # fmt: skip
        req, plan = plan_fn()
        assert image in export(plan, req, "docker")
    req, plan = rocm_plan()
    plan.vllm_version = "0.11.2"  # before the vLLM project's ROCm image: AMD's tags cannot be derived
    text = export(plan, req, "docker")
    assert "rocm/vllm:latest" in text and "warning: rocm/vllm:latest is not pinned" in text


def test_ray_head_binds_every_interface_behind_the_key() -> None:
    req, plan = multinode_plan()
    assert ServeEndpoint().host == "127.0.0.1"  # the default endpoint binds loopback
    ray = export(plan, req, "ray", auth=True)
    assert "--host 0.0.0.0" in ray and "--host 127.0.0.1" not in ray
    assert '${VLLM_API_KEY:?' in ray
    open_ray = export(plan, req, "ray", auth=False)
    assert "warning: no API key" in open_ray
