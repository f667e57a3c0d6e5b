"""The log reader: line cleaning and the facts of each log generation in the corpus.

Expected values are the numbers printed in the source logs (see each file's header); GiB figures are
converted with gib() because the parser stores bytes.
"""

from __future__ import annotations

import pytest

from tests.unit.logs.corpus import all_logs, gib, load
from vllmkit.logs import clean_line, parse_config_line, parse_log, parse_python_dict, read_log


@pytest.mark.parametrize(
    ("raw", "message", "process", "level"),
    [
        # V1 with process prefix (arm dgx-spark log)
        ("(EngineCore_DP0 pid=164) INFO 01-23 15:50:05 [gpu_worker.py:298] Available KV cache memory: 102.56 GiB",
         "Available KV cache memory: 102.56 GiB", "EngineCore_DP0", "INFO"),
        # tensor-parallel worker, dateless header (0.27.1 blog log)
        ("(Worker_TP1 pid=612) INFO [model_runner.py:329] Model loading took 30.59 GiB and 20.456472 seconds",
         "Model loading took 30.59 GiB and 20.456472 seconds", "Worker_TP1", "INFO"),
        # V0 header without brackets (vllm#12330)
        ("INFO 01-13 11:35:23 gpu_executor.py:76] # GPU blocks: 5691, # CPU blocks: 2048",
         "# GPU blocks: 5691, # CPU blocks: 2048", None, "INFO"),
        # V0 multiproc worker with rank (vllm#15255)
        ("(VllmWorker rank=0 pid=85) ERROR 03-20 23:26:06 [multiproc_executor.py:375] boom", "boom", "VllmWorker rank=0",
         "ERROR"),
        # Ray worker with ip and the Ray de-duplication suffix (vllm#15598)
        ("(RayWorkerWrapper pid=1463574, ip=192.168.10.60) INFO 03-27 10:29:01 [worker.py:267] Memory profiling takes "
         "4.26 seconds [repeated 30x across cluster]", "Memory profiling takes 4.26 seconds", "RayWorkerWrapper", "INFO"),
        # ANSI colours of vllm/logging_utils/formatter.py ColoredFormatter
        ("\x1b[0;36m(APIServer pid=1)\x1b[0;0m \x1b[33mWARNING\x1b[0m \x1b[90m01-23 15:50:32\x1b[0m \x1b[90m[x.py:1]\x1b[0m hi",
         "hi", "APIServer", "WARNING"),
        # docker compose (vllm#10439) and buildkite (vllm#14574) prefixes
        ("vllm-1  | INFO 11-18 18:07:17 api_server.py:194] Started engine process with PID 76",
         "Started engine process with PID 76", None, "INFO"),
        ("  | [2025-03-10T15:07:20Z] ERROR 03-10 08:07:20 [core.py:302] EngineCore hit an exception",
         "EngineCore hit an exception", None, "ERROR"),
        # torch rank prefix
        ("[rank0]: torch.OutOfMemoryError: CUDA out of memory.", "torch.OutOfMemoryError: CUDA out of memory.", None, None),
        # multi-line messages get "\r\n" + prefix from NewLineFormatter
        ("(EngineCore pid=7) INFO 11-29 21:12:22 [x.py:1] \tlocal_rank=0\r", "local_rank=0", "EngineCore", "INFO"),
    ],
)
def test_clean_line(raw: str, message: str, process: str | None, level: str | None) -> None:
    assert clean_line(raw) == (message, process, level)


def test_config_line_keys() -> None:
    # keys of VllmConfig.__str__ (vllm/config/vllm.py, 0.32); served_model_name must not be read as model
    line = (
        "model='/m', speculative_config=None, tokenizer='/m', trust_remote_code=False, dtype=torch.bfloat16, "
        "max_seq_len=2048, tensor_parallel_size=2, pipeline_parallel_size=1, quantization=awq_marlin, "
        "enforce_eager=True, kv_cache_dtype=fp8_e4m3, device_config=cuda, served_model_name=qwen, "
        "enable_prefix_caching=False"
    )
    cfg = parse_config_line(line)
    assert cfg["model"] == "/m"
    assert cfg["served_model_name"] == "qwen"
    assert cfg["dtype"] == "torch.bfloat16"
    assert cfg["kv_cache_dtype"] == "fp8_e4m3"
    assert cfg["max_seq_len"] == "2048"
    assert cfg["enforce_eager"] == "True"


def test_non_default_args_with_non_literals() -> None:
    text = "{'model': 'x', 'max_model_len': 4096, 'compilation_config': CompilationConfig(level=3), 'port': 8001}"
    args = parse_python_dict(text)
    assert args["model"] == "x" and args["max_model_len"] == 4096 and args["port"] == 8001


