"""The old engine's profile batch for a multimodal model (vLLM 0.8.4 worker/model_runner.py profile_run,
multimodal/profiling.py get_decoder_dummy_data, config.py get_default_limit_per_prompt: 1 on V0). Hand-worked
from those lines; the plan case is gpustack#1800's start (benchmarks/data/collected-startup-logs-37.jsonl)."""

from __future__ import annotations

import json

from tests.clirun import invoke
from vllmkit.estimate.multimodal import v0_multimodal_profile


def test_a_prompt_longer_than_the_batch_is_kept_whole() -> None:
    # max_mm_tokens 32,768 (a 16,384-token image + a one-frame 16,384-token video) > 8,192 batched tokens:
    # max_num_seqs = max(1, min(256, 8192 // 32768 = 0)) = 1; seq_len 8,192, but the dummy prompt keeps its 32,768
    p = v0_multimodal_profile(max_num_batched_tokens=8192, max_num_seqs=256, image_tokens=16384, video_tokens=16384)
    assert (p.sequences, p.tokens, p.mm_tokens) == (1, 32768, 32768)


def test_prompts_that_fit_share_the_batch() -> None:
    # 32,768 batched tokens, 1,280-token images: min(256, 32768 // 1280 = 25) = 25 sequences of 1,310 / 1,311
    # tokens (the forward still sees 25 x 1,310 = 32,750 in this sum: V0 spreads the remainder, which the
    # estimate leaves out), each sampling one row
    p = v0_multimodal_profile(max_num_batched_tokens=32768, max_num_seqs=256, image_tokens=1280, video_tokens=0)
    assert (p.sequences, p.tokens) == (25, 25 * 1310)
    # no multimodal tokens (a text-only limit): the plain batch
    p = v0_multimodal_profile(max_num_batched_tokens=8192, max_num_seqs=256, image_tokens=0, video_tokens=0)
    assert (p.sequences, p.tokens) == (256, 8192)


def test_plan_of_a_v0_qwen25_vl_start_profiles_the_long_prompt() -> None:
    # gpustack#1800: Qwen2.5-VL-7B on an RTX 3090, vLLM 0.8.4 with VLLM_USE_V1=0, --max-model-len 8192: its KV cache
    # held 2,400 tokens (0.13 GiB). The V0 profile runs the 32,768-token dummy prompt and samples one sequence
    r = invoke(["plan", "Qwen/Qwen2.5-VL-7B-Instruct", "--gpu", "rtx-3090", "--max-model-len", "8192",
                "--vllm-version", "0.8.4", "--json"], env={"HF_HUB_OFFLINE": "1", "VLLM_USE_V1": "0"})
    data = json.loads(r.stdout)["data"]
    mem = data["memory"]
    assert data["settings"]["engine"] == "v0"
    assert "32768 batched tokens" in mem["notes"]["activation"] and "over 1 sequences" in mem["notes"]["activation"]
    # what it leaves for the KV cache: 1.24 GiB planned (2.92 GiB before this rule, 0.13 GiB logged)
    assert mem["kv_cache_bytes"] < 1.5 * 2**30


def test_before_083_an_overlong_prompt_is_profiled_as_text() -> None:
    # 0.7.3 - 0.8.2 multimodal/profiling.py: "if total_len > seq_len and not envs.VLLM_USE_V1: ... return
    # DummyData(seq_data=SequenceData.from_prompt_token_counts((0, seq_len)), multi_modal_data=None, ...)"
    p = v0_multimodal_profile(max_num_batched_tokens=8192, max_num_seqs=256, image_tokens=16384, video_tokens=16384,
                              keep_overlong=False)
    assert (p.sequences, p.tokens, p.text_only) == (1, 8192, True)
    r = invoke(["plan", "Qwen/Qwen2.5-VL-7B-Instruct", "--gpu", "rtx-3090", "--max-model-len", "8192",
                "--vllm-version", "0.8.2", "--json"], env={"HF_HUB_OFFLINE": "1", "VLLM_USE_V1": "0"})
    mem = json.loads(r.stdout)["data"]["memory"]
    assert mem["encoder_bytes"] == 0 and "text-only dummy prompt" in mem["notes"]["encoder"]
    assert "8192 batched tokens" in mem["notes"]["activation"]
