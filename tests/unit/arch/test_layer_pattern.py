"""Hybrid configs without `layer_types`: the pattern transformers derives (and vLLM then reads).

Sources of each expected pattern:
- Qwen3NextConfig / Qwen3_5TextConfig (transformers 5.x, also vllm/transformers_utils/configs/
  qwen3_5.py): layer_types = ["linear_attention" if (i + 1) % full_attention_interval else
  "full_attention"], interval default 4. Qwen3.5-27B model card: 64 layers = 16 x (3 GDN + 1 attn).
- BambaConfig.layers_block_type: "attention" if i in attn_layer_indices else "mamba".
- JambaConfig.layers_block_type: "attention" if i % attn_layer_period == attn_layer_offset.
- Cohere2Config: sliding unless (i + 1) % sliding_window_pattern == 0 (default 4).
"""

from __future__ import annotations

import json
from pathlib import Path

from vllmkit.arch import LayerKind, read_arch
from vllmkit.arch.reader import derive_layer_pattern

GUIDE_CONFIG = Path(__file__).resolve().parents[2] / "data" / "guide004" / "config.json"


def _gdn(**extra):
    return {"model_type": "qwen3_next", "hidden_size": 256, "num_hidden_layers": 8, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1000, "max_position_embeddings": 4096,
            "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 32,
            "linear_value_head_dim": 32, "linear_conv_kernel_dim": 4, **extra}


def test_qwen35_27b_without_layer_types_is_16_full_48_gdn() -> None:
    cfg = json.loads(GUIDE_CONFIG.read_text())
    assert "layer_types" not in cfg["text_config"]
    a = read_arch(cfg)
    full = [i for i, k in enumerate(a.layer_kinds) if k is LayerKind.FULL]
    assert full == list(range(3, 64, 4))  # every 4th layer: 3, 7, ..., 63 (model card)
    assert a.layer_kinds.count(LayerKind.MAMBA) == 48
    assert a.mamba is not None and a.mamba.variant == "gdn"


def test_interval_defaults_to_4_for_qwen_gdn_families() -> None:
    a = read_arch(_gdn())
    assert [k is LayerKind.FULL for k in a.layer_kinds] == [False, False, False, True] * 2
    b = read_arch(_gdn(full_attention_interval=2))
    assert [k is LayerKind.FULL for k in b.layer_kinds] == [False, True] * 4


def test_explicit_layer_types_win_over_interval() -> None:
    a = read_arch(_gdn(full_attention_interval=4, layer_types=["full_attention"] * 8))
    assert a.layer_kinds == [LayerKind.FULL] * 8


def test_bamba_attn_layer_indices() -> None:
    kinds = derive_layer_pattern({"attn_layer_indices": [1, 5]}, "bamba", 8)
    assert kinds is not None
    assert [i for i, k in enumerate(kinds) if k is LayerKind.FULL] == [1, 5]
    assert kinds.count(LayerKind.MAMBA) == 6


def test_jamba_period_offset() -> None:
    kinds = derive_layer_pattern({"attn_layer_period": 8, "attn_layer_offset": 4}, "jamba", 16)
    assert kinds is not None
    assert [i for i, k in enumerate(kinds) if k is LayerKind.FULL] == [4, 12]


def test_plain_decoder_has_no_derived_pattern() -> None:
    assert derive_layer_pattern({"hidden_size": 8}, "llama", 4) is None


def test_cohere2_one_full_layer_in_four() -> None:
    cfg = {"model_type": "cohere2", "hidden_size": 256, "num_hidden_layers": 8, "num_attention_heads": 4,
           "num_key_value_heads": 1, "vocab_size": 1000, "max_position_embeddings": 8192, "sliding_window": 4096}
    a = read_arch(cfg)
    assert [k is LayerKind.FULL for k in a.layer_kinds] == [False, False, False, True] * 2