def test_v0_0_6_4_profiling_results() -> None:
    f = parse_log(load("v0_0.6.4_gptq_kv_too_small.log"))
    assert (f.vllm_version, f.engine) == ("0.6.4.post1", "V0")
    assert f.weights_bytes == gib(38.5260)  # "Loading model weights took 38.5260 GB" is GiB-valued
    assert f.gpu_total_bytes == gib(47.74)
    assert f.non_torch_bytes == gib(4.09)
    assert f.available_kv_bytes == gib(0.39)
    assert f.gpu_memory_utilization == 0.95
    assert f.num_gpu_blocks == 80
    assert (f.max_concurrency, f.concurrency_tokens_per_request) == (0.16, 8192)
    assert f.v0_max_kv_tokens == 1280
    assert (f.quantization, f.dtype, f.enforce_eager) == ("gptq_marlin", "float16", True)


def test_v0_0_6_3_namespace_args_then_resolved_config() -> None:
    f = parse_log(load("v0_0.6.3_namespace_args.log"))
    assert (f.vllm_version, f.engine) == ("0.6.3.post1", "V0")
    assert f.model == "Qwen/Qwen2.5-7B-Instruct"
    assert (f.tensor_parallel_size, f.max_model_len, f.gpu_memory_utilization) == (2, 32768, 0.85)
    assert f.dtype == "bfloat16"  # the engine line's resolved dtype wins over the args' 'auto'
    assert (f.port, f.max_num_seqs, f.block_size, f.enable_prefix_caching) == (8001, 256, 16, False)
    assert f.server_started


def test_v0_0_6_5_memory_profiling_takes_format() -> None:
    f = parse_log(load("v0_0.6.5_llama3_8b_a100_40g.log"))
    assert f.engine == "V0"
    assert f.weights_bytes == gib(14.9595)
    assert f.gpu_total_bytes == gib(39.50)
    assert f.gpu_memory_utilization == 0.90
    assert f.non_torch_bytes == gib(0.10)
    assert f.peak_activation_bytes == gib(9.37)
    assert f.available_kv_bytes == gib(11.12)
    assert f.num_gpu_blocks == 5691
    assert f.max_concurrency == 11.12 and f.max_model_len == 8192


def test_v0_0_7_tp_worker_prefix() -> None:
    f = parse_log(load("v0_0.7_r1_distill_tp2_kv_too_small.log"))
    assert f.weights_bytes == gib(13.9476)
    assert (f.max_model_len, f.v0_max_kv_tokens) == (131072, 81536)


def test_v0_0_8_2_engine_line_and_cuda_blocks() -> None:
    f = parse_log(load("v0_0.8.2_qwen25vl_tp4.log"))
    assert (f.vllm_version, f.engine) == ("0.8.2", "V0")
    assert f.gpu_total_bytes == gib(79.33)
    assert f.weights_bytes == gib(4.03)
    assert f.available_kv_bytes == gib(65.65)
    assert f.num_gpu_blocks == 307335
    assert (f.max_concurrency, f.concurrency_tokens_per_request) == (1600.70, 3072)


def test_v1_0_8_gb_unit_and_ci_prefixes() -> None:
    f = parse_log(load("v1_0.8_ci_no_kv_memory.log"))
    assert f.weights_bytes == gib(0.2389)  # V1 0.8 prints "GB" for a GiB value
    assert f.weights_load_seconds == pytest.approx(0.977005)


def test_v1_0_11_two_line_capacity() -> None:
    f = parse_log(load("v1_0.11_granite_l40s.log"))
    assert (f.vllm_version, f.engine) == ("0.11.0", "V1")
    assert f.model == "ibm-granite/granite-4.0-micro"
    assert (f.dtype, f.quantization, f.kv_cache_dtype, f.enforce_eager) == ("bfloat16", "fp8", "auto", False)
    assert f.max_model_len == 131072
    assert f.weights_bytes == gib(3.4244)
    assert f.available_kv_bytes == gib(35.34)
    assert f.kv_cache_tokens == 463136
    assert (f.max_concurrency, f.concurrency_tokens_per_request) == (3.53, 131072)
    assert f.graph_memory_bytes == gib(0.72)
    assert f.init_engine_seconds == 113.49


def test_v1_0_11_ansi_colours() -> None:
    f = parse_log(load("v1_0.11_dgxspark_ansi.log"))
    assert f.weights_bytes == gib(3.8844)
    assert f.available_kv_bytes == gib(102.56)
    assert f.kv_cache_tokens == 840160
    assert f.max_concurrency == 25.64 and f.concurrency_tokens_per_request == 32768
    assert f.init_engine_seconds == 81.30
    assert f.num_gpu_blocks == 52510


def test_v1_0_27_dateless_tp_workers() -> None:
    f = parse_log(load("v1_0.27_qwen3_32b_tp2_dateless.log"))
    assert f.weights_bytes == gib(30.59)
    assert f.available_kv_bytes == gib(8.22)
    assert f.kv_cache_tokens == 67296
    assert (f.max_concurrency, f.max_model_len) == (2.05, 32768)


def test_v1_models_s_spelling() -> None:
    f = parse_log(load("v1_0.2x_fp8kv_models_s_kv_too_small.log"))
    assert f.max_model_len == 221000
    assert f.kv_needed_bytes == gib(10.12)
    assert f.available_kv_bytes == gib(5.59)
    assert f.estimated_max_model_len == 122080


