"""Memory rules added in round 8, each checked against the public log it was read from (llm-d planner's
vLLM 0.19 H100 sweep, benchmarks/data/collected-startup-logs-4.jsonl) and against the vLLM source.

- From vLLM 0.17 a TP group on an NVSwitch fabric (capability 9.0 / 10.x, PP = DP = 1, FlashInfer,
  compilation) builds FlashInfer's all-reduce + RMSNorm fusion workspace outside PyTorch's allocator
  (vllm/config/vllm.py enable_allreduce_rms_fusion in the 0.17.0 / 0.19.0 wheels); the 0.19 logs print
  "non-torch forward increase memory" 0.25 GiB at TP=1 and 2.07 GiB at TP=2, 0.07 with PP only;
- --dtype float32 loads a 16-bit checkpoint at 4 bytes a parameter and caches K/V in float32.
"""

from __future__ import annotations

import pytest

from vllmkit.errors import VllmkitError
from vllmkit.estimate.memory import (
    FUSION_REST_NON_TORCH,
    FUSION_WORKSPACE_0_17,
    FUSION_WORKSPACE_NON_TORCH,
    allreduce_fusion_non_torch,
)
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
GIB = 1 << 30


def _llama(**kw) -> PlanRequest:
    base = dict(model="meta-llama/Llama-3.1-8B-Instruct", source="catalog", gpu="h100", vllm_version="0.19.0",
                max_model_len=8192, gpu_memory_utilization=0.95, enable_prefix_caching=False)
    base.update(kw)
    return PlanRequest(**base)


def test_the_term_is_the_logged_difference_between_tp2_and_tp1() -> None:
    # 2.07 - 0.25 GiB (Llama-3.1-8B) and 2.09 - 0.25 (Qwen2.5-72B), 2.13 - 0.25 and 2.17 - 0.25 at TP=4:
    # the median of the five TP logs' extra is 1.85 GiB; 0.17 allocates the three 512 MiB buffers
    assert FUSION_WORKSPACE_NON_TORCH / GIB == pytest.approx(1.85, abs=0.005)
    assert FUSION_WORKSPACE_0_17 == 3 * 512 * 2**20


@pytest.mark.parametrize(
    ("tp", "pp", "dp", "cc", "version", "multicast", "charged"),
    [
        (2, 1, 1, 9.0, (0, 19, 0), True, FUSION_WORKSPACE_NON_TORCH),
        (4, 1, 1, 10.0, (0, 18, 0), True, FUSION_WORKSPACE_NON_TORCH),
        (2, 1, 1, 9.0, (0, 17, 0), True, FUSION_WORKSPACE_0_17),
        (2, 1, 1, 9.0, (0, 16, 0), True, 0),  # the fusion is off at every -O level through 0.16
        (2, 1, 1, 9.0, (0, 10, 2), True, 0),  # legalai H200 TP=2 log: no extra
        (1, 1, 1, 9.0, (0, 19, 0), True, 0),  # no TP group
        (2, 2, 1, 9.0, (0, 19, 0), True, 0),  # TP with PP: the fusion is disabled (vllm#35426)
        (2, 1, 2, 9.0, (0, 19, 0), True, 0),  # TP with DP: disabled (vllm#34458)
        (2, 2, 1, 9.0, (0, 20, 0), True, 0),  # the 0.20 wheel still excludes both
        (2, 2, 1, 9.0, (0, 21, 0), True, FUSION_WORKSPACE_NON_TORCH),  # 0.21's enable_allreduce_rms_fusion: no
        (2, 1, 2, 9.0, (0, 21, 0), True, FUSION_WORKSPACE_NON_TORCH),  # PP / DP exclusion any more
        (2, 1, 1, 9.0, (0, 19, 0), False, 0),  # PCIe / NVLink-bridge pairs: no multicast, no workspace
        (2, 1, 1, 8.9, (0, 19, 0), True, 0),  # L40S / RTX 4090: capability outside the rule
        (2, 1, 1, 12.0, (0, 32, 0), True, 0),  # RTX PRO 6000 / RTX 5090
        (2, 1, 1, 10.3, (0, 17, 0), True, 0),  # B300: 0.17 checks capability 10.0 exactly
        (2, 1, 1, 10.3, (0, 19, 0), True, FUSION_WORKSPACE_NON_TORCH),  # 0.19: the 10.x family
    ],
)
def test_where_vllm_builds_the_fusion_workspace(tp, pp, dp, cc, version, multicast, charged) -> None:
    assert allreduce_fusion_non_torch(tp=tp, pp=pp, dp=dp, compute_capability=cc, version=version,
                                      multicast=multicast) == charged


