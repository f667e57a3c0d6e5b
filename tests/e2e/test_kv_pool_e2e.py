"""How many requests a sliding-window model's KV cache holds at once: the real vLLM CPU build against the plan.

vLLM sizes a hybrid cache (sliding-window layers beside full attention) for the worst case of one request: every
sliding-window group is charged its window plus the tokens in flight (`max_memory_usage_bytes`), and the printed
"Maximum concurrency" divides the pool by that charge. At run time its scheduler frees the blocks a request's window
has left behind (`SingleTypeKVCacheManager.remove_skipped_blocks`, called from `KVCacheManager.allocate_slots`
before each step's allocation), so a decoding request holds only its window in each sliding group, and the
admission gate (`allocate_slots(full_sequence_must_fit=True)`, the prompt's pages with the sliding groups capped at
the window plus the tokens in flight) needs one prompt's pages free. Many more requests run at once than the printed
concurrency says; the plan's performance model has to use the pool that the scheduler actually has.

The case, worked by hand (vLLM 0.32 CPU build; nothing mocked):
- the tiny Gemma-3 text model: 6 layers, 5 sliding (window 256) and 1 full, 2 KV heads of 64, bfloat16: a page of
  128 tokens (the CPU block size) is 128 x 2 x 64 x 2 (K and V) x 2 B = 64 KiB, one layer per KV cache group (6
  groups: 5 sliding, 1 full) sharing one pool;
- --kv-cache-memory-bytes 20 MiB: 320 pages;
- requests of 1,536 prompt tokens and 128 output tokens (ignore_eos), 12 sent at once, no shared prefixes;
- a decoding request at 1,537 - 1,664 tokens of context holds 13 full-attention pages and, in each sliding group,
  the pages of its last 256 tokens: 3 (the window straddles a page boundary) -> 13 + 5 x 3 = 28 pages;
- admitting the next request needs its prompt's pages free: 12 full + 5 x min(12, cdiv(255 + 2,048, 128)) = 72;
- so after k requests decode, another is admitted while 28 k + 72 <= 320: k = 8 admits a ninth (224 + 72 = 296),
  nine leave 68 free (< 72): 9 run at once, 3 wait until one finishes (context never passes 1,664 = 13 x 128, so
  nobody grows into a 14th page and nothing is preempted);
- vLLM's own report: "Maximum concurrency for 2,048 tokens per request: 3.17x" (320 / (16 + 5 x 17)), and charging
  every request the report's sliding reservation at 1,664 tokens (13 + 5 x 14 = 83 pages) would hold 3.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clirun import invoke
from tests.e2e.clients import stream_at_once
from tests.e2e.vllm_proc import VllmServer, healthy_vllm

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("require_vllm")]

BUDGET = 20 << 20
MAX_LEN = 2048
PROMPT, OUTPUT, SENT = 1536, 128, 12
HELD_AT_ONCE = 9  # worked by hand in the module docstring
STATS_RE = re.compile(r"Running: (\d+) reqs, Waiting: (\d+) reqs")


@pytest.fixture(scope="module")
def model(tiny_model_factory) -> Path:
    return tiny_model_factory("gemma3_text")


@pytest.fixture(scope="module")
def burst(model: Path) -> Iterator[tuple[list[dict[str, float]], str]]:
    """Send SENT streaming requests at once; yield each one's client-side times and the server log."""
    args = ["--max-model-len", str(MAX_LEN), "--kv-cache-memory-bytes", str(BUDGET)]
    # the engine's periodic stats line ("Running: N reqs, Waiting: M reqs") every half second instead of every 10 s
    with healthy_vllm(model, args, env={"VLLM_LOG_STATS_INTERVAL": "0.5"}) as server:
        yield _send_burst(server, model), server.log_text()


def _send_burst(server: VllmServer, model: Path) -> list[dict[str, float]]:
    rng = random.Random(7)
    # distinct random token ids (the tiny vocabulary has 512): no request finds another's blocks in the prefix cache
    prompts = [[rng.randrange(10, 500) for _ in range(PROMPT)] for _ in range(SENT)]
    times = stream_at_once(server.url, str(model), prompts, OUTPUT, timeout=300)
    assert all("end" in t and "first" in t for t in times), times
    return times


def test_the_hand_worked_pool_matches_the_plan_inputs(model: Path) -> None:
    """The inputs of the hand count are the plan's (checked against vLLM's own report by the oracle tests):
    320 pages of 64 KiB, five sliding groups of window 256 and one full, the printed 3.17x at 2,048 tokens."""
    res = invoke(["plan", str(model), "--device", "cpu", "--kv-cache-memory-bytes", str(BUDGET),
                  "--max-model-len", str(MAX_LEN), "--json"])
    assert res.exit_code == 0, res.output
    kv = json.loads(res.stdout)["data"]["kv_cache"]
    assert (kv["num_blocks"], kv["bytes_per_block"], kv["block_size"]) == (320, 64 << 10, 128)
    assert sorted(g["kind"] for g in kv["groups"]) == ["full"] + ["sliding"] * 5
    assert kv["max_concurrency"] == pytest.approx(320 / (16 + 5 * 17), abs=1e-3)
    # the same rules at 2,048 tokens: a running request holds 16 + 5 x 3 = 31 pages, admitting one needs the sliding
    # pages of a 2,048-token step on top of a decoder's, 5 x (17 - 3) = 70: (320 - 70) / 31 = 8.06 requests at once
    assert kv["running_concurrency"] == pytest.approx((320 - 70) / 31, abs=0.01)


def test_vllm_runs_as_many_requests_at_once_as_worked_by_hand(burst) -> None:
    times, log = burst
    # the engine's own count, from its periodic stats lines while the burst ran
    running = [int(m.group(1)) for m in STATS_RE.finditer(log)]
    assert running, log[-3000:]
    assert max(running) == HELD_AT_ONCE
    # and the clients' view: the first tokens come in two waves, the nine admitted at once (one prefill step
    # apart) and, once the first of them has decoded its 128 tokens, the rest: the widest gap between consecutive
    # first tokens follows the ninth
    firsts = sorted(t["first"] for t in times)
    gaps = [b - a for a, b in itertools.pairwise(firsts)]
    assert gaps.index(max(gaps)) + 1 == HELD_AT_ONCE, gaps
    assert all(t["tokens"] == OUTPUT for t in times)


def test_the_plans_performance_model_holds_the_same_requests(model: Path, burst) -> None:
    """The plan's KV pool for requests of this length (plan/performance.py hybrid_kv_pool) holds the 9 that vLLM
    ran, not the 3 that the startup reservation would: the simulated burst is limited by the KV cache at that
    batch."""
    res = invoke(["plan", str(model), "--device", "cpu", "--kv-cache-memory-bytes", str(BUDGET),
                  "--max-model-len", str(MAX_LEN), "--input-len", str(PROMPT), "--output-len", str(OUTPUT),
                  "--concurrency", str(SENT), "--json"])
    assert res.exit_code == 0, res.output
    perf = json.loads(res.stdout)["data"]["performance"]
    assert perf["kv_requests"] == HELD_AT_ONCE
    assert perf["bound"] == "kv-capacity"
    assert HELD_AT_ONCE - 1.5 < perf["batch"] <= HELD_AT_ONCE
