"""Round 36: the NVIDIA RTX 5000 Ada Generation profile (profiles/gpus/nvidia.yaml, `rtx-5000-ada`).

Its total is derived (no public torch line with two decimals was found): below nvidia-smi's 32760 MiB, rounding to
the public torch reading "31.6 GB", and set so that kyuz0's vLLM 0.12 start of Llama-3.1-8B on the card
(collected-bench-results-28.jsonl, weights 14.9889 + KV 14.46 GiB at 0.95) leaves what the same command leaves on
an RTX 4090. The check that can fail is another start on the same card, not used to set it: gpt-oss-20b at 0.95,
max_model_len 32768, 64 sequences printed "Available KV cache memory: 15.51 GiB" and "GPU KV cache size: 338,832
tokens" (benchmark_results_nvidia-ada5000/openai_gpt-oss-20b_tp1_server.log, kyuz0/amd-r9700-vllm-toolboxes).
That toolbox reran its servers with a warm torch.compile cache: its RTX 4090 / 3090 / 5090 / A100 Llama starts
printed 6.93 / 6.95 / 14.31 / 21.99 GiB, which the planner gives with --compile-cache warm.
"""

from __future__ import annotations

import json

import pytest
from tests.clirun import invoke

from vllmkit.hardware.profiles import load_profiles, resolve_gpu
from vllmkit.plan.performance import gpu_family

MIB = 2**20
GIB = 2**30


@pytest.fixture(scope="module")
def profile():  # type: ignore[no-untyped-def]
    return {p.name: p for p in load_profiles(include_user_config=False)}["rtx-5000-ada"]


def test_total_sits_between_the_public_readings(profile) -> None:  # type: ignore[no-untyped-def]
    total = profile.memory_bytes
    assert total < 32760 * MIB  # nvidia-smi's figure: the driver keeps some back from torch
    assert f"{total / GIB:.1f}" == "31.6"  # torch "NVIDIA RTX 5000 Ada Generation (31.6 GB)"
    assert profile.memory_source_tag == "derived"


def test_datasheet_figures(profile) -> None:  # type: ignore[no-untyped-def]
    # 256-bit GDDR6 at 18 Gbps per pin
    assert profile.memory_bandwidth_gbps == 256 * 18 / 8
    # the datasheet's 1044.4 TFLOPS is FP8 with 2:4 sparsity; dense is half, BF16 half again
    assert profile.tflops_fp8 == pytest.approx(1044.4 / 2)
    assert profile.tflops_bf16 == pytest.approx(1044.4 / 4)
    assert profile.compute_capability == "8.9" and gpu_family(profile.architecture) == "ada"
    assert resolve_gpu("NVIDIA RTX 5000 Ada Generation").name == "rtx-5000-ada"


def test_a_start_not_used_to_set_the_total() -> None:
    r = invoke(["plan", "openai/gpt-oss-20b", "--gpu", "rtx-5000-ada", "--source", "catalog", "--vllm-version",
                "0.12.0", "--gpu-memory-utilization", "0.95", "--max-model-len", "32768", "--max-num-seqs", "64",
                "--compile-cache", "warm", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)["data"]
    assert data["memory"]["kv_cache_bytes"] / GIB == pytest.approx(15.51, rel=0.01)
    assert data["kv_cache"]["tokens"] == pytest.approx(338_832, rel=0.01)
