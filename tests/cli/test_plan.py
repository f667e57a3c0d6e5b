"""`vllmkit plan` through the CLI: JSON envelope, human view, exit codes, bad input.

Offline: HF_HUB_OFFLINE=1 makes the auto source fall back to the bundled catalog."""

from __future__ import annotations

import json

import pytest
from tests.clirun import invoke

GIB = 1 << 30


@pytest.fixture
def env(tmp_path, monkeypatch):
    # isolated config/cache dirs; offline so the catalog answers
    values = {
        "HF_HUB_OFFLINE": "1",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "VLLMKIT_CACHE_DIR": str(tmp_path / "vk-cache"),
        "HF_HOME": str(tmp_path / "hf"),
    }
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("VLLM_USE_MODELSCOPE", raising=False)
    return values


def run(*args: str):
    return invoke(list(args))


def envelope(result) -> dict:
    return json.loads(result.stdout)


def test_plan_json_envelope_has_documented_fields(env) -> None:
    res = run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--json")
    assert res.exit_code == 0, res.stderr
    doc = envelope(res)
    assert doc["vllmkit_result_version"] == 1 and doc["command"] == "plan" and doc["status"] == "ok"
    d = doc["data"]
    for path in ("model.id", "model.source", "gpu.name", "gpu.count", "vllm_version",
                 "parallel.tensor_parallel_size", "parallel.pipeline_parallel_size", "memory.total_bytes",
                 "memory.requested_bytes", "memory.weights_bytes", "memory.activation_bytes",
                 "memory.non_torch_bytes", "memory.cudagraph_bytes", "memory.kv_cache_bytes", "memory.sources",
                 "kv_cache.bytes_per_token", "kv_cache.block_size", "kv_cache.num_blocks", "kv_cache.tokens",
                 "kv_cache.max_model_len", "kv_cache.max_concurrency", "fits", "serve_command", "alternatives"):
        node = d
        for part in path.split("."):
            assert part in node, path
            node = node[part]
    assert d["model"]["source"] == "catalog"
    # Qwen3-8B: 36 layers x 8 kv heads x (128 + 128) x 2 bytes = 147,456 B/token (config.json)
    assert d["kv_cache"]["bytes_per_token"] == 36 * 8 * 256 * 2
    # H100 SXM as torch reports it: 79.19 GiB (vLLM logs); weights = index total 16,381,470,720 B plus vLLM's
    # RoPE cos/sin cache (40,960 positions x head 128 x 2 B): 15.27 GiB, as vLLM 0.19 logs "Model loading took"
    assert round(d["memory"]["total_bytes"] / GIB, 2) == 79.19
    assert d["memory"]["weights_bytes"] == 16_381_470_720 + 40_960 * 128 * 2
    assert round(d["memory"]["weights_bytes"] / GIB, 2) == 15.27
    assert d["memory"]["sources"]["weights"] == "measured"
    assert d["memory"]["sources"]["activation"] == "estimated"
    assert d["serve_command"][:3] == ["vllm", "serve", "Qwen/Qwen3-8B"]


def test_kv_cache_memory_bytes_fixes_the_budget(env) -> None:
    # 20 GiB of KV for Qwen3-8B at block 16: 147,456 B/token -> 16 * 147,456 = 2,359,296 B per block;
    # 20 GiB // 2,359,296 = 9,102 blocks; at L=32768 each request needs 2,048 blocks -> 4.44x
    res = run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--kv-cache-memory-bytes", "20GiB",
              "--max-model-len", "32768", "--json")
    d = envelope(res)["data"]
    assert d["kv_cache"]["num_blocks"] == (20 * GIB) // (16 * 147_456)
    assert d["kv_cache"]["tokens"] == int(9102 / 2048 * 32768)
    assert d["memory"]["sources"]["kv_cache"] == "given"


def test_tensor_parallel_halves_kv_heads_and_weights(env) -> None:
    one = envelope(run("plan", "Qwen/Qwen3-32B", "--gpu", "h100", "-tp", "1", "--max-model-len", "8192", "--json"))["data"]
    two = envelope(run("plan", "Qwen/Qwen3-32B", "--gpu", "h100", "-tp", "2", "--max-model-len", "8192", "--json"))["data"]
    assert two["kv_cache"]["bytes_per_token"] * 2 == one["kv_cache"]["bytes_per_token"]
    rope = 40_960 * 128 * 2  # the RoPE cache every rank holds whole
    assert abs((two["memory"]["weights_bytes"] - rope) * 2 - (one["memory"]["weights_bytes"] - rope)) < 2 * 10**6


