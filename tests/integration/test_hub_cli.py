"""`vllmkit plan` against the stand-in hub: every model-source error through the CLI (exit 4,
one `error:` and one `hint:` line, the JSON envelope), and the request budget of a whole plan."""

from __future__ import annotations

import json

import pytest

from tests.clirun import invoke
from tests.integration.hubserver import HubServer

# (model, extra env, error code, words the message must contain, words the hint must contain)
ERROR_CASES = [
    ("acme/tiny-lama", {}, "model-not-found", ["acme/tiny-lama", "not found"], ["did you mean acme/tiny-llama"]),
    ("acme/gated", {}, "model-gated", ["acme/gated", "refused", "401"], ["HF_TOKEN"]),
    ("acme/gated", {"HF_TOKEN": "hf_wrong"}, "model-gated", ["403"], ["HF_TOKEN", "no access"]),
    ("ms://acme/gated", {}, "model-gated", ["ModelScope"], ["MODELSCOPE_API_TOKEN"]),
    ("acme/ratelimited", {}, "rate-limited", ["rate-limited", "429", "3 tries"], ["retry"]),
    ("acme/broken", {}, "hub-server-error", ["server error", "500"], ["retry later"]),
    ("acme/slow", {"VLLMKIT_HUB_TIMEOUT": "0.3", "VLLMKIT_HUB_RETRIES": "1"}, "hub-timeout",
     ["did not answer in time", "2 tries"], ["VLLMKIT_HUB_TIMEOUT"]),
    ("acme/malformed", {}, "bad-response", ["malformed data"], ["mirror"]),
    ("acme/badconfig", {}, "bad-response", ["config.json is not valid JSON"], ["repository"]),
    ("acme/absurd", {}, "bad-safetensors-header", ["acme/absurd/model.safetensors", "1000000000000"], ["damaged"]),
    ("acme/truncated", {}, "bad-safetensors-header", ["runs past the end"], ["damaged"]),
    ("acme/tiny-llama@nope", {}, "revision-not-found", ["'nope'"], ["revision"]),
    ("acme/tiny-llama", {"HF_HUB_OFFLINE": "1"}, "hub-unreachable", ["not in the bundled catalog"],
     ["HF_HUB_OFFLINE"]),
]


def plan(model: str, env: dict[str, str], *extra: str):  # type: ignore[no-untyped-def]
    return invoke(["plan", model, "--gpu", "h100", *extra], env=env)


@pytest.mark.parametrize(("model", "extra_env", "code", "message_words", "hint_words"), ERROR_CASES,
                         ids=[f"{c[0]}-{c[2]}" for c in ERROR_CASES])
def test_error_through_the_cli(hub: HubServer, hub_env: dict[str, str], model: str, extra_env: dict[str, str],
                               code: str, message_words: list[str], hint_words: list[str]) -> None:
    env = {**hub_env, **extra_env}
    result = plan(model, env, "--json")
    assert result.exit_code == 4, result.output
    doc = json.loads(result.stdout)
    assert doc["status"] == "error" and doc["exit_code"] == 4
    error = doc["errors"][0]
    assert error["code"] == code
    for word in message_words:
        assert word in error["message"]
    for word in hint_words:
        assert word in error["hint"]

    human = plan(model, env)
    assert human.exit_code == 4
    lines = human.stderr.strip().splitlines()
    assert [line.split(":", 1)[0] for line in lines] == ["error", "hint"]
    assert "Traceback" not in human.output


def test_plan_request_budget_and_cache(hub: HubServer, hub_env: dict[str, str]) -> None:
    first = plan("acme/tiny-llama", hub_env, "--json")
    assert first.exit_code == 0, first.output
    doc = json.loads(first.stdout)
    assert doc["data"]["model"]["id"] == "acme/tiny-llama"
    shard_reads = [r for r in hub.requests("acme/tiny-llama") if r.api == "cdn"]
    assert len(shard_reads) == 2  # one range read per shard
    assert all(r.range and r.body_bytes <= 4096 for r in shard_reads)
    hub.clear()
    second = plan("acme/tiny-llama", hub_env, "--json")
    assert second.exit_code == 0
    assert hub.requests() == []  # not one request: metadata (and any sibling search) is cached
    assert json.loads(second.stdout)["data"]["memory"] == doc["data"]["memory"]


def test_plan_alternatives_include_hub_siblings_with_real_sizes(hub: HubServer, hub_env: dict[str, str],
                                                                  repos) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(plan("acme/tiny-llama", hub_env, "--json").stdout)
    alts = {a["model_id"]: a for a in doc["data"]["alternatives"]}
    assert "acme/tiny-llama-FP8" in alts and alts["acme/tiny-llama-FP8"]["precision"] == "fp8"
    assert "acme/tiny-llama-AWQ" in alts
    fp8_file = len(repos["acme/tiny-llama-FP8"].files["model.safetensors"])
    # TP=1 rows carry the sibling's whole weight-file size as listed by the hub
    tp1 = [a for a in doc["data"]["alternatives"] if a["model_id"] == "acme/tiny-llama-FP8" and a["tensor_parallel_size"] == 1]
    # plus vLLM's RoPE cos/sin cache: 2,048 positions x head 16 (64 / 4 heads) x 2 B
    assert tp1 and tp1[0]["weights_bytes"] == fp8_file + 2048 * 16 * 2
