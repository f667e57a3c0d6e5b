"""Data checks for the catalog entry of round 28 (part 14): zai-org/GLM-4.7-Flash.

Transcribed: the config (a model-information report's verbatim copy, cross-checked against a vLLM test fixture and two
more copies). As in the earlier parts the figures are not trusted because they are written down: the parameter count
is re-derived from the config's tensor shapes and compared with the published count (the index's total_size, which
for this repository is the parameter count, not bytes), and the bytes with the measured tensor payload.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    assert_config_source_marked,
    assert_entry_basics,
    assert_weights_add_up,
    assert_weights_from_the_split_alone,
    split_bytes,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog._catalog_checks import plan_catalog as _plan

GLM = "zai-org/GLM-4.7-Flash"
PUBLISHED_COUNT = 31_221_488_576  # index metadata.total_size, a parameter count here (ids 70194396117, 67119547778)
PUBLISHED_PAYLOAD = 62_442_983_168  # measured BF16/F32 tensor bytes (id 70194396117)


def glm4_moe_lite_split(c: dict[str, Any]) -> dict[str, int]:
    """GLM-4.7-Flash layout (the report's module tree, id 62624914535): per layer MLA q_a_proj [q_lora, h],
    q_a_layernorm [q_lora], q_b_proj [heads*(nope+rope), q_lora], kv_a_proj_with_mqa [kv_lora+rope, h],
    kv_a_layernorm [kv_lora], kv_b_proj [heads*(nope+v), kv_lora], o_proj [h, heads*v] and two norms; the first
    first_k_dense_replace layers a dense MLP 3 x [inter, h], the rest routed experts 3 x [I, h] each, a gate [E, h]
    with its float32 e_score_correction_bias [E] and shared experts of the same shape; a final norm, untied
    embed_tokens and lm_head [V, h]. Each MTP layer is one more such MoE decoder layer plus enorm, hnorm [h],
    eh_proj [h, 2h] and its own embed_tokens, shared_head.norm and shared_head.head."""
    h, n, v = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    heads, nope, rope, vd = c["num_attention_heads"], c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    lora, q_lora = c["kv_lora_rank"], c["q_lora_rank"]
    attn = (h * q_lora + q_lora + q_lora * heads * (nope + rope) + h * (lora + rope) + lora
            + lora * heads * (nope + vd) + heads * vd * h + 2 * h)
    e, inter = c["n_routed_experts"], c["moe_intermediate_size"]
    moe = e * 3 * inter * h + e * h + c["n_shared_experts"] * 3 * inter * h
    n_dense = c["first_k_dense_replace"]
    n_mtp = c["num_nextn_predict_layers"]
    dense = 3 * c["intermediate_size"] * h
    bf16 = n * attn + n_dense * dense + (n - n_dense) * moe + h + 2 * v * h
    bf16 += n_mtp * (attn + moe + 2 * h + 2 * h * h + v * h + h + v * h)
    return {"BF16": bf16, "F32": (n - n_dense + n_mtp) * e}


def test_keys_sources_and_weights_arithmetic() -> None:
    entry = _load(GLM)
    assert_entry_basics(entry, GLM)
    assert entry["base_model"] == GLM and entry["variant"] == "bf16"
    assert_weights_add_up(entry)
    assert_weights_from_the_split_alone(entry)
    assert_config_source_marked(entry["config_source"], False)
    assert entry["weights_bytes"] == PUBLISHED_PAYLOAD


def test_the_count_and_split_follow_from_the_config_shapes() -> None:
    entry = _load(GLM)
    split = glm4_moe_lite_split(entry["config"])
    assert sum(split.values()) == PUBLISHED_COUNT
    assert split == entry["params_by_dtype"]
    assert split_bytes(split) == PUBLISHED_PAYLOAD


@pytest.mark.parametrize(("key", "delta"), [("num_hidden_layers", 1), ("vocab_size", 64), ("kv_lora_rank", 64),
                                            ("moe_intermediate_size", 64), ("num_nextn_predict_layers", -1)])
def test_a_wrong_config_value_breaks_the_count(key: str, delta: int) -> None:
    c = dict(_load(GLM)["config"])
    c[key] += delta
    assert sum(glm4_moe_lite_split(c).values()) != PUBLISHED_COUNT


def test_plans_the_mla_latent_and_leaves_the_mtp_layer_out() -> None:
    """One 576-value latent per token in each of the 47 layers (54,144 B in BF16), not 20 heads of K and V; the MTP
    layer (one decoder layer with its own embedding and head) is not loaded without speculative decoding."""
    plan = _plan(GLM, tp=1)
    assert plan.fits
    assert plan.kv_cache.bytes_per_token == 47 * (512 + 64) * 2
    c = _load(GLM)["config"]
    h, v = c["hidden_size"], c["vocab_size"]
    split = glm4_moe_lite_split(c)
    mtp = split_bytes(split) - split_bytes(glm4_moe_lite_split({**c, "num_nextn_predict_layers": 0}))
    assert mtp > 2 * v * h * 2  # its own embedding and head at least
    assert abs(plan.memory.weights_bytes - (PUBLISHED_PAYLOAD - mtp)) / (PUBLISHED_PAYLOAD - mtp) < 0.005
