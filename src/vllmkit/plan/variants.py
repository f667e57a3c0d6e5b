"""Model variants the planner can deploy: the checkpoint asked for, online FP8, and quantized
siblings (from the hub it came from, else the bundled catalog), each with its weight bytes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vllmkit.arch import ModelArch, read_arch
from vllmkit.arch.reader import text_config
from vllmkit.engine.versions import VersionRules
from vllmkit.estimate.weights import estimate_param_bytes
from vllmkit.hub.base import ModelMetadata
from vllmkit.plan.evaluate import EngineSettings


@dataclass
class Variant:
    label: str  # bf16 / fp8 / awq / gptq-int4 ...
    meta: ModelMetadata
    arch: ModelArch
    weight_bytes: int
    weight_source: str  # measured | estimated

def variant_label(meta: ModelMetadata, arch: ModelArch) -> str:
    q = arch.quantization
    if q is None:
        return "fp16" if arch.dtype == "float16" else "bf16"
    method = q.method
    if method in ("fp8", "fbgemm_fp8", "ptpc_fp8") or (
        method in ("compressed-tensors", "quark") and q.bits == 8 and (q.weight_format or "").startswith("float")
    ):
        return "fp8"
    if method == "modelopt":  # NVIDIA ModelOpt FP8 family (quant_algo FP8 / FP8_PB_WO / FP8_PER_CHANNEL_PER_TOKEN)
        return "fp8"
    if method == "modelopt_fp4":
        return "nvfp4"
    if method in ("awq", "awq_marlin"):
        return "awq"
    if method in ("gptq", "gptq_marlin"):
        return f"gptq-int{q.bits or 4}"
    if method == "compressed-tensors":
        if q.bits == 4 and (q.weight_format or "").startswith(("nvfp4", "float")):
            return "nvfp4"  # NVFP4 (format nvfp4-pack-quantized: 4-bit floats in groups of 16)
        return "int8" if q.bits == 8 else f"int{q.bits or 4}"
    return method

def _weights(meta: ModelMetadata, arch: ModelArch) -> tuple[int, str]:
    stored = meta.tensor_bytes or meta.weight_file_bytes()
    if stored:
        return _float32_served_in_16bit(*_without_tied_head(stored, arch), meta, arch)
    return estimate_param_bytes(arch), "estimated"


def _float32_served_in_16bit(total: int, src: str, meta: ModelMetadata, arch: ModelArch) -> tuple[int, str]:
    """A float32 checkpoint (most of its parameters F32) under --dtype auto: vLLM serves it in 16 bits
    (config/model.py _get_and_verify_dtype: float32 -> bfloat16/float16) and casts every tensor at load,
    so it takes 2 bytes a parameter, not the 4 the files hold (bigcode/starcoder2-15b: 63.8 GB of F32
    files, ~29.7 GiB loaded)."""
    counts = meta.params_by_dtype or {}
    f32 = counts.get("F32", 0)
    if arch.quantization is not None or arch.dtype_bytes != 2 or f32 * 2 <= sum(counts.values()):
        return total, src
    return max(total - 2 * f32, 0), "derived"


def _without_tied_head(total: int, arch: ModelArch) -> tuple[int, str]:
    """A checkpoint that ties its embeddings (tie_word_embeddings) but still stores lm_head.weight:
    vLLM skips that tensor at load (qwen2.py / qwen3.py load_weights: AutoWeightsLoader skip_prefixes
    ["lm_head."] when tied), so it takes no GPU memory. Recognised when the stored bytes exceed the
    shape estimate by one vocabulary x hidden matrix (Qwen3-0.6B: 1,503,264,768 B of tensors, vLLM 0.14
    "Model loading took 1.12 GiB" = the tied 596,049,920 parameters x 2 B)."""
    if not arch.tie_word_embeddings or arch.quantization is not None:
        return total, "measured"
    head = arch.vocab_size * arch.hidden_size * arch.dtype_bytes
    extra = total - estimate_param_bytes(arch)
    if head and abs(extra - head) <= 0.02 * head:
        return total - head, "derived"
    return total, "measured"

def kv_scheme_followed(arch: ModelArch, rules: VersionRules) -> ModelArch:
    """Drop a checkpoint-declared KV scheme that this vLLM release does not apply under
    --kv-cache-dtype auto (older releases keep the model dtype; see engine/versions.py)."""
    q = arch.quantization
    if q is None or not q.kv_cache_scheme:
        return arch
    followed = (rules.modelopt_kv_scheme_auto if q.method.startswith("modelopt")
                else rules.ct_kv_scheme_auto if q.method == "compressed-tensors" else True)
    if followed:
        return arch
    return arch.model_copy(update={"quantization": q.model_copy(update={"kv_cache_scheme": None})})


def make_variant(meta: ModelMetadata, rules: VersionRules) -> Variant:
    arch = read_arch(meta.config, tokenizer_config=meta.tokenizer_config, yarn_scaled_max_len=rules.yarn_scales_max_len,
                     mla_cache=rules.mla_cache)
    arch = kv_scheme_followed(arch, rules)
    total, src = _weights(meta, arch)
    return Variant(variant_label(meta, arch), meta, arch, total, src)

def _linear_layers_requantized(variant: Variant, label: str, bytes_per_weight: float) -> Variant:
    """A 16-bit checkpoint whose linear layers vLLM quantizes at load to `bytes_per_weight`; the embeddings
    and the LM head (vocabulary x hidden, 16-bit; one matrix when tied) keep their 2 bytes."""
    arch = variant.arch
    embed = arch.vocab_size * arch.hidden_size * 2
    head = 0 if arch.tie_word_embeddings else embed
    body = max(variant.weight_bytes - embed - head, 0)
    return Variant(label, variant.meta, arch, embed + head + int(body / 2 * bytes_per_weight), "derived")


def online_fp8(variant: Variant) -> Variant:
    """--quantization fp8 on a 16-bit checkpoint: vLLM quantizes the linear layers to 1 byte per
    weight at load; embeddings, lm_head and norms stay 16-bit."""
    return _linear_layers_requantized(variant, "fp8", 1.0)


# --quantization bitsandbytes on a 16-bit checkpoint quantizes every linear layer at load to NF4 with
# double-quantized statistics: vllm/model_executor/model_loader/bitsandbytes_loader.py
# (_quantized_4bit_generator: quantize_4bit(..., compress_statistics=True, quant_type="nf4"), bitsandbytes'
# default blocks of 64) keeps 4 bits a weight + one 8-bit absmax per 64 weights + one float32 per 256
# absmax blocks; embeddings and the LM head (not LinearBase) stay 16-bit.
BNB_NF4_BYTES_PER_WEIGHT = 0.5 + 1 / 64 + 4 / (64 * 256)


def online_bnb4(variant: Variant) -> Variant:
    """--quantization bitsandbytes on a 16-bit checkpoint (in-flight 4-bit). A public vLLM 0.18 start of
    Qwen2.5-3B-Instruct printed "Model loading took 2.07 GiB"; this gives 1.91 GiB (16-bit: 5.76)."""
    return _linear_layers_requantized(variant, "bitsandbytes", BNB_NF4_BYTES_PER_WEIGHT)


def served_in_float32(variant: Variant) -> Variant:
    """--dtype float32 on a 16-bit checkpoint: vLLM loads every parameter as float32 (twice the
    bytes) and, with --kv-cache-dtype auto, caches K and V in float32 too. Checked on a public
    vLLM 0.19 H100 log (Llama-3.1-8B: "Model loading took" 29.98 GiB against 14.99 in bfloat16, and
    175,296 KV tokens from 42.8 GiB: 262,144 B a token, twice bfloat16's)."""
    arch = variant.arch.model_copy(update={"dtype": "float32"})
    return Variant("fp32", variant.meta, arch, variant.weight_bytes * 2, "derived")


_SIBLING_QUANT = {"fp8": ("fp8", 8), "awq": ("awq", 4), "gptq-int4": ("gptq", 4), "gptq-int8": ("gptq", 8),
                  "int8": ("compressed-tensors", 8), "int4": ("compressed-tensors", 4), "nvfp4": ("modelopt_fp4", 4)}


def _hub_sibling_variants(base: Variant, env: Mapping[str, str]) -> list[Variant]:
    """Official / well-known quantized siblings found on the hub the model came from, with their real
    file sizes; the architecture is the base model's (same shapes), labelled with the sibling's method."""
    from vllmkit.arch.model import QuantFacts
    from vllmkit.hub.siblings import find_siblings

    out = []
    for sib in find_siblings(base.meta.id, source=base.meta.source, env=env):
        if not sib.weight_files_bytes or sib.precision not in _SIBLING_QUANT:
            continue
        method, bits = _SIBLING_QUANT[sib.precision]
        arch = base.arch.model_copy(update={"quantization": QuantFacts(method=method, bits=bits)})
        meta = ModelMetadata(id=sib.id, source=sib.source, config=base.meta.config,
                             provenance={"weights": f"{sib.source} file listing of {sib.id}"},
                             notes=[f"sibling of {base.meta.id} published by {sib.publisher or 'the same organisation'}"])
        out.append(Variant(sib.precision, meta, arch, int(sib.weight_files_bytes), "measured"))
    return out

def sibling_variants(meta: ModelMetadata, rules: VersionRules, base: Variant | None = None,
                      env: Mapping[str, str] | None = None) -> list[Variant]:
    """Quantized (or full-precision) siblings: from the hub when the model came from one, else from
    the bundled catalog."""
    if meta.source == "local":
        return []
    if meta.source in ("hf", "modelscope") and base is not None and env is not None:
        return _hub_sibling_variants(base, env)
    from vllmkit.hub.catalog import catalog_siblings, entry_to_metadata

    out = []
    for entry in catalog_siblings(meta.id):
        if entry.id.lower() == meta.id.lower():
            continue
        try:
            out.append(make_variant(entry_to_metadata(entry), rules))
        except Exception:  # a broken sibling never breaks the plan of the model asked for
            continue
    return out


_MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")


def _mtp_config(meta: ModelMetadata) -> dict:
    """The config part that declares MTP layers: the top level (DeepSeek-V3, GLM-4.5, Qwen3-Next) or the
    language-model part of a multimodal config (Qwen3.5: text_config.mtp_num_hidden_layers). vLLM reads
    it from hf_text_config too (vllm/config/speculative.py, the qwen3_5 branch: `mtp_num_hidden_layers`
    from hf_config, else from get_hf_text_config(hf_config); Qwen3_5MTPModelArchConfigConvertor)."""
    top = meta.config
    if any(k in top for k in _MTP_KEYS):
        return top
    nested, _ = text_config(top)
    return nested


def mtp_layers(arch: ModelArch, meta: ModelMetadata) -> int:
    """Multi-token-prediction layers in the checkpoint that vLLM loads only for speculative decoding
    (DeepSeek-V3/GLM-4.5 num_nextn_predict_layers, Qwen3-Next mtp_num_hidden_layers, Qwen3.5
    text_config.mtp_num_hidden_layers: Qwen3_5ForConditionalGeneration drops the "mtp." weights,
    hf_to_vllm_mapper orig_to_new_prefix {"mtp.": None} in vllm/model_executor/models/qwen3_5.py)."""
    cfg = _mtp_config(meta)
    for key in _MTP_KEYS:
        n = cfg.get(key)
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            return n
    return 0


# model types whose MTP layer stores no embedding or head of its own: GLM-4.5/4.6/4.7 and GLM-5/5.1,
# whose published parameter counts equal the config's shapes only with the MTP layer sharing the main
# embed_tokens and lm_head (the catalog entries' tests; the GLM-5.1-FP8 H200 logs' 89.39 GiB agrees)
MTP_SHARES_EMBEDDINGS = frozenset({"glm4_moe", "glm_moe_dsa"})


def mtp_own_embeddings(meta: ModelMetadata) -> bool:
    """DeepSeek MTP layers carry their own embed_tokens + shared_head; GLM's, Qwen3-Next's and Qwen3.5's
    share the main ones (mtp_use_dedicated_embeddings false)."""
    cfg = _mtp_config(meta)
    if str(cfg.get("model_type", "")) in MTP_SHARES_EMBEDDINGS:
        return False
    return "mtp_num_hidden_layers" not in cfg or bool(cfg.get("mtp_use_dedicated_embeddings"))


# MXFP4 expert weights are repacked for the GPU MoE kernels at load: vLLM's "Model loading took"
# is 6-9 % above the checkpoint bytes (gpt-oss-120b on H100: 65.97 GiB in vllm#23278 (0.10.1), 64.38 GiB
# in vllm#33155 (0.14.1) vs 60.77 GiB of files; gpt-oss-20b on A100: 13.72 vs 12.82 GiB, public log).
MXFP4_GPU_LOAD_FACTOR = 1.07


def fp8_linears_padded(arch: ModelArch, rules: VersionRules, device: str) -> bool:
    """Whether vLLM pads this checkpoint's FP8 linear weights at load (ROCm only).

    `_maybe_pad_fp8_weight` (quantization/utils/fp8_utils.py from 0.11.0; Fp8LinearMethod.
    add_padding_to_weight / _maybe_pad_weight in 0.8.0-0.10.x; absent in 0.7.3) runs when
    VLLM_ROCM_FP8_PADDING (default 1) is set on ROCm, for serialized FP8 checkpoints (quant_method
    "fp8", per-tensor and block scales; not the online `--quantization fp8` path) and, from 0.11.0,
    compressed-tensors FP8 weights with tensor or block strategy (not channel). Quark checkpoints
    (AMD's own FP8 format) are not padded in 0.28."""
    q = arch.quantization
    if device != "rocm" or q is None or not rules.rocm_fp8_padding:
        return False
    if q.method == "fp8":
        return True
    if q.method == "compressed-tensors" and rules.rocm_ct_fp8_padding:
        for group in (q.raw.get("config_groups") or {}).values():
            w = group.get("weights") if isinstance(group, dict) else None
            if (isinstance(w, dict) and w.get("type") == "float" and w.get("num_bits") == 8
                    and w.get("strategy") in ("tensor", "block")):
                return True
    return False


def loaded_weight_bytes(variant: Variant, settings: EngineSettings,
                        version: tuple[int, int, int] | None = None) -> tuple[int, str]:
    q = variant.arch.quantization
    if q is not None and q.method == "mxfp4" and settings.device in ("cuda", "rocm"):
        if version is None:
            return int(variant.weight_bytes * MXFP4_GPU_LOAD_FACTOR), "estimated"
        from vllmkit.estimate.weights import mxfp4_load_factor  # issue 13: by release and GPU

        return int(variant.weight_bytes * mxfp4_load_factor(version, settings.compute_capability)), "estimated"
    return variant.weight_bytes, variant.weight_source
