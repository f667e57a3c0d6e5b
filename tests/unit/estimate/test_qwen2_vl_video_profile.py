"""Qwen2-VL / Qwen2.5-VL: vLLM profiles the vision tower on one video item when a video holds more tokens than
the largest image (vllm qwen2_vl.py get_max_video_tokens, read in the 0.14, 0.19 and 0.32 wheels).

The public check is a vLLM 0.23.0 start of Qwen2.5-VL-7B-Instruct on an A100-SXM4-80GB at utilization 0.22 and
the default max_model_len 128,000 (benchmarks/data/collected-startup-logs-14.jsonl, id wcsdgpu-...): "Encoder
cache will be initialized with a budget of 114688 tokens, and profiled with 1 video items of the maximum feature
size", then "Available KV cache memory: -14.28 GiB" and "No available memory for the cache blocks". Before this
rule the plan profiled one 16,384-token image and left 6.7 GiB of KV cache: a start it called good.
"""

from __future__ import annotations

import pytest

from vllmkit.arch.model import VisionFacts
from vllmkit.estimate.multimodal import encoder_profile, qwen2_vl_video_tokens
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
GIB = 1 << 30

# Qwen2.5-VL's vision tower as the reader builds it: the processor's default max_pixels 12,845,056 over
# (patch 14 x merge 2)^2 = 784 pixels a token -> 16,384 tokens for the largest image; temporal patch 2
VISION = VisionFacts(family="qwen2_vl", depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16,
                     patch_size=14, temporal_patch_size=2, out_hidden_size=3584, max_tokens_per_item=16384,
                     patches_per_token=4)


@pytest.mark.parametrize(
    ("max_model_len", "tokens"),
    [
        # 14 frames (the cap) pad to 14 -> 7 groups of 2 frames x 16,384 = 114,688 <= 128,000 (the log's budget);
        # 15 frames would pad to 16 -> 8 groups = 131,072 > 128,000
        (128_000, 114_688),
        (131_072, 114_688),  # room for 8 groups, but 14 frames is the most a dummy video gets
        (40_000, 32_768),  # 4 frames -> 2 groups = 32,768; 5 frames -> 3 groups = 49,152 > 40,000
        (8_192, 16_384),  # not even one group fits: one frame, padded to 2 -> one group (the image's size)
    ],
)
def test_the_largest_video_item(max_model_len: int, tokens: int) -> None:
    assert qwen2_vl_video_tokens(VISION, max_model_len) == tokens


@pytest.mark.parametrize(
    ("max_model_len", "tokens"),
    [
        # vLLM 0.8.5 - 0.10.1: at most 16 frames, fitted into max_model_len less one largest image (16,384)
        (131_072, 114_688),  # 114,688 left: 14 frames (7 groups) fit, 15-16 frames (8 groups) do not
        (200_000, 131_072),  # 16 frames (the old cap) -> 8 groups
        (40_000, 16_384),  # 23,616 left: 2 frames (one group); 3 frames need 32,768
    ],
)
def test_the_largest_video_item_before_0_11(max_model_len: int, tokens: int) -> None:
    assert qwen2_vl_video_tokens(VISION, max_model_len, max_frames=16, after_image=True) == tokens


def test_the_version_rules() -> None:
    from vllmkit.engine.versions import rules_for

    old, new = rules_for("0.10.1"), rules_for("0.11.0")
    assert (old.qwen2_vl_video_max_frames, old.qwen2_vl_video_after_image) == (16, True)
    assert (new.qwen2_vl_video_max_frames, new.qwen2_vl_video_after_image) == (14, False)


def test_a_video_item_sets_the_budget_and_the_patches() -> None:
    p = encoder_profile(VISION, max_num_batched_tokens=2048, max_num_seqs=256, max_model_len=128_000,
                        video_tokens_per_item=114_688)
    # budget = max(max_num_batched_tokens, tokens per item); one item fits it; 4 patches per token
    assert (p.budget_tokens, p.items, p.tokens_per_item, p.patches) == (114_688, 1, 114_688, 458_752)


def _plan(**kw):
    req = dict(model="Qwen/Qwen2.5-VL-7B-Instruct", source="catalog", gpu="a100-80gb-sxm", gpu_memory=int(79.15 * GIB),
               vllm_version="0.23.0", tensor_parallel_size=1, gpu_memory_utilization=0.22)
    req.update(kw)
    return build_plan(PlanRequest(**req), ENV)


def test_the_public_a100_start_is_called_a_failure() -> None:
    plan = _plan()
    assert not plan.fits
    enc = plan.memory.encoder_bytes
    # the log leaves 17.41 - 15.67 - 0.53 + 14.28 = 15.49 GiB for non-torch + the profile peak; the ViT term is
    # most of it (per patch 2 x (9 x 1280 + 3 x 2 x 14 x 14 + 1280) B = 27,952 B over 458,752 patches = 11.9 GiB)
    assert 10 * GIB < enc < 15.5 * GIB
    assert plan.memory.kv_cache_bytes < -8 * GIB  # the log: -14.28 GiB


def test_no_video_item_when_videos_are_off_or_the_engine_is_v0() -> None:
    on = _plan().memory.encoder_bytes
    off = _plan(limit_mm_per_prompt={"video": 0}).memory.encoder_bytes
    lm_only = _plan(language_model_only=True).memory.encoder_bytes
    assert off < 2 * GIB < on  # back to one 16,384-token image
    assert lm_only == 0
    # the V0 engine (0.7.3) profiles its own dummy data, which this rule does not touch
    assert _plan(vllm_version="0.7.3").memory.encoder_bytes == _plan(vllm_version="0.7.3",
                                                                     limit_mm_per_prompt={"video": 0}).memory.encoder_bytes
