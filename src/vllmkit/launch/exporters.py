"""Turn a plan into something to run elsewhere: shell, docker run, compose, Kubernetes, Ray.

Pure: text out, nothing read or written. Secrets are never embedded: the API key travels as
VLLM_API_KEY (vLLM reads it when --api-key is absent, vllm/envs.py), from the caller's shell
(shell/docker/compose/ray) or from a Kubernetes Secret.

Images (override with `image=`):
- CUDA: vllm/vllm-openai:v<version> (docs.vllm.ai "Using Docker"; its entrypoint is `vllm serve`);
- ROCm: vllm/vllm-openai-rocm:v<version>, the ROCm image the vLLM project publishes next to the
  CUDA one from the 0.14 line on (tags `v<version>` like the CUDA image, e.g. v0.21.0); older
  versions get AMD's rocm/vllm, whose tags carry the ROCm version and a build date
  (`rocm7.0.0_vllm_0.11.2_20251210`) and so cannot be derived from the vLLM version: `latest`,
  with a warning to pin it with --image. The command is spelled out (`--entrypoint vllm serve …`)
  so it works with either image. Devices: /dev/kfd, /dev/dri, --group-add video and
  seccomp=unconfined (AMD's documented `docker run` flags);
- CPU:  public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v<version> (vLLM's CPU release image).
Inside a container vLLM binds 0.0.0.0:8000; a loopback `--host` in the plan becomes a loopback
port publication (`-p 127.0.0.1:PORT:8000`) so the exposure the user asked for is kept.

Multi-node plans (issue 14): shell / docker / compose describe one process on one machine, so a
plan that spans nodes is refused with a pointer to --export ray (head + workers) or --export k8s
(LeaderWorkerSet); the Ray head's API binds 0.0.0.0 (the cluster must reach it) behind
VLLM_API_KEY. Kubernetes exports add a PersistentVolumeClaim model cache (plus an optional
download Job), a HorizontalPodAutoscaler, a ServiceMonitor and a Grafana dashboard
(launch/monitoring.py).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import PurePath
from typing import Any, Literal

import yaml

from vllmkit.engine.flags import Flag
from vllmkit.engine.versions import parse_version
from vllmkit.errors import UsageError
from vllmkit.launch.command import (
    ServeEndpoint,
    format_shell,
    is_loopback,
    model_ref,
    serve_env,
    serve_flags,
    served_model_name,
    shell_join,
    shell_quote,
)
from vllmkit.launch.monitoring import (
    ScaleMetric,
    dashboard_configmap,
    grafana_dashboard,
    hpa_manifest,
    prometheus_adapter_rules,
    service_monitor,
)
from vllmkit.plan.models import PlanRequest, PlanResult
from vllmkit.units import GIB

ExportFormat = Literal["shell", "docker", "compose", "k8s", "ray", "grafana"]
FORMATS: tuple[str, ...] = ("shell", "docker", "compose", "k8s", "ray", "grafana")
SINGLE_MACHINE_FORMATS = ("shell", "docker", "compose")
ROCM_UPSTREAM_IMAGE_SINCE = (0, 14, 0)
# model cache: the weights plus 10% and 5 GiB (tokenizer/config files, and the largest shard twice
# while huggingface_hub writes it as .incomplete before the rename)
CACHE_MARGIN_FRACTION = 0.10
CACHE_MARGIN_BYTES = 5 * (1 << 30)
DEFAULT_REPLICAS = (1, 4)
CONTAINER_PORT = 8000
HF_CACHE = "/root/.cache/huggingface"
MS_CACHE = "/root/.cache/modelscope"
RAY_PORT = 6379


class ExportContext:
    """Everything the exporters share, derived once from the plan."""

    def __init__(
        self,
        plan: PlanResult,
        req: PlanRequest,
        *,
        endpoint: ServeEndpoint | None = None,
        image: str | None = None,
        name: str | None = None,
        auth: bool = False,
        visible_devices: list[int] | None = None,
        health_timeout_s: float = 1800.0,
        replicas: tuple[int, int] = DEFAULT_REPLICAS,
        scale_metric: ScaleMetric = "queue",
        storage_class: str | None = None,
        download_job: bool = True,
    ) -> None:
        self.plan = plan
        self.replicas = replicas
        self.scale_metric = scale_metric
        self.storage_class = storage_class
        self.download_job = download_job
        self.req = req
        self.endpoint = endpoint or ServeEndpoint()
        self.device = plan.device
        self.auth = auth
        self.visible_devices = visible_devices
        self.health_timeout_s = health_timeout_s
        self.served = served_model_name(plan, self.endpoint)
        if name is not None:
            check_export_name(name)
        self.name = name or dns_name("vllm-" + self.served)
        self.image = image or default_image(plan)
        self.image_warning = None if image else image_warning(plan, self.image)
        self.world = plan.parallel.tensor_parallel_size * plan.parallel.pipeline_parallel_size
        self.nodes = max(1, plan.parallel.nodes)
        self.gpus_per_node = max(1, math.ceil(self.world / self.nodes)) if self.device != "cpu" else 0
        local = plan.model.source == "local" and plan.model.path
        self.host_model_dir = plan.model.path if local else None
        self.container_model = f"/models/{PurePath(plan.model.path).name}" if local else model_ref(plan)

    # -- command pieces ----------------------------------------------------------------------

    def flags(self, *, host: str = "0.0.0.0", port: int = CONTAINER_PORT) -> list[Flag]:
        # container/cluster form: bind every interface inside, the key comes from VLLM_API_KEY
        return serve_flags(self.plan, self.req, self.endpoint, host=host, port=port, include_api_key=False)

    def args(self, **kw: Any) -> list[str]:
        out: list[str] = []
        for f in self.flags(**kw):
            out += f.argv()
        return out

    def env(self) -> dict[str, str]:
        return serve_env(self.plan, visible_devices=self.visible_devices)

    def publish(self) -> str:
        port = self.endpoint.port
        return (
            f"127.0.0.1:{port}:{CONTAINER_PORT}" if is_loopback(self.endpoint.host) else f"{port}:{CONTAINER_PORT}"
        )

    def volumes(self) -> list[tuple[str, str, bool]]:
        """(host, container, read_only)"""
        if self.host_model_dir:
            return [(self.host_model_dir, self.container_model, True)]
        if self.plan.model.source == "modelscope":
            return [("~/.cache/modelscope", MS_CACHE, False)]
        return [("~/.cache/huggingface", HF_CACHE, False)]

    def startup_failure_threshold(self, period_s: int) -> int:
        return max(6, math.ceil(self.health_timeout_s / period_s))

    def header(self, what: str) -> list[str]:
        p = self.plan
        lines = [
            f"{what} generated by vllmkit",
            f"model {p.model.id} on {p.gpu.count} x {p.gpu.display_name} ({p.device}), vLLM {p.vllm_version}",
            f"TP={p.parallel.tensor_parallel_size} PP={p.parallel.pipeline_parallel_size} nodes={self.nodes}; "
            f"max_model_len {p.settings.max_model_len:,}; KV {p.kv_cache.tokens:,} tokens "
            f"({p.kv_cache.max_concurrency:.2f}x)",
        ]
        if self.auth:
            lines.append("requires VLLM_API_KEY (clients send: Authorization: Bearer $VLLM_API_KEY)")
        if self.image_warning:
            lines.append("warning: " + self.image_warning)
        return lines

    def model_files_bytes(self) -> int:
        """The checkpoint on disk: the hub's file sizes, else the planned weights on all ranks."""
        p = self.plan
        return p.model.weight_files_bytes or p.memory.weights_bytes * max(1, self.world)

    def cache_size_gi(self) -> int:
        need = self.model_files_bytes() * (1 + CACHE_MARGIN_FRACTION) + CACHE_MARGIN_BYTES
        return max(1, math.ceil(need / GIB))

    @property
    def shared_cache(self) -> bool:
        """Several pods (replicas, or the nodes of one LWS group) read the cache at once."""
        return self.replicas[1] > 1 or self.nodes > 1


