"""Golden argv/env of the `vllm serve` builder. Expected lines are written from the rules in the
issue ("--quantization/--dtype only when needed", "--trust-remote-code only with auto_map", ...)
and vLLM's own flag names (vllm/engine/arg_utils.py, vllm/entrypoints/launchers/cli_args.py 0.32)."""

from __future__ import annotations

import pytest

from tests.unit.launch.plans import CUDA_ENDPOINT, cpu_plan, cuda_plan, multinode_plan, rocm_plan
from vllmkit.engine.flags import KnownFlags
from vllmkit.launch.command import (
    build_serve_command,
    format_shell,
    is_loopback,
    parse_extra_args,
    redact_argv,
    redact_env,
    secure_launch,
    serve_flags,
)

MODULE = ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]


def test_cuda_golden() -> None:
    req, plan = cuda_plan()
    cmd = build_serve_command(plan, req, CUDA_ENDPOINT)
    assert cmd.argv == [
        "vllm", "serve", "Qwen/Qwen3-32B",
        "--served-model-name", "qwen32b",
        "--host", "127.0.0.1",
        "--port", "8000",
        "--tensor-parallel-size", "2",
        "--max-model-len", "32768",
        "--gpu-memory-utilization", "0.92",
        "--max-num-seqs", "1024",
        "--max-num-batched-tokens", "8192",
        "--kv-cache-dtype", "fp8",
        # bf16 checkpoint quantized online: vLLM cannot infer it from config.json
        "--quantization", "fp8",
        "--generation-config", "vllm",
        "--api-key", "sk-secret-123",
    ]  # fmt: skip
    assert cmd.env == {}
    assert "--dtype" not in cmd.argv  # bfloat16 == the checkpoint's dtype


def test_cuda_visible_devices() -> None:
    req, plan = cuda_plan()
    cmd = build_serve_command(plan, req, CUDA_ENDPOINT, visible_devices=[2, 3])
    assert cmd.env == {"CUDA_VISIBLE_DEVICES": "2,3"}


def test_rocm_mi300x_golden() -> None:
    req, plan = rocm_plan()
    cmd = build_serve_command(plan, req, visible_devices=[3])
    assert cmd.argv == [
        "vllm", "serve", "internlm/internlm3-8b-instruct",
        "--host", "127.0.0.1",
        "--port", "8000",
        "--max-model-len", "32768",
        "--gpu-memory-utilization", "0.9",
        "--max-num-seqs", "1024",
        "--max-num-batched-tokens", "8192",
        "--trust-remote-code",
    ]  # fmt: skip
    # AITER on MI300-class; HIP_VISIBLE_DEVICES with a matching CUDA_VISIBLE_DEVICES (vLLM's
    # platforms/rocm.py raises when the two disagree)
    assert cmd.env == {"VLLM_ROCM_USE_AITER": "1", "HIP_VISIBLE_DEVICES": "3", "CUDA_VISIBLE_DEVICES": "3"}


def test_rocm_without_aiter_on_mi250() -> None:
    req, plan = rocm_plan()
    plan.gpu.name, plan.gpu.display_name = "mi250x", "AMD Instinct MI250X"
    assert "VLLM_ROCM_USE_AITER" not in build_serve_command(plan, req).env


def test_modelscope_env() -> None:
    req, plan = rocm_plan(source="modelscope")
    assert build_serve_command(plan, req).env["VLLM_USE_MODELSCOPE"] == "True"


def test_multinode_golden() -> None:
    req, plan = multinode_plan()
    cmd = build_serve_command(plan, req)
    assert cmd.argv == [
        "vllm", "serve", "meta-llama/Llama-3.1-405B-Instruct",
        "--host", "127.0.0.1",
        "--port", "8000",
        "--tensor-parallel-size", "8",
        "--pipeline-parallel-size", "2",
        "--distributed-executor-backend", "ray",
        "--max-model-len", "65536",
        "--gpu-memory-utilization", "0.92",
        "--max-num-seqs", "1024",
        "--max-num-batched-tokens", "8192",
    ]  # fmt: skip


def test_cpu_golden_module_launcher() -> None:
    req, plan = cpu_plan()
    cmd = build_serve_command(plan, req, launcher=MODULE)
    assert cmd.argv == [
        *MODULE,
        "--model", "/models/tiny",
        "--served-model-name", "tiny",
        "--host", "127.0.0.1",
        "--port", "8000",
        "--max-model-len", "1024",
        # the CPU budget is passed as bytes (VLLM_CPU_KVCACHE_SPACE is the legacy GiB form)
        "--kv-cache-memory-bytes", "1073741824",
        "--max-num-seqs", "128",
        "--max-num-batched-tokens", "2048",
    ]  # fmt: skip
    assert "--gpu-memory-utilization" not in cmd.argv
    assert cmd.env == {}