MIB = 1 << 20


def test_the_workspace_in_symmetric_memory_from_0_22_worked_by_hand() -> None:
    """From vLLM 0.22 the pinned FlashInfer (0.6.11.post2 / 0.6.12 / 0.6.13, the wheels' METADATA) allocates the
    fusion workspace with PyTorch's symmetric memory, rounded to the 2 MiB allocation granule
    (CUDASymmetricMemoryAllocator::alloc), not FlashInfer's own 512 MiB multicast granules (0.6.6 - 0.6.8). Sizes
    from the sources, for Llama-3.1-8B (hidden 4,096, bf16) on H100s at TP 2 with 8,192 batched tokens:
    - message cap: FI_ALLREDUCE_FUSION_MAX_SIZE_MB[90][2] = 64 MiB -> 64 MiB / (4,096 x 2 B) = 8,192 tokens,
      min(8,192, max_num_batched_tokens 8,192) = 8,192;
    - 0.22 - 0.24, TRT-LLM backend (trtllm_create_ipc_workspace_for_all_reduce_fusion): message buffer 2 x 8,192
      x 4,096 x 2 B = 128 MiB, flags 2 x 256 x 4 B -> one 2 MiB granule, Lamport 3 x 128 MiB = 384 MiB: 514 MiB;
    - 0.26+, MNNVL backend (_resolve_fi_ar_backend picks it on one node from 0.25): one-shot min(1 MiB // (2 x 2 x 4,096)
      = 64, 8,192) tokens x 4,096 x 2 x 2 B = 1 MiB, two-shot 2 x ceil(8,192 / 2) x 2 x 4,096 x 2 B = 128 MiB;
      three Lamport slots of the larger: 384 MiB.
    Beside it the rest of the 0.18 - 0.21 measurement (1.85 GiB - 3 x 512 MiB = 358 MiB) stays."""
    kw = dict(tp=2, pp=1, dp=1, compute_capability=9.0, multicast=True, hidden_size=4096, dtype_bytes=2,
              max_num_batched_tokens=8192)
    assert FUSION_REST_NON_TORCH == 358 * MIB
    assert allreduce_fusion_non_torch(version=(0, 21, 0), **kw) == FUSION_WORKSPACE_NON_TORCH
    assert allreduce_fusion_non_torch(version=(0, 22, 0), **kw) == (358 + 514) * MIB
    assert allreduce_fusion_non_torch(version=(0, 26, 0), **kw) == (358 + 384) * MIB
    # 0.25 alone builds the quant-pattern workspace apart, with the TRT-LLM backend (get_fi_ar_quant_workspace:
    # "Always uses trtllm backend"; 0.26 reuses the main one): both
    assert allreduce_fusion_non_torch(version=(0, 25, 0), **kw) == (358 + 384 + 514) * MIB
    # fewer batched tokens cap the message: 2,048 tokens -> 32 + 2 + 96 MiB (TRT-LLM), 3 x 32 MiB (MNNVL)
    small = {**kw, "max_num_batched_tokens": 2048}
    assert allreduce_fusion_non_torch(version=(0, 23, 0), **small) == (358 + 130) * MIB
    assert allreduce_fusion_non_torch(version=(0, 32, 0), **small) == (358 + 96) * MIB