def dns_name(text: str) -> str:
    """A DNS-1035 label (Service names): lowercase alphanumerics and '-', starts with a letter, <= 63."""
    s = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    s = re.sub(r"-{2,}", "-", s)
    if not s or not s[0].isalpha():
        s = "vllm-" + s
    return s[:63].rstrip("-") or "vllm"


# the longest suffix an export adds to --name ("-model-cache", "-dashboard", "-download", "-api-key")
_NAME_SUFFIX = len("-model-cache")


def check_export_name(name: str) -> None:
    """--name becomes a container name, a Kubernetes object name and a label value: it must be a
    DNS-1035 label (lowercase letters, digits and '-', starting with a letter, ending with an
    alphanumeric) short enough for the suffixed objects to stay within 63 characters."""
    limit = 63 - _NAME_SUFFIX
    if len(name) <= limit and re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name):
        return
    raise UsageError(f"--name {name!r} cannot name containers and Kubernetes objects",
                     f"use lowercase letters, digits and '-', starting with a letter, at most {limit} characters, "
                     f"e.g. --name {dns_name(name)[:limit].rstrip('-') or 'vllm'}", code="bad-name")


def _pinned_tag(plan: PlanResult) -> str | None:
    version = (plan.vllm_version or "").split("+")[0]
    return f"v{version}" if re.fullmatch(r"\d+\.\d+\.\d+", version) else None


