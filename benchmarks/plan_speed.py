"""Time `vllmkit plan` offline as a whole process (interpreter start, imports, catalog, planning).

Usage: .venv/bin/python benchmarks/plan_speed.py [--runs 10] [MODEL GPU]
Prints min / median / max wall seconds. Goal: an offline plan well under 2 s on this 2-core box.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("model", nargs="?", default="Qwen/Qwen3-32B")
    parser.add_argument("gpu", nargs="?", default="h100")
    args = parser.parse_args()
    exe = Path(sys.executable).with_name("vllmkit")
    cmd = [str(exe), "plan", args.model, "--gpu", args.gpu, "--json"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    print(f"vllmkit plan {args.model} --gpu {args.gpu}: runs={args.runs} "
          f"min={min(times):.3f}s median={statistics.median(times):.3f}s max={max(times):.3f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
