"""Mamba / hybrid models on the old (V0) engine: attention-only cache blocks, the recurrent state in the profile peak.

vLLM's V0 worker sizes its cache blocks for the attention layers only (worker/cache_engine.py of 0.6.4 - 0.10.1:
num_attention_layers = get_num_layers_by_block_type(..., LayerBlockType.attention)), while the model allocates
its conv and SSM states itself on the first forward pass - the profile run - in a MambaCacheManager sized for
max_num_seqs, padded to the CUDA-graph batch size unless --enforce-eager (models/mamba_cache.py). The profile
therefore counts the states in its torch peak ("peak_torch_memory" / "PyTorch activation peak memory"), and the KV
cache gets what is left. Hybrids run on V0 before 0.9.2 (SupportsV0Only) and, by default, up to 0.10.1 ("V1 mamba
models are unoptimized"; engine/versions.py v1_oracle).
"""

from __future__ import annotations

import pytest

from vllmkit.arch import read_arch
from vllmkit.plan.evaluate import v0_state_cache_bytes, v0_state_cache_rows
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan
from vllmkit.units import GIB

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}

# ibm-fms/Bamba-9B's shapes (transformers' Bamba conversion sets mamba_d_head 64, mamba_d_state 128,
# mamba_n_groups 1; hidden 4096 x expand 2 = 8192 = 128 heads x 64; 3 attention layers of 32)
BAMBA = {"model_type": "bamba", "architectures": ["BambaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
         "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
         "attn_layer_indices": [9, 18, 27], "mamba_n_heads": 128, "mamba_d_head": 64, "mamba_d_state": 128,
         "mamba_n_groups": 1, "mamba_d_conv": 4, "mamba_expand": 2, "torch_dtype": "bfloat16",
         "max_position_embeddings": 4096}


def test_bamba_state_cache_against_vllm_pr_10909_log() -> None:
    """vLLM PR #10909's Bamba-9B start (fp32, TP 2, 256 sequences, CUDA graphs; collected-startup-logs row
    vllmpr10909-...): 'Loading model weights took 18.4902 GB', 'peak_torch_memory=34.50GiB' on the driver and
    34.32 on the other rank. Per rank and sequence, a mamba-2 layer holds a conv state of (8192 + 2 x 2 x 128) / 2 x
    (4 - 1) = 13,056 values (one group, widened to two for TP 2) and an SSM state of 128 / 2 x 64 x 128 = 524,288,
    in fp32: 2,149,376 B; x 29 mamba layers x 256 sequences = 14.86 GiB. The rank that does not sample peaks
    34.32 - 18.49 = 15.83 GiB above its weights: the states plus under 1 GiB of forward pass over 2,048 tokens."""
    arch = read_arch(BAMBA).model_copy(update={"dtype": "float32"})  # the run's dtype=torch.float32
    state = v0_state_cache_bytes(arch, 2, 29, 256, enforce_eager=False)
    assert state == 29 * 256 * (13_056 + 524_288) * 4
    peak_above_weights = (34.32 - 18.4902) * GIB
    assert 0 < peak_above_weights - state < 1.0 * GIB


@pytest.mark.parametrize(("seqs", "eager", "version", "rows"), [
    (256, False, (0, 10, 1), 256),
    (100, False, (0, 10, 1), 104),   # the next capture size, a multiple of 8
    (3, False, (0, 10, 1), 4),
    (2, False, (0, 10, 1), 2),
    (100, True, (0, 10, 1), 100),    # --enforce-eager: no padding (0.7.3 - 0.10.1)
    (100, True, (0, 6, 4), 104),     # 0.6.4's jamba.py pads with _get_graph_batch_size either way
])
def test_state_rows(seqs: int, eager: bool, version: tuple[int, int, int], rows: int) -> None:
    assert v0_state_cache_rows(seqs, eager, version) == rows


def test_granite_4_hybrid_on_0_10_1_plans_attention_only_blocks_and_charges_the_states() -> None:
    """granite-4.0-h-small (4 attention layers of 40, 8 KV heads x 128) at TP 2 on 0.10.1, which runs it on V0:
    16-token blocks of 4 x 2 x 4 x 128 x 2 B = 8 KiB a token per rank, and 36 mamba layers' states for 256
    sequences in the activation term; on 0.10.2 (V1, hybrid allocator) neither."""
    req = PlanRequest(model="ibm-granite/granite-4.0-h-small", source="catalog", gpu="h100", vllm_version="0.10.1",
                      tensor_parallel_size=2, max_model_len=32768)
    plan = build_plan(req, ENV)
    assert (plan.settings.engine, plan.settings.engine_fallback) == ("v0", "Mamba")
    assert plan.kv_cache.block_size == 16
    assert plan.kv_cache.bytes_per_token == 4 * 2 * 4 * 128 * 2
    assert plan.kv_cache.tokens == plan.memory.kv_cache_bytes // (16 * 8192) * 16
    assert "MambaCacheManager" in plan.memory.notes["activation"]
    assert "36 layers x 256 sequences" in plan.memory.notes["activation"]
    v1 = build_plan(req.model_copy(update={"vllm_version": "0.10.2"}), ENV)
    assert v1.settings.engine == "v1"
    assert "MambaCacheManager" not in v1.memory.notes["activation"]
    # the states (9.2 GiB here: 36 x 256 x (conv + 64 heads x 64 x 128 x 2 B) per rank) push the V0 activation
    # term far above V1's
    assert plan.memory.activation_bytes - v1.memory.activation_bytes > 8 * GIB


@pytest.mark.parametrize(("version", "ssm_bytes"), [("0.12.0", 2), ("0.13.0", 4)])
def test_nemotron_h_ssm_state_dtype_by_release(version: str, ssm_bytes: int) -> None:
    """NemotronH's SSM state dtype: the model dtype ("auto", mamba_utils.py _mamba_state_dtype) through 0.12.0;
    from 0.13 the HF config's mamba_ssm_cache_dtype, float32 in NVIDIA's configs (models/config.py
    NemotronHForCausalLMConfig, not in 0.12.0's wheel). NVIDIA-Nemotron-Nano-9B-v2 at TP 1: a conv state of
    (128 x 80 + 2 x 8 x 128) x (4 - 1) = 36,864 values in bf16 and an SSM state of 128 x 80 x 128 = 1,310,720
    values, 2,695,168 B with a bf16 SSM state and 5,316,608 B with fp32; the page is that, padded up to the
    attention block's size."""
    req = PlanRequest(model="nvidia/NVIDIA-Nemotron-Nano-9B-v2", source="catalog", gpu="h100", vllm_version=version,
                      max_model_len=8192)
    plan = build_plan(req, ENV)
    state = 36_864 * 2 + 1_310_720 * ssm_bytes
    pages = {g.page_bytes for g in plan.kv_cache.groups if g.kind == "mamba"}
    assert len(pages) == 1
    (page,) = pages
    assert state <= page < state * 1.05
