"""Memory of the multimodal encoder in vLLM's startup profile run (pure).

vLLM (V1 gpu_model_runner.profile_run, 0.28 source) runs the vision tower on dummy items of the
largest size before the language-model dummy forward, keeps their embeddings in the encoder cache
while that forward runs, then frees both:

- per-item size: the processor's largest image in LM tokens (`max_tokens_per_item`);
- encoder budget = max(max_num_batched_tokens, max_tokens_per_item)
  (vllm/v1/core/encoder_cache_manager.py compute_mm_encoder_budget);
- items profiled = max(1, min(budget // max_tokens_per_item,
  max_num_seqs * max(1, min(limit_per_prompt, max_model_len // max_tokens_per_item))))
  (vllm/multimodal/encoder_budget.py MultiModalBudget._get_max_items);
- a zero --limit-mm-per-prompt for every modality, or --language-model-only, skips it (budget 0,
  "Encoder cache will not be initialized").

The torch peak of the profile is therefore max(ViT peak, LM forward + cached embeddings); the term
returned here is what that adds on top of the language-model activation estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllmkit.arch.model import VisionFacts

ACT_BYTES = 2  # bf16 / fp16 activations

# Architectures whose vision tower also takes videos (get_supported_mm_limits in vLLM 0.32: qwen2_vl.py
# {"image", "video"}, inherited by Qwen2.5-VL, Qwen3-VL and Qwen3.5; gemma4_mm.py image + video (+ audio));
# the tower is left out (_mark_tower_model(vllm_config, {"image", "video"})) only when both limits are 0,
# and an unspecified modality defaults to 999 (config/multimodal.py get_limit_per_prompt)
VIDEO_TOWER_ARCHITECTURES = frozenset({
    "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration", "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "Gemma4ForConditionalGeneration",
})


def tower_modalities(architectures: list[str]) -> tuple[str, ...]:
    """The modalities a model's vision tower serves."""
    return ("image", "video") if VIDEO_TOWER_ARCHITECTURES.intersection(architectures) else ("image",)


@dataclass(frozen=True)
class EncoderProfile:
    budget_tokens: int  # "Encoder cache will be initialized with a budget of N tokens"
    items: int  # "... and profiled with M image items of the maximum feature size"
    tokens_per_item: int
    patches: int  # ViT sequence positions over all profiled items
    vit_peak_bytes: int  # live activations of the tower at its widest point
    embeddings_bytes: int  # encoder outputs held in the encoder cache during the LM dummy run

    @property
    def skipped(self) -> bool:
        return self.items == 0


# qwen2_vl.py _MAX_FRAMES_PER_VIDEO (14 from 0.11, read in the 0.11 - 0.14, 0.19 and 0.32 wheels; 16 before)
QWEN2_VL_MAX_FRAMES_PER_VIDEO = 14


