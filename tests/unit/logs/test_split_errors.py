"""vLLM raises its start-up errors as one line; quotes of them in blogs and issues (and hard-wrapped terminals)
break them over two or three. The reader joins such a split error and reports it on its first line.

The texts are the public quotes of benchmarks/data (the row ids are named); the numbers asserted are the ones
those quotes print."""

from __future__ import annotations

import json
from pathlib import Path

from vllmkit.logs import LogReader, read_log

DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data"


def quote(row_id: str) -> str:
    for path in sorted(DATA.glob("*startup-logs*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if row["id"] == row_id:
                return row["quote"]
    raise KeyError(row_id)


def test_kv_too_small_over_two_lines_without_vllms_parenthesis() -> None:
    # aihpi-litellm (vLLM 0.15.1 blog): "... max seq len (131072),\n20.0 GiB KV cache is needed, ... (5.11 GiB)."
    parsed = read_log(quote("aihpi-litellm-h100-llama33-70b-fp8-kvfp8-util095-len131072-fail"))
    event = parsed.first("kv_too_small")
    assert event is not None
    assert event.values == {"len": "131072", "needed": "20.0", "avail": "5.11"}
    assert parsed.facts.max_model_len == 131072


def test_kv_too_small_over_three_lines_keeps_the_estimate() -> None:
    # flosa-vllm-bench (vLLM 0.28 on an L4): the estimate sits on the third line
    parsed = read_log(quote("flosa-vllm-bench-l4-qwen25-7b-awq-util035-len32768-v0280-kv-fail"))
    event = parsed.first("kv_too_small")
    assert event is not None and event.values["needed"] == "1.75" and event.values["avail"] == "1.1"
    assert parsed.facts.estimated_max_model_len == 20512


def test_one_line_error_without_the_parenthesis() -> None:
    # sparkdocker (DGX Spark issue): the whole sentence on one line, "(" dropped
    parsed = read_log(quote("sparkdocker-396-2xdgxspark-minimax-m27-awq-tp2-util08-fail"))
    event = parsed.first("kv_too_small")
    assert event is not None and event.values["est"] == "190272"


def test_a_line_that_only_looks_like_a_start_loses_nothing() -> None:
    # vLLM >= 0.9.1 prints "Free memory on device ... on startup. Desired ..." on a healthy start (no error): it
    # waits for a continuation, and the line after it is still read on its own
    text = ("Free memory on device (78.5/79.2 GiB) on startup. Desired GPU memory utilization is (0.9, 71.3 GiB).\n"
            "Available KV cache memory: 52.10 GiB\n"
            "GPU KV cache size: 341,440 tokens\n")
    parsed = read_log(text)
    assert parsed.first("insufficient_free") is None
    assert parsed.facts.available_kv_bytes == round(52.10 * 2**30)
    assert parsed.first("kv_tokens") is not None


def test_fed_line_by_line_the_same_as_whole() -> None:
    text = quote("flosa-vllm-bench-l4-qwen25-7b-awq-util035-len32768-v0280-kv-fail")
    reader = LogReader()
    for raw in text.splitlines():
        reader.feed(raw)
    whole = read_log(text)
    assert reader.events == whole.events and reader.facts == whole.facts


def test_unrelated_next_line_is_not_joined() -> None:
    # a start that is not followed by its continuation: nothing is invented from the two lines together
    text = ("ValueError: To serve at least one request with the model's max seq len (32768),\n"
            "INFO 01-01 00:00:00 [core.py:1] EngineCore failed to start.\n")
    parsed = read_log(text)
    assert parsed.first("kv_too_small") is None
    assert parsed.facts.engine_failed
