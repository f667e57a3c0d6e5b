"""`--data-parallel-size 2` on the real vLLM CPU build: how the engines share the clients, and the plan against it.

vLLM starts one engine core per data-parallel rank behind one endpoint; its front end sends each request to the
engine with the fewest waiting and running requests (v1/engine/core_client.py DPLBAsyncMPClient
get_core_engine_for_request: score = waiting x 4 + running, counting the requests it has just sent), so a closed
loop's clients spread evenly. The performance model splits a workload the same way (estimate/serving.py
replica_workloads) and simulates each engine with its share; the plan's `batch` is one engine's.

The case, worked by hand (nothing mocked): the tiny Llama, each engine with its own 32 MiB KV budget (65,536
tokens: 2 layers x 1 KV head x 64 x 2 (K and V) x 2 B = 512 B a token), and SENT = 10 streaming requests of 64
prompt + 256 output tokens sent at once: 5 run on each engine, none waits (the KV cache holds 204 such requests per
engine, --max-num-seqs 128 is the CPU default). A dense model's engines never meet, so each engine's KV is the single
engine's. (One CPU build, two engines on a 2-core box: the test reads counts, never times.)
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clirun import invoke
from tests.e2e.clients import stream_at_once
from tests.e2e.vllm_proc import VllmServer, healthy_vllm
from vllmkit.estimate.serving import Workload, replica_workloads

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("require_vllm")]

BUDGET = 32 << 20
MAX_LEN = 1024
PROMPT, OUTPUT, SENT, DP = 64, 256, 10, 2
TOKENS_PER_ENGINE = BUDGET // (2 * 1 * 64 * 2 * 2)  # 65,536: worked in the module docstring
ENGINE_STATS_RE = re.compile(r"Engine (\d{3}): .*?Running: (\d+) reqs, Waiting: (\d+) reqs")
KV_RE = re.compile(r"\(EngineCore_DP(\d)[^)]*\).*CPU KV cache size: ([\d,]+) tokens")


@pytest.fixture(scope="module")
def model(tiny_model_factory) -> Path:
    return tiny_model_factory("llama")


@pytest.fixture(scope="module")
def served(model: Path) -> Iterator[tuple[list[dict[str, float]], str]]:
    args = ["--max-model-len", str(MAX_LEN), "--kv-cache-memory-bytes", str(BUDGET), "--data-parallel-size", str(DP)]
    # each engine's periodic stats line ("Engine 00N: ... Running: N reqs, Waiting: M reqs") every half second
    with healthy_vllm(model, args, env={"VLLM_LOG_STATS_INTERVAL": "0.5"}) as server:
        times = _send_at_once(server, model)
        time.sleep(1.5)  # one more stats interval after the last request
        yield times, server.log_text()


def _send_at_once(server: VllmServer, model: Path) -> list[dict[str, float]]:
    rng = random.Random(3)
    prompts = [[rng.randrange(10, 500) for _ in range(PROMPT)] for _ in range(SENT)]
    done = stream_at_once(server.url, str(model), prompts, OUTPUT, timeout=900)
    assert all(d.get("tokens") == OUTPUT for d in done), done
    return done


def test_the_front_end_spreads_the_clients_evenly_as_the_model_splits_them(served) -> None:
    _, log = served
    most: dict[str, int] = {}
    for engine, running, _waiting in ENGINE_STATS_RE.findall(log):
        most[engine] = max(most.get(engine, 0), int(running))
    assert sorted(most) == ["000", "001"], log[-3000:]
    # each engine's own count while the ten ran: five and five, none waiting
    assert sorted(most.values()) == [5, 5], most
    assert all(int(w) == 0 for _, _, w in ENGINE_STATS_RE.findall(log))
    assert replica_workloads(Workload(PROMPT, OUTPUT, concurrency=SENT), DP) == [
        (Workload(PROMPT, OUTPUT, concurrency=5), 2)]


def test_each_engine_has_the_kv_cache_the_plan_gives_one(model: Path, served) -> None:
    _, log = served
    printed = {rank: int(n.replace(",", "")) for rank, n in KV_RE.findall(log)}
    assert printed == {"0": TOKENS_PER_ENGINE, "1": TOKENS_PER_ENGINE}, log[-3000:]
    res = invoke(["plan", str(model), "--device", "cpu", "--kv-cache-memory-bytes", str(BUDGET),
                  "--max-model-len", str(MAX_LEN), "--data-parallel-size", str(DP), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)["data"]
    assert data["kv_cache"]["tokens"] == TOKENS_PER_ENGINE
    command = data["serve_command"]
    assert command[command.index("--data-parallel-size") + 1] == "2"


def test_the_plans_batch_is_one_engines_share(model: Path, served) -> None:
    """The plan of the same server and workload: batch (mean running sequences) is one engine's, 5 at most, and the
    assumption line says how the traffic was split."""
    res = invoke(["plan", str(model), "--device", "cpu", "--kv-cache-memory-bytes", str(BUDGET),
                  "--max-model-len", str(MAX_LEN), "--data-parallel-size", str(DP), "--input-len", str(PROMPT),
                  "--output-len", str(OUTPUT), "--concurrency", str(SENT), "--json"])
    assert res.exit_code == 0, res.output
    perf = json.loads(res.stdout)["data"]["performance"]
    assert 4.0 < perf["batch"] <= 5.0
    assert any(a.startswith("--data-parallel-size 2: the traffic is split over 2 engines") for a in perf["assumptions"])
