"""Memory rules added in round 9, each checked against the public log it was read from.

Where the sort-based dummy sampler (vLLM 0.11.1-0.16 by default; 0.8-0.11.0 without FlashInfer) sets
the profile-run peak, vLLM's own split of the budget leaves about 0.25 GiB beside the sort at TP=1
(its "non-torch" 0.13 GiB plus the runner's persistent buffers), not the 1.125 GiB the non-torch
constant charges when the forward pass sets the peak. Logs: llm-d planner's Qwen3-14B version sweep on
an H100 (0.15.0 / 0.16.0: activation 5.64 GiB, non-torch 0.13, KV 41.94 GiB at 0.95; 0.17.0 with the
Triton kernel: KV 45.34 GiB), llm-d-benchmark's H100 runs (0.14: Llama-3.1-8B KV 51.38 GiB, Qwen3-32B
4.45 GiB at 0.9 and 16,000 tokens) and vllm#27508 (gpt-oss-120b, 0.11.0 without FlashInfer: 1.71 GiB,
tests/unit/plan/test_start_verdicts.py).
"""

from __future__ import annotations

import pytest

from vllmkit.estimate.memory import (
    NON_TORCH_BASE,
    NON_TORCH_SORT_PEAK_REST,
    SAMPLER_TRITON_BYTES,
)
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
GIB = 1 << 30
MIB = 1 << 20


def _plan(model: str, version: str, util: float, max_len: int, **kw):
    base = dict(model=model, source="catalog", gpu="h100-sxm", vllm_version=version, tensor_parallel_size=1,
                gpu_memory_utilization=util, max_model_len=max_len, block_size=128)
    base.update(kw)
    return build_plan(PlanRequest(**base), ENV)


def test_the_rest_beside_the_sort_is_what_the_logs_split_out() -> None:
    # activation + non-torch - 1024 x vocab x 38 B, in GiB: Qwen3-14B 5.64 + 0.13 - 5.506 = 0.264 (0.15 / 0.16),
    # Llama-3.1-8B 4.76 + 0.13 - 4.648 = 0.242, gpt-oss-20b 7.38 + 0.13 - 7.287 = 0.223,
    # Qwen3-32B 5.64 + 0.14 - 5.506 = 0.274 (0.14)
    rests = [5.64 + 0.13 - 1024 * 151936 * 38 / GIB, 4.76 + 0.13 - 1024 * 128256 * 38 / GIB,
             7.38 + 0.13 - 1024 * 201088 * 38 / GIB, 5.64 + 0.14 - 1024 * 151936 * 38 / GIB]
    assert all(abs(r - NON_TORCH_SORT_PEAK_REST / GIB) < 0.04 for r in rests)
    # where the sort dwarfs the forward pass, the whole rest of the constant is not charged
    from vllmkit.arch import read_arch
    from vllmkit.estimate.memory import sampler_peak_non_torch_credit
    from vllmkit.hub.catalog import find_entry

    gpt_oss = read_arch(find_entry("openai/gpt-oss-120b").config)
    credit = sampler_peak_non_torch_credit(gpt_oss, tp=1, max_num_batched_tokens=1024, max_num_seqs=1024,
                                           sampler="sort", version=(0, 11, 0))
    assert credit == NON_TORCH_BASE - NON_TORCH_SORT_PEAK_REST


@pytest.mark.parametrize(("version", "logged_kv_gib"), [("0.15.0", 41.94), ("0.16.0", 41.94), ("0.17.0", 45.34)])
def test_qwen3_14b_version_sweep(version: str, logged_kv_gib: float) -> None:
    """The same start on three releases: the sort (0.15, 0.16) costs 3.4 GiB of KV against the Triton
    kernel (0.17)."""
    plan = _plan("Qwen/Qwen3-14B", version, 0.95, 40960)
    assert plan.memory.kv_cache_bytes / GIB == pytest.approx(logged_kv_gib, rel=0.01)


@pytest.mark.parametrize(("model", "logged_kv_gib"), [("meta-llama/Llama-3.1-8B-Instruct", 51.38),
                                                      ("Qwen/Qwen3-32B", 4.45)])
def test_llm_d_benchmark_h100_runs(model: str, logged_kv_gib: float) -> None:
    plan = _plan(model, "0.14.0", 0.9, 16000)
    assert plan.memory.kv_cache_bytes / GIB == pytest.approx(logged_kv_gib, rel=0.02)
    # the sort sets the peak, so the constant's forward share is not charged either way (round 31: on 0.14 - 0.23
    # no compile memory shows in the profile, engine/versions.py compile_memory_in_profile)
    assert "less 0.88 GiB of torch.compile's share" in plan.memory.notes["non_torch"]


