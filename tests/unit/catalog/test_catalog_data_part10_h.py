"""Data checks for the catalog entries of round 10 (h): THUDM/glm-4-9b-chat, THUDM/chatglm3-6b (both remote-code
ChatGLMModel, served by vLLM's chatglm.py) and THUDM/glm-4-9b-chat-hf (the transformers-native GlmForCausalLM port,
served by vLLM's glm.py).

As in the earlier parts the figures are not trusted because they are written down: every entry's parameter count is
re-derived here from its config's tensor shapes (formulas below) and must equal the total of its params_by_dtype and
the independently published count. The planner (build_plan on the catalog entry, H100, TP=1) must then report
weights = checkpoint bytes + vLLM's RoPE cos/sin cache (computed by hand below: part 4's rope_cache_bytes_by_hand does
not know ChatGLM) and the KV-cache bytes per token of the hand formula (layers x 2 x kv_heads x head_dim x 2 B).

Found here:
- glm-4-9b-chat-hf: its config.json has no partial_rotary_factor; vLLM's glm.py set it to 0.5 before building the
  Llama layers (a cos/sin cache of 131,072 x 64 x 2 B; the reader now does the same). vLLM 0.32 serves
  GlmForCausalLM through its Transformers backend (registry.py), and the planner warns that it is not native.
- The ChatGLM checkpoints' model object holds transformer.rotary_pos_emb.inv_freq (32 values; the published load logs
  count 32 parameters more than the trainable ones); vLLM's chatglm.py skips it when loading, so it is not counted.
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
)
from tests.unit.catalog._catalog_checks import load_entry as _load

GLM4 = "THUDM/glm-4-9b-chat"
GLM3 = "THUDM/chatglm3-6b"
GLM4_HF = "THUDM/glm-4-9b-chat-hf"
IDS: tuple[str, ...] = (GLM4, GLM3, GLM4_HF)
CHATGLM_IDS = (GLM4, GLM3)
REBUILT_IDS = frozenset({GLM4_HF})

# independently published parameter counts (see each entry's params_source)
PUBLISHED: dict[str, int] = {
    GLM4: 9_399_951_360,  # transformers load log '9399951360 ... trainable'; chatllm.cpp banner
    GLM3: 6_243_584_000,  # transformers load logs of chatglm3-6b; ChatGLM2-6B per-module table
    GLM4_HF: 9_399_951_360,  # the same tensors as GLM4 (no count quoted for the -hf repository itself)
}
ONE_DTYPE: dict[str, str] = {GLM4: "BF16", GLM3: "F16", GLM4_HF: "BF16"}
VARIANT: dict[str, str] = {GLM4: "bf16", GLM3: "fp16", GLM4_HF: "bf16"}
# the published load logs count the model object, which also holds rotary_pos_emb.inv_freq: kv_channels / 4 values
WITH_INV_FREQ: dict[str, int] = {GLM4: 9_399_951_392, GLM3: 6_243_584_032}


# --------------------------------------------------------------------------- shape formulas


def chatglm_params(c: dict[str, Any]) -> int:
    """ChatGLMModel (vLLM chatglm.py): embedding padded_vocab_size x hidden; per layer query_key_value hidden ->
    hidden + 2 x multi_query_group_num x kv_channels with a bias (add_qkv_bias), dense hidden x hidden without bias
    (add_bias_linear false), dense_h_to_4h hidden -> 2 x ffn_hidden_size (gated), dense_4h_to_h ffn_hidden_size ->
    hidden, input_layernorm and post_attention_layernorm (RMSNorm weights); final_layernorm (post_layer_norm);
    output_layer padded_vocab_size x hidden (untied)."""
    assert c["architectures"] == ["ChatGLMModel"] and c["model_type"] == "chatglm"
    assert c["add_qkv_bias"] is True and c["add_bias_linear"] is False and c["rmsnorm"] is True
    assert c["multi_query_attention"] is True and c["post_layer_norm"] is True and c["tie_word_embeddings"] is False
    h, ffn, vocab = c["hidden_size"], c["ffn_hidden_size"], c["padded_vocab_size"]
    qkv_out = h + 2 * c["multi_query_group_num"] * c["kv_channels"]
    per_layer = h * qkv_out + qkv_out + h * h + h * 2 * ffn + ffn * h + 2 * h
    return vocab * h + c["num_layers"] * per_layer + h + vocab * h


def glm_hf_params(c: dict[str, Any]) -> int:
    """GlmForCausalLM (transformers GlmModel; vLLM glm.py = Llama with o_proj bias dropped): embed_tokens; per layer
    q_proj hidden -> heads x head_dim, k_proj / v_proj hidden -> kv_heads x head_dim, all three with biases
    (attention_bias), o_proj without bias, gate_up_proj hidden -> 2 x intermediate, down_proj, two RMSNorms; final
    norm; untied lm_head."""
    assert c["architectures"] == ["GlmForCausalLM"] and c["attention_bias"] is True
    h, inter, hd = c["hidden_size"], c["intermediate_size"], c["head_dim"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    per_layer = (h * q + q) + 2 * (h * kv + kv) + q * h + h * 2 * inter + inter * h + 2 * h
    embed = c["vocab_size"] * h * (1 if c["tie_word_embeddings"] else 2)
    return embed + c["num_hidden_layers"] * per_layer + h


def shape_params(model_id: str, c: dict[str, Any]) -> int:
    return glm_hf_params(c) if model_id == GLM4_HF else chatglm_params(c)


# --------------------------------------------------------------------------- keys, sources, counts


@pytest.mark.parametrize("model_id", IDS)
def test_keys_sources_and_weights_arithmetic(model_id: str) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["base_model"] == model_id
    assert entry["variant"] == VARIANT[model_id]
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


def test_the_counts_by_hand() -> None:
    """A layer of both (hidden 4,096, 2 groups x kv_channels 128, ffn 13,696): query_key_value 4,096 x 4,608 =
    18,874,368 + bias 4,608, dense 16,777,216, dense_h_to_4h 4,096 x 27,392 = 112,197,632, dense_4h_to_h 56,098,816,
    norms 8,192 -> 203,960,832.
    GLM-4-9B: 40 layers 8,158,433,280 + embedding and output_layer 2 x 151,552 x 4,096 = 1,241,513,984 + final norm
    4,096 = 9,399,951,360. ChatGLM3-6B: 28 layers 5,710,903,296 + 2 x 65,024 x 4,096 = 532,676,608 + 4,096 =
    6,243,584,000 (the ChatGLM2-6B table's 203,960,832 per layer and 6,243,584,000 total)."""
    per_layer = 18_874_368 + 4_608 + 16_777_216 + 112_197_632 + 56_098_816 + 8_192
    assert per_layer == 203_960_832
    assert 40 * per_layer + 1_241_513_984 + 4_096 == chatglm_params(_load(GLM4)["config"]) == 9_399_951_360
    assert 28 * per_layer + 532_676_608 + 4_096 == chatglm_params(_load(GLM3)["config"]) == 6_243_584_000


def test_the_hf_port_has_the_same_tensors() -> None:
    """q + k + v of the port are query_key_value's rows (4,096 + 2 x 256) with the same biases; gate_up + down are
    dense_h_to_4h + dense_4h_to_h; both have 40 layers, vocabulary 151,552 and untied heads."""
    chat, port = _load(GLM4)["config"], _load(GLM4_HF)["config"]
    assert port["num_hidden_layers"] == chat["num_layers"] and port["vocab_size"] == chat["padded_vocab_size"]
    assert port["num_key_value_heads"] == chat["multi_query_group_num"] and port["head_dim"] == chat["kv_channels"]
    assert port["intermediate_size"] == chat["ffn_hidden_size"] and port["hidden_size"] == chat["hidden_size"]
    assert port["max_position_embeddings"] == chat["seq_length"] and port["rms_norm_eps"] == chat["layernorm_epsilon"]
    assert glm_hf_params(port) == chatglm_params(chat)
    assert "partial_rotary_factor" not in port  # see the module docstring


@pytest.mark.parametrize("model_id", CHATGLM_IDS)
def test_the_published_log_counts_add_the_inv_freq_buffer(model_id: str) -> None:
    """'has N parameters, M trainable': N - M = 32 = rotary_pos_emb.inv_freq, rotary dim (kv_channels / 2) / 2."""
    c = _load(model_id)["config"]
    assert WITH_INV_FREQ[model_id] - PUBLISHED[model_id] == c["kv_channels"] // 2 // 2 == 32


def test_the_chatglm2_index_total_is_the_chatglm3_bytes_plus_inv_freq() -> None:
    """ChatGLM2-6B (same shapes) pytorch_model.bin.index.json total_size 12,487,168,064 = 2 B x (6,243,584,000 + 32)."""
    assert 12_487_168_064 == _load(GLM3)["weights_bytes"] + 2 * 32


@pytest.mark.parametrize("model_id", IDS)
def test_a_wrong_shape_would_fail(model_id: str) -> None:
    """One changed shape key moves the derived count off the recorded one."""
    entry = _load(model_id)
    total = sum(entry["params_by_dtype"].values())
    if model_id == GLM4_HF:
        keys = ["intermediate_size", "num_hidden_layers", "vocab_size", "num_key_value_heads"]
    else:
        keys = ["ffn_hidden_size", "num_layers", "padded_vocab_size", "multi_query_group_num", "kv_channels"]
    for key in keys:
        bad = copy.deepcopy(entry["config"])
        bad[key] += 1 if key in ("num_hidden_layers", "num_layers", "num_key_value_heads",
                                 "multi_query_group_num") else 64
        assert shape_params(model_id, bad) != total, (model_id, key)


# --------------------------------------------------------------------------- vLLM's RoPE cache and KV per token, by hand


def rope_cache_by_hand(model_id: str, c: dict[str, Any]) -> int:
    """Bytes of vLLM's cos/sin cache (16-bit model dtype, 2 B):
    - ChatGLM (vLLM chatglm.py GLMAttention: get_rope(head_dim, max_position=config.seq_length,
      partial_rotary_factor=0.5, is_neox_style=False)): seq_length rows x (kv_channels // 2) x 2 B;
    - GlmForCausalLM (vLLM glm.py sets hf_config.partial_rotary_factor = 0.5, then Llama's get_rope with
      max_position_embeddings): max_position_embeddings rows x (head_dim // 2) x 2 B."""
    if model_id == GLM4_HF:
        return c["max_position_embeddings"] * (c["head_dim"] // 2) * 2
    return c["seq_length"] * (c["kv_channels"] // 2) * 2


ROPE_BYTES = {
    GLM4: 131_072 * 64 * 2,  # 16,777,216
    GLM3: 8_192 * 64 * 2,  # 1,048,576
    GLM4_HF: 131_072 * 64 * 2,  # 16,777,216
}

# layers x 2 (K and V) x kv_heads x head_dim x 2 B
KV_PER_TOKEN = {
    GLM4: 40 * 2 * 2 * 128 * 2,  # 40,960
    GLM3: 28 * 2 * 2 * 128 * 2,  # 28,672
    GLM4_HF: 40 * 2 * 2 * 128 * 2,  # 40,960
}


def _layers_kv_heads_head(model_id: str, c: dict[str, Any]) -> tuple[int, int, int]:
    if model_id == GLM4_HF:
        return c["num_hidden_layers"], c["num_key_value_heads"], c["head_dim"]
    return c["num_layers"], c["multi_query_group_num"], c["kv_channels"]


@pytest.mark.parametrize("model_id", IDS)
def test_the_hand_tables_follow_from_the_configs(model_id: str) -> None:
    c = _load(model_id)["config"]
    assert rope_cache_by_hand(model_id, c) == ROPE_BYTES[model_id]
    layers, kv_heads, head = _layers_kv_heads_head(model_id, c)
    assert layers * 2 * kv_heads * head * 2 == KV_PER_TOKEN[model_id]


# --------------------------------------------------------------------------- the planner

_PLANS: dict[str, Any] = {}


def _plan(model_id: str):
    if model_id not in _PLANS:
        _PLANS[model_id] = plan_catalog(model_id, 1, max_model_len=4096, gpu_memory_utilization=0.95)
    return _PLANS[model_id]


@pytest.mark.parametrize("model_id", IDS)
def test_the_reader_gets_the_architecture(model_id: str) -> None:
    """Layers, KV heads (multi_query_group_num for ChatGLM) and head size (kv_channels) as the architecture has them,
    and the embedding sized by padded_vocab_size."""
    from vllmkit.arch import read_arch
    from vllmkit.hub.catalog import find_entry

    found = find_entry(model_id)
    assert found is not None and found.id == model_id
    arch = read_arch(found.config)
    layers, kv_heads, head = _layers_kv_heads_head(model_id, found.config)
    assert (arch.num_hidden_layers, arch.num_kv_heads, arch.head_dim) == (layers, kv_heads, head)
    vocab = found.config["vocab_size" if model_id == GLM4_HF else "padded_vocab_size"]
    assert arch.vocab_size == vocab


@pytest.mark.parametrize("model_id", IDS)
def test_the_planner_kv_bytes_per_token_match_the_hand_formula(model_id: str) -> None:
    plan = _plan(model_id)
    assert plan.fits
    assert plan.kv_cache.bytes_per_token == KV_PER_TOKEN[model_id]


@pytest.mark.parametrize("model_id", CHATGLM_IDS)
def test_the_planner_weights_are_the_checkpoint_plus_the_rope_cache(model_id: str) -> None:
    """TP=1: vLLM holds the whole checkpoint plus the cos/sin cache ("Model loading took" counts both)."""
    plan = _plan(model_id)
    assert plan.parallel.tensor_parallel_size * plan.parallel.pipeline_parallel_size == 1
    assert plan.memory.weights_bytes == _load(model_id)["weights_bytes"] + ROPE_BYTES[model_id]


def test_the_planner_weights_of_the_hf_port_use_the_half_rotary_cache() -> None:
    """vLLM's glm.py set partial_rotary_factor 0.5 before building the Llama layers: 131,072 x 64 x 2 B of cache.
    (vLLM 0.32 registers GlmForCausalLM to its Transformers backend, whose rotary module keeps no cache; the
    planner warns that the architecture is not native there and keeps the older releases' figure, 16 MiB.)"""
    plan = _plan(GLM4_HF)
    assert plan.memory.weights_bytes == _load(GLM4_HF)["weights_bytes"] + ROPE_BYTES[GLM4_HF]
    assert any("not one vLLM" in w for w in plan.warnings)
