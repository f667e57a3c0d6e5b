"""GPU memory of speculative decoding (--speculative-config), pure.

What each method adds on every GPU (vLLM V1 spec_decode, 0.28 source):
- ngram / suffix: proposals come from the prompt on the CPU: no weights, no KV cache.
- mtp (DeepSeek-V3 / GLM-4.5 / Qwen3-Next / Qwen3.5 "*_mtp"): the checkpoint's next-token-prediction
  layers are loaded (vLLM skips them otherwise) and each gets a KV cache of the target's layer kind;
  embeddings / lm_head are shared with the target ("Detected MTP model. Sharing target model
  embedding weights with the draft model", llm_base_proposer.py).
- eagle / eagle3: a small draft head (one decoder layer for EAGLE-1/3 checkpoints) whose attention
  layer caches K/V like a target layer; EAGLE-3 adds its fc (3H -> H) and its own draft-vocab head.
- draft_model: a whole second model (its own weights split over the same TP ranks) whose attention
  layers join the same KV pool.
The draft's KV layers join the target's in one KV cache config (get_kv_cache_spec covers every
attention layer of the worker), so they raise the bytes per block and lower the token capacity.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vllmkit.arch.model import LayerKind, ModelArch

NO_WEIGHT_METHODS = ("ngram", "suffix", "ngram_gpu")
MTP_METHODS = ("mtp", "deepseek_mtp", "qwen3_next_mtp", "qwen3_5_mtp", "glm4_moe_mtp", "ernie_mtp",
               "longcat_flash_mtp", "mimo_mtp")
EAGLE_METHODS = ("eagle", "eagle3")


def draft_token_count(spec: dict | None) -> int:
    """The draft tokens a step proposes under a --speculative-config (its num_speculative_tokens, 1 where it
    gives none); 0 without speculative decoding."""
    return int(spec.get("num_speculative_tokens") or 1) if spec else 0


def is_mtp(method: str) -> bool:
    """An MTP method: every MTP model type vLLM knows ends in "_mtp" (MTPModelTypes in
    vllm/config/speculative.py)."""
    m = method.lower()
    return m in MTP_METHODS or m.endswith("_mtp")


@dataclass(frozen=True)
class SpeculativeTerms:
    method: str
    num_speculative_tokens: int
    weight_bytes: int  # per GPU
    kv_layers: list[LayerKind] = field(default_factory=list)  # extra attention layers in the KV pool
    note: str = ""
    # a separate draft model's own architecture: its layers join the KV pool with their own heads and head
    # size, not the target's (kv_layers then lists its layer kinds)
    kv_arch: ModelArch | None = None


def eagle_head_bytes(arch: ModelArch, *, eagle3: bool, draft_vocab: int = 32000, dtype_bytes: int = 2) -> int:
    """One target-shaped decoder layer + fc; EAGLE-3 fc takes three hidden states and has a
    draft-vocabulary lm_head (EAGLE-3 checkpoints: draft_vocab_size 32000)."""
    h = arch.hidden_size
    inter = arch.intermediate_size or 4 * h
    q = arch.num_attention_heads * arch.head_dim
    kv = 2 * arch.num_kv_heads * arch.head_dim
    layer = h * (q + kv) + q * h + 3 * h * inter
    fc = (3 if eagle3 else 2) * h * h
    head = draft_vocab * h if eagle3 else 0
    return (layer + fc + head) * dtype_bytes


def speculative_terms(
    arch: ModelArch,
    method: str,
    num_speculative_tokens: int,
    *,
    tp: int,
    mtp_layer_bytes: int = 0,
    mtp_layers: int = 0,
    draft_weight_bytes: int | None = None,
    draft_arch: ModelArch | None = None,
) -> SpeculativeTerms:
    """Per-GPU extras. mtp_layer_bytes: checkpoint bytes of the MTP layers (what the plan skips
    without speculative decoding); draft_weight_bytes / draft_arch: the draft or EAGLE checkpoint
    when it could be resolved (else the EAGLE head is sized from the target's shapes)."""
    m = method.lower()
    tp = max(tp, 1)
    attn_kind = LayerKind.MLA if arch.mla is not None else LayerKind.FULL
    if m in NO_WEIGHT_METHODS:
        return SpeculativeTerms(m, num_speculative_tokens, 0, [], f"{m}: proposals from the prompt, no GPU memory")
    if is_mtp(m):
        if mtp_layers <= 0:
            return SpeculativeTerms(m, num_speculative_tokens, 0, [], "the checkpoint declares no MTP layers")
        return SpeculativeTerms(m, num_speculative_tokens, mtp_layer_bytes // tp, [attn_kind] * mtp_layers,
                                f"{mtp_layers} MTP layer(s) loaded, each with a KV cache")
    if m in EAGLE_METHODS:
        if draft_weight_bytes is not None:
            layers = draft_arch.num_hidden_layers if draft_arch is not None else 1
            return SpeculativeTerms(m, num_speculative_tokens, draft_weight_bytes // tp, [LayerKind.FULL] * layers,
                                    "EAGLE head checkpoint")
        return SpeculativeTerms(m, num_speculative_tokens, eagle_head_bytes(arch, eagle3=m == "eagle3") // tp,
                                [LayerKind.FULL], "EAGLE head sized from the target's layer shapes (estimated)")
    # draft_model (or a method naming a separate model)
    if draft_weight_bytes is None or draft_arch is None:
        return SpeculativeTerms(m, num_speculative_tokens, 0, [], "draft model not resolved: not counted")
    kv_layers = [k for k in draft_arch.layer_kinds if k not in (LayerKind.NONE, LayerKind.MAMBA)]
    return SpeculativeTerms(m, num_speculative_tokens, draft_weight_bytes // tp, kv_layers,
                            f"draft model: {draft_arch.num_hidden_layers} layers", kv_arch=draft_arch)
