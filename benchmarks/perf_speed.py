"""Speed of the performance model as people meet it, whole processes (interpreter, imports, catalog):

- `vllmkit plan MODEL --gpu GPU` with and without a workload: the goal is < 20 % added time;
- `vllmkit capacity MODEL --gpu GPU --qps ...`: the goal is an answer in < 3 s.

Usage: PYTHONPATH=src python benchmarks/perf_speed.py [--runs 5] [MODEL GPU]
Offline (HF_HUB_OFFLINE=1: the bundled catalog answers). Prints median / max wall seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time


def timed(cmd: list[str], runs: int, env: dict[str, str]) -> tuple[list[float], list[float]]:
    """(wall seconds, CPU seconds) per run. On a shared box the CPU time of the child is the steadier
    measure (the wall time includes waiting for cores other processes hold)."""
    wall, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall, cpu


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
        "capacity Llama-3.1-70B --qps 10 (2048/512, TPOT p99 60 ms)": [
            *cli, "capacity", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", args.gpu, "--qps", "10", "--input-len",
            "2048", "--output-len", "512", "--tpot-p99", "60ms", "--json"],
    }
    base = None
    print(f"{args.model} on {args.gpu}, {args.runs} runs each (wall seconds, whole process)")
    for name, cmd in cases.items():
        wall, cpu = timed(cmd, args.runs, env)
        med = statistics.median(cpu)
        extra = ""
        if base is None:
            base = med
        elif name.startswith("plan"):
            extra = f"  (CPU +{(med - base) / base:.0%} over plan)"
        print(f"{name:60s} wall median {statistics.median(wall):5.2f} max {max(wall):5.2f}; "
              f"CPU median {med:5.2f}{extra}")
    in_process(args.model, args.gpu, max(args.runs, 5))
    return 0


def in_process(model: str, gpu: str, runs: int) -> None:
    """What a workload adds to one plan, measured inside one process (steadier than whole processes on
    a shared box): the extra milliseconds against the plan's own whole-process time above."""
    from vllmkit.estimate.serving import Workload
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.performance import PerfOptions
    from vllmkit.plan.service import build_plan

    env = {"HF_HUB_OFFLINE": "1"}
    req = PlanRequest(model=model, gpu=gpu)
    build_plan(req, env)  # warm caches (catalog, profiles)
    for name, wl in (("--workload chat --concurrency 32", Workload(1024, 256, concurrency=32)),
                     ("--workload chat --request-rate 5", Workload(1024, 256, request_rate=5.0))):
        plain, with_perf = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            build_plan(req, env)
            t1 = time.perf_counter()
            build_plan(req, env, perf=PerfOptions(workload=wl))
            t2 = time.perf_counter()
            plain.append(t1 - t0)
            with_perf.append(t2 - t1)
        added = statistics.median(with_perf) - statistics.median(plain)
        print(f"in-process {name}: plan {statistics.median(plain) * 1e3:.0f} ms, with the workload "
              f"{statistics.median(with_perf) * 1e3:.0f} ms (+{added * 1e3:.0f} ms)")


if __name__ == "__main__":
    sys.exit(main())
