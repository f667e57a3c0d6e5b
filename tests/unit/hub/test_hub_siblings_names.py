"""Recognising quantized siblings by name (real repository names from the Hub)."""

from __future__ import annotations

import pytest

from vllmkit.hub.siblings import classify_tag, match_candidate, pick, root_name

MATCH_CASES = [
    ("Qwen/Qwen3-32B", "Qwen/Qwen3-32B-FP8", "fp8"),
    ("Qwen/Qwen3-32B", "Qwen/Qwen3-32B-AWQ", "awq"),
    ("Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", "gptq-int4"),
    ("Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-72B-Instruct-GPTQ-Int8", "gptq-int8"),
    ("Qwen/Qwen3-32B", "RedHatAI/Qwen3-32B-FP8-dynamic", "fp8"),
    ("Qwen/Qwen3-32B", "RedHatAI/Qwen3-32B-quantized.w4a16", "int4"),
    ("meta-llama/Llama-3.1-8B-Instruct", "RedHatAI/Llama-3.1-8B-Instruct-quantized.w8a8", "int8"),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4", "awq"),
    ("Qwen/Qwen3-32B", "unsloth/Qwen3-32B-unsloth-bnb-4bit", "bnb-4bit"),
    ("meta-llama/Llama-3.3-70B-Instruct", "nvidia/Llama-3.3-70B-Instruct-FP4", "nvfp4"),
    # the base of an FP8 model is found through its root name
    ("Qwen/Qwen3-32B-FP8", "Qwen/Qwen3-32B-AWQ", "awq"),
    # not siblings: a different model (Instruct vs base), GGUF/MLX, the model itself, a prefix clash
    ("meta-llama/Meta-Llama-3.1-8B", "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8", None),
    ("Qwen/Qwen3-32B", "unsloth/Qwen3-32B-GGUF", None),
    ("Qwen/Qwen3-32B", "mlx-community/Qwen3-32B-4bit", None),
    ("Qwen/Qwen3-32B", "Qwen/Qwen3-32B", None),
    ("Qwen/Qwen3-3", "Qwen/Qwen3-32B-FP8", None),
]


@pytest.mark.parametrize(("base", "candidate", "precision"), MATCH_CASES)
def test_match_candidate(base: str, candidate: str, precision: str | None) -> None:
    assert match_candidate(base, candidate) == precision


@pytest.mark.parametrize(
    ("name", "root"),
    [("Qwen3-32B-FP8", "Qwen3-32B"), ("Qwen2.5-72B-Instruct-GPTQ-Int4", "Qwen2.5-72B-Instruct"),
     ("Llama-3.1-8B-Instruct-quantized.w4a16", "Llama-3.1-8B-Instruct"), ("Qwen3-8B", "Qwen3-8B")],
)
def test_root_name(name: str, root: str) -> None:
    assert root_name(name) == root


def test_classify_rejects_unknown_words() -> None:
    assert classify_tag("Instruct-FP8") is None
    assert classify_tag("") is None


def test_pick_prefers_same_org_then_known_quantizers_and_drops_strangers() -> None:
    candidates = [
        "randomuser/Qwen3-32B-FP8",  # unknown uploader: never recommended
        "RedHatAI/Qwen3-32B-FP8-dynamic",
        "Qwen/Qwen3-32B-FP8",
        "RedHatAI/Qwen3-32B-quantized.w4a16",
        "neuralmagic/Qwen3-32B-quantized.w4a16",
        "randomuser/Qwen3-32B-AWQ",
    ]
    assert pick("Qwen/Qwen3-32B", candidates) == [
        ("Qwen/Qwen3-32B-FP8", "fp8"),
        ("RedHatAI/Qwen3-32B-quantized.w4a16", "int4"),
    ]
