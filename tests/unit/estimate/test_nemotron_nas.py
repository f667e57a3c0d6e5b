"""Nemotron-NAS (DeciLM: Llama-3.3-Nemotron-Super-49B, Llama-3.1-Nemotron-Ultra-253B): per-layer blocks in
`block_configs` (issue 13: hybrid configs without layer_types).

vLLM 0.32 nemotron_nas.py DeciLMDecoderLayer: a block whose attention.no_op is true has no attention at all (no KV
cache; the model's forward keeps a separate kv_cache_index for the others), and every other layer has
num_attention_heads // attention.n_heads_in_group KV heads; vllm/config/model.py counts the attention layers as the
blocks without no_op, and NemotronNasModelArchConfigConvertor takes the KV heads from the first attention block.
The configs have no num_key_value_heads, so before round 28 the reader took all heads in all layers: 80 layers of 64
heads for Super-49B, 13x its real cache.

Data: the published config.json of both (tests/data/nemotron_nas/*.config.json, transcribed from public copies:
tests/data/nemotron_nas/facts.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllmkit.arch.model import LayerKind
from vllmkit.arch.reader import read_arch
from vllmkit.errors import ConfigError
from vllmkit.estimate.specs import kv_bytes_per_token_full

DATA = Path(__file__).resolve().parents[2] / "data" / "nemotron_nas"


def _config(name: str) -> dict:
    return json.loads((DATA / f"{name}.config.json").read_text())


SUPER = "Llama-3_3-Nemotron-Super-49B-v1"
ULTRA = "Llama-3_1-Nemotron-Ultra-253B-v1"


def test_super_49b_layers_and_heads() -> None:
    arch = read_arch(_config(SUPER))
    assert arch.num_hidden_layers == 80
    assert arch.layer_kinds.count(LayerKind.FULL) == 49 and arch.layer_kinds.count(LayerKind.NONE) == 31
    assert arch.num_kv_heads == 64 // 8 and arch.head_dim == 8192 // 64
    assert arch.layer_num_kv_heads is None  # every attention block groups 8 heads


@pytest.mark.parametrize(("name", "tp", "per_token"), [
    # 49 attention layers x 8 KV heads x (128 + 128) x 2 B
    (SUPER, 1, 49 * 8 * 256 * 2),
    (SUPER, 2, 49 * 4 * 256 * 2),
    # 64 attention layers of 128 / 16 = 8 KV heads; TP=8: one per rank
    (ULTRA, 8, 64 * 1 * 256 * 2),
])
def test_kv_bytes_per_token_by_hand(name: str, tp: int, per_token: int) -> None:
    assert kv_bytes_per_token_full(read_arch(_config(name)), tp, "auto") == per_token


def test_layers_with_different_groupings_keep_their_own_kv_heads() -> None:
    """No published checkpoint mixes groupings, but the layer reads its own: 2 KV heads where a block groups 32."""
    cfg = _config(SUPER)
    blocks = [dict(b) for b in cfg["block_configs"]]
    blocks[0] = {**blocks[0], "attention": {**blocks[0]["attention"], "n_heads_in_group": 32}}
    arch = read_arch({**cfg, "block_configs": blocks})
    assert arch.layer_num_kv_heads is not None and arch.layer_num_kv_heads[0] == 2
    assert arch.num_kv_heads == 2  # the first attention block's, as vLLM's convertor takes it
    assert kv_bytes_per_token_full(arch, 1, "auto") == (48 * 8 + 2) * 256 * 2


def test_a_grouping_that_does_not_divide_the_heads_is_refused() -> None:
    cfg = _config(SUPER)
    blocks = [dict(b) for b in cfg["block_configs"]]
    blocks[0] = {**blocks[0], "attention": {**blocks[0]["attention"], "n_heads_in_group": 7}}
    with pytest.raises(ConfigError) as err:
        read_arch({**cfg, "block_configs": blocks})
    assert err.value.code == "config-bad-field"


@pytest.mark.parametrize(("name", "params"), [
    # each attention block 2 x 8192^2 + 2 x 8192 x 8 x 128 + 8192, each FFN 3 x 8192 x inter(ffn_mult) + 8192, the
    # embedding and LM head 2 x 128256 x 8192: a public project note confirms 49,867,145,216 for Super-49B (id
    # 63224824488); Ultra: ik_llama.cpp PR #377's log prints "model params = 253.401 B"
    (SUPER, 49_867_145_216),
    (ULTRA, 253_401_268_224),
])
def test_config_only_weights_follow_the_blocks(name: str, params: int) -> None:
    """Without the repository's sizes the weight estimate counts the blocks as vLLM builds them, not 80 uniform
    Llama layers (146 GiB for Super-49B before)."""
    from vllmkit.estimate.weights import estimate_param_bytes

    arch = read_arch(_config(name))
    assert arch.config_params == params
    assert estimate_param_bytes(arch) == 2 * params
