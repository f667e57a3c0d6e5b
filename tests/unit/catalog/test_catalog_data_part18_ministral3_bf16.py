"""Data checks for part 18: mistralai/Ministral-3-14B-Instruct-2512-BF16, the BF16 release the FP8 entry names as
its base model. Its config is the FP8 entry's without quantization_config (rebuilt, marked so); its weights are the
14B BF16 checkpoints' parameter count times two bytes. Checked against a public vLLM 0.27.1 start of this very repo
on an H200 (vinayakbaranwal12/context-length-inference-cost @9fd62363, run-A; collected-startup-logs-17.jsonl):
"Checkpoint size: 25.97 GiB", "Model loading took 26.05 GiB", 636,976 KV tokens from "Available KV cache memory:
97.2 GiB" at 160 KiB a token (40 layers x 8 KV heads x 128 x 2 x 2 B)."""

from __future__ import annotations

from tests.unit.catalog._catalog_checks import (
    GIB,
    assert_entry_basics,
    assert_weights_add_up,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog._catalog_checks import plan_catalog as _plan

BF16 = "mistralai/Ministral-3-14B-Instruct-2512-BF16"
FP8 = "mistralai/Ministral-3-14B-Instruct-2512"


def test_entry_is_the_fp8_entrys_config_in_bf16() -> None:
    entry, fp8 = _load(BF16), _load(FP8)
    assert_entry_basics(entry, BF16)
    assert_weights_add_up(entry)
    assert entry["variant"] == "bf16" and fp8["base_model"] == BF16
    assert "quantization_config" not in entry["config"]
    assert {k: v for k, v in fp8["config"].items() if k != "quantization_config"} == entry["config"]
    assert "RECONSTRUCTION" in entry["config_source"]
    # the FP8 entry's split adds up to the same 13,945,031,680 parameters
    assert sum(fp8["params_by_dtype"].values()) == entry["params_by_dtype"]["BF16"] == 13_945_031_680


def test_plan_matches_the_public_h200_start() -> None:
    plan = _plan(BF16, tp=1, gpu="h200", vllm_version="0.27.1", max_model_len=2048,
                 kv_cache_memory_bytes=int(97.2 * GIB))
    assert abs(plan.memory.weights_bytes / GIB - 26.05) < 0.05
    assert plan.kv_cache.tokens == int(97.2 * GIB) // (16 * 163_840) * 16
    assert abs(plan.kv_cache.tokens - 636_976) / 636_976 < 0.001
