"""How the real vLLM's API server takes in requests that arrive together: one at a time (a queue, as the
performance model's front end in estimate/scheduler_sim.py `simulate` has it) or all at once.

    .venv/bin/python benchmarks/frontend_burst.py [--repeats 2] [--write]

Starts the real vLLM CPU build (`python -m vllm.entrypoints.openai.api_server`, --max-model-len 1024,
--kv-cache-memory-bytes 256 MiB) on the tests' tiny random Llama and sends bursts through vLLM's own
benchmark (`vllm.benchmarks.serve`, --request-rate inf, --max-concurrency = the burst, --ignore-eos,
2 output tokens): 1 request, 16 and 64 requests of 32-token prompts, 64 of 200-token prompts. For a
queue that serves one request at a time, the first request of a burst would see its first token as soon
as a lone one does; for a loop shared among the requests in it, the whole burst waits until most of it
is through. The script prints, per burst, the fastest, median and slowest TTFT next to a lone request's.
docs/performance.md (round 14) says what a shared front end did to the model's accuracy.

This two-core machine runs the benchmark client and the server's processes on the same cores, so the
absolute times are this machine's; the shape (how the first request of a burst fares) is the finding.
`--write` stores the result in benchmarks/data/frontend-burst-cpu.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from vllmkit.output import safe_text  # what the server printed reaches the terminal escaped

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "data" / "frontend-burst-cpu.json"
KEY = "frontend-burst"
SERVER_ARGS = ["--max-model-len", "1024", "--kv-cache-memory-bytes", str(256 << 20), "--api-key", KEY]
BURSTS = ((1, 32), (16, 32), (64, 32), (64, 200))  # (requests, prompt tokens)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--write", action="store_true", help=f"store the result in {OUT.relative_to(ROOT)}")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.e2e.tiny import build_tiny_model
    from tests.e2e.vllm_proc import run_vllm_bench, start_vllm  # the tests' launcher and benchmark driver

    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="vllmkit-burst-") as tmp:
        root = Path(tmp)
        model = build_tiny_model(root / "tiny", "llama")
        with start_vllm(model, SERVER_ARGS) as server:
            server.wait("healthy", timeout=600)
            if not server.healthy():
                raise SystemExit("vLLM did not start:\n" + safe_text(server.log_text()[-3000:], newlines=True))
            run_vllm_bench(server.url, model, key=KEY, n=10, conc=1, inp=200, out=16, cwd=root)  # warm-up
            for rep in range(args.repeats):
                for n, inp in BURSTS:
                    result, tail = run_vllm_bench(server.url, model, key=KEY, n=n, conc=n, inp=inp, out=2, cwd=root,
                                                  seed=100 + rep * 1000 + n + inp, extra=["--save-detailed"])
                    if result is None or not result.get("ttfts"):
                        raise SystemExit("vLLM's benchmark failed:\n" + safe_text(tail, newlines=True))
                    ttfts = sorted(x * 1000.0 for x in result["ttfts"])
                    row = {"requests": n, "prompt_tokens": inp, "repeat": rep, "min_ttft_ms": ttfts[0],
                           "median_ttft_ms": statistics.median(ttfts), "max_ttft_ms": ttfts[-1]}
                    rows.append(row)
                    print(f"burst of {n:2d} x {inp:3d}-token prompts: first token after {row['min_ttft_ms']:6.1f} ms "
                          f"(fastest), {row['median_ttft_ms']:6.1f} (median), {row['max_ttft_ms']:6.1f} (slowest)",
                          flush=True)
    if args.write:
        from frontend_overhead import write_cpu_measurement

        write_cpu_measurement(OUT, "TTFT of bursts sent at once to the real vLLM CPU build, tiny random Llama, "
                              "2 output tokens (benchmarks/frontend_burst.py)", runs=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
