"""MiMo-V2-Flash: sliding-window and full attention layers with different KV heads and a value head narrower than the
key's (issue 13: hybrid configs without layer_types).

The config carries no layer_types: `hybrid_layer_pattern[i] == 1` marks a sliding-window layer (vllm 0.32
mimo_v2.py is_compressed_softmax_layer), sized by swa_num_key_value_heads / swa_head_dim / swa_v_head_dim and the
window sliding_window_size; the others use num_key_value_heads / head_dim / v_head_dim. vLLM's AttentionSpec pages
hold head_size + head_size_v per KV head. Before this, every layer was planned as full attention with the full
layers' 4 KV heads of 192 + 192.

Checked against:
- the real vLLM CPU build (tests/e2e/test_oracle.py "mimo_v2_flash": a tiny model with the same two shapes,
  benchmarks/oracle_sweep.py PATCHES);
- the cache shapes SGLang allocated for the real model (sgl-project/sglang#15464, 4 x B200, TP=4): "KV Cache is
  allocated. #tokens: 1496958, K size: 41.76 GB, V size: 27.84 GB" for the sliding-window pool and "#tokens:
  1496958, K size: 4.82 GB, V size: 3.21 GB" for the full pool (SGLang's "GB" is GiB). A different engine, but the
  same per-layer K and V widths and the same per-rank KV heads (heads split over TP).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllmkit.arch.model import LayerKind
from vllmkit.arch.reader import read_arch
from vllmkit.estimate.specs import attention_token_bytes
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
GIB = 1 << 30
CONFIG = Path(__file__).resolve().parents[2] / "data" / "mimo" / "MiMo-V2-Flash.json"
SGLANG_TOKENS = 1_496_958


def _config() -> dict:
    return {k: v for k, v in json.loads(CONFIG.read_text()).items() if not k.startswith("_")}


def test_layer_pattern_and_the_two_attention_shapes() -> None:
    arch = read_arch(_config())
    kinds = arch.layer_kinds
    assert [i for i, k in enumerate(kinds) if k is LayerKind.FULL] == [0, 5, 11, 17, 23, 29, 35, 41, 47]
    assert kinds.count(LayerKind.SLIDING) == 39
    assert arch.sliding_window == 128
    # sliding layers are the base shape, full layers the full_* override (the Gemma-4 convention)
    assert (arch.num_kv_heads, arch.head_dim, arch.head_dim_v) == (8, 192, 128)
    assert (arch.full_num_kv_heads, arch.full_head_dim, arch.full_head_dim_v) == (4, 192, 128)
    # attention_chunk_size 128 in the config is a default of the class, not chunked attention
    assert arch.attention_chunk_size is None


def test_per_token_bytes_reproduce_the_pools_sglang_allocated() -> None:
    """TP=4, BF16: full layers 4 / 4 = 1 KV head x (192 + 128) x 2 B = 640 B, sliding layers 8 / 4 = 2 heads x 320 x
    2 B = 1,280 B per token and layer. 1,496,958 tokens x 9 full layers x 640 B = 8.03 GiB = 4.82 (K) + 3.21 (V);
    x 39 sliding layers x 1,280 B = 69.60 GiB = 41.76 + 27.84 GiB."""
    arch = read_arch(_config())
    full = attention_token_bytes(arch, 4, 2, kind=LayerKind.FULL)
    sliding = attention_token_bytes(arch, 4, 2, kind=LayerKind.SLIDING)
    assert (full, sliding) == (640, 1280)
    assert round(SGLANG_TOKENS * 9 * full / GIB, 2) == round(4.82 + 3.21, 2)
    assert round(SGLANG_TOKENS * 39 * sliding / GIB, 2) == round(41.76 + 27.84, 2)
    # and the K / V split: 192 of the 320 values are K
    assert round(SGLANG_TOKENS * 39 * 2 * 192 * 2 / GIB, 2) == 41.76
    assert round(SGLANG_TOKENS * 9 * 1 * 128 * 2 / GIB, 2) == 3.21


def test_the_old_reading_would_have_cached_the_full_layers_shape_everywhere() -> None:
    """Without hybrid_layer_pattern (the reading before round 28) every layer is full attention with 4 KV heads of
    192 + 192: 48 x 4 x 384 x 2 B = 147,456 B per token at TP=1 against 9 x 2,560 + 39 x 5,120 = 222,720 B of
    full-attention-equivalent pages, and no sliding window at all."""
    cfg = _config()
    plain = read_arch({k: v for k, v in cfg.items() if k != "hybrid_layer_pattern"})
    assert set(plain.layer_kinds) != {LayerKind.FULL, LayerKind.SLIDING}
    arch = read_arch(cfg)
    per_layer = [attention_token_bytes(arch, 1, 2, kind=k) for k in arch.layer_kinds]
    assert sum(per_layer) == 9 * 4 * 320 * 2 + 39 * 8 * 320 * 2 == 222_720


@pytest.mark.parametrize("tp", [4, 8])
def test_plan_groups_and_the_sliding_window_bound(tmp_path: Path, tp: int) -> None:
    """The plan keeps the full layers in their own group and the sliding layers in groups of the same size (9 layers:
    1 full + 5 sliding groups, the last holding 3), and a request's sliding-window blocks are capped by the window,
    so the token capacity is far above what 48 full-attention layers of the same memory would hold."""
    (tmp_path / "config.json").write_text(json.dumps(_config()))
    plan = build_plan(PlanRequest(model=str(tmp_path), gpu="h200", gpu_count=tp, tensor_parallel_size=tp,
                                  max_model_len=65_536), ENV)
    kinds = [g.kind for g in plan.kv_cache.groups]
    assert kinds.count("full") == 1 and kinds.count("sliding") == 5
    per_token_all_full = 48 * max(1, 4 // tp) * 320 * 2
    assert plan.kv_cache.tokens > plan.memory.kv_cache_bytes / per_token_all_full
