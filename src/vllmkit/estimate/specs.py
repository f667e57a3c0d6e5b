"""Per-layer KV cache specs on one rank, as vLLM's layers report them (get_kv_cache_spec).

Sources (vllm 0.32.0): attention.py get_kv_cache_spec, mamba/abstract.py and mamba_mixer2.py
(checkpoint block), mamba_utils.py (state shapes/dtypes), platforms/interface.py
_align_hybrid_block_size, platforms/cpu.py (block size 128; CPU MLA 16 without AMX),
distributed/utils.py get_pp_indices.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllmkit.arch.model import DTYPE_BYTES, LayerKind, MambaFacts, ModelArch
from vllmkit.estimate.kv import LayerSpec, SpecKind, cdiv

KV_LAYER_KINDS = (LayerKind.FULL, LayerKind.SLIDING, LayerKind.CHUNKED, LayerKind.MLA, LayerKind.MAMBA)

_KIND_TO_SPEC = {
    LayerKind.FULL: SpecKind.FULL,
    LayerKind.SLIDING: SpecKind.SLIDING,
    LayerKind.CHUNKED: SpecKind.CHUNKED,
    LayerKind.MLA: SpecKind.MLA,
    LayerKind.MAMBA: SpecKind.MAMBA,
}


# Packed KV-cache formats: the first release that runs each --kv-cache-dtype (vllm/config/cache.py CacheDType in
# the PyPI wheels: int8 / fp8 per token-head from 0.20.0, int4 per token-head from 0.25.0, nvfp4_4over6 from 0.28.0;
# absent from 0.19.0, 0.24.0 and 0.27.1 respectively; 0.20.0 lists nvfp4 but its FlashInfer metadata builder raises
# "nvfp4 KV cache is not yet supported", so nvfp4 from 0.21.0). turboquant_* (boundary layers kept at the model
# dtype), ultraquant_4bit, octave_* (0.34) and nvfp4_ds_mla are not sized.
PACKED_KV_DTYPES: dict[str, tuple[int, int, int]] = {
    "int8_per_token_head": (0, 20, 0),
    "fp8_per_token_head": (0, 20, 0),
    "nvfp4": (0, 21, 0),
    "int4_per_token_head": (0, 25, 0),
    "nvfp4_4over6": (0, 28, 0),
}
FP32_SCALE_BYTES = 4
# where FlashInfer takes an NVFP4 KV cache (v1/attention/backends/flashinfer.py supports_kv_cache_dtype): on
# Blackwell datacenter GPUs (compute capability 10.x, its TRT-LLM kernels; the check from 0.23, the only kernels
# before); from 0.32 plain nvfp4 also on 8.x / 9.x / 12.x through FlashAttention-2 prefill (_nvfp4_kv_on_fa2),
# except at head size 64 ("fa2 prefill misreads an NVFP4 KV cache at head_size 64")
NVFP4_KV_FA2 = (0, 32, 0)


def nvfp4_kv_refusal(kv_cache_dtype: str, version: tuple[int, int, int], compute_capability: float | None,
                     head_size: int) -> str | None:
    """Why vLLM finds no attention backend for an NVFP4 KV cache on this GPU (None: it does)."""
    if not kv_cache_dtype.startswith("nvfp4") or compute_capability is None:
        return None
    if int(compute_capability) == 10:
        return None
    fa2 = int(compute_capability) in (8, 9, 12) and version >= NVFP4_KV_FA2 and kv_cache_dtype == "nvfp4"
    if fa2 and head_size != 64:
        return None
    if fa2:
        return "FlashInfer's FlashAttention-2 path misreads an NVFP4 KV cache at head size 64"
    if version >= NVFP4_KV_FA2 and kv_cache_dtype == "nvfp4":
        return f"no NVFP4 KV kernels for compute capability {compute_capability:g} (10.x, or 8.x / 9.x / 12.x)"
    return (f"{kv_cache_dtype} KV runs on Blackwell datacenter GPUs (compute capability 10.x) only"
            + ("" if kv_cache_dtype != "nvfp4" else "; vLLM 0.32 added 8.x / 9.x / 12.x"))


def packed_kv_head_bytes(kv_cache_dtype: str | None, head: int, head_v: int) -> int | None:
    """Bytes one token takes per KV head in a packed format (K and V together), None for an unpacked dtype.
    vllm/v1/kv_cache_interface.py, 0.20.0 - 0.27.1: AttentionSpec.page_size_bytes adds 2 x block x KV heads x
    sizeof(float32) to the page for the per-token-head modes, and FullAttentionSpec.real_page_size_bytes stores
    int4 at head_size // 2 bytes and nvfp4 at nvfp4_kv_cache_full_dim(h) = h // 2 + h // 16 bytes (FP4 data and
    FP8 block scales) for each of K and V, all in a 1-byte dtype (utils/torch_utils.py STR_DTYPE_TO_TORCH_DTYPE);
    0.32.0 lays the same bytes out through the backends' customize_spec (TritonAttentionBackend: (hs_k + hs_v) x
    1 + 2 float32 scales; FlashInferBackend: 2 x KV heads slots of nvfp4_kv_cache_full_dim bytes)."""
    if kv_cache_dtype in ("int8_per_token_head", "fp8_per_token_head"):
        return head + head_v + 2 * FP32_SCALE_BYTES
    if kv_cache_dtype == "int4_per_token_head":
        return head // 2 + head_v // 2 + 2 * FP32_SCALE_BYTES
    if kv_cache_dtype in ("nvfp4", "nvfp4_4over6"):
        return head // 2 + head // 16 + head_v // 2 + head_v // 16
    return None


def kv_dtype_bytes(kv_cache_dtype: str, arch: ModelArch) -> int:
    """auto -> the model dtype, unless the checkpoint declares a quantized KV cache scheme."""
    if kv_cache_dtype in ("auto", "", None):
        if arch.quantization is not None and arch.quantization.kv_cache_scheme == "fp8":
            return 1
        return arch.dtype_bytes
    if kv_cache_dtype.startswith("fp8") or kv_cache_dtype in PACKED_KV_DTYPES:
        return 1
    return DTYPE_BYTES.get(kv_cache_dtype, arch.dtype_bytes)


def effective_kv_cache_dtype(kv_cache_dtype: str, arch: ModelArch) -> str:
    if kv_cache_dtype in ("auto", "", None):
        if arch.quantization is not None and arch.quantization.kv_cache_scheme == "fp8":
            return "fp8 (declared by the checkpoint)"
        return arch.dtype
    return kv_cache_dtype


def kv_heads_per_rank(arch: ModelArch, tp: int) -> int:
    """vLLM get_num_kv_heads: kv heads are split over TP, replicated when fewer than TP."""
    if arch.mla is not None:
        return 1
    return max(1, arch.num_kv_heads // tp)


def attention_token_bytes(arch: ModelArch, tp: int, dtype_bytes: int, *, layer: bool = True,
                          kind: LayerKind | None = None, index: int | None = None,
                          kv_cache_dtype: str | None = None) -> int:
    """Bytes one token takes in one attention layer on one rank. layer=False gives the figure
    vLLM's platform code computes from the config's head size (hybrid block alignment, which sizes a packed
    format's page the same way: platforms/interface.py _align_hybrid_block_size). kind=FULL on
    Gemma-4 / MiMo-V2 gives the full-attention layers' figure (their head sizes and KV heads).
    kv_cache_dtype: a packed format (PACKED_KV_DTYPES) sizes each head with packed_kv_head_bytes."""
    if arch.mla is not None:
        # one latent (kv_lora_rank + rope dims) per token, no separate V; every rank holds it all
        return arch.head_dim * dtype_bytes
    head = arch.layer_head_dim if (layer and arch.layer_head_dim) else arch.head_dim
    head_v = head if arch.head_dim_v is None else arch.head_dim_v
    kv_heads = kv_heads_per_rank(arch, tp)
    if layer and kind is LayerKind.FULL and arch.full_head_dim:
        head = arch.full_head_dim
        head_v = arch.full_head_dim_v or head
        if arch.full_num_kv_heads:
            kv_heads = max(1, arch.full_num_kv_heads // tp)
    if layer and index is not None and arch.layer_num_kv_heads and index < len(arch.layer_num_kv_heads):
        kv_heads = max(1, arch.layer_num_kv_heads[index] // tp)  # Nemotron-NAS: this layer's own KV heads
    packed = packed_kv_head_bytes(kv_cache_dtype, head, head_v)
    if packed is not None:
        return kv_heads * packed
    return kv_heads * (head + head_v) * dtype_bytes


def _divide(a: int, b: int) -> int:
    if a % b:
        raise ValueError(f"{a} is not divisible by tensor parallel size {b}")
    return a // b


def mamba_state_bytes(mamba: MambaFacts, tp: int, model_dtype_bytes: int, num_spec: int = 0) -> int:
    """vLLM MambaStateShapeCalculator shapes x MambaStateDtypeCalculator dtypes, per rank. num_spec: draft tokens
    the conv state keeps room for (conv_kernel - 1 + num_spec columns; VersionRules.mamba_conv_spec_variants)."""
    conv_b = model_dtype_bytes if mamba.conv_dtype == "auto" else DTYPE_BYTES[mamba.conv_dtype]
    ssm_b = conv_b if mamba.ssm_dtype == "auto" else DTYPE_BYTES[mamba.ssm_dtype]
    k = int(mamba.conv_kernel or 4) + num_spec
    if mamba.variant == "mamba2":
        n_groups = int(mamba.n_groups or 1)
        if n_groups % tp:
            n_groups += tp - n_groups  # extra_groups_for_head_shards
        conv_dim = int(mamba.intermediate_size or 0) + 2 * n_groups * int(mamba.state_size or 0)
        conv = _divide(conv_dim, tp) * (k - 1)
        ssm = _divide(int(mamba.num_heads or 0), tp) * int(mamba.head_dim or 0) * int(mamba.state_size or 0)
        return conv * conv_b + ssm * ssm_b
    if mamba.variant == "mamba1":
        inter = _divide(int(mamba.intermediate_size or 0), tp)
        return inter * (k - 1) * conv_b + inter * int(mamba.state_size or 0) * ssm_b
    if mamba.variant == "gdn":
        hk, hv = int(mamba.num_k_heads or 0), int(mamba.num_v_heads or 0)
        dk, dv = int(mamba.k_head_dim or 0), int(mamba.v_head_dim or 0)
        conv = _divide(2 * hk * dk + hv * dv, tp) * (k - 1)
        ssm = _divide(hv, tp) * dv * dk
        return conv * conv_b + ssm * ssm_b
    if mamba.variant == "short_conv":
        # short_conv_state_shape: one (dim / tp, conv_kernel - 1) conv state in the cache dtype
        return _divide(int(mamba.intermediate_size or 0), tp) * (k - 1) * conv_b
    if mamba.variant == "kda":
        # kda_state_shape: q, k and v short-conv states (num_heads * head_dim each) and a
        # (num_heads, head_dim, head_dim) recurrent state per rank
        heads, dim = int(mamba.num_heads or 0), int(mamba.head_dim or 0)
        conv = 3 * _divide(heads * dim, tp) * (k - 1)
        ssm = _divide(heads, tp) * dim * dim
        return conv * conv_b + ssm * ssm_b
    raise ValueError(f"unknown recurrent state variant {mamba.variant!r}")


def mamba_pages_per_request(mamba: MambaFacts, prefix_caching: bool) -> int:
    """MambaSpec.max_memory_usage_bytes / page: 1 ("none" mode) or 2 + checkpoint ("align" mode,
    chosen when prefix caching is on); MambaMixer2 adds one prefill checkpoint block."""
    if not prefix_caching:
        return 1
    return 2 + (1 if mamba.variant == "mamba2" else 0)


@dataclass(frozen=True)
class BlockSizeChoice:
    block_size: int
    reason: str


def default_block_size(arch: ModelArch, device: str, *, compute_capability: float | None = None,
                       cpu_amx: bool = False, mla_backend_generation: int = 2, default: int = 16) -> BlockSizeChoice:
    """The block size vLLM picks before hybrid alignment: 16, unless the attention backend it selects
    cannot run 16 (Attention backend get_preferred_block_size -> smallest supported kernel block).
    MLA on CUDA (platforms/cuda.py backend priorities): generation 2 (vLLM >= 0.30, read from 0.32):
    Hopper FLASH_ATTN_MLA (multiples of 16), Blackwell FLASHINFER_MLA ([32, 64] -> 32); generation 1
    (older): FlashMLA [64] on Hopper, CUTLASS MLA [128] on Blackwell. ROCm AITER MLA takes any size.
    default: CacheConfig.DEFAULT_BLOCK_SIZE (16; 64 from vLLM 0.34, engine/versions.py), which a backend that
    supports it takes (Attention backend get_preferred_block_size); ROCm's ROCM_ATTN, first for non-MLA models,
    always prefers 16 (its native paged-attention kernel; rocm_attn.py in the 0.34 wheel)."""
    if device == "cpu":
        if arch.mla is not None and not cpu_amx:
            return BlockSizeChoice(16, "CPU MLA decode kernel requires block size 16 (platforms/cpu.py)")
        return BlockSizeChoice(128, "CPU backend default block size 128 (platforms/cpu.py)")
    if arch.mla is not None and arch.mla.index_head_dim and device == "cuda":
        return BlockSizeChoice(64, "DeepSeek sparse attention (FlashMLA sparse backend): kernel blocks of 64 tokens")
    if arch.mla is not None and device == "cuda" and compute_capability is not None:
        if compute_capability >= 12.0:
            pass  # sm12x: Triton MLA, multiples of 16
        elif compute_capability >= 10.0:
            if mla_backend_generation >= 2:
                if default in (32, 64):
                    return BlockSizeChoice(default, f"FlashInfer MLA backend on Blackwell: default block size {default}")
                return BlockSizeChoice(32, "FlashInfer MLA backend on Blackwell: smallest kernel block 32")
            return BlockSizeChoice(128, "CUTLASS MLA backend on Blackwell uses block size 128")
        elif compute_capability >= 9.0 and mla_backend_generation < 2:
            return BlockSizeChoice(64, "FlashMLA backend on Hopper uses block size 64")
    if device == "rocm" and arch.mla is None and default != 16:
        return BlockSizeChoice(16, "ROCm attention backend ROCM_ATTN prefers block size 16")
    return BlockSizeChoice(default, f"default block size {default} (CacheConfig.DEFAULT_BLOCK_SIZE)")


def align_hybrid_block_size(block_size: int, attn_token_bytes: int, mamba_page: int, device: str,
                            mla_alignment: int | None = None, from_backend: bool = True) -> int:
    """vLLM's hybrid block alignment: the smallest aligned attention block whose page holds the mamba
    state. from_backend (0.20+, Platform._align_hybrid_block_size): the alignment is the backend's
    smallest kernel block, at least the block size, and mla_alignment (0.27+: 128) a floor for MLA;
    before (HybridAttentionMambaModelConfig) a fixed constant: 16, or mla_alignment (64) for MLA."""
    if mamba_page == 0 or attn_token_bytes == 0:
        return block_size
    if device == "cpu":
        align = max(block_size, 128)
    elif from_backend:
        align = max(block_size, mla_alignment or 16)
    else:
        align = mla_alignment or 16
    aligned = align * cdiv(mamba_page, align * attn_token_bytes)
    return max(block_size, aligned)


def pp_layer_ranges(num_layers: int, pp: int, partition: list[int] | None = None) -> list[range]:
    """vLLM get_pp_indices: equal shares; the remainder goes to the stages before the last."""
    if partition is not None:
        parts = list(partition)
    else:
        parts = [num_layers // pp] * pp
        remaining = num_layers % pp
        for i in range(2, remaining + 2):
            parts[-i] += 1
    out, start = [], 0
    for n in parts:
        out.append(range(start, start + n))
        start += n
    return out


@dataclass(frozen=True)
class ModelSpecs:
    """All KV layers of the model (as one rank of a TP group sees them)."""

    layer_ids: tuple[int, ...]  # model layer index of each KV layer
    specs: tuple[LayerSpec, ...]
    block_size: int  # attention block size after alignment
    block_reason: str
    attn_token_bytes: int  # one attention layer, one token, one rank
    mamba_state_bytes: int  # one mamba layer, one request, one rank (unpadded)


def build_specs(
    arch: ModelArch,
    *,
    tp: int,
    kv_cache_dtype: str,
    device: str,
    block_size: int | None = None,
    prefix_caching: bool = True,
    compute_capability: float | None = None,
    cpu_amx: bool = False,
    ssm_dtype_override: str | None = None,
    mla_backend_generation: int = 2,
    mla_hybrid_alignment: int | None = 128,
    hybrid_alignment_from_backend: bool = True,
    mla_entry_align_256: bool = False,
    default_block: int = 16,
    speculative_blocks: int = 0,
    conv_spec_tokens: int = 0,
) -> ModelSpecs:
    """speculative_blocks: state blocks a request holds beyond mamba_pages_per_request in every recurrent layer,
    one per draft token under speculative decoding (VersionRules.mamba_speculative_blocks); conv_spec_tokens: the
    draft tokens the conv state keeps room for (mamba_state_bytes num_spec).
    ssm_dtype_override: the platform's forced SSM state dtype (vLLM's CPU platform stores SSM
    state in float32 when the CPU has AVX512-BF16, platforms/cpu.py check_and_update_config).
    mla_entry_align_256: vLLM 0.7.2 / 0.7.3 on CUDA allocate each token's MLA latent with a stride rounded up
    to 256 bytes of the model dtype (engine/versions.py), in the cache dtype's bytes."""
    dtype_bytes = kv_dtype_bytes(kv_cache_dtype, arch)
    token_bytes = attention_token_bytes(arch, tp, dtype_bytes, kv_cache_dtype=kv_cache_dtype)
    if block_size is None:
        choice = default_block_size(arch, device, compute_capability=compute_capability, cpu_amx=cpu_amx,
                                    mla_backend_generation=mla_backend_generation, default=default_block)
        bs, reason = choice.block_size, choice.reason
    else:
        bs, reason = block_size, "set with --block-size"
    state = 0
    pages = 1
    mamba_padded_page = 0
    has_attention = any(k in arch.layer_kinds for k in KV_LAYER_KINDS if k is not LayerKind.MAMBA)
    if arch.mamba is not None and arch.has_recurrent_state:
        mamba = arch.mamba
        if ssm_dtype_override is not None:
            mamba = mamba.model_copy(update={"ssm_dtype": ssm_dtype_override})
        state = mamba_state_bytes(mamba, tp, arch.dtype_bytes, conv_spec_tokens)
        pages = mamba_pages_per_request(arch.mamba, prefix_caching) + speculative_blocks
        if has_attention:
            config_token_bytes = attention_token_bytes(arch, tp, dtype_bytes, layer=False, kv_cache_dtype=kv_cache_dtype)
            aligned = align_hybrid_block_size(bs, config_token_bytes, state, device,
                                              mla_hybrid_alignment if arch.mla is not None else None,
                                              hybrid_alignment_from_backend)
            if aligned != bs:
                reason = f"hybrid model: attention block size {aligned} so an attention page holds a mamba state"
                bs = aligned
            # platform pads the mamba page to the attention page computed from the config's head size
            mamba_padded_page = bs * config_token_bytes
    # every recurrent layer's spec is the same: its state, padded to the attention page in a hybrid
    padded = mamba_padded_page if has_attention and mamba_padded_page > state else None
    state_spec = LayerSpec(SpecKind.MAMBA, bs, state_bytes=state, page_size_padded=padded, mamba_pages=pages)
    ids: list[int] = []
    specs: list[LayerSpec] = []
    for i, kind in enumerate(arch.layer_kinds):
        if kind not in _KIND_TO_SPEC or not arch.owns_kv_cache(i):
            continue  # no cache, or another layer's (get_kv_cache_spec skips KV-sharing layers)
        ids.append(i)
        if kind is LayerKind.MAMBA:
            specs.append(state_spec)
        else:
            layer_bytes = attention_token_bytes(arch, tp, dtype_bytes, kind=kind, index=i,
                                                kv_cache_dtype=kv_cache_dtype)
            if kind is LayerKind.MLA and mla_entry_align_256 and device == "cuda" and arch.mla is not None:
                per_256 = 256 // max(arch.dtype_bytes, 1)  # elements of the model dtype in 256 bytes
                elements = layer_bytes // dtype_bytes
                layer_bytes = cdiv(elements, per_256) * per_256 * dtype_bytes
            specs.append(
                LayerSpec(
                    _KIND_TO_SPEC[kind],
                    bs,
                    token_bytes=layer_bytes,
                    sliding_window=arch.sliding_window if kind is LayerKind.SLIDING else None,
                    chunk_size=arch.attention_chunk_size if kind is LayerKind.CHUNKED else None,
                )
            )
            if arch.parallel_mamba and state:
                # Falcon-H1: the same layer's MambaMixer2 keeps its state beside the attention cache
                ids.append(i)
                specs.append(state_spec)
            if kind is LayerKind.MLA and arch.mla is not None and arch.mla.has_indexer(i):
                # the indexer's key cache is one more MLA spec of the same layer (same block size, so
                # vLLM keeps it in the latent's group: UniformTypeKVCacheSpecs)
                ids.append(i)
                specs.append(LayerSpec(SpecKind.MLA, bs, token_bytes=arch.mla.indexer_token_bytes))
    return ModelSpecs(tuple(ids), tuple(specs), bs, reason, token_bytes, state)


