"""Data checks for the catalog entries of round 10 (g): microsoft/Phi-3.5-mini-instruct, microsoft/Phi-4-mini-instruct,
01-ai/Yi-34B-Chat, internlm/internlm2_5-7b-chat, bigcode/starcoder2-15b and deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct.

THUDM/glm-4-9b-chat, first left out here (the reader did not read ChatGLM configs), is in part 10 h.

As in parts 1-9 the figures are not trusted because they are written down: every entry's parameter count is re-derived
here from its config's tensor shapes (the formulas are written out below) and must equal the total of its
params_by_dtype and the independently published count. The planner (build_plan on the catalog entry, H100, TP=1)
must then report weights = checkpoint bytes + vLLM's RoPE cos/sin cache (computed by hand below) and the KV-cache bytes
per token of the hand formula (layers x 2 x kv_heads x head_dim x 2 B; MLA: layers x (kv_lora_rank + rope) x 2 B).
Two cases this file found and the planner now follows:
- LongRoPE (both Phi models): Phi-3 configs keep original_max_position_embeddings at the top level, beside
  rope_scaling; the short cache (4,096 rows x 96 x 2 B = 786,432 B) is counted from there.
- StarCoder2-15B: the checkpoint is float32; vLLM's dtype "auto" serves a float32 config in bfloat16, so a real load
  holds 2 B per parameter, not the 4 B of the files.
No public vLLM log ("Model loading took", "GPU KV cache size") of these exact models was found.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    SAFETENSORS_ITEMSIZE,
    assert_config_source_marked,
    assert_entry_basics,
    assert_weights_add_up,
    assert_weights_from_the_split_alone,
    plan_catalog,
    split_bytes,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog.test_catalog_data_part4 import dense_params, rope_cache_bytes_by_hand
from tests.unit.catalog.test_catalog_data_part9_c import mla_moe_text_split

PHI35 = "microsoft/Phi-3.5-mini-instruct"
PHI4_MINI = "microsoft/Phi-4-mini-instruct"
YI = "01-ai/Yi-34B-Chat"
INTERNLM = "internlm/internlm2_5-7b-chat"
STARCODER2 = "bigcode/starcoder2-15b"
CODER_LITE = "deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct"
IDS: tuple[str, ...] = (PHI35, PHI4_MINI, YI, INTERNLM, STARCODER2, CODER_LITE)
REBUILT_IDS = frozenset({YI, CODER_LITE})

# independently published parameter counts (see each entry's params_source)
PUBLISHED: dict[str, int] = {
    PHI35: 3_821_079_552,  # HF Hub safetensors.total (license/param table), model_sizes table
    PHI4_MINI: 3_836_021_760,  # HF Hub safetensors.total, run manifests ('official_parameter_count')
    YI: 34_388_917_248,  # registry record, total_parameters_source: safetensors
    INTERNLM: 7_737_708_544,  # model_sizes table, InternLM demo banner, 227 BF16 tensors read from headers
    STARCODER2: 15_957_889_024,  # model-card record: 'safetensors metadata', F32
    CODER_LITE: 15_706_484_224,  # HF family table (total_params), the DeepSeek-V2-Lite count
}
ONE_DTYPE: dict[str, str] = {PHI35: "BF16", PHI4_MINI: "BF16", YI: "BF16", INTERNLM: "BF16", STARCODER2: "F32",
                             CODER_LITE: "BF16"}


# --------------------------------------------------------------------------- shape formulas


def phi3_params(c: dict[str, Any]) -> int:
    """Phi3ForCausalLM: embedding (tied for Phi-4-mini, untied for Phi-3.5-mini); per layer a fused qkv_proj
    hidden -> (heads + 2 kv heads) x head_dim, o_proj, a fused gate_up_proj hidden -> 2 x intermediate, down_proj,
    two RMSNorms; final RMSNorm. No biases (attention_bias / mlp_bias / lm_head_bias false)."""
    assert c["architectures"] == ["Phi3ForCausalLM"]
    assert not c.get("attention_bias") and not c.get("mlp_bias") and not c.get("lm_head_bias")
    h, inter = c["hidden_size"], c["intermediate_size"]
    hd = h // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    per_layer = h * (q + 2 * kv) + q * h + h * 2 * inter + inter * h + 2 * h
    embed = c["vocab_size"] * h * (1 if c["tie_word_embeddings"] else 2)
    return embed + c["num_hidden_layers"] * per_layer + h


def internlm2_params(c: dict[str, Any]) -> int:
    """InternLM2ForCausalLM: tok_embeddings and an untied output; per layer attention.wqkv hidden -> (heads + 2 kv
    heads) x head_dim (grouped q/k/v rows), attention.wo, feed_forward w1 / w3 (hidden -> intermediate) and w2, the
    attention_norm and ffn_norm RMSNorms; final norm. bias false: no biases."""
    assert c["architectures"] == ["InternLM2ForCausalLM"] and c["bias"] is False
    h, inter = c["hidden_size"], c["intermediate_size"]
    hd = h // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    per_layer = h * (q + 2 * kv) + q * h + 3 * h * inter + 2 * h
    embed = c["vocab_size"] * h * (1 if c["tie_word_embeddings"] else 2)
    return embed + c["num_hidden_layers"] * per_layer + h


def starcoder2_params(c: dict[str, Any]) -> int:
    """Starcoder2ForCausalLM with use_bias: q, k, v, o projections with biases (k, v: kv heads x head_dim rows), a
    non-gated MLP c_fc hidden -> intermediate and c_proj back, both with biases, two LayerNorms (weight + bias) per
    layer; final LayerNorm (weight + bias); embedding and an untied lm_head without bias."""
    assert c["architectures"] == ["Starcoder2ForCausalLM"] and c["use_bias"] is True
    assert c["norm_type"] == "layer_norm" and c["mlp_type"] == "default"
    h, inter = c["hidden_size"], c["intermediate_size"]
    hd = h // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    attn = (h * q + q) + 2 * (h * kv + kv) + (q * h + h)
    mlp = (h * inter + inter) + (inter * h + h)
    per_layer = attn + mlp + 2 * 2 * h
    embed = c["vocab_size"] * h * (1 if c["tie_word_embeddings"] else 2)
    return embed + c["num_hidden_layers"] * per_layer + 2 * h


def shape_params(model_id: str, c: dict[str, Any]) -> int:
    if model_id in (PHI35, PHI4_MINI):
        return phi3_params(c)
    if model_id == INTERNLM:
        return internlm2_params(c)
    if model_id == STARCODER2:
        return starcoder2_params(c)
    if model_id == CODER_LITE:
        split = mla_moe_text_split(c)
        assert split["F32"] == 0  # greedy softmax router: no e_score_correction_bias
        return split["BF16"]
    assert model_id == YI and c["architectures"] == ["LlamaForCausalLM"]
    return dense_params(c)  # part 4's Llama formula


# --------------------------------------------------------------------------- keys, sources, counts


@pytest.mark.parametrize("model_id", IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["base_model"] == model_id
    assert entry["variant"] == "bf16"
    assert entry["config"].get("quantization_config") is None
    assert_weights_add_up(entry)
    assert_weights_from_the_split_alone(entry)
    assert set(entry["params_by_dtype"]) == {ONE_DTYPE[model_id]} <= set(SAFETENSORS_ITEMSIZE)


@pytest.mark.parametrize("model_id", IDS)
def test_a_rebuilt_config_says_so(model_id: str) -> None:
    assert_config_source_marked(_load(model_id)["config_source"], model_id in REBUILT_IDS, "Transcribed from")


@pytest.mark.parametrize("model_id", IDS)
def test_the_count_follows_from_the_config_shapes(model_id: str) -> None:
    """The shape formula on the entry's own config gives params_by_dtype's total and the published count."""
    entry = _load(model_id)
    total = sum(entry["params_by_dtype"].values())
    assert shape_params(model_id, entry["config"]) == total == PUBLISHED[model_id]


def test_the_phi_counts_by_hand() -> None:
    """Phi-3.5-mini: embedding and lm_head 2 x 32,064 x 3,072 = 197,001,216; a layer: qkv 3,072 x 9,216 = 28,311,552,
    o 9,437,184, gate_up + down 3 x 3,072 x 8,192 = 75,497,472, norms 6,144 -> 113,252,352; x 32 + final norm 3,072
    = 3,821,079,552 (the Phi-3-mini count: same shapes, LongRoPE added).
    Phi-4-mini: tied embedding 200,064 x 3,072 = 614,596,608; a layer: qkv 3,072 x (3,072 + 2 x 1,024) =
    15,728,640, o 9,437,184, MLP 75,497,472, norms 6,144 -> 100,669,440; x 32 + 3,072 = 3,836,021,760."""
    assert 197_001_216 + 32 * 113_252_352 + 3_072 == phi3_params(_load(PHI35)["config"]) == 3_821_079_552
    assert sum(_load("microsoft/Phi-3-mini-4k-instruct")["params_by_dtype"].values()) == 3_821_079_552
    c = _load(PHI4_MINI)["config"]
    assert 614_596_608 + 32 * 100_669_440 + 3_072 == phi3_params(c) == 3_836_021_760
    untied = phi3_params({**c, "tie_word_embeddings": False})
    assert untied - 614_596_608 == PUBLISHED[PHI4_MINI]  # the published count pins the tying


def test_the_yi_internlm_and_starcoder2_counts_by_hand() -> None:
    """Yi-34B: a layer q 7,168^2 = 51,380,224 + k, v 2 x 7,168 x 1,024 = 14,680,064 + o 51,380,224 + MLP
    3 x 7,168 x 20,480 = 440,401,920 + norms 14,336 = 557,856,768; x 60 + 2 x 64,000 x 7,168 + 7,168 =
    34,388,917,248. InternLM2.5-7B: wqkv 4,096 x 6,144 = 25,165,824 + wo 16,777,216 + w1/w3/w2 3 x 4,096 x 14,336 =
    176,160,768 + norms 8,192 = 218,112,000; x 32 + 2 x 92,544 x 4,096 + 4,096 = 7,737,708,544.
    StarCoder2-15B: q, o 2 x (6,144^2 + 6,144) = 75,509,760, k, v 2 x (6,144 x 512 + 512) = 6,292,480, c_fc + c_proj
    2 x 6,144 x 24,576 + 24,576 + 6,144 = 302,020,608, LayerNorms 24,576 -> 383,847,424; x 40 + 2 x 49,152 x 6,144
    + final LayerNorm 12,288 = 15,957,889,024 (F32: 63,831,556,096 B)."""
    assert 60 * 557_856_768 + 2 * 64_000 * 7_168 + 7_168 == shape_params(YI, _load(YI)["config"]) == 34_388_917_248
    assert 32 * 218_112_000 + 2 * 92_544 * 4_096 + 4_096 == internlm2_params(_load(INTERNLM)["config"])
    per_layer = 75_509_760 + 6_292_480 + 302_020_608 + 24_576
    assert per_layer == 383_847_424
    assert 40 * per_layer + 2 * 49_152 * 6_144 + 12_288 == starcoder2_params(_load(STARCODER2)["config"])
    assert _load(STARCODER2)["weights_bytes"] == 4 * 15_957_889_024 == 63_831_556_096
    # the model card's file bytes (63,831,628,056) add the 14 shards' headers to the tensor bytes
    assert 0 < 63_831_628_056 - _load(STARCODER2)["weights_bytes"] < 14 * 8_192


def test_the_internlm_count_matches_the_header_read_bytes() -> None:
    """227 BF16 tensors, 15,475,417,088 data bytes read from a local InternLM2 checkpoint's safetensors headers:
    2 B x the count, and 227 = 32 layers x 7 tensors + tok_embeddings + norm + output."""
    entry = _load(INTERNLM)
    assert split_bytes(entry["params_by_dtype"]) == entry["weights_bytes"] == 15_475_417_088
    assert 32 * 7 + 3 == 227


def test_deepseek_coder_v2_lite_has_the_v2_lite_shapes() -> None:
    """The rebuilt config is DeepSeek-V2-Lite's; the published Coder-V2-Lite-Instruct count is the V2-Lite one."""
    coder, lite = _load(CODER_LITE), _load("deepseek-ai/DeepSeek-V2-Lite")
    assert coder["config"] == lite["config"]
    assert coder["params_by_dtype"] == lite["params_by_dtype"] == {"BF16": PUBLISHED[CODER_LITE]}
    c = coder["config"]
    assert (c["kv_lora_rank"], c["qk_rope_head_dim"], c["q_lora_rank"], c["n_routed_experts"]) == (512, 64, None, 64)


