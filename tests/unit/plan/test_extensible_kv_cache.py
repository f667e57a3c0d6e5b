"""vLLM 0.34: the extensible KV cache, 64-token blocks, Model Runner V1 gone.

Read in the 0.33.0 and 0.34.0 wheels (engine/versions.py):
- config/vllm.py _resolve_extensible_kv_cache turns the extensible KV cache on for CUDA and ROCm unless the KV
  size is given (kv_cache_memory_bytes, num_gpu_blocks_override, ...); config/cache.py resolves an unset
  --gpu-memory-utilization to 1.0 with it (0.92 without);
- v1/worker/utils.py request_memory skips the "Free memory on device ... is less than desired GPU memory
  utilization" refusal with it;
- v1/worker/extensible_kv_cache.py measure_kv_cache_bytes sizes the cache after warm-up and graph capture:
  available = min(requested - non_kv_used, init_free - non_kv_used - margin) - max(P, G), margin =
  max(1 GiB (3 GiB on ROCm), 0.75 x P);
- config/cache.py DEFAULT_BLOCK_SIZE 16 -> 64, which FLASH_ATTN / FLASHINFER / TRITON_ATTN / FLASHINFER_MLA
  take; ROCM_ATTN's get_preferred_block_size returns 16 whatever the default.
No public 0.34 start-up log was found yet (round 34): the numbers below are the source's arithmetic worked by hand.
GPU memory is the profile's, not a device (no GPU here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllmkit.calibration.measure import measure
from vllmkit.engine.versions import model_runner_v2
from vllmkit.errors import UsageError
from vllmkit.estimate.memory import MemoryTerm, extensible_kv_budget
from vllmkit.launch.command import serve_flags
from vllmkit.logs.reader import read_log
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan
from vllmkit.units import GIB

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}


def _term(gib: float) -> MemoryTerm:
    return MemoryTerm(bytes=int(gib * GIB), source="estimated", note="")


def _budget(*, util: float = 1.0, vendor: str = "nvidia", others: float = 0.0):
    return extensible_kv_budget(total_bytes=80 * GIB, utilization=util, weights=_term(15), non_torch=_term(1),
                                activation=_term(2), cudagraph=_term(0.5), vendor=vendor,
                                in_use_by_others_bytes=int(others * GIB))


def test_the_measured_sizing_worked_by_hand() -> None:
    # 80 GiB, nothing else on the GPU: used = 15 + 1 + 0.5 = 16.5; P = 2; margin = max(1, 0.75 x 2) = 1.5;
    # init_free = 80 - 0.5 (CUDA context) = 79.5; min(80 - 16.5, 79.5 - 16.5 - 1.5) - 2 = 61.5 - 2 = 59.5 GiB
    b = _budget()
    assert b.kv_cache.bytes == pytest.approx(59.5 * GIB, abs=2)
    assert b.extra["headroom"].bytes == pytest.approx(2.0 * GIB, abs=2)  # context 0.5 + margin 1.5
    # the printed identity: requested - every term = the cache
    terms = b.weights.bytes + b.non_torch.bytes + b.activation.bytes + b.cudagraph.bytes + sum(
        t.bytes for t in b.extra.values())
    assert b.requested_bytes - terms == b.kv_cache.bytes


def test_a_given_utilization_caps_the_cache() -> None:
    # --gpu-memory-utilization 0.7: requested 56 GiB; min(56 - 16.5, 61.5) - 2 = 37.5 GiB, nothing kept beyond it
    b = _budget(util=0.7)
    assert b.kv_cache.bytes == pytest.approx(37.5 * GIB, abs=2)
    assert "headroom" not in b.extra


def test_rocm_keeps_a_three_gib_margin_and_other_processes_lower_the_free_memory() -> None:
    # ROCm: margin max(3, 1.5) = 3, context 0.33 GiB: 80 - 0.33 - 16.5 - 3 - 2 = 58.17 GiB
    assert _budget(vendor="amd").kv_cache.bytes == pytest.approx((80 - 0.33 - 16.5 - 3 - 2) * GIB, abs=2 * 1024 ** 2)
    # 10 GiB held by another process at start: 80 - 0.5 - 10 - 16.5 - 1.5 - 2 = 49.5 GiB
    assert _budget(others=10).kv_cache.bytes == pytest.approx(49.5 * GIB, abs=2)


def _plan(version: str, **kw):
    req = PlanRequest(model=kw.pop("model", "meta-llama/Llama-3.1-8B-Instruct"), gpu=kw.pop("gpu", "h100"),
                      source="catalog", vllm_version=version, max_model_len=8192, **kw)
    return req, build_plan(req, ENV)


def test_0_34_plans_with_the_extensible_cache_and_0_33_does_not() -> None:
    _, new = _plan("0.34.0")
    _, old = _plan("0.33.0")
    assert new.settings.extensible_kv_cache and new.settings.gpu_memory_utilization == 1.0
    assert not old.settings.extensible_kv_cache and old.settings.gpu_memory_utilization == 0.92
    m = new.memory
    transient = m.activation_bytes
    margin = max(GIB, int(0.75 * transient))
    expected = (m.total_bytes - 512 * 1024 ** 2 - m.weights_bytes - m.non_torch_bytes - m.cudagraph_bytes
                - margin - transient)
    assert m.kv_cache_bytes == expected and m.headroom_bytes == 512 * 1024 ** 2 + margin
    # the same terms under 0.33's profile sizing: 0.92 x total - the terms; 0.34 keeps less free on an 80 GB card
    assert m.kv_cache_bytes > old.memory.kv_cache_bytes


def test_the_kv_size_given_keeps_the_profile_sizing() -> None:
    _, plan = _plan("0.34.0", kv_cache_memory_bytes=10 * GIB)
    assert not plan.settings.extensible_kv_cache
    _, plan = _plan("0.34.0", enable_extensible_kv_cache=False)
    assert not plan.settings.extensible_kv_cache and plan.settings.gpu_memory_utilization == 0.92


def test_no_free_memory_refusal_with_the_extensible_cache() -> None:
    # 20 GiB held by another process: 0.33 refuses (free 59.2 < requested 72.9 GiB), 0.34 sizes around it
    _, old = _plan("0.33.0", gpu_memory_in_use=20 * GIB)
    _, new = _plan("0.34.0", gpu_memory_in_use=20 * GIB)
    assert old.startup_refusal is not None and not old.fits
    assert new.startup_refusal is None and new.fits
    assert new.memory.headroom_bytes >= 20 * GIB


def test_block_size_64_where_the_backend_takes_it() -> None:
    assert _plan("0.34.0")[1].kv_cache.block_size == 64  # FLASH_ATTN on an H100
    assert _plan("0.33.0")[1].kv_cache.block_size == 16
    assert _plan("0.34.0", gpu="mi300x")[1].kv_cache.block_size == 16  # ROCM_ATTN prefers 16


def test_hybrid_attention_blocks_align_to_64() -> None:
    # Qwen3-Next: 0.33's attention block of 544 = 16 x 34 tokens is the smallest multiple of 16 whose page holds a
    # GDN state (a state needs more than 33 x 16 tokens' page); with 64-token alignment: 64 x ceil(34 x 16 / 64) = 576
    # at most, and more than 8 x 64 = 512, so 576
    model = "Qwen/Qwen3-Next-80B-A3B-Instruct"
    assert _plan("0.33.0", model=model, gpu="h200")[1].kv_cache.block_size == 544
    assert _plan("0.34.0", model=model, gpu="h200")[1].kv_cache.block_size == 576


def _line(req: PlanRequest, plan) -> str:
    return " ".join(f.name if f.value is None else f"{f.name} {f.value}" for f in serve_flags(plan, req))


def test_the_serve_line_leaves_the_utilization_unset() -> None:
    req, plan = _plan("0.34.0")
    assert "--gpu-memory-utilization" not in _line(req, plan)
    req, plan = _plan("0.34.0", gpu_memory_utilization=0.85)
    assert "--gpu-memory-utilization 0.85" in _line(req, plan)
    req, plan = _plan("0.34.0", enable_extensible_kv_cache=False)
    line = _line(req, plan)
    assert "--no-enable-extensible-kv-cache" in line and "--gpu-memory-utilization 0.92" in line


def test_model_runner_v1_is_gone() -> None:
    req = PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", source="catalog", vllm_version="0.34.0")
    with pytest.raises(UsageError, match="Model Runner V1 has been removed"):
        build_plan(req, {**ENV, "VLLM_USE_V2_MODEL_RUNNER": "0"})
    assert build_plan(req.model_copy(update={"vllm_version": "0.33.0"}),
                      {**ENV, "VLLM_USE_V2_MODEL_RUNNER": "0"}).settings.model_runner == "v1"
    # 0.33 keeps the V1 runner on ROCm for DeepSeek-V3.2; 0.34 has no V1 runner
    assert not model_runner_v2("0.33.0", ["DeepseekV32ForCausalLM"], moe=True, quantized=True, hybrid=False,
                               device="rocm")
    assert model_runner_v2("0.34.0", ["DeepseekV32ForCausalLM"], moe=True, quantized=True, hybrid=False,
                           device="rocm")


LOG = Path(__file__).resolve().parents[2] / "data" / "logs" / "v1_0.27_rtx4090_cold_compile.log"


def test_check_log_does_not_read_a_capacity_as_the_cache_size() -> None:
    # a 0.34 log's "Available KV cache memory" is the extensible cache's reserved capacity, not its size
    text = LOG.read_text().replace("version 0.27.1", "version 0.34.0")
    assert measure(read_log(text), text).available_kv_bytes is None
    fallback = text + ("\n(EngineCore pid=1) WARNING 01-01 00:00:00 [abstract.py:170] Disabling the extensible KV "
                       "cache: VMM probe failed. The KV cache will be sized from profiling estimates instead of "
                       "measured memory.\n")
    assert measure(read_log(fallback), fallback).available_kv_bytes is not None


def test_doctor_does_not_ask_a_0_34_start_for_more_utilization() -> None:
    # 0.34 resolves an unset utilization to 1.0: raising it is no fix for a start with no memory left
    from vllmkit.doctor.diagnose import diagnose_log

    log = ("(APIServer pid=1) INFO 12-01 10:00:00 [utils.py:300]  \u2584\u2584 \u2584\u2588 \u2588     \u2588     \u2588 "
           "\u2580\u2584\u2580 \u2588  version 0.34.0\n"
           "(EngineCore pid=2) INFO 12-01 10:00:30 [model_runner.py:428] Model loading took 131.43 GiB memory and "
           "60.0 seconds\n"
           "(EngineCore pid=2) ERROR 12-01 10:01:00 [core.py:1100] ValueError: No available memory for the cache "
           "blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n")
    d = next(x for x in diagnose_log(log).diagnoses if x.code == "no-kv-memory")
    assert "--gpu-memory-utilization" not in d.suggested_flags and "Raise --gpu-memory-utilization" not in d.fix
    old = diagnose_log(log.replace("version 0.34.0", "version 0.33.0") + (
        "(APIServer pid=1) INFO 12-01 10:00:00 [utils.py:233] non-default args: {'gpu_memory_utilization': 0.85}\n"))
    assert next(x for x in old.diagnoses if x.code == "no-kv-memory").suggested_flags == ["--gpu-memory-utilization",
                                                                                            "0.90"]


def test_serve_does_not_compare_a_capacity_with_the_planned_cache() -> None:
    from vllmkit.launch.phases import startup_facts
    from vllmkit.logs import parse_log

    text = LOG.read_text()
    assert startup_facts(parse_log(text)).available_kv_gib is not None
    assert startup_facts(parse_log(text.replace("version 0.27.1", "version 0.34.0"))).available_kv_gib is None


@pytest.mark.parametrize(("model", "published"), [("Qwen/Qwen3-8B", 0.087), ("Qwen/Qwen3-14B", 0.167)])
def test_the_0_34_gain_over_0_31_on_an_l40s_matches_a_public_measurement(model: str, published: float) -> None:
    """gpu-fit v1.2.0's release notes (github.com/KiranTallapragada/gpu-fit/releases/tag/v1.2.0, 2026-11-29,
    "Measured on an AWS L40S 48 GB (g6e) with vLLM 0.34.0"): vLLM 0.34 holds 8.7 % (Qwen3-8B) to 16.7 % (Qwen3-14B)
    more KV tokens than 0.31 at their defaults. Planned: within 2 percentage points of each (the utilization
    alone, 0.92 -> 1.0 of 44.4 GiB, would give +15 % and +30 %; 1.5 points before round 52's CUDA-graph estimate,
    which charges 0.31 about 0.5 GiB more for Qwen3-14B's 86 graphs at 256 sequences: +18.3 %)."""
    tokens = {}
    for version in ("0.31.0", "0.34.0"):
        _, plan = _plan(version, model=model, gpu="l40s")
        tokens[version] = plan.kv_cache.tokens
    gain = tokens["0.34.0"] / tokens["0.31.0"] - 1
    assert gain == pytest.approx(published, abs=0.02)
