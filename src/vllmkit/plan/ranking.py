"""Which candidate to recommend (issue #2, seeds/004 §6): FP8 weights need native FP8 (NVIDIA
sm >= 8.9, AMD gfx942+ and RDNA 4: vLLM platforms/rocm.py supports_fp8); Marlin INT4 (AWQ/GPTQ) is CUDA-only (sm >= 8.0) and ranks after FP8 on ROCm;
small models (<= ~8B) keep BF16 when it fits; MI300-class GPUs prefer FP8. Then the fewest GPUs
(smallest valid TP within one node, then PP across nodes), then the largest context."""

from __future__ import annotations

_QUALITY = {"bf16": 0, "fp16": 0, "fp8": 1, "int8": 2, "mxfp4": 2, "nvfp4": 3, "awq": 3, "gptq-int4": 3, "gptq-int8": 2, "bitsandbytes": 3}
SMALL_MODEL_BYTES = 17 * 10**9  # <= ~8B parameters in 16-bit: keep BF16 when it fits


def precision_allowed(label: str, profile) -> tuple[bool, str]:
    if profile.vendor == "cpu":
        return label in ("bf16", "fp16"), "" if label in ("bf16", "fp16") else "quantized checkpoints are not planned on CPU"
    if label == "fp8" and not profile.fp8_supported:
        return False, f"{profile.display_name} has no native FP8 (needs sm >= 8.9, gfx942+ or RDNA 4)"
    if label in ("nvfp4",) and not profile.supports.fp4:
        return False, "NVFP4 needs Blackwell"
    if label in ("awq", "gptq-int4") and profile.vendor == "nvidia" and not profile.marlin_supported:
        return True, "no Marlin INT4 kernels below sm 8.0 (slower fallback kernels)"
    return True, ""

def precision_rank(label: str, profile) -> float:
    rank = float(_QUALITY.get(label, 4))
    if profile.vendor == "amd" and profile.fp8_supported:
        # MI300-class: FP8 is native and the most mature path; AWQ/GPTQ kernels are CUDA-first
        rank = {"fp8": 0.0, "bf16": 0.5, "fp16": 0.5}.get(label, rank + 1.0)
    return rank


def rank(*, useful: bool, fits: bool, label: str, base_weight_bytes: int, gpus: int, max_model_len: int,
         profile, gpu_count_given: bool, short_bytes: int = 0) -> tuple[float, ...]:
    """Smaller is better. Tier: useful (fits with a usable context) < fits < does not fit. With
    --gpu-count the GPUs are already paid for, so precision comes before the GPU count. Among options
    that do not fit, the one the least memory short per GPU (`short_bytes`) comes first: it is the
    closest shown when nothing fits."""
    prec = precision_rank(label, profile)
    small_model = base_weight_bytes <= SMALL_MODEL_BYTES and label in ("bf16", "fp16")
    tier = 0 if useful else (1 if fits else 2)
    prec_key = prec - (0.5 if small_model else 0)
    if tier == 2:
        return (tier, max(short_bytes, 0), prec_key, gpus, -max_model_len)
    if gpu_count_given:
        return (tier, prec_key, gpus, -max_model_len)
    return (tier, gpus, prec_key, -max_model_len)
