"""Inputs vLLM refuses (or cannot serve) are refused by vllmkit before it plans: one line, exit 2."""

from __future__ import annotations

import json

from tests.clirun import invoke

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}


def plan(*args: str):
    return invoke(["plan", "Qwen/Qwen3-8B", "--source", "catalog", "--gpu", "h100", *args], env=ENV)


def capacity(*args: str):
    return invoke(["capacity", "Qwen/Qwen3-8B", "--source", "catalog", "--gpu", "h100", "--qps", "2",
                   "--input-len", "512", "--output-len", "128", *args], env=ENV)


def _one_line_usage_error(r, needle: str) -> None:
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    assert needle in r.stderr and "Traceback" not in r.stderr and r.stderr.count("error:") == 1


def test_unknown_kv_cache_dtype_is_refused_with_the_choices() -> None:
    # vLLM's --kv-cache-dtype is a Literal (vllm/config/cache.py CacheDType): "fp9" fails its validation
    r = plan("--kv-cache-dtype", "fp9")
    _one_line_usage_error(r, "unknown --kv-cache-dtype 'fp9'")
    assert "fp8_e5m2" in r.stderr
    _one_line_usage_error(capacity("--kv-cache-dtype", "fp9"), "unknown --kv-cache-dtype")


def test_packed_kv_formats_vllm_has_but_vllmkit_does_not_size_are_said_so() -> None:
    # (nvfp4 and the per-token-head formats are sized since round 35: tests/unit/estimate/test_packed_kv_dtypes.py)
    _one_line_usage_error(plan("--kv-cache-dtype", "turboquant_k8v4"), "cannot size --kv-cache-dtype 'turboquant_k8v4'")


def test_known_kv_dtypes_still_plan() -> None:
    for dtype in ("fp8", "fp8_e5m2", "bfloat16"):
        assert plan("--kv-cache-dtype", dtype, "--json").exit_code == 0


def test_non_finite_numbers_are_refused_by_capacity() -> None:
    _one_line_usage_error(capacity("--qps", "nan"), "--qps must be a positive number")
    _one_line_usage_error(capacity("--qps", "inf"), "--qps must be a positive number")
    _one_line_usage_error(capacity("--gpu-price", "nan"), "--gpu-price must be positive")


def test_an_absurd_peak_is_refused_not_sized() -> None:
    # 1e308 req/s used to print a 309-digit replica count with exit 0
    _one_line_usage_error(capacity("--qps", "1e308"), "more than one deployment plan covers")


def test_more_sequences_than_batched_tokens_is_refused() -> None:
    """SchedulerConfig: "max_num_batched_tokens (100) must be greater than or equal to max_num_seqs (200)"
    (checked against the real vLLM in tests/e2e/test_engine_args_e2e.py)."""
    r = plan("--max-num-batched-tokens", "100", "--max-num-seqs", "200")
    _one_line_usage_error(r, "below max_num_seqs 200")
    assert "--max-num-batched-tokens 200 or more" in r.stderr


def test_v0_default_of_256_sequences_is_not_capped() -> None:
    """The V0 engine sets max_num_seqs = 256 without the V1 cap (0.10.1 arg_utils _set_default_args_v0),
    so 100 batched tokens under vLLM 0.6.4 is refused; the V1 engine caps the default instead."""
    _one_line_usage_error(plan("--max-num-batched-tokens", "100", "--vllm-version", "0.6.4"), "below max_num_seqs 256")
    r = plan("--max-num-batched-tokens", "100", "--vllm-version", "0.10.1", "--json")
    assert r.exit_code == 0
    assert json.loads(r.stdout)["data"]["settings"]["max_num_seqs"] == 100


def test_workload_longer_than_the_context_is_refused() -> None:
    # Qwen3-8B config.json: max_position_embeddings 40960
    r = plan("--input-len", "40000", "--output-len", "1000")
    _one_line_usage_error(r, "requests of 41,000 tokens (input + output) are longer than the model's context (40,960)")
    r = plan("--input-len", "5000", "--output-len", "1000", "--max-model-len", "4096")
    _one_line_usage_error(r, "longer than --max-model-len 4,096")
    assert "raise --max-model-len to 6000" in r.stderr
    _one_line_usage_error(invoke(["capacity", "Qwen/Qwen3-8B", "--source", "catalog", "--gpu", "h100", "--qps", "1",
                                  "--input-len", "100000", "--output-len", "100"], env=ENV), "longer than the model's context")


