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
