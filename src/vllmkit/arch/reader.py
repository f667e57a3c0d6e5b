"""config.json dict -> ModelArch, following the rules vLLM applies when it reads a config.

Sources (vllm 0.32.0 wheel): vllm/transformers_utils/model_arch_config_convertor.py (head size,
kv heads, max length keys), vllm/config/model.py::_get_and_verify_max_len (rope scaling),
vllm/model_executor/layers/attention/attention.py (per-layer / model-level sliding window),
vllm/model_executor/models/*.py (which layers are sliding, chunked, mamba) and
vllm/model_executor/layers/mamba/mamba_utils.py (state shapes).
"""

from __future__ import annotations

import math
from typing import Any

from vllmkit.arch.known import VLLM_NATIVE_ARCHITECTURES, VLLM_REGISTRY_VERSION
from vllmkit.arch.model import (
    DTYPE_BYTES,
    LayerKind,
    MambaFacts,
    MLAFacts,
    ModelArch,
    MoEFacts,
    QuantFacts,
    VisionFacts,
)
from vllmkit.errors import ConfigError

# model types whose attention vLLM caches as an MLA latent when the config has kv_lora_rank
# (vllm 0.32 transformers_utils/model_arch_config_convertor.py is_deepseek_mla; GLM-4.7-Flash's glm4_moe_lite
# since the model arrived, 0.15)
MLA_MODEL_TYPES = {
    "axk1",
    "deepseek_v2",
    "deepseek_v3",
    "deepseek_v32",
    "deepseek_mtp",
    "dots3_note",
    "glm4_moe_lite",
    "glm4_moe_lite_mtp",
    "glm5_next",
    "glm5_next_text",
    "k3_dspark",
    "kimi_k2",
    "kimi_linear",
    "longcat_flash",
    "pangu_ultra_moe",
    "pangu_ultra_moe_mtp",
    "glm_moe_dsa",
    "mistral_large_3",
}

# transformers class defaults for fields that published configs of these families omit
# (transformers 5.x configuration_gemma3.py / configuration_gemma2.py); vLLM sees the defaults.
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {
        "vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
        "max_position_embeddings": 131_072, "sliding_window": 4096, "tie_word_embeddings": True,
    },
    # transformers 5.x configuration_gemma4.py Gemma4TextConfig (global_head_dim is popped in __post_init__
    # with default 512; hidden_size_per_layer_input > 0 builds the per-layer embedding table)
    "gemma4_text": {
        "vocab_size": 262_144, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 30,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "global_head_dim": 512,
        "max_position_embeddings": 131_072, "sliding_window": 512, "tie_word_embeddings": True,
        "hidden_size_per_layer_input": 256, "vocab_size_per_layer_input": 262_144,
    },
    "gemma2": {
        "vocab_size": 256_000, "head_dim": 256, "max_position_embeddings": 8192, "sliding_window": 4096,
        "tie_word_embeddings": True,
    },
}

# nested configs that hold the language model of a multimodal / wrapper checkpoint
_TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config", "thinker_config")

# keys vLLM reads for the native context, smallest wins (derive_max_model_len_and_key)
MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)

# Bounds on a config's numbers. A hostile or broken config.json must not make the planner run
# for ever or allocate without end (per-layer lists and loops scale with the layer count), so every
# size is checked against a documented limit (docs/limits.md), set far above any published model:
# the largest values in the bundled catalog are 126 layers (Llama-3.1-405B), hidden 16,384 and
# intermediate 53,248 (Llama-3.1-405B), 128 attention heads (Llama-3.1-405B, DeepSeek-V3),
# head_dim 256 (Gemma), vocabulary 262,208 (Gemma-3), 512 experts (Qwen3-Next) and a native
# context of 10,485,760 tokens (Llama-4-Scout). Each limit is 16-64x those.
MAX_LAYERS = 4096
CONFIG_LIMITS: dict[str, int] = {
    "num_hidden_layers": MAX_LAYERS,
    "hidden_size": 1 << 18,  # 262,144
    "num_attention_heads": 4096,
    "num_key_value_heads": 4096,
    "head_dim": 8192,
    "vocab_size": 1 << 24,  # 16,777,216
    "intermediate_size": 1 << 22,
    "max_position_embeddings": 1 << 28,  # 268,435,456 tokens
    "num_experts": 1 << 16,
    "sliding_window": 1 << 28,
    "attention_chunk_size": 1 << 28,
    "kv_lora_rank": 1 << 16,
    "qk_rope_head_dim": 8192,
    "mamba": 1 << 20,  # any recurrent-state dimension (heads, head dim, state size, groups, kernel)
}


def _check_limit(value: int | None, field: str, where: str, *, limit_key: str | None = None,
                 minimum: int = 1) -> None:
    """ConfigError naming the config field when a size is below `minimum` or above its limit."""
    if value is None:
        return
    limit = CONFIG_LIMITS[limit_key or field]
    if value < minimum or value > limit:
        raise ConfigError(
            f"config.json{where} field `{field}` = {value} is outside what a model can have "
            f"({minimum} to {limit:,})",
            "fix or re-download config.json (vllmkit's limits are listed in docs/limits.md)",
            code="config-out-of-bounds",
        )


# rope types whose max_position_embeddings is already the scaled length (>= 0.30)
_ROPE_NOT_SCALED = {"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"}


def _int(cfg: dict[str, Any], key: str, *, where: str, required: bool = True) -> int | None:
    value = cfg.get(key)
    if value is None:
        if required:
            raise ConfigError(
                f"config.json{where} has no `{key}`",
                f"this field is needed to size the model; check that the repository's config.json is complete "
                f"(or report the architecture if it names `{key}` differently)",
                code="config-missing-field",
            )
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0
            or (isinstance(value, float) and not value.is_integer())):
        raise ConfigError(
            f"config.json{where} field `{key}` is not a non-negative integer: {str(value)[:40]}",
            "fix or re-download config.json",
            code="config-bad-field",
        )
    return int(value)


# optional size fields: when present they must be what vLLM reads (an integer, or per-layer integers as
# Gemma-3n's intermediate_size); a string or a negative count makes vLLM fail while building the model
_OPTIONAL_INT_FIELDS = ("head_dim", "num_key_value_heads", "intermediate_size", "moe_intermediate_size",
                        "num_experts", "n_routed_experts", "num_local_experts", "num_experts_per_tok")


_MAX_OPTIONAL_INT = 1 << 24  # above every real model's sizes (the largest FFN widths are ~10^5)


def _check_optional_fields(cfg: dict[str, Any], where: str) -> None:
    for key in _OPTIONAL_INT_FIELDS:
        value = cfg.get(key)
        if value is None:
            continue
        items = value if (isinstance(value, list) and key == "intermediate_size") else [value]
        for item in items:
            if _int({key: item}, key, where=where) > _MAX_OPTIONAL_INT:  # type: ignore[operator]
                raise ConfigError(f"config.json{where} field `{key}` is out of bounds: {str(item)[:40]}",
                                  "fix or re-download config.json", code="config-out-of-bounds")
        if key in ("head_dim", "num_key_value_heads") and 0 in items:
            raise ConfigError(f"config.json{where} field `{key}` is 0", "fix or re-download config.json",
                              code="config-bad-field")
    mpe = cfg.get("max_position_embeddings")
    if mpe is not None and (isinstance(mpe, bool) or not isinstance(mpe, (int, float)) or mpe <= 0):
        raise ConfigError(f"config.json{where} field `max_position_embeddings` is not a positive number: "
                          f"{str(mpe)[:40]}", "fix or re-download config.json", code="config-bad-field")


