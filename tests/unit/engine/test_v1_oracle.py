"""vLLM 0.8.0 - 0.10.1's V1 oracle beyond the platform: the features it falls back to V0 for, by release.

Each expectation is read from EngineArgs._is_v1_supported_oracle in the released wheels' engine/arg_utils.py
(0.8.0, 0.8.1, 0.8.2, 0.8.3, 0.8.4, 0.8.5, 0.9.0, 0.9.1, 0.9.2, 0.10.0, 0.10.1, 0.10.2; 0.11.0 has no V0),
fa_utils.flash_attn_supports_fp8 (FA3 and compute capability 9) and platforms/cuda.py is_kv_cache_dtype_supported
(0.10.x: also capability 10.0; 0.10.2: MLA backends, FlashInfer, Triton on 8.9+),
and model_executor/models/*.py (SupportsV0Only). _raise_or_fallback checks raise "VLLM_USE_V1=1 is not supported
with X." when VLLM_USE_V1=1 forces the engine; _warn_or_fallback checks let it run V1. Two public 0.8.2 logs print
the V0 engine for these features: a GGUF Llama-3.2-3B (collected-startup-logs-21) and a Qwen2.5-VL-7B with a LoRA
adapter from LLaMA-Factory (public-startup-logs: "Initializing a V0 LLM engine (v0.8.2)") - on an Ampere GPU, at
TP without PP, where nothing else makes 0.8.2 fall back.
"""

from __future__ import annotations

import pytest

from vllmkit.engine.versions import EngineAsks, rules_for, v1_oracle
from vllmkit.errors import UsageError
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
A100, H100, B200, RTX5090, L40S = 8.0, 9.0, 10.0, 12.0, 8.9


@pytest.mark.parametrize(("version", "cc", "kv", "v1"), [
    ("0.8.0", H100, "fp8", False),     # 0.8.0 / 0.8.1: any KV dtype other than auto falls back
    ("0.8.1", H100, "fp8_e4m3", False),
    ("0.8.2", H100, "fp8", True),      # from 0.8.2 FA3 takes FP8 KV on Hopper
    ("0.8.2", A100, "fp8", False),     # FA2 on Ampere: no FP8 KV in V1 until 0.10.2
    ("0.9.2", L40S, "fp8", False),
    ("0.9.2", B200, "fp8", False),     # 0.9.x: FA3 is not used on Blackwell ("defaulting to FA version 2")
    ("0.10.0", B200, "fp8", True),     # 0.10.x: is_device_capability(100)
    ("0.10.1", RTX5090, "fp8", False),  # capability 12.0 is neither 9.x nor 10.0
    ("0.10.2", A100, "fp8", False),    # 0.10.2 keeps the check: FA2 on Ampere takes no FP8 KV
    ("0.10.2", H100, "fp8", True),
    ("0.10.2", B200, "fp8", True),
    ("0.11.0", A100, "fp8", True),     # no V0 to fall back to
    ("0.9.2", H100, "auto", True),
])
def test_kv_cache_dtype(version: str, cc: float, kv: str, v1: bool) -> None:
    verdict = v1_oracle(rules_for(version), {}, vendor="nvidia", compute_capability=cc,
                        asks=EngineAsks(kv_cache_dtype=kv))
    assert verdict.v1 is v1
    assert verdict.fallback == (None if v1 else "--kv-cache-dtype")


