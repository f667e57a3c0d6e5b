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

--max-cpu-loras sizes a host-memory cache only (no GPU term). MoE expert LoRA (newer releases) is
not counted: the term below covers attention and dense MLP layers.
"""

from __future__ import annotations

from vllmkit.arch.model import LayerKind, ModelArch

DEFAULT_MAX_LORAS = 1  # vLLM LoRAConfig defaults
DEFAULT_MAX_LORA_RANK = 16


def lora_bytes_per_adapter_rank(arch: ModelArch, tp: int) -> int:
    """Elements of one rank-1 slice of one adapter over all layers of one TP rank."""
    tp = max(tp, 1)
    h = arch.hidden_size
    q = arch.num_attention_heads * arch.head_dim
    kv = 2 * arch.num_kv_heads * arch.head_dim
    attn_layers = sum(1 for k in arch.layer_kinds if k in (LayerKind.FULL, LayerKind.SLIDING, LayerKind.CHUNKED,
                                                            LayerKind.MLA))
    inter = arch.intermediate_size or 4 * h
    dense_mlp_layers = arch.num_hidden_layers if arch.moe is None else arch.moe.dense_layers
    qkv = 3 * h + (q + kv) // tp
    o = q // tp + h
    gate_up = 2 * h + 2 * inter // tp
    down = inter // tp + h
    return attn_layers * (qkv + o) + dense_mlp_layers * (gate_up + down)


def lora_weight_bytes(arch: ModelArch, *, tp: int, max_loras: int = DEFAULT_MAX_LORAS,
                      max_lora_rank: int = DEFAULT_MAX_LORA_RANK, dtype_bytes: int = 2) -> int:
    """Bytes of the preallocated LoRA stacks on one GPU."""
    return max(max_loras, 0) * max(max_lora_rank, 0) * lora_bytes_per_adapter_rank(arch, tp) * dtype_bytes