def test_qwen3_32b_starts_with_one_16000_token_request() -> None:
    """4.45 GiB left for 16,000 x 256 KiB = 3.91 GiB: it started. With the whole constant charged the
    plan left 3.61 GiB and predicted a failure."""
    assert _plan("Qwen/Qwen3-32B", "0.14.0", 0.9, 16000).fits


def test_a_multi_gpu_sort_path_start_keeps_the_whole_constant() -> None:
    """The sort-path logs of TP=2 / TP=4 x PP=2 starts disagree on what is left beside the sort, so
    those keep the constant but for torch.compile's share, which 0.14 - 0.23 starts do not hold at all
    (llm-d-benchmark TP=2 log: 34.49 GiB; 1.8 % under with the share, now 0.7 % over)."""
    tp2 = _plan("Qwen/Qwen3-32B", "0.14.0", 0.9, 16000, tensor_parallel_size=2)
    assert "the sampler, not the compiling forward pass" not in tp2.memory.notes["non_torch"]
    assert "profile peak holds no compile memory" in tp2.memory.notes["non_torch"]
    assert tp2.memory.kv_cache_bytes / GIB == pytest.approx(34.49, rel=0.01)


def test_the_triton_sampler_line_through_the_0_19_logs() -> None:
    """From 0.17 the dummy sampler keeps model-dtype logits 2 + float32 logits 4 + probs 4 + noise 4 =
    14 B per (row, vocab) element (topk_topp_sampler.py: Triton top-k/top-p in place, probs.div_(q)).
    The 0.19 H100 logs' "torch peak memory increase" over 1024 rows lies on that slope."""
    logged = {100352: 1.52, 128256: 1.89, 151936: 2.21, 201088: 2.87, 256000: 3.65}  # vocab: GiB
    for vocab, gib in logged.items():
        # within 0.015 GiB but gemma-2-9b (+0.06; its logits are soft-capped in compute_logits)
        assert 1024 * vocab * SAMPLER_TRITON_BYTES / GIB == pytest.approx(gib - 0.17, abs=0.065)


@pytest.mark.parametrize(("tp", "util", "logged_kv_gib"), [(1, 0.95, 58.47), (2, 0.95, 63.28), (2, 0.90, 59.32)])
def test_gpt_oss_20b_on_0_19(tp: int, util: float, logged_kv_gib: float) -> None:
    """llm-d planner logs (H100, 8192 tokens): the Triton sampler over 1024 x 201,088 logits sets the
    peak (2.87 GiB logged). Charging the forward pass's share of the constant on top left the plan
    1.2-1.6 % high."""
    plan = _plan("openai/gpt-oss-20b", "0.19.0", util, 8192, tensor_parallel_size=tp, enable_prefix_caching=False)
    assert plan.memory.kv_cache_bytes / GIB == pytest.approx(logged_kv_gib, rel=0.005)
    assert "Triton" in plan.memory.notes["activation"]


def test_a_forward_pass_peak_keeps_the_whole_constant() -> None:
    """Mixtral's 32,000-token vocabulary makes a small sampler peak (0.43 GiB over 1024 rows): the
    forward pass sets the peak and the constant is charged whole (0.19 TP=2 log: 28.44 GiB)."""
    plan = _plan("mistralai/Mixtral-8x7B-Instruct-v0.1", "0.19.0", 0.95, 8192, tensor_parallel_size=2,
                 enable_prefix_caching=False)
    assert "the sampler, not the compiling forward pass" not in plan.memory.notes["non_torch"]
    assert plan.memory.kv_cache_bytes / GIB == pytest.approx(28.44, rel=0.035)


def test_only_the_last_pipeline_stage_samples() -> None:
    """profile_run runs the dummy sampler on the last PP rank only (v1/worker/gpu_model_runner.py:
    `if get_pp_group().is_last_rank: ... self._dummy_sampler_run`): with PP=4 on vLLM 0.19 the llm-d
    planner's Llama-3.1-8B log prints 1.05 GiB of peak activation on the first stage, below the
    1024 x 128,256 x 14 B = 1.71 GiB the Triton sampler takes on the last."""
    from vllmkit.engine.versions import rules_for
    from vllmkit.hardware.profiles import load_profiles, resolve_gpu
    from vllmkit.hub.resolve import resolve_model
    from vllmkit.plan.candidates import engine_settings, prepare_candidate
    from vllmkit.plan.variants import make_variant

    req = PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", source="catalog", gpu="h100-sxm",
                      vllm_version="0.19.0", pipeline_parallel_size=4, tensor_parallel_size=1,
                      gpu_memory_utilization=0.95, max_model_len=8192)
    rules = rules_for("0.19.0")
    variant = make_variant(resolve_model(req.model, source="catalog", revision=None, refresh=False, env=ENV), rules)
    profile = resolve_gpu("h100-sxm", profiles=load_profiles(include_user_config=False))
    settings = engine_settings(req, profile, rules, "auto", variant.arch, 1, 4, None)
    prep = prepare_candidate(variant, 1, 4, settings, rules)
    first, last = prep.budgets[0], prep.budgets[-1]
    assert last.activation.bytes == 1024 * 128256 * SAMPLER_TRITON_BYTES
    assert first.activation.bytes < 1.05 * GIB < last.activation.bytes
    assert "Triton" not in first.activation.note