def test_the_workspace_at_tp4_on_hopper_is_a_few_granules() -> None:
    """Qwen3.6-27B (hidden 5,120, bf16) at TP 4 on H100s: FI_ALLREDUCE_FUSION_MAX_SIZE_MB[90][4] = 2 MiB ->
    2 MiB / 10,240 B = 204 tokens. MNNVL: one-shot min(1 MiB // (4 x 2 x 5,120) = 25, 204) x 5,120 x 4 x 2 B =
    1,024,000 B, two-shot 2 x ceil(204 / 4) = 51 x 4 x 5,120 x 2 B = 4,177,920 B; 3 x 4,177,920 = 12,533,760 B ->
    six 2 MiB granules. TRT-LLM (0.22 - 0.24): 4 x 204 x 5,120 x 2 = 8,355,840 B -> 4 granules, flags 1,
    Lamport 3 x 8,355,840 = 25,067,520 B -> 12 granules. TP 16 has no size on Hopper (vLLM skips the fusion)."""
    kw = dict(tp=4, pp=1, dp=1, compute_capability=9.0, multicast=True, hidden_size=5120, dtype_bytes=2,
              max_num_batched_tokens=8192)
    assert allreduce_fusion_non_torch(version=(0, 29, 0), **kw) == 358 * MIB + 6 * 2 * MIB
    assert allreduce_fusion_non_torch(version=(0, 24, 0), **kw) == 358 * MIB + 17 * 2 * MIB
    assert allreduce_fusion_non_torch(version=(0, 29, 0), **{**kw, "tp": 16}) == 0
    assert allreduce_fusion_non_torch(version=(0, 19, 0), **{**kw, "tp": 6}) == 0


def test_a_tp2_plan_of_0_22_gets_back_what_the_symmetric_memory_saves() -> None:
    """The same TP-2 H100 plan at 0.21 and 0.22: non-torch memory falls by 1,894 - 872 = 1,022 MiB (above), and
    the KV cache grows by as much (the two releases charge the other terms alike for this model)."""
    old = build_plan(_llama(tensor_parallel_size=2, vllm_version="0.21.0", max_num_batched_tokens=8192), ENV)
    new = build_plan(_llama(tensor_parallel_size=2, vllm_version="0.22.0", max_num_batched_tokens=8192), ENV)
    assert old.memory.non_torch_bytes - new.memory.non_torch_bytes == 1022 * MIB
    assert "2 MiB symmetric-memory granules" in new.memory.notes["non_torch"]


def test_h100_tp2_available_kv_matches_the_log() -> None:
    """Log: "Available KV cache memory: 63.76 GiB", 1,044,688 tokens (TP=2, 0.95 x 79.19 GiB)."""
    plan = build_plan(_llama(tensor_parallel_size=2), ENV)
    assert plan.memory.kv_cache_bytes / GIB == pytest.approx(63.76, rel=0.01)
    assert "all-reduce fusion" in plan.memory.notes["non_torch"]
    # without the term the plan had 65.64 GiB (+2.9 %); --enforce-eager (no compilation) and the H100
    # PCIe (no NVSwitch) do not build the workspace
    eager = build_plan(_llama(tensor_parallel_size=2, enforce_eager=True), ENV)
    assert "all-reduce fusion" not in eager.memory.notes["non_torch"]
    pcie = build_plan(_llama(tensor_parallel_size=2, gpu="h100-pcie"), ENV)
    assert "all-reduce fusion" not in pcie.memory.notes["non_torch"]


def test_pipeline_parallel_has_no_tp_group() -> None:
    """PP=2 logs 0.07 GiB of non-torch memory: no fusion workspace without a TP group."""
    plan = build_plan(_llama(pipeline_parallel_size=2), ENV)
    assert "all-reduce fusion" not in plan.memory.notes["non_torch"]