def text_config(config: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The language-model part of a config (vLLM hf_text_config) and where it was found."""
    for key in _TEXT_CONFIG_KEYS:
        nested = config.get(key)
        if isinstance(nested, dict) and (
            "num_hidden_layers" in nested or "hidden_size" in nested or "num_layers" in nested
        ):
            merged = dict(nested)
            # some multimodal checkpoints keep dtype / quantization on the top level only
            for inherited in ("torch_dtype", "dtype", "quantization_config", "tie_word_embeddings"):
                if inherited not in merged and inherited in config:
                    merged[inherited] = config[inherited]
            return merged, f".{key}"
    return config, ""


def _dtype(cfg: dict[str, Any], top: dict[str, Any]) -> tuple[str, list[str]]:
    warnings: list[str] = []
    raw = cfg.get("dtype") or cfg.get("torch_dtype") or top.get("dtype") or top.get("torch_dtype")
    if raw is None:
        warnings.append("config.json declares no dtype; assuming bfloat16")
        return "bfloat16", warnings
    name = str(raw).replace("torch.", "")
    if name in ("float32", "float"):
        # vLLM "auto" serves float32 checkpoints in 16-bit (model.py _get_and_verify_dtype)
        warnings.append("checkpoint dtype is float32; vLLM --dtype auto serves it as bfloat16")
        return "bfloat16", warnings
    if name not in DTYPE_BYTES:
        warnings.append(f"unknown dtype {raw!r}; assuming bfloat16")
        return "bfloat16", warnings
    return name, warnings


def _quantization(cfg: dict[str, Any]) -> QuantFacts | None:
    q = cfg.get("quantization_config")
    if not isinstance(q, dict):
        return None
    raw_method = q.get("quant_method") or q.get("quantization")
    producer = q.get("producer") if isinstance(q.get("producer"), dict) else {}
    if isinstance(raw_method, dict) or (not q.get("quant_method") and producer.get("name") == "modelopt"):
        # a ModelOpt hf_quant_config.json: vLLM sets quant_method from quantization.quant_algo
        # (model_arch_config_convertor._normalize_quantization_config: FP8* -> modelopt, NVFP4 -> modelopt_fp4)
        algo = str((q.get("quantization") or {}).get("quant_algo") or "").upper()
        raw_method = "modelopt_fp4" if algo == "NVFP4" else "modelopt"
    method = str(raw_method or "unknown").lower()
    bits = q.get("bits") or q.get("w_bit") or q.get("weight_bits")
    group = q.get("group_size") or q.get("q_group_size")
    kv_scheme = None
    kvs = q.get("kv_cache_scheme")
    if isinstance(kvs, dict) and kvs:
        kv_scheme = "fp8" if kvs.get("type") in (None, "float") and kvs.get("num_bits", 8) == 8 else str(kvs)
    # modelopt: flat (config.json since ModelOpt 0.31) or nested under "quantization" (hf_quant_config.json),
    # as vLLM's get_kv_cache_quant_algo_string reads it (quant_cfg.get("quantization", quant_cfg))
    inner = q.get("quantization") if isinstance(q.get("quantization"), dict) else q
    if inner.get("kv_cache_quant_algo") in ("FP8", "fp8") or q.get("kv_cache_quant_algo") in ("FP8", "fp8"):
        kv_scheme = "fp8"
    weight_format = q.get("format") or q.get("fmt") or q.get("version")
    if method == "compressed-tensors":
        groups = q.get("config_groups") or {}
        for grp in groups.values() if isinstance(groups, dict) else []:
            weights = grp.get("weights") if isinstance(grp, dict) else None
            if isinstance(weights, dict):
                bits = bits or weights.get("num_bits")
                group = group or weights.get("group_size")
                weight_format = weight_format or weights.get("type")
                break
    if method == "quark":
        # AMD Quark: global_quant_config.weight.dtype ("fp8_e4m3", "fp4", "int4", ...)
        glob = q.get("global_quant_config") if isinstance(q.get("global_quant_config"), dict) else {}
        wdt = str((glob.get("weight") or {}).get("dtype") or "") if isinstance(glob.get("weight"), dict) else ""
        if wdt.startswith("fp8"):
            bits, weight_format = bits or 8, weight_format or "float"
        elif wdt in ("fp4", "mxfp4"):
            bits, weight_format = bits or 4, weight_format or "float"
        elif wdt.lstrip("u").startswith("int"):
            bits = bits or int("".join(ch for ch in wdt if ch.isdigit()) or 4)
    if method == "fp8":
        bits = bits or 8
    if method == "mxfp4":
        bits = bits or 4
    return QuantFacts(
        method=method,
        bits=int(bits) if isinstance(bits, (int, float)) else None,
        group_size=int(group) if isinstance(group, (int, float)) else None,
        kv_cache_scheme=kv_scheme,
        weight_format=str(weight_format) if weight_format is not None else None,
        raw=q,
    )


def _is_mla(cfg: dict[str, Any], model_type: str) -> bool:
    return cfg.get("kv_lora_rank") is not None and (
        model_type in MLA_MODEL_TYPES or model_type.startswith("deepseek")
    )


def _head_dim(cfg: dict[str, Any], where: str, mla: MLAFacts | None) -> int:
    if mla is not None:
        return mla.kv_lora_rank + mla.qk_rope_head_dim
    head_dim = cfg.get("head_dim")
    if isinstance(head_dim, int) and head_dim > 0:
        return head_dim
    if isinstance(cfg.get("hidden_size_per_head"), int):
        return int(cfg["hidden_size_per_head"])
    heads = _int(cfg, "num_attention_heads", where=where) or 0
    hidden = _int(cfg, "hidden_size", where=where) or 0
    if heads == 0:
        raise ConfigError(
            f"config.json{where} has num_attention_heads = 0",
            "a decoder model needs attention heads; check the config",
            code="config-bad-field",
        )
    return hidden // heads


def _falcon_kv_heads(cfg: dict[str, Any], model_type: str, num_heads: int) -> int | None:
    """The KV heads vllm falcon.py FalconAttention builds, or None for other families: new_decoder_architecture (Falcon-
    40B/180B) num_kv_heads, else multi_query (Falcon-7B) one, else every head. Both transformers' FalconConfig and
    vLLM's RWConfig (the RefinedWeb / RefinedWebModel configs) default multi_query to True; RWConfig turns the new
    decoder on for hidden_size 8192 (falcon-40b) and reads n_head_kv (default 1), FalconConfig num_kv_heads (default
    every head)."""
    if model_type not in ("falcon", "RefinedWeb", "RefinedWebModel"):
        return None
    rw = model_type != "falcon"
    if cfg.get("new_decoder_architecture") or (rw and cfg.get("hidden_size") == 8192):
        kv = cfg.get("n_head_kv") if rw else cfg.get("num_kv_heads", cfg.get("n_head_kv"))
        if isinstance(kv, int) and not isinstance(kv, bool) and kv > 0:
            return kv
        return 1 if rw else num_heads
    return 1 if cfg.get("multi_query", True) else num_heads


def _kv_heads(cfg: dict[str, Any], num_heads: int, model_type: str = "") -> int:
    falcon = _falcon_kv_heads(cfg, model_type, num_heads)
    if falcon is not None:
        return falcon
    # vLLM get_total_num_kv_heads: first present of these, else num_attention_heads
    for key in ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num", "num_attention_groups"):
        value = cfg.get(key)
        if isinstance(value, int) and value > 0:
            return value
    attn_cfg = cfg.get("attn_config")
    if isinstance(attn_cfg, dict) and isinstance(attn_cfg.get("kv_n_heads"), int):
        return int(attn_cfg["kv_n_heads"])  # DBRX
    return num_heads


def _nemotron_pattern(pattern: str, n_layers: int) -> list[LayerKind]:
    # Nemotron-H hybrid_override_pattern: M = mamba2, * = attention, - = MLP, E = MoE
    kinds = {"M": LayerKind.MAMBA, "*": LayerKind.FULL, "-": LayerKind.NONE, "E": LayerKind.NONE}
    out = [kinds.get(ch, LayerKind.NONE) for ch in pattern[:n_layers]]
    return out + [LayerKind.NONE] * (n_layers - len(out))


# hybrid families whose config may omit layer_types: transformers fills it from
# full_attention_interval (Qwen3NextConfig / Qwen3_5TextConfig / Qwen3_5MoeTextConfig, default 4):
# layer i is full attention when (i + 1) % interval == 0, else linear attention (gated delta net)
_INTERVAL_FAMILIES = ("qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text")


def derive_layer_pattern(cfg: dict[str, Any], model_type: str, n_layers: int) -> list[LayerKind] | None:
    """Layer kinds of a hybrid (attention + recurrent) config that carries no explicit layer_types,
    derived the way transformers' config classes (and so vLLM, which reads the resolved config) do.
    Returns FULL for attention layers (the caller turns it into MLA where needed), MAMBA for
    recurrent ones, NONE for layers without a cache; None when the config has no such rule."""
    interval = cfg.get("full_attention_interval")
    if interval is None and model_type in _INTERVAL_FAMILIES:
        interval = 4
    if isinstance(interval, int) and interval > 0:
        return [LayerKind.FULL if (i + 1) % interval == 0 else LayerKind.MAMBA for i in range(n_layers)]
    blocks = cfg.get("layers_block_type")
    if isinstance(blocks, list) and blocks:
        # Zamba2 / Jamba-style explicit list ("mamba", "attention", "hybrid")
        return None  # handled by the layer_types branch of _layer_kinds
    idxs = cfg.get("full_attn_idxs")
    if model_type in ("lfm2", "lfm2_moe") and isinstance(idxs, list):
        # transformers Lfm2Config: layer_types = ["full_attention" if i in full_attn_idxs else "conv" ...]
        return [LayerKind.FULL if i in idxs else LayerKind.MAMBA for i in range(n_layers)]
    indices = cfg.get("attn_layer_indices")
    if isinstance(indices, list) and all(isinstance(i, int) for i in indices):
        # Bamba / FalconH1-style: transformers BambaConfig.layers_block_type =
        # ["attention" if i in attn_layer_indices else "mamba" for i in range(num_hidden_layers)]
        wanted = set(indices)
        return [LayerKind.FULL if i in wanted else LayerKind.MAMBA for i in range(n_layers)]
    if model_type == "jamba" or ("attn_layer_period" in cfg and "attn_layer_offset" in cfg):
        # transformers JambaConfig.layers_block_type: attention when i % period == offset
        period = int(cfg.get("attn_layer_period", 8))
        offset = int(cfg.get("attn_layer_offset", 4))
        return [LayerKind.FULL if i % period == offset else LayerKind.MAMBA for i in range(n_layers)]
    return None


def _layer_kinds(cfg: dict[str, Any], model_type: str, n_layers: int, mla: bool) -> list[LayerKind]:
    kinds = _layer_kinds_as_declared(cfg, model_type, n_layers, mla)
    if model_type == "gemma4_text" and kinds and kinds[-1] is LayerKind.SLIDING:
        # Gemma4TextConfig.__post_init__: "Last layer must use `full_attention`", forced so
        kinds[-1] = LayerKind.FULL
    return kinds


def _layer_kinds_as_declared(cfg: dict[str, Any], model_type: str, n_layers: int, mla: bool) -> list[LayerKind]:
    attn_kind = LayerKind.MLA if mla else LayerKind.FULL
    sliding = cfg.get("sliding_window")
    if model_type in _SSM_ONLY_FAMILIES:
        return [LayerKind.MAMBA] * n_layers  # attention-free: every layer a mamba mixer
    kda = _kda_layers(cfg, model_type)
    if kda is not None:
        # vLLM KimiLinearConfig.is_kda_layer(i): (i + 1) in linear_attn_config["kda_layers"] (1-based);
        # every other layer is the model's attention (MLA in Kimi-Linear)
        return [LayerKind.MAMBA if i + 1 in kda else attn_kind for i in range(n_layers)]
    deci = _deci_blocks(cfg, model_type)
    if deci is not None:
        # vllm nemotron_nas.py DeciLMDecoderLayer: block_configs[i].attention.no_op layers have no attention (and
        # no cache); the others are full attention
        return [LayerKind.NONE if i < len(deci) and deci[i]["attention"].get("no_op") else attn_kind
                for i in range(n_layers)]
    mimo = _mimo_v2_pattern(cfg, model_type)
    if mimo is not None:
        # vllm mimo_v2.py is_compressed_softmax_layer: hybrid_layer_pattern[layer_id] == 1 is a sliding-window
        # layer (sliding_window_size), 0 full attention
        return [LayerKind.SLIDING if i < len(mimo) and mimo[i] == 1 else attn_kind for i in range(n_layers)]
    layer_types = cfg.get("layer_types") or cfg.get("layers_block_type") or cfg.get("attn_type_list")
    if isinstance(cfg.get("hybrid_override_pattern"), str):
        return _nemotron_pattern(cfg["hybrid_override_pattern"], n_layers)
    if isinstance(layer_types, list) and layer_types:
        out: list[LayerKind] = []
        for i in range(n_layers):
            t = layer_types[i] if i < len(layer_types) else layer_types[-1]
            t = str(t).lower() if not isinstance(t, int) else ("full_attention" if t == 1 else "linear_attention")
            if t in ("sliding_attention", "sliding_window", "local", "sliding"):
                out.append(LayerKind.SLIDING if sliding else attn_kind)
            elif t in ("chunked_attention",):
                out.append(LayerKind.CHUNKED)
            elif t in ("linear_attention", "mamba", "mamba2", "conv", "short_conv", "ssm", "gated_deltanet"):
                out.append(LayerKind.MAMBA)
            elif t in ("full_attention", "attention", "global", "full", "hybrid"):
                out.append(attn_kind)
            else:
                out.append(LayerKind.NONE)
        return out
    derived = derive_layer_pattern(cfg, model_type, n_layers)
    if derived is not None:
        return [attn_kind if k is LayerKind.FULL else k for k in derived]
    if model_type in ("gemma3", "gemma3_text", "gemma4_text") and sliding:
        pattern = int(cfg.get("sliding_window_pattern") or 6)
        return [LayerKind.FULL if (i + 1) % pattern == 0 else LayerKind.SLIDING for i in range(n_layers)]
    if model_type == "cohere2" and sliding:
        # transformers Cohere2Config: sliding unless (i + 1) % sliding_window_pattern == 0 (default 4)
        pattern = int(cfg.get("sliding_window_pattern") or 4)
        return [LayerKind.FULL if (i + 1) % pattern == 0 else LayerKind.SLIDING for i in range(n_layers)]
    if model_type == "gemma2" and sliding:
        return [LayerKind.SLIDING if i % 2 == 0 else LayerKind.FULL for i in range(n_layers)]
    if model_type.startswith("llama4") and cfg.get("attention_chunk_size"):
        nope = cfg.get("no_rope_layers")
        if isinstance(nope, list) and len(nope) >= n_layers:
            # no_rope_layers[i] == 0 marks a NoPE (global, full attention) layer
            return [LayerKind.FULL if nope[i] == 0 else LayerKind.CHUNKED for i in range(n_layers)]
        interval = int(cfg.get("no_rope_layer_interval") or 4)
        return [LayerKind.FULL if (i + 1) % interval == 0 else LayerKind.CHUNKED for i in range(n_layers)]
    if model_type in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen2_vl", "qwen2_5_vl"):
        # transformers drops sliding_window unless use_sliding_window; then layers >= max_window_layers slide
        if cfg.get("use_sliding_window") and sliding:
            mwl = int(cfg.get("max_window_layers") or n_layers)
            return [LayerKind.SLIDING if i >= mwl else attn_kind for i in range(n_layers)]
        return [attn_kind] * n_layers
    if sliding and not mla:
        # model-level sliding window (Mistral v0.1, Phi-3, ...): every layer slides
        # (vLLM Attention falls back to cache_config.sliding_window)
        return [LayerKind.SLIDING] * n_layers
    return [attn_kind] * n_layers


# pure state-space models (vLLM MambaForCausalLM, also for FalconMambaForCausalLM, and Mamba2ForCausalLM):
# attention-free, so no KV cache at all, only a recurrent state per layer and request
_SSM_ONLY_FAMILIES = ("mamba", "falcon_mamba", "mamba2")


def _deci_blocks(cfg: dict[str, Any], model_type: str) -> list[dict[str, Any]] | None:
    """The per-layer block_configs of a Nemotron-NAS (DeciLM) config, or None."""
    blocks = cfg.get("block_configs")
    if model_type != "nemotron-nas" or not isinstance(blocks, list) or not blocks:
        return None
    if not all(isinstance(b, dict) and isinstance(b.get("attention"), dict) for b in blocks):
        return None
    return blocks


def _deci_kv_heads(cfg: dict[str, Any], model_type: str, heads: int, n_layers: int, where: str) -> dict[str, Any]:
    """Nemotron-NAS KV heads: each attention layer has num_attention_heads // attention.n_heads_in_group (vllm
    nemotron_nas.py); the model-level figure is the first attention layer's (NemotronNasModelArchConfigConvertor
    get_total_num_kv_heads), and a per-layer list is kept when the layers differ."""
    blocks = _deci_blocks(cfg, model_type)
    if blocks is None:
        return {}
    per_layer: list[int] = []
    for i in range(n_layers):
        attn = blocks[i]["attention"] if i < len(blocks) else {"no_op": True}
        if attn.get("no_op"):
            per_layer.append(0)
            continue
        group = attn.get("n_heads_in_group")
        if not isinstance(group, int) or isinstance(group, bool) or group <= 0 or heads % group:
            raise ConfigError(
                f"config.json{where} block_configs[{i}].attention.n_heads_in_group = {group!r} does not divide "
                f"the {heads} attention heads", "fix or re-download config.json", code="config-bad-field")
        per_layer.append(heads // group)
    kv = [h for h in per_layer if h]
    if not kv:
        return {}
    out: dict[str, Any] = {"num_kv_heads": kv[0], "config_params": _deci_params(cfg, blocks, per_layer, heads)}
    if len(set(kv)) > 1:
        out["layer_num_kv_heads"] = per_layer
    return out


def _deci_params(cfg: dict[str, Any], blocks: list[dict[str, Any]], kv_heads: list[int], heads: int) -> int:
    """Parameters of a Nemotron-NAS checkpoint from its blocks, as vllm nemotron_nas.py builds them: an attention
    block has q / o [hidden, hidden], k / v [KV heads x head, hidden] and input_layernorm; an FFN block a gated MLP of
    _ffn_mult_to_intermediate_size(ffn_mult, hidden) = 2 x ffn_mult x hidden / 3 rounded up to a multiple of 256
    (or ffn.intermediate_size) and post_attention_layernorm; then the final norm, the embedding and the LM head."""
    h = int(cfg.get("hidden_size") or 0)
    head = h // heads if heads else 0
    total = 0
    for i, kv in enumerate(kv_heads):
        if kv:
            total += 2 * h * h + 2 * h * kv * head + h
        ffn = blocks[i].get("ffn") if i < len(blocks) and isinstance(blocks[i].get("ffn"), dict) else {}
        if ffn.get("no_op"):
            continue
        mult = ffn.get("ffn_mult")
        if isinstance(mult, int | float) and not isinstance(mult, bool):
            inter = int(2 * mult * h / 3)
            inter += (-inter) % 256
        else:
            inter = int(ffn.get("intermediate_size") or cfg.get("intermediate_size") or 0)
        total += 3 * h * inter + h
    vocab = int(cfg.get("vocab_size") or 0)
    return total + h + vocab * h * (1 if cfg.get("tie_word_embeddings") else 2)


def _mimo_v2_pattern(cfg: dict[str, Any], model_type: str) -> list[int] | None:
    """MiMo-V2's per-layer attention kinds (hybrid_layer_pattern: 1 sliding window, 0 full), or None."""
    pattern = cfg.get("hybrid_layer_pattern")
    if not model_type.startswith("mimo_v2") or not isinstance(pattern, list) or not pattern:
        return None
    if not all(isinstance(p, int) and not isinstance(p, bool) for p in pattern):
        return None
    return pattern


