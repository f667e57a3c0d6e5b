"""Falcon's KV heads as vLLM's falcon.py builds them (FalconAttention): the new decoder architecture (Falcon-40B /
180B) has num_kv_heads (n_head_kv in the RefinedWeb configs) KV heads, a multi-query model (Falcon-7B) one, any other
Falcon every head. transformers' FalconConfig and vLLM's RWConfig default multi_query to True; RWConfig turns the new
decoder on for hidden_size 8192 (falcon-40b). Before round 28 the reader took the generic route: no n_head_kv /
num_kv_heads in Falcon-7B's config, so all 71 heads, 71x its KV cache.

Public figures for the checkpoints: a Megatron-LLM conversion script (find_string ids 48243485879, 48966565588)
converts "falcon-7b" with 71 attention heads and num_attention_heads_kv 1, and falcon-40b with 128 and 8. The CPU
oracle sweep's tiny Falcon (multi_query, num_kv_heads left at the class default 71) matches vLLM with one KV head
(benchmarks/data/oracle-sweep-0.32.0.jsonl).
"""

from __future__ import annotations

import pytest

from vllmkit.arch.reader import read_arch

# tiiuae/falcon-7b config.json fields (the transformers-format file: no KV-head key)
FALCON_7B = {"architectures": ["FalconForCausalLM"], "model_type": "falcon", "hidden_size": 4544,
             "num_attention_heads": 71, "num_hidden_layers": 32, "multi_query": True,
             "new_decoder_architecture": False, "parallel_attn": True, "alibi": False, "vocab_size": 65024,
             "torch_dtype": "bfloat16"}
# tiiuae/falcon-40b in the legacy RefinedWeb format (vLLM reads it with its RWConfig)
FALCON_40B_RW = {"architectures": ["RWForCausalLM"], "model_type": "RefinedWeb", "hidden_size": 8192, "n_head": 128,
                 "n_head_kv": 8, "n_layer": 60, "parallel_attn": True, "alibi": False, "vocab_size": 65024,
                 "torch_dtype": "bfloat16"}


def test_falcon_7b_is_multi_query() -> None:
    arch = read_arch(FALCON_7B)
    assert arch.num_kv_heads == 1
    assert arch.head_dim == 4544 // 71 == 64


def test_multi_query_is_the_default_and_a_stale_num_kv_heads_is_ignored() -> None:
    """A config saved by transformers carries num_kv_heads = num_attention_heads (the class fills it in); without the
    new decoder vLLM ignores it."""
    cfg = {k: v for k, v in FALCON_7B.items() if k != "multi_query"}
    assert read_arch({**cfg, "num_kv_heads": 71}).num_kv_heads == 1


def test_multi_head_falcon_without_multi_query() -> None:
    assert read_arch({**FALCON_7B, "multi_query": False}).num_kv_heads == 71


@pytest.mark.parametrize(("cfg", "kv"), [
    (FALCON_40B_RW, 8),
    ({**FALCON_40B_RW, "n_head_kv": None}, 1),  # RWConfig: n_head_kv default 1
    # falcon-180B style, transformers format: the new decoder with num_kv_heads
    ({**FALCON_7B, "new_decoder_architecture": True, "num_kv_heads": 8}, 8),
    ({**FALCON_7B, "new_decoder_architecture": True}, 71),  # FalconConfig: num_kv_heads default every head
])
def test_new_decoder_architecture_uses_its_kv_heads(cfg: dict, kv: int) -> None:
    assert read_arch(cfg).num_kv_heads == kv