def test_float32_doubles_weights_and_kv_per_token() -> None:
    """Log (--dtype float32): "Model loading took 29.98 GiB" (14.99 in bfloat16), 42.8 GiB of KV hold
    175,296 tokens: 42.8 x 2^30 / 175,296 = 262,160 -> 262,144 B a token = 32 layers x 8 KV heads x 128 x
    2 (K, V) x 4 bytes, twice bfloat16's 131,072."""
    plan = build_plan(_llama(dtype="float32"), ENV)
    assert plan.memory.weights_bytes / GIB == pytest.approx(29.98, rel=0.005)
    assert plan.kv_cache.bytes_per_token == 262_144
    assert plan.memory.kv_cache_bytes / GIB == pytest.approx(42.8, rel=0.015)
    half = build_plan(_llama(dtype="float16"), ENV)
    assert half.kv_cache.bytes_per_token == 131_072 and half.memory.weights_bytes * 2 == plan.memory.weights_bytes


def test_an_unknown_dtype_is_refused_before_planning() -> None:
    from vllmkit.cli.options import check_dtype

    check_dtype("float32")
    with pytest.raises(VllmkitError) as err:
        check_dtype("fp4")
    assert "auto, half, float16, bfloat16, float, float32" in err.value.hint


def _coder480(**kw) -> PlanRequest:
    base = dict(model="Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8", source="catalog", gpu="h20",
                gpu_memory=int(139.8 * GIB), vllm_version="0.10.1", tensor_parallel_size=1,
                data_parallel_size=8, enable_expert_parallel=True, max_model_len=262144)
    base.update(kw)
    return PlanRequest(**base)


def test_dp_with_expert_parallel_gathers_every_rank_tokens_in_the_moe_layers() -> None:
    """vllm recipes PR #12 (Qwen3-Coder-480B-A35B FP8, -dp=8 --enable-expert-parallel, 141 GB H20s, vLLM
    0.10.1): "62.00 GiB KV cache is needed, which is larger than the available KV cache memory (48.66
    GiB)" at utilisation 0.9, 55.65 GiB at 0.95. The MoE dispatch all-gathers the 8 ranks' batches, so
    the fused-MoE workspace of the profile run holds 8 x max_num_batched_tokens x top-8 x 2,560 (the
    expert width): the activation grows by 7 x 8,192 x 20,480 x 6 bytes (gate/up + activation out, bf16)
    over a single rank's."""
    dp8 = build_plan(_coder480(gpu_memory_utilization=0.9), ENV)
    alone = build_plan(_coder480(gpu_memory_utilization=0.9, enable_expert_parallel=False), ENV)
    assert dp8.memory.activation_bytes - alone.memory.activation_bytes == 7 * 8192 * 20480 * 6
    assert not dp8.fits  # 62 GiB needed for one 262,144-token request
    assert dp8.memory.kv_cache_bytes / GIB == pytest.approx(48.66, rel=0.06)
    at95 = build_plan(_coder480(gpu_memory_utilization=0.95), ENV)
    assert not at95.fits and at95.memory.kv_cache_bytes / GIB == pytest.approx(55.65, rel=0.06)


def test_a_named_quantized_checkpoint_is_planned_as_itself() -> None:
    """`plan Qwen/Qwen3-14B-AWQ` on an RTX 5090 recommended Qwen3-14B-FP8 (the precision order ranks FP8
    above 4-bit), i.e. another repository than the one asked for. The AWQ checkpoint fits: it is the
    plan, the FP8 sibling an alternative. A 16-bit model still gets its quantized siblings ranked."""
    req = PlanRequest(model="Qwen/Qwen3-14B-AWQ", source="catalog", gpu="rtx-5090", vllm_version="0.28.0",
                      max_model_len=16384, gpu_memory_utilization=0.7)
    plan = build_plan(req, ENV)
    assert plan.model.id == "Qwen/Qwen3-14B-AWQ"
    assert any(a.model_id == "Qwen/Qwen3-14B-FP8" for a in plan.alternatives)
    base = build_plan(req.model_copy(update={"model": "Qwen/Qwen3-14B"}), ENV)
    assert base.model.id != "Qwen/Qwen3-14B"  # 27.5 GiB of BF16 leave no KV on one 32 GB card at 0.7