def test_a_long_workload_gets_a_context_that_holds_one_request() -> None:
    """Llama-3.1-8B on a 24 GB L4: the planner's own context choice keeps 4 requests of that length
    (44K); a workload of 100,100-token requests needs max_model_len >= 100,100, which the KV cache
    still holds once (about 180K tokens), so the plan serves it instead of shrinking below it."""
    r = invoke(["plan", "meta-llama/Llama-3.1-8B-Instruct", "--source", "catalog", "--gpu", "l4",
                "--input-len", "100000", "--output-len", "100", "--json"], env=ENV)
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    assert data["settings"]["max_model_len"] >= 100_100
    assert data["kv_cache"]["tokens"] >= 100_100
    assert data["performance"]["output_tokens_per_s"] > 0
    argv = data["serve_command"]
    assert int(argv[argv.index("--max-model-len") + 1]) >= 100_100


def test_smoke_and_bench_refuse_bad_addresses_and_timeouts_before_connecting() -> None:
    """No server listens on port 1; each of these must be refused before a connection is tried
    (exit 2, not 6 "cannot reach", not 1 for httpx's own ValueError on a negative timeout)."""
    _one_line_usage_error(invoke(["smoke", "ftp://127.0.0.1:1"]), "is not an http(s) server address")
    _one_line_usage_error(invoke(["smoke", "http://127.0.0.1:1", "--timeout", "-1"]), "--timeout must be a positive")
    _one_line_usage_error(invoke(["smoke", "http://127.0.0.1:1", "--timeout", "nan"]), "--timeout must be a positive")
    _one_line_usage_error(invoke(["smoke", "http://127.0.0.1:1", "--max-tokens", "0"]), "--max-tokens must be a positive")
    _one_line_usage_error(invoke(["bench", "http://127.0.0.1:1", "--timeout", "nan"]), "--timeout must be a positive")
    _one_line_usage_error(invoke(["bench", "http://a b:80"]), "is not an http(s) server address")
    _one_line_usage_error(invoke(["bench", "http://127.0.0.1:1", "--kv-cache-dtype", "fp9"]), "unknown --kv-cache-dtype")
    r = invoke(["doctor", "--url", "http://[::1", "--json"])
    assert r.exit_code == 2 and json.loads(r.stdout)["errors"][0]["code"] == "bad-url"


def test_a_profiles_dir_that_is_not_there_is_refused(tmp_path) -> None:
    # before: the default profiles were listed as if the folder had been read (exit 0)
    r = invoke(["gpus", "--profiles-dir", str(tmp_path / "typo")])
    _one_line_usage_error(r, "is not a folder")


def test_bench_refuses_a_tokenizer_folder_that_holds_no_tokenizer(tmp_path) -> None:
    # before: silently fell back to the server's /tokenize (a typo went unnoticed)
    r = invoke(["bench", "http://127.0.0.1:1", "--tokenizer", str(tmp_path)])
    _one_line_usage_error(r, "is not a folder with tokenizer.json")


def test_the_workload_picks_an_option_that_holds_one_request() -> None:
    """Llama-3.1-70B BF16 (131 GiB of weights) on 48 GB L40S: at TP4 each GPU keeps ~33 GiB of weights
    and ~6 GiB of KV, ~19K tokens in all (the planner's own choice); a request of 104,857 tokens needs
    more, which TP8 (~16 GiB of weights a GPU) holds, and so does the catalog's FP8 sibling at TP4 (~17 GiB of
    weights a GPU). Before: BF16 at TP4 was chosen and the plan failed (exit 3)."""
    r = invoke(["plan", "meta-llama/Llama-3.1-70B-Instruct", "--source", "catalog", "--gpu", "l40s",
                "--input-len", "104000", "--output-len", "857", "--json"], env=ENV)
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    bf16 = data["model"]["id"] == "meta-llama/Llama-3.1-70B-Instruct"
    assert not (bf16 and data["parallel"]["tensor_parallel_size"] == 4)
    assert data["settings"]["max_model_len"] >= 104_857 and data["kv_cache"]["tokens"] >= 104_857


