"""LFM2's short-conv layers (issue 13: hybrid layer kinds): one conv state per layer, no SSM state.

vLLM (0.32.0 wheel) Lfm2ForCausalLM.get_mamba_state_shape_from_config: short_conv_state_shape(tp, conv_dim,
conv_L_cache) = (conv_dim / tp, conv_L_cache - 1) in the cache dtype (short_conv_state_dtype); Lfm2-MoE uses
hidden_size for the dimension. Checked against the real vLLM CPU build: a tiny LFM2 (hidden 128, conv_dim 128,
conv_L_cache 3, one attention layer with one KV head of 64, bf16) logged
"Padding mamba page size by 6300.00%": a 128-token attention page of 128 x 1 x 64 x 2 x 2 B = 32,768 B over a
512 B state = 128 x 2 x 2 B; and "CPU KV cache size: 3,050,402 tokens, Maximum concurrency for 2,048 tokens per
request: 1489.45x" at --kv-cache-memory-bytes 1 GiB (tests/e2e/test_oracle.py runs that case for real).
"""

from __future__ import annotations

from vllmkit.arch.model import LayerKind
from vllmkit.arch.reader import read_arch
from vllmkit.estimate.specs import build_specs, mamba_state_bytes

TINY = {
    "architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "torch_dtype": "bfloat16", "hidden_size": 128,
    "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 512,
    "intermediate_size": 256, "max_position_embeddings": 4096, "conv_L_cache": 3, "conv_dim": 128,
    "layer_types": ["conv", "conv", "full_attention", "conv"],
}


def test_short_conv_state_and_padding_match_the_cpu_log() -> None:
    arch = read_arch(TINY)
    assert arch.layer_kinds == [LayerKind.MAMBA, LayerKind.MAMBA, LayerKind.FULL, LayerKind.MAMBA]
    assert arch.mamba is not None and arch.mamba.variant == "short_conv"
    assert mamba_state_bytes(arch.mamba, 1, 2) == 512
    specs = build_specs(arch, tp=1, kv_cache_dtype="auto", device="cpu")
    assert specs.block_size == 128
    page = specs.block_size * 1 * 64 * 2 * 2
    assert f"{(page - 512) / 512 * 100:.2f}" == "6300.00"
    assert {s.page_bytes for s in specs.specs} == {page}


def test_the_state_splits_over_tp_and_ignores_the_ssm_dtype() -> None:
    arch = read_arch({**TINY, "conv_dim": 2048, "hidden_size": 2048, "num_attention_heads": 32,
                      "num_key_value_heads": 8})
    assert arch.mamba is not None
    assert mamba_state_bytes(arch.mamba, 2, 2) == 1024 * 2 * 2
    # the CPU platform's float32 SSM override has no SSM state to change here
    forced = arch.mamba.model_copy(update={"ssm_dtype": "float32"})
    assert mamba_state_bytes(forced, 1, 2) == 2048 * 2 * 2


def test_full_attn_idxs_without_layer_types() -> None:
    cfg = {k: v for k, v in TINY.items() if k != "layer_types"}
    arch = read_arch({**cfg, "full_attn_idxs": [2]})
    assert arch.layer_kinds == [LayerKind.MAMBA, LayerKind.MAMBA, LayerKind.FULL, LayerKind.MAMBA]


def test_lfm2_moe_uses_hidden_size_and_its_dense_layers() -> None:
    arch = read_arch({**TINY, "model_type": "lfm2_moe", "architectures": ["Lfm2MoeForCausalLM"], "conv_dim": 64,
                      "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64, "num_dense_layers": 2})
    assert arch.mamba is not None and arch.mamba.intermediate_size == 128  # hidden_size, not conv_dim
    assert arch.moe is not None and arch.moe.dense_layers == 2


# --------------------------------------------------------------------------- LFM2.5-1.2B in public vLLM logs

import json  # noqa: E402
from pathlib import Path  # noqa: E402

from vllmkit.plan.models import PlanRequest  # noqa: E402
from vllmkit.plan.service import build_plan  # noqa: E402

LFM25 = Path(__file__).resolve().parents[2] / "data" / "lfm2" / "LFM2.5-1.2B.json"
ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}


def _lfm25(tmp_path: Path, **kw):
    (tmp_path / "config.json").write_text(json.dumps(json.loads(LFM25.read_text())["config"]))
    return build_plan(PlanRequest(model=str(tmp_path), **kw), ENV)


def test_lfm25_vllm_0_17_sweep(tmp_path: Path) -> None:
    """A vLLM 0.17.0 sweep of LFM2.5-1.2B-Instruct (float16, prefix caching off; find_string id 64273009923):
    "Setting attention block size to 16 tokens", "Padding mamba page size by 300.00%", "Add 2 padding layers",
    7.46 GiB -> "GPU KV cache size: 217,264 tokens" and 617.24x / 313.37x / 157.90x at 1,024 / 2,048 / 4,096 tokens.
    Six attention layers (8 KV heads of 64) and ten conv layers: groups of six (the conv layers split 5 + 5, each
    padded by one), 6 x 32,768 B a block;
    the four figures together pin the block count at 40,738 (7.459 GiB, printed 7.46)."""
    budget = 40_738 * 6 * 32_768
    seen = {}
    for length in (1024, 2048, 4096):
        plan = _lfm25(tmp_path, gpu="h100", dtype="float16", vllm_version="0.17.0", max_model_len=length,
                      enable_prefix_caching=False, kv_cache_memory_bytes=budget)
        kv = plan.kv_cache
        assert kv.block_size == 16 and kv.num_blocks == 40_738
        assert sorted((g.kind, g.layers) for g in kv.groups) == [("full", 6), ("mamba", 5), ("mamba", 5)]
        seen[length] = (kv.tokens, f"{kv.max_concurrency:.2f}")
    assert seen == {1024: (217_264, "617.24"), 2048: (217_264, "313.37"), 4096: (217_264, "157.90")}


def test_lfm25_vllm_0_26_fp8_kv_align_mode(tmp_path: Path) -> None:
    """vLLM 0.26.0 on a 16 GiB sm90 GPU (find_string id 60449471537): --kv-cache-dtype fp8, prefix caching on
    (mamba cache mode align), float16: "Padding mamba page size by 100.00%" (a 16-token fp8 page of 16,384 B over
    the 8,192 B float16 conv state), 13.33 GiB -> "GPU KV cache size: 2,324,244 tokens", 70.93x at 32,768. Per
    request 2,048 attention pages + two conv groups x 2 align-mode pages = 2,052; the only block count giving both
    figures is 145,549 (blocks of 6 x 16,384 B: 13.33 GiB). "none" mode (2,050 pages) would give 2,326,510 tokens."""
    plan = _lfm25(tmp_path, gpu="h100", dtype="float16", vllm_version="0.26.0", max_model_len=32_768,
                  kv_cache_dtype="fp8", enable_prefix_caching=True, block_size=16,
                  kv_cache_memory_bytes=145_549 * 6 * 16_384)
    kv = plan.kv_cache
    assert kv.num_blocks == 145_549
    assert kv.tokens == 2_324_244
    assert f"{kv.max_concurrency:.2f}" == "70.93"