def kv_bytes_per_token_full(arch: ModelArch, tp: int, kv_cache_dtype: str, layers: int | None = None) -> int:
    """Per-rank bytes per token summed over attention layers as if all were full attention
    (the classic 2 * layers * kv_heads * head_dim * bytes figure; MLA: layers * latent * bytes).
    Layers that read another layer's cache add nothing; `layers` scales the sum to that many layers."""
    dtype_bytes = kv_dtype_bytes(kv_cache_dtype, arch)
    attn = (LayerKind.FULL, LayerKind.SLIDING, LayerKind.CHUNKED, LayerKind.MLA)
    owned = [attention_token_bytes(arch, tp, dtype_bytes, kind=k, index=i, kv_cache_dtype=kv_cache_dtype)
             for i, k in enumerate(arch.layer_kinds) if k in attn and arch.owns_kv_cache(i)]
    total = sum(owned)
    if layers is not None:
        total = total * layers // max(len(owned), 1)
    n = layers if layers is not None else len(owned)
    if arch.mla is not None and arch.mla.index_head_dim:
        all_layers = sum(1 for k in arch.layer_kinds if k is LayerKind.MLA) or 1
        total += n * arch.mla.indexer_layer_count(all_layers) // all_layers * arch.mla.indexer_token_bytes
    return total
