"""Kimi Delta Attention (KDA) hybrids: Kimi-Linear-48B-A3B and Kimi-K3 (issue 13: hybrid configs without layer_types).

Their configs carry no layer_types: `linear_attn_config.kda_layers` lists the KDA layers 1-based (vLLM
KimiLinearConfig.is_kda_layer(i) = (i + 1) in kda_layers) and every other layer is MLA. vLLM caches per KDA layer
q, k and v short-conv states and a float32 (heads, head_dim, head_dim) recurrent state
(MambaStateShapeCalculator.kda_state_shape / kda_state_dtype, 0.11.1 and 0.32.0 wheels), and sizes the attention
block so one MLA page holds that state: a multiple of 64 through 0.19, of 128 from 0.27 (engine/versions.py).

Checked against what real vLLM runs printed (the CPU build cannot run KDA here, so these are public GPU logs):
- vllm-project/vllm#28228 (Kimi-Linear AWQ, 2 x RTX 3090, TP=2, --max-model-len 120000, vLLM 0.11.x):
  "Setting attention block size to 960 tokens", "Padding mamba page size by 1.89%", "Available KV cache memory:
  2.30 GiB", "GPU KV cache size: 75,840 tokens", "Maximum concurrency for 120,000 tokens per request: 2.48x".
  AWQ quantizes the linear weights only: the KV and state shapes are the BF16 model's.
- vllm-project/vllm#30092 (Kimi-Linear BF16, TP=1, 0.11.2.dev520): "Setting attention block size to 1920 tokens".
- a Kimi-K3 deployment note (16 x H200, TP=16, max_model_len 29,696; search-index file id 62726046002, nightly of
  2026-07-27): block size 384, "Padding mamba page size by 8.68%", 0.82 GiB of KV per GPU, "GPU KV cache size:
  30,062 tokens", concurrency 1.012x, and at max_model_len 32,768 "0.88 GiB KV cache is needed ... the estimated
  maximum model length is 30336". Its 1.012x (one state page per request and group) shows the run kept the state
  cache in "none" mode (prefix caching off); "align" mode would hold two pages and give 0.976x.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllmkit.arch.model import LayerKind
from vllmkit.arch.reader import read_arch
from vllmkit.estimate.specs import mamba_state_bytes
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
GIB = 1 << 30
KIMI = "moonshotai/Kimi-Linear-48B-A3B-Instruct"
K3_CONFIG = Path(__file__).resolve().parents[2] / "data" / "kimi" / "kimi_k3_trimmed_config.json"


def _kimi_config() -> dict:
    from vllmkit.hub.catalog import find_entry

    entry = find_entry(KIMI)
    assert entry is not None
    return dict(entry.config)


def test_kda_layers_are_one_based_and_the_rest_mla() -> None:
    arch = read_arch(_kimi_config())
    kinds = arch.layer_kinds
    assert len(kinds) == 27
    # full_attn_layers [4, 8, ..., 24, 27] (1-based) -> indices 3, 7, ..., 23, 26
    assert [i for i, k in enumerate(kinds) if k is LayerKind.MLA] == [3, 7, 11, 15, 19, 23, 26]
    assert sum(k is LayerKind.MAMBA for k in kinds) == 20
    assert arch.mamba is not None and arch.mamba.variant == "kda"


def test_kda_state_bytes_by_hand() -> None:
    """TP=2: conv 3 x (32 x 128 / 2) x (4 - 1) x 2 B = 36,864; recurrent 16 x 128 x 128 x 4 B = 1,048,576."""
    mamba = read_arch(_kimi_config()).mamba
    assert mamba is not None
    assert mamba_state_bytes(mamba, 2, 2) == 36_864 + 1_048_576
    assert mamba_state_bytes(mamba, 1, 2) == 73_728 + 2_097_152
    # the 1.89 % padding vLLM logged: a 960-token MLA page (960 x 576 x 2 B) over the TP=2 state
    assert round((960 * 1152 - 1_085_440) / 1_085_440 * 100, 2) == 1.89


def _kimi_28228(budget_gib: float, **kw):
    base = dict(model=KIMI, gpu="rtx-3090", source="catalog", vllm_version="0.11.1", tensor_parallel_size=2,
                max_model_len=120_000, gpu_memory_utilization=0.95, max_num_batched_tokens=64_000, max_num_seqs=8,
                kv_cache_memory_bytes=int(budget_gib * GIB))
    return build_plan(PlanRequest(**{**base, **kw}), ENV)


@pytest.mark.parametrize("budget_gib", [2.295, 2.297, 2.2995])
def test_vllm_28228_block_tokens_and_concurrency(budget_gib: float) -> None:
    """Any budget vLLM would print as 2.30 GiB and that gives its 2.48x: 318 blocks of 7 x 1,105,920 B."""
    kv = _kimi_28228(budget_gib).kv_cache
    assert kv.block_size == 960
    assert kv.tokens == 75_840  # 318 // 4 groups x 960
    assert f"{kv.max_concurrency:.2f}" == "2.48"
    # 7 MLA layers in one group, 20 KDA layers in three groups of 7 (vLLM: "Add 1 padding layers")
    assert sorted((g.kind, g.layers) for g in kv.groups) == [("mamba", 6), ("mamba", 7), ("mamba", 7), ("mla", 7)]


def test_vllm_30092_block_size_at_tp1() -> None:
    plan = build_plan(PlanRequest(model=KIMI, gpu="h100", source="catalog", vllm_version="0.11.2",
                                  tensor_parallel_size=1, max_model_len=1_048_576), ENV)
    assert plan.kv_cache.block_size == 1920  # 64 x cdiv(2,170,880, 64 x 1,152)


def test_alignment_follows_the_release() -> None:
    """The same TP=2 state (942.2 tokens of MLA page): 960 through 0.19 (64), 944 on Ampere in 0.20-0.26 (the
    Triton MLA backend's 16), 1024 from 0.27 (128)."""
    sizes = {v: _kimi_28228(2.297, vllm_version=v).kv_cache.block_size for v in ("0.19.0", "0.26.0", "0.27.0", "0.32.0")}
    assert sizes == {"0.19.0": 960, "0.26.0": 944, "0.27.0": 1024, "0.32.0": 1024}


def _k3_dir(tmp_path: Path) -> Path:
    cfg = json.loads(K3_CONFIG.read_text())
    cfg.pop("_source")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return tmp_path


def _k3(tmp_path: Path, max_len: int):
    return build_plan(PlanRequest(model=str(_k3_dir(tmp_path)), gpu="h200", gpu_count=16, tensor_parallel_size=16,
                                  vllm_version="0.26.0", max_model_len=max_len, enable_prefix_caching=False,
                                  kv_cache_memory_bytes=int(0.82 * GIB)), ENV)


def test_kimi_k3_tp16_block_tokens_and_concurrency(tmp_path: Path) -> None:
    plan = _k3(tmp_path, 29_696)
    kv = plan.kv_cache
    assert kv.block_size == 384
    state = 3 * (96 * 128 // 16) * 3 * 2 + (96 // 16) * 128 * 128 * 4
    assert round((384 * 1152 - state) / state * 100, 2) == 8.68
    assert kv.tokens == 30_062
    assert f"{kv.max_concurrency:.3f}" == "1.012"


def test_kimi_k3_estimated_max_len_when_too_small(tmp_path: Path) -> None:
    plan = _k3(tmp_path, 32_768)
    assert not plan.fits
    assert plan.estimated_max_model_len == 30_336


def test_a_kda_config_without_state_sizes_is_refused(tmp_path: Path) -> None:
    cfg = _kimi_config()
    cfg["linear_attn_config"] = {k: v for k, v in cfg["linear_attn_config"].items() if k != "num_heads"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    from vllmkit.errors import ConfigError

    with pytest.raises(ConfigError):
        read_arch(cfg)


def test_no_kda_layers_means_plain_mla() -> None:
    cfg = _kimi_config()
    cfg["linear_attn_config"] = {**cfg["linear_attn_config"], "kda_layers": []}
    arch = read_arch(cfg)
    assert set(arch.layer_kinds) == {LayerKind.MLA} and arch.mamba is None


def test_k3_fixture_is_the_published_shape() -> None:
    cfg = json.loads(K3_CONFIG.read_text())["text_config"]
    lac = cfg["linear_attn_config"]
    assert len(lac["kda_layers"]) == 69 and len(lac["full_attn_layers"]) == 24
    assert sorted(lac["kda_layers"] + lac["full_attn_layers"]) == list(range(1, cfg["num_hidden_layers"] + 1))
