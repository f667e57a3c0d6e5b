"""Issue 13 item 9: each model added to the catalog plans on a GPU it should fit (and not on one it
should not), and each new GPU profile plans. No GPU runs here: the profiles stand in for the cards.

The expectations are hand arithmetic from the catalog's weight bytes and the profiles' torch totals
(vLLM can use at most gpu_memory_utilization x total per GPU: 0.92 by default since vLLM 0.20,
engine/versions.py), not plan output:
weights per GPU at TP=n are weights / n, plus a few GiB of activations, graphs and KV cache.
"""

from __future__ import annotations

import pytest

from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"VLLMKIT_NO_CALIBRATION": "1"}
GIB = 2**30


def _plan(model: str, gpu: str, count: int | None = None, **kw: object):
    return build_plan(PlanRequest(model=model, source="catalog", gpu=gpu, gpu_count=count, **kw), ENV)


def test_kimi_k2_fp8_needs_more_than_eight_h100() -> None:
    # 1,028,923,275,952 B = 958.3 GiB of weights; 8 x H100 hold 8 x 79.19 = 633.5 GiB in all.
    assert 1_028_923_275_952 / GIB > 8 * 79.19
    plan = _plan("moonshotai/Kimi-K2-Instruct", "h100", 8)
    assert not plan.fits


@pytest.mark.parametrize(
    ("gpu", "usable_gib"), [("h200", 0.92 * 139.81), ("b200", 0.92 * 178.35), ("b300", 0.92 * 267.69)]
)
def test_kimi_k2_fp8_fits_eight_h200_b200_b300(gpu: str, usable_gib: float) -> None:
    # 958.3 GiB / 8 = 119.8 GiB per GPU < 0.92 x 139.81 = 128.6 (H200), 164.1 (B200), 246.3 (B300)
    per_gpu = 1_028_923_275_952 / 8 / GIB
    assert per_gpu < usable_gib
    plan = _plan("moonshotai/Kimi-K2-Instruct", gpu, 8)
    assert plan.fits
    assert plan.parallel.tensor_parallel_size * plan.parallel.pipeline_parallel_size == 8
    assert plan.memory.weights_bytes == pytest.approx(1_028_923_275_952 / 8, rel=0.01)
    # what is left for the KV cache is at most the usable memory minus the weights: < 9 GiB on H200
    assert plan.memory.requested_bytes == pytest.approx(usable_gib * GIB, rel=0.001)
    assert 0 < plan.memory.kv_cache_bytes < (usable_gib - per_gpu) * GIB


def test_qwen3_vl_8b_fits_one_l4_and_one_a40() -> None:
    # 17,534,247,392 B = 16.33 GiB < 0.92 x 22.05 = 20.29 GiB (L4) < 0.92 x 44.35 = 40.8 GiB (A40)
    small = _plan("Qwen/Qwen3-VL-8B-Instruct", "l4", 1)
    roomy = _plan("Qwen/Qwen3-VL-8B-Instruct", "a40", 1)
    assert small.fits and roomy.fits
    # the checkpoint plus vLLM's mRoPE cos/sin cache: 262,144 positions x 4 (mrope.py) x head 128 x 2 B
    assert small.memory.weights_bytes == roomy.memory.weights_bytes == 17_534_247_392 + 262_144 * 4 * 128 * 2
    # the 48 GB card leaves far more KV room than the L4 (20.29 - 16.33 - overheads vs 24.5)
    assert roomy.kv_cache.max_model_len > small.kv_cache.max_model_len


def test_qwen3_vl_30b_a3b_fits_one_h100_not_one_rtx4090() -> None:
    # 62,141,508,064 B = 57.87 GiB: < 0.92 x 79.19 = 72.85 GiB, > 0.92 x 23.64 = 21.75 GiB
    assert _plan("Qwen/Qwen3-VL-30B-A3B-Instruct", "h100", 1).fits
    assert not _plan("Qwen/Qwen3-VL-30B-A3B-Instruct", "rtx-4090", 1).fits


