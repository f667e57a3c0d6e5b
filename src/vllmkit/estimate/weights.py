"""Weight bytes per rank, split the way vLLM shards a checkpoint over TP and PP.

The total comes from the repository (tensor bytes from safetensors headers or the index's
total_size, else weight-file sizes): that is what vLLM's "Model loading took X GiB" reports on one
GPU. Splitting: vocabulary-parallel embedding and lm_head are divided by TP and live on the first /
last PP stage; decoder layers are divided by TP and spread over stages by get_pp_indices;
K/V projections are replicated when the model has fewer KV heads than TP ranks; MLA down-projections,
sparse-attention indexers and MoE routers are whole on every rank (replicated_layer_bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from vllmkit.arch.model import LayerKind, ModelArch
from vllmkit.estimate.specs import pp_layer_ranges

# bytes per parameter for the non-quantized parts of a checkpoint
_EMBED_BYTES = 2


@dataclass(frozen=True)
class LoadGrowth:
    """Bytes one rank of each decoder layer gains at load beyond the checkpoint's, and why (for the weights
    note): vLLM's ROCm FP8 row padding (rocm_fp8_padding), the MLA matrices 0.7.1 - 0.7.3 absorb
    (mla_absorbed_bytes). The reason travels with the bytes, so a plan that has both names both."""

    per_layer: tuple[int, ...]
    reason: str


class WeightSplit(BaseModel):
    total_bytes: int
    embedding_bytes: int
    lm_head_bytes: int
    per_layer_embedding_bytes: int = 0  # Gemma-3n/4 embed_tokens_per_layer (vocabulary-parallel, first stage)
    per_layer_bytes: int
    skipped_bytes: int  # e.g. MTP layers vLLM does not load without speculative decoding
    per_stage_bytes: list[int]  # one rank of each PP stage (after TP split)
    per_stage_growth: list[list[tuple[str, int]]] = []  # of which bytes vLLM adds at load, by reason (LoadGrowth)

    @property
    def per_stage_padding(self) -> list[int]:
        """Bytes vLLM adds at load, all reasons together, one entry per stage."""
        return [sum(b for _, b in grown) for grown in self.per_stage_growth]

    @property
    def max_rank_bytes(self) -> int:
        return max(self.per_stage_bytes)


def routed_expert_params(arch: ModelArch) -> int:
    """Routed-expert parameters of the whole model from the config's shapes: MoE layers x experts x weight
    matrices per expert x hidden x the expert width (arch.model MoEFacts says which layers have experts)."""
    m = arch.moe
    if m is None or not m.num_experts:
        return 0
    width = m.moe_intermediate_size or arch.intermediate_size or 4 * arch.hidden_size
    return m.moe_layer_count(arch.num_hidden_layers) * m.num_experts * m.expert_matrices * arch.hidden_size * width


def estimate_param_bytes(arch: ModelArch) -> int:
    """Rough checkpoint size from the config, used only when the source has no sizes."""
    h, n = arch.hidden_size, arch.num_hidden_layers
    if arch.attention_free and arch.mamba is not None:
        return _ssm_only_bytes(arch)
    if arch.config_params:
        return arch.config_params * _EMBED_BYTES  # counted per layer by the reader (Nemotron-NAS), 16-bit
    hd = arch.head_dim
    attn = h * arch.num_attention_heads * hd * 2 + h * arch.num_kv_heads * hd * 2
    inter = arch.intermediate_size or 4 * h
    if arch.moe is not None:
        m = arch.moe
        moe_inter = m.moe_intermediate_size or inter
        # per layer on average: the experts' layers, and the plain MLPs of the others (arch.model MoEFacts)
        mlp = (routed_expert_params(arch) + m.moe_layer_count(n) * m.expert_matrices * h * moe_inter * m.num_shared_experts
               + m.dense_mlp_layer_count() * 3 * h * (m.dense_intermediate_size or inter)) / n
    else:
        mlp = 3 * h * inter
    embed = arch.vocab_size * h * (1 if arch.tie_word_embeddings else 2)
    bytes_per_param = 2
    if arch.quantization is not None and arch.quantization.bits:
        bytes_per_param = max(arch.quantization.bits, 4) / 8  # packed weights
    layer_bytes = int((attn + mlp) * bytes_per_param)
    return n * layer_bytes + embed * _EMBED_BYTES


def _ssm_only_bytes(arch: ModelArch) -> int:
    """Checkpoint bytes of a pure state-space model (no attention, no MLP: each block is one mixer and a norm),
    from the mixer shapes of transformers' MambaMixer / Mamba2Mixer (16-bit)."""
    m = arch.mamba
    assert m is not None
    h, n = arch.hidden_size, arch.num_hidden_layers
    inner, state, k = int(m.intermediate_size or 2 * h), int(m.state_size or 16), int(m.conv_kernel or 4)
    if m.variant == "mamba2":
        heads, groups = int(m.num_heads or 1), int(m.n_groups or 1)
        conv_dim = inner + 2 * groups * state
        # in_proj (z, x, B, C, dt), conv1d weight + bias, dt_bias / A_log / D, gated norm, out_proj
        mixer = h * (inner + conv_dim + heads) + conv_dim * (k + 1) + 3 * heads + inner + inner * h
    else:
        rank = -(-h // 16)  # time_step_rank "auto"
        # in_proj (x, z), conv1d weight + bias, x_proj (dt, B, C), dt_proj weight + bias, A_log, D, out_proj
        mixer = h * 2 * inner + inner * (k + 1) + inner * (rank + 2 * state) + rank * inner + inner \
            + inner * state + inner + inner * h
    embed = arch.vocab_size * h * (1 if arch.tie_word_embeddings else 2)
    return (n * (mixer + h) + h + embed) * 2


def layer_shares(arch: ModelArch, mtp_layers: int = 0) -> list[float]:
    """Relative size of each decoder layer (then each MTP layer, an MoE layer) from the config's shapes.
    Equal, except for an MoE model whose first `dense_layers` layers have a plain MLP and all others
    experts (DeepSeek-V2/V3/R1, Kimi-K2, GLM-4.5: first_k_dense_replace): a dense layer of DeepSeek-V3
    holds ~0.05 of an MoE layer's parameters, so a stage that starts the model holds ~3 layers' worth
    less than equal shares say (deepseek-ai/DeepSeek-V3#205: the first stage's rank of TP 8 x
    PP 4 loaded 16.96 GiB, equal shares give 20.6). Where experts alternate with dense layers the
    shares stay equal: every stage gets about as many of each kind."""
    n = arch.num_hidden_layers
    m = arch.moe
    if m is None or not m.num_experts or not m.dense_layers or m.moe_layers is not None or n <= m.dense_layers:
        return [1.0] * (n + mtp_layers)
    h = arch.hidden_size
    inter = arch.intermediate_size or 4 * h
    moe_inter = m.moe_intermediate_size or inter
    attn = layer_attention_params(arch)
    moe = (attn + m.num_experts * m.expert_matrices * h * moe_inter + h * m.num_experts
           + m.num_shared_experts * m.expert_matrices * h * (m.shared_expert_intermediate_size or moe_inter))
    dense = attn + 3 * h * (m.dense_intermediate_size or inter)
    return [dense / moe] * m.dense_layers + [1.0] * (n - m.dense_layers + mtp_layers)


def layer_attention_params(arch: ModelArch) -> int:
    """One decoder layer's attention projections: MLA's low-rank ones (DeepSeek-V2 shapes) or Q, K, V, O."""
    m = arch.mla
    if m is None:
        return attention_params(arch) // max(arch.num_hidden_layers, 1)
    h, heads = arch.hidden_size, arch.num_attention_heads
    nope, v, rope = m.qk_nope_head_dim or 0, m.v_head_dim or 0, m.qk_rope_head_dim
    q = (h * m.q_lora_rank + m.q_lora_rank * heads * (nope + rope)) if m.q_lora_rank else h * heads * (nope + rope)
    return q + h * (m.kv_lora_rank + rope) + m.kv_lora_rank * heads * (nope + v) + heads * v * h


def replicated_layer_bytes(arch: ModelArch) -> int:
    """Bytes of an average decoder layer that every TP rank holds whole (vLLM 0.32 builds them unsharded):
    - MLA's down-projections: fused_qkv_a_proj (q_lora_rank + kv_lora_rank + rope rows,
      MergedColumnParallelLinear(disable_tp=True)) or kv_a_proj_with_mqa (ReplicatedLinear)
      (model_executor/models/deepseek_v2.py);
    - DeepSeek sparse attention's indexer: wq_b (ReplicatedLinear, quantized like the checkpoint) and
      wk_weights_proj (head_dim + n_heads rows, disable_tp, unquantized: FP8 wk is upcast to BF16 at load);
    - every MoE layer's router (`gate = ReplicatedLinear(hidden, num_experts)`, 16-bit).
    Block-FP8 checkpoints (quant_method fp8) store the projections in one byte."""
    h, n = arch.hidden_size, max(arch.num_hidden_layers, 1)
    q = arch.quantization
    w = 1 if q is not None and q.method == "fp8" else _EMBED_BYTES
    total = 0.0
    m = arch.mla
    if m is not None:
        total += (m.kv_lora_rank + m.qk_rope_head_dim + (m.q_lora_rank or 0)) * h * w
        if m.index_head_dim:
            share = m.indexer_layer_count(n) / n
            heads = m.index_n_heads or 64
            wq_b = (m.q_lora_rank or h) * heads * m.index_head_dim * w
            total += share * (wq_b + h * (m.index_head_dim + heads) * _EMBED_BYTES)
    if arch.moe is not None and arch.moe.num_experts:
        moe_share = arch.moe.moe_layer_count(n) / n
        total += moe_share * arch.moe.num_experts * h * _EMBED_BYTES
    return int(total)


def split_weights(
    arch: ModelArch, total_bytes: int, *, tp: int, pp: int, mtp_layers: int = 0, mtp_own_embeddings: bool = True,
    growth: tuple[LoadGrowth, ...] = (),
) -> WeightSplit:
    """growth: what one rank of each decoder layer gains at load, by reason (LoadGrowth)."""
    embed = arch.vocab_size * arch.hidden_size * _EMBED_BYTES
    lm_head = 0 if arch.tie_word_embeddings else embed
    ple = arch.per_layer_embedding_params * _EMBED_BYTES
    if embed + lm_head + ple >= total_bytes:
        # the files are smaller than the config's embedding shapes (e.g. a stub repository):
        # no meaningful split, spread everything evenly
        embed = lm_head = ple = 0
    n = arch.num_hidden_layers
    # an MTP (next-token-prediction) layer carries its own embedding, head and eh_proj (2h -> h)
    # (DeepSeek-V3 / GLM-4.5 style); Qwen3-Next style MTP shares the main model's embeddings
    mtp_extra = mtp_layers * 2 * arch.hidden_size * arch.hidden_size * _EMBED_BYTES
    if mtp_own_embeddings:
        mtp_extra += mtp_layers * (embed + (lm_head or embed))
    body = max(total_bytes - embed - lm_head - ple - mtp_extra, 0)
    # Gemma-4 attention_k_eq_v: full-attention layers ship k_proj only, vLLM allocates the V slot of
    # qkv_proj too and loads K into it (gemma4.py _gemma4_layer_weights_mapper)
    v_slot = k_eq_v_slot_bytes(arch)
    body += v_slot
    per_layer = body // max(n + mtp_layers, 1)
    # each layer's share of the body: leading dense layers (DeepSeek first_k_dense_replace) hold a
    # fraction of an MoE layer's bytes, which decides what each pipeline stage holds
    shares = layer_shares(arch, mtp_layers)
    uneven = len(set(shares)) > 1
    share_total = sum(shares)

    def share_of(layers: range | list[int]) -> int:  # bytes of these layers (all ranks together)
        if not uneven:
            return body * len(layers) // max(n + mtp_layers, 1)
        return int(body * sum(shares[j] for j in layers) / share_total)

    skipped = share_of(range(n, n + mtp_layers)) + mtp_extra
    # K/V projections replicated on every rank when kv heads < TP (vLLM QKVParallelLinear)
    kv_proj = 2 * arch.hidden_size * arch.num_kv_heads * arch.head_dim * _EMBED_BYTES
    replicated_extra = 0
    if arch.mla is None and arch.num_kv_heads < tp:
        per_rank_kv = 2 * arch.hidden_size * arch.head_dim * _EMBED_BYTES  # one head per rank
        replicated_extra = max(per_rank_kv - kv_proj // tp, 0)
    if tp > 1:
        whole = min(replicated_layer_bytes(arch), per_layer)
        replicated_extra += whole - whole // tp
    stages = pp_layer_ranges(n, pp)
    rope = rope_cache_bytes(arch)
    per_stage: list[int] = []
    per_stage_pad: list[int] = []
    per_stage_growth: list[list[tuple[str, int]]] = []
    for i, layers in enumerate(stages):
        grown = [(g.reason, sum(g.per_layer[j] for j in layers)) for g in growth]
        pad = sum(b for _, b in grown)
        per_stage_pad.append(pad)
        per_stage_growth.append(grown)
        b = share_of(layers) // tp + len(layers) * replicated_extra + pad
        if i == 0:
            b += (embed + ple) // tp
        if i == len(stages) - 1:
            # a tied lm_head still needs the embedding matrix on the last stage under PP
            b += (lm_head if lm_head else (embed if pp > 1 else 0)) // tp
        per_stage.append(b + rope)
    return WeightSplit(
        total_bytes=total_bytes - skipped + tp * sum(per_stage_pad) + v_slot + tp * pp * rope,
        embedding_bytes=embed,
        lm_head_bytes=lm_head,
        per_layer_embedding_bytes=ple,
        per_layer_bytes=per_layer,
        skipped_bytes=skipped,
        per_stage_bytes=per_stage,
        per_stage_growth=per_stage_growth,
    )


def rope_cache_bytes(arch: ModelArch) -> int:
    """The RoPE cos/sin caches one rank holds after loading (arch/reader.py _rope_cache_elements), in the
    serving dtype (vllm rotary_embedding/base.py: cache.to(dtype), the model's default dtype). Not in the
    checkpoint, but in vLLM's "Model loading took" figure."""
    return arch.rope_cache_elements * arch.dtype_bytes


def k_eq_v_slot_bytes(arch: ModelArch) -> int:
    """Bytes vLLM allocates beyond the checkpoint for Gemma-4's attention_k_eq_v layers: the V rows of
    each full-attention layer that owns its cache (hidden x KV heads x head size, 16-bit)."""
    if not arch.k_eq_v:
        return 0
    heads = arch.full_num_kv_heads or arch.num_kv_heads
    head = arch.full_head_dim or arch.head_dim
    layers = sum(1 for i, k in enumerate(arch.layer_kinds) if k is LayerKind.FULL and arch.owns_kv_cache(i))
    return layers * arch.hidden_size * heads * head * _EMBED_BYTES


def rocm_fp8_padding(arch: ModelArch, tp: int) -> list[int]:
    """Bytes one TP rank of each decoder layer gains when vLLM pads its FP8 linear weights on ROCm.

    `_maybe_pad_fp8_weight`: a weight [N, K] (1 byte per element) whose row length K is a multiple of
    512 bytes becomes F.pad(weight, (0, 256))[..., :-256] - the same values in a buffer of N x (K + 256)
    bytes, "so that tensors sit far enough apart in memory". Each padded weight grows by N x 256 bytes
    per rank: N is the rank's output rows (column-parallel layers split N by TP, row-parallel layers
    split K, so their K/TP decides). Counted here: attention (QKV with Qwen3-Next/3.5's output gate
    doubling Q, O), MLA projections, gated-delta-net in/out projections and the dense / shared-expert
    MLPs. Routed experts go through the fused-MoE path, which does not pad; mamba-1/2 mixers are not
    counted (no FP8 checkpoint of them seen)."""
    h = arch.hidden_size

    def pad(rows: float, k: float) -> int:
        k_int = int(k)
        return int(rows) * 256 if rows >= 1 and k_int > 0 and k_int == k and k_int % 512 == 0 else 0

    def attention() -> int:
        if arch.mla is not None:
            m = arch.mla
            nope = m.qk_nope_head_dim or 0
            v = m.v_head_dim or 0
            heads = arch.num_attention_heads / tp
            total = pad(m.kv_lora_rank + m.qk_rope_head_dim, h)  # kv_a_proj_with_mqa (replicated)
            if m.q_lora_rank:
                total += pad(m.q_lora_rank, h) + pad(heads * (nope + m.qk_rope_head_dim), m.q_lora_rank)
            else:
                total += pad(heads * (nope + m.qk_rope_head_dim), h)
            total += pad(heads * (nope + v), m.kv_lora_rank)  # kv_b_proj
            return total + pad(h, arch.num_attention_heads * v / tp)  # o_proj
        hd = arch.layer_head_dim or arch.head_dim
        q_rows = arch.num_attention_heads * hd * (2 if arch.attn_output_gate else 1) / tp
        kv_rows = 2 * hd * max(arch.num_kv_heads / tp, 1)  # replicated when kv heads < TP
        return pad(q_rows + kv_rows, h) + pad(h, arch.num_attention_heads * hd / tp)

    def gdn() -> int:
        m = arch.mamba
        if m is None or not (m.num_k_heads and m.num_v_heads and m.k_head_dim and m.v_head_dim):
            return 0
        key, value = m.num_k_heads * m.k_head_dim, m.num_v_heads * m.v_head_dim
        # in_proj_qkvz (q, k, v, z) and in_proj_ba (b, a: one row per value head each), out_proj
        return pad((2 * key + 2 * value) / tp, h) + pad(2 * m.num_v_heads / tp, h) + pad(h, value / tp)

    def mlp(inter: int) -> int:
        return pad(2 * inter / tp, h) + pad(h, inter / tp) if inter else 0

    moe = arch.moe
    dense_inter = arch.intermediate_size or 0
    shared_inter = 0
    if moe is not None and moe.num_shared_experts:
        shared_inter = (moe.shared_expert_intermediate_size
                        or (moe.moe_intermediate_size or dense_inter) * moe.num_shared_experts)
    out = []
    for i, kind in enumerate(arch.layer_kinds):
        if kind in (LayerKind.FULL, LayerKind.SLIDING, LayerKind.CHUNKED, LayerKind.MLA):
            mixer = attention()
        elif kind == LayerKind.MAMBA and arch.mamba is not None and arch.mamba.variant == "gdn":
            mixer = gdn()
        else:
            mixer = 0
        if moe is None or i < moe.dense_layers:
            ffn = mlp(dense_inter)
        else:
            ffn = mlp(shared_inter)
        out.append(mixer + ffn)
    return out


def mla_absorbed_bytes(arch: ModelArch, tp: int, *, fp8: bool, act_bytes: int = 2) -> list[int]:
    """Bytes one TP rank of each MLA layer gains after loading in vLLM 0.7.1 - 0.7.3 (engine/versions.py
    mla_matrix_absorption), from MLACommonImpl.process_weights_after_loading (attention/backends/mla/utils.py):
    W_QR, the rope part of q(_b)_proj copied contiguous in the activation dtype (q_in x heads x rope);
    W_Q_UK = W_Q absorbed with W_UK (q_in x heads x kv_lora_rank) and W_UV_O = W_UV absorbed with o_proj
    (heads x kv_lora_rank x hidden), requantized to FP8 (1 byte) for FP8 weights, else in the activation dtype;
    and for FP8 weights the dequantized kv_b_proj (kv_lora_rank x heads x (nope + v)) that W_UK / W_UV keep
    alive as views (a 16-bit kv_b_proj is viewed in place). q_in is q_lora_rank, or the hidden size without
    one. DeepSeek-R1 at TP 8: 78.6 MB a layer, 4.47 GiB over 61 layers - the 4.49 GiB its 0.7.3 log's
    "Loading model weights took 83.88 GB" is above the checkpoint's share (collected-startup-logs-23)."""
    m = arch.mla
    if m is None:
        return [0] * len(arch.layer_kinds)
    heads = max(arch.num_attention_heads // tp, 1)
    nope, v, rope, lora = m.qk_nope_head_dim or 0, m.v_head_dim or 0, m.qk_rope_head_dim, m.kv_lora_rank
    q_in = m.q_lora_rank or arch.hidden_size
    absorbed = 1 if fp8 else act_bytes
    per_layer = (q_in * heads * rope * act_bytes
                 + q_in * heads * lora * absorbed
                 + heads * lora * arch.hidden_size * absorbed
                 + (lora * heads * (nope + v) * act_bytes if fp8 else 0))
    return [per_layer if kind is LayerKind.MLA else 0 for kind in arch.layer_kinds]


def attention_params(arch: ModelArch) -> int:
    """Q, K, V and O projection parameters of all decoder layers (grouped-query attention shapes)."""
    return arch.num_hidden_layers * 2 * arch.hidden_size * arch.head_dim * (arch.num_attention_heads
                                                                            + arch.num_kv_heads)


def expert_fraction(arch: ModelArch) -> float:
    """Share of the checkpoint held by routed experts (from the config's shapes): what the fused-MoE layers
    spread over TP x DP ranks under data parallelism, where the rest is replicated per DP rank."""
    if arch.moe is None or not arch.moe.num_experts:
        return 0.0
    h = arch.hidden_size
    moe_inter = arch.moe.moe_intermediate_size or arch.intermediate_size or 4 * h
    moe_layers = arch.moe.moe_layer_count(arch.num_hidden_layers)
    experts = routed_expert_params(arch)
    inter = arch.intermediate_size or 4 * h
    attn = attention_params(arch)
    shared = (moe_layers * arch.moe.expert_matrices * h * (arch.moe.shared_expert_intermediate_size or moe_inter)
              * arch.moe.num_shared_experts)
    dense = arch.moe.dense_mlp_layer_count() * 3 * h * (arch.moe.dense_intermediate_size or inter)
    embed = arch.vocab_size * h * (1 if arch.tie_word_embeddings else 2)
    total = experts + attn + shared + dense + embed
    return experts / total if total else 0.0


def data_parallel_total(arch: ModelArch, total_bytes: int, *, dp: int) -> int:
    """The checkpoint bytes one DP replica's TP group effectively holds per rank x TP: the fused-MoE layers of an
    MoE run over all TP x DP ranks, so each rank keeps 1/(TP x DP) of the routed experts and a replica's TP group
    the non-expert part plus 1/DP of the experts. Without --enable-expert-parallel vLLM flattens tensor
    parallelism across the DP ranks (every rank holds a 1/(TP x DP) slice of each expert: 0.8.5
    fused_moe/layer.py `self.tp_size = self.tp_size * self.dp_size`; 0.32 fused_moe/config.py
    FusedMoEParallelConfig.make / flatten_tp_across_dp_and_pcp, "the tensors are sharded across 4 devices" at
    TP = DP = 2); with it each rank keeps num_experts / (TP x DP) whole experts (ep_size = TP x DP). The same
    bytes either way."""
    if dp <= 1:
        return total_bytes
    f = expert_fraction(arch)
    return int(total_bytes * (1 - f) + total_bytes * f / dp)


def mxfp4_load_factor(version: tuple[int, int, int], compute_capability: float | None) -> float:
    """Loaded / checkpoint bytes of MXFP4 (gpt-oss) weights on GPUs without native FP4 (Hopper,
    Ampere: the Marlin / Triton MoE paths repack the experts and keep padded scales), by release:
    - 0.10.x on H100: "Model loading took 65.97 GiB" for 60.77 GiB of gpt-oss-120b files (vllm#23278);
    - 0.14.1 on H100: 64.38 GiB for the same files (vllm#33155);
    - 0.19.0 on A100: 13.72 GiB for 12.82 GiB of gpt-oss-20b (myoceane.fr public log).
    Other GPUs and releases fall back to the middle value (estimated)."""
    if compute_capability is not None and 9.0 <= compute_capability < 10.0:
        return 65.97 / 60.77 if version < (0, 14, 0) else 64.38 / 60.77
    if compute_capability is not None and 8.0 <= compute_capability < 9.0 and version >= (0, 14, 0):
        return 13.72 / 12.82
    return 1.07
