"""Startup stages: which event kinds show that vLLM reached each stage of its start, in the order a
V1 start goes through them (engine config -> weights -> compile -> memory profiling -> KV cache -> CUDA graphs
-> engine ready -> API server). Each stage is reported once, when the first of its kinds is seen; a
line may reach several stages ("Loading weights took 1.2 seconds" starts and ends the weight load).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Detail = Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class StageRule:
    key: str
    kinds: tuple[str, ...]
    detail: Detail


def _none(values: dict[str, Any]) -> str:
    return ""


STAGE_RULES: tuple[StageRule, ...] = (
    StageRule("config", ("non_default_args", "architecture"), lambda v: v.get("arch", "")),
    StageRule("engine", ("engine_config",), lambda v: f"vLLM {v['version']}" if v.get("version") else ""),
    StageRule("download", ("download",), lambda v: f"{v['files']} files" if v.get("files") else ""),
    StageRule("weights", ("weights_loading",), _none),
    StageRule(
        "weights_done",
        ("weights_loaded", "weights_load_time"),
        lambda v: f"{v['gib']} GiB" if v.get("gib") else (f"{v['secs']} s" if v.get("secs") else ""),
    ),
    StageRule("compile", ("compile_cold", "compile_cache_loaded"),
              lambda v: "loaded from vLLM's compile cache" if v.get("warm") else "torch.compile, first start"),
    StageRule("profile", ("profiling", "available_kv"), lambda v: f"{v['gib']} GiB for KV" if v.get("gib") else ""),
    StageRule("kv_cache", ("kv_capacity", "kv_tokens"), lambda v: f"{v['tokens']} tokens" if v.get("tokens") else ""),
    StageRule("graphs", ("graph_capture_start", "graph_captured"), lambda v: f"{v['gib']} GiB" if v.get("gib") else ""),
    StageRule("engine_ready", ("init_engine",), lambda v: f"{v['secs']} s" if v.get("secs") else ""),
    StageRule("api_up", ("server_started",), lambda v: v.get("url") or v.get("uvicorn_url") or ""),
)
STAGE_KEYS: tuple[str, ...] = tuple(r.key for r in STAGE_RULES)


@dataclass(frozen=True)
class Stage:
    key: str
    line: int  # the log line that reached it
    detail: str