def default_image(plan: PlanResult) -> str:
    tag = _pinned_tag(plan) or "latest"
    if plan.device == "rocm":
        if tag != "latest" and parse_version(tag) >= ROCM_UPSTREAM_IMAGE_SINCE:
            return f"vllm/vllm-openai-rocm:{tag}"
        return "rocm/vllm:latest"
    if plan.device == "cpu":
        return f"public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:{tag}"
    return f"vllm/vllm-openai:{tag}"


def image_warning(plan: PlanResult, image: str) -> str | None:
    if not image.endswith(":latest"):
        return None
    if plan.device == "rocm":
        return (
            f"{image} is not pinned: vLLM {plan.vllm_version} has no vllm/vllm-openai-rocm image; pick the "
            "rocm/vllm tag for it (rocm<ROCm>_vllm_<version>_<date>) and pass it with --image"
        )
    return f"{image} is not pinned (the plan's vLLM version {plan.vllm_version!r} is not a release): pass --image"


class _NoAliasDumper(yaml.SafeDumper):
    """Plain YAML: repeated dicts (labels, probe targets) are written out, not as &id anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _yaml(doc: Any) -> str:
    return yaml.dump(doc, Dumper=_NoAliasDumper, sort_keys=False, width=1000)


def _comment(lines: list[str]) -> str:
    return "".join(f"# {ln}\n" for ln in lines)


# ---------------------------------------------------------------------------------------------
# shell


def export_shell(ctx: ExportContext) -> str:
    model = ctx.host_model_dir or model_ref(ctx.plan)
    argv = ["vllm", "serve", model]
    for f in serve_flags(ctx.plan, ctx.req, ctx.endpoint, include_api_key=False):
        argv += f.argv()
    out = [
        "#!/usr/bin/env bash",
        *(f"# {ln}" for ln in ctx.header("vllm serve command")),
        "set -euo pipefail",
    ]
    for k, v in ctx.env().items():
        out.append(f"export {k}={shell_quote(v)}")
    if ctx.auth:
        out.append(': "${VLLM_API_KEY:?set VLLM_API_KEY: vLLM requires it from clients}"')
    out.append("exec " + format_shell(argv))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# docker run


def _docker_device_args(ctx: ExportContext) -> list[str]:
    if ctx.device == "cuda":
        if ctx.visible_devices is not None:
            devices = ",".join(str(i) for i in ctx.visible_devices)
            gpus = f'"device={devices}"'
        else:
            gpus = str(ctx.gpus_per_node)
        # --ipc=host: PyTorch shares tensors between vLLM's processes through /dev/shm (docs.vllm.ai
        # "Using Docker": ipc=host or --shm-size)
        return ["--runtime", "nvidia", "--gpus", gpus, "--ipc=host"]
    if ctx.device == "rocm":
        return [
            "--device",
            "/dev/kfd",
            "--device",
            "/dev/dri",
            "--group-add",
            "video",
            "--security-opt",
            "seccomp=unconfined",
            "--cap-add",
            "SYS_PTRACE",
            "--ipc=host",
        ]
    # CPU: NUMA binding needs SYS_NICE; shared memory for the engine processes
    return ["--cap-add", "SYS_NICE", "--security-opt", "seccomp=unconfined", "--shm-size", "4g"]


def _container_command(ctx: ExportContext) -> list[str]:
    """What follows the image: vllm/vllm-openai and the CPU image run `vllm serve` as entrypoint;
    on ROCm the entrypoint is set to `vllm` (rocm/vllm has none), so `serve MODEL` follows."""
    if ctx.device == "rocm":
        return ["serve", ctx.container_model, *ctx.args()]
    return ["--model", ctx.container_model, *ctx.args()]


def export_docker(ctx: ExportContext) -> str:
    # one option (and its value) per line; the image and the vLLM command follow
    groups: list[list[str]] = [["docker", "run", "--rm"], ["--name", ctx.name]]
    device = _docker_device_args(ctx)
    i = 0
    while i < len(device):
        if i + 1 < len(device) and not device[i + 1].startswith("-"):
            groups.append(device[i : i + 2])
            i += 2
        else:
            groups.append([device[i]])
            i += 1
    groups.append(["-p", ctx.publish()])
    for host, cont, ro in ctx.volumes():
        groups.append(["-v", f"{host}:{cont}" + (":ro" if ro else "")])
    for k, v in ctx.env().items():
        groups.append(["-e", f"{k}={v}"])
    if ctx.plan.model.source != "local":
        groups.append(["-e", "HF_TOKEN"])  # passed through from the caller's environment when set
    if ctx.auth:
        groups.append(["-e", "VLLM_API_KEY"])
    if ctx.device == "rocm":
        groups.append(["--entrypoint", "vllm"])
    command = _container_command(ctx)
    head = 2  # "serve MODEL" / "--model MODEL"
    groups.append([ctx.image, *command[:head]])
    rest = command[head:]
    j = 0
    while j < len(rest):
        part = [rest[j]]
        j += 1
        while j < len(rest) and not rest[j].startswith("--"):
            part.append(rest[j])
            j += 1
        groups.append(part)

    def q(tok: str) -> str:
        # keep ~ unquoted so the shell expands it
        return tok if tok.startswith("~/") and "'" not in tok and " " not in tok else shell_quote(tok)

    text = " \\\n  ".join(" ".join(q(t) for t in g) for g in groups)
    return _comment(ctx.header("docker run command")) + text + "\n"


# ---------------------------------------------------------------------------------------------
# compose


def _health_test() -> list[str]:
    # python3 is in every vLLM image; curl is not guaranteed
    return [
        "CMD",
        "python3",
        "-c",
        f"import urllib.request; urllib.request.urlopen('http://localhost:{CONTAINER_PORT}/health', timeout=5)",
    ]


def export_compose(ctx: ExportContext) -> str:
    service: dict[str, Any] = {
        "image": ctx.image,
        "entrypoint": ["vllm", "serve"],
        "command": [ctx.container_model, *ctx.args()],
        "ports": [ctx.publish()],
        "volumes": [f"{h}:{c}" + (":ro" if ro else "") for h, c, ro in ctx.volumes()],
    }
    environment: dict[str, str] = dict(ctx.env())
    if ctx.plan.model.source != "local":
        environment["HF_TOKEN"] = "${HF_TOKEN:-}"
    if ctx.auth:
        environment["VLLM_API_KEY"] = "${VLLM_API_KEY:?set VLLM_API_KEY}"
    if environment:
        service["environment"] = environment
    if ctx.device == "cuda":
        service["ipc"] = "host"
        device: dict[str, Any] = {"driver": "nvidia", "capabilities": ["gpu"]}
        if ctx.visible_devices is not None:
            device["device_ids"] = [str(i) for i in ctx.visible_devices]
        else:
            device["count"] = ctx.gpus_per_node
        service["deploy"] = {"resources": {"reservations": {"devices": [device]}}}
    elif ctx.device == "rocm":
        service["ipc"] = "host"
        service["devices"] = ["/dev/kfd", "/dev/dri"]
        service["group_add"] = ["video"]
        service["security_opt"] = ["seccomp=unconfined"]
        service["cap_add"] = ["SYS_PTRACE"]
    else:
        service["shm_size"] = "4gb"
        service["cap_add"] = ["SYS_NICE"]
        service["security_opt"] = ["seccomp=unconfined"]
    service["healthcheck"] = {
        "test": _health_test(),
        "interval": "30s",
        "timeout": "10s",
        "retries": 3,
        "start_period": f"{int(ctx.health_timeout_s)}s",
    }
    service["restart"] = "unless-stopped"
    doc = {"services": {ctx.name: service}}
    return _comment(ctx.header("docker compose file")) + _yaml(doc)


# ---------------------------------------------------------------------------------------------
# Kubernetes


def _gpu_resource(device: str) -> str | None:
    return {"cuda": "nvidia.com/gpu", "rocm": "amd.com/gpu"}.get(device)


def _resources(ctx: ExportContext) -> dict[str, Any]:
    res = _gpu_resource(ctx.device)
    if res is not None:
        # extended resources: limits are what the scheduler reads; requests must equal them
        n = str(ctx.gpus_per_node)
        return {"limits": {res: n}, "requests": {res: n}}
    m = ctx.plan.memory
    need = m.weights_bytes + (m.kv_cache_bytes or 0) + m.non_torch_bytes + m.activation_bytes
    gi = max(4, math.ceil(need / GIB) + 2)
    return {"requests": {"memory": f"{gi}Gi", "cpu": "2"}, "limits": {"memory": f"{gi}Gi"}}


def _k8s_env(ctx: ExportContext, secret: str) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in ctx.env().items()]
    if ctx.plan.model.source != "local":
        env.append(
            {
                "name": "HF_TOKEN",
                "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}},
            }
        )
    if ctx.auth:
        env.append(
            {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": secret, "key": "api-key"}}}
        )
    return env


def _cache_dir(ctx: ExportContext) -> str:
    return MS_CACHE if ctx.plan.model.source == "modelscope" else HF_CACHE


def _volumes(ctx: ExportContext) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    mounts: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    if ctx.world > 1 or ctx.device == "cpu":
        # the default /dev/shm of a pod is 64 MiB; tensor-parallel workers exchange through it
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
        volumes.append(
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{max(2, 2 * ctx.world)}Gi"}}
        )
    if ctx.host_model_dir:
        mounts.append({"name": "model", "mountPath": ctx.container_model, "readOnly": True})
        volumes.append({"name": "model", "hostPath": {"path": ctx.host_model_dir, "type": "Directory"}})
    else:
        # a PersistentVolumeClaim keeps the download across pod restarts (an emptyDir would fetch
        # the whole checkpoint again on every start)
        mounts.append({"name": "model-cache", "mountPath": _cache_dir(ctx)})
        volumes.append({"name": "model-cache", "persistentVolumeClaim": {"claimName": _pvc_name(ctx)}})
    return mounts, volumes


def _pvc_name(ctx: ExportContext) -> str:
    return dns_name(ctx.name + "-model-cache")


def model_cache_pvc(ctx: ExportContext) -> dict[str, Any]:
    """The hub cache as a PVC sized from the plan: the checkpoint + 10% + 5 GiB. Shared by all
    replicas / LWS nodes (ReadWriteMany, e.g. NFS, CephFS, a cloud file store) when several pods
    mount it at once, else ReadWriteOnce."""
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteMany" if ctx.shared_cache else "ReadWriteOnce"],
        "resources": {"requests": {"storage": f"{ctx.cache_size_gi()}Gi"}},
    }
    if ctx.storage_class:
        spec["storageClassName"] = ctx.storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": _pvc_name(ctx), "labels": _labels(ctx)},
        "spec": spec,
    }


# what vLLM loads from a safetensors repo; original/ holds Meta's consolidated .pth duplicates
_DOWNLOAD_ALLOW = ["*.json", "*.safetensors", "*.model", "*.tiktoken", "*.txt", "*.jinja", "*.py", "tokenizer*"]
_DOWNLOAD_IGNORE = ["original/*", "*.pth", "*.pt", "*.gguf"]


def download_job(ctx: ExportContext) -> dict[str, Any] | None:
    """A Job that fills the cache before (or while) vLLM starts: huggingface_hub's
    snapshot_download into the same PVC (the vLLM image ships huggingface_hub). Concurrent
    downloads by the Job and vLLM wait on huggingface_hub's per-file locks instead of clashing.
    Hugging Face models only (the ModelScope client is not in the vLLM image)."""
    p = ctx.plan
    if ctx.host_model_dir or p.model.source not in ("hf", "catalog") or not ctx.download_job:
        return None
    revision = ctx.req.revision or p.model.revision
    call = (
        "from huggingface_hub import snapshot_download; "
        f"snapshot_download(repo_id={json.dumps(p.model.id)}"
        + (f", revision={json.dumps(revision)}" if revision and revision != "main" else "")
        + f", allow_patterns={json.dumps(_DOWNLOAD_ALLOW)}, ignore_patterns={json.dumps(_DOWNLOAD_IGNORE)})"
    )
    container = {
        "name": "download",
        "image": ctx.image,
        "command": ["python3", "-c", call],
        "env": [
            {"name": "HF_HUB_ENABLE_HF_TRANSFER", "value": "0"},
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}}},
        ],
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}},
        "volumeMounts": [{"name": "model-cache", "mountPath": HF_CACHE}],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": dns_name(ctx.name + "-download"), "labels": _labels(ctx)},
        "spec": {
            "backoffLimit": 4,
            "template": {
                "metadata": {"labels": _labels(ctx)},
                "spec": {
                    "restartPolicy": "OnFailure",
                    "containers": [container],
                    "volumes": [{"name": "model-cache", "persistentVolumeClaim": {"claimName": _pvc_name(ctx)}}],
                },
            },
        },
    }


def _probes(ctx: ExportContext) -> dict[str, Any]:
    http = {"path": "/health", "port": "http"}
    period = 10
    return {
        # loading can take many minutes: the startup probe holds the others back until /health is up
        "startupProbe": {
            "httpGet": http,
            "periodSeconds": period,
            "timeoutSeconds": 5,
            "failureThreshold": ctx.startup_failure_threshold(period),
        },
        "readinessProbe": {"httpGet": http, "periodSeconds": 5, "timeoutSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {"httpGet": http, "periodSeconds": 15, "timeoutSeconds": 10, "failureThreshold": 4},
    }


def _labels(ctx: ExportContext) -> dict[str, str]:
    return {"app.kubernetes.io/name": ctx.name, "app.kubernetes.io/managed-by": "vllmkit"}


def k8s_objects(ctx: ExportContext) -> list[dict[str, Any]]:
    """[PVC, download Job] + Deployment + Service (single node) or LeaderWorkerSet + Service
    (multi-node), then HorizontalPodAutoscaler, ServiceMonitor and the Grafana dashboard."""
    workload = _lws_objects(ctx) if ctx.nodes > 1 else _deployment_objects(ctx)
    head: list[dict[str, Any]] = []
    if not ctx.host_model_dir:
        head.append(model_cache_pvc(ctx))
        job = download_job(ctx)
        if job is not None:
            head.append(job)
    return head + workload + monitoring_objects(ctx)


def monitoring_objects(ctx: ExportContext) -> list[dict[str, Any]]:
    lws = ctx.nodes > 1
    out: list[dict[str, Any]] = []
    lo, hi = ctx.replicas
    if hi > 1:
        out.append(
            hpa_manifest(
                ctx.name, lo, hi, metric=ctx.scale_metric, vllm_version=ctx.plan.vllm_version,
                kind="LeaderWorkerSet" if lws else "Deployment",
                api_version="leaderworkerset.x-k8s.io/v1" if lws else "apps/v1",
                labels=_labels(ctx),
            )
        )  # fmt: skip
    out.append(service_monitor(ctx.name, {"app.kubernetes.io/name": ctx.name}, labels=_labels(ctx)))
    out.append(
        dashboard_configmap(
            dns_name(ctx.name + "-dashboard"), grafana_dashboard(f"vLLM {ctx.served}", ctx.plan.vllm_version),
            labels=_labels(ctx),
        )
    )
    return out


def _deployment_objects(ctx: ExportContext) -> list[dict[str, Any]]:
    mounts, volumes = _volumes(ctx)
    container: dict[str, Any] = {
        "name": "vllm",
        "image": ctx.image,
        "command": ["vllm", "serve"],
        "args": [ctx.container_model, *ctx.args()],
        "ports": [{"name": "http", "containerPort": CONTAINER_PORT}],
        "env": _k8s_env(ctx, f"{ctx.name}-api-key"),
        "resources": _resources(ctx),
        "volumeMounts": mounts,
        **_probes(ctx),
    }
    if not container["env"]:
        del container["env"]
    labels = _labels(ctx)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": ctx.name, "labels": labels},
        "spec": {
            "replicas": 1,
            # a second pod could not get the GPUs while the first holds them
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {"app.kubernetes.io/name": ctx.name}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [container], "volumes": volumes},
            },
        },
    }
    return [deployment, _service(ctx, {"app.kubernetes.io/name": ctx.name})]


def _service(ctx: ExportContext, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": ctx.name, "labels": _labels(ctx)},
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [{"name": "http", "port": CONTAINER_PORT, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def ray_serve_argv(ctx: ExportContext, *, model: str | None = None) -> list[str]:
    return [
        "vllm",
        "serve",
        model or ctx.container_model,
        *ctx.args(),
    ]


def _lws_objects(ctx: ExportContext) -> list[dict[str, Any]]:
    """LeaderWorkerSet (sigs.k8s.io/lws): one group = `nodes` pods; the leader starts the Ray head
    and vLLM with --distributed-executor-backend ray, workers join the head and block."""
    mounts, volumes = _volumes(ctx)
    resources = _resources(ctx)
    gpus = ctx.gpus_per_node
    serve = shell_join(ray_serve_argv(ctx))
    leader_script = (
        f"ray start --head --port={RAY_PORT} --num-gpus={gpus} && "
        # wait until every node has joined before vLLM asks Ray for its placement group
        f'until [ "$(ray status 2>/dev/null | grep -c \'node_\')" -ge "$LWS_GROUP_SIZE" ]; do sleep 5; done && '
        f"exec {serve}"
    )
    worker_script = f"exec ray start --address=$(LWS_LEADER_ADDRESS):{RAY_PORT} --num-gpus={gpus} --block"
    env = _k8s_env(ctx, f"{ctx.name}-api-key")
    leader: dict[str, Any] = {
        "name": "vllm-leader",
        "image": ctx.image,
        "command": ["/bin/sh", "-c"],
        "args": [leader_script],
        "ports": [{"name": "http", "containerPort": CONTAINER_PORT}],
        "resources": resources,
        "volumeMounts": mounts,
        **_probes(ctx),
    }
    worker: dict[str, Any] = {
        "name": "vllm-worker",
        "image": ctx.image,
        "command": ["/bin/sh", "-c"],
        "args": [worker_script],
        "resources": resources,
        "volumeMounts": mounts,
    }
    if env:
        leader["env"] = env
        worker["env"] = [e for e in env if e["name"] != "VLLM_API_KEY"]
        if not worker["env"]:
            del worker["env"]
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": ctx.name, "labels": _labels(ctx)},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {
                "size": ctx.nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {
                    "metadata": {"labels": {"role": "leader"}},
                    "spec": {"containers": [leader], "volumes": volumes},
                },
                "workerTemplate": {"spec": {"containers": [worker], "volumes": volumes}},
            },
        },
    }
    selector = {"leaderworkerset.sigs.k8s.io/name": ctx.name, "role": "leader"}
    return [lws, _service(ctx, selector)]


def export_k8s(ctx: ExportContext) -> str:
    header = ctx.header("Kubernetes manifests")
    if ctx.auth:
        header.append(
            f"create the key first: kubectl create secret generic {ctx.name}-api-key --from-literal=api-key=..."
        )
    if ctx.plan.model.source != "local":
        header.append("optional: kubectl create secret generic hf-token --from-literal=token=$HF_TOKEN")
        header.append(
            f"model cache: PersistentVolumeClaim {_pvc_name(ctx)} of {ctx.cache_size_gi()}Gi "
            f"({'ReadWriteMany: every replica/node mounts it' if ctx.shared_cache else 'ReadWriteOnce'}); "
            "the cluster's default StorageClass unless one is named"
        )
        if download_job(ctx) is not None:
            header.append(
                f"the Job {dns_name(ctx.name + '-download')} fills it; vLLM waits on the same file locks if it starts first"
            )
    if ctx.nodes > 1:
        header.append("needs the LeaderWorkerSet controller (https://github.com/kubernetes-sigs/lws)")
    lo, hi = ctx.replicas
    if hi > 1:
        header += [
            f"autoscaling: {lo}..{hi} replicas of {max(1, ctx.gpus_per_node) * ctx.nodes if ctx.device != 'cpu' else 0} GPU(s) each "
            f"on {'queue length (waiting requests per replica)' if ctx.scale_metric == 'queue' else 'mean KV-cache usage'};",
            "the HPA reads an External metric: install prometheus-adapter with the rules at the end of this file",
        ]
    header.append("metrics: the ServiceMonitor needs the Prometheus Operator; the dashboard ConfigMap is picked up by")
    header.append("the Grafana sidecar of kube-prometheus-stack (label grafana_dashboard=1)")
    docs = [_yaml(o) for o in k8s_objects(ctx)]
    text = _comment(header) + "---\n".join(docs)
    if hi > 1:
        rules = _yaml(prometheus_adapter_rules(ctx.plan.vllm_version))
        text += "\n# --- prometheus-adapter values (helm install prometheus-adapter prometheus-community/prometheus-adapter -f ...) ---\n"
        text += "".join("# " + ln + "\n" for ln in rules.splitlines())
    return text


def export_grafana(ctx: ExportContext) -> str:
    """The Grafana dashboard alone (JSON), for import through Grafana's UI or API."""
    return json.dumps(grafana_dashboard(f"vLLM {ctx.served}", ctx.plan.vllm_version), indent=1) + "\n"


