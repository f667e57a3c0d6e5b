"""Start-up cost of vllmkit as whole processes, relative to the bare interpreter (issue #9 targets).

Usage: .venv/bin/python benchmarks/startup_speed.py [--runs 15]
Each command runs --runs times; the minimum wall time is compared (the least disturbed run on a shared
machine). Targets on the 2-core dev box: `vllmkit --help` <= 2.5x and an offline plan <= 4x
`python -c pass`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

TARGETS = {"--help": 2.5, "plan (catalog)": 4.0, "plan (HF_HUB_OFFLINE=1)": 4.0}


def best_of(cmd: list[str], env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    py = sys.executable
    exe = str(Path(py).with_name("vllmkit"))
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "VLLM_USE_MODELSCOPE")}
    offline = {**env, "HF_HUB_OFFLINE": "1"}
    # measure the tool as installed: pip writes bytecode at install time, but an editable checkout
    # run under PYTHONDONTWRITEBYTECODE=1 (set on this project's machines) recompiles every module of
    # vllmkit in each process (~0.13 s of a plan); compile it once, explicitly
    import vllmkit

    subprocess.run([py, "-m", "compileall", "-q", str(Path(vllmkit.__file__).parent)], check=False,
                   stdout=subprocess.DEVNULL)
    # the first --help of a CLI source fills the help cache (cli/entry.py); time the ones after
    subprocess.run([exe, "--help"], env=env, check=False, stdout=subprocess.DEVNULL)
    base = best_of([py, "-c", "pass"], env, args.runs)
    rows = [
        ("--help", [exe, "--help"], env),
        ("plan (catalog)", [exe, "plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--source", "catalog", "--json"], env),
        ("plan (HF_HUB_OFFLINE=1)", [exe, "plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--json"], offline),
    ]
    # the floor under the offline-plan goal: the standard-library modules any planner written without
    # pydantic and typer would still import (a dataclass model, a JSON catalog, paths, a flag parser)
    floor = best_of([py, "-c", "import argparse, dataclasses, json, pathlib"], env, args.runs)
    print(f"python -c pass: {base:.3f} s (min of {args.runs})")
    print(f"python -c 'import argparse, dataclasses, json, pathlib' (stdlib floor of a plan): {floor:.3f} s "
          f"= {floor / base:.1f}x")
    print("| command | min wall | x python -c pass | target |")
    print("|---|---|---|---|")
    ok = True
    for name, cmd, cmd_env in rows:
        t = best_of(cmd, cmd_env, args.runs)
        ratio = t / base
        target = TARGETS[name]
        ok &= ratio <= target
        print(f"| `vllmkit {name}` | {t:.3f} s | {ratio:.1f}x | <= {target}x |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
