"""Three memory rules of the old engine (V0) read from vLLM's source, each checked against public logs that
were not used to find it.

1. The V0 profile run samples its dummy batch with top_p=0.99, top_k=vocab-1 (worker/model_runner.py
   profile_run, 0.6.4), so its sampler takes the sort-based top-k/top-p path (model_executor/layers/sampler.py
   _apply_top_k_top_p: logits.to(float), logits.sort(...)), the same path V1 takes where it sorts: 38 bytes
   per (row, vocab) element at its peak (estimate/memory.py SAMPLER_SORT_BYTES).
2. vLLM 0.7.2 and 0.7.3 pad each token's MLA latent to 256 bytes on CUDA (worker/cache_engine.py
   align_to_256bytes, VLLM_CUDA_MEM_ALIGN_KV_CACHE=1): DeepSeek-V3's 512 + 64 = 576 elements become 640.
3. vLLM 0.7.1 - 0.7.3 absorb the MLA up-projections after loading (attention/backends/mla/utils.py
   process_weights_after_loading, VLLM_MLA_PERFORM_MATRIX_ABSORPTION=1) and keep W_Q_UK, W_UV_O and W_QR
   beside the checkpoint's weights."""

from __future__ import annotations

import pytest

from vllmkit.arch.model import LayerKind
from vllmkit.engine.versions import rules_for
from vllmkit.estimate.specs import build_specs
from vllmkit.estimate.weights import mla_absorbed_bytes
from vllmkit.hub.catalog import find_entry
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan
from vllmkit.plan.variants import make_variant
from vllmkit.units import GIB

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}


def _arch(model: str, version: str):
    from vllmkit.hub.catalog import entry_to_metadata

    return make_variant(entry_to_metadata(find_entry(model)), rules_for(version)).arch


def test_v0_driver_rank_holds_the_sort_sampler_peak_vllm_13061() -> None:
    """vllm#13061 (V0, 0.7.2): DeepSeek-R1-Distill-Qwen-14B at TP 2 on two RTX 4090s, utilization 0.98. The
    worker process (rank 1, which does not sample in V0) printed activation 0.19 GiB and 8.69 GiB for KV; the
    engine's 81,536 tokens are the driver rank's: 81,536 x 96 KiB (48 layers x 4 KV heads x 128 x 2 x 2 B) =
    7.46 GiB. The 1.23 GiB between the ranks is the driver's dummy sampler: 256 rows x 152,064 x 38 B = 1.38 GiB.
    With the 6-byte FlashInfer-style sampler the plan said 8.91 GiB (19 % over the binding rank)."""
    req = PlanRequest(model="deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", source="catalog", gpu="rtx-4090",
                      vllm_version="0.7.2", tensor_parallel_size=2, gpu_memory_utilization=0.98,
                      max_model_len=4096)
    plan = build_plan(req, ENV)
    assert plan.memory.activation_bytes >= 256 * 152064 * 38
    assert plan.memory.kv_cache_bytes / GIB == pytest.approx(81536 * 96 * 1024 / GIB, rel=0.05)


def test_v0_profile_peak_of_4096_sequences_mi300x() -> None:
    """collected-startup-logs-23 (blind): Llama-3.1-70B-Instruct with --quantization fp8 on one MI300X, V0 0.6.4,
    --max-num-seqs 4096, --max-model-len 32768: "peak_torch_memory=86.79GiB" over 67.70 GiB of weights, an
    activation peak of 19.09 GiB. The sort over 4096 x 128,256 logits is 18.59 GiB of it, and the forward pass's
    output hidden states, which execute_model holds while it samples, 32,768 x 8,192 x 2 B = 0.50 GiB; the 6-byte
    sampler left the plan at 7.25 GiB (the forward pass) and the KV cache 18 % over the log's."""
    req = PlanRequest(model="meta-llama/Llama-3.1-70B-Instruct", source="catalog", gpu="mi300x",
                      vllm_version="0.6.4", gpu_memory_utilization=0.98, max_num_seqs=4096,
                      max_model_len=32768, quantization="fp8")
    plan = build_plan(req, ENV)
    assert plan.memory.activation_bytes / GIB == pytest.approx(19.09, rel=0.01)


@pytest.mark.parametrize(("version", "token_bytes"), [
    ("0.7.1", 61 * 576 * 2), ("0.7.2", 61 * 640 * 2), ("0.7.3", 61 * 640 * 2), ("0.8.0", 61 * 576 * 2)])
def test_mla_latent_padded_to_256_bytes_in_0_7_2_and_0_7_3(version: str, token_bytes: int) -> None:
    """8x H200 DeepSeek-R1, V0 0.7.3 (collected-startup-logs-23): 18,418 blocks x 16 = 294,688 tokens from
    21.43 GiB, 78,080 B a token per rank = 61 layers x 640 x 2 B; unpadded the same bytes hold 327,440."""
    arch = _arch("deepseek-ai/DeepSeek-R1", version)
    rules = rules_for(version)
    specs = build_specs(arch, tp=8, kv_cache_dtype="auto", device="cuda",
                        mla_entry_align_256=rules.mla_entry_align_256)
    assert sum(s.token_bytes for s in specs.specs) == token_bytes
    if version == "0.7.3":
        assert int(21.43 * GIB) // (16 * token_bytes) * 16 == 294_688


