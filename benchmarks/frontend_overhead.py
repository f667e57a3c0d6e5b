"""The API server's cost per request on a real vLLM, as an upper bound for the performance model's
per-request front-end term (estimate/perf.py Efficiency.request_overhead_s).

    .venv/bin/python benchmarks/frontend_overhead.py [--model DIR] [--repeats 3] [--write]

Starts the real vLLM CPU build (`python -m vllm.entrypoints.openai.api_server`, --max-model-len 1024,
--kv-cache-memory-bytes 64 MiB) on a tiny random Llama (tests/e2e/tiny.py unless --model is given) and
runs vLLM's own benchmark (`vllm.benchmarks.serve`) against it at one request at a time (random
200-token prompts, 16 output tokens, --ignore-eos), through `/v1/completions` and
`/v1/chat/completions` in turn. For a model this small the prefill step costs about what a decode
step does (both are the engine's fixed per-step work), so median TTFT - median TPOT is what a request
costs before the engine sees it: HTTP, chat template, tokenisation, and the trip back of the first token.

This two-core machine runs the benchmark client and the server's processes on the same cores; a GPU
host's CPU is faster and not shared, so the figure bounds the cost from above.
`--write` stores the result in benchmarks/data/frontend-overhead-cpu.json, which
benchmarks/perf_accuracy.py reads as the upper bound of the fitted per-request cost.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from vllmkit.output import safe_text  # what the server printed reaches the terminal escaped

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "data" / "frontend-overhead-cpu.json"
KEY = "frontend-overhead"
SERVER_ARGS = ["--max-model-len", "1024", "--kv-cache-memory-bytes", str(64 << 20), "--api-key", KEY]
ENDPOINTS = (("openai", "/v1/completions"), ("openai-chat", "/v1/chat/completions"))


def bench(url: str, model: Path, backend: str, endpoint: str, n: int, cwd: Path) -> dict:
    from tests.e2e.vllm_proc import run_vllm_bench  # the tests' driver of vLLM's own benchmark

    result, tail = run_vllm_bench(url, model, key=KEY, n=n, conc=1, inp=200, out=16, cwd=cwd,
                                  backend=backend, endpoint=endpoint, timeout=900)
    if result is None:
        raise SystemExit(f"vLLM's benchmark failed ({backend}):\n{safe_text(tail, newlines=True)}")
    if result["failed"]:
        raise SystemExit(f"{result['failed']} requests failed ({backend})")
    return result


def write_cpu_measurement(path: Path, what: str, **fields: object) -> None:
    """Store a measurement made on this machine's real vLLM CPU build, with the version and the machine."""
    import vllm

    path.write_text(json.dumps({"what": what, "vllm_version": vllm.__version__,
                                "machine": f"{os.cpu_count()} CPU cores, benchmark client and server sharing them",
                                **fields}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}")


def request_overhead_bound_s(measured: dict) -> float:
    """The bound the fit uses: the slower endpoint's median, in seconds (benchmarks/perf_accuracy.py)."""
    return max(measured["overhead_ms_by_endpoint"].values()) / 1000.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, help="model folder (default: build the tests' tiny Llama)")
    ap.add_argument("--repeats", type=int, default=3, help="rounds over both endpoints")
    ap.add_argument("--num-prompts", type=int, default=60)
    ap.add_argument("--write", action="store_true", help=f"store the result in {OUT.relative_to(ROOT)}")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.e2e.vllm_proc import start_vllm  # the tests' launcher: reaps the process group

    with tempfile.TemporaryDirectory(prefix="vllmkit-frontend-") as tmp:
        root = Path(tmp)
        model = args.model
        if model is None:
            from tests.e2e.tiny import build_tiny_model

            model = build_tiny_model(root / "tiny", "llama")
        rows: dict[str, list[dict]] = {}
        with start_vllm(model, SERVER_ARGS) as server:
            server.wait("healthy", timeout=600)
            if not server.healthy():
                raise SystemExit("vLLM did not start:\n" + safe_text(server.log_text()[-3000:], newlines=True))
            bench(server.url, model, "openai", "/v1/completions", 10, root)  # warm-up (compile caches)
            for _ in range(args.repeats):
                for backend, endpoint in ENDPOINTS:
                    r = bench(server.url, model, backend, endpoint, args.num_prompts, root)
                    r["overhead_ms"] = r["median_ttft_ms"] - r["median_tpot_ms"]
                    rows.setdefault(endpoint, []).append(r)
                    print(f"{endpoint:22s} median TTFT {r['median_ttft_ms']:6.2f} ms  median TPOT "
                          f"{r['median_tpot_ms']:5.2f} ms  -> {r['overhead_ms']:5.2f} ms per request", flush=True)
    per_endpoint = {ep: statistics.median(r["overhead_ms"] for r in rs) for ep, rs in rows.items()}
    bound = request_overhead_bound_s({"overhead_ms_by_endpoint": per_endpoint})
    print(f"median per endpoint: {json.dumps({k: round(v, 2) for k, v in per_endpoint.items()})}; "
          f"upper bound used: {bound * 1000:.2f} ms")
    if args.write:
        write_cpu_measurement(OUT, "median TTFT - median TPOT at concurrency 1 on the real vLLM CPU build, tiny random "
                              "Llama, 200-token prompts, 16 output tokens (benchmarks/frontend_overhead.py)",
                              runs=rows, overhead_ms_by_endpoint=per_endpoint)
    return 0


if __name__ == "__main__":
    sys.exit(main())
