"""The model architecture as vLLM sees it (text part), read from config.json."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, Field


class LayerKind(str, Enum):
    FULL = "full"  # full attention, KV cache grows with the sequence
    SLIDING = "sliding"  # sliding-window attention
    CHUNKED = "chunked"  # chunked local attention (Llama-4)
    MLA = "mla"  # multi-head latent attention (DeepSeek-V2/V3)
    MAMBA = "mamba"  # constant-size recurrent state (mamba1/mamba2/GDN/linear attention)
    CROSS = "cross"  # cross attention (encoder-decoder); KV bounded by encoder length
    NONE = "none"  # a layer with no cache (e.g. MLP-only in Nemotron-H)


DTYPE_BYTES: dict[str, int] = {
    "float32": 4,
    "float": 4,
    "float16": 2,
    "half": 2,
    "bfloat16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_inc": 1,
    "fp8_ds_mla": 1,
}


class MLAFacts(BaseModel):
    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    q_lora_rank: int | None = None
    # DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): the lightning indexer keeps its own key cache
    # beside the latent, index_head_dim fp8 values + one float32 scale per 128 (vLLM deepseek_v2.py
    # Indexer / DeepseekV32IndexerCache); None without one
    index_head_dim: int | None = None
    index_n_heads: int | None = None
    index_topk: int | None = None  # context tokens each query attends to (the rest are skipped)
    # model layers that build an indexer (index_topk_freq / index_topk_pattern); None = every layer
    indexer_layers: list[int] | None = None

    @property
    def indexer_token_bytes(self) -> int:
        """uint8 bytes one token takes in one layer's indexer cache: head_dim + head_dim // 128 * 4."""
        if not self.index_head_dim:
            return 0
        return self.index_head_dim + self.index_head_dim // 128 * 4

    def has_indexer(self, layer: int) -> bool:
        return bool(self.index_head_dim) and (self.indexer_layers is None or layer in self.indexer_layers)

    def indexer_layer_count(self, num_layers: int) -> int:
        """How many of `num_layers` MLA layers build an indexer (0 without sparse attention)."""
        if not self.index_head_dim:
            return 0
        return num_layers if self.indexer_layers is None else len(self.indexer_layers)


class MambaFacts(BaseModel):
    """Raw parameters of the recurrent state; per-rank shapes are computed in estimate/."""

    variant: str  # "mamba1" | "mamba2" | "gdn" | "kda" | "linear_attention" | "short_conv"
    # mamba1 / mamba2
    intermediate_size: int | None = None
    state_size: int | None = None  # d_state
    conv_kernel: int | None = None  # d_conv
    n_groups: int | None = None
    num_heads: int | None = None
    head_dim: int | None = None
    # gated delta net (Qwen3-Next / Qwen3.5)
    num_k_heads: int | None = None
    num_v_heads: int | None = None
    k_head_dim: int | None = None
    v_head_dim: int | None = None
    # dtypes of the two states ("auto" -> model dtype)
    conv_dtype: str = "auto"
    ssm_dtype: str = "auto"


class MoEFacts(BaseModel):
    num_experts: int
    experts_per_token: int
    moe_intermediate_size: int | None = None
    num_shared_experts: int = 0
    shared_expert_intermediate_size: int | None = None
    dense_layers: int = 0  # leading dense layers (DeepSeek first_k_dense_replace)
    # where the config places routed experts in some layers only (Llama-4 interleave_moe_layer_step, Jamba
    # expert_layer_period / offset, Qwen-MoE decoder_sparse_step / mlp_only_layers, DeepSeek moe_layer_freq,
    # Nemotron-H "E" in hybrid_override_pattern): how many layers have them, and how many have a plain MLP
    # instead; None: every layer past `dense_layers` is an MoE layer (arch.model.moe_layer_count)
    moe_layers: int | None = None
    dense_mlp_layers: int | None = None
    # weight matrices per expert: 3 for gated MLPs (gate, up, down), 2 for Nemotron-H's ReLU^2 experts (up, down:
    # vLLM nemotron_h.py builds its FusedMoE without the activation-and-multiply)
    expert_matrices: int = 3
    # the dense MLP layers' intermediate size where it differs from intermediate_size (Llama-4
    # intermediate_size_mlp: 16384 beside 8192-wide experts)
    dense_intermediate_size: int | None = None

    def moe_layer_count(self, num_hidden_layers: int) -> int:
        """Decoder layers with routed experts."""
        if self.moe_layers is not None:
            return self.moe_layers
        return max(num_hidden_layers - self.dense_layers, 0)

    def dense_mlp_layer_count(self) -> int:
        """Decoder layers with a plain (dense) MLP instead of experts."""
        return self.dense_mlp_layers if self.dense_mlp_layers is not None else self.dense_layers


class QuantFacts(BaseModel):
    method: str  # awq, gptq, fp8, compressed-tensors, mxfp4, bitsandbytes, modelopt, ...
    bits: int | None = None
    group_size: int | None = None
    kv_cache_scheme: str | None = None  # "fp8" when the checkpoint declares a quantized KV cache
    weight_format: str | None = None  # e.g. "float-quantized", "pack-quantized", "e4m3"
    raw: dict = Field(default_factory=dict)


