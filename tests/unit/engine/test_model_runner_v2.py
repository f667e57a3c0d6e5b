"""Model Runner V2 (engine/versions.py model_runner_v2), read from each wheel's VllmConfig.use_v2_model_runner
and v1/worker/gpu/model_runner.py: which models it runs by default, and what its memory profile leaves out
(no CUDA-graph estimate before 0.29, a dummy sampler without top-k / top-p), checked against public logs."""

from __future__ import annotations

import pytest

from vllmkit.engine.versions import model_runner_v2, rules_for
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
GIB = 1 << 30
LLAMA, QWEN3, QWEN2 = ["LlamaForCausalLM"], ["Qwen3ForCausalLM"], ["Qwen2ForCausalLM"]


@pytest.mark.parametrize(("version", "archs", "kw", "expected"), [
    ("0.21.0", QWEN3, {}, False),  # opt-in only (VLLM_USE_V2_MODEL_RUNNER=1)
    ("0.22.0", QWEN3, {}, True),  # DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = {"Qwen3ForCausalLM"}
    ("0.22.0", LLAMA, {}, False),
    ("0.22.0", QWEN3, {"quantized": True}, False),  # "not model_config.is_moe and not model_config.is_quantized"
    ("0.23.0", LLAMA, {}, True),  # + Llama, Mistral
    ("0.23.0", QWEN2, {}, False),
    ("0.24.0", LLAMA, {"quantized": True}, True),  # the listed architectures, quantized or not
    ("0.24.0", QWEN2, {}, False),
    ("0.25.0", QWEN2, {"quantized": True}, True),  # every dense generate model
    ("0.25.0", ["Qwen3MoeForCausalLM"], {"moe": True}, False),  # MoE only if listed
    ("0.26.0", ["Qwen2MoeForCausalLM"], {"moe": True}, True),
    ("0.28.0", ["Qwen3NextForCausalLM"], {"moe": True, "hybrid": True}, False),
    ("0.28.0", QWEN2, {"speculative_method": "ngram"}, False),  # "ngram/ngram_gpu speculative decoding" unsupported
    ("0.29.0", ["Qwen3MoeForCausalLM"], {"moe": True}, True),  # every model from 0.29
    ("0.31.0", ["DeepseekV32ForCausalLM"], {"moe": True, "device": "rocm"}, False),  # ROCM_DEFAULT_MRV1_ARCHITECTURES
    ("0.28.0", QWEN2, {"device": "cpu"}, False),
])
def test_which_models_run_on_model_runner_v2(version: str, archs: list[str], kw: dict, expected: bool) -> None:
    args = {"moe": False, "quantized": False, "hybrid": False, "device": "cuda"} | kw
    assert model_runner_v2(version, archs, **args) is expected


def test_graph_estimate_from_0_29() -> None:
    # v1/worker/gpu/model_runner.py profile_cudagraph_memory: "return 0" in the 0.23 - 0.28 wheels,
    # _profile_cudagraph_memory(self) from 0.29
    assert not rules_for("0.28.0").mrv2_graph_estimate and rules_for("0.29.0").mrv2_graph_estimate


def _plan(model: str, version: str, gpu: str, util: float, max_len: int, **kw):
    return build_plan(PlanRequest(model=model, source="catalog", gpu=gpu, vllm_version=version,
                                  gpu_memory_utilization=util, max_model_len=max_len, **kw), ENV)


def test_a_0_27_dense_model_carries_no_graph_estimate_and_samples_light() -> None:
    """Hand-worked: Qwen3-8B on an RTX 4090 with vLLM 0.27.1 (2,048 batched tokens, 256 sequences): the dummy
    sampler holds 256 x 151,936 x 6 B = 233,373,696 B; the graph term is 0 (captured after the KV sizing)."""
    plan = _plan("Qwen/Qwen3-8B", "0.27.1", "rtx-4090", 0.92, 8192)
    assert plan.memory.cudagraph_bytes == 0 and "Model Runner V2" in plan.memory.notes["cudagraph"]
    assert plan.memory.activation_bytes == 256 * 151_936 * 6 == 233_373_696
    assert "Model Runner V2" in plan.memory.notes["activation"]
    # the V1 runner of the release before (0.21) samples with top-k / top-p and budgets the graphs
    v1 = _plan("Qwen/Qwen3-8B", "0.21.0", "rtx-4090", 0.92, 8192)
    assert v1.memory.cudagraph_bytes > 0 and v1.memory.activation_bytes == 256 * 151_936 * 14


@pytest.mark.parametrize(("model", "version", "gpu", "total_gib", "util", "max_len", "warm", "logged_kv_gib",
                          "source"), [
    # alexostapiuk11/coldstart-recon-worker @5e10909 fixtures/vllm_logs/startup_0.log / startup_1.log (RTX 4090,
    # 23.52 GiB): 4.92 GiB on the first start, 5.91 GiB on the restart that loaded the compiled graph; with the
    # graph term and the V1 runner's sampler the plan gave 4.76 and 5.20
    ("Qwen/Qwen3-8B", "0.27.1", "rtx-4090", 23.52, 0.92, 8192, False, 4.92, "coldstart run 0"),
    ("Qwen/Qwen3-8B", "0.27.1", "rtx-4090", 23.52, 0.92, 8192, True, 5.91, "coldstart run 1"),
    # floSa/data-analyst-agent @430a10c docs/VLLM.md (L4, vLLM 0.28.0, Qwen2.5-7B-Instruct-AWQ, len 32768):
    # 3.30 GiB at 0.45 and 6.60 GiB at 0.60 (beside an Ollama container, which the >= 0.9.1 worker does not
    # charge); with the graph term: 3.07 / 6.38
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", "0.28.0", "l4", None, 0.45, 32768, False, 3.30, "flosa 0.45"),
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", "0.28.0", "l4", None, 0.60, 32768, False, 6.60, "flosa 0.60"),
])
def test_model_runner_v2_starts_match_their_logs(model: str, version: str, gpu: str, total_gib: float | None,
                                                 util: float, max_len: int, warm: bool, logged_kv_gib: float,
                                                 source: str) -> None:
    plan = _plan(model, version, gpu, util, max_len, gpu_memory=int(total_gib * GIB) if total_gib else None,
                 compile_cache="warm" if warm else "cold")
    assert plan.memory.kv_cache_bytes / GIB == pytest.approx(logged_kv_gib, rel=0.03), source


def test_vllm_use_v2_model_runner_0_keeps_the_v1_runner() -> None:
    env = dict(ENV, VLLM_USE_V2_MODEL_RUNNER="0")
    plan = build_plan(PlanRequest(model="Qwen/Qwen3-8B", source="catalog", gpu="rtx-4090", vllm_version="0.27.1",
                                  max_model_len=8192), env)
    assert plan.memory.cudagraph_bytes > 0 and "Model Runner V2" not in plan.memory.notes["activation"]