# ---------------------------------------------------------------------------------------------
# Ray (multi-node)


def export_ray(ctx: ExportContext) -> str:
    gpus = ctx.gpus_per_node
    model = ctx.host_model_dir or model_ref(ctx.plan)
    argv = ["vllm", "serve", model]
    # the head's API must be reachable from outside the node: bind every interface, behind the key
    flags = serve_flags(ctx.plan, ctx.req, ctx.endpoint, host="0.0.0.0", include_api_key=False,
                        executor_backend="ray")
    for f in flags:
        argv += f.argv()
    env = ctx.env()
    lines = [
        "#!/usr/bin/env bash",
        *(f"# {ln}" for ln in ctx.header("Ray cluster commands")),
        f"# {ctx.nodes} node(s) x {gpus} GPU(s); every node needs the same vLLM version and the model",
        "# (same path, or the same hub cache) and must reach the head on port 6379.",
        "# Ray's ports have no authentication: keep the nodes on a private network / firewall them.",
        "",
        "# 1. on the head node:",
        f"ray start --head --port={RAY_PORT} --num-gpus={gpus}",
        "",
        f"# 2. on each of the {ctx.nodes - 1} other node(s) (HEAD_IP = the head node's address):",
        f"ray start --address=HEAD_IP:{RAY_PORT} --num-gpus={gpus} --block",
        "",
        f"# 3. on the head node, once `ray status` lists {ctx.nodes * gpus} GPUs:",
    ]
    for k, v in env.items():
        lines.append(f"export {k}={shell_quote(v)}")
    if ctx.auth:
        lines.append(': "${VLLM_API_KEY:?set VLLM_API_KEY}"')
    else:
        lines.append(f"# warning: no API key: anyone who reaches port {ctx.endpoint.port} of the head can use the model")
    lines.append(format_shell(argv))
    text = "\n".join(lines) + "\n"
    if ctx.nodes > 1:
        docs = [_yaml(o) for o in _lws_objects(ctx)]
        text += "\n# --- the same on Kubernetes (LeaderWorkerSet) ---\n"
        text += "".join("# " + ln + "\n" for ln in "---\n".join(docs).splitlines())
    return text


