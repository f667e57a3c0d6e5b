"""vLLM's CUDA-graph memory estimate (estimate/memory.py profiled_cudagraph) against the figures public starts
printed ("Estimated CUDA graph memory: X GiB", benchmarks/data/*startup-logs*.jsonl `cudagraph_estimate_gib`), and
what it does to a plan: from vLLM 0.20 the estimate is taken off the KV budget, so --max-num-seqs -- which sets how
many graphs vLLM captures -- changes the KV cache, as a public start shows.

The coefficients were fitted on the printed figures of 87 starts; the checks that are not those figures are the
hand-counted capture sizes, the KV difference between two starts of one hybrid model (not in the fit: hybrid
models were left out of it), and the planner's choice."""

from __future__ import annotations

import json

import pytest

from tests.clirun import invoke
from vllmkit.estimate.memory import default_capture_sizes, profiled_cudagraph
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

GIB = 1 << 30
ENV = {"VLLMKIT_NO_CALIBRATION": "1"}


def test_capture_sizes_decide_the_graph_count() -> None:
    # --max-num-seqs 32: capture sizes up to 2 x 32 = 64 -> 1, 2, 4, 8 ... 64 = 3 + 8 piecewise sizes; full (uniform
    # decode) graphs for the sizes up to 32 -> 1, 2, 4, 8, 16, 24, 32 = 7
    assert default_capture_sizes(32, 2048) == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
    term = profiled_cudagraph(hidden_size=3584, layers_on_rank=28, tp=1, max_num_seqs=32, max_num_batched_tokens=2048)
    assert "11 piecewise + 7 full graphs" in term.note and "--max-num-seqs 32" in term.note
    # compute capability 10.x from 0.32: up to 1,024 tokens
    assert default_capture_sizes(1024, 8192, ceiling=1024)[-1] == 1024
    assert default_capture_sizes(1024, 8192)[-1] == 512


@pytest.mark.parametrize(("hidden", "layers", "tp", "seqs", "mnbt", "printed"), [
    # llm-d planner sweep, vLLM 0.19 on H100s (1,024 sequences, 8,192 batched tokens): Llama-3.3-70B FP8 at TP 2 and
    # TP 4, Qwen2.5-7B at TP 1
    (8192, 80, 2, 1024, 8192, 1.82),
    (8192, 80, 4, 1024, 8192, 1.70),
    (3584, 28, 1, 1024, 8192, 0.61),
    # stellalee's RTX 4090, Qwen2.5-Coder-7B at --max-num-seqs 32 (0.23); llminfralab's RTX 4090, Qwen2.5-0.5B and -7B
    # at the default 256 (0.24)
    (3584, 28, 1, 32, 2048, 0.13),
    (896, 24, 1, 256, 2048, 0.28),
    (3584, 28, 1, 256, 2048, 0.53),
])
def test_estimate_is_near_what_starts_printed(hidden: int, layers: int, tp: int, seqs: int, mnbt: int,
                                              printed: float) -> None:
    term = profiled_cudagraph(hidden_size=hidden, layers_on_rank=layers, tp=tp, max_num_seqs=seqs,
                              max_num_batched_tokens=mnbt)
    assert term.bytes / GIB == pytest.approx(printed, rel=0.15)


def test_fewer_sequences_leave_more_kv_as_a_public_start_did() -> None:
    """collected-startup-logs-59 (file 61942353725): Qwen3.8-27B-FP8 on an L40S, vLLM 0.26.0, 131,072 tokens,
    utilization 0.90: 8.82 GiB of KV at the default 256 sequences, 9.75 GiB at --max-num-seqs 16 (+0.93 GiB:
    fewer graphs and a smaller dummy sampler)."""

    def kv(seqs: int) -> float:
        req = PlanRequest(model="Qwen/Qwen3.8-27B", source="catalog", gpu="l40s", quantization="fp8",
                          tensor_parallel_size=1, max_model_len=131072, gpu_memory_utilization=0.90,
                          max_num_seqs=seqs, vllm_version="0.26.0")
        return build_plan(req, ENV).memory.kv_cache_bytes / GIB

    assert kv(16) - kv(256) == pytest.approx(9.75 - 8.82, abs=0.15)


def test_graphs_before_0_20_are_not_charged() -> None:
    req = PlanRequest(model="Qwen/Qwen3-8B", source="catalog", gpu="h100", vllm_version="0.19.1", max_model_len=8192)
    assert build_plan(req, ENV).memory.cudagraph_bytes == 0


def test_the_plan_lowers_max_num_seqs_where_the_default_leaves_no_usable_context() -> None:
    """Llama-3.3-70B FP8 on one H100 at vLLM 0.32: at the default 1,024 sequences the graph estimate (~2 GiB) and
    the dummy sampler leave a context of a few hundred tokens; 64 sequences leave several thousand."""
    req = PlanRequest(model="RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", source="catalog", gpu="h100", gpu_count=1,
                      vllm_version="0.32.0")
    plan = build_plan(req, ENV)
    assert plan.fits and plan.settings.max_num_seqs == 64
    assert plan.settings.max_model_len > 1024
    assert any(r.startswith("--max-num-seqs 64: at vLLM's default (1024)") for r in plan.reasons)
    line = json.loads(invoke(["plan", req.model, "--gpu", "h100", "--gpu-count", "1", "--source", "catalog",
                              "--vllm-version", "0.32.0", "--json"], env=ENV).stdout)["data"]["serve_command"]
    assert line[line.index("--max-num-seqs") + 1] == "64"
    # a context the user fixed is checked as vLLM would start it: the default sequences, not lowered
    fixed = build_plan(req.model_copy(update={"max_model_len": 4096}), ENV)
    assert not fixed.fits and fixed.settings.max_num_seqs == 1024
    # --max-num-seqs given: kept
    given = build_plan(req.model_copy(update={"max_num_seqs": 512}), ENV)
    assert given.settings.max_num_seqs == 512
