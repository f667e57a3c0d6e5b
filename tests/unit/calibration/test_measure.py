"""Measured non-KV terms from startup logs. Lines are verbatim from public logs
(benchmarks/data/public-startup-logs.jsonl) or built from vLLM's own format strings (file named next
to each); expected bytes are the printed GiB figures worked by hand (GiB = 2**30)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllmkit.calibration.measure import derive_lump, measure
from vllmkit.logs import parse_command, read_log

GIB = 1 << 30
DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "public-startup-logs.jsonl"


def g(x: float) -> int:
    return round(x * GIB)


def quote(row_id: str) -> str:
    for line in DATA.read_text().splitlines():
        row = json.loads(line)
        if row["id"] == row_id:
            return row["quote"]
    raise KeyError(row_id)


def run(text: str):
    return measure(read_log(text), text)


# vllm/v1/worker/gpu_worker.py (0.32.0 wheel) compile_or_warm_up_model, and the estimate line before it
SUMMARY_032 = (
    "(Worker pid=7) INFO 11-29 10:00:01 [gpu_worker.py:971] CUDA graph pool memory: 0.52 GiB (actual), 0.48 GiB "
    "(estimated), difference: 0.04 GiB (7.7%).\n"
    "(Worker pid=7) INFO 11-29 10:00:01 [gpu_worker.py:1034] Free memory on device (78.5/79.19 GiB) on startup. "
    "Desired GPU memory utilization is (0.92, 72.85 GiB). Actual usage is 16.52 GiB for consumed memory "
    "(weights + non-torch), 2.98 GiB for peak activation, and 0.52 GiB for CUDAGraph memory. Replace "
    "gpu_memory_utilization config with `--kv-cache-memory=56902975897` (52.99 GiB) to fit into requested memory, "
    "or `--kv-cache-memory=62269710336` (57.99 GiB) to fully utilize gpu memory. Current kv cache memory in use "
    "is 53.35 GiB.\n"
)
WEIGHTS_LINE = "(Worker pid=7) INFO 11-29 09:59:00 [gpu_model_runner.py:2653] Model loading took 15.26 GiB memory and 5.1 seconds\n"


def test_032_summary_line_splits_the_non_kv_memory() -> None:
    m = run(WEIGHTS_LINE + SUMMARY_032)
    assert m.device == "gpu"
    assert m.weights_bytes == g(15.26)
    assert m.non_torch_bytes == g(16.52) - g(15.26)  # consumed (weights + non-torch) - weights
    assert m.cudagraph_bytes == g(0.48)  # the estimate vLLM subtracted, not the 0.52 GiB actual
    assert m.activation_bytes == g(2.98) - g(0.48)  # peak printed = profile headroom + graph estimate
    assert m.requested_bytes == g(72.85) and m.total_bytes == g(79.19) and m.gpu_memory_utilization == 0.92
    assert m.available_kv_bytes == g(53.35)
    # the split reproduces vLLM's KV: requested - (weights + non-torch + activation + graphs) = 72.85-16.52-2.98
    assert m.requested_bytes - m.weights_bytes - m.non_torch_bytes - m.activation_bytes - m.cudagraph_bytes == \
        g(72.85) - g(16.52) - g(2.98)


def test_032_summary_without_estimate_line_uses_the_capture() -> None:
    m = run(WEIGHTS_LINE + SUMMARY_032.split("\n", 1)[1])
    assert m.cudagraph_bytes == g(0.52)
    assert m.activation_bytes == g(2.98) - g(0.52)


def test_the_profiled_estimate_line_gives_the_graph_term_from_0_20() -> None:
    """Without the pool line, the "Estimated CUDA graph memory: X GiB total" line (gpu_model_runner.py
    profile_cudagraph_memory) is the figure the 0.20+ budget took, the one the printed peak holds; 0.19 prints it
    without taking it, so the capture stays the graph term there."""
    estimate = ("(Worker pid=7) INFO 11-29 10:00:00 [gpu_model_runner.py:6475] Estimated CUDA graph memory: 0.48 GiB "
                "total\n")
    banner = "(APIServer pid=1) INFO 11-29 09:58:00 [api_server.py:1351] vLLM API server version {}\n"
    rest = SUMMARY_032.split("\n", 1)[1]
    m = run(banner.format("0.32.0") + WEIGHTS_LINE + estimate + rest)
    assert m.cudagraph_bytes == g(0.48) and m.activation_bytes == g(2.98) - g(0.48)
    # the profiling line of 0.19 (utils/mem_utils.py MemoryProfilingResult.__repr__): the estimate is not a term there
    profile = ("(Worker pid=7) INFO 11-29 10:00:00 [gpu_worker.py:300] Memory profiling takes 5.01 seconds. Total non KV "
               "cache memory: 19.50GiB; torch peak memory increase: 2.98GiB; non-torch forward increase memory: 1.26GiB; "
               "weights memory: 15.26GiB.\n")
    m = run(banner.format("0.19.1") + WEIGHTS_LINE + estimate + profile)
    assert m.cudagraph_bytes is None and m.activation_bytes == g(19.50) - g(15.26) - g(1.26)
    m = run(banner.format("0.20.0") + WEIGHTS_LINE + estimate + profile)
    assert m.cudagraph_bytes == g(0.48)


def test_v0_split_line_from_a_public_log() -> None:
    m = run(quote("blog-a800-qwen25vl-7b-tp4-lora"))
    # "model weights take 4.03GiB; non_torch_memory takes 1.39GiB; PyTorch activation peak memory takes 0.32GiB"
    assert (m.non_torch_bytes, m.activation_bytes, m.cudagraph_bytes) == (g(1.39), g(0.32), 0)
    assert m.requested_bytes == g(71.39)  # "... x gpu_memory_utilization (0.90) = 71.39GiB"
    assert m.kv_tokens == 307335 * 16  # "# cuda blocks: 307335" x the V0 GPU block size 16


def test_v0_064_profiling_results_line() -> None:
    m = run(quote("vllm-11230-qwen25-72b-gptq-int4-48gb"))
    # "Loading model weights took 38.5260 GB" ... "peak_torch_memory=40.87GiB ... non_torch_memory=4.09GiB"
    assert m.weights_bytes == g(38.526)
    assert m.non_torch_bytes == g(4.09)
    assert m.activation_bytes == g(40.87) - g(38.526)  # peak torch memory includes the weights
    assert m.kv_tokens == 1280  # "... stored in KV cache (1280)"


@pytest.mark.parametrize(("line", "non_torch", "activation"), [
    # V1 0.8-0.10: MemoryProfilingResult.__repr__ (vllm/utils.py) at INFO
    ("Memory profiling takes 4.12 seconds. Total non KV cache memory: 17.10GiB; torch peak memory increase: 1.20GiB; "
     "non-torch forward increase memory: 0.40GiB; weights memory: 15.50GiB.", g(0.40), g(17.10) - g(15.50) - g(0.40)),
    # 0.32 wording (vllm/utils/mem_utils.py): total consumed = weights + non-torch
    ("Memory profiling takes 4.12 seconds. Total non KV cache memory: 17.10GiB; torch peak memory increase: 1.20GiB; "
     "total consumed (from mem_get_info): 15.90GiB; weights memory: 15.50GiB.", g(15.90) - g(15.50),
     g(17.10) - g(15.90)),
])
def test_v1_profiling_repr(line: str, non_torch: int, activation: int) -> None:
    m = run("INFO 01-01 00:00:00 [gpu_worker.py:1] " + line + "\nINFO 01-01 00:00:01 [gpu_worker.py:2] Available KV cache memory: 50.00 GiB\n")
    assert (m.non_torch_bytes, m.activation_bytes) == (non_torch, activation)


# vllm/v1/worker/cpu_worker.py (0.32.0 wheel) determine_available_memory, both branches
CPU_AUTO = ("(Worker pid=9) INFO 11-29 21:40:01 [cpu_worker.py:260] Auto set (1.55/12.59) GiB for KV cache on node 0, "
            "with 2.52 GiB requested memory for the worker. 0.97 GiB memory was consumed by non-kv usages.\n"
            "(EngineCore pid=8) INFO 11-29 21:40:01 [kv_cache_utils.py:2327] CPU KV cache size: 3,250,176 tokens, "
            "Maximum concurrency for 1,024 tokens per request: 3174.00x\n")
CPU_EXPLICIT = "(Worker pid=12788) INFO 11-29 21:18:37 [cpu_worker.py:260] Explicitly set (1.0/12.59) GiB for KV cache on node 0.\n"


def test_cpu_auto_set_line() -> None:
    m = run(CPU_AUTO)
    assert m.device == "cpu" and not m.kv_fixed
    assert m.cpu_non_kv_bytes == g(0.97)
    assert (m.available_kv_bytes, m.requested_bytes, m.total_bytes) == (g(1.55), g(2.52), g(12.59))
    assert (m.kv_tokens, m.max_concurrency) == (3_250_176, 3174.0)


def test_cpu_explicit_set_line_is_not_a_measurement() -> None:
    m = run(CPU_EXPLICIT)
    assert m.device == "cpu" and m.kv_fixed
    assert m.kv_fixed_bytes == GIB and m.cpu_non_kv_bytes is None


def test_lump_when_the_log_has_no_split() -> None:
    m = run(quote("blog-rtxpro6000-qwen3-32b-tp2"))
    assert m.non_torch_bytes is None
    # "Model loading took 30.59 GiB", "Available KV cache memory: 8.22 GiB"; requested 0.426 x 95.01 GiB (the post)
    requested = round(0.426 * g(95.01))
    derive_lump(m, requested_bytes=requested, weights_bytes=None, enforce_eager=False)
    assert m.lump
    assert m.non_torch_bytes == requested - g(30.59) - g(8.22)
    assert (m.activation_bytes, m.cudagraph_bytes) == (0, 0)


def test_no_lump_when_kv_was_fixed() -> None:
    text = ("INFO 01-01 00:00:00 [api_utils.py:1] non-default args: {'model': 'm', 'kv_cache_memory_bytes': 4294967296}\n"
            "INFO 01-01 00:00:01 [gpu_model_runner.py:1] Model loading took 15.26 GiB memory and 5.1 seconds\n")
    m = run(text)
    assert m.kv_fixed and m.available_kv_bytes == 4 * GIB
    derive_lump(m, requested_bytes=70 * GIB, weights_bytes=None, enforce_eager=False)
    assert m.non_torch_bytes is None and not m.lump


@pytest.mark.parametrize(("row_id", "model", "flags"), [
    ("vllm-13061-r1-distill-qwen14b-2x4090", "/root/autodl-tmp/deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
     {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.98}),
    ("vllm-pr12569-llama31-70b-w8a8", "neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w8a8",
     {"max_model_len": "2048", "gpu_memory_utilization": 0.98}),
])
def test_quoted_command_lines(row_id: str, model: str, flags: dict) -> None:
    cmd = parse_command(quote(row_id))
    assert cmd.model == model
    assert cmd.flags == flags


def test_api_server_command_line() -> None:
    cmd = parse_command("$ python -m vllm.entrypoints.openai.api_server --model /m/llama --port 8000 -tp 2 --enforce-eager")
    assert cmd.model == "/m/llama" and cmd.flags == {"tensor_parallel_size": 2, "enforce_eager": True}


def test_a_command_written_as_a_list() -> None:
    # docker-compose (vllm#12539, collected-startup-logs-48): the entrypoint as a JSON list; the item after "serve"
    # is the model, values follow their flags
    cmd = parse_command('entrypoint: [ "vllm", "serve", "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", '
                        '"--tensor-parallel-size", "4", "--max-model-len", "32768", "--enforce-eager" ]')
    assert cmd.model == "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"
    assert cmd.flags == {"tensor_parallel_size": 4, "max_model_len": "32768", "enforce_eager": True}
    # a list of --flag=value items alone (vllm#16712's Llama-4-Scout args)
    cmd = parse_command('"--gpu-memory-utilization=0.99", "--max-model-len=1000", "--tensor-parallel-size=2"')
    assert cmd.model is None and cmd.flags == {"gpu_memory_utilization": 0.99, "max_model_len": "1000",
                                               "tensor_parallel_size": 2}
    # Kubernetes args: flags, a value item after a flag; a markdown bullet is not an argument
    cmd = parse_command("args:\n  - --model\n  - meta-llama/Llama-3.1-8B\n  - --tensor-parallel-size=2\n"
                        '  - "--gpu-memory-utilization"\n  - "0.85"\n- a bullet\n- 7\n')
    assert cmd.model == "meta-llama/Llama-3.1-8B"
    assert cmd.flags == {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.85}
    # "serve" followed by a flag: no model is made up from it
    assert parse_command('["vllm", "serve", "--model", "/m/x", "--tensor-parallel-size", "2"]').model == "/m/x"
    # vLLM's own advice names flags without values: nothing is read from it
    assert parse_command("Try lowering --gpu-memory-utilization to free memory for weights, increasing "
                         "--tensor-parallel-size, or using --quantization.").flags == {}


LINE_PARTS = st.sampled_from([
    "Auto set (", "Explicitly set (", ") GiB for KV cache on node 0, with ", " GiB requested memory for the worker. ",
    " GiB memory was consumed by non-kv usages.", "Free memory on device (", "Actual usage is ", " GiB for consumed "
    "memory (weights + non-torch), ", " GiB for peak activation, and ", " GiB for CUDAGraph memory.",
    "Memory profiling takes 1.0 seconds. Total non KV cache memory: ", "Model loading took ", "vllm serve ",
    " --tensor-parallel-size ", " -tp ", "'", '"', "\\", "# ", "\n", "/", "1.5", "-3", "9" * 30, "nan", "\x00",
    '"serve", "', '", "--max-model-len=', "  - --tensor-parallel-size", "  - ",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(LINE_PARTS, st.text(max_size=20)), max_size=30))
def test_measure_and_command_never_raise(parts: list[str]) -> None:
    text = "".join(parts)
    m = measure(read_log(text), text)
    for value in (m.non_torch_bytes, m.activation_bytes, m.cudagraph_bytes, m.cpu_non_kv_bytes):
        assert value is None or value >= 0
    parse_command(text)


def test_the_summary_line_split_by_release_and_model_runner() -> None:
    """The RTX 4090 0.27.1 start (tests/data/logs) loaded its weights on Model Runner V2 ("[model_runner.py:329]
    Model loading took", the file of v1/worker/gpu/model_runner.py), which budgets no graphs before 0.29: the
    printed peak (1.18 GiB) is all activation and none of the 0.56 GiB captured was budgeted. From 0.27 the
    printed peak is the transient peak plus the applied graph estimate (gpu_worker.py, 0.27.1 / 0.28 wheels),
    so on the V1 runner ("[gpu_model_runner.py:...]") the graph term comes off it. Before 0.27 the printed peak
    is the torch peak alone and available = requested - consumed - peak - the applied estimate (0.24 / 0.26
    wheels): the line itself gives the graph term."""
    text = (Path(__file__).resolve().parents[2] / "data" / "logs" / "v1_0.27_rtx4090_cold_compile.log").read_text()
    m = run(text)
    assert m.cudagraph_bytes == 0 and m.activation_bytes == g(1.18)
    v1_runner = text.replace("[model_runner.py:329]", "[gpu_model_runner.py:4364]")
    m = run(v1_runner)
    assert m.cudagraph_bytes == g(0.56) and m.activation_bytes == g(1.18) - g(0.56)
    # a 0.26 start whose budget carried 0.50 GiB of graph estimate
    v26 = v1_runner.replace("version 0.27.1", "version 0.26.0").replace(
        "Current kv cache memory in use is 4.92 GiB", "Current kv cache memory in use is 4.42 GiB").replace(
        "Available KV cache memory: 4.92 GiB", "Available KV cache memory: 4.42 GiB")
    m = run(v26)
    assert m.cudagraph_bytes == g(21.64) - g(15.54) - g(1.18) - g(4.42) and m.activation_bytes == g(1.18)


def test_a_dev_build_after_0_26_0_prints_the_0_27_summary() -> None:
    """vLLM has no 0.26.1 release: a 0.26.1rc1.devN build is main after 0.26.0 and prints 0.27's summary, the
    estimate inside the peak. The public 0.26.1rc1.dev156 A100 start (collected-startup-logs-27) adds up that way:
    71.33 GiB requested = 57.26 consumed + the printed peak + 13.84 KV, with its 0.15 GiB estimate in the peak."""
    text = (Path(__file__).resolve().parents[2] / "data" / "logs" / "v1_0.27_rtx4090_cold_compile.log").read_text()
    dev = text.replace("[model_runner.py:329]", "[gpu_model_runner.py:4364]").replace(
        "version 0.27.1", "version 0.26.1rc1.dev156+g0eec856cc")
    m = run(dev)
    assert m.cudagraph_bytes == g(0.56) and m.activation_bytes == g(1.18) - g(0.56)
