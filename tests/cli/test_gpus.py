"""`vllmkit gpus`: human table, --json envelope, one GPU, errors (CliRunner, isolated env)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from tests.clirun import invoke

from vllmkit.cli import gpus as gpus_module

GIB = 2**30


def make_app() -> typer.Typer:
    # Our own app with a callback so `gpus` stays a subcommand whatever else is registered.
    app = typer.Typer(pretty_exceptions_enable=False, add_completion=False)

    @app.callback()
    def main() -> None:
        """test app"""

    gpus_module.register(app)
    return app


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    # Isolated config: no user profiles unless a test writes them.
    return {
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "VLLMKIT_PROFILES_DIR": "",
        "NO_COLOR": "1",
    }


def run(args: list[str], env: dict[str, str]):
    return invoke(args, env=env)


def test_table_lists_profiles_with_torch_memory(env: dict[str, str]) -> None:
    result = run(["gpus"], env)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "h100-sxm" in out and "79.19 GiB" in out  # H100: torch reports 79.19 GiB, not 80
    assert "mi300x" in out and "191.98 GiB" in out and "e4m3fnuz" in out
    assert "l40s" in out and "44.42 GiB" in out
    assert "host RAM" in out  # the cpu profile has no fixed memory
    assert "Traceback" not in result.output


def test_json_envelope(env: dict[str, str]) -> None:
    result = run(["gpus", "--json"], env)
    assert result.exit_code == 0
    envelope = json.loads(result.stdout)
    assert envelope["vllmkit_result_version"] == 1
    assert envelope["command"] == "gpus"
    assert envelope["status"] == "ok" and envelope["exit_code"] == 0 and envelope["errors"] == []
    gpus = {g["name"]: g for g in envelope["data"]["gpus"]}
    assert len(gpus) >= 35
    h100 = gpus["h100-sxm"]
    assert h100["memory_bytes"] == 81090 * 2**20  # torch "total_memory=81090MB"
    assert h100["runtime"] == "cuda"
    assert h100["supports"]["fp8"] is True and h100["supports"]["fp8_format"] == "e4m3fn"
    assert gpus["mi300x"]["runtime"] == "rocm"
    assert gpus["mi300x"]["supports"]["int4_marlin"] is False
    assert gpus["cpu"]["memory_bytes"] is None


@pytest.mark.parametrize("vendor", ["nvidia", "amd", "cpu"])
def test_vendor_filter(env: dict[str, str], vendor: str) -> None:
    result = run(["gpus", "--vendor", vendor, "--json"], env)
    assert result.exit_code == 0
    gpus = json.loads(result.stdout)["data"]["gpus"]
    assert gpus and {g["vendor"] for g in gpus} == {vendor}


def test_bad_vendor_is_a_usage_error(env: dict[str, str]) -> None:
    result = run(["gpus", "--vendor", "intel"], env)
    assert result.exit_code == 2
    assert "error: unknown vendor 'intel'" in result.stderr
    assert "hint:" in result.stderr


@pytest.mark.parametrize(
    ("query", "name"),
    [("NVIDIA H100 80GB HBM3", "h100-sxm"), ("AMD Instinct MI300X", "mi300x"), ("rtx4090", "rtx-4090")],
)
def test_show_one(env: dict[str, str], query: str, name: str) -> None:
    result = run(["gpus", query, "--json"], env)
    assert result.exit_code == 0
    data = json.loads(result.stdout)["data"]
    assert data["query"] == query
    assert [g["name"] for g in data["gpus"]] == [name]
    human = run(["gpus", query], env)
    assert human.exit_code == 0
    assert name in human.stdout and "memory source" in human.stdout


def test_unknown_gpu_exits_5_with_hint(env: dict[str, str]) -> None:
    result = run(["gpus", "H300"], env)
    assert result.exit_code == 5
    assert "error: unknown GPU 'H300'" in result.stderr
    assert "hint: closest:" in result.stderr
    assert "--gpu-memory 48GiB" in result.stderr
    assert "Traceback" not in result.output
    assert result.stdout == ""


def test_unknown_gpu_json_envelope(env: dict[str, str]) -> None:
    result = run(["gpus", "H300", "--json"], env)
    assert result.exit_code == 5
    envelope = json.loads(result.stdout)
    assert envelope["status"] == "error" and envelope["exit_code"] == 5
    assert envelope["errors"][0]["code"] == "unknown-gpu"
    assert "--gpu-memory" in envelope["errors"][0]["hint"]


USER_FILE = """
gpus:
  - name: lab-gpu
    display_name: Lab GPU 48GB
    aliases: [labby]
    vendor: amd
    architecture: gfx942
    gfx_target: gfx942
    memory_bytes: 51539607552
    memory_source: our own torch reading
    supports: {bf16: true, fp8: true, fp8_format: e4m3fnuz}
"""


def test_profiles_dir_from_env_and_flag(env: dict[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "lab.yaml").write_text(USER_FILE, encoding="utf-8")
    with_env = {**env, "VLLMKIT_PROFILES_DIR": str(folder)}
    result = run(["gpus", "labby", "--json"], with_env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["data"]["gpus"][0]["memory_bytes"] == 48 * GIB
    result = run(["gpus", "--profiles-dir", str(folder), "--vendor", "amd"], env)
    assert result.exit_code == 0
    assert "lab-gpu" in result.stdout and "48.00 GiB" in result.stdout


def test_malformed_user_file_exits_5(env: dict[str, str], tmp_path: Path) -> None:
    folder = Path(env["XDG_CONFIG_HOME"]) / "vllmkit" / "profiles"
    folder.mkdir(parents=True)
    (folder / "bad.yaml").write_text(USER_FILE.replace("51539607552", "lots"), encoding="utf-8")
    result = run(["gpus"], env)
    assert result.exit_code == 5
    assert "bad.yaml" in result.stderr and "memory_bytes" in result.stderr
    assert "Traceback" not in result.output