def test_the_plan_names_flashinfers_sampler_from_0_21() -> None:
    """From vLLM 0.21 VLLM_USE_FLASHINFER_SAMPLER defaults to on (envs.py in the 0.21.0 wheel; 0.17-0.20 ran the
    Triton top-k/top-p kernel, the flag opt-in), so on CUDA the profile's dummy sampler is FlashInfer's
    top_k_top_p_sampling_from_logits. It is sized as the Triton path's 14 B per (row, vocab) element (the
    0.21-0.28 L4 / L40S logs fit within ~2 %); the note names the kernel of the release."""
    notes = {v: _plan("Qwen/Qwen3-8B", v, 0.9, 8192).memory.notes["activation"] for v in ("0.19.0", "0.21.0")}
    assert "Triton top-k/top-p" in notes["0.19.0"] and "FlashInfer top-k/top-p" in notes["0.21.0"]
    assert "(14 B each)" in notes["0.21.0"]



def test_a_restart_with_the_compile_cache_holds_no_compile_memory() -> None:
    """Round 24 (estimate/memory.py COMPILE_SHARE): the constant's forward-pass share is torch.compile's memory
    on a first start. Hand-worked for Llama-3.1-8B at vLLM 0.17.1 on a 24 GB card (2,048 batched tokens, 256
    sequences, the Triton sampler):
      forward = 2048 x 4096 x 2 B x 4 + 2048 x 14336 x 2 B x 3 = 243,269,632 B
      sampler = 256 x 128,256 x 14 B                          = 459,669,504 B
      share   = 1152 MiB - 256 MiB                             = 939,524,096 B
      cold: credit = sampler - forward = 216,399,872 B, non-torch = 1152 MiB - that = 991,559,680 B
      warm (or --enforce-eager): non-torch = 1152 MiB - share = 256 MiB = 268,435,456 B
    Round 31: 0.17.1 is one of the releases (0.14 - 0.23) whose first starts show no compile memory, so there
    the cold plan is the warm one."""
    kw = dict(max_len=8192, gpu="rtx-3090", tensor_parallel_size=1)
    cold = _plan("meta-llama/Llama-3.1-8B-Instruct", "0.17.1", 0.9, **kw)
    warm = _plan("meta-llama/Llama-3.1-8B-Instruct", "0.17.1", 0.9, compile_cache="warm", **kw)
    eager = _plan("meta-llama/Llama-3.1-8B-Instruct", "0.17.1", 0.9, enforce_eager=True, **kw)
    assert warm.memory.non_torch_bytes == eager.memory.non_torch_bytes == 268_435_456
    assert cold.memory.non_torch_bytes == 268_435_456
    assert cold.memory.activation_bytes == warm.memory.activation_bytes == 459_669_504
    assert "vLLM 0.17.1's profile peak holds no compile memory" in cold.memory.notes["non_torch"]
    assert "warm compile cache" in warm.memory.notes["non_torch"]
    assert NON_TORCH_BASE - NON_TORCH_SORT_PEAK_REST == 939_524_096
    # where the share is held, a first start carries the part of it the forward pass reaches beyond the sampler:
    # 1152 MiB less the credit (sampler - forward = 216,399,872 B at 0.17.1's shapes) = 991,559,680 B
    assert NON_TORCH_BASE - (459_669_504 - 243_269_632) == 991_559_680