def test_a_quant_method_no_vllm_release_knows_is_warned(tmp_path) -> None:
    """vLLM refuses a quant_method outside QUANTIZATION_METHODS ("Unknown quantization method"); the
    lists of 0.6.4, 0.10.1, 0.28.0 and 0.32.0 hold awq, gptq, fp8, compressed-tensors ... but no 'bogus'."""
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
           "max_position_embeddings": 8192, "torch_dtype": "bfloat16", "intermediate_size": 14336}
    for method, warned in (("bogus", True), ("awq", False)):
        d = tmp_path / method
        d.mkdir()
        (d / "config.json").write_text(json.dumps({**cfg, "quantization_config": {"quant_method": method, "bits": 4,
                                                                                 "group_size": 128}}))
        r = invoke(["plan", str(d), "--gpu", "h100", "--json"], env=ENV)
        assert r.exit_code == 0, r.stderr
        warnings = json.loads(r.stdout)["data"]["warnings"]
        assert any("not one vLLM accepts" in w for w in warnings) is warned


def test_a_rope_factor_that_is_not_a_number_is_a_config_error(tmp_path) -> None:
    """Before: a YaRN factor "big" became 'big' x 4096 (string repetition) and an internal error printed a
    12 KB message; vLLM reads the factor with float()."""
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
           "max_position_embeddings": 8192, "torch_dtype": "bfloat16", "intermediate_size": 14336,
           "rope_scaling": {"type": "yarn", "factor": "big", "original_max_position_embeddings": 4096}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = invoke(["plan", str(tmp_path), "--gpu", "h100", "--vllm-version", "0.20.0"], env=ENV)
    assert r.exit_code == 4 and "rope_scaling.factor is 'big', not a positive number" in r.stderr
    assert len(r.stderr) < 400 and "Traceback" not in r.stderr


def test_optional_size_fields_vllm_cannot_read_are_config_errors(tmp_path) -> None:
    """Found by fuzzing config.json: a string / negative / huge `num_key_value_heads`, `head_dim` or
    `num_experts` used to be planned as if absent (exit 0, the attention or experts silently wrong);
    vLLM fails building the model from such a config. Per-layer intermediate sizes (Gemma-3n) stay valid."""
    cfg = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
           "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
           "vocab_size": 151936, "max_position_embeddings": 40960, "torch_dtype": "bfloat16",
           "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8}
    cases = [("num_key_value_heads", "abc", 4), ("head_dim", -1, 4), ("head_dim", 0, 4), ("num_experts", 1e300, 4),
             ("num_experts_per_tok", [1, 2], 4), ("max_position_embeddings", "abc", 4),
             ("intermediate_size", [6144] * 48, 0)]
    for i, (key, value, code) in enumerate(cases):
        d = tmp_path / str(i)
        d.mkdir()
        (d / "config.json").write_text(json.dumps({**cfg, key: value}))
        r = invoke(["plan", str(d), "--gpu", "h100", "--json"], env=ENV)
        assert r.exit_code == code, (key, value, r.stdout[-300:])
        if code:
            assert key in json.loads(r.stdout)["errors"][0]["message"]


def test_unknown_model_dtype_is_refused_and_float32_is_sized() -> None:
    # vLLM's --dtype is a Literal (vllm/config/model.py ModelDType); an unknown one used to reach the
    # printed serve line, and float32 used to be planned as if it were bfloat16
    r = plan("--dtype", "fp4")
    _one_line_usage_error(r, "unknown --dtype 'fp4'")
    out = json.loads(plan("--dtype", "float32", "--json", "--max-model-len", "8192").stdout)["data"]
    bf16 = json.loads(plan("--json", "--max-model-len", "8192").stdout)["data"]
    assert out["memory"]["weights_bytes"] == 2 * bf16["memory"]["weights_bytes"]
    assert out["kv_cache"]["bytes_per_token"] == 2 * bf16["kv_cache"]["bytes_per_token"]
    assert "--dtype float32" in " ".join(out["serve_command"])