def test_does_not_fit_exits_3_with_estimate(env) -> None:
    res = run("plan", "Qwen/Qwen3-8B", "--gpu", "rtx-4090", "--max-model-len", "40960", "-tp", "1",
              "--kv-cache-memory-bytes", "1GiB", "--json")
    doc = envelope(res)
    assert res.exit_code == 3 and doc["status"] == "error"
    assert doc["data"]["fits"] is False
    est = doc["data"]["estimated_max_model_len"]
    # 1 GiB // 2,359,296 B = 455 blocks, one reserved -> 454 blocks x 16 = 7,264 tokens
    assert est == 7264
    assert doc["errors"][0]["code"] == "does-not-fit" and "7264" in doc["errors"][0]["hint"]


def test_human_output_shows_breakdown_and_command(env) -> None:
    res = run("plan", "Qwen/Qwen3-8B", "--gpu", "NVIDIA H100 80GB HBM3")
    assert res.exit_code == 0
    assert "KV cache:" in res.stdout and "vllm serve" in res.stdout and "estimated" in res.stdout


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["plan", "Qwen/Qwen3-8B", "--gpu", "h1000"], 5, "unknown GPU"),
        (["plan", "Qwen/Qwen3-8B"], 2, "no GPU given"),
        (["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--max-model-len", "lots"], 2, "max-model-len"),
        (["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--max-model-len", "1000000"], 2, "native context"),
        (["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--gpu-memory-utilization", "1.5"], 2, "utilization"),
        (["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--kv-cache-memory-bytes", "-3"], 2, "kv-cache-memory-bytes"),
        (["plan", "nobody/NoSuchModel-7B", "--gpu", "h100"], 4, "not in the bundled catalog"),
        (["plan", "/definitely/not/here", "--gpu", "h100"], 4, ""),
    ],
)
def test_bad_input_one_line_error_and_exit_code(env, args, code, needle) -> None:
    res = run(*args)
    assert res.exit_code == code, res.stdout + res.stderr
    assert res.stderr.startswith("error: ")
    assert needle in res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    js = run(*args, "--json")
    doc = envelope(js)
    assert doc["status"] == "error" and doc["exit_code"] == code and doc["errors"][0]["message"]


def test_local_folder_with_broken_config(tmp_path, env) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "llama", "hidden_size": 64}')
    res = run("plan", str(tmp_path), "--gpu", "h100")
    assert res.exit_code == 4
    assert "num_hidden_layers" in res.stderr or "num_attention_heads" in res.stderr or "vocab_size" in res.stderr


def test_save_writes_yaml_plan(tmp_path, env) -> None:
    out = tmp_path / "plan.yaml"
    res = run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--save", str(out))
    assert res.exit_code == 0
    import yaml

    doc = yaml.safe_load(out.read_text())
    assert doc["plan"]["model"]["id"] == "Qwen/Qwen3-8B" and doc["request"]["gpu"] == "h100"


def test_mi300x_prefers_fp8_sibling(env) -> None:
    d = envelope(run("plan", "Qwen/Qwen3-32B", "--gpu", "mi300x", "--json"))["data"]
    assert d["model"]["id"] == "Qwen/Qwen3-32B-FP8"
    assert any(a["precision"] == "bf16" for a in d["alternatives"])


def test_small_model_keeps_bf16_on_a_fitting_gpu(env) -> None:
    d = envelope(run("plan", "Qwen/Qwen3-8B", "--gpu", "l40s", "--json"))["data"]
    assert d["model"]["id"] == "Qwen/Qwen3-8B"


def test_fp8_not_recommended_without_native_fp8(env) -> None:
    d = envelope(run("plan", "Qwen/Qwen3-32B", "--gpu", "a100-80gb-sxm", "--json"))["data"]
    assert d["model"]["id"] != "Qwen/Qwen3-32B-FP8"


def test_bf16_checkpoint_on_t4_is_served_as_float16(env) -> None:
    # T4 is sm 7.5: vLLM refuses bfloat16 below compute capability 8.0 (Qwen3-4B: no quantized sibling in the
    # catalog, so the BF16 checkpoint itself is planned)
    d = envelope(run("plan", "Qwen/Qwen3-4B", "--gpu", "t4", "--json"))["data"]
    assert d["settings"]["dtype"] == "half"
    assert "--dtype" in d["serve_command"]


def test_offline_warning_comes_before_the_numbers(env) -> None:
    """The catalog fallback qualifies every number: it is said before them, not after the serve line."""
    res = run("plan", "Qwen/Qwen3-8B", "--gpu", "h100")
    assert res.exit_code == 0
    out = res.stdout
    assert out.index("warning: offline") < out.index("Memory per GPU") < out.index("vllm serve command")