def qwen2_vl_video_tokens(vision: VisionFacts, max_model_len: int, *, max_frames: int = QWEN2_VL_MAX_FRAMES_PER_VIDEO,
                          after_image: bool = False) -> int:
    """The largest video item of the Qwen2-VL / Qwen2.5-VL processor, in LM tokens (vllm qwen2_vl.py
    get_max_video_tokens, read in the 0.8.5 - 0.14, 0.19 and 0.32 wheels): frames of the largest image size (the video
    takes the image processor's max_pixels), as many as fit max_model_len counting from one frame
    (_get_max_video_frames), at most 14 per video, padded to the temporal patch size; each group of
    temporal_patch_size frames costs one image's tokens. V1 asks for it with one video per prompt
    (MultiModalBudget: mm_counts = {modality: 1}), so it does not shrink with --limit-mm-per-prompt.
    Through 0.10 (after_image, max_frames 16) the frames fit max_model_len less one largest image.
    A public vLLM 0.23.0 start of Qwen2.5-VL-7B at max_model_len 128,000 printed the result: "Encoder cache
    will be initialized with a budget of 114688 tokens, and profiled with 1 video items" (7 x 16,384)."""
    per_group = vision.max_tokens_per_item
    tps = max(vision.temporal_patch_size, 1)

    def tokens(frames: int) -> int:
        return max((frames + (-frames % tps)) // tps, 1) * per_group

    room = max_model_len - (per_group if after_image else 0)
    frames = 1
    while frames < max_frames and tokens(frames + 1) <= room:
        frames += 1
    return tokens(max(min(frames, max_frames), 1))


def encoder_profile(
    vision: VisionFacts,
    *,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    max_model_len: int,
    limit_per_prompt: int | None = None,
    chunked_prefill: bool = True,
    tp: int = 1,
    video_tokens_per_item: int = 0,
    dense_mask: bool = False,
) -> EncoderProfile:
    """What vLLM profiles for the vision tower. limit_per_prompt: --limit-mm-per-prompt for images
    (None = vLLM's default 999; 0 = text-only, also what --language-model-only does).
    video_tokens_per_item: the largest video item when the tower takes videos and their limit is not 0;
    vLLM profiles the modality with the most tokens per item (MultiModalBudget.get_modality_with_max_tokens)."""
    per_item = max(vision.max_tokens_per_item, video_tokens_per_item)
    limit = 999 if limit_per_prompt is None else limit_per_prompt
    if limit <= 0 or per_item <= 0:
        return EncoderProfile(0, 0, per_item, 0, 0, 0)
    budget = max(max_num_batched_tokens, per_item)
    per_prompt = max(1, min(limit, max_model_len // per_item))
    reqs = max_num_seqs
    if not chunked_prefill:
        reqs = min(reqs, max_num_batched_tokens // per_item)
    items = max(1, min(budget // per_item, reqs * per_prompt))
    if vision.patches_per_item and per_item == vision.max_tokens_per_item:
        patches = items * vision.patches_per_item
    else:
        patches = items * per_item * vision.patches_per_token
    # dense_mask: the tower attends over all items' patches as one sequence with a (patches x patches) additive
    # block mask in the model dtype (transformers' generate_block_attention_mask, which vLLM's Pixtral uses without
    # xformers) -- memory-efficient SDPA never builds the scores, but the mask itself is live for the whole tower
    mask = patches * patches * ACT_BYTES if dense_mask else 0
    return EncoderProfile(
        budget_tokens=budget,
        items=items,
        tokens_per_item=per_item,
        patches=patches,
        vit_peak_bytes=patches * vit_bytes_per_patch(vision, tp) + mask,
        embeddings_bytes=items * per_item * vision.out_hidden_size * (1 + vision.deepstack_layers) * ACT_BYTES,
    )


def vit_bytes_per_patch(vision: VisionFacts, tp: int = 1) -> int:
    """Live activation bytes per patch inside one pre-norm ViT block (flash attention: no
    sequence-squared term), plus what stays alive across blocks.

    Attention half: residual, norm1 out, qkv (3H), rotated q and k (2H), attention out, proj out
    = 9H. MLP half: residual, norm2 out, fc1 out (I), activation out (I), fc2 out = 3H + 2I.
    Across blocks: pixel input (C * T * p * p) and the position embedding (H).
    With TP the tower's column-parallel outputs (qkv, rotated q/k, attention out, fc1, activation)
    are split over the ranks (vLLM shards the ViT unless mm_encoder_tp_mode="data")."""
    h, i = vision.hidden_size, vision.intermediate_size
    tp = max(tp, 1)
    block = max(3 * h + 6 * h // tp, 3 * h + 2 * i // tp)
    carried = vision.in_channels * vision.temporal_patch_size * vision.patch_size ** 2 + h
    return (block + carried) * ACT_BYTES


@dataclass(frozen=True)
class V0MultimodalProfile:
    sequences: int  # dummy sequences in the profile batch (each samples one row)
    tokens: int  # language-model tokens of the profile forward
    mm_tokens: int  # multimodal tokens of one dummy prompt
    text_only: bool = False  # the prompt did not fit and was profiled without its multimodal items


def v0_multimodal_profile(*, max_num_batched_tokens: int, max_num_seqs: int, image_tokens: int,
                          video_tokens: int, keep_overlong: bool = True) -> V0MultimodalProfile:
    """The old engine's profile batch for a multimodal model (vLLM 0.8.4 worker/model_runner.py profile_run and
    multimodal/profiling.py get_decoder_dummy_data, the same from 0.6): as many sequences as fit
    max_num_batched_tokens at the model's worst-case multimodal tokens per prompt (every modality at its limit,
    1 by default on V0: config.py get_default_limit_per_prompt), at least one; each of
    max_num_batched_tokens / sequences tokens, unless its dummy multimodal prompt is longer, which V0 keeps
    whole ("V0 does not support chunked prefill" -- only a warning that the sequence length "is too short to hold
    the multi-modal embeddings in the worst case"). So a Qwen2.5-VL prompt of one 16,384-token image and a
    one-frame 16,384-token video runs 32,768 tokens through the language model at max_model_len 8,192, and the
    sampler sees one sequence, not max_num_seqs. image_tokens / video_tokens: one prompt's, limits applied.
    keep_overlong=False: releases before 0.8.3 (multimodal/profiling.py of 0.7.3 - 0.8.2) profile such a prompt as
    text only, seq_len tokens without the multimodal items (the encoder does not run in the profile)."""
    mm = max(image_tokens, 0) + max(video_tokens, 0)
    if mm <= 0:
        return V0MultimodalProfile(max_num_seqs, max_num_batched_tokens, 0)
    seqs = max(1, min(max_num_seqs, max_num_batched_tokens // mm))
    per_seq = max_num_batched_tokens // seqs
    if mm > per_seq and not keep_overlong:
        return V0MultimodalProfile(seqs, seqs * per_seq, mm, text_only=True)
    return V0MultimodalProfile(seqs, seqs * max(per_seq, mm), mm)


def encoder_extra_bytes(profile: EncoderProfile, lm_activation_bytes: int) -> int:
    """Bytes the encoder adds to the profile's torch peak: the held embeddings during the LM
    dummy forward, or the ViT's own peak when that is higher than the LM forward."""
    if profile.skipped:
        return 0
    return max(profile.embeddings_bytes, profile.vit_peak_bytes - lm_activation_bytes)


def vision_param_bytes(vision: VisionFacts, dtype_bytes: int = 2) -> int:
    """Approximate bytes of the vision tower in the checkpoint (kept 16-bit by the official
    quantized releases): per block qkv + proj (4H^2) and the MLP (2HI), the patch embedding
    (C*T*p*p*H), and a merger of (merge^2 H) -> (merge^2 H) -> out where tokens merge patches.
    Qwen3.5-27B: ~0.46 B parameters = 0.92 GB, matching the 0.9 GB "visual encoder" of public
    FP8 re-quantizations of that model."""
    h, i = vision.hidden_size, vision.intermediate_size
    blocks = vision.depth * (4 * h * h + 2 * h * i)
    patch = vision.in_channels * vision.temporal_patch_size * vision.patch_size ** 2 * h
    m = vision.patches_per_token * h if vision.family in ("qwen2_vl", "qwen3_vl") else h
    merger = m * m + m * vision.out_hidden_size
    return (blocks + patch + merger) * dtype_bytes
