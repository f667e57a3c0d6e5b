"""Attention-free state-space models (vLLM MambaForCausalLM, also serving FalconMambaForCausalLM, and
Mamba2ForCausalLM): no KV cache, one recurrent state per layer and request, and prefix caching off by default
(ModelConfig.is_prefix_caching_supported: "Attention free models do not support prefix caching").

Before this, such a config was planned as a transformer: every layer full attention.

Real vLLM check (the CPU build, 0.32.0): a tiny Mamba-2 (hidden 128, expand 2, 4 heads of 64, state 16, one
group, conv 4, bf16, two layers) at --kv-cache-memory-bytes 1 GiB and --max-model-len 2048 logged
"CPU KV cache size: 60,704,768 tokens, Maximum concurrency for 2,048 tokens per request: 29641.00x", after
"Reset SSM cache type to float32" (the CPU platform's SSM state dtype). tests/e2e/test_oracle.py runs that case.
"""

from __future__ import annotations

import json
from pathlib import Path

from vllmkit.arch.model import LayerKind
from vllmkit.arch.reader import read_arch
from vllmkit.estimate.specs import mamba_state_bytes
from vllmkit.hardware.host import cpu_has_avx512_bf16
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
DATA = Path(__file__).resolve().parents[2] / "data" / "ssm"
TINY_MAMBA2 = {
    "architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2", "dtype": "bfloat16", "hidden_size": 128,
    "num_hidden_layers": 2, "expand": 2, "num_heads": 4, "head_dim": 64, "state_size": 16, "n_groups": 1,
    "conv_kernel": 4, "vocab_size": 512, "max_position_embeddings": 4096, "tie_word_embeddings": False,
}


def _config(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())["config"]


def test_tiny_mamba2_matches_the_cpu_log(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(TINY_MAMBA2))
    plan = build_plan(PlanRequest(model=str(tmp_path), device="cpu", kv_cache_memory_bytes=1 << 30,
                                  max_model_len=2048), ENV)
    # page: conv (256 + 2 x 16) x 3 x 2 B + SSM 4 x 64 x 16 x 4 B (float32 on this CPU) = 18,112 B; 2 layers
    assert not plan.settings.enable_prefix_caching
    if cpu_has_avx512_bf16():  # vLLM's CPU platform then stores the SSM state in float32 (as on the logging host)
        assert plan.kv_cache.groups[0].page_bytes == 1728 + 16_384
        assert plan.kv_cache.tokens == 60_704_768
        assert f"{plan.kv_cache.max_concurrency:.2f}" == "29641.00"
    else:
        assert plan.kv_cache.groups[0].page_bytes == 1728 + 8_192


def test_attention_free_layers_and_no_attention_bytes() -> None:
    arch = read_arch(_config("tiiuae__Falcon3-Mamba-7B-Base"))
    assert set(arch.layer_kinds) == {LayerKind.MAMBA} and arch.attention_free
    assert arch.mamba is not None and arch.mamba.variant == "mamba1"
    # TP=1, bf16: conv 8,192 x 3 x 2 B + SSM 8,192 x 16 x 2 B
    assert mamba_state_bytes(arch.mamba, 1, 2) == 49_152 + 262_144
    assert arch.kv_layer_count == 0


def test_codestral_mamba2_state_by_hand() -> None:
    arch = read_arch(_config("Molbap__code2"))
    assert arch.mamba is not None and arch.mamba.variant == "mamba2" and arch.attention_free
    # conv (8,192 + 2 x 8 x 128) x 3 x 2 B = 61,440; SSM 128 heads x 64 x 128 x 2 B = 2,097,152
    assert mamba_state_bytes(arch.mamba, 1, 2) == 61_440 + 2_097_152
    assert mamba_state_bytes(arch.mamba, 2, 2) == 30_720 + 1_048_576


def test_a_plan_of_falcon3_mamba_on_an_l4(tmp_path: Path) -> None:
    """Config-only (no weight files): the mixer shapes give 7.27 B parameters (the model is sold as 7B), about
    14.5 GB in BF16 - the transformer formula gave 21 GiB. The state cache holds a request in one page per layer."""
    (tmp_path / "config.json").write_text(json.dumps(_config("tiiuae__Falcon3-Mamba-7B-Base")))
    plan = build_plan(PlanRequest(model=str(tmp_path), gpu="l4", max_model_len=2048), ENV)
    params = plan.memory.weights_bytes / 2
    assert 7.0e9 < params < 7.5e9
    assert plan.fits and not plan.settings.enable_prefix_caching
    assert all(g.kind == "mamba" and g.blocks_per_request == 1 for g in plan.kv_cache.groups)
    per_request = 64 * 311_296
    assert plan.kv_cache.num_blocks == plan.memory.kv_cache_bytes // per_request


def test_a_mamba_workload_is_not_bounded_by_tokens(tmp_path: Path) -> None:
    """A request holds one state page per layer group whatever its length, so eight 768-token requests use 8 of the
    272 state blocks; the scheduler must not read those blocks as 272 x 16 token slots (which made the plan call
    it KV-bound with a high preemption risk)."""
    (tmp_path / "config.json").write_text(json.dumps(_config("tiiuae__Falcon3-Mamba-7B-Base")))
    from vllmkit.estimate.serving import Workload
    from vllmkit.plan.performance import PerfOptions

    plan = build_plan(PlanRequest(model=str(tmp_path), gpu="l4", max_model_len=2048), ENV,
                      perf=PerfOptions(workload=Workload(512, 256, concurrency=8), records=[]))
    perf = plan.performance
    assert perf is not None
    assert perf.bound != "kv-capacity"
    assert perf.kv_usage < 0.1


def test_the_text_plan_says_there_is_no_attention_kv(tmp_path: Path) -> None:
    from tests.clirun import invoke

    (tmp_path / "config.json").write_text(json.dumps(_config("tiiuae__Falcon3-Mamba-7B-Base")))
    result = invoke(["plan", str(tmp_path), "--gpu", "l4"], env=ENV)
    assert result.exit_code == 0
    assert "state blocks, one per request; no attention KV" in result.stdout
    assert "does not support it for attention-free models" in result.stdout
