"""Falcon-H1's parallel hybrid blocks: every decoder layer runs attention and a Mamba-2 mixer side by side
(vLLM falcon_h1.py FalconH1ParallelHybrid: self_attn and mamba), so vLLM registers two caches per layer. Before
this, the config (no layer_types) was planned as plain attention.

Real vLLM check (CPU build 0.32.0, tests/e2e/test_oracle.py runs it): a tiny Falcon-H1 (two layers; attention
2 heads / 1 KV head of 64; mamba_d_ssm 256, 4 heads of 64, state 16, one group, conv 4; bf16) at
--kv-cache-memory-bytes 1 GiB, --max-model-len 2048 logged "Padding mamba page size by 80.92%" and
"CPU KV cache size: 1,766,022 tokens, Maximum concurrency for 2,048 tokens per request: 862.32x".
"""

from __future__ import annotations

import json
from pathlib import Path

from vllmkit.arch.reader import read_arch
from vllmkit.estimate.specs import build_specs, mamba_state_bytes
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
TINY = {
    "architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1", "dtype": "bfloat16", "hidden_size": 128,
    "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
    "head_dim": 64, "vocab_size": 512, "max_position_embeddings": 4096, "mamba_d_ssm": 256, "mamba_n_heads": 4,
    "mamba_d_head": 64, "mamba_d_state": 16, "mamba_n_groups": 1, "mamba_d_conv": 4, "mamba_expand": 2,
}
# Falcon-H1-7B's shape as the transformers documentation table and a transcription (helper notes) give it
H1_7B = {
    **TINY, "hidden_size": 3072, "intermediate_size": 12288, "num_hidden_layers": 44, "num_attention_heads": 12,
    "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 130048, "mamba_d_ssm": 3072, "mamba_n_heads": 24,
    "mamba_d_head": 128, "mamba_d_state": 256, "max_position_embeddings": 262144,
}


def test_tiny_falcon_h1_matches_the_cpu_log(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    plan = build_plan(PlanRequest(model=str(tmp_path), device="cpu", kv_cache_memory_bytes=1 << 30,
                                  max_model_len=2048), ENV)
    kv = plan.kv_cache
    assert sorted((g.kind, g.layers) for g in kv.groups) == [("full", 2), ("mamba", 2)]
    state = 1728 + 16_384  # conv (256 + 2 x 16) x 3 x 2 B + SSM 4 x 64 x 16 x 4 B (float32 on this CPU)
    assert f"{(32_768 - state) / state * 100:.2f}" == "80.92"
    assert {g.page_bytes for g in kv.groups} == {32_768}  # the state padded to the 128-token attention page
    assert kv.tokens == 1_766_022 and f"{kv.max_concurrency:.2f}" == "862.32"


def test_every_layer_holds_both_caches() -> None:
    arch = read_arch(H1_7B)
    assert arch.parallel_mamba and arch.has_recurrent_state and arch.is_hybrid
    assert arch.mamba is not None and arch.mamba.variant == "mamba2"
    # conv (3,072 + 2 x 256) x 3 x 2 B + SSM 24 x 128 x 256 x 2 B (bf16 on a GPU)
    assert mamba_state_bytes(arch.mamba, 1, 2) == 21_504 + 1_572_864
    specs = build_specs(arch, tp=1, kv_cache_dtype="auto", device="cuda")
    kinds = [s.kind.value for s in specs.specs]
    assert kinds.count("full") == 44 and kinds.count("mamba") == 44
    # 1,024 B a token of attention (2 KV heads x 128 x K,V x 2 B): 16 x cdiv(1,594,368, 16 x 1,024) = 1,568
    assert specs.block_size == 1568
