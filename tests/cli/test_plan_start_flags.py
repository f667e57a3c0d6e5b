"""`--gpu-memory-in-use` and `--flashinfer/--no-flashinfer` reach the planner (the rules themselves are
worked by hand in tests/unit/plan/test_start_verdicts.py)."""

from __future__ import annotations

import json

from tests.clirun import invoke

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}


def _plan(*args: str):
    result = invoke(["plan", *args, "--source", "catalog", "--json"], env=ENV)
    return result, json.loads(result.stdout)


def test_memory_in_use_makes_vllm_0_9_1_refuse() -> None:
    # vllm#20305: 47.38 GiB card, 15.94 GiB held by others, util 0.95 asks for 45.01 GiB
    common = ("Qwen/Qwen3-8B", "--gpu", "l40s", "--gpu-memory", "47.38GiB", "--vllm-version", "0.9.1",
              "--gpu-memory-utilization", "0.95", "--max-model-len", "8192", "-tp", "1")
    busy, doc = _plan(*common, "--gpu-memory-in-use", "15.94GiB")
    assert busy.exit_code == 3 and doc["data"]["fits"] is False
    assert "31.44/47.38" in doc["data"]["startup_refusal"]
    free, doc = _plan(*common)
    assert free.exit_code == 0 and doc["data"]["startup_refusal"] is None
    bad = invoke(["plan", *common, "--gpu-memory-in-use", "lots", "--json"], env=ENV)
    assert bad.exit_code == 2 and "--gpu-memory-in-use" in json.loads(bad.stdout)["errors"][0]["message"]


def test_flashinfer_switch_changes_the_sampler_peak_on_0_11_0() -> None:
    common = ("openai/gpt-oss-120b", "--gpu", "h100-sxm", "--vllm-version", "0.11.0", "-tp", "1",
              "--gpu-memory-utilization", "0.95", "--max-num-batched-tokens", "1024", "--max-model-len", "131072")
    _, sort = _plan(*common, "--no-flashinfer")
    _, fi = _plan(*common, "--flashinfer")
    # 1024 rows x 201088 vocab: 38 B per element when sorting, 6 B with FlashInfer's sampler
    assert sort["data"]["memory"]["activation_bytes"] == 1024 * 201088 * 38
    assert fi["data"]["memory"]["activation_bytes"] == 1024 * 201088 * 6


def test_compile_cache_warm_plans_a_restart_and_a_bad_value_is_refused() -> None:
    # round 24 (estimate/memory.py COMPILE_SHARE): a restart that loads vLLM's compile cache holds none of the
    # compile's memory in its profile; a first start (the default) does, and the note says how much
    base = ("Qwen/Qwen3-8B", "--gpu", "rtx-4090", "--source", "catalog", "--vllm-version", "0.27.1",
            "--max-model-len", "8192", "--json")
    cold_doc = json.loads(invoke(["plan", *base], env=ENV).stdout)["data"]
    warm_doc = json.loads(invoke(["plan", *base, "--compile-cache", "warm"], env=ENV).stdout)["data"]
    cold, warm = cold_doc["memory"], warm_doc["memory"]
    # the assumptions are in the JSON: 0.27.1 runs a dense Qwen3 on Model Runner V2 (engine/versions.py)
    assert (cold_doc["settings"]["compile_cache"], warm_doc["settings"]["compile_cache"]) == ("cold", "warm")
    assert cold_doc["settings"]["model_runner"] == "v2"
    assert "a restart with vLLM's compile cache does not hold" in cold["notes"]["non_torch"]
    # what is left of the constant without the compile: 256 MiB beside the sampler + 128 MiB from 0.18 on
    assert warm["non_torch_bytes"] == (256 + 128) << 20 and warm["kv_cache_bytes"] > cold["kv_cache_bytes"]
    assert warm["kv_cache_bytes"] - cold["kv_cache_bytes"] == cold["non_torch_bytes"] - warm["non_torch_bytes"]
    bad = invoke(["plan", *base[:-1], "--compile-cache", "hot"], env=ENV)
    assert bad.exit_code == 2 and "unknown --compile-cache 'hot'" in bad.stderr and "Traceback" not in bad.output


