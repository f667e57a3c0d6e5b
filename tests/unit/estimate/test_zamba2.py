"""Zamba2: Mamba-2 layers and "hybrid" layers that run a shared attention block and then a Mamba-2 mixer (issue 13:
hybrid configs without layer_types; the round-27 note listed Zamba2's shared attention blocks as not modelled).

vLLM 0.32 zamba2.py: every layer holds a Mamba-2 state (Zamba2HybridLayer wraps a Zamba2MambaDecoderLayer), sized
by get_mamba_state_shape_from_config = mamba2_state_shape(mamba_expand x hidden_size, tp, mamba_ngroups,
n_mamba_heads, mamba_headdim, mamba_d_state, mamba_d_conv); each hybrid layer also has its own attention cache
("KV cache is unique for every attention layer"), Attention(num_attention_heads, attention_head_dim) with no KV-head
count, so K and V for every head. transformers' Zamba2Config (what vLLM loads) derives attention_head_dim =
2 x hidden_size // num_attention_heads and mamba_headdim = mamba_expand x hidden_size // n_mamba_heads; a value the
file gives is the one vLLM uses (the CPU build with a 64-wide attention_head_dim in the file refused a 256-wide
attention_hidden_size, so it had not re-derived it).

Before this the config fell through to the Jamba branch: a mamba1 state, no state in the hybrid layers, and heads of
hidden / heads (112 for the 7B, not 224).

Checked against: the real vLLM CPU build (tests/e2e/test_oracle.py "zamba2"), and vLLM's own test ground truth for
Zyphra/Zamba2-7B-instruct (vllm-project/vllm tests/config/model_arch_groundtruth.json, commit 0a4f4724:
head_size 224, total_num_kv_heads 32, 81 layers, hidden 3584; tests/data/zamba2/facts.md).
"""

from __future__ import annotations

import json
from pathlib import Path

from vllmkit.arch.model import LayerKind
from vllmkit.arch.reader import read_arch
from vllmkit.estimate.specs import attention_token_bytes, mamba_state_bytes
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
CONFIG = Path(__file__).resolve().parents[2] / "data" / "zamba2" / "Zamba2-7B-Instruct.json"


def _config() -> dict:
    return {k: v for k, v in json.loads(CONFIG.read_text()).items() if not k.startswith("_")}


def test_heads_as_vllms_ground_truth_has_them() -> None:
    arch = read_arch(_config())
    assert arch.head_dim == 224 and arch.num_kv_heads == 32  # model_arch_groundtruth.json head_size / kv heads
    assert [i for i, k in enumerate(arch.layer_kinds) if k is LayerKind.FULL] == [6, 11, 17, 23, 29, 35, 41, 47,
                                                                                    53, 59, 65, 71, 77]
    assert arch.layer_kinds.count(LayerKind.MAMBA) == 68
    assert arch.parallel_mamba  # the hybrid layers hold a mamba state too


def test_state_and_kv_bytes_by_hand() -> None:
    """BF16, TP=1: attention 32 heads x (224 + 224) x 2 B = 28,672 B per token and hybrid layer; Mamba-2 state per
    layer: conv (7,168 + 2 x 2 groups x 64) x (4 - 1) x 2 B = 44,544 and SSM 112 heads x 64 x 64 x 2 B = 917,504,
    962,048 B. TP=2: 2 groups split evenly, so half of each: 22,272 + 458,752 = 481,024."""
    arch = read_arch(_config())
    assert arch.mamba is not None and arch.mamba.variant == "mamba2"
    assert attention_token_bytes(arch, 1, 2, kind=LayerKind.FULL) == 28_672
    assert mamba_state_bytes(arch.mamba, 1, 2) == 44_544 + 917_504
    assert mamba_state_bytes(arch.mamba, 2, 2) == 22_272 + 458_752


def test_the_files_head_sizes_win_and_the_derivation_fills_gaps() -> None:
    cfg = _config()
    bare = {k: v for k, v in cfg.items() if k not in ("attention_head_dim", "mamba_headdim")}
    arch = read_arch(bare)
    assert arch.head_dim == 2 * 3584 // 32 == 224
    assert arch.mamba is not None and arch.mamba.head_dim == 2 * 3584 // 112 == 64
    odd = read_arch({**cfg, "attention_head_dim": 128, "mamba_headdim": 32})
    assert odd.head_dim == 128 and odd.mamba is not None and odd.mamba.head_dim == 32


def test_plan_counts_one_state_per_layer_and_13_attention_caches(tmp_path: Path) -> None:
    """81 state slots (68 mamba + 13 hybrid layers) and 13 attention layers per request: the plan's groups cover all
    of them, and the per-token KV is the 13 hybrid layers' only (372,736 B at TP=1)."""
    (tmp_path / "config.json").write_text(json.dumps(_config()))
    plan = build_plan(PlanRequest(model=str(tmp_path), gpu="h100", max_model_len=4096), ENV)
    kinds = [g.kind for g in plan.kv_cache.groups]
    assert "mamba" in kinds and "full" in kinds
    assert plan.kv_cache.bytes_per_token == 13 * 28_672
