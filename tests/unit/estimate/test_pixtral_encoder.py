"""Pixtral's vision tower (Mistral3ForConditionalGeneration: Ministral-3, Mistral-Small-3.x) in vLLM's profile run.

The processor's largest image is 1540 px in 14 px patches: 110 x 110 = 12,100 patches, merged 2 x 2 into 55 rows of 55
image tokens plus one break token per row: (55 + 1) x 55 = 3,080 LM tokens (vllm pixtral.py get_num_image_tokens). At
max_num_batched_tokens 8192 vLLM profiles 8192 // 3080 = 2 images -- the public 0.27.1 H200 log of
Ministral-3-14B-Instruct-2512-BF16 prints "Encoder cache will be initialized with a budget of 8192 tokens, and profiled
with 2 image items of the maximum feature size". Without xformers (not a vLLM dependency) vLLM through 0.28 passes
transformers' block mask of (patches x patches) in the model dtype to SDPA; 0.29 on use variable-length attention."""

from __future__ import annotations

from vllmkit.arch import read_arch
from vllmkit.engine.versions import rules_for
from vllmkit.estimate.multimodal import encoder_profile
from vllmkit.hub.catalog import find_entry
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

GIB = 1 << 30
MODEL = "mistralai/Ministral-3-14B-Instruct-2512-BF16"


def test_tokens_per_image_and_the_profiled_items() -> None:
    vision = read_arch(find_entry(MODEL).config).vision
    assert vision is not None and vision.family == "pixtral"
    assert vision.max_tokens_per_item == (55 + 1) * 55 == 3080 and vision.patches_per_item == 110 * 110
    prof = encoder_profile(vision, max_num_batched_tokens=8192, max_num_seqs=512, max_model_len=2048)
    assert (prof.budget_tokens, prof.items, prof.patches) == (8192, 2, 24_200)
    masked = encoder_profile(vision, max_num_batched_tokens=8192, max_num_seqs=512, max_model_len=2048,
                             dense_mask=True)
    assert masked.vit_peak_bytes - prof.vit_peak_bytes == 24_200 ** 2 * 2  # 1.09 GiB of bf16 mask


def test_the_mask_goes_with_the_release() -> None:
    assert rules_for("0.27.1").pixtral_dense_mask and rules_for("0.28.0").pixtral_dense_mask
    assert not rules_for("0.29.0").pixtral_dense_mask and not rules_for("0.32.0").pixtral_dense_mask


def test_profile_peak_of_the_public_h200_start() -> None:
    """The log: "Actual usage is 26.66 GiB for consumed memory (weights + non-torch), 1.96 GiB for peak activation"
    (warm compile cache, 512 sequences, FlashInfer sampling); the language model's 8,192-token forward alone is
    about 1.1 GiB, so the tower sets the peak. Planned: 1.67 GiB (the mask 1.09 + the ViT's activations, an
    estimate), and 97.74 GiB of KV against "Available KV cache memory: 97.2 GiB" (98.35 without the mask)."""
    def plan(version: str):
        return build_plan(PlanRequest(model=MODEL, source="catalog", gpu="h200", vllm_version=version,
                                      tensor_parallel_size=1, max_model_len=2048, max_num_seqs=512, gpu_memory_utilization=0.9,
                                      enable_prefix_caching=False, compile_cache="warm"),
                          {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"})

    old, new = plan("0.27.1"), plan("0.30.0")
    peak_old = (old.memory.activation_bytes + old.memory.encoder_bytes) / GIB
    assert abs(peak_old - 1.96) / 1.96 < 0.16
    assert abs(old.memory.kv_cache_bytes / GIB - 97.2) / 97.2 < 0.01
    # from 0.29 the tower's peak stays under the language model's forward: only the two images' embeddings held in
    # the encoder cache during it count, 2 x 3,080 tokens x 5,120 x 2 B
    assert new.memory.encoder_bytes == 2 * 3080 * 5120 * 2
    assert old.memory.encoder_bytes - new.memory.encoder_bytes > 0.5 * GIB
