"""Exact alternatives for a start that failed for lack of KV cache memory, on the run's own budget.

The run's KV budget (`--kv-cache-memory-bytes`, or the available KV memory vLLM printed) is fed back
to the planner, so the fp8-KV-cache and higher-utilization figures are vLLM's own block arithmetic on
that budget (GPU logs print the budget rounded to 0.01 GiB). The doctor takes this as a hook
(doctor.diagnose.PlannerHook) from the CLI, so that the doctor does not depend on the planner.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from vllmkit.logs import LogFacts
from vllmkit.units import GIB


def _is_cpu(f: LogFacts) -> bool:
    return (f.platform or "").lower() == "cpu" or (f.kv_pool or "").upper() == "CPU"


def _two_byte_kv(f: LogFacts) -> bool:
    """KV cache stored in a 2-byte type (auto with a 16-bit model dtype, or explicit bf16/fp16)."""
    kv = (f.kv_cache_dtype or "auto").lower()
    if kv in ("bfloat16", "float16", "half", "bf16", "fp16"):
        return True
    if kv != "auto":
        return False
    return (f.dtype or "bfloat16").lower() in ("bfloat16", "float16", "half", "bf16", "fp16")


def planner_alternatives(facts: LogFacts, env: Mapping[str, str] | None = None) -> list[tuple[list[str], str]]:
    """[(flags, effect)] from the planner. Nothing when the model or the budget is unknown, or the
    model cannot be resolved; never raises (the hint must never break the diagnosis)."""
    kv_bytes = facts.kv_cache_memory_bytes_requested or facts.available_kv_bytes
    if not facts.model or not facts.max_model_len or not kv_bytes:
        return []
    try:
        return _alternatives(facts, kv_bytes, dict(os.environ) if env is None else dict(env))
    except Exception:
        return []


def _alternatives(f: LogFacts, kv_bytes: int, env: dict[str, str]) -> list[tuple[list[str], str]]:
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    cpu = _is_cpu(f)
    base: dict[str, Any] = {
        "model": f.model,
        "device": "cpu" if cpu else None,
        "tensor_parallel_size": f.tensor_parallel_size or 1,
        "pipeline_parallel_size": f.pipeline_parallel_size or 1,
        "max_model_len": f.max_model_len,
        "vllm_version": (f.vllm_version or "").split("+")[0] or None,
    }
    if not cpu:
        base["gpu"] = f.gpu_name
        base["gpu_memory"] = f.gpu_total_bytes
        if not f.gpu_name and not f.gpu_total_bytes:
            return []
    out: list[tuple[list[str], str]] = []

    def plan(kv_dtype: str, budget: int):  # type: ignore[no-untyped-def]
        req = PlanRequest(**base, kv_cache_dtype=kv_dtype, kv_cache_memory_bytes=budget)
        try:
            return build_plan(req, env)
        except Exception:
            if base.get("gpu"):  # an unknown GPU name: fall back to the total the log printed
                req = PlanRequest(**{**base, "gpu": None}, kv_cache_dtype=kv_dtype, kv_cache_memory_bytes=budget)
                return build_plan(req, env)
            raise

    def effect(p) -> str:  # type: ignore[no-untyped-def]
        if p.fits:
            return (f"fits: {p.kv_cache.tokens:,} KV tokens, {p.kv_cache.max_concurrency:.2f}x requests of "
                    f"{p.kv_cache.max_model_len:,} tokens")
        return f"still too small: longest context {p.usable_max_model_len or 0:,} tokens"

    if _two_byte_kv(f):
        p = plan("fp8", kv_bytes)
        out.append((["--kv-cache-dtype", "fp8"], effect(p) + " (same KV memory)"))
    if not cpu and f.gpu_total_bytes and f.gpu_memory_utilization is not None and f.gpu_memory_utilization < 0.95:
        # every extra byte of the utilization budget goes to the KV cache (reference §1)
        util = 0.95
        extra = int(f.gpu_total_bytes * (util - f.gpu_memory_utilization))
        p = plan(f.kv_cache_dtype or "auto", kv_bytes + extra)
        out.append((["--gpu-memory-utilization", f"{util:.2f}"],
                    effect(p) + f" (+{extra / GIB:.2f} GiB of KV, if that memory is free)"))
    return out
