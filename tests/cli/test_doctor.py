"""`vllmkit doctor`: --log (file, stdin, last run), env checks on scripted machines, model checks on a
local folder, --url against a local /metrics server; human and --json output, exit codes."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from tests.clirun import invoke
from tests.unit.doctor.test_metrics import SAMPLE
from tests.unit.fakes import TORCH_CUDA_NO_GPU, TORCH_CUDA_OK, VLLM_CUDA, fake_path, fake_python
from tests.unit.logs.corpus import LOGS, load

from vllmkit.cli import doctor as doctor_module


def make_app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False, add_completion=False)

    @app.callback()
    def main() -> None:
        """test app"""

    doctor_module.register(app)
    return app


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "VLLMKIT_STATE_DIR": str(tmp_path / "state"),
        "VLLMKIT_CACHE_DIR": str(tmp_path / "cache"),
        "HF_HUB_OFFLINE": "1",
        "NO_COLOR": "1",
        "VLLMKIT_GPU_DETECT": "cli",
    }


def run(args: list[str], env: dict[str, str], input: str | None = None):
    return invoke(["doctor", *args], env=env, input=input)


def envelope(result) -> dict:
    return json.loads(result.stdout)


# --- --log ---------------------------------------------------------------------------------------


def test_log_json_kv_too_small(env: dict[str, str]) -> None:
    result = run(["--log", str(LOGS / "v1_0.32_cpu_kv_too_small_real.log"), "--json"], env)
    assert result.exit_code == 3, result.output
    env_ = envelope(result)
    assert env_["command"] == "doctor" and env_["status"] == "error" and env_["exit_code"] == 3
    assert env_["errors"][0]["code"] == "check-failed"
    data = env_["data"]
    assert data["facts"]["estimated_max_model_len"] == 768
    first = data["diagnoses"][0]
    assert first["code"] == "kv-cache-too-small"
    assert first["suggested_flags"] == ["--max-model-len", "768"]
    assert "estimated maximum model length is 768" in first["evidence"]


def test_log_human_success(env: dict[str, str]) -> None:
    result = run(["--log", str(LOGS / "v1_0.11_granite_l40s.log")], env)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "463,136" in out and "35.34 GiB" in out and "3.53x at 131,072 tokens/request" in out
    assert "no problems recognised" in out


def test_log_warning_only_exits_zero(env: dict[str, str]) -> None:
    result = run(["--log", str(LOGS / "diag_cuda_graphs_disabled.log")], env)
    assert result.exit_code == 0
    assert "cuda-graphs-disabled" in result.stdout and "remove: --enforce-eager" in result.stdout


def test_log_from_stdin(env: dict[str, str]) -> None:
    result = run(["--log", "-", "--json"], env, input=load("diag_tp_not_divisible.log"))
    assert result.exit_code == 3
    diag = envelope(result)["data"]["diagnoses"][0]
    assert diag["code"] == "tp-not-divisible" and diag["details"]["valid_tp_sizes"] == [1, 2, 4, 5, 8, 10]


def test_log_last_run(env: dict[str, str], tmp_path: Path) -> None:
    run_log = tmp_path / "state" / "runs" / "20260101-000000-abcd" / "vllm.log"
    run_log.parent.mkdir(parents=True)
    run_log.write_text(load("diag_port_in_use_uvicorn.log"))
    result = run(["--log", "last", "--json"], env)
    assert result.exit_code == 3
    data = envelope(result)["data"]
    assert data["log"] == str(run_log) and data["diagnoses"][0]["code"] == "port-in-use"


def test_log_last_without_runs_is_usage_error(env: dict[str, str]) -> None:
    result = run(["--log", "last"], env)
    assert result.exit_code == 2
    assert "error: no `vllmkit serve` run log found" in result.stderr and "Traceback" not in result.output


def test_missing_log_file(env: dict[str, str], tmp_path: Path) -> None:
    result = run(["--log", str(tmp_path / "nope.log"), "--json"], env)
    assert result.exit_code == 2
    env_ = envelope(result)
    assert env_["status"] == "error" and env_["errors"][0]["code"] == "log-not-found"


def test_model_with_log_is_usage_error(env: dict[str, str]) -> None:
    result = run(["Qwen/Qwen3-8B", "--log", "x.log"], env)
    assert result.exit_code == 2 and "cannot be combined" in result.stderr



def test_log_passed_as_the_model_points_at_log(env: dict[str, str], tmp_path: Path) -> None:
    """`doctor server.log` (the log where the model goes): the model-source error names --log."""
    log = tmp_path / "server.log"
    log.write_text(load("diag_mamba_cache_blocks.log"), encoding="utf-8")
    result = run([str(log), "--json"], env)
    assert result.exit_code == 4 and "Traceback" not in result.output
    err = envelope(result)["errors"][0]
    assert "is a file, not a model folder" in err["message"] and f"vllmkit doctor --log {log}" in err["hint"]


def test_missing_log_passed_as_the_model_points_at_log(env: dict[str, str], tmp_path: Path) -> None:
    """`doctor server.log` with a typo in the name: a missing *.log is called a file, and the hint
    names --log, not a hub id."""
    result = run([str(tmp_path / "sever.log"), "--json"], env)
    assert result.exit_code == 4 and "Traceback" not in result.output
    err = envelope(result)["errors"][0]
    assert err["message"].startswith("no such file:") and "--log" in err["hint"], err
    folder = run([str(tmp_path / "no-model-here"), "--json"], env)
    assert envelope(folder)["errors"][0]["message"].startswith("no such folder:")

# --- environment -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_env_nvidia_box_json(env: dict[str, str], tmp_path: Path) -> None:
    py = fake_python(tmp_path / "venv", vllm=VLLM_CUDA, torch=TORCH_CUDA_OK, vllm_version_out="0.11.0")
    env.update({"PATH": f"{fake_path(tmp_path, 'nvidia')}:/usr/bin:/bin", "VLLMKIT_VLLM_PYTHON": str(py)})
    result = run(["--offline", "--host", "127.0.0.1", "--port", str(_free_port()), "--json"], env)
    assert result.exit_code == 0, result.output
    data = envelope(result)["data"]
    checks = {c["name"]: c for c in data["checks"]}
    assert checks["gpus"]["status"] == "ok" and checks["torch"]["status"] == "ok"
    assert data["gpus"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert {c["status"] for c in data["checks"]} <= {"ok", "warn"}


def test_env_amd_box_with_cuda_build_fails(env: dict[str, str], tmp_path: Path) -> None:
    py = fake_python(tmp_path / "venv", vllm=VLLM_CUDA, torch=TORCH_CUDA_NO_GPU, vllm_version_out="0.11.0")
    env.update({"PATH": f"{fake_path(tmp_path, 'amd')}:/usr/bin:/bin", "VLLMKIT_VLLM_PYTHON": str(py)})
    result = run(["--offline", "--host", "127.0.0.1", "--port", str(_free_port())], env)
    assert result.exit_code == 3
    assert "AMD Instinct MI300X" in result.stdout
    assert "torch [rocm-cuda-mismatch]" in result.stdout
    assert "wheels.vllm.ai/rocm" in result.stdout
    assert "error: doctor found problems: torch, vllm" in result.stderr


def test_env_includes_last_run(env: dict[str, str], tmp_path: Path) -> None:
    py = fake_python(tmp_path / "venv", vllm=VLLM_CUDA, torch=TORCH_CUDA_OK, vllm_version_out="0.11.0")
    env.update({"PATH": f"{fake_path(tmp_path, 'nvidia')}:/usr/bin:/bin", "VLLMKIT_VLLM_PYTHON": str(py)})
    run_log = tmp_path / "state" / "runs" / "r1" / "vllm.log"
    run_log.parent.mkdir(parents=True)
    run_log.write_text(load("v1_0.2x_fp8kv_models_s_kv_too_small.log"))
    result = run(["--offline", "--host", "127.0.0.1", "--port", str(_free_port()), "--json"], env)
    assert result.exit_code == 3
    last = envelope(result)["data"]["last_run"]
    assert last["log"] == str(run_log) and last["diagnoses"][0]["suggested_flags"] == ["--max-model-len", "122080"]


# --- model ---------------------------------------------------------------------------------------


def test_model_checks_local_folder(env: dict[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "Tiny-Chat-Instruct"
    folder.mkdir()
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 128, "intermediate_size": 256,
           "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64,
           "vocab_size": 512, "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}
    (folder / "config.json").write_text(json.dumps(cfg))
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 4096}))
    (folder / "generation_config.json").write_text(json.dumps({"temperature": 0.7, "top_p": 0.8}))
    py = fake_python(tmp_path / "venv", vllm=VLLM_CUDA, torch=TORCH_CUDA_OK, vllm_version_out="0.11.0")
    env.update({"PATH": f"{fake_path(tmp_path, 'nvidia')}:/usr/bin:/bin", "VLLMKIT_VLLM_PYTHON": str(py)})
    result = run([str(folder), "--offline", "--host", "127.0.0.1", "--port", str(_free_port()), "--json"], env)
    assert result.exit_code == 3, result.output  # an Instruct model without a chat template
    model = envelope(result)["data"]["model"]
    checks = {c["name"]: c for c in model["checks"]}
    assert checks["chat-template"]["status"] == "fail" and checks["chat-template"]["code"] == "chat-template-missing"
    assert checks["generation-config"]["data"]["params"] == {"temperature": 0.7, "top_p": 0.8}
    assert checks["context"]["data"]["native_max_model_len"] == 4096
    disk = {c["name"]: c for c in envelope(result)["data"]["checks"]}["disk"]
    assert disk["status"] == "ok"  # local folder: nothing to download


# --- --url ---------------------------------------------------------------------------------------


@pytest.fixture
def metrics_server() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = SAMPLE.encode() if self.path == "/metrics" else b"not found"
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_url_triage(env: dict[str, str], metrics_server: str) -> None:
    result = run(["--url", metrics_server, "--log", str(LOGS / "v1_0.33_memory_summary_synthetic.log"), "--json"], env)
    assert result.exit_code == 0, result.output
    live = envelope(result)["data"]["live"]
    assert live["metrics"]["kv_cache_usage"] == 0.95 and live["metrics"]["preemptions"] == 7
    by = {(f["layer"], f["name"]): f for f in live["findings"]}
    assert by[(1, "attention-backend")]["detail"] == "FLASH_ATTN"
    assert by[(2, "preemptions")]["status"] == "warn"
    human = run(["--url", metrics_server], env)
    assert "2. GPU and memory" in human.stdout and "preemptions" in human.stdout


def test_url_unreachable_and_bad(env: dict[str, str]) -> None:
    port = _free_port()  # nothing listens there
    result = run(["--url", f"http://127.0.0.1:{port}", "--json"], env)
    assert result.exit_code == 6
    assert envelope(result)["errors"][0]["code"] == "metrics-unreachable"
    result = run(["--url", "ftp://x"], env)
    assert result.exit_code == 2 and "is not an http(s) server address" in result.stderr


def test_no_kv_memory_after_the_sort_fallback_names_flashinfer(env: dict[str, str], tmp_path: Path) -> None:
    # vLLM 0.8-0.11.0 fall back to PyTorch's sort for top-p/top-k when FlashInfer does not import
    # (v1/sample/ops/topk_topp_sampler.py) and size the profile's dummy sampling with it: installing FlashInfer
    # gives that memory back to the KV cache. The CI log of vllm#14574 (0.8) with the fallback line added.
    fallback = ("[2025-03-10T15:07:19Z] WARNING 03-10 08:07:19 [topk_topp_sampler.py:58] FlashInfer is not available. "
                "Falling back to the PyTorch-native implementation of top-p & top-k sampling. For the best "
                "performance, please install FlashInfer.\n")
    text = (LOGS / "v1_0.8_ci_no_kv_memory.log").read_text()
    log = tmp_path / "fallback.log"
    log.write_text(fallback + text)
    data = envelope(run(["--log", str(log), "--json"], env))["data"]
    assert data["facts"]["sampler_flashinfer"] is False
    diag = next(d for d in data["diagnoses"] if d["code"] == "no-kv-memory")
    assert any("flashinfer-python" in a["effect"] and a["flags"] == [] for a in diag["alternatives"])
    human = run(["--log", str(log)], env).stdout
    assert "or: install FlashInfer" in human  # no dangling " - " before a flagless alternative
    # the same log without the fallback line: nothing about FlashInfer
    plain = envelope(run(["--log", str(LOGS / "v1_0.8_ci_no_kv_memory.log"), "--json"], env))["data"]
    assert not any("FlashInfer" in a["effect"] for d in plain["diagnoses"] for a in d["alternatives"])
