"""Data checks for the catalog entries of part 17: the Qwen3 Thinking-2507 MoE refreshes.

Qwen/Qwen3-30B-A3B-Thinking-2507: the config is transcribed and byte-verified (its SHA-256 is the one a public
benchmark manifest pins for the Thinking snapshot, and equals the Instruct-2507 sibling's file); the weight figure is
the index total of a byte-identical index. Qwen/Qwen3-235B-A22B-Thinking-2507: the config is rebuilt from a
transcription (marked REBUILT) and the weight figure is the published parameter count times two bytes.

As in the earlier parts the figures are not trusted because they are written down: the parameter count is re-derived
here from the config's tensor shapes with this test's own Qwen3-MoE arithmetic and compared with the published Hugging
Face totals (find_string id 69468411049), so a wrong shape or a wrong count fails.
"""

from __future__ import annotations

import hashlib
import json
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

Q30 = "Qwen/Qwen3-30B-A3B-Thinking-2507"
Q235 = "Qwen/Qwen3-235B-A22B-Thinking-2507"
SIBLING = {Q30: "Qwen/Qwen3-30B-A3B-Instruct-2507", Q235: "Qwen/Qwen3-235B-A22B-Instruct-2507"}
# Hugging Face total_params of each repository (id 69468411049).
PUBLISHED_COUNT = {Q30: 30_532_122_624, Q235: 235_093_634_560}
# config.json SHA-256 pinned for the 30B Thinking snapshot 144afc2f (ids 61971000573, 62013095564).
Q30_CONFIG_SHA256 = "a1ee086a68d0cbfc87316da00ba4b8507bd1292978108e2496201a30a450f438"
Q30_INDEX_TOTAL = 61_064_245_248
Q30_SHARD_BYTES = 61_066_575_656  # the 16 shard files (id 62013095564)


def qwen3_moe_count(c: dict[str, Any]) -> int:
    """Qwen3-MoE decoder (every layer sparse): q_proj [heads*hd, h], k_proj and v_proj [kv*hd, h], o_proj
    [h, heads*hd], no biases, per-head q_norm and k_norm [hd]; a router [E, h] and E experts of gate/up [I, h] and
    down [h, I]; input and post-attention RMSNorms [h]; then the final norm [h], embed_tokens and an untied lm_head
    [V, h]."""
    assert c["decoder_sparse_step"] == 1 and c["mlp_only_layers"] == [] and not c["attention_bias"]
    h, hd, n, v = c["hidden_size"], c["head_dim"], c["num_hidden_layers"], c["vocab_size"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    attention = h * q + 2 * h * kv + q * h + 2 * hd
    experts = c["num_experts"] * 3 * h * c["moe_intermediate_size"] + c["num_experts"] * h
    embeddings = v * h * (1 if c["tie_word_embeddings"] else 2)
    return n * (attention + experts + 2 * h) + h + embeddings


@pytest.mark.parametrize(("model_id", "rebuilt"), [(Q30, False), (Q235, True)])
def test_keys_sources_and_weights_arithmetic(model_id: str, rebuilt: bool) -> None:
    entry = _load(model_id)
    assert_entry_basics(entry, model_id)
    assert entry["base_model"] == model_id and entry["variant"] == "bf16"
    assert_weights_add_up(entry)
    assert_config_source_marked(entry["config_source"], rebuilt)
    assert entry["params_by_dtype"] == {"BF16": PUBLISHED_COUNT[model_id]}


def test_the_30b_weights_are_its_index_total_and_the_235b_weights_its_count_times_two() -> None:
    q30 = _load(Q30)
    assert q30["weights_bytes_kind"] == "index_total_size"
    assert q30["index_total_size"] == q30["weights_bytes"] == Q30_INDEX_TOTAL == 2 * PUBLISHED_COUNT[Q30]
    assert 0 < Q30_SHARD_BYTES - Q30_INDEX_TOTAL < 16 * 2**20  # safetensors headers only, 16 shards
    q235 = _load(Q235)
    assert_weights_from_the_split_alone(q235)
    assert q235["weights_bytes"] == 2 * PUBLISHED_COUNT[Q235] == 470_187_269_120


@pytest.mark.parametrize("model_id", [Q30, Q235])
def test_the_count_follows_from_the_config_shapes(model_id: str) -> None:
    entry = _load(model_id)
    count = qwen3_moe_count(entry["config"])
    assert count == PUBLISHED_COUNT[model_id]
    assert split_bytes({"BF16": count}) == entry["weights_bytes"]


@pytest.mark.parametrize("model_id", [Q30, Q235])
@pytest.mark.parametrize(
    ("key", "delta"),
    [
        ("num_hidden_layers", 1),
        ("moe_intermediate_size", 64),
        ("num_key_value_heads", 4),
        ("num_experts", 8),
        ("vocab_size", 64),
        ("head_dim", 64),
    ],
)
def test_a_wrong_config_value_breaks_the_count(model_id: str, key: str, delta: int) -> None:
    c = dict(_load(model_id)["config"])
    c[key] += delta
    assert qwen3_moe_count(c) != PUBLISHED_COUNT[model_id]


def test_tied_embeddings_would_break_the_count() -> None:
    for model_id in (Q30, Q235):
        c = {**_load(model_id)["config"], "tie_word_embeddings": True}
        assert qwen3_moe_count(c) != PUBLISHED_COUNT[model_id]


def test_the_30b_config_is_the_pinned_file_byte_for_byte() -> None:
    """The dict serialised as Hugging Face writes it (indent 2, no trailing newline) is the 963-byte file whose SHA-256
    the benchmark manifest pins for the Thinking snapshot."""
    text = json.dumps(_load(Q30)["config"], indent=2)
    assert len(text.encode()) == 963
    assert hashlib.sha256(text.encode()).hexdigest() == Q30_CONFIG_SHA256


@pytest.mark.parametrize(("model_id", "rope_theta"), [(Q30, 10_000_000), (Q235, 5_000_000)])
def test_the_thinking_configs_match_their_instruct_siblings(model_id: str, rope_theta: int) -> None:
    """Compared, not assumed: the 2507 context and RoPE base of each Thinking file (sources in config_source) are
    those of its Instruct-2507 sibling, and so is every other key, in the same order."""
    config = _load(model_id)["config"]
    assert config["max_position_embeddings"] == 262_144
    assert config["rope_theta"] == rope_theta and config["rope_scaling"] is None
    assert config["sliding_window"] is None and config["use_sliding_window"] is False
    sibling = _load(SIBLING[model_id])["config"]
    assert list(config) == list(sibling) and config == sibling


def test_plans_the_30b_on_one_h100_with_four_kv_heads() -> None:
    plan = _plan(Q30, tp=1)
    assert plan.fits
    assert plan.kv_cache.bytes_per_token == 48 * 2 * 4 * 128 * 2  # 98,304 B: K and V, 4 KV heads, 48 layers
    assert abs(plan.memory.weights_bytes - Q30_INDEX_TOTAL) / Q30_INDEX_TOTAL < 0.005


def test_plans_the_235b_on_eight_h100_with_one_kv_head_per_rank() -> None:
    """4 KV heads over TP=8: each rank holds one replicated KV head, 94 layers x K and V x 128 x 2 B."""
    plan = _plan(Q235, tp=8)
    assert plan.fits
    assert plan.kv_cache.bytes_per_token == 94 * 2 * 1 * 128 * 2
    per_rank = _load(Q235)["weights_bytes"] / 8
    assert abs(plan.memory.weights_bytes - per_rank) / per_rank < 0.01