def test_kv_cache_dtype_on_hopper_needs_flash_attention_3() -> None:
    rules = rules_for("0.9.2")
    asks = EngineAsks(kv_cache_dtype="fp8")
    # will_use_fa: no VLLM_ATTENTION_BACKEND, or FLASH_ATTN_VLLM_V1; FA3 unless VLLM_FLASH_ATTN_VERSION=2
    assert v1_oracle(rules, {"VLLM_ATTENTION_BACKEND": "FLASH_ATTN_VLLM_V1"}, vendor="nvidia",
                     compute_capability=H100, asks=asks).v1
    assert not v1_oracle(rules, {"VLLM_ATTENTION_BACKEND": "FLASHINFER"}, vendor="nvidia",
                         compute_capability=H100, asks=asks).v1
    assert not v1_oracle(rules, {"VLLM_FLASH_ATTN_VERSION": "2"}, vendor="nvidia", compute_capability=H100,
                         asks=asks).v1
    # ROCm takes any KV dtype from 0.9.0 ("if current_platform.is_rocm(): supported = True")
    assert v1_oracle(rules, {}, vendor="amd", asks=asks).v1
    # 0.10.2: MLA models default to FlashMLA / CUTLASS MLA, which take FP8; other models may name FlashInfer, or
    # the Triton backend on capability 8.9+
    r102 = rules_for("0.10.2")
    assert v1_oracle(r102, {}, vendor="nvidia", compute_capability=A100, asks=EngineAsks(kv_cache_dtype="fp8", mla=True)).v1
    assert not v1_oracle(r102, {"VLLM_ATTENTION_BACKEND": "TRITON_MLA"}, vendor="nvidia", compute_capability=A100,
                         asks=EngineAsks(kv_cache_dtype="fp8", mla=True)).v1
    assert v1_oracle(r102, {"VLLM_ATTENTION_BACKEND": "FLASHINFER"}, vendor="nvidia", compute_capability=A100,
                     asks=asks).v1
    assert v1_oracle(r102, {"VLLM_ATTENTION_BACKEND": "TRITON_ATTN_VLLM_V1"}, vendor="nvidia",
                     compute_capability=L40S, asks=asks).v1
    assert not v1_oracle(r102, {"VLLM_ATTENTION_BACKEND": "TRITON_ATTN_VLLM_V1"}, vendor="nvidia",
                         compute_capability=A100, asks=asks).v1


@pytest.mark.parametrize(("version", "asks", "fallback"), [
    # V1_UNSUPPORTED_QUANT = ["bitsandbytes", "gguf"] in 0.8.0 - 0.8.2, ["gguf"] in 0.8.3 - 0.8.5, gone in 0.9.0
    ("0.8.2", EngineAsks(quantization="gguf"), "--quantization gguf"),
    ("0.8.5", EngineAsks(quantization="gguf"), "--quantization gguf"),
    ("0.9.0", EngineAsks(quantization="gguf"), None),
    ("0.8.2", EngineAsks(quantization="bitsandbytes"), "--quantization bitsandbytes"),
    ("0.8.3", EngineAsks(quantization="bitsandbytes"), None),
    # V1_SUPPORTED_DTYPES = [bfloat16, float16] to 0.9.1
    ("0.9.1", EngineAsks(float32=True), "--dtype torch.float32"),
    ("0.9.2", EngineAsks(float32=True), None),
    # --cpu-offload-gb to 0.8.2
    ("0.8.2", EngineAsks(cpu_offload=True), "--cpu-offload-gb"),
    ("0.8.3", EngineAsks(cpu_offload=True), None),
    # "LoRA is supported on V1, but off by default for now" to 0.8.2
    ("0.8.2", EngineAsks(lora=True), "LORA"),
    ("0.8.3", EngineAsks(lora=True), None),
    # speculative decoding: 0.8.2 only ngram (experimental), 0.8.5 also eagle / eagle3, 0.9.x also deepseek_mtp
    ("0.8.2", EngineAsks(speculative_model="[ngram]"), "ngram"),
    ("0.8.2", EngineAsks(speculative_model="yuhuili/EAGLE-LLaMA3-Instruct-8B"), "Speculative Decoding"),
    ("0.8.4", EngineAsks(speculative_method="eagle"), "Eagle"),
    ("0.8.4", EngineAsks(speculative_method="eagle3"), "Speculative Decoding"),
    ("0.8.5", EngineAsks(speculative_method="eagle3"), "Eagle"),
    ("0.8.5", EngineAsks(speculative_method="deepseek_mtp"), "Speculative Decoding"),
    ("0.9.0", EngineAsks(speculative_method="deepseek_mtp"), None),
    ("0.9.0", EngineAsks(speculative_method="ngram"), None),
    ("0.9.2", EngineAsks(speculative_model="Qwen/Qwen2.5-0.5B-Instruct"), "Speculative Decoding"),
    # mamba / hybrid: SupportsV0Only to 0.9.1 (and Jamba to 0.10.0); from 0.9.2 HasInnerState falls back by default
    ("0.9.1", EngineAsks(state_layers=True, architecture="GraniteMoeHybridForCausalLM"),
     "['GraniteMoeHybridForCausalLM']"),
    ("0.9.2", EngineAsks(state_layers=True, architecture="GraniteMoeHybridForCausalLM"), "Mamba"),
    ("0.10.0", EngineAsks(state_layers=True, architecture="JambaForCausalLM"), "['JambaForCausalLM']"),
    ("0.10.1", EngineAsks(state_layers=True, architecture="JambaForCausalLM"), "Mamba"),
    ("0.10.1", EngineAsks(state_layers=True, architecture="NemotronHForCausalLM"), "Mamba"),
    ("0.10.2", EngineAsks(state_layers=True, architecture="NemotronHForCausalLM"), None),
])
def test_features_the_oracle_falls_back_for(version: str, asks: EngineAsks, fallback: str | None) -> None:
    verdict = v1_oracle(rules_for(version), {}, vendor="nvidia", compute_capability=A100, asks=asks)
    assert verdict.fallback == fallback
    assert verdict.v1 is (fallback is None)


