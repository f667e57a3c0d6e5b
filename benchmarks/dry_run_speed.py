"""Time `vllmkit serve MODEL --dry-run` as whole processes: the first run in an empty cache folder
(probes the installed vLLM's interpreter and builds its serve parser, ~20 s), then repeated runs that
find the install unchanged and reuse the remembered install and flag table (engine/installcache.py,
engine/flags.py).

Usage: .venv/bin/python benchmarks/dry_run_speed.py [--runs 5] [MODEL GPU]
Prints the first run, then min / median / max of the others, and where the flag table came from.
Goal: the second and later runs under 2 s on this 2-core box.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    flags = json.loads(out.stdout).get("data", {}).get("flags_checked", "?")
    return elapsed, flags


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5, help="runs after the first")
    parser.add_argument("model", nargs="?", default="Qwen/Qwen3-8B")
    parser.add_argument("gpu", nargs="?", default="cpu", help="cpu on the CPU build: a GPU plan is not checked against it")
    args = parser.parse_args()
    cmd = [sys.executable, "-m", "vllmkit", "serve", args.model, "--source", "catalog", "--gpu", args.gpu,
           "--dry-run", "--json"]
    with tempfile.TemporaryDirectory(prefix="vllmkit-dry-run-") as cache:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLMKIT_CACHE_DIR": cache,
               "VLLMKIT_VLLM_PYTHON": os.environ.get("VLLMKIT_VLLM_PYTHON", sys.executable)}
        first, first_flags = _run(cmd, env)
        later = [_run(cmd, env) for _ in range(args.runs)]
    times = [t for t, _ in later]
    print(f"vllmkit serve {args.model} --gpu {args.gpu} --dry-run")
    print(f"  first run (empty cache): {first:.2f}s  flags: {first_flags}")
    print(f"  next {args.runs} runs: min={min(times):.2f}s median={statistics.median(times):.2f}s "
          f"max={max(times):.2f}s  flags: {later[-1][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