def test_mla_absorbed_matrices_by_hand() -> None:
    """DeepSeek-R1 (FP8) at TP 8: 16 heads a rank, kv_lora_rank 512, q_lora_rank 1536, nope 128, v 128, rope 64,
    hidden 7168. W_QR 1536 x 16 x 64 x 2 = 3,145,728; W_Q_UK 1536 x 16 x 512 x 1 = 12,582,912; W_UV_O
    16 x 512 x 7168 x 1 = 58,720,256; the dequantized kv_b_proj 512 x 16 x 256 x 2 = 4,194,304: 78,643,200 B
    a layer, 4.47 GiB over 61."""
    arch = _arch("deepseek-ai/DeepSeek-R1", "0.7.3")
    per_layer = mla_absorbed_bytes(arch, 8, fp8=True)
    mla_layers = [b for b, k in zip(per_layer, arch.layer_kinds, strict=True) if k is LayerKind.MLA]
    assert set(mla_layers) == {78_643_200} and len(mla_layers) == 61


@pytest.mark.parametrize(("model", "gpu", "version", "tp", "pp", "logged"), [
    # collected-startup-logs-23 (blind): "model weights take 83.88GiB" per H200 rank, 0.7.3
    ("deepseek-ai/DeepSeek-R1", "h200", "0.7.3", 8, 1, 83.88),
    # collected-startup-logs-18 (an older row the rule was not read from): DeepSeek-Coder-V2-Lite in fp16 at
    # TP 8 on A100-40GB, 0.7.1: "Loading model weights took 3.97" (was planned 3.75 without the matrices)
    ("deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct", "a100-40gb-sxm", "0.7.1", 8, 1, 3.97),
    # vllm#15598 (collected-startup-logs-6, DeepSeek-R1 over 32 L40S at TP 8 / PP 4, 0.8.0 - 0.8.2: 20.64 GiB on
    # a rank of a later stage, no absorbed matrices) is checked stage by stage in
    # tests/unit/estimate/test_specs_weights_versions.py: the plan's figure is the heaviest stage's, 16 MoE layers
])
def test_weights_with_the_absorbed_matrices_match_the_logs(model, gpu, version, tp, pp, logged) -> None:
    req = PlanRequest(model=model, source="catalog", gpu=gpu, vllm_version=version, tensor_parallel_size=tp,
                      pipeline_parallel_size=pp, max_model_len=8192, dtype="float16" if "Coder" in model else "auto")
    plan = build_plan(req, ENV)
    assert plan.memory.weights_bytes / GIB == pytest.approx(logged, rel=0.01)
    # the weights note names the matrices where, and only where, the version absorbs them
    assert ("MLA matrices vLLM " + version + " absorbs" in plan.memory.notes["weights"]) is version.startswith("0.7")


@pytest.mark.parametrize(("model", "gpu", "version", "kwargs", "logged"), [
    # a Colab T4 on 0.8.2 (collected-startup-logs-15): "the rest of the memory reserved for KV Cache is 6.22GiB";
    # planned as V1 it was 5.89 (-5.2 %)
    ("meta-llama/Llama-3.2-3B-Instruct", "t4", "0.8.2", {"max_model_len": 2048, "dtype": "float16",
                                                          "gpu_memory_utilization": 0.8938626454842437,
                                                          "max_num_seqs": 192, "gpu_memory": int(14.74 * GIB)}, 6.22),
    # a V100 32GB on 0.8.5 (collected-startup-logs-24, blind before the rule): V0 without chunked prefill profiles
    # 32,768 tokens (activation 4.35 GiB logged), 9.88 GiB of KV; planned as V1 it was 12.98 (+31 %)
    ("Qwen/Qwen2.5-7B-Instruct", "v100-pcie-32gb", "0.8.5", {"max_model_len": 32768, "dtype": "float16"}, 9.88),
])
def test_pre_ampere_gpus_fall_back_to_v0_before_0_10_2(model, gpu, version, kwargs, logged) -> None:
    req = PlanRequest(model=model, source="catalog", gpu=gpu, vllm_version=version, **kwargs)
    plan = build_plan(req, ENV)
    assert plan.memory.kv_cache_bytes / GIB == pytest.approx(logged, rel=0.02)


def test_the_plan_says_which_engine_and_the_v0_note_says_prompts_run_whole() -> None:
    """A V100 on 0.8.5 runs V0 without chunked prefill (max_model_len 32,768 is not over 32K): the plan's settings
    say so, and its chunked-prefill note no longer claims the V1 scheduler's split; on an A100 the same release
    runs V1, which always splits."""
    from vllmkit.launch.presets import plan_features

    req = PlanRequest(model="Qwen/Qwen2.5-7B-Instruct", source="catalog", gpu="v100-pcie-32gb",
                      vllm_version="0.8.5", max_model_len=32768, dtype="float16")
    v0 = build_plan(req, ENV)
    assert (v0.settings.engine, v0.settings.chunked_prefill) == ("v0", False)
    note = plan_features(v0, req, registry=None).chunked_prefill
    assert note is not None and not note.enabled and "whole" in note.detail and "V1 scheduler" not in note.detail
    a100 = req.model_copy(update={"gpu": "a100-80gb-sxm"})
    v1 = build_plan(a100, ENV)
    assert (v1.settings.engine, v1.settings.chunked_prefill) == ("v1", True)
    assert "V1 scheduler always splits" in plan_features(v1, a100, registry=None).chunked_prefill.detail
