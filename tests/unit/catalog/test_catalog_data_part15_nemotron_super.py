"""Data checks for the catalog entry of round 28 (part 15): nvidia/Llama-3_3-Nemotron-Super-49B-v1.

Transcribed: the config (NVIDIA NeMo's verbatim copy of the Hub file). The parameter count is re-derived here from
the 80 block_configs with this test's own arithmetic and compared with the publicly confirmed count (a project note,
find_string id 63224824488: "Confirmed size 49,867,145,216 bf16 params"), so a wrong block or width fails it.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.catalog._catalog_checks import (
    assert_config_source_marked,
    assert_entry_basics,
    assert_weights_add_up,
    assert_weights_from_the_split_alone,
)
from tests.unit.catalog._catalog_checks import load_entry as _load
from tests.unit.catalog._catalog_checks import plan_catalog as _plan

SUPER = "nvidia/Llama-3_3-Nemotron-Super-49B-v1"
PUBLISHED_COUNT = 49_867_145_216


def deci_count(c: dict[str, Any]) -> int:
    """Per block: attention (q, o: h x h; k, v: h x (heads / n_heads_in_group) x head; a norm) unless no_op; a gated
    MLP of 2 x ffn_mult x h / 3 rounded up to 256 (three matrices) and a norm unless no_op; then the final norm and
    the untied embedding and LM head."""
    h, heads, vocab = c["hidden_size"], c["num_attention_heads"], c["vocab_size"]
    head = h // heads
    total = h + 2 * vocab * h
    for block in c["block_configs"]:
        attn, ffn = block["attention"], block["ffn"]
        if not attn["no_op"]:
            total += 2 * h * h + 2 * h * (heads // attn["n_heads_in_group"]) * head + h
        if not ffn["no_op"]:
            width = int(2 * ffn["ffn_mult"] * h / 3)
            width = width if width % 256 == 0 else width + 256 - width % 256
            total += 3 * h * width + h
    return total


def test_keys_sources_and_weights_arithmetic() -> None:
    entry = _load(SUPER)
    assert_entry_basics(entry, SUPER)
    assert_weights_add_up(entry)
    assert_weights_from_the_split_alone(entry)
    assert_config_source_marked(entry["config_source"], False)
    assert entry["params_by_dtype"] == {"BF16": PUBLISHED_COUNT}


def test_the_count_follows_from_the_blocks() -> None:
    c = _load(SUPER)["config"]
    assert len(c["block_configs"]) == c["num_hidden_layers"] == 80
    assert deci_count(c) == PUBLISHED_COUNT


@pytest.mark.parametrize("layer", [0, 6, 79])
def test_a_changed_block_breaks_the_count(layer: int) -> None:
    c = dict(_load(SUPER)["config"])
    blocks = [dict(b) for b in c["block_configs"]]
    blocks[layer] = {**blocks[layer], "ffn": {**blocks[layer]["ffn"], "ffn_mult": blocks[layer]["ffn"]["ffn_mult"] * 2}}
    assert deci_count({**c, "block_configs": blocks}) != PUBLISHED_COUNT


def test_plans_49_attention_layers_of_8_kv_heads_and_turns_on_remote_code() -> None:
    plan = _plan(SUPER, tp=2)
    assert plan.fits
    assert plan.kv_cache.bytes_per_token == 49 * 4 * (128 + 128) * 2  # 8 KV heads over TP=2
    from vllmkit.arch.reader import read_arch

    assert read_arch(_load(SUPER)["config"]).trust_remote_code  # auto_map: the serve line gets --trust-remote-code