def _mimo_v2_attention(cfg: dict[str, Any], model_type: str, kinds: list[LayerKind], where: str) -> dict[str, Any]:
    """MiMo-V2-Flash's two attention shapes (vllm 0.32 mimo_v2.py MiMoV2FlashDecoderLayer): sliding-window layers
    use swa_num_attention_heads / swa_num_key_value_heads / swa_head_dim / swa_v_head_dim and the window
    sliding_window_size; full layers num_key_value_heads / head_dim / v_head_dim (a value head narrower than the
    key's: vLLM's AttentionSpec pages hold head_size + head_size_v per KV head). The ModelArch keeps the sliding
    layers' figures as its base and the full layers' as full_* (the Gemma-4 convention)."""
    if _mimo_v2_pattern(cfg, model_type) is None and "swa_head_dim" not in cfg:
        return {}
    out: dict[str, Any] = {}
    sizes: dict[str, int | None] = {}
    for name in ("head_dim", "v_head_dim", "num_key_value_heads", "swa_head_dim", "swa_v_head_dim",
                 "swa_num_key_value_heads"):
        sizes[name] = _int(cfg, name, where=where, required=False)
        _check_limit(sizes[name], name, where, limit_key="num_key_value_heads" if "heads" in name else "head_dim")
    full_head, full_v, full_kv = sizes["head_dim"], sizes["v_head_dim"], sizes["num_key_value_heads"]
    swa_head = sizes["swa_head_dim"] if sizes["swa_head_dim"] is not None else full_head
    swa_v = sizes["swa_v_head_dim"] if sizes["swa_v_head_dim"] is not None else full_v
    swa_kv = sizes["swa_num_key_value_heads"] if sizes["swa_num_key_value_heads"] is not None else full_kv
    if LayerKind.SLIDING in kinds:
        if isinstance(swa_kv, int):
            out["num_kv_heads"] = swa_kv
        if isinstance(swa_head, int):
            out["head_dim"] = swa_head
        if isinstance(swa_v, int) and swa_v != swa_head:
            out["head_dim_v"] = swa_v
        if LayerKind.FULL in kinds:
            out["full_head_dim"] = full_head if isinstance(full_head, int) else swa_head
            if isinstance(full_v, int) and full_v != out["full_head_dim"]:
                out["full_head_dim_v"] = full_v
            if isinstance(full_kv, int):
                out["full_num_kv_heads"] = full_kv
        window = cfg.get("sliding_window_size", cfg.get("sliding_window"))
        if isinstance(window, int) and window > 0:
            out["sliding_window"] = window
    elif isinstance(full_v, int) and isinstance(full_head, int) and full_v != full_head:
        out["head_dim_v"] = full_v
    return out


