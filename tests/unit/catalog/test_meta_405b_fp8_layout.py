"""meta-llama/Llama-3.1-405B-Instruct-FP8: Meta's FBGEMM FP8 checkpoint quantizes only the feed-forward weights of the
inner 124 of its 126 decoder layers (meta-llama/llama-models models/llama3/quantization/loader.py: layer 0 and the
last layer skipped, block.feed_forward w1 / w2 / w3 only; one float32 scale per output row, quantize_impls.py
quantize_fp8_per_row). Round 36 rebuilt the entry from that layout; before, it had every linear layer in FP8.

The figures the entry is checked against are not our arithmetic: an AWS blog's "454 GB across 109 safetensor
shards" and "1509 individual tensors" for this checkpoint (search-index id 61846556686), and vllm#6746's vLLM 0.5.3
log, "Loading model weights took 57.7520 GB" (GiB) on each of 8 ranks (collected-startup-logs-36)."""

from __future__ import annotations

import pytest
from tests.unit.catalog._catalog_checks import assert_weights_add_up, load_entry

from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

GIB = 1 << 30
H, INTER, LAYERS, VOCAB, KV = 16384, 53248, 126, 128256, 1024


def test_layout_by_hand_matches_the_published_size_and_tensor_count() -> None:
    fp8 = (LAYERS - 2) * 3 * H * INTER  # gate, up, down of layers 1-124
    scales = (LAYERS - 2) * (INTER + INTER + H)  # one float32 per output row of each FP8 weight
    attention = LAYERS * (2 * H * H + 2 * H * KV)  # q, o and k, v in BF16 everywhere
    bf16 = attention + 2 * 3 * H * INTER + 2 * VOCAB * H + LAYERS * 2 * H + H
    total = fp8 + 4 * scales + 2 * bf16
    entry = load_entry("meta-llama/Llama-3.1-405B-Instruct-FP8")
    assert_weights_add_up(entry)
    assert entry["weights_bytes"] == total == 487_229_259_776
    assert entry["params_by_dtype"] == {"F8_E4M3": fp8, "F32": scales, "BF16": bf16}
    assert round(total / GIB) == 454  # "454 GB" (the blog's GB are GiB: 487.2e9 B is 453.8 GiB)
    # tensors: 7 linears + 3 scales + 2 norms in each FP8 layer, 7 + 2 in the two BF16 ones, embed, lm_head, norm
    assert (LAYERS - 2) * 12 + 2 * 9 + 3 == 1509
    names = entry["config"]["quantization_config"]["modules_to_not_convert"]
    assert "model.layers.64.self_attn.q_proj" in names and "model.layers.125.mlp.down_proj" in names
    assert "model.layers.64.mlp.down_proj" not in names and len(names) == LAYERS * 4 + 6 + 1


def test_a_rank_at_tp8_loads_what_vllm_logged() -> None:
    plan = build_plan(PlanRequest(model="meta-llama/Llama-3.1-405B-Instruct-FP8", source="catalog", gpu="h100-sxm",
                                  tensor_parallel_size=8, vllm_version="0.5.3", max_model_len=8192),
                      {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"})
    # 57.752 GiB logged; the all-FP8 layout gave 47.8 GiB. The remaining 1.7 % is not explained (vocab padding
    # and the scales are below 0.1 GiB a rank)
    assert plan.memory.weights_bytes / GIB == pytest.approx(57.752, rel=0.02)
