"""`vllmkit smoke` through the CLI against the fake vLLM server (tests/unit/launch/fakevllm.py);
the real vLLM CPU build is exercised in tests/e2e/test_serve_e2e.py."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.clirun import invoke
from tests.unit.launch.fakevllm import install_fake_vllm


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def fake_server(tmp_path: Path, *, mode: str = "ok", key: str | None = None) -> Iterator[str]:
    site = install_fake_vllm(tmp_path)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "VLLM_API_KEY"}
    env.update({"FAKE_VLLM_MODE": mode, "FAKE_VLLM_DELAY": "0"})
    if key:
        env["VLLM_API_KEY"] = key
    script = site / "vllm" / "entrypoints" / "openai" / "api_server.py"
    argv = [sys.executable, str(script), "--host", "127.0.0.1", "--port", str(port), "--served-model-name", "tiny",
            "--max-model-len", "1024"]  # fmt: skip
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            time.sleep(0.1)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_API_KEY", raising=False)


def run(*args: str):
    return invoke(list(args))


def test_all_checks_pass(tmp_path: Path) -> None:
    with fake_server(tmp_path) as url:
        res = run("smoke", url, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["status"] == "ok" and doc["command"] == "smoke"
    data = doc["data"]
    assert [c["name"] for c in data["checks"]] == ["health", "models", "chat", "chat_stream", "completion"]
    assert all(c["status"] == "pass" for c in data["checks"])
    assert data["served_models"] == ["tiny"] and data["max_model_len"] == 1024
    assert data["ttft_s"] is not None and data["ttft_s"] > 0
    # the fake streams 16 chunks 10 ms apart: well under 1000 tok/s, far above 1
    assert 1 < data["tokens_per_s"] < 1000
    assert data["ok"] is True


def test_missing_chat_template_is_explained(tmp_path: Path) -> None:
    with fake_server(tmp_path, mode="no-template") as url:
        res = run("smoke", url)
        res_json = run("smoke", url, "--json")
    assert res.exit_code == 3
    assert "no chat template" in res.stdout
    assert "--chat-template" in res.stdout and "/v1/completions" in res.stdout
    doc = json.loads(res_json.stdout)
    checks = {c["name"]: c for c in doc["data"]["checks"]}
    assert checks["chat"]["status"] == "fail" and checks["chat"]["http_status"] == 400
    assert "default chat template is no longer allowed" in checks["chat"]["detail"]
    assert checks["chat_stream"]["status"] == "fail"
    assert checks["completion"]["status"] == "pass"
    assert doc["status"] == "error" and doc["exit_code"] == 3
    assert {e["code"] for e in doc["errors"]} == {"smoke-chat", "smoke-chat_stream"}


def test_api_key_checks(tmp_path: Path) -> None:
    keyfile = tmp_path / "key"
    keyfile.write_text("k-1\n")
    with fake_server(tmp_path, key="k-1") as url:
        good = run("smoke", url, "--api-key-file", str(keyfile), "--json")
        missing = run("smoke", url, "--json")
    assert good.exit_code == 0, good.output
    auth = next(c for c in json.loads(good.stdout)["data"]["checks"] if c["name"] == "auth")
    assert auth["status"] == "pass" and auth["http_status"] == 401
    assert missing.exit_code == 3
    models = next(c for c in json.loads(missing.stdout)["data"]["checks"] if c["name"] == "models")
    assert models["http_status"] == 401 and "API key" in models["detail"]


def test_open_endpoint_fails_the_auth_check(tmp_path: Path) -> None:
    with fake_server(tmp_path) as url:
        res = run("smoke", url, "--api-key", "anything", "--json")
    assert res.exit_code == 3
    auth = next(c for c in json.loads(res.stdout)["data"]["checks"] if c["name"] == "auth")
    assert auth["status"] == "fail" and "open" in auth["detail"]


def test_unreachable_is_a_health_failure() -> None:
    res = run("smoke", f"127.0.0.1:{_free_port()}")
    assert res.exit_code == 6
    assert "error: health: cannot reach" in res.stderr
