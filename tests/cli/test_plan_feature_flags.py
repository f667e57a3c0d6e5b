"""`vllmkit plan` flags for multimodal limits, LoRA, speculative decoding and DP/EP (issue 13)."""

from __future__ import annotations

import json

from tests.clirun import invoke

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}


def run(*args: str):
    return invoke(["plan", "Qwen/Qwen3-8B", "--source", "catalog", "--gpu", "h100", *args], env=ENV)


def test_feature_flags_reach_the_plan_and_the_serve_line() -> None:
    r = run("--enable-lora", "--max-loras", "2", "--speculative-config",
            '{"method": "ngram", "num_speculative_tokens": 3}', "--json")
    data = json.loads(r.stdout)["data"]
    assert data["memory"]["lora_bytes"] > 0
    argv = data["serve_command"]
    assert argv[argv.index("--max-loras") + 1] == "2"
    assert json.loads(argv[argv.index("--speculative-config") + 1]) == {"method": "ngram", "num_speculative_tokens": 3}


def test_bad_json_is_a_usage_error() -> None:
    r = run("--speculative-config", "{nope")
    assert r.exit_code == 2
    assert "not valid JSON" in r.stderr and "Traceback" not in r.stderr


def test_speculative_model_must_be_a_name() -> None:
    r = run("--speculative-config", '{"method": "draft_model", "model": {"a": 1}, "num_speculative_tokens": 3}')
    assert r.exit_code == 2 and '"model" must be a repository id' in r.stderr


def test_speculative_config_needs_a_method() -> None:
    r = run("--speculative-config", '{"num_speculative_tokens": 3}')
    assert r.exit_code == 2 and "needs a method" in r.stderr


def test_negative_mm_limit_is_refused() -> None:
    r = run("--limit-mm-per-prompt", '{"image": -1}')
    assert r.exit_code == 2


def test_the_configurable_mm_limit_form_is_checked_too() -> None:
    # vLLM's configurable form {"video": {"count": 1, "num_frames": 32}}: its count is checked like a plain
    # one (a negative or non-integer count reached the serve line, or failed as an unexpected error)
    for bad in ('{"image": {"count": -2}}', '{"image": {"count": "x"}}', '{"image": {"count": true}}'):
        r = run("--limit-mm-per-prompt", bad)
        assert r.exit_code == 2 and "needs a non-negative count" in r.stderr, bad
    r = run("--limit-mm-per-prompt", '{"image": {"count": 2, "width": 512}}', "--json")
    argv = json.loads(r.stdout)["data"]["serve_command"]
    # the options reach vLLM as given (they size its dummy profile items)
    assert json.loads(argv[argv.index("--limit-mm-per-prompt") + 1]) == {"image": {"count": 2, "width": 512}}


def test_serve_dry_run_carries_feature_flags() -> None:
    r = invoke(["serve", "Qwen/Qwen3-8B", "--source", "catalog", "--gpu", "h100", "--dry-run",
                "--enable-lora", "--max-lora-rank", "32", "--json"], env=ENV)
    assert r.exit_code == 0, r.stderr
    assert "--enable-lora" in r.stdout and "--max-lora-rank" in r.stdout


def test_serve_names_a_missing_plan_file(tmp_path) -> None:
    # a mistyped plan path used to be taken for a model and failed on "no GPU given"
    r = invoke(["serve", str(tmp_path / "plan.yaml"), "--dry-run"], env=ENV)
    assert r.exit_code == 4 and "no such plan file" in r.stderr


def test_serve_refuses_feature_flags_on_a_saved_plan(tmp_path) -> None:
    saved = tmp_path / "plan.yaml"
    assert run("--save", str(saved)).exit_code == 0
    r = invoke(["serve", str(saved), "--enable-lora", "--dry-run"], env=ENV)
    assert r.exit_code == 2 and "saved plan" in r.stderr


def test_speculative_methods_vllm_refuses_are_refused() -> None:
    """vLLM 0.32 SpeculativeConfig: method is a Literal (an unknown one fails validation), EAGLE /
    draft-model methods load the checkpoint named by "model", num_speculative_tokens is Field(gt=0)."""
    eagle = run("--speculative-config", '{"method": "eagle3", "num_speculative_tokens": 3}')
    assert eagle.exit_code == 2 and 'needs "model"' in eagle.stderr
    unknown = run("--speculative-config", '{"method": "lookahead", "num_speculative_tokens": 3}')
    assert unknown.exit_code == 2 and "unknown method 'lookahead'" in unknown.stderr
    zero = run("--speculative-config", '{"method": "ngram", "num_speculative_tokens": 0}')
    assert zero.exit_code == 2 and "num_speculative_tokens must be a positive integer" in zero.stderr
    for r in (eagle, unknown, zero):
        assert "Traceback" not in r.stderr and r.stderr.count("error:") == 1


def test_model_specific_mtp_method_is_accepted() -> None:
    # every MTP model type vLLM lists ends in "_mtp" (MTPModelTypes)
    r = run("--speculative-config", '{"method": "qwen3_next_mtp", "num_speculative_tokens": 1}', "--json")
    assert r.exit_code == 0, r.stderr