@pytest.mark.parametrize("model_id", IDS)
def test_a_wrong_shape_would_fail(model_id: str) -> None:
    """One changed shape key moves the derived count off the recorded one."""
    entry = _load(model_id)
    total = sum(entry["params_by_dtype"].values())
    keys = ["intermediate_size", "num_hidden_layers", "vocab_size"]
    keys += ["kv_lora_rank", "moe_intermediate_size"] if model_id == CODER_LITE else ["num_key_value_heads"]
    for key in keys:
        bad = copy.deepcopy(entry["config"])
        bad[key] += 1 if key in ("num_hidden_layers", "num_key_value_heads") else 64
        assert shape_params(model_id, bad) != total, (model_id, key)


# --------------------------------------------------------------------------- vLLM's RoPE cache and KV per token, by hand


def rope_cache_by_hand(model_id: str, c: dict[str, Any]) -> int:
    """Bytes of vLLM's cos/sin cache for these configs (16-bit model dtype unless noted):
    - Phi-3.5-mini / Phi-4-mini, LongRoPE: vLLM's rotary_embedding/phi3_long_rope_scaled_rope.py
      (Phi3LongRoPEScaledRotaryEmbedding) registers long_short_cos_sin_cache = a short cache of
      original_max_position_embeddings rows (short_factor) concatenated with a long cache of max_position_embeddings
      rows (long_factor): (4,096 + 131,072) rows x rotary width (head_dim x partial_rotary_factor: 96 both) x 2 B;
    - InternLM2.5, dynamic NTK (factor 2): dynamic_ntk_scaling_rope.py builds max_position_embeddings x factor rows
      (65,536) x head_dim 128 x 2 B -- part 4's helper has no dynamic branch;
    - Yi (default), StarCoder2 (default; vLLM serves the float32 config in bfloat16, so 2 B) and DeepSeek-Coder-V2-Lite
      (deepseek_yarn, original 4,096 x factor 40 rows x rope 64, float32 on CUDA): part 4's rope_cache_bytes_by_hand."""
    if model_id in (PHI35, PHI4_MINI):
        rope = c["rope_scaling"]
        assert rope["type"] == "longrope" and "original_max_position_embeddings" not in rope
        width = int(c["hidden_size"] // c["num_attention_heads"] * c.get("partial_rotary_factor", 1.0))
        return (c["original_max_position_embeddings"] + c["max_position_embeddings"]) * width * 2
    if model_id == INTERNLM:
        rope = c["rope_scaling"]
        assert rope["type"] == "dynamic"
        return int(c["max_position_embeddings"] * rope["factor"]) * (c["hidden_size"] // c["num_attention_heads"]) * 2
    return rope_cache_bytes_by_hand(c)


ROPE_BYTES = {
    PHI35: 135_168 * 96 * 2,  # 25,952,256
    PHI4_MINI: 135_168 * 96 * 2,
    YI: 4_096 * 128 * 2,  # 1,048,576
    INTERNLM: 65_536 * 128 * 2,  # 16,777,216
    STARCODER2: 16_384 * 128 * 2,  # 4,194,304
    CODER_LITE: 163_840 * 64 * 4,  # 41,943,040
}

# layers x 2 (K and V) x kv_heads x head_dim x 2 B; MLA: layers x (kv_lora_rank + qk_rope_head_dim) x 2 B
KV_PER_TOKEN = {
    PHI35: 32 * 2 * 32 * 96 * 2,  # 393,216 (MHA, head 3,072 / 32)
    PHI4_MINI: 32 * 2 * 8 * 128 * 2,  # 131,072
    YI: 60 * 2 * 8 * 128 * 2,  # 245,760
    INTERNLM: 32 * 2 * 8 * 128 * 2,  # 131,072
    STARCODER2: 40 * 2 * 4 * 128 * 2,  # 81,920
    CODER_LITE: 27 * (512 + 64) * 2,  # 31,104
}


@pytest.mark.parametrize("model_id", IDS)
def test_the_hand_tables_follow_from_the_configs(model_id: str) -> None:
    c = _load(model_id)["config"]
    assert rope_cache_by_hand(model_id, c) == ROPE_BYTES[model_id]
    if model_id == CODER_LITE:
        kv = c["num_hidden_layers"] * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * 2
    else:
        kv = c["num_hidden_layers"] * 2 * c["num_key_value_heads"] * (c["hidden_size"] // c["num_attention_heads"]) * 2
    assert kv == KV_PER_TOKEN[model_id]


# --------------------------------------------------------------------------- the planner

_PLANS: dict[str, Any] = {}


def _plan(model_id: str):
    if model_id not in _PLANS:
        _PLANS[model_id] = plan_catalog(model_id, 1, max_model_len=4096, gpu_memory_utilization=0.95)
    return _PLANS[model_id]


@pytest.mark.parametrize("model_id", IDS)
def test_the_reader_gets_the_architecture(model_id: str) -> None:
    """Layers, KV heads and head size as the architecture has them (MLA: one latent 'head' of kv_lora_rank + rope)."""
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import find_entry

    found = find_entry(model_id)
    assert found is not None and found.id == model_id
    arch = read_arch(found.config)
    c = found.config
    assert arch.num_hidden_layers == c["num_hidden_layers"]
    if model_id == CODER_LITE:
        assert arch.mla is not None and arch.moe is not None
        assert (arch.num_kv_heads, arch.head_dim) == (1, 512 + 64)
    else:
        assert arch.num_kv_heads == c["num_key_value_heads"]
        assert arch.head_dim == c["hidden_size"] // c["num_attention_heads"]


@pytest.mark.parametrize("model_id", IDS)
def test_the_planner_kv_bytes_per_token_match_the_hand_formula(model_id: str) -> None:
    plan = _plan(model_id)
    assert plan.fits
    assert plan.kv_cache.bytes_per_token == KV_PER_TOKEN[model_id]


@pytest.mark.parametrize("model_id", (YI, INTERNLM, CODER_LITE))
def test_the_planner_weights_are_the_checkpoint_plus_the_rope_cache(model_id: str) -> None:
    """TP=1: vLLM holds the whole checkpoint plus the cos/sin cache ("Model loading took" counts both)."""
    plan = _plan(model_id)
    assert plan.parallel.tensor_parallel_size * plan.parallel.pipeline_parallel_size == 1
    assert plan.memory.weights_bytes == _load(model_id)["weights_bytes"] + ROPE_BYTES[model_id]


@pytest.mark.parametrize("model_id", (PHI35, PHI4_MINI))
def test_the_planner_longrope_weights_include_the_short_cache(model_id: str) -> None:
    """Phi-3 keeps original_max_position_embeddings beside rope_scaling; vLLM's LongRoPE builds a short cache of
    that many rows and a long one of max_position_embeddings rows (phi3_long_rope_scaled_rope.py)."""
    assert _plan(model_id).memory.weights_bytes == _load(model_id)["weights_bytes"] + ROPE_BYTES[model_id]


def test_the_planner_weights_of_the_float32_starcoder2_are_bfloat16() -> None:
    """vLLM loads the F32 safetensors into bfloat16 parameters: 2 B x 15,957,889,024 + the cache = 29.73 GiB."""
    weights = _plan(STARCODER2).memory.weights_bytes
    assert weights == 2 * PUBLISHED[STARCODER2] + ROPE_BYTES[STARCODER2]
