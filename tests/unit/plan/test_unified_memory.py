"""Unified-memory GPUs (GB10, Jetson AGX Thor): the plan warns that vLLM sizes a smaller KV cache there, by the
spread the public logs show. The warning's figures are read back from those logs through benchmarks/accuracy.py (the
same replay that scores the planner), so a change to the memory model that moves them fails here."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import pytest

from tests.clirun import invoke
from vllmkit.plan.candidates import UNIFIED_MEMORY_SHORTFALL_GIB

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"
sys.path.insert(0, str(BENCH))

import accuracy  # noqa: E402

# the started logs with an available-KV line on a unified-memory GPU (co-tenant rows, whose other programs' memory
# is in the figure by the reporter's account, aside: langx101's cotenant-growth pair, gb10-gemma4-26b's LoRA run)
ROWS = ("arm-dgxspark-mistral7b-gptq", "dgx-spark-notes-gb10-qwen3-06b-util060-v0271-ngc2608",
        "gb10-gpt-oss-20b-abliterated-mxfp4-len8192-util025-v0130nv-cold",
        "gb10-qwen3-30b-a3b-fp8-kvfp8-len32768-util030-v0130nv2601", "jetson-thor-llama31-8b-eager-util085-v0102",
        "r45-adadrag-qwen35dgx-gb10-qwen35-35b-a3b-bf16-len1048576-util095-nightly",
        "gb10-qwen38-27b-bf16-len32768-noprefix-util092-v0271-warm")


def _rows() -> dict[str, dict]:
    out = {}
    for path in sorted((BENCH / "data").glob("*startup-logs*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if row["id"] in ROWS:
                out.setdefault(row["id"], row)
    return out


def test_the_warning_states_the_shortfall_of_the_public_logs() -> None:
    """Every one of the seven starts got less KV cache than the plan of its own settings (a unified-memory start
    charges host memory), and the warning's low / high / median are theirs (to 0.1 GiB)."""
    rows = _rows()
    assert set(rows) == set(ROWS)
    short = []
    for rid in ROWS:
        case = accuracy.evaluate_row(rows[rid])
        assert case is not None and case.kv_meas is not None, rid
        short.append(case.kv_pred - case.kv_meas)
    assert all(s > 0 for s in short), short
    low, high, median = UNIFIED_MEMORY_SHORTFALL_GIB
    assert min(short) == pytest.approx(low, abs=0.1)
    assert max(short) == pytest.approx(high, abs=0.1)
    assert statistics.median(short) == pytest.approx(median, abs=0.1)


@pytest.mark.parametrize(("gpu", "warned"), [("gb10", True), ("jetson-agx-thor", True), ("h100", False),
                                            ("gh200", False)])
def test_a_plan_warns_on_unified_memory_only(gpu: str, warned: bool) -> None:
    """GB10 and Jetson share memory with the CPU; an H100 and a GH200 (its own HBM beside the Grace CPU's LPDDR) do
    not."""
    res = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", gpu, "--source", "catalog", "--json"])
    assert res.exit_code == 0, res.output
    warnings = json.loads(res.stdout)["data"]["warnings"]
    assert any(w.startswith("unified memory") and "--kv-cache-memory-bytes" in w for w in warnings) == warned