@pytest.mark.parametrize(("version", "asks", "runs_v1"), [
    ("0.8.2", EngineAsks(lora=True), True),                       # _warn_or_fallback: V1 with a warning
    ("0.9.2", EngineAsks(state_layers=True, architecture="NemotronHForCausalLM"), True),
    ("0.8.2", EngineAsks(quantization="gguf"), False),            # _raise_or_fallback: NotImplementedError
    ("0.9.1", EngineAsks(float32=True), False),
])
def test_vllm_use_v1_forces_experimental_features_and_refuses_unsupported(version, asks, runs_v1) -> None:
    verdict = v1_oracle(rules_for(version), {"VLLM_USE_V1": "1"}, vendor="nvidia", compute_capability=A100,
                        asks=asks)
    assert verdict.v1 is runs_v1
    assert (verdict.refused or "").startswith("" if runs_v1 else "VLLM_USE_V1=1 is not supported with ")
    assert (verdict.refused is None) is runs_v1


def test_a_draft_model_is_refused_on_0_10() -> None:
    # 0.10.x: `raise NotImplementedError("Speculative decoding with draft model is not supported yet. ...")`
    verdict = v1_oracle(rules_for("0.10.1"), {}, vendor="nvidia", compute_capability=H100,
                        asks=EngineAsks(speculative_method="draft_model"))
    assert not verdict.v1 and verdict.refused and "draft model" in verdict.refused


def test_the_plan_names_the_fallback_and_plans_the_old_engine() -> None:
    # the LLaMA-Factory row: Qwen2.5-VL-7B with LoRA at TP 4 on A800s, 0.8.2: "Initializing a V0 LLM engine"
    req = PlanRequest(model="Qwen/Qwen2.5-VL-7B-Instruct", source="catalog", gpu="a800-80gb-sxm", vllm_version="0.8.2",
                      tensor_parallel_size=4, max_model_len=3072, enable_lora=True)
    plan = build_plan(req, ENV)
    assert plan.settings.engine == "v0"
    assert plan.settings.engine_fallback == "LORA"
    # the same without LoRA stays on V1, with no fallback named
    plain = build_plan(req.model_copy(update={"enable_lora": False}), ENV)
    assert (plain.settings.engine, plain.settings.engine_fallback) == ("v1", None)


def test_forcing_v1_past_an_unsupported_feature_is_a_usage_error() -> None:
    req = PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", source="catalog", gpu="a100-80gb-sxm",
                      vllm_version="0.9.2", kv_cache_dtype="fp8", max_model_len=8192)
    assert build_plan(req, ENV).settings.engine_fallback == "--kv-cache-dtype"
    with pytest.raises(UsageError, match="VLLM_USE_V1=1 is not supported with --kv-cache-dtype"):
        build_plan(req, {**ENV, "VLLM_USE_V1": "1"})