def _kda_layers(cfg: dict[str, Any], model_type: str) -> set[int] | None:
    """The 1-based KDA (Kimi Delta Attention) layer numbers of a Kimi-Linear-style config, or None."""
    lac = cfg.get("linear_attn_config")
    if model_type != "kimi_linear" or not isinstance(lac, dict):
        return None
    layers = lac.get("kda_layers")
    if not isinstance(layers, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in layers):
        return None
    return set(layers)


def _mamba_facts(cfg: dict[str, Any], model_type: str, hidden: int) -> MambaFacts | None:
    if model_type in ("mamba", "falcon_mamba"):
        # vLLM mamba.py: mamba1_state_shape(tp, intermediate_size, state_size, conv_kernel)
        # transformers' MambaConfig / FalconMambaConfig.__post_init__ set intermediate_size = expand * hidden_size
        # whatever the file says, and vLLM reads that resolved value
        expand = cfg.get("expand")
        return MambaFacts(
            variant="mamba1",
            intermediate_size=int(expand * hidden) if isinstance(expand, int | float) else
            int(cfg.get("intermediate_size") or 2 * hidden),
            state_size=int(cfg.get("state_size", 16)),
            conv_kernel=int(cfg.get("conv_kernel", 4)),
        )
    if model_type == "mamba2":
        # vLLM mamba2.py: mamba2_state_shape(expand * hidden_size, tp, n_groups, num_heads, head_dim, state_size,
        # conv_kernel)
        return MambaFacts(
            variant="mamba2",
            intermediate_size=int(cfg.get("expand", 2)) * hidden,
            state_size=int(cfg.get("state_size", 128)),
            conv_kernel=int(cfg.get("conv_kernel", 4)),
            n_groups=int(cfg.get("n_groups", 1)),
            num_heads=int(cfg["num_heads"]),
            head_dim=int(cfg.get("head_dim", 64)),
        )
    if model_type in ("lfm2", "lfm2_moe"):
        # vLLM Lfm2ForCausalLM / Lfm2MoeForCausalLM.get_mamba_state_shape_from_config:
        # short_conv_state_shape(tp, conv_dim (lfm2) or hidden_size (lfm2_moe), conv_L_cache): one conv state
        # of (dim / tp) x (conv_L_cache - 1) in the cache dtype (short_conv_state_dtype), no SSM state
        dim = hidden if model_type == "lfm2_moe" else int(cfg.get("conv_dim") or hidden)
        return MambaFacts(variant="short_conv", intermediate_size=dim, conv_kernel=int(cfg.get("conv_L_cache") or 3))
    lac = cfg.get("linear_attn_config")
    if _kda_layers(cfg, model_type) and isinstance(lac, dict):
        # vLLM KimiLinearForCausalLM.get_mamba_state_shape_from_config: kda_state_shape(tp,
        # linear_attn_config["num_heads"], ["head_dim"], conv_kernel_size=["short_conv_kernel_size"]);
        # the recurrent state is float32 (0.11.1 always; 0.32 unless --mamba-ssm-cache-dtype bfloat16)
        return MambaFacts(
            variant="kda",
            num_heads=int(lac["num_heads"]),
            head_dim=int(lac["head_dim"]),
            conv_kernel=int(lac.get("short_conv_kernel_size") or 4),
            ssm_dtype="float32",
        )
    if "linear_num_value_heads" in cfg or "linear_key_head_dim" in cfg:
        return MambaFacts(
            variant="gdn",
            num_k_heads=int(cfg["linear_num_key_heads"]),
            num_v_heads=int(cfg["linear_num_value_heads"]),
            k_head_dim=int(cfg["linear_key_head_dim"]),
            v_head_dim=int(cfg["linear_value_head_dim"]),
            conv_kernel=int(cfg.get("linear_conv_kernel_dim", 4)),
            ssm_dtype=str(cfg.get("mamba_ssm_dtype") or "auto").replace("torch.", ""),
        )
    if model_type == "zamba2":
        # vLLM Zamba2ForCausalLM.get_mamba_state_shape_from_config: mamba2_state_shape(mamba_expand x hidden_size, tp,
        # mamba_ngroups, n_mamba_heads, mamba_headdim, mamba_d_state, mamba_d_conv); transformers' Zamba2Config
        # derives mamba_headdim = mamba_expand x hidden_size // n_mamba_heads where the file does not give it
        inter = int(cfg.get("mamba_expand", 2) * hidden)
        heads = int(cfg.get("n_mamba_heads", 8))
        head_dim = cfg.get("mamba_headdim")
        return MambaFacts(
            variant="mamba2",
            intermediate_size=inter,
            state_size=int(cfg.get("mamba_d_state", 64)),
            conv_kernel=int(cfg.get("mamba_d_conv", 4)),
            n_groups=int(cfg.get("mamba_ngroups", 1)),
            num_heads=heads,
            head_dim=int(head_dim) if isinstance(head_dim, int) and head_dim > 0 else inter // heads,
        )
    if model_type == "falcon_h1":
        # vLLM FalconH1ForCausalLM.get_mamba_state_shape_from_config: mamba2_state_shape with mamba_d_ssm (or
        # mamba_expand x hidden_size) channels, mamba_n_groups, mamba_n_heads x mamba_d_head, mamba_d_state, d_conv
        d_ssm = cfg.get("mamba_d_ssm")
        return MambaFacts(
            variant="mamba2",
            intermediate_size=int(d_ssm) if d_ssm else int(cfg.get("mamba_expand", 2) * hidden),
            state_size=int(cfg.get("mamba_d_state", 256)),
            conv_kernel=int(cfg.get("mamba_d_conv", 4)),
            n_groups=int(cfg.get("mamba_n_groups", 1)),
            num_heads=int(cfg.get("mamba_n_heads", 128)),
            head_dim=int(cfg.get("mamba_d_head", 64)),
        )
    if model_type == "nemotron_h" or "mamba_num_heads" in cfg:
        heads = int(cfg["mamba_num_heads"])
        head_dim = int(cfg["mamba_head_dim"])
        return MambaFacts(
            variant="mamba2",
            intermediate_size=heads * head_dim,
            state_size=int(cfg["ssm_state_size"]),
            conv_kernel=int(cfg.get("conv_kernel", 4)),
            n_groups=int(cfg.get("n_groups", 1)),
            num_heads=heads,
            head_dim=head_dim,
            # vLLM NemotronHForCausalLMConfig: ssm state float32 unless the config says otherwise
            ssm_dtype=str(cfg.get("mamba_ssm_cache_dtype") or "float32"),
        )
    if "mamba_n_heads" in cfg:  # granitemoehybrid, bamba-style
        expand = int(cfg.get("mamba_expand", 2))
        return MambaFacts(
            variant="mamba2",
            intermediate_size=expand * hidden,
            state_size=int(cfg["mamba_d_state"]),
            conv_kernel=int(cfg.get("mamba_d_conv", 4)),
            n_groups=int(cfg.get("mamba_n_groups", 1)),
            num_heads=int(cfg["mamba_n_heads"]),
            head_dim=int(cfg.get("mamba_d_head") or (expand * hidden) // int(cfg["mamba_n_heads"])),
        )
    if model_type == "jamba" or "mamba_d_state" in cfg:
        expand = int(cfg.get("mamba_expand", 2))
        return MambaFacts(
            variant="mamba1",
            intermediate_size=expand * hidden,
            state_size=int(cfg.get("mamba_d_state", 16)),
            conv_kernel=int(cfg.get("mamba_d_conv", 4)),
        )
    return None


def _moe_layer_pattern(cfg: dict[str, Any], n_layers: int, dense_layers: int) -> tuple[int | None, int | None, int]:
    """(MoE layers, dense-MLP layers, matrices per expert) where the config puts experts in some layers only,
    each rule as vLLM's model file decides `is_moe_layer` (0.32): llama4.py `(layer_idx + 1) %
    interleave_moe_layer_step == 0`; jamba.py / transformers JambaConfig `i % expert_layer_period ==
    expert_layer_offset`; qwen2_moe.py / qwen3_moe.py `layer_idx not in mlp_only_layers and (layer_idx + 1) %
    decoder_sparse_step == 0`; deepseek_v2.py `layer_idx >= first_k_dense_replace and layer_idx % moe_layer_freq
    == 0`; nemotron_h.py one block per character of hybrid_override_pattern ("E" MoE, "-" MLP, ReLU^2 experts of
    two matrices). (None, None, 3): every layer past the leading dense ones."""
    layers = range(n_layers)
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and "E" in pattern:
        two = str(cfg.get("mlp_hidden_act") or "").lower() == "relu2"
        return pattern[:n_layers].count("E"), pattern[:n_layers].count("-"), 2 if two else 3
    moe: list[int] | None = None
    step = cfg.get("interleave_moe_layer_step")
    if isinstance(step, int) and step > 1:
        moe = [i for i in layers if (i + 1) % step == 0]
    period, offset = cfg.get("expert_layer_period"), cfg.get("expert_layer_offset")
    if isinstance(period, int) and period > 1 and isinstance(offset, int):
        moe = [i for i in layers if i % period == offset]
    sparse, mlp_only = cfg.get("decoder_sparse_step"), cfg.get("mlp_only_layers")
    if (isinstance(sparse, int) and sparse > 1) or (isinstance(mlp_only, list) and mlp_only):
        skip = {i for i in mlp_only if isinstance(i, int)} if isinstance(mlp_only, list) else set()
        step_ = sparse if isinstance(sparse, int) and sparse > 0 else 1
        moe = [i for i in layers if i not in skip and (i + 1) % step_ == 0]
    freq = cfg.get("moe_layer_freq")
    if isinstance(freq, int) and freq > 1:
        moe = [i for i in layers if i >= dense_layers and i % freq == 0]
    if moe is None:
        return None, None, 3
    return len(moe), n_layers - len(moe), 3


def _moe_facts(cfg: dict[str, Any], n_layers: int = 0) -> MoEFacts | None:
    experts = None
    for key in ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts"):
        if isinstance(cfg.get(key), int) and cfg[key] > 1:
            experts = int(cfg[key])
            break
    if experts is None:
        return None
    per_tok = (cfg.get("num_experts_per_tok") or cfg.get("num_experts_per_token") or cfg.get("moe_topk")
               or cfg.get("top_k_experts") or 1)
    shared = cfg.get("n_shared_experts") or cfg.get("num_shared_experts") or 0
    # Nemotron-H: moe_shared_expert_intermediate_size (vllm nemotron_h.py NemotronHMoE shared_experts)
    shared_inter = cfg.get("shared_expert_intermediate_size") or cfg.get("moe_shared_expert_intermediate_size")
    if not shared and shared_inter:
        shared = 1
    if cfg.get("model_type") in ("llama4", "llama4_text"):
        # vllm llama4.py Llama4MoE: every MoE layer has a shared expert of intermediate_size beside the routed ones;
        # the config names no count
        shared, shared_inter = 1, cfg.get("intermediate_size")
    if cfg.get("model_type") == "gemma4_text" or "top_k_experts" in cfg:
        # Gemma-4 MoE (vllm gemma4.py Gemma4DecoderLayer): the dense MLP (intermediate_size) runs beside the
        # routed experts (moe_intermediate_size / expert_intermediate_size) in every layer, i.e. a shared expert
        shared, shared_inter = 1, cfg.get("intermediate_size")
    dense_layers = int(cfg.get("first_k_dense_replace") or cfg.get("num_dense_layers") or 0)
    moe_layers, dense_mlp_layers, matrices = _moe_layer_pattern(cfg, n_layers, dense_layers)
    return MoEFacts(
        moe_layers=moe_layers,
        dense_mlp_layers=dense_mlp_layers,
        dense_intermediate_size=cfg.get("intermediate_size_mlp") if isinstance(cfg.get("intermediate_size_mlp"), int) else None,
        expert_matrices=matrices,
        num_experts=experts,
        experts_per_token=int(per_tok),
        moe_intermediate_size=(cfg.get("moe_intermediate_size") or cfg.get("expert_intermediate_size")
                               or cfg.get("intermediate_size")),
        num_shared_experts=int(shared),
        shared_expert_intermediate_size=shared_inter,
        # DeepSeek first_k_dense_replace; LFM2-MoE num_dense_layers (vLLM lfm2_moe.py: layer_idx < num_dense_layers)
        dense_layers=int(cfg.get("first_k_dense_replace") or cfg.get("num_dense_layers") or 0),
    )


# Largest image the HF processor produces, in pixels (preprocessor_config.json of the official
# checkpoints): Qwen2-VL / Qwen2.5-VL "max_pixels": 12845056 (= 16384 tokens of 28x28);
# Qwen3-VL / Qwen3.5 size.longest_edge 16777216 (= 16384 tokens of 32x32). vLLM sizes the
# profiling image with get_image_size_with_most_features (vllm/model_executor/models/qwen2_vl.py).
_QWEN2_VL_MAX_PIXELS = 12_845_056
_QWEN3_VL_MAX_PIXELS = 16_777_216
_QWEN2_VL_TYPES = {"qwen2_vl", "qwen2_5_vl", "qwen2_5_omni"}
_QWEN3_VL_TYPES = {"qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe", "qwen3_omni_moe"}


def _vision_facts(config: dict[str, Any], text_hidden: int) -> VisionFacts | None:
    """The vision tower of a multimodal checkpoint, for the encoder profiling term."""
    vc = config.get("vision_config")
    if not isinstance(vc, dict):
        return None
    top = str(config.get("model_type") or "")

    def num(key: str, default: int = 0) -> int:
        v = vc.get(key)
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default

    if top in _QWEN2_VL_TYPES or top in _QWEN3_VL_TYPES:
        qwen3 = top in _QWEN3_VL_TYPES
        patch = num("patch_size", 16 if qwen3 else 14)
        merge = num("spatial_merge_size", 2)
        # Qwen2-VL names the ViT width embed_dim (hidden_size is the LM width); Qwen2.5-VL and
        # Qwen3-VL name it hidden_size
        width = num("embed_dim") or num("hidden_size", 1280)
        inter = num("intermediate_size") or int(width * float(vc.get("mlp_ratio") or 4))
        max_pixels = _QWEN3_VL_MAX_PIXELS if qwen3 else _QWEN2_VL_MAX_PIXELS
        deepstack = vc.get("deepstack_visual_indexes")
        return VisionFacts(
            family="qwen3_vl" if qwen3 else "qwen2_vl",
            depth=num("depth", 32), hidden_size=width, intermediate_size=inter, num_heads=num("num_heads", 16),
            patch_size=patch, in_channels=num("in_channels") or num("in_chans", 3),
            temporal_patch_size=num("temporal_patch_size", 2),
            out_hidden_size=num("out_hidden_size") or (num("hidden_size") if top == "qwen2_vl" else text_hidden),
            deepstack_layers=len(deepstack) if isinstance(deepstack, list) else 0,
            max_tokens_per_item=max_pixels // (patch * merge) ** 2,
            patches_per_token=merge * merge,
            source=f"{top} processor default max {max_pixels} pixels, patch {patch}, merge {merge}",
        )
    if top == "gemma3":
        # SigLIP at image_size (896) / patch (14) = 4096 patches pooled to mm_tokens_per_image (256)
        image, patch = num("image_size", 896), num("patch_size", 14)
        tokens = int(config.get("mm_tokens_per_image") or 256)
        patches = (image // patch) ** 2
        return VisionFacts(
            family="gemma3", depth=num("num_hidden_layers", 27), hidden_size=num("hidden_size", 1152),
            intermediate_size=num("intermediate_size", 4304), num_heads=num("num_attention_heads", 16),
            patch_size=patch, out_hidden_size=text_hidden, max_tokens_per_item=tokens,
            patches_per_token=max(patches // tokens, 1),
            source="Gemma-3 SigLIP 896px, mm_tokens_per_image per image (pan-and-scan off)",
        )
    if top == "gemma4":
        # patch 16, pooling kernel 3: each soft token pools 3 x 3 patches; an image is at most
        # vision_config.default_output_length soft tokens (vllm gemma4_mm.py get_mm_max_tokens_per_item;
        # the supported budgets are 70 / 140 / 280 / 560 / 1120, 280 in the released configs)
        pool = num("pooling_kernel_size", 3)
        return VisionFacts(
            family="gemma4", depth=num("num_hidden_layers", 16), hidden_size=num("hidden_size", 768),
            intermediate_size=num("intermediate_size", 3072), num_heads=num("num_attention_heads", 12),
            patch_size=num("patch_size", 16), out_hidden_size=text_hidden,
            max_tokens_per_item=num("default_output_length", 280), patches_per_token=pool * pool,
            source="Gemma-4 vision: default_output_length soft tokens per image, pooling kernel squared "
                   "patches each (video frames, 70 tokens each, not counted)",
        )
    if top == "mistral3" or (top in ("llava", "pixtral") and str(vc.get("model_type") or "") == "pixtral"):
        # Pixtral ViT (Mistral-3 / Mistral-Small-3.x / Pixtral-12B): image_size 1540 / patch 14 = 110 x 110 patches,
        # merged 2 x 2 (spatial_merge_size; Pixtral-12B: none) into 55 rows of 55 image tokens + one [IMG_BREAK] /
        # [IMG_END] per row (vllm pixtral.py get_num_image_tokens: (ncols + 1) * nrows) = 3,080 LM tokens per image
        image, patch = num("image_size", 1024), num("patch_size", 16)
        merge = int(config.get("spatial_merge_size") or 1)
        side = max(image // patch // max(merge, 1), 1)
        tokens = (side + 1) * side
        return VisionFacts(
            family="pixtral", depth=num("num_hidden_layers", 24), hidden_size=num("hidden_size", 1024),
            intermediate_size=num("intermediate_size", 4096), num_heads=num("num_attention_heads", 16),
            patch_size=patch, in_channels=num("num_channels", 3), out_hidden_size=text_hidden,
            max_tokens_per_item=tokens, patches_per_token=max(round((image // patch) ** 2 / tokens), 1),
            patches_per_item=(image // patch) ** 2,
            source=f"Pixtral {image}px, patch {patch}, merge {merge}: {side} rows of {side} tokens + a break each",
        )
    if top == "llama4":
        # 336px tiles of 24x24 patches (+1 class token), pixel shuffle 0.5 -> 144 tokens per tile;
        # max_patches 16 tiles + 1 global view (Llama4Processor defaults, vLLM mllama4.py)
        image, patch = num("image_size", 336), num("patch_size", 14)
        ratio = float(vc.get("pixel_shuffle_ratio") or 0.5)
        per_tile = int((image // patch) ** 2 * ratio * ratio)
        tiles = 17
        return VisionFacts(
            family="llama4", depth=num("num_hidden_layers", 34), hidden_size=num("hidden_size", 1408),
            intermediate_size=num("intermediate_size", 5632), num_heads=num("num_attention_heads", 16),
            patch_size=patch, out_hidden_size=text_hidden, max_tokens_per_item=per_tile * tiles,
            patches_per_token=max(((image // patch) ** 2 + 1) // per_tile, 1),
            source="Llama-4 336px tiles, 16 tiles + global view, pixel shuffle 0.5",
        )
    return None


def _native_len(
    cfg: dict[str, Any], model_type: str, tokenizer_config: dict[str, Any] | None, yarn_scaled: bool
) -> tuple[int, str, list[str]]:
    warnings: list[str] = []
    best: float = float("inf")
    key_used = "default"
    for key in MAX_LEN_KEYS:
        value = cfg.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < best:
            best, key_used = value, key
    if isinstance(cfg.get("model_max_length"), (int, float)) and cfg.get("model_max_length"):
        best, key_used = cfg["model_max_length"], "model_max_length"
    if tokenizer_config and isinstance(tokenizer_config.get("model_max_length"), (int, float)):
        tok_len = tokenizer_config["model_max_length"]
        # transformers writes 1e30 (VERY_LARGE_INTEGER) when the tokenizer sets no limit
        if 0 < tok_len <= CONFIG_LIMITS["max_position_embeddings"] and tok_len < best:
            best, key_used = tok_len, "tokenizer_config.model_max_length"
    if best == float("inf"):
        warnings.append("config has no max-length key; vLLM assumes 2048")
        return 2048, "default", warnings
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    if isinstance(rope, dict) and "gemma3" not in model_type:
        rope_type = rope.get("rope_type") or rope.get("type") or "default"
        factor = rope.get("factor")
        if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float))
                                   or not math.isfinite(factor) or factor <= 0):
            raise ConfigError(f"config.json rope_scaling.factor is {str(factor)[:40]!r}, not a positive number",
                              "fix the model's rope_scaling (vLLM reads the factor as a float)", code="config-bad-field")
        original = rope.get("original_max_position_embeddings")
        if original is not None and (isinstance(original, bool) or not isinstance(original, int) or original <= 0):
            raise ConfigError(f"config.json rope_scaling.original_max_position_embeddings is {str(original)[:40]!r}, "
                              "not a positive integer", "fix the model's rope_scaling", code="config-bad-field")
        if rope_type in ("yarn", "deepseek_yarn") and yarn_scaled and factor:
            original = rope.get("original_max_position_embeddings") or cfg.get("original_max_position_embeddings")
            if original:
                best = original * factor
                key_used += " (yarn-scaled)"
        elif rope_type not in _ROPE_NOT_SCALED and rope_type != "default" and factor:
            best = best * float(factor)
            key_used += f" x rope {rope_type} factor {factor}"
            if best > CONFIG_LIMITS["max_position_embeddings"]:
                raise ConfigError(f"config.json rope_scaling.factor {str(factor)[:40]} scales the context to {best:.3g} "
                                  f"tokens, beyond what a model can have (268,435,456)",
                                  "fix the model's rope_scaling", code="config-out-of-bounds")
        if rope_type == "longrope" and cfg.get("original_max_position_embeddings"):
            # vLLM defaults max_model_len to original_max_position_embeddings for LongRoPE
            warnings.append("LongRoPE: vLLM defaults max_model_len to original_max_position_embeddings")
            best = cfg["original_max_position_embeddings"]
            key_used = "original_max_position_embeddings (longrope default)"
    return int(best), key_used, warnings


def _indexer_facts(cfg: dict[str, Any], n_layers: int, where: str) -> dict[str, Any]:
    """DeepSeek sparse attention's lightning indexer (vLLM deepseek_v2.py, 0.32.0): a config with
    `index_topk` builds one; index_head_dim defaults to 128 (transformers DeepseekV32Config /
    GlmMoeDsaConfig). Layers without one: index_topk_pattern "S", else those where
    max(layer - index_skip_topk_offset + 1, 0) % index_topk_freq != 0 (offset 2, freq 1: none)."""
    if "index_topk" not in cfg:
        return {}
    head = cfg.get("index_head_dim")
    head = 128 if head is None else head
    if not isinstance(head, int) or isinstance(head, bool):
        raise ConfigError(f"config.json{where} has index_head_dim = {head!r}, not an integer",
                          "check the config", code="config-bad-field")
    _check_limit(head, "index_head_dim", where, limit_key="head_dim")
    pattern = cfg.get("index_topk_pattern")
    freq = cfg.get("index_topk_freq") or 1
    offset = cfg.get("index_skip_topk_offset", 2)
    if isinstance(pattern, str) and pattern:
        layers = [i for i in range(n_layers) if i >= len(pattern) or pattern[i] != "S"]
    elif isinstance(freq, int) and isinstance(offset, int) and freq > 1:
        layers = [i for i in range(n_layers) if max(i - offset + 1, 0) % freq == 0]
    else:
        layers = None
    topk = cfg.get("index_topk")
    heads = cfg.get("index_n_heads")
    return {"index_head_dim": head, "indexer_layers": layers,
            "index_topk": topk if isinstance(topk, int) and topk > 0 else None,
            "index_n_heads": heads if isinstance(heads, int) and heads > 0 else 64}


def read_arch(
    config: Any,
    *,
    tokenizer_config: dict[str, Any] | None = None,
    yarn_scaled_max_len: bool = False,
    mla_cache: bool = True,
) -> ModelArch:
    """Turn a config.json dict into a ModelArch. Raises ConfigError (never KeyError/TypeError).
    mla_cache=False: vLLM before 0.7.1, which cached DeepSeek-V2/V3 attention as full per-head K
    and V with the head size padded to 256 (0.6.4 ModelConfig.get_head_size / deepseek_v2.py)."""
    if not isinstance(config, dict):
        raise ConfigError(
            "config.json is not a JSON object",
            "check that the file is the model's config.json",
            code="config-not-object",
        )
    try:
        return _read(config, tokenizer_config, yarn_scaled_max_len, mla_cache)
    except ConfigError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError, OverflowError) as exc:
        raise ConfigError(
            f"config.json could not be read as a decoder LLM: {type(exc).__name__}: {exc}",
            "check the config fields; unusual architectures may need a vllmkit update",
            code="config-unreadable",
        ) from None


def _read(config: dict[str, Any], tokenizer_config: dict[str, Any] | None, yarn_scaled: bool,
          mla_cache: bool = True) -> ModelArch:
    cfg, where = text_config(config)
    top_type = str(config.get("model_type") or "")
    model_type = str(cfg.get("model_type") or top_type or "unknown")
    if where and model_type == top_type == "gemma3":
        model_type = "gemma3_text"  # the nested text config of Gemma3ForConditionalGeneration
    if where and model_type == top_type == "gemma4":
        model_type = "gemma4_text"
    defaults = FAMILY_DEFAULTS.get(model_type)
    if defaults:
        cfg = {**defaults, **{k: v for k, v in cfg.items() if v is not None or k not in defaults}}
    architectures = [str(a) for a in (config.get("architectures") or cfg.get("architectures") or [])]
    warnings: list[str] = []
    if not top_type and not architectures:
        warnings.append("config.json names no model_type or architectures; reading it as a generic decoder")

    if "num_hidden_layers" not in cfg and isinstance(cfg.get("num_layers"), int):
        cfg = {**cfg, "num_hidden_layers": cfg["num_layers"]}
    if "num_hidden_layers" not in cfg and isinstance(cfg.get("n_layer"), int):
        cfg = {**cfg, "num_hidden_layers": cfg["n_layer"]}
    if "hidden_size" not in cfg and isinstance(cfg.get("n_embd"), int):
        cfg = {**cfg, "hidden_size": cfg["n_embd"]}
    if "num_attention_heads" not in cfg and isinstance(cfg.get("n_head"), int):
        cfg = {**cfg, "num_attention_heads": cfg["n_head"]}
    if "vocab_size" not in cfg and isinstance(cfg.get("padded_vocab_size"), int):
        # ChatGLM / GLM-4 (remote code): vLLM's chatglm.py sizes the embedding and head by padded_vocab_size
        cfg = {**cfg, "vocab_size": cfg["padded_vocab_size"]}

    if model_type == "hrm_text" and all(isinstance(cfg.get(k), int) for k in ("H_cycles", "L_cycles",
                                                                              "num_layers_per_stack")):
        # vLLM hrm_text.py: each of the H_cycles x (L_cycles + 1) steps through the stack of num_layers_per_stack
        # layers has its own attention cache ("global_idx = step * num_layers_per_stack + layer_idx_in_stack"),
        # multi-head (total_num_kv_heads = num_attention_heads: "HF main hardcodes MHA")
        steps = cfg["H_cycles"] * (cfg["L_cycles"] + 1)
        cfg = {**cfg, "num_hidden_layers": steps * cfg["num_layers_per_stack"],
               "num_key_value_heads": cfg.get("num_attention_heads")}
    if model_type == "minicpm3" and isinstance(cfg.get("qk_nope_head_dim"), int) and isinstance(
            cfg.get("qk_rope_head_dim"), int):
        # vLLM minicpm3.py caches MLA-shaped attention decompressed: Attention(num_local_heads, qk_head_dim =
        # qk_nope_head_dim + qk_rope_head_dim, num_kv_heads=num_local_heads) - full K and V per head
        cfg = {**cfg, "head_dim": cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"],
               "num_key_value_heads": cfg.get("num_attention_heads")}
    if model_type == "zamba2" and isinstance(cfg.get("hidden_size"), int) and isinstance(
            cfg.get("num_attention_heads"), int) and cfg["num_attention_heads"] > 0:
        # vLLM zamba2.py builds each hybrid layer's Attention(num_attention_heads, attention_head_dim) without KV
        # heads, so K/V have every head; transformers' Zamba2Config derives attention_head_dim as
        # 2 x hidden_size // num_attention_heads (the shared block attends over the concatenated [hidden, embeddings])
        # where the file does not give it, and use_long_context means max_position_embeddings 16384
        head = cfg.get("attention_head_dim")
        if not (isinstance(head, int) and not isinstance(head, bool) and head > 0):
            head = 2 * cfg["hidden_size"] // cfg["num_attention_heads"]
        cfg = {**cfg, "head_dim": head, "num_key_value_heads": cfg["num_attention_heads"]}
        if cfg.get("use_long_context"):
            cfg["max_position_embeddings"] = 16384
    if model_type in _SSM_ONLY_FAMILIES and "num_attention_heads" not in cfg:
        # attention-free: nothing is sized by attention heads (Mamba-2's mixer heads stand in for the count)
        cfg = {**cfg, "num_attention_heads": int(cfg.get("num_heads") or 1)}
    n_layers = _int(cfg, "num_hidden_layers", where=where) or 0
    hidden = _int(cfg, "hidden_size", where=where) or 0
    vocab = _int(cfg, "vocab_size", where=where) or 0
    heads = _int(cfg, "num_attention_heads", where=where) or 0
    if n_layers == 0:
        raise ConfigError(
            f"config.json{where} has num_hidden_layers = 0", "check the config", code="config-bad-field"
        )
    # before anything loops over the layers or sizes a tensor
    for field, value in (("num_hidden_layers", n_layers), ("hidden_size", hidden), ("vocab_size", vocab),
                         ("num_attention_heads", heads)):
        _check_limit(value, field, where)

    _check_optional_fields(cfg, where)
    mla: MLAFacts | None = None
    if _is_mla(cfg, model_type):
        mla = MLAFacts(
            kv_lora_rank=int(cfg["kv_lora_rank"]),
            qk_rope_head_dim=int(cfg.get("qk_rope_head_dim") or 64),
            qk_nope_head_dim=cfg.get("qk_nope_head_dim"),
            v_head_dim=cfg.get("v_head_dim"),
            q_lora_rank=cfg.get("q_lora_rank"),
            **_indexer_facts(cfg, n_layers, where),
        )
    if mla is not None:
        _check_limit(mla.kv_lora_rank, "kv_lora_rank", where)
        _check_limit(mla.qk_rope_head_dim, "qk_rope_head_dim", where, minimum=0)
    head_dim = _head_dim(cfg, where, mla)
    _check_limit(head_dim, "head_dim", where)
    kv_heads = 1 if mla else _kv_heads(cfg, heads, model_type)
    _check_limit(kv_heads, "num_key_value_heads", where)
    if mla is not None and not mla_cache:
        warnings.append("this vLLM release caches DeepSeek attention as full per-head K/V (head size padded "
                        "to 256; the MLA latent cache arrived in 0.7.1)")
        mla, head_dim, kv_heads = None, 256, heads
    dtype, dtype_warnings = _dtype(cfg, config)
    warnings += dtype_warnings
    kinds = _layer_kinds(cfg, model_type, n_layers, mla is not None)
    # Falcon-H1 decoder layers run attention and a Mamba-2 mixer in parallel (FalconH1ParallelHybrid); Zamba2's
    # "hybrid" layers run the shared attention block and then a Mamba-2 mixer (Zamba2HybridLayer), each with its cache
    parallel_mamba = model_type in ("falcon_h1", "zamba2")
    mamba = _mamba_facts(cfg, model_type, hidden) if LayerKind.MAMBA in kinds or parallel_mamba else None
    if LayerKind.MAMBA in kinds and mamba is None:
        raise ConfigError(
            f"config.json{where} declares recurrent (mamba / linear-attention) layers but no state sizes",
            "vllmkit knows mamba1 (Jamba), mamba2 (Nemotron-H, Granite-4) and gated delta net (Qwen3-Next)",
            code="config-unknown-state",
        )
    if mamba is not None:
        for name, dim in mamba.model_dump().items():
            if isinstance(dim, int) and not isinstance(dim, bool):
                _check_limit(dim, f"{name} (recurrent state)", where, limit_key="mamba")
    sliding = cfg.get("sliding_window") if LayerKind.SLIDING in kinds else None
    chunk = cfg.get("attention_chunk_size") if LayerKind.CHUNKED in kinds else None
    for field, value in (("sliding_window", sliding), ("attention_chunk_size", chunk)):
        if value is not None:
            _check_limit(_int(cfg, field, where=where), field, where)
    native, native_key, len_warnings = _native_len(cfg, model_type, tokenizer_config, yarn_scaled)
    warnings += len_warnings
    _check_limit(native, native_key.split(" ")[0], where, limit_key="max_position_embeddings")
    intermediate = cfg.get("intermediate_size")
    if isinstance(intermediate, int):
        _check_limit(intermediate, "intermediate_size", where, minimum=0)
    moe = _moe_facts(cfg, n_layers)
    if moe is not None:
        _check_limit(moe.num_experts, "num_experts", where)
        _check_limit(moe.experts_per_token, "num_experts_per_tok", where, limit_key="num_experts")
        if moe.experts_per_token > moe.num_experts:
            raise ConfigError(
                f"config.json{where} routes {moe.experts_per_token} experts per token but has {moe.num_experts}",
                "fix or re-download config.json", code="config-out-of-bounds",
            )
    if architectures and not any(a in VLLM_NATIVE_ARCHITECTURES for a in architectures):
        warnings.append(
            f"architecture {architectures[0][:80]} is not one vLLM {VLLM_REGISTRY_VERSION} implements natively: "
            "vLLM may refuse it or run it through its Transformers backend, and vllmkit sizes it as a generic decoder"
        )
    quant = _quantization(cfg) or _quantization(config)
    is_mm = bool(where) or any(
        k in config for k in ("vision_config", "audio_config", "vision_tower", "mm_projector_type")
    )
    layer_head_dim = None
    if model_type == "granitemoehybrid" and heads and hidden // heads != head_dim:
        # vllm/model_executor/models/granitemoehybrid.py: head_dim = hidden_size // num_heads
        layer_head_dim = hidden // heads
    gemma4 = _gemma4_attention(cfg, config, model_type, n_layers, kinds, where)
    if model_type.startswith("mimo_v2"):
        gemma4.update(_mimo_v2_attention(cfg, model_type, kinds, where))
    gemma4.update(_deci_kv_heads(cfg, model_type, heads, n_layers, where))
    per_kind = {k: gemma4.pop(k) for k in ("num_kv_heads", "head_dim", "head_dim_v", "sliding_window")
                if k in gemma4}
    if "sliding_window" in per_kind:
        sliding = per_kind["sliding_window"]
    # vllm qwen3_next.py / qwen3_5.py: self.attn_output_gate = getattr(config, "attn_output_gate", True)
    gated = cfg.get("attn_output_gate", str(cfg.get("model_type", model_type)).startswith(("qwen3_next", "qwen3_5")))
    return ModelArch(
        parallel_mamba=parallel_mamba,
        single_block_layers=isinstance(cfg.get("hybrid_override_pattern"), str),
        layer_head_dim=layer_head_dim,
        attn_output_gate=bool(gated),
        model_type=model_type,
        architectures=architectures,
        text_model_type=str(cfg.get("model_type")) if where else None,
        dtype=dtype,
        hidden_size=hidden,
        intermediate_size=cfg.get("intermediate_size") if isinstance(cfg.get("intermediate_size"), int) else None,
        vocab_size=vocab,
        num_hidden_layers=n_layers,
        num_attention_heads=heads,
        num_kv_heads=per_kind.get("num_kv_heads", kv_heads),
        head_dim=per_kind.get("head_dim", head_dim),
        head_dim_v=0 if mla else per_kind.get("head_dim_v"),
        layer_kinds=kinds,
        sliding_window=int(sliding) if isinstance(sliding, (int, float)) else None,
        attention_chunk_size=int(chunk) if isinstance(chunk, (int, float)) else None,
        mla=mla,
        mamba=mamba,
        moe=moe,
        quantization=quant,
        native_max_model_len=native,
        native_max_model_len_key=native_key,
        rope_scaling=cfg.get("rope_scaling") if isinstance(cfg.get("rope_scaling"), dict) else None,
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", config.get("tie_word_embeddings", False))),
        trust_remote_code=bool(config.get("auto_map")),
        is_multimodal=is_mm,
        vision=_vision_facts(config, hidden) if is_mm else None,
        audio_tower_params=_audio_tower_params(config, hidden) if is_mm else 0,
        is_encoder_decoder=bool(config.get("is_encoder_decoder")),
        rope_cache_elements=_rope_cache_elements(cfg, model_type, head_dim, mla, kinds, gemma4.get("full_head_dim")),
        warnings=warnings,
        **gemma4,
    )


def _audio_tower_params(config: dict[str, Any], text_hidden: int) -> int:
    """Gemma-4's conformer audio tower + embed_audio, from audio_config (transformers modeling_gemma4.py:
    subsample convolutions and input projection; per layer two macaron feed-forwards H -> 4H -> H, q/k/v/
    post and relative-position projections, a light convolution and five norms; the output projection):
    304,824,608 + 2,359,296 for E2B / E4B, the 305M of the model card."""
    a = config.get("audio_config")
    if not isinstance(a, dict) or a.get("model_type") != "gemma4_audio":
        return 0
    try:
        h, (c0, c1) = int(a["hidden_size"]), (int(c) for c in a["subsampling_conv_channels"])
        heads, kernel, layers = int(a["num_attention_heads"]), int(a["conv_kernel_size"]), int(a["num_hidden_layers"])
        out = int(a["output_proj_dims"])
    except (KeyError, TypeError, ValueError):
        return 0
    subsample = c0 * 9 + c0 + c1 * c0 * 9 + c1 + (c0 // 4) * c1 * h
    layer = 2 * (8 * h * h + 2 * h) + (5 * h * h + h // heads) + (3 * h * h + h * kernel + 2 * h) + 3 * h
    return subsample + layers * layer + out * h + out + out * text_hidden


# model types whose attention has no rotary embedding (learned positions or ALiBi): no cos/sin cache
_NO_ROPE_MODEL_TYPES = frozenset({"gpt2", "gpt_bigcode", "opt", "bloom", "mpt", "jais", "whisper", "bert", "roberta"})
# mRoPE (Qwen2-VL and after): the cache covers 4x the positions, since video positions run past the
# token count (vllm 0.32 rotary_embedding/mrope.py: cache_max_position_num = max_position x positions_factor 4)
_MROPE_POSITIONS_FACTOR = 4
_MROPE_MODEL_TYPES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_5", "qwen2_5_omni", "qwen3_omni")


def _rope_positions(rope: dict[str, Any], max_pos: int) -> int:
    """Rows of the cos/sin cache vLLM's get_rope builds for one rope config (vllm 0.32
    model_executor/layers/rotary_embedding/__init__.py and the classes it picks):
    - default, llama3, ntk, dynamic-alpha, proportional: max_position (base.py _compute_cos_sin_cache);
    - linear and dynamic with a factor: max_position x factor (linear_scaling_rope.py,
      dynamic_ntk_scaling_rope.py: "max_len = max_position_embeddings * scaling_factor");
    - yarn, deepseek_yarn: original_max_position_embeddings x factor (yarn_scaling_rope.py,
      deepseek_scaling_rope.py);
    - longrope: a short cache of original_max_position rows and a long one of max_position
      (phi3_long_rope_scaled_rope.py long_short_cos_sin_cache);
    - an mrope_section (default or yarn): MRotaryEmbedding, 4x the positions (mrope.py)."""
    kind = str(rope.get("rope_type") or rope.get("type") or "default")
    factor = rope.get("factor")
    factor = float(factor) if isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor > 0 else None
    original = rope.get("original_max_position_embeddings")
    original = original if isinstance(original, int) and not isinstance(original, bool) and original > 0 else None
    rows: float = max_pos
    if "mrope_section" in rope or kind == "mrope":
        rows = (original if kind == "yarn" and original else max_pos) * _MROPE_POSITIONS_FACTOR
    elif kind in ("linear", "dynamic") and factor and "alpha" not in rope:
        rows = max_pos * factor
    elif kind in ("yarn", "deepseek_yarn", "deepseek_llama_scaling") and factor and original:
        rows = original * factor
    elif kind in ("longrope", "su") and original:
        rows = original + max_pos
    # a hostile factor (1e308) must not overflow: no real cache has more rows than the context limit allows
    return int(min(rows, 16 * CONFIG_LIMITS["max_position_embeddings"]))


def _rope_cache_elements(cfg: dict[str, Any], model_type: str, head_dim: int, mla: MLAFacts | None,
                         kinds: list[LayerKind], full_head_dim: int | None) -> int:
    """Elements of the RoPE cos/sin caches vLLM registers as buffers when it builds the model, which
    "Model loading took" counts: rows (_rope_positions) x rotary width, once per distinct rope config
    (get_rope caches instances in _ROPE_DICT), on every rank whole. The models pass
    config.max_position_embeddings, not max_model_len. Checked on public logs: Llama-4-Scout
    (max_position_embeddings 10,485,760, head 128) loads 2.50 GiB above its checkpoint share on each of
    4 H100s; Gemma-3 (linear factor 8 over 131,072 positions, head 256, plus a local default rope)
    0.56 GiB."""
    if model_type in _NO_ROPE_MODEL_TYPES or cfg.get("alibi") or cfg.get("use_alibi") or cfg.get("position_embedding_type") in ("alibi", "absolute"):
        return 0
    if all(k in (LayerKind.NONE, LayerKind.MAMBA) for k in kinds):
        return 0
    max_pos = cfg.get("max_position_embeddings") or cfg.get("n_positions") or cfg.get("seq_length")
    if model_type == "chatglm":
        # chatglm.py: get_rope(max_position=config.seq_length, partial_rotary_factor 0.5)
        max_pos = cfg.get("seq_length") or 8192
    if not isinstance(max_pos, int) or isinstance(max_pos, bool) or max_pos <= 0:
        return 0
    max_pos = min(max_pos, CONFIG_LIMITS["max_position_embeddings"])
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    if not isinstance(rope, dict):
        rope = {}
    # get_rope: rotary_dim = rope_parameters["rope_dim"], else head_size x partial_rotary_factor (transformers 5
    # moves partial_rotary_factor into rope_parameters; older configs keep it, or GPT-NeoX's rotary_pct, on top)
    partial = rope.get("partial_rotary_factor", cfg.get("partial_rotary_factor", cfg.get("rotary_pct", 1.0)))
    if model_type in ("chatglm", "glm") and "partial_rotary_factor" not in rope:
        partial = 0.5  # chatglm.py; glm.py (GlmForCausalLM, before 0.32 moved it to the Transformers backend)
    partial = float(partial) if isinstance(partial, (int, float)) and not isinstance(partial, bool) and 0 < partial <= 1 else 1.0
    width = mla.qk_rope_head_dim if mla is not None else int(head_dim * partial)
    if isinstance(rope.get("rope_dim"), int) and not isinstance(rope.get("rope_dim"), bool) and rope["rope_dim"] > 0:
        width = rope["rope_dim"]
    elif (mla is None and "partial_rotary_factor" not in rope and isinstance(cfg.get("rotary_dim"), int)
          and not isinstance(cfg.get("rotary_dim"), bool) and 0 < cfg["rotary_dim"] <= head_dim):
        width = cfg["rotary_dim"]  # MiniMax-M2 (minimax_m2.py: partial_rotary_factor = rotary_dim / head_dim)
    # transformers 5 keeps one rope config per layer type ({"full_attention": {...}, "sliding_attention": {...}})
    per_type = {k: v for k, v in rope.items() if isinstance(v, dict)}
    if per_type and all(k.endswith("attention") for k in per_type):
        total = 0
        for layer_type, params in per_type.items():
            w = full_head_dim if (layer_type == "full_attention" and full_head_dim) else width
            total += _rope_positions(params, max_pos) * w
        return total
    if (str(rope.get("rope_type") or rope.get("type")) in ("longrope", "su") and "original_max_position_embeddings" not in rope
            and isinstance(cfg.get("original_max_position_embeddings"), int)):
        # Phi-3 keeps original_max_position_embeddings beside rope_scaling (vLLM's get_rope reads it there)
        rope = {**rope, "original_max_position_embeddings": cfg["original_max_position_embeddings"]}
    if str(cfg.get("model_type", model_type)).startswith(_MROPE_MODEL_TYPES) and "mrope_section" not in rope:
        # these families always build MRotaryEmbedding (the shipped configs carry an mrope_section; a
        # trimmed copy may not)
        rope = {**rope, "mrope_section": True}
    # Gemma-4's full-attention layers rotate their wider global head (as in the per-layer-type branch above)
    total = _rope_positions(rope, max_pos) * (full_head_dim or width)
    if mla is not None and str(rope.get("rope_type") or rope.get("type")) in ("yarn", "deepseek_yarn"):
        # deepseek_v2.py turns an MLA model's yarn into deepseek_yarn; DeepseekScalingRotaryEmbedding takes the
        # FlashInfer path on CUDA and keeps its cache in float32 (deepseek_scaling_rope.py use_flashinfer ->
        # base.py skips cache.to(dtype)): twice the 16-bit bytes
        total *= 2
    if model_type.startswith(("gemma3", "gemma4")) and LayerKind.SLIDING in kinds:
        # the sliding layers' rope (local base frequency, no scaling) is a second cache
        # (gemma3.py: rope_parameters {"rope_type": "default"} with rope_local_base_freq)
        total += max_pos * (head_dim if full_head_dim else width)
    return total


def _gemma4_attention(cfg: dict[str, Any], top: dict[str, Any], model_type: str, n_layers: int,
                      kinds: list[LayerKind], where: str) -> dict[str, Any]:
    """Gemma-4's per-layer-type attention and cache sharing (vllm 0.32 gemma4.py, transformers 5.x
    configuration_gemma4.py):
    - full-attention layers use global_head_dim (default 512) and, when attention_k_eq_v is set,
      num_global_key_value_heads KV heads (Gemma4TextConfig.__post_init__ per_layer_config);
    - attention_k_eq_v: those layers ship k_proj only and vLLM loads it into both the K and V slots of
      qkv_proj (the V slot is allocated: _gemma4_layer_weights_mapper);
    - the last num_kv_shared_layers layers read the cache of the last earlier layer of their type
      (kv_sharing_target_layer_name) and get no cache of their own;
    - hidden_size_per_layer_input > 0: a per-layer embedding table embed_tokens_per_layer
      [vocab_size_per_layer_input, num_layers * hidden_size_per_layer_input] (VocabParallelEmbedding)."""
    out: dict[str, Any] = {}
    shared = cfg.get("num_kv_shared_layers") or 0
    if isinstance(shared, int) and 0 < shared < n_layers:
        out["kv_shared_from"] = n_layers - shared
    if model_type != "gemma4_text":
        return out
    if LayerKind.FULL in kinds:
        head = cfg.get("global_head_dim", 512)
        heads = cfg.get("num_global_key_value_heads") if cfg.get("attention_k_eq_v") else None
        # a config saved by transformers carries the resolved per_layer_config {layer: overrides} instead
        per_layer = cfg.get("per_layer_config")
        if isinstance(per_layer, dict) and per_layer:
            full = kinds.index(LayerKind.FULL)
            # keys are layer indices, saved as zero-padded strings ("05") by transformers
            by_layer = {int(k): v for k, v in per_layer.items() if str(k).strip().isdigit()}
            override = by_layer.get(full)
            override = override if isinstance(override, dict) else {}
            head = override.get("head_dim", cfg.get("head_dim"))
            heads = override.get("num_key_value_heads")
        if isinstance(head, int) and head > 0:
            _check_limit(head, "global_head_dim", where, limit_key="head_dim")
            out["full_head_dim"] = head
        if isinstance(heads, int) and heads > 0:
            _check_limit(heads, "num_global_key_value_heads", where, limit_key="num_key_value_heads")
            out["full_num_kv_heads"] = heads
        out["k_eq_v"] = bool(cfg.get("attention_k_eq_v"))
    if cfg.get("use_bidirectional_attention") == "vision":
        # Gemma4ModelArchConfigConvertor.is_mm_prefix_lm -> EngineArgs raises max_num_batched_tokens to the
        # most expensive modality's tokens per item (_get_min_mm_batched_tokens over
        # get_mm_max_tokens_per_item): a video of 32 frames x (70 soft tokens + 2 + 6) = 2496 tokens, above an
        # image's default_output_length (vllm gemma4_mm.py _VIDEO_MAX_FRAMES / _VIDEO_MAX_SOFT_TOKENS)
        vision = top.get("vision_config") if isinstance(top.get("vision_config"), dict) else {}
        image = vision.get("default_output_length") if isinstance(vision.get("default_output_length"), int) else 280
        out["mm_prefix_min_batched_tokens"] = max(32 * (70 + 2 + 6), image)
    ple = cfg.get("hidden_size_per_layer_input") or 0
    if isinstance(ple, int) and ple > 0:
        vocab = cfg.get("vocab_size_per_layer_input") or cfg.get("vocab_size") or 0
        out["per_layer_embedding_params"] = int(vocab) * n_layers * ple
    return out