class VisionFacts(BaseModel):
    """The vision tower vLLM profiles at startup (text-only planning ignores it)."""

    family: str  # qwen2_vl | qwen3_vl | gemma3 | llama4 | generic
    depth: int
    hidden_size: int
    intermediate_size: int
    num_heads: int
    patch_size: int
    in_channels: int = 3
    temporal_patch_size: int = 1
    out_hidden_size: int  # width of the embeddings handed to the language model
    deepstack_layers: int = 0  # Qwen3-VL: extra merged features per token
    max_tokens_per_item: int  # largest image in LM tokens (processor defaults)
    patches_per_token: int  # ViT sequence positions per LM token (merge**2, SigLIP pooling, ...)
    patches_per_item: int = 0  # ViT sequence positions of one largest item, where tokens do not map evenly (Pixtral)
    source: str = ""


class ModelArch(BaseModel):
    model_type: str
    architectures: list[str] = Field(default_factory=list)
    text_model_type: str | None = None  # model_type of the nested text_config, when any
    dtype: str = "bfloat16"  # torch_dtype / dtype as declared by the checkpoint
    hidden_size: int
    intermediate_size: int | None = None
    vocab_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int  # vLLM's get_head_size() (MLA: kv_lora_rank + qk_rope_head_dim)
    head_dim_v: int | None = None  # separate value head size where it differs
    # head size the attention layers really use when the model code ignores config.head_dim
    # (vLLM sizes hybrid block alignment with head_dim but the layers' pages with this)
    layer_head_dim: int | None = None
    # Gemma-4 / MiMo-V2: full-attention layers' head size (value head size, where it differs from the key's)
    # and KV heads where they differ from the sliding layers'
    full_head_dim: int | None = None
    full_head_dim_v: int | None = None
    full_num_kv_heads: int | None = None
    # Nemotron-NAS (DeciLM): KV heads of each layer where they differ between layers (0 for a layer without attention)
    layer_num_kv_heads: list[int] | None = None
    # parameters counted from a config whose layers differ in shape (Nemotron-NAS), for a config-only weight estimate
    config_params: int = 0
    k_eq_v: bool = False  # Gemma-4 attention_k_eq_v: full layers' V slot filled from K (allocated anyway)
    kv_shared_from: int | None = None  # Gemma-3n/4: layers from here reuse an earlier layer's KV cache
    # Gemma-4 with use_bidirectional_attention "vision" (a multimodal prefix LM): one multimodal item must fit
    # in one batch, so vLLM raises the default max_num_batched_tokens to the largest item (tokens)
    mm_prefix_min_batched_tokens: int = 0
    per_layer_embedding_params: int = 0  # Gemma-3n/4 embed_tokens_per_layer (a gather, split like the embedding)
    # positions x width of the RoPE cos/sin caches vLLM builds at load, summed over the distinct ones
    # (estimate/weights.py rope_cache_bytes; arch/reader.py _rope_cache_elements)
    rope_cache_elements: int = 0
    attn_output_gate: bool = False  # Qwen3-Next / Qwen3.5: q_proj also emits a sigmoid gate (2x rows)
    layer_kinds: list[LayerKind]
    sliding_window: int | None = None
    attention_chunk_size: int | None = None
    mla: MLAFacts | None = None
    mamba: MambaFacts | None = None
    moe: MoEFacts | None = None
    quantization: QuantFacts | None = None
    native_max_model_len: int
    native_max_model_len_key: str
    rope_scaling: dict | None = None
    tie_word_embeddings: bool = False
    trust_remote_code: bool = False  # config carries auto_map
    is_multimodal: bool = False
    vision: VisionFacts | None = None
    # parameters of an audio tower and its embedder (Gemma-4 E2B / E4B), which vLLM leaves out at an audio
    # limit of 0 (gemma4_mm.py _mark_tower_model(vllm_config, "audio"))
    audio_tower_params: int = 0
    is_encoder_decoder: bool = False
    # every attention layer also runs a mamba mixer side by side (Falcon-H1's parallel hybrid blocks): vLLM
    # registers both caches per layer (self_attn.attn and a MambaMixer2)
    parallel_mamba: bool = False
    # each decoder layer is one block — a mamba mixer, an attention block, an MLP or an MoE — not attention plus an
    # MLP (Nemotron-H's hybrid_override_pattern, vllm nemotron_h.py: one NemotronH*Decoder layer per character)
    single_block_layers: bool = False
    warnings: list[str] = Field(default_factory=list)

    def owns_kv_cache(self, layer: int) -> bool:
        """False for a layer that reads another layer's cache (vLLM kv_sharing_target_layer_name)."""
        return self.kv_shared_from is None or layer < self.kv_shared_from

    @property
    def kv_layer_count(self) -> int:
        return sum(1 for i, k in enumerate(self.layer_kinds)
                   if k not in (LayerKind.NONE, LayerKind.MAMBA) and self.owns_kv_cache(i))

    @property
    def has_recurrent_state(self) -> bool:
        """Some layer keeps a recurrent (mamba / linear-attention / conv) state: a hybrid or an SSM."""
        return self.mamba is not None and (LayerKind.MAMBA in self.layer_kinds or self.parallel_mamba)

    @property
    def attention_free(self) -> bool:
        """Only recurrent (mamba) layers: vLLM's attention-free models (Mamba, Mamba-2, Falcon-Mamba)."""
        kinds = {k for k in self.layer_kinds if k is not LayerKind.NONE}
        return kinds == {LayerKind.MAMBA}

    @property
    def is_hybrid(self) -> bool:
        return self.parallel_mamba or len({k for k in self.layer_kinds if k is not LayerKind.NONE}) > 1

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES.get(self.dtype, 2)