def test_does_not_fit_prints_no_serve_line_and_no_negative_kv(env) -> None:
    # 70B in BF16 (131 GiB of weights) on one 24 GB L4: vLLM would refuse at startup
    res = run("plan", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "l4", "-tp", "1")
    assert res.exit_code == 3
    assert "DOES NOT FIT" in res.stdout
    assert "vllm serve" not in res.stdout
    assert "-1" not in res.stdout.replace("-1 ", "")  # no negative sizes
    kv_row = next(ln for ln in res.stdout.splitlines() if ln.strip("│ ").startswith("KV cache  ") or ("KV cache " in ln and "short" in ln))
    assert "short" in kv_row
    assert "estimated maximum model length is 0" not in res.stdout


def test_alternatives_leave_out_contexts_nobody_would_use(env) -> None:
    """Rows that fit only at a context below min(native, 16K) are noise (an AWQ variant at context 64)."""
    doc = envelope(run("plan", "Qwen/Qwen3-32B", "--gpu", "l4", "--json"))
    for alt in doc["data"]["alternatives"]:
        if alt["fits"] and not alt["chosen"]:
            assert alt["max_model_len"] >= 16384, alt


def test_plan_shows_serving_features_and_opt_outs(env) -> None:
    """Issue 14: Qwen3 -> hermes tool calls + qwen3 reasoning (vLLM docs), in the data and the command."""
    d = envelope(run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--vllm-version", "0.32.0", "--json"))["data"]
    f = d["features"]
    assert f["family"] == "qwen3"
    assert f["tool_call_parser"]["name"] == "hermes" and f["tool_call_parser"]["enabled"] is True
    assert f["reasoning_parser"]["name"] == "qwen3" and f["reasoning_field"] == "reasoning"
    assert f["prefix_caching"]["enabled"] is True and f["prefix_caching"]["source"] == "vLLM default"
    cmd = d["serve_command"]
    assert cmd[cmd.index("--tool-call-parser") + 1] == "hermes" and "--reasoning-parser" in cmd
    d = envelope(run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--no-tools", "--no-reasoning", "--json"))["data"]
    assert d["features"]["tool_call_parser"]["enabled"] is False
    assert "--tool-call-parser" not in d["serve_command"] and "--reasoning-parser" not in d["serve_command"]
    human = run("plan", "Qwen/Qwen3-8B", "--gpu", "h100")
    assert "serving features:" in human.stdout and "tool calls: hermes (on" in human.stdout


def test_workload_gives_chunked_prefill_advice(env) -> None:
    """On a 24 GB L4 vLLM's default token budget is 2,048 per step (EngineArgs.get_batch_defaults for
    GPUs under 70 GiB), so an 8,192-token prompt is prefilled in ceil(8192 / 2048) = 4 steps."""
    doc = envelope(run("plan", "Qwen/Qwen3-8B", "--gpu", "l4", "--input-len", "8192", "--output-len", "256",
                       "--concurrency", "8", "--json"))
    assert doc["data"]["settings"]["max_num_batched_tokens"] == 2048
    advice = doc["data"]["features"]["chunked_prefill"]["detail"]
    assert "8,192-token prompts take 4 step(s)" in advice and "--max-num-batched-tokens 8,192" in advice
    # no workload: no per-workload advice
    plain = envelope(run("plan", "Qwen/Qwen3-8B", "--gpu", "l4", "--json"))
    assert "Your workload" not in plain["data"]["features"]["chunked_prefill"]["detail"]


def test_plan_total_memory_source_follows_the_profile(env) -> None:
    # --gpu-memory is the user's number, not a measurement; a listed H100's total is a torch reading
    given = json.loads(invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--gpu-memory", "48GiB", "--json"]).stdout)
    listed = json.loads(invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--json"]).stdout)
    assert given["data"]["memory"]["sources"]["total"] == "given"
    assert listed["data"]["memory"]["sources"]["total"] == "measured"
    human = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--gpu-memory", "48GiB"]).stdout
    assert any("total (as torch reports)" in line and "given" in line for line in human.splitlines())


# Plans with every kind of further non-KV term: a vision encoder's profile run (Qwen2.5-VL), preallocated LoRA
# stacks, a drafter's weights, and other processes' memory that vLLM 0.9.0 charges to its own budget.
EXTRA_TERM_PLANS = [
    (["Qwen/Qwen2.5-VL-7B-Instruct", "--gpu", "l4", "--vllm-version", "0.9.0.1", "--max-model-len", "2048"],
     {"encoder profile"}),
    (["Qwen/Qwen3-8B", "--gpu", "h100", "--vllm-version", "0.9.0", "--enable-lora", "--gpu-memory-in-use", "3GiB"],
     {"LoRA stacks", "other processes"}),
    (["meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100", "--speculative-config",
      '{"method": "eagle", "model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'],
     {"drafter"}),
]


@pytest.mark.parametrize(("args", "rows"), EXTRA_TERM_PLANS)
def test_memory_terms_add_up_to_the_request(env, args, rows) -> None:
    # vLLM sizes the KV cache as what the request leaves after every non-KV term of the profile run
    # (gpu_worker.determine_available_memory), so the terms a plan shows must add up to the request: a term
    # charged but not shown (the encoder's profile, LoRA stacks, a drafter, other processes) leaves the
    # table short of the KV figure by that much
    data = json.loads(invoke(["plan", *args, "--source", "catalog", "--json"]).stdout)["data"]
    mem = data["memory"]
    non_kv = ("weights_bytes", "non_torch_bytes", "activation_bytes", "cudagraph_bytes", "encoder_bytes",
              "lora_bytes", "speculative_bytes", "other_processes_bytes")
    assert mem["requested_bytes"] - sum(mem[k] for k in non_kv) == mem["kv_cache_bytes"]
    shown = {k.removesuffix("_bytes") for k in non_kv[4:] if mem[k]}
    assert shown and shown <= set(mem["sources"])  # each further term has its source tag
    human = invoke(["plan", *args, "--source", "catalog"], env={"COLUMNS": "200"}).stdout
    sizes = {}
    for line in human.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) >= 3 and cells[1].endswith(" GiB") and cells[0]:
            sizes[cells[0]] = float(cells[1].removesuffix(" GiB"))
    assert rows <= set(sizes)
    others = sum(v for k, v in sizes.items() if not k.startswith(("total", "requested", "KV cache")))
    requested = next(v for k, v in sizes.items() if k.startswith("requested"))
    assert abs(requested - others - sizes["KV cache"]) <= 0.005 * len(sizes)  # each row rounds to 0.01 GiB
    kv_row = next(line for line in human.splitlines() if line.strip("│ ").startswith("KV cache"))
    for label in rows:
        assert label in kv_row  # the KV note names what was subtracted


def _kv_gib(data: dict) -> float:
    return data["memory"]["kv_cache_bytes"] / GIB


def test_an_unknown_flashinfer_install_names_what_the_other_install_leaves(env) -> None:
    # vLLM 0.8-0.11.0 sort the profile run's dummy logits unless FlashInfer is installed (the vllm-openai image
    # has it, the PyPI wheel does not). LMCache's FAQ lists a vLLM 0.11.0 start of Qwen3-32B at TP=2 on H100s,
    # 40,960 tokens: 33.66 GiB of KV per GPU (benchmarks/data/collected-startup-logs-8.jsonl), which is what
    # the sort leaves, not the 38.5 GiB of the FlashInfer path; offline, the plan cannot know which install it
    # is for, so it keeps the image's and names the other
    args = ["plan", "Qwen/Qwen3-32B", "--gpu", "h100", "--gpu-count", "2", "-tp", "2", "--vllm-version", "0.11.0",
            "--max-model-len", "40960", "--source", "catalog", "--json"]
    res = json.loads(invoke(args).stdout)
    warning = next(w for w in res["data"]["warnings"] if "--no-flashinfer" in w)
    sorted_plan = json.loads(invoke([*args, "--no-flashinfer"]).stdout)
    named = float(warning.split("Without it: ")[1].split(" GiB")[0])
    assert named == pytest.approx(_kv_gib(sorted_plan["data"]), abs=0.006)
    assert abs(named / 33.66 - 1) < 0.015 and _kv_gib(res["data"]) > named + 4
    assert not any("flashinfer" in w.lower() for w in sorted_plan["data"]["warnings"])
    # told, or a release whose sampler does not depend on it, or ROCm (no FlashInfer branch there): no warning
    for extra in (["--flashinfer"], ["--vllm-version", "0.12.0"], ["--gpu", "mi300x"]):
        quiet = json.loads(invoke([*args, *extra]).stdout)
        assert quiet["exit_code"] == 0 and not any("flashinfer" in w.lower() for w in quiet["data"]["warnings"]), extra


def test_pipeline_stages_show_their_own_weights(env) -> None:
    # DeepSeek-V3 at TP 8 x PP 2: the first stage holds the 3 dense layers (a twentieth of an MoE layer each) and
    # the embedding, the second the head; the plan's figure is the heavier stage's, and both are listed
    res = run("plan", "deepseek-ai/DeepSeek-V3", "--gpu", "h100", "-tp", "8", "-pp", "2", "--json")
    mem = json.loads(res.stdout)["data"]["memory"]
    first, second = mem["stage_weights_bytes"]
    assert first < second == mem["weights_bytes"]
    assert (second - first) / 2**30 > 2  # about three MoE layers' share of a rank (3 x 11.5 GB / 8 = 4 GiB, less the head)
    text = run("plan", "deepseek-ai/DeepSeek-V3", "--gpu", "h100", "-tp", "8", "-pp", "2").stdout
    assert "one rank of each pipeline stage" in text
    assert json.loads(run("plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--json").stdout)["data"]["memory"][
        "stage_weights_bytes"] == []
