"""`vllmkit models`: the bundled catalog listing."""

from __future__ import annotations

import json

from tests.clirun import invoke


def test_models_json_lists_catalog_with_sources() -> None:
    res = invoke(["models", "--json"])
    assert res.exit_code == 0
    models = json.loads(res.stdout)["data"]["models"]
    assert len(models) >= 40  # issue #2: at least 40 popular models
    ids = {m["id"] for m in models}
    for required in ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-32B-FP8", "deepseek-ai/DeepSeek-V3",
                     "openai/gpt-oss-120b", "zai-org/GLM-4.5-Air", "ibm-granite/granite-4.0-micro"):
        assert required in ids
    assert all(m["weights_source"] for m in models)


def test_models_filter_and_human_view() -> None:
    res = invoke(["models", "gemma"])
    assert res.exit_code == 0 and "google/gemma-3-27b-it" in res.stdout and "Qwen" not in res.stdout


def test_models_filter_without_match_is_empty_not_an_error() -> None:
    res = invoke(["models", "no-such-model", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["data"]["models"] == []
