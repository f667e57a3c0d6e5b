"""GPU memory of --enable-lora (pure).

vLLM preallocates, at startup, LoRA stacks for `max_loras` adapters of rank `max_lora_rank` on every
LoRA-capable linear layer (vllm/lora/layers/*: create_lora_weights), in the LoRA dtype (auto = the
model dtype). The stacks exist before the profile run, so they reduce the KV budget like weights do.
With tensor parallelism the column-parallel layers (qkv, gate_up) keep A whole and split B by rank;
the row-parallel layers (o_proj, down_proj) split A and keep B whole (fully_sharded_loras off):

  qkv      A: 3 x (r x H)               B: (q + k + v) / tp x r
  o_proj   A: r x (heads*head_dim) / tp  B: H x r
  gate_up  A: 2 x (r x H)               B: 2 x I / tp x r
  down     A: r x I / tp                B: H x r

--max-cpu-loras sizes a host-memory cache only (no GPU term).

Routed experts (FusedMoEWithLoRA, vllm/lora/layers/fused_moe.py in 0.32; `moe=True`): per MoE layer, adapter
and local expert, gate and up A [r, H] each, their B [I/tp, r] each, down's A [r, I/tp] and B [H, r]
(gated experts, fully_sharded_loras and enable_moe_shared_loras off): r x (3H + 3I/tp) elements.
"""

from __future__ import annotations

from vllmkit.arch.model import LayerKind, ModelArch

DEFAULT_MAX_LORAS = 1  # vLLM LoRAConfig defaults
DEFAULT_MAX_LORA_RANK = 16


def lora_bytes_per_adapter_rank(arch: ModelArch, tp: int, *, moe: bool = False) -> int:
    """Elements of one rank-1 slice of one adapter over all layers of one TP rank (moe: with the routed
    experts' stacks)."""
    tp = max(tp, 1)
    h = arch.hidden_size
    q = arch.num_attention_heads * arch.head_dim
    kv = 2 * arch.num_kv_heads * arch.head_dim
    attn_layers = sum(1 for k in arch.layer_kinds if k in (LayerKind.FULL, LayerKind.SLIDING, LayerKind.CHUNKED,
                                                            LayerKind.MLA))
    inter = arch.intermediate_size or 4 * h
    dense_mlp_layers = arch.num_hidden_layers if arch.moe is None else arch.moe.dense_mlp_layer_count()
    qkv = 3 * h + (q + kv) // tp
    o = q // tp + h
    mlp_inter = (arch.moe.dense_intermediate_size if arch.moe is not None else None) or inter
    gate_up = 2 * h + 2 * mlp_inter // tp
    down = mlp_inter // tp + h
    total = attn_layers * (qkv + o) + dense_mlp_layers * (gate_up + down)
    if moe and arch.moe is not None and arch.moe.num_experts:
        expert_inter = (arch.moe.moe_intermediate_size or inter) // tp
        moe_layers = arch.moe.moe_layer_count(arch.num_hidden_layers)
        m = arch.moe.expert_matrices
        total += moe_layers * arch.moe.num_experts * (m * h + m * expert_inter)
    return total


def lora_weight_bytes(arch: ModelArch, *, tp: int, max_loras: int = DEFAULT_MAX_LORAS,
                      max_lora_rank: int = DEFAULT_MAX_LORA_RANK, dtype_bytes: int = 2, moe: bool = False) -> int:
    """Bytes of the preallocated LoRA stacks on one GPU (moe: the release builds expert LoRA stacks)."""
    return (max(max_loras, 0) * max(max_lora_rank, 0) * lora_bytes_per_adapter_rank(arch, tp, moe=moe)
            * dtype_bytes)
