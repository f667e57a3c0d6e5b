"""Speed of the performance model as people meet it, whole processes (interpreter, imports, catalog):

- `vllmkit plan MODEL --gpu GPU` with and without a workload: the goal is < 20 % added time;
- `vllmkit capacity MODEL --gpu GPU --qps ...`: the goal is an answer in < 3 s.

Usage: PYTHONPATH=src python benchmarks/perf_speed.py [--runs 5] [MODEL GPU]
Offline (HF_HUB_OFFLINE=1: the bundled catalog answers). Prints median / max wall seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def timed(cmd: list[str], runs: int, env: dict[str, str]) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("model", nargs="?", default="Qwen/Qwen3-8B")
    ap.add_argument("gpu", nargs="?", default="h100")
    args = ap.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
    cli = [sys.executable, "-m", "vllmkit"]
    plan = [*cli, "plan", args.model, "--gpu", args.gpu, "--json"]
    cases = {
        "plan": plan,
        "plan --workload chat --concurrency 32": [*plan, "--workload", "chat", "--concurrency", "32"],
        "plan --workload chat --request-rate 5": [*plan, "--workload", "chat", "--request-rate", "5"],
        "capacity --qps 20 (chat lengths, TPOT p99 50 ms)": [*cli, "capacity", args.model, "--gpu", args.gpu, "--qps",
                                                             "20", "--input-len", "1024", "--output-len", "256",
                                                             "--tpot-p99", "50ms", "--json"],
    }
    base = None
    print(f"{args.model} on {args.gpu}, {args.runs} runs each (wall seconds, whole process)")
    for name, cmd in cases.items():
        times = timed(cmd, args.runs, env)
        med = statistics.median(times)
        extra = ""
        if base is None:
            base = med
        elif name.startswith("plan"):
            extra = f"  (+{(med - base) / base:.0%} over plan)"
        print(f"{name:52s} median {med:5.2f}  max {max(times):5.2f}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
