"""Cause + fix for a failed start: the doctor's log diagnosis when available, else a small fallback.

The doctor (doctor/diagnose.py, `diagnose_log(text) -> LogReport`) owns log diagnosis; serve only
adapts its answer. The import is lazy and guarded so serve keeps working (with the fallback below,
which knows the few failures serve itself must explain) if the doctor module is absent or broken.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from pydantic import BaseModel, Field


class StartFailure(BaseModel):
    code: str
    title: str
    evidence: str = ""
    fix: str = ""
    suggested_flags: list[str] = Field(default_factory=list)
    alternatives: list[str] = Field(default_factory=list)  # "flags: effect"
    estimated_max_model_len: int | None = None
    source: str = "doctor"  # doctor | fallback


_EST = re.compile(r"estimated maximum model length is (\d+)")
_KV_SMALL = re.compile(r"To serve at least one request with the models?'s? max seq len \((\d+)\)")


def _doctor_diagnose(text: str) -> list[Any] | None:
    for module in ("vllmkit.doctor.logs", "vllmkit.doctor.diagnose"):
        try:
            fn = getattr(importlib.import_module(module), "diagnose_log", None)
        except Exception:
            continue
        if fn is None:
            continue
        try:
            result = fn(text)
        except Exception:
            return None
        items = getattr(result, "diagnoses", result)
        return list(items) if isinstance(items, (list, tuple)) else None
    return None


def _get(item: Any, key: str, default: Any = None) -> Any:
    if isinstance(item, dict):
        return item.get(key, default)
    return getattr(item, key, default)


def diagnose_start_failure(log_text: str) -> list[StartFailure]:
    """Errors first; warnings/info from the doctor are dropped here (they are not the cause)."""
    found: list[StartFailure] = []
    for item in _doctor_diagnose(log_text) or []:
        if _get(item, "severity", "error") != "error":
            continue
        details = _get(item, "details", {}) or {}
        est = details.get("estimated_max_model_len") if isinstance(details, dict) else None
        found.append(
            StartFailure(
                code=str(_get(item, "code", "startup-failed")),
                title=str(_get(item, "title", "")),
                evidence=str(_get(item, "evidence", "") or ""),
                fix=str(_get(item, "fix", "") or ""),
                suggested_flags=list(_get(item, "suggested_flags", []) or []),
                alternatives=[_alternative(a) for a in _get(item, "alternatives", []) or []],
                estimated_max_model_len=est if isinstance(est, int) else _estimated_len(log_text),
            )
        )
    if not found:
        found = _fallback(log_text)
    for f in found:
        if f.estimated_max_model_len is None and f.code == "kv-cache-too-small":
            f.estimated_max_model_len = _estimated_len(log_text)
    return found


def _alternative(alt: Any) -> str:
    flags = " ".join(str(f) for f in (_get(alt, "flags", []) or []))
    effect = str(_get(alt, "effect", "") or "")
    return f"{flags}: {effect}" if flags and effect else (flags or effect)


def _estimated_len(text: str) -> int | None:
    m = _EST.search(text)
    return int(m.group(1)) if m else None


def _last_line(text: str, needle: str) -> str:
    for line in reversed(text.splitlines()):
        if needle in line:
            return line.strip()[:1000]
    return ""


def _fallback(text: str) -> list[StartFailure]:
    """The failures serve must always explain (shared/reference/vllm-memory.md §4)."""
    if m := _KV_SMALL.search(text):
        est = _estimated_len(text)
        fix = (
            f"start with --max-model-len {est} (vLLM's estimate) or give the KV cache more memory "
            "(--kv-cache-memory-bytes / --gpu-memory-utilization, --kv-cache-dtype fp8, more GPUs)"
            if est
            else "give the KV cache more memory or lower --max-model-len"
        )
        return [
            StartFailure(
                code="kv-cache-too-small",
                title=f"KV cache too small for one request of max_model_len {int(m.group(1)):,}",
                evidence=_last_line(text, "To serve at least one request"),
                fix=fix,
                suggested_flags=[f"--max-model-len {est}"] if est else [],
                estimated_max_model_len=est,
                source="fallback",
            )
        ]
    if "No available memory for the cache blocks" in text:
        return [
            StartFailure(
                code="no-kv-memory",
                title="no memory left for the KV cache",
                evidence=_last_line(text, "No available memory for the cache blocks"),
                fix="raise --gpu-memory-utilization, use a quantized model or more GPUs (--tensor-parallel-size)",
                source="fallback",
            )
        ]
    if "Address already in use" in text:
        return [
            StartFailure(
                code="port-in-use",
                title="the port is already taken",
                evidence=_last_line(text, "Address already in use"),
                fix="choose another --port or stop the server holding it (`vllmkit ps`, `vllmkit stop`)",
                source="fallback",
            )
        ]
    if "out of memory" in text.lower():
        return [
            StartFailure(
                code="cuda-oom",
                title="out of GPU memory during startup",
                evidence=_last_line(text, "out of memory"),
                fix="lower --gpu-memory-utilization or --max-num-batched-tokens, use --enforce-eager, "
                "a quantized model or more GPUs",
                source="fallback",
            )
        ]
    errors = [ln.strip() for ln in text.splitlines() if re.search(r"\b\w*(Error|Exception): ", ln)]
    return [
        StartFailure(
            code="startup-failed",
            title="vLLM exited during startup",
            evidence=errors[-1][:1000] if errors else "",
            fix="read the log (`vllmkit doctor --log`) for the first error",
            source="fallback",
        )
    ]
