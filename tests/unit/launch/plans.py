"""Hand-built plans for launch tests (no planner involved: the builder is tested on its own).

Numbers are illustrative but self-consistent where a test relies on them (KV tokens = blocks x
block size; CPU tiny model: 2 layers x 2 (K,V) x 1 kv head x 64 dims x 2 bytes = 512 B/token,
1 GiB / 512 B = 2,097,152 tokens, 2,097,152 / 1,024 = 2048x).
"""

from __future__ import annotations

from typing import Any

from vllmkit.launch.command import ServeEndpoint
from vllmkit.plan.models import (
    GpuInfo,
    KVCacheInfo,
    MemoryInfo,
    ModelInfo,
    ParallelInfo,
    PlanRequest,
    PlanResult,
    SettingsInfo,
)

GIB = 1 << 30


def make_plan(
    *,
    model: dict[str, Any],
    gpu: dict[str, Any],
    device: str,
    parallel: dict[str, Any] | None = None,
    settings: dict[str, Any],
    kv: dict[str, Any] | None = None,
    memory: dict[str, Any] | None = None,
    vllm_version: str = "0.32.0",
) -> PlanResult:
    kv = kv or {}
    mem = {
        "total_bytes": 80 * GIB,
        "requested_bytes": 73 * GIB,
        "weights_bytes": 30 * GIB,
        "activation_bytes": 2 * GIB,
        "non_torch_bytes": 1 * GIB,
        "cudagraph_bytes": 1 * GIB,
        "kv_cache_bytes": 39 * GIB,
    }
    mem.update(memory or {})
    return PlanResult(
        model=ModelInfo(
            **{
                "architecture": "LlamaForCausalLM",
                "model_type": "llama",
                "dtype": "bfloat16",
                "native_max_model_len": 131072,
                **model,
            }
        ),
        gpu=GpuInfo(**gpu),
        device=device,  # type: ignore[arg-type]
        vllm_version=vllm_version,
        vllm_version_source="given",
        parallel=ParallelInfo(**(parallel or {})),
        settings=SettingsInfo(**{"kv_cache_dtype": "auto", "dtype": "auto", "block_size": 16, **settings}),
        memory=MemoryInfo(**mem),
        kv_cache=KVCacheInfo(
            bytes_per_token=kv.get("bytes_per_token", 131072),
            block_size=kv.get("block_size", 16),
            num_blocks=kv.get("num_blocks", 10000),
            tokens=kv.get("tokens", 160000),
            max_model_len=settings["max_model_len"],
            max_concurrency=kv.get("max_concurrency", 4.88),
            bytes_per_block=kv.get("bytes_per_block", 2 * 1024 * 1024),
        ),
        fits=True,
    )


# serve's endpoint for cuda_plan (serving concerns are not part of a PlanRequest)
CUDA_ENDPOINT = ServeEndpoint(served_model_name="qwen32b", api_key="sk-secret-123", generation_config_vllm=True)


def cuda_plan() -> tuple[PlanRequest, PlanResult]:
    """Qwen3-32B (bf16 checkpoint) on 2 x H100 SXM, FP8 weights (online) and FP8 KV cache."""
    req = PlanRequest(
        model="Qwen/Qwen3-32B",
        gpu="h100-sxm",
    )
    plan = make_plan(
        model={
            "id": "Qwen/Qwen3-32B",
            "source": "hf",
            "architecture": "Qwen3ForCausalLM",
            "model_type": "qwen3",
        },
        gpu={
            "name": "h100-sxm",
            "display_name": "NVIDIA H100 SXM",
            "vendor": "nvidia",
            "count": 2,
            "memory_bytes": 85028896768,
        },
        device="cuda",
        parallel={"tensor_parallel_size": 2},
        settings={
            "gpu_memory_utilization": 0.92,
            "max_model_len": 32768,
            "max_num_seqs": 1024,
            "max_num_batched_tokens": 8192,
            "kv_cache_dtype": "fp8",
            "dtype": "bfloat16",
            "quantization": "fp8",
        },
    )
    return req, plan


def rocm_plan(source: str = "hf") -> tuple[PlanRequest, PlanResult]:
    """A remote-code model (config.json has auto_map) on one MI300X."""
    req = PlanRequest(model="internlm/internlm3-8b-instruct", gpu="mi300x", source=source)
    plan = make_plan(
        model={
            "id": "internlm/internlm3-8b-instruct",
            "source": source,
            "architecture": "InternLM3ForCausalLM",
            "model_type": "internlm3",
            "trust_remote_code": True,
        },
        gpu={
            "name": "mi300x",
            "display_name": "AMD Instinct MI300X",
            "vendor": "amd",
            "count": 1,
            "memory_bytes": 205822885888,
        },
        device="rocm",
        settings={
            "gpu_memory_utilization": 0.9,
            "max_model_len": 32768,
            "max_num_seqs": 1024,
            "max_num_batched_tokens": 8192,
            "dtype": "bfloat16",
        },
    )
    return req, plan


def multinode_plan() -> tuple[PlanRequest, PlanResult]:
    """Llama-3.1-405B-Instruct bf16 on 2 nodes x 8 H100: TP 8 inside a node, PP 2 across nodes."""
    req = PlanRequest(model="meta-llama/Llama-3.1-405B-Instruct", gpu="h100-sxm", gpu_count=16)
    plan = make_plan(
        model={"id": "meta-llama/Llama-3.1-405B-Instruct", "source": "hf"},
        gpu={
            "name": "h100-sxm",
            "display_name": "NVIDIA H100 SXM",
            "vendor": "nvidia",
            "count": 16,
            "memory_bytes": 85028896768,
            "gpus_per_node": 8,
            "nodes": 2,
        },
        device="cuda",
        parallel={"tensor_parallel_size": 8, "pipeline_parallel_size": 2, "nodes": 2},
        settings={
            "gpu_memory_utilization": 0.92,
            "max_model_len": 65536,
            "max_num_seqs": 1024,
            "max_num_batched_tokens": 8192,
        },
    )
    return req, plan


def cpu_plan(path: str = "/models/tiny") -> tuple[PlanRequest, PlanResult]:
    """The tests' tiny Llama on the CPU build with a fixed 1 GiB KV budget."""
    req = PlanRequest(model=path, device="cpu", kv_cache_memory_bytes=GIB, max_model_len=1024)
    plan = make_plan(
        model={"id": path, "source": "local", "path": path, "native_max_model_len": 4096},
        gpu={
            "name": "cpu",
            "display_name": "Host CPU (RAM)",
            "vendor": "cpu",
            "count": 1,
            "memory_bytes": 24 * GIB,
            "gpus_per_node": 1,
        },
        device="cpu",
        settings={
            "gpu_memory_utilization": 0.92,
            "max_model_len": 1024,
            "max_num_seqs": 128,
            "max_num_batched_tokens": 2048,
            "block_size": 128,
            "kv_cache_memory_bytes": GIB,
        },
        kv={
            "bytes_per_token": 512,
            "block_size": 128,
            "num_blocks": 16384,
            "tokens": 2097152,
            "max_concurrency": 2048.0,
            "bytes_per_block": 65536,
        },
        memory={
            "total_bytes": 24 * GIB,
            "weights_bytes": 853248,
            "kv_cache_bytes": GIB,
            "activation_bytes": 0,
            "non_torch_bytes": GIB + GIB // 2,
            "cudagraph_bytes": 0,
        },
    )
    return req, plan
