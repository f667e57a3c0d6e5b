"""Data checks for the catalog entry of round 27 (part 13): moonshotai/Kimi-Linear-48B-A3B-Instruct.

Transcribed: the config (a model-inspection report's verbatim copy, cross-checked against a `curl` of the Hub file).
As in the earlier parts the figures are not trusted because they are written down: the parameter count is
re-derived here from the config's tensor shapes (the layout the report lists tensor by tensor) and compared with the
published count, the dtype split with the published BF16 / FP32 split, and the bytes with the index total.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    GIB,
    assert_config_source_marked,
    assert_entry_basics,
    assert_weights_add_up,
    split_bytes,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog._catalog_checks import plan_catalog as _plan

KIMI = "moonshotai/Kimi-Linear-48B-A3B-Instruct"
PUBLISHED_COUNT = 49_122_681_728  # index metadata.total_parameters (ids 53812905091, 62691149540)
PUBLISHED_TOTAL = 98_245_528_576  # index metadata.total_size (ids 53812905091, 58584248395)
PUBLISHED_F32 = 82_560  # A_log + dt_bias of the 20 KDA layers (id 56747956596)


def kimi_linear_split(c: dict[str, Any]) -> dict[str, int]:
    """Kimi-Linear layout: per KDA layer q/k/v_proj [H*D, h], f_a/g_a [D, h], f_b/g_b [H*D, D], b_proj [H, h],
    o_proj [h, H*D], q/k/v_conv1d [H*D, 1, K] (no bias), o_norm [D] in BF16 and A_log [1, 1, H, 1], dt_bias [H*D]
    in F32; per MLA layer q_proj [heads*(nope+rope), h] (no q_lora), kv_a_proj_with_mqa [kv_lora+rope, h],
    kv_a_layernorm [kv_lora], kv_b_proj [heads*(nope+v), kv_lora], o_proj [h, heads*v]; MoE layers (after
    first_k_dense_replace dense ones) 256 experts x w1/w3 [I, h] + w2 [h, I], a gate [E, h] with its
    e_score_correction_bias [E], shared experts like one expert x num_shared; dense MLP 3 x [inter, h]; two norms per
    layer, a final norm, untied embed_tokens and lm_head [V, h]."""
    h, n, v = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    lac = c["linear_attn_config"]
    heads_k, d, k = lac["num_heads"], lac["head_dim"], lac["short_conv_kernel_size"]
    proj = heads_k * d
    kda_bf16 = 3 * proj * h + 2 * (d * h + proj * d) + heads_k * h + h * proj + 3 * proj * k + d
    kda_f32 = heads_k + proj
    heads, nope, rope, vd, lora = (c["num_attention_heads"], c["qk_nope_head_dim"], c["qk_rope_head_dim"],
                                   c["v_head_dim"], c["kv_lora_rank"])
    mla = heads * (nope + rope) * h + (lora + rope) * h + lora + heads * (nope + vd) * lora + h * heads * vd
    e, inter_moe = c["num_experts"], c["moe_intermediate_size"]
    moe = e * 3 * inter_moe * h + e * h + e + c["num_shared_experts"] * 3 * inter_moe * h
    dense = 3 * c["intermediate_size"] * h
    n_kda, n_mla = len(lac["kda_layers"]), len(lac["full_attn_layers"])
    n_dense = c["first_k_dense_replace"]
    bf16 = (n_kda * kda_bf16 + n_mla * mla + (n - n_dense) * moe + n_dense * dense + 2 * h * n + h
            + (1 if c["tie_word_embeddings"] else 2) * v * h)
    return {"BF16": bf16, "F32": n_kda * kda_f32}


def test_keys_sources_and_weights_arithmetic() -> None:
    entry = _load(KIMI)
    assert_entry_basics(entry, KIMI)
    assert entry["base_model"] == KIMI and entry["variant"] == "bf16"
    assert_weights_add_up(entry)
    assert_config_source_marked(entry["config_source"], False)
    assert entry["weights_bytes"] == PUBLISHED_TOTAL


def test_the_count_and_split_follow_from_the_config_shapes() -> None:
    entry = _load(KIMI)
    split = kimi_linear_split(entry["config"])
    assert sum(split.values()) == PUBLISHED_COUNT
    assert split == entry["params_by_dtype"] and split["F32"] == PUBLISHED_F32
    assert split_bytes(split) == PUBLISHED_TOTAL
    assert round(PUBLISHED_TOTAL / GIB, 1) == 91.5  # "91.5 GiB bf16" (id 58584248395)


@pytest.mark.parametrize(("key", "delta"), [("num_hidden_layers", 1), ("vocab_size", 64), ("hidden_size", 128),
                                            ("moe_intermediate_size", 64)])
def test_a_wrong_config_value_breaks_the_count(key: str, delta: int) -> None:
    c = dict(_load(KIMI)["config"])
    c[key] += delta
    assert sum(kimi_linear_split(c).values()) != PUBLISHED_COUNT


def test_layer_lists_cover_every_layer_once() -> None:
    c = _load(KIMI)["config"]
    lac = c["linear_attn_config"]
    assert sorted(lac["kda_layers"] + lac["full_attn_layers"]) == list(range(1, c["num_hidden_layers"] + 1))


def test_plans_on_two_h100s_with_the_kda_state_not_as_mla() -> None:
    """91.5 GiB of BF16 needs two 80 GB GPUs; the KV per token is 7 MLA layers x 1,152 B (8,064 B), not 27."""
    plan = _plan(KIMI, tp=2)
    assert plan.fits
    assert plan.kv_cache.bytes_per_token == 7 * 576 * 2
    assert abs(plan.memory.weights_bytes - PUBLISHED_TOTAL / 2) / (PUBLISHED_TOTAL / 2) < 0.01
    kinds = sorted({g.kind for g in plan.kv_cache.groups})
    assert kinds == ["mamba", "mla"]
