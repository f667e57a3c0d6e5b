"""Exports: Kubernetes YAML validated against the Kubernetes 1.37 JSON schema (strict; vendored
subset, tests/data/k8s-schema/README.md), docker/compose/shell/ray content checked by hand.

The schema subset was cut with:
    defs = json.load(open(".../v1.37.0-local-strict/_definitions.json"))["$defs"]
    closure of $refs from Deployment, Service, PodTemplateSpec; "description" strings dropped.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from tests.unit.launch.plans import CUDA_ENDPOINT, cpu_plan, cuda_plan, multinode_plan, rocm_plan
from vllmkit.launch.exporters import dns_name, export

SCHEMA = json.loads(
    (
        Path(__file__).resolve().parents[2] / "data" / "k8s-schema" / "k8s-v1.37.0-strict-subset.json"
    ).read_text()
)


def _validate(obj: dict[str, Any], definition: str) -> None:
    schema = {"$schema": SCHEMA["$schema"], "$defs": SCHEMA["$defs"], "$ref": f"#/$defs/{definition}"}
    errors = sorted(Draft202012Validator(schema).iter_errors(obj), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def _k8s_docs(plan_fn, **kw: Any) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    req, plan = plan_fn()
    if plan_fn is cuda_plan:
        kw.setdefault("endpoint", CUDA_ENDPOINT)
    return [d for d in yaml.safe_load_all(export(plan, req, "k8s", **kw)) if d]


def _k8s(plan_fn, **kw: Any) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """The workload and its Service (Deployment/LWS + Service), as before issue 14."""
    return [d for d in _k8s_docs(plan_fn, **kw) if d["kind"] in ("Deployment", "LeaderWorkerSet", "Service")]


def test_schema_rejects_a_broken_deployment() -> None:
    # the validator must be able to fail: a typo'd field and a string replica count
    bad = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
           "spec": {"replicas": "one", "selector": {}, "template": {"spec": {"containers": [{"name": "c", "imagee": "i"}]}}}}  # fmt: skip
    with pytest.raises(AssertionError):
        _validate(bad, "io.k8s.api.apps.v1.Deployment")


@pytest.mark.parametrize("plan_fn", [cuda_plan, rocm_plan, cpu_plan])
def test_k8s_deployment_and_service_validate(plan_fn) -> None:  # type: ignore[no-untyped-def]
    deployment, service = _k8s(plan_fn, auth=True)
    _validate(deployment, "io.k8s.api.apps.v1.Deployment")
    _validate(service, "io.k8s.api.core.v1.Service")
    assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()


def test_k8s_cuda_details() -> None:
    deployment, _ = _k8s(cuda_plan, auth=True)
    pod = deployment["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert c["image"] == "vllm/vllm-openai:v0.32.0"
    assert c["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    assert c["command"] == ["vllm", "serve"]
    args = c["args"]
    assert args[0] == "Qwen/Qwen3-32B"
    assert args[args.index("--host") + 1] == "0.0.0.0"  # reachable through the Service
    assert "--api-key" not in args and "sk-secret-123" not in json.dumps(deployment)
    key = next(e for e in c["env"] if e["name"] == "VLLM_API_KEY")
    assert key["valueFrom"]["secretKeyRef"]["key"] == "api-key"
    # TP=2 -> /dev/shm as a memory-backed emptyDir
    shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"
    assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    # startup probe sized for long loads: failureThreshold * periodSeconds >= the health timeout
    sp = c["startupProbe"]
    assert sp["httpGet"]["path"] == "/health"
    assert sp["failureThreshold"] * sp["periodSeconds"] >= 1800
    assert c["readinessProbe"]["httpGet"]["path"] == "/health"
    assert c["livenessProbe"]["httpGet"]["path"] == "/health"
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}


def test_k8s_rocm_uses_amd_gpu_and_aiter() -> None:
    deployment, _ = _k8s(rocm_plan)
    c = deployment["spec"]["template"]["spec"]["containers"][0]
    assert c["resources"]["limits"] == {"amd.com/gpu": "1"}
    assert {"name": "VLLM_ROCM_USE_AITER", "value": "1"} in c["env"]
    assert "--trust-remote-code" in c["args"]
    # the vLLM project's ROCm image, pinned to the planned version (docker.io/vllm/vllm-openai-rocm)
    assert c["image"] == "vllm/vllm-openai-rocm:v0.32.0"


def test_k8s_multinode_is_a_leaderworkerset() -> None:
    lws, service = _k8s(multinode_plan)
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1" and lws["kind"] == "LeaderWorkerSet"
    tmpl = lws["spec"]["leaderWorkerTemplate"]
    assert tmpl["size"] == 2
    _validate(tmpl["leaderTemplate"], "io.k8s.api.core.v1.PodTemplateSpec")
    _validate(tmpl["workerTemplate"], "io.k8s.api.core.v1.PodTemplateSpec")
    _validate(service, "io.k8s.api.core.v1.Service")
    leader = tmpl["leaderTemplate"]["spec"]["containers"][0]
    worker = tmpl["workerTemplate"]["spec"]["containers"][0]
    script = leader["args"][0]
    assert "ray start --head --port=6379 --num-gpus=8" in script
    assert "--distributed-executor-backend ray" in script
    assert "--tensor-parallel-size 8" in script and "--pipeline-parallel-size 2" in script
    assert "ray start --address=$(LWS_LEADER_ADDRESS):6379" in worker["args"][0]
    assert leader["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert service["spec"]["selector"]["role"] == "leader"


def test_docker_cuda() -> None:
    req, plan = cuda_plan()
    text = export(plan, req, "docker", endpoint=CUDA_ENDPOINT, auth=True)
    argv = shlex.split(
        "\n".join(ln for ln in text.splitlines() if not ln.startswith("#")).replace("\\\n", " ")
    )
    assert argv[:2] == ["docker", "run"]
    assert argv[argv.index("--gpus") + 1] == "2" and "--ipc=host" in argv
    assert argv[argv.index("-p") + 1] == "127.0.0.1:8000:8000"  # loopback stays loopback
    assert "-e" in argv and "VLLM_API_KEY" in argv and "sk-secret-123" not in text
    image = argv.index("vllm/vllm-openai:v0.32.0")
    assert argv[image + 1 : image + 3] == ["--model", "Qwen/Qwen3-32B"]
    assert "~/.cache/huggingface:/root/.cache/huggingface" in text


def test_docker_rocm() -> None:
    req, plan = rocm_plan()
    text = export(plan, req, "docker")
    for piece in (
        "--device /dev/kfd",
        "--device /dev/dri",
        "--group-add video",
        "--security-opt seccomp=unconfined",
    ):
        assert piece in text.replace(" \\\n  ", " ")
    flat = text.replace(" \\\n  ", " ")
    assert "--entrypoint vllm vllm/vllm-openai-rocm:v0.32.0 serve internlm/internlm3-8b-instruct" in flat
    assert "-e VLLM_ROCM_USE_AITER=1" in text.replace(" \\\n  ", " ")


def test_docker_local_model_is_mounted_read_only() -> None:
    req, plan = cpu_plan()
    text = export(plan, req, "docker").replace(" \\\n  ", " ")
    assert "-v /models/tiny:/models/tiny:ro" in text
    assert "--model /models/tiny" in text
    assert "vllm-cpu-release-repo:v0.32.0" in text


def test_compose_cuda_and_rocm() -> None:
    req, plan = cuda_plan()
    doc = yaml.safe_load(export(plan, req, "compose", endpoint=CUDA_ENDPOINT, auth=True))
    ((name, svc),) = doc["services"].items()
    assert name == "vllm-qwen32b"
    assert svc["entrypoint"] == ["vllm", "serve"] and svc["command"][0] == "Qwen/Qwen3-32B"
    assert svc["deploy"]["resources"]["reservations"]["devices"] == [
        {"driver": "nvidia", "capabilities": ["gpu"], "count": 2}
    ]
    assert svc["environment"]["VLLM_API_KEY"].startswith("${VLLM_API_KEY")
    assert svc["healthcheck"]["test"][0] == "CMD"
    req, plan = rocm_plan()
    svc = next(iter(yaml.safe_load(export(plan, req, "compose", endpoint=CUDA_ENDPOINT))["services"].values()))
    assert svc["devices"] == ["/dev/kfd", "/dev/dri"] and svc["group_add"] == ["video"]
    assert svc["security_opt"] == ["seccomp=unconfined"]


def test_shell_and_ray() -> None:
    req, plan = cpu_plan()
    shell = export(plan, req, "shell")
    assert shell.startswith("#!/usr/bin/env bash") and "exec vllm serve /models/tiny" in shell
    req, plan = multinode_plan()
    ray = export(plan, req, "ray")
    assert "ray start --head --port=6379 --num-gpus=8" in ray
    assert "ray start --address=HEAD_IP:6379 --num-gpus=8 --block" in ray
    assert "--distributed-executor-backend ray" in ray
    assert "LeaderWorkerSet" in ray


@pytest.mark.parametrize(
    ("text", "name"), [("vllm-Qwen/Qwen3-8B", "vllm-qwen-qwen3-8b"), ("8b", "vllm-8b"), ("x" * 80, "x" * 63)]
)
def test_dns_name(text: str, name: str) -> None:
    assert dns_name(text) == name


EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "serve"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_examples_are_valid(path: Path) -> None:
    from vllmkit.plan.planfile import load_plan_file

    if path.name.endswith(".plan.yaml"):
        req, plan = load_plan_file(path)
        assert plan.serve_command[:2] == ["vllm", "serve"] and req.model == plan.model.id
        return
    from tests.unit.launch.test_manifests import COMPOSE, Draft7Validator, validate_k8s_doc

    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for doc in docs:
        if "services" in doc:  # compose
            assert not list(Draft7Validator(COMPOSE).iter_errors(doc))
        else:
            validate_k8s_doc(doc)  # every kind, with its schema (issue 14)


@pytest.mark.parametrize("bad", ["BAD NAME!", "My_LLM", "1llm", "llm-", "a" * 52, "llm\x1b[31m"])
def test_a_name_containers_and_kubernetes_refuse_is_refused(bad: str) -> None:
    """Kubernetes object names and label values (and docker container names) accept DNS-1035 labels:
    lowercase alphanumerics and '-', a letter first, an alphanumeric last, <= 63 characters with the
    longest suffix an export adds ("-model-cache")."""
    from vllmkit.errors import UsageError

    req, plan = cuda_plan()
    with pytest.raises(UsageError) as info:
        export(plan, req, "k8s", endpoint=CUDA_ENDPOINT, name=bad)
    assert info.value.code == "bad-name" and "\x1b" not in info.value.message


def test_a_good_name_reaches_every_object_and_label() -> None:
    docs = _k8s(cuda_plan, name="my-llm")
    names = {d["metadata"]["name"] for d in docs}
    assert "my-llm" in names and all(len(n) <= 63 for n in names)
    labels = [v for d in docs for v in d["metadata"].get("labels", {}).values()]
    assert "my-llm" in labels
