"""Round 38's sweep of hostile numbers and names: each was planned (exit 0) or crashed with an
OverflowError (exit 1); now one line, exit 2."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest
from tests.clirun import invoke

from vllmkit.engine.versions import KNOWN_QUANT_METHODS

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}


def plan(*args: str):
    return invoke(["plan", "Qwen/Qwen3-8B", "--source", "catalog", "--gpu", "h100", *args], env=ENV)


def _one_line_usage_error(r, needle: str) -> None:
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    assert needle in r.stderr and "Traceback" not in r.stderr and r.stderr.count("error:") == 1


def test_an_offload_larger_than_any_host_is_refused() -> None:
    # 1e308 GiB x 2^30 is inf: int() raised OverflowError (exit 1, "unexpected error")
    _one_line_usage_error(plan("--cpu-offload-gb", "1e308"), "more host memory than any machine has")
    assert plan("--cpu-offload-gb", "4", "--json").exit_code == 0


def test_an_absurd_request_rate_is_refused_not_simulated() -> None:
    # the sustained-rate search multiplied the rate into an int request count: OverflowError at 1e308
    r = plan("--input-len", "10", "--output-len", "10", "--request-rate", "1e308")
    _one_line_usage_error(r, "more than one deployment takes")
    assert plan("--input-len", "10", "--output-len", "10", "--request-rate", "5", "--json").exit_code == 0


@pytest.mark.parametrize("value", ["0", "-3", "nan", "inf", "1e308"])
def test_min_concurrency_must_be_a_positive_count(value: str) -> None:
    # each of these planned silently with exit 0 (a context for 0 or -3 requests, NaN compared false)
    _one_line_usage_error(plan("--min-concurrency", value), "--min-concurrency must be a positive number")


def test_an_unknown_quantization_is_refused_with_the_usual_ones() -> None:
    # the plan printed `--quantization nosuch` into its serve line, which vLLM's argparse refuses
    r = plan("--quantization", "nosuch")
    _one_line_usage_error(r, "unknown --quantization 'nosuch'")
    assert "fp8" in r.stderr
    assert plan("--quantization", "fp8", "--json").exit_code == 0


def test_every_method_the_installed_vllm_accepts_is_known() -> None:
    """The list the check uses holds every `--quantization` choice of the vLLM installed here (read from its
    source, vllm/model_executor/layers/quantization/__init__.py QuantizationMethods, without importing it),
    so no value vLLM takes is refused."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        pytest.skip("vLLM is not installed (scripts/setup.sh --with-vllm installs it; CI does)")
    source = Path(spec.origin).parent / "model_executor" / "layers" / "quantization" / "__init__.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    methods: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "QuantizationMethods" for t in node.targets):
            methods = {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    assert len(methods) > 10, "QuantizationMethods not found in the installed vLLM's source"
    assert methods <= KNOWN_QUANT_METHODS, sorted(methods - KNOWN_QUANT_METHODS)


def test_a_missing_prompts_file_is_named_before_the_server_is_asked() -> None:
    # the port is closed: before, the unreachable server was reported and the missing file never was
    r = invoke(["bench", "http://127.0.0.1:9", "--prompts", "/nonexistent/prompts.txt"], env=ENV)
    _one_line_usage_error(r, "--prompts /nonexistent/prompts.txt: no such file")