def test_llama33_fp8_dynamic_one_h100_two_l40_not_one_l40() -> None:
    # 72,669,806,592 B = 67.68 GiB: one H100 (72.85 usable) fits; one L40 (0.92 x 44.42 = 40.87) does
    # not; two L40 at TP=2 hold 33.84 GiB each and fit.
    assert _plan("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "h100", 1).fits
    assert not _plan("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "l40", 1).fits
    two = _plan("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "l40", 2)
    assert two.fits and two.parallel.tensor_parallel_size == 2


def test_llama33_fp8_dynamic_on_ampere_is_weight_only() -> None:
    # A40 (sm_86) has no FP8 tensor cores; the checkpoint still plans (Marlin W8A16): 2 x 40.8 GiB usable
    plan = _plan("neuralmagic/Llama-3.3-70B-Instruct-FP8-dynamic", "a40", 2)
    assert plan.fits
    assert plan.model.id == "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"


@pytest.mark.parametrize(
    ("gpu", "count"),
    [("h800", 1), ("h20", 1), ("l20", 1), ("l40", 1), ("a40", 1), ("rtx-a6000", 1), ("rtx-5090", 1),
     ("b300", 1), ("gb200", 1), ("a30", 1)],
)
def test_every_new_gpu_plans_qwen3_vl_8b(gpu: str, count: int) -> None:
    # 16.33 GiB of weights fit the smallest of these (A30: 0.92 x 23.53 = 21.6 GiB; RTX 5090: 28.9 GiB)
    plan = _plan("Qwen/Qwen3-VL-8B-Instruct", gpu, count)
    assert plan.fits
    assert plan.gpu.count == 1


# what every TP rank of DeepSeek-V3/R1 holds whole (estimate/weights.replicated_layer_bytes): per layer the
# FP8 fused_qkv_a_proj (1536 + 512 + 64) x 7168 x 1 B = 15,138,816 and, in 58 of 61 layers, the BF16 router
# 256 x 7168 x 2 B = 3,670,016 -> 18,628,339 B an average layer; 7/8 of it is extra on each of 8 ranks
DEEPSEEK_WHOLE_PER_RANK = 61 * (18_628_339 - 18_628_339 // 8)


def test_deepseek_v31_fits_eight_h200_not_eight_h100() -> None:
    # served weights (MTP layer skipped) 673,150,611,808 B = 626.9 GiB: / 8 = 78.4 GiB per GPU, which
    # is all but 0.8 GiB of an H100's 79.19 GiB total (0.92 x 79.19 = 72.9 usable) but leaves
    # 0.92 x 139.81 - 78.4 = 50.2 GiB on an H200
    assert not _plan("deepseek-ai/DeepSeek-V3.1", "h100", 8).fits
    plan = _plan("deepseek-ai/DeepSeek-V3.1", "h200", 8)
    assert plan.fits
    assert plan.memory.weights_bytes == pytest.approx(673_150_611_808 / 8 + DEEPSEEK_WHOLE_PER_RANK, rel=0.002)


def test_glm46_fits_eight_h200_not_eight_h100() -> None:
    # loaded weights (MTP layer skipped) 352,797,829,024 params x 2 B = 657.1 GiB: more than the
    # 8 x 79.19 = 633.5 GiB eight H100 have in all; 82.1 GiB per H200 at TP=8 (< 0.92 x 139.81 = 128.6)
    assert 2 * 352_797_829_024 / GIB > 8 * 79.19
    # the BF16 checkpoint itself (a plan left free to choose takes the catalog's GLM-4.6-FP8 sibling there)
    assert not _plan("zai-org/GLM-4.6", "h100", 8, tensor_parallel_size=8).fits
    assert _plan("zai-org/GLM-4.6", "h100", 8).model.id == "zai-org/GLM-4.6-FP8"
    plan = _plan("zai-org/GLM-4.6", "h200", 8)
    assert plan.fits and plan.parallel.tensor_parallel_size == 8
    # GLM's MTP layer shares the main embedding and head (plan/variants.MTP_SHARES_EMBEDDINGS), so only its
    # own layer is dropped; each rank also holds every MoE layer's router whole: 89 of 92 layers x 160 experts
    # x 5120 x 2 B x 7/8 = 127,000,000 B
    loaded_per_gpu = 2 * 352_797_829_024 / 8 + 92 * (89 / 92 * 160 * 5120 * 2) * 7 / 8
    assert plan.memory.weights_bytes == pytest.approx(loaded_per_gpu, rel=0.001)


def test_qwen35_27b_one_h100_not_one_rtx4090() -> None:
    # 55,562,855,904 B = 51.75 GiB < 0.92 x 79.19 = 72.85 GiB (H100), > 0.92 x 23.64 = 21.75 GiB (RTX 4090).
    # The checkpoint includes the MTP block (text_config.mtp_num_hidden_layers = 1: 424,699,392 params =
    # 849,398,784 B) that vLLM loads only for qwen3_5_mtp speculation; the planner reads it from
    # text_config and subtracts an average-sized layer + fc (tests/unit/plan/test_mtp_text_config.py)
    plan = _plan("Qwen/Qwen3.5-27B", "h100", 1)
    assert plan.fits
    assert plan.memory.weights_bytes == pytest.approx(55_562_855_904 - 849_398_784, rel=0.002)
    assert not _plan("Qwen/Qwen3.5-27B", "rtx-4090", 1).fits


def test_qwen35_35b_a3b_fits_one_h100() -> None:
    # 71,903,645,408 B (66.96 GiB) less the MTP block ~1 GiB < 72.85 GiB usable on one H100
    assert _plan("Qwen/Qwen3.5-35B-A3B", "h100", 1).fits


def test_qwen35_397b_fits_eight_h200_not_eight_h100() -> None:
    # 806,795,875,168 B (751.4 GiB; 739.1 GiB without the MTP block vLLM skips): > 8 x 79.19 = 633.5 GiB
    # (H100 x 8); at most 93.9 GiB per H200 at TP=8 (< 0.92 x 139.81 = 128.6)
    assert not _plan("Qwen/Qwen3.5-397B-A17B", "h100", 8).fits
    plan = _plan("Qwen/Qwen3.5-397B-A17B", "h200", 8)
    assert plan.fits
    per_gpu = plan.memory.weights_bytes
    # lower bound: the text model split 8 ways; upper: the whole checkpoint split 8 ways plus the vision
    # tower (912,020,960 B in the inventory) kept whole on every rank
    assert (806_795_875_168 - 13_191_136_256) / 8 * 0.999 <= per_gpu <= 806_795_875_168 / 8 + 912_020_960


def test_deepseek_r1_0528_plans_like_r1() -> None:
    # same config and bytes as DeepSeek-R1: 626.9 GiB served (MTP layer skipped) > 0.92 x 8 x 79.19 GiB
    # (H100), 78.4 GiB per H200 at TP=8
    assert not _plan("deepseek-ai/DeepSeek-R1-0528", "h100", 8).fits
    plan = _plan("deepseek-ai/DeepSeek-R1-0528", "h200", 8)
    assert plan.fits
    assert plan.memory.weights_bytes == pytest.approx(673_150_611_808 / 8 + DEEPSEEK_WHOLE_PER_RANK, rel=0.002)


def test_nvidia_llama33_fp8_one_h100_not_one_l40s_and_fp8_kv() -> None:
    # 72,656,376,832 B = 67.67 GiB < 0.92 x 79.19 = 72.85 GiB (H100); > the 44.4 GiB an L40S has in all
    assert _plan("nvidia/Llama-3.3-70B-Instruct-FP8", "h100", 1).fits
    assert not _plan("nvidia/Llama-3.3-70B-Instruct-FP8", "l40s", 1).fits
    # the checkpoint declares an FP8 KV cache (kv_cache_quant_algo FP8), which vLLM uses under
    # --kv-cache-dtype auto: 80 layers x (K + V) x 4 KV heads per rank x 128 x 1 B at TP=2; the RedHatAI
    # FP8-dynamic checkpoint declares none, so its KV cache stays BF16 (2 B)
    nv = build_plan(PlanRequest(model="nvidia/Llama-3.3-70B-Instruct-FP8", source="catalog", gpu="h100",
                                tensor_parallel_size=2), ENV)
    rh = build_plan(PlanRequest(model="RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", source="catalog", gpu="h100",
                                tensor_parallel_size=2), ENV)
    assert nv.kv_cache.bytes_per_token == 80 * 2 * 4 * 128 * 1
    assert rh.kv_cache.bytes_per_token == 80 * 2 * 4 * 128 * 2
    assert nv.memory.weights_bytes == pytest.approx(72_656_376_832 / 2, rel=0.001)


@pytest.mark.parametrize(("version", "kv_bytes"), [("0.13.0", 2), ("0.14.0", 1), ("0.28.0", 1)])
def test_modelopt_fp8_kv_follows_auto_from_0_14(version: str, kv_bytes: int) -> None:
    # vLLM 0.13.0's arg_utils keeps "auto" = the model dtype; 0.14.0 resolves it from the checkpoint's
    # kv_cache_quant_algo (utils/torch_utils.resolve_kv_cache_dtype_string), read from the wheels
    plan = build_plan(PlanRequest(model="nvidia/Llama-3.3-70B-Instruct-FP8", source="catalog", gpu="h100",
                                  tensor_parallel_size=2, vllm_version=version), ENV)
    assert plan.kv_cache.bytes_per_token == 80 * 2 * 4 * 128 * kv_bytes


@pytest.mark.parametrize(("version", "scheme"), [("0.14.0", None), ("0.15.0", "fp8")])
def test_compressed_tensors_kv_scheme_applies_from_0_15(version: str, scheme: str | None) -> None:
    # the llm-compressor FP8-KV layout (RedHatAI/*-FP8-KV: kv_cache_scheme float 8-bit, per tensor, static);
    # vLLM 0.15.0's attention layer sets cache_dtype "fp8" for it, 0.14.0 does not
    from vllmkit.engine.versions import rules_for
    from vllmkit.hub.catalog import entry_to_metadata, find_entry
    from vllmkit.plan.variants import make_variant

    entry = find_entry("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic")
    assert entry is not None
    meta = entry_to_metadata(entry)
    qc = dict(meta.config["quantization_config"])
    qc["kv_cache_scheme"] = {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False, "symmetric": True}
    meta = meta.model_copy(update={"config": {**meta.config, "quantization_config": qc}})
    q = make_variant(meta, rules_for(version)).arch.quantization
    assert q is not None and q.kv_cache_scheme == scheme