def test_the_v1_oracle_fallback_is_named_and_forcing_v1_past_it_is_a_usage_error() -> None:
    # vLLM 0.9.2 on an A100 with an FP8 KV cache: FlashAttention 2 takes no FP8, so EngineArgs' V1 oracle falls back
    # to V0 ("--kv-cache-dtype is not supported by the V1 Engine. Falling back to V0"); with VLLM_USE_V1=1 it raises
    common = ["plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "a100-80gb-sxm", "--vllm-version", "0.9.2",
              "--kv-cache-dtype", "fp8", "--max-model-len", "8192", "--source", "catalog"]
    result = invoke([*common, "--json"], env=ENV)
    doc = json.loads(result.stdout)
    assert result.exit_code == 0
    assert (doc["data"]["settings"]["engine"], doc["data"]["settings"]["engine_fallback"]) == ("v0", "--kv-cache-dtype")
    assert any("falls back to its old V0 engine for --kv-cache-dtype" in w for w in doc["data"]["warnings"])
    forced = invoke([*common, "--json"], env={**ENV, "VLLM_USE_V1": "1"})
    err = json.loads(forced.stdout)
    assert forced.exit_code == 2 and err["status"] == "error"
    assert "VLLM_USE_V1=1 is not supported with --kv-cache-dtype" in err["errors"][0]["message"]
    text = invoke(common, env={**ENV, "VLLM_USE_V1": "1"})
    assert text.exit_code == 2 and "Traceback" not in text.stdout + text.stderr
    # on Hopper FA3 takes FP8: V1, no fallback named
    hopper = json.loads(invoke([*common[:3], "h100", *common[4:], "--json"], env=ENV).stdout)["data"]["settings"]
    assert (hopper["engine"], hopper["engine_fallback"]) == ("v1", None)


def test_mamba_ssm_cache_dtype_sizes_the_state_and_reaches_the_serve_line() -> None:
    # NVIDIA-Nemotron-Nano-9B-v2 on 0.12.0 keeps its SSM state in bf16 ("auto"); --mamba-ssm-cache-dtype float32
    # doubles it: 1,310,720 SSM values x 4 B + 36,864 conv values x 2 B = 5,316,608 B a mamba page, padded up to
    # the attention block (tests/unit/plan/test_v0_hybrid_state.py works the bf16 page: 2,695,168 B)
    common = ["plan", "nvidia/NVIDIA-Nemotron-Nano-9B-v2", "--gpu", "h100", "--vllm-version", "0.12.0",
              "--max-model-len", "8192", "--source", "catalog"]
    doc = json.loads(invoke([*common, "--mamba-ssm-cache-dtype", "float32", "--json"], env=ENV).stdout)["data"]
    pages = {g["page_bytes"] for g in doc["kv_cache"]["groups"] if g["kind"] == "mamba"}
    assert len(pages) == 1 and 5_316_608 <= pages.pop() < 5_316_608 * 1.05
    assert doc["serve_command"][-2:] == ["--mamba-ssm-cache-dtype", "float32"]
    bad = invoke([*common, "--mamba-ssm-cache-dtype", "fp8", "--json"], env=ENV)
    assert bad.exit_code == 2 and "--mamba-ssm-cache-dtype" in json.loads(bad.stdout)["errors"][0]["message"]
    # the flag is new in 0.10.1 (engine/arg_utils.py); an older release would refuse it
    old = invoke([*common[:5], "0.10.0", *common[6:], "--mamba-ssm-cache-dtype", "float32", "--json"], env=ENV)
    assert old.exit_code == 2 and "0.10.1" in json.loads(old.stdout)["errors"][0]["message"]


def test_vllm_0_34_plans_the_extensible_cache_and_refuses_the_removed_runner() -> None:
    common = ["plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100", "--vllm-version", "0.34.0",
              "--max-model-len", "8192", "--source", "catalog", "--json"]
    doc = json.loads(invoke(common, env=ENV).stdout)["data"]
    assert doc["settings"]["extensible_kv_cache"] and doc["settings"]["gpu_memory_utilization"] == 1.0
    assert doc["memory"]["headroom_bytes"] > 0 and "--gpu-memory-utilization" not in doc["serve_command"]
    off = json.loads(invoke([*common, "--no-enable-extensible-kv-cache"], env=ENV).stdout)["data"]
    assert not off["settings"]["extensible_kv_cache"] and off["settings"]["gpu_memory_utilization"] == 0.92
    assert "--no-enable-extensible-kv-cache" in off["serve_command"]
    # vLLM 0.34 has no Model Runner V1: VLLM_USE_V2_MODEL_RUNNER=0 is a usage error (exit 2), one JSON envelope
    refused = invoke(common, env={**ENV, "VLLM_USE_V2_MODEL_RUNNER": "0"})
    err = json.loads(refused.stdout)
    assert refused.exit_code == 2 and err["status"] == "error"
    assert "Model Runner V1 has been removed" in err["errors"][0]["message"]
    text = invoke(common[:-1], env={**ENV, "VLLM_USE_V2_MODEL_RUNNER": "0"})
    assert text.exit_code == 2 and "Traceback" not in text.stdout + text.stderr