def test_first_starts_of_0_14_to_0_23_hold_no_compile_memory() -> None:
    """Round 31 (engine/versions.py compile_memory_in_profile), from public logs:
    - llm-d planner, vLLM 0.19, H100, CodeLlama-7B, 8,192 tokens, utilization 0.95, a first start whose profile
      took 17.55 s (compiling): "torch peak memory increase: 0.77GiB; non-torch forward increase memory: 0.25GiB",
      "Available KV cache memory: 61.66 GiB" -- the forward pass alone, no compile share;
    - men16922/llmso-study, vLLM 0.23, RTX 4080 Laptop (WSL2), Qwen2.5-1.5B, 4,096 tokens, 0.85: 6.51 GiB;
    - alexostapiuk11/coldstart-recon-worker, vLLM 0.27.1, RTX 4090, Qwen3-8B, 8,192 tokens, 0.92: cold 4.92 GiB
      ("torch.compile took 38.96 s", 1.18 GiB of peak activation), warm 5.91 GiB (0.19 GiB) -- the share is back."""
    codellama = build_plan(PlanRequest(model="codellama/CodeLlama-7b-hf", source="catalog", gpu="h100-sxm",
                                       vllm_version="0.19.0", gpu_memory_utilization=0.95, max_model_len=8192,
                                       enable_prefix_caching=False), ENV)
    assert codellama.memory.kv_cache_bytes / GIB == pytest.approx(61.66, rel=0.01)
    laptop = build_plan(PlanRequest(model="Qwen/Qwen2.5-1.5B-Instruct", source="catalog", gpu="rtx-4080-laptop",
                                    vllm_version="0.23.0", gpu_memory_utilization=0.85, max_model_len=4096,
                                    max_num_seqs=64), ENV)
    assert laptop.memory.kv_cache_bytes / GIB == pytest.approx(6.51, rel=0.03)
    recon = dict(model="Qwen/Qwen3-8B", source="catalog", gpu="rtx-4090", vllm_version="0.27.1",
                 gpu_memory=int(23.52 * GIB), gpu_memory_utilization=0.92, max_model_len=8192)
    cold = build_plan(PlanRequest(**recon), ENV)
    warm = build_plan(PlanRequest(**recon, compile_cache="warm"), ENV)
    assert cold.memory.kv_cache_bytes / GIB == pytest.approx(4.92, rel=0.04)
    assert warm.memory.kv_cache_bytes / GIB == pytest.approx(5.91, rel=0.04)
    assert "a first start:" in cold.memory.notes["non_torch"]


@pytest.mark.parametrize(("model", "version", "gpu", "total_gib", "util", "max_len", "eager", "logged_kv_gib",
                          "source"), [
    # TheBuccaneer/vllm-offload-profiles @1e3f023, data/provenance/gpu_memory_configuration/ (RTX 3090, torch
    # total 23.54 GiB): the KV cache sized 4-5 s after the weights loaded, a start that compiled nothing;
    # "Available KV cache memory: 5.68 GiB" (Llama) and 6.32 GiB (Qwen2.5-7B); planned as first starts:
    # 4.85 / 5.60 GiB
    ("meta-llama/Llama-3.1-8B-Instruct", "0.17.1", "rtx-3090", 23.54, 0.9, 8192, False, 5.68, "offload llama"),
    ("Qwen/Qwen2.5-7B-Instruct", "0.17.1", "rtx-3090", 23.54, 0.9, 8192, False, 6.32, "offload qwen"),
    # ilseokoh/vllm-gce README @ede8ee4 (A100 40GB, 0.15.1, LLM(enforce_eager=True)): 19.28 GiB; with the
    # compile share charged: 18.53
    ("meta-llama/Llama-3.1-8B-Instruct", "0.15.1", "a100-40gb-sxm", None, 0.9, 131072, True, 19.28, "gce eager"),
])
def test_starts_that_compile_nothing_match_their_logs(model: str, version: str, gpu: str, total_gib: float | None,
                                                      util: float, max_len: int, eager: bool, logged_kv_gib: float,
                                                      source: str) -> None:
    plan = build_plan(PlanRequest(model=model, source="catalog", gpu=gpu, vllm_version=version,
                                  gpu_memory=int(total_gib * GIB) if total_gib else None, enforce_eager=eager,
                                  compile_cache="cold" if eager else "warm",
                                  gpu_memory_utilization=util, max_model_len=max_len), ENV)
    assert plan.memory.kv_cache_bytes / GIB == pytest.approx(logged_kv_gib, rel=0.03), source


@pytest.mark.parametrize(("version", "mentions_tmp"), [("0.11.0", False), ("0.12.0", True), ("0.13.0", True),
                                                       ("0.24.0", False), ("0.27.1", False)])
def test_first_start_note_names_inductors_shared_cache_where_it_is_shared(version: str, mentions_tmp: bool) -> None:
    """Round 36 (engine/versions.py compile_memory_in_profile note): from 0.12 vLLM compiles through Inductor's
    standalone compile without setting TORCHINDUCTOR_CACHE_DIR (0.12.0 compilation/compiler_interface.py
    InductorStandaloneAdaptor.initialize_cache; envs.py VLLM_USE_STANDALONE_COMPILE defaults to "1"; 0.11.0's
    default is "0" and its InductorAdaptor sets the directory under vLLM's cache), and from 0.20 the directory is
    set per cache key again (compilation/decorators.py). On the releases between, where a first start is charged
    the share, the note says an earlier start of the model on the machine has the same effect as a restart."""
    plan = _plan("meta-llama/Llama-3.1-8B-Instruct", version, 0.95, 31800, gpu="rtx-4090", max_num_seqs=64)
    note = plan.memory.notes["non_torch"]
    assert "a first start:" in note  # the share is charged on all five
    assert ("/tmp/torchinductor_$USER" in note) is mentions_tmp
