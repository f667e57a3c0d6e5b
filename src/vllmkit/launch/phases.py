"""Startup phases and capacity facts read live from vLLM's log, line by line.

The log reader (vllmkit.logs) does the reading: each fed line is cleaned and matched once, the
running facts are updated and the stages it reached are recorded (logs/stages.py says which log
lines mark each stage). This module adds the labels for people and the caller's clock, and turns the
reader's facts into the numbers `serve` compares with the plan. Nothing is ever re-read.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from vllmkit.logs import LogFacts, LogReader
from vllmkit.units import GIB

LABELS: dict[str, str] = {
    "config": "resolving config",
    "engine": "starting the engine",
    "download": "downloading weights",
    "weights": "loading weights",
    "weights_done": "weights loaded",
    "compile": "compiling the model",
    "profile": "profiling memory / warming up",
    "kv_cache": "KV cache allocated",
    "graphs": "capturing CUDA graphs",
    "engine_ready": "engine initialised",
    "api_up": "API server up",
}


class PhaseEvent(BaseModel):
    phase: str  # stable key (logs.STAGE_KEYS)
    label: str  # for people
    elapsed_s: float
    detail: str = ""


class StartupFacts(BaseModel):
    """Numbers vLLM printed, to compare with the plan."""

    kv_tokens: int | None = None
    kv_max_model_len: int | None = None
    max_concurrency: float | None = None
    weights_gib: float | None = None  # "Model loading took X GiB" (GPU only)
    available_kv_gib: float | None = None  # "Available KV cache memory: X GiB" (GPU only)
    graph_gib: float | None = None
    estimated_max_model_len: int | None = None
    api_url: str | None = None
    error_lines: list[str] = Field(default_factory=list)


def _gib(n: int | None) -> float | None:
    return None if n is None else round(n / GIB, 4)


def startup_facts(lf: LogFacts) -> StartupFacts:
    return StartupFacts(
        kv_tokens=lf.kv_cache_tokens,
        kv_max_model_len=lf.concurrency_tokens_per_request,
        max_concurrency=lf.max_concurrency,
        weights_gib=_gib(lf.weights_bytes),
        # (a vLLM 0.34 start with the extensible KV cache prints its reserved capacity there, not its size)
        available_kv_gib=(_gib(lf.available_kv_bytes) if lf.kv_pool != "CPU" and not lf.extensible_kv_cache
                          else None),
        graph_gib=_gib(lf.graph_memory_bytes),
        estimated_max_model_len=lf.estimated_max_model_len,
        api_url=lf.api_url,
        error_lines=list(lf.errors),
    )


class StartupTracker:
    """Feed log lines; get phase events once each and the facts seen so far."""

    def __init__(self) -> None:
        self.reader = LogReader()
        self.events: list[PhaseEvent] = []

    @property
    def seen(self) -> set[str]:
        return {e.phase for e in self.events}

    @property
    def log_facts(self) -> LogFacts:
        return self.reader.facts

    @property
    def facts(self) -> StartupFacts:
        return startup_facts(self.reader.facts)

    def feed(self, raw: str, elapsed_s: float) -> list[PhaseEvent]:
        before = len(self.reader.stages)
        self.reader.feed(raw.rstrip("\r\n"))
        new = [
            PhaseEvent(phase=s.key, label=LABELS.get(s.key, s.key), elapsed_s=round(elapsed_s, 1), detail=s.detail)
            for s in self.reader.stages[before:]
        ]
        self.events.extend(new)
        return new