def test_an_error_hard_wrapped_inside_a_word_is_joined() -> None:
    # a terminal that wraps at a fixed width cuts words (SergiioB/intel-arc-pro-b70-inference-cookbook issue 4,
    # collected-startup-logs-36): the two halves joined without a space make the one line vLLM raised
    f = parse_log(
        "(EngineCore pid=316) ValueError: To serve at least one request with the model's max seq len (100000), "
        "(4.26 GiB KV cach\n"
        "e is needed, which is larger than the available KV cache memory (4.25 GiB). Based on the available memory,"
        " the estimated maximum model length is 99840.\n")
    assert f.max_model_len == 100000
    assert f.kv_needed_bytes == gib(4.26) and f.available_kv_bytes == gib(4.25)
    # a quote re-wrapped at a space still joins with one
    g = parse_log("ValueError: To serve at least one request with the model's max seq len (100000), (4.26 GiB KV cache\n"
                  "is needed, which is larger than the available KV cache memory (4.25 GiB).\n")
    assert g.kv_needed_bytes == gib(4.26) and g.available_kv_bytes == gib(4.25)


def test_v1_0_32_cpu_real_log() -> None:
    f = parse_log(load("v1_0.32_cpu_kv_too_small_real.log"))
    assert (f.vllm_version, f.engine, f.platform) == ("0.32.0", "V1", "cpu")
    assert f.architecture == "LlamaForCausalLM"
    assert f.max_model_len == 2048
    # --kv-cache-memory-bytes is used as is (reference §1), so the exact budget is known
    assert f.kv_cache_memory_bytes_requested == 500000 and f.available_kv_bytes == 500000
    assert f.estimated_max_model_len == 768
    assert f.engine_failed is True
    assert f.last_error is not None and f.last_error.startswith("ValueError: To serve at least one request")


def test_v1_0_33_one_line_capacity_and_memory_summary() -> None:
    f = parse_log(load("v1_0.33_memory_summary_synthetic.log"))
    assert (f.vllm_version, f.platform, f.kv_pool) == ("0.33.0", "cuda", "GPU")
    assert f.attention_backend == "FLASH_ATTN"
    assert f.weights_bytes == gib(14.99)
    assert f.available_kv_bytes == gib(55.84)
    assert f.kv_cache_tokens == 457440 and f.max_concurrency == 3.49
    assert f.gpu_total_bytes == gib(79.19) and f.gpu_free_bytes_at_start == gib(78.62)
    assert f.gpu_memory_utilization == 0.92
    assert f.peak_activation_bytes == gib(1.23) and f.graph_memory_bytes == gib(0.59)
    assert f.init_engine_seconds == 30.87
    assert f.server_started and f.port == 8000
    assert f.enable_prefix_caching is True


@pytest.mark.parametrize("name", all_logs())
def test_every_corpus_file_parses(name: str) -> None:
    parsed = read_log(load(name))
    assert parsed.events, f"{name}: no line recognised"


def test_empty_and_junk() -> None:
    assert parse_log("") == parse_log("\n\n")
    f = parse_log("Available KV cache memory: not-a-number GiB\nModel loading took GiB")
    assert f.available_kv_bytes is None and f.weights_bytes is None


def test_every_pattern_has_a_needle_a_source_and_versions() -> None:
    from vllmkit.logs import NEEDLES, PATTERNS

    assert {p.kind for p in PATTERNS} == set(NEEDLES)
    for p in PATTERNS:
        assert p.source and p.versions, p.kind
        assert p.regex.pattern == p.rx  # every pattern compiles


@pytest.mark.parametrize(("name", "expected"), [
    # compilation/backends.py "Compiling a graph for compile range (1, 2048) takes 26.37 s": a first start
    ("v1_0.27_rtx4090_cold_compile.log", "cold"),
    # compilation/decorators.py "Directly load AOT compilation from path ...": a restart (round 24)
    ("v1_0.27_rtx4090_warm_compile.log", "warm"),
    # a log without compile lines says nothing
    ("v1_0.11_granite_l40s.log", None),
])
def test_the_compile_lines_say_whether_the_start_compiled(name: str, expected: str | None) -> None:
    assert read_log(load(name)).facts.compile_cache == expected


def test_the_compile_stage_says_which_start_it_was() -> None:
    # `vllmkit serve` shows it as a phase: a first start compiles for tens of seconds (38.96 s here) and its
    # memory profile holds the compile's memory; a restart loads the compiled graph (0.30 s)
    from vllmkit.launch.phases import LABELS
    from vllmkit.logs import LogReader

    details = {}
    for name in ("v1_0.27_rtx4090_cold_compile.log", "v1_0.27_rtx4090_warm_compile.log"):
        reader = LogReader()
        reader.feed_text(load(name))
        stages = {s.key: s.detail for s in reader.stages}
        assert list(stages).index("compile") == list(stages).index("weights_done") + 1
        details[name] = stages["compile"]
    assert details == {"v1_0.27_rtx4090_cold_compile.log": "torch.compile, first start",
                       "v1_0.27_rtx4090_warm_compile.log": "loaded from vLLM's compile cache"}
    assert LABELS["compile"] == "compiling the model"