def test_dtype_only_when_it_differs() -> None:
    req, plan = cuda_plan()
    plan.settings.dtype = "half"  # e.g. V100: no bf16
    argv = build_serve_command(plan, req, CUDA_ENDPOINT).argv
    assert argv[argv.index("--dtype") + 1] == "float16"
    plan.settings.dtype = "bf16"  # alias of the checkpoint dtype
    assert "--dtype" not in build_serve_command(plan, req, CUDA_ENDPOINT).argv


def test_quantization_not_repeated_for_quantized_checkpoints() -> None:
    req, plan = cuda_plan()
    plan.model.quantization = "awq"
    plan.settings.quantization = "awq_marlin"  # vLLM upgrades awq to awq_marlin by itself
    assert "--quantization" not in build_serve_command(plan, req, CUDA_ENDPOINT).argv


def test_prefix_caching_and_revision() -> None:
    req, plan = cuda_plan()
    req = req.model_copy(update={"enable_prefix_caching": False, "revision": "abc123"})
    argv = build_serve_command(plan, req, CUDA_ENDPOINT).argv
    assert "--no-enable-prefix-caching" in argv
    assert argv[argv.index("--revision") + 1] == "abc123"


def test_api_key_is_redacted_everywhere() -> None:
    req, plan = cuda_plan()
    cmd = build_serve_command(plan, req, CUDA_ENDPOINT)
    assert "sk-secret-123" in cmd.argv
    assert "sk-secret-123" not in " ".join(cmd.redacted_argv)
    assert cmd.redacted_argv[cmd.redacted_argv.index("--api-key") + 1] == "***"
    assert "sk-secret-123" not in cmd.shell()
    assert redact_argv(["x", "--api-key=abc", "--hf-token", "hf_x"]) == [
        "x",
        "--api-key=***",
        "--hf-token",
        "***",
    ]
    assert redact_env({"VLLM_API_KEY": "k", "HF_TOKEN": "t", "A": "b"}) == {
        "VLLM_API_KEY": "***",
        "HF_TOKEN": "***",
        "A": "b",
    }


def test_secure_launch_moves_key_to_env() -> None:
    req, plan = cuda_plan()
    argv, env = secure_launch(build_serve_command(plan, req, CUDA_ENDPOINT))
    assert "--api-key" not in argv and "sk-secret-123" not in argv
    assert env["VLLM_API_KEY"] == "sk-secret-123"


def test_flags_checked_against_known_parser() -> None:
    req, plan = cuda_plan()
    # an older vLLM without --generation-config
    names = {t for t in build_serve_command(plan, req, CUDA_ENDPOINT).argv if t.startswith("--")} - {"--generation-config"}
    known = KnownFlags(version="0.6.6", options={n: True for n in names})
    cmd = build_serve_command(plan, req, CUDA_ENDPOINT, known=known)
    assert "--generation-config" not in cmd.argv
    assert any("--generation-config" in w and "dropped" in w for w in cmd.warnings)


def test_extra_args_parse_and_check() -> None:
    known = KnownFlags(options={"--seed": True, "--enforce-eager": False, "--kv-cache-memory-bytes": True})
    flags = parse_extra_args(["--seed", "7", "--enforce-eager", "--kv-cache-memory=1024", "--bogus"], known)
    assert [(f.name, f.value) for f in flags] == [
        ("--seed", "7"),
        ("--enforce-eager", None),
        ("--kv-cache-memory", "1024"),
        ("--bogus", None),
    ]
    req, plan = cpu_plan()
    known.options.update({f.name: f.value is not None for f in serve_flags(plan, req)})
    cmd = build_serve_command(
        plan, req, known=known, extra_args=["--seed", "7", "--kv-cache-memory=1024", "--bogus"]
    )
    assert cmd.argv[-4:] == ["--seed", "7", "--kv-cache-memory-bytes", "1024"]
    assert any("--bogus" in w for w in cmd.warnings)
    assert any("renamed" in w for w in cmd.warnings)


@pytest.mark.parametrize(
    ("host", "loop"),
    [
        ("127.0.0.1", True),
        ("localhost", True),
        ("::1", True),
        ("127.1.2.3", True),
        ("0.0.0.0", False),
        ("10.0.0.5", False),
    ],
)
def test_is_loopback(host: str, loop: bool) -> None:
    assert is_loopback(host) is loop


def test_format_shell_quotes_and_breaks_lines() -> None:
    text = format_shell(["vllm", "serve", "m", "--a", "x y", "--b"], {"K": "v w"})
    assert text == "K='v w' vllm serve m \\\n  --a 'x y' \\\n  --b"
