"""Nemotron-3-Nano-30B-A3B's hybrid KV pool on vLLM 0.13, checked against a public log.

vllm#33333 (collected-startup-logs-21, row `vllm33333-rtx5080-rtx5070ti-wsl2-...`): the NVFP4 checkpoint at TP 2 on an
RTX 5080 + RTX 5070 Ti under WSL2, `--kv-cache-dtype fp8 --max-model-len 131072 --max-num-seqs 8`, prints on rank 0
"Available KV cache memory: 4.02 GiB", "GPU KV cache size: 183,744 tokens" and "Maximum concurrency for 131,072
tokens per request: 6.17x". The replay from rank 0's 4.02 GiB gives 559,584 tokens (673 blocks): vLLM gives every
TP worker the smallest worker's block count (0.13 v1/core/kv_cache_utils.py get_kv_cache_configs, step 4), and the
two printed figures are one count of blocks, 222, that the other card's memory (the Windows desktop's, under WSL2)
allowed. Worked by hand from vLLM 0.13 (model_executor/models/config.py HybridAttentionMambaModelConfig without
prefix caching, the pre-0.26 default for hybrids; kv_cache_utils.py _report_kv_cache_config and
get_max_concurrency_for_kv_cache_config):
- mamba page per layer and rank: SSM state 32 heads x 64 x 128 x 4 B (float32, the config's mamba_ssm_cache_dtype)
  = 1,048,576 B + conv state 3,072 channels x 3 x 2 B = 18,432 B -> 1,067,008 B;
- attention, 1 KV head per rank x 128 x 2 (K, V) x 1 B (fp8) = 256 B a token, so the block is
  16 x ceil(1,067,008 / (16 x 256)) = 4,176 tokens and the page 4,176 x 256 = 1,069,056 B;
- 6 attention and 23 (+1 padding) mamba layers make 5 groups of 6 layers: 6 tensors of `num_blocks` pages;
- tokens = num_blocks // 5 x 4,176 = 44 x 4,176 = 183,744 for 222 blocks; a 131,072-token request takes
  ceil(131,072 / 4,176) = 32 attention blocks + 4 mamba blocks, 222 / 36 = 6.17x.
"""

from __future__ import annotations

from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
PAGE = 4176 * 256


def plan_with_blocks(blocks: int):  # type: ignore[no-untyped-def]
    req = PlanRequest(model="nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", source="catalog", gpu="rtx-5080",
                      tensor_parallel_size=2, kv_cache_dtype="fp8", max_model_len=131072, max_num_seqs=8,
                      vllm_version="0.13.0", kv_cache_memory_bytes=blocks * 6 * PAGE, trust_remote_code=True)
    return build_plan(req, ENV).kv_cache


def test_the_logged_pool_is_222_blocks_of_4176_tokens() -> None:
    kv = plan_with_blocks(222)
    assert kv.block_size == 4176
    assert kv.num_blocks == 222
    assert kv.tokens == 183_744  # the log's "GPU KV cache size"
    assert f"{kv.max_concurrency:.2f}" == "6.17"  # the log's "Maximum concurrency ... 6.17x"


def test_rank_zeros_budget_would_have_held_three_times_as_many() -> None:
    # what rank 0's own 4.02 GiB holds: 673 blocks -> 134 x 4,176 tokens; the log's pool is the other rank's
    kv = plan_with_blocks(673)
    assert kv.tokens == 134 * 4176
    assert kv.tokens > 3 * 183_744