_EXPORTERS = {
    "shell": export_shell,
    "docker": export_docker,
    "compose": export_compose,
    "k8s": export_k8s,
    "ray": export_ray,
    "grafana": export_grafana,
}


def export(
    plan: PlanResult,
    req: PlanRequest,
    fmt: str,
    *,
    endpoint: ServeEndpoint | None = None,
    image: str | None = None,
    name: str | None = None,
    auth: bool = False,
    visible_devices: list[int] | None = None,
    health_timeout_s: float = 1800.0,
    replicas: tuple[int, int] = DEFAULT_REPLICAS,
    scale_metric: ScaleMetric = "queue",
    storage_class: str | None = None,
    download_job: bool = True,
) -> str:
    if fmt not in _EXPORTERS:
        raise ValueError(f"unknown export format {fmt!r}")
    nodes = max(1, plan.parallel.nodes)
    if fmt in SINGLE_MACHINE_FORMATS and nodes > 1:
        p = plan.parallel
        raise UsageError(
            f"this plan spans {nodes} nodes ({p.tensor_parallel_size * p.pipeline_parallel_size} GPUs: TP "
            f"{p.tensor_parallel_size} x PP {p.pipeline_parallel_size}); a {fmt} export runs on one machine",
            "use --export ray (Ray head + worker commands) or --export k8s (LeaderWorkerSet)",
            code="multi-node-export",
        )
    ctx = ExportContext(
        plan,
        req,
        endpoint=endpoint,
        image=image,
        name=name,
        auth=auth,
        visible_devices=visible_devices,
        health_timeout_s=health_timeout_s,
        replicas=replicas,
        scale_metric=scale_metric,
        storage_class=storage_class,
        download_job=download_job,
    )
    return _EXPORTERS[fmt](ctx)
