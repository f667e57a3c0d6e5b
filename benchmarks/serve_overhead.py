"""Overhead of `vllmkit serve` over starting vLLM directly: time to a healthy server, as a ratio.

    .venv/bin/python benchmarks/serve_overhead.py [--model DIR] [--repeats 2] [--json]

Both sides start the same real server (vLLM CPU build, `python -m vllm.entrypoints.openai.api_server`,
--max-model-len 1024, --kv-cache-memory-bytes 1 GiB) on a tiny random Llama (built with
tests/e2e/tiny.py unless --model is given) and poll /health every 0.5 s:
- direct:  the server command alone; time from spawn to the first 200 from /health;
- vllmkit: `vllmkit serve DIR --device cpu --detach --no-smoke`; time from spawn to vllmkit's exit
  (it exits once /health answers), so it includes planning, vLLM detection, the cached flag check,
  the run folder and the supervisor.
A warm-up start runs first (vLLM's torch.compile cache makes the first start slower), then the two
kinds alternate. One server at a time; every process group is killed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

GIB = 1 << 30
ARGS = ["--max-model-len", "1024", "--kv-cache-memory-bytes", str(GIB)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def kill_group(pgid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        time.sleep(3)


def env_for(state: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "VLLMKIT_STATE_DIR": str(state)})
    return env


def direct(model: Path, env: dict[str, str], timeout: float) -> float:
    port = free_port()
    argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
            "--host", "127.0.0.1", "--port", str(port), *ARGS]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    try:
        while time.monotonic() - t0 < timeout:
            if proc.poll() is not None:
                raise RuntimeError(f"vLLM exited with {proc.returncode}")
            if healthy(port):
                return time.monotonic() - t0
            time.sleep(0.5)
        raise TimeoutError("direct start did not become healthy")
    finally:
        kill_group(proc.pid)
        proc.wait()


def via_vllmkit(model: Path, env: dict[str, str], timeout: float) -> float:
    port = free_port()
    argv = [sys.executable, "-m", "vllmkit", "serve", str(model), "--device", "cpu", "--port", str(port), *ARGS,
            "--detach", "--no-smoke", "--json"]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    elapsed = time.monotonic() - t0
    try:
        if proc.returncode != 0:
            # what vllmkit relayed from vLLM reaches the terminal escaped
            from vllmkit.output import safe_text

            raise RuntimeError(f"vllmkit serve exited {proc.returncode}: {safe_text(proc.stderr[-2000:], newlines=True)}")
        if not healthy(port):
            raise RuntimeError("vllmkit returned but the server is not healthy")
        return elapsed
    finally:
        subprocess.run(
            [sys.executable, "-m", "vllmkit", "stop", "--all"], env=env, capture_output=True, check=False
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, help="model folder (default: build the tests' tiny Llama)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="vk-bench-") as tmp:
        root = Path(tmp)
        model = args.model
        if model is None:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
            from tests.e2e.tiny import build_tiny_model

            model = build_tiny_model(root / "tiny", "llama")
        env = env_for(root / "state")
        if not args.no_warmup:
            direct(model, env, args.timeout)
        times: dict[str, list[float]] = {"direct": [], "vllmkit": []}
        for i in range(args.repeats):
            order = ("direct", "vllmkit") if i % 2 == 0 else ("vllmkit", "direct")
            for kind in order:
                fn = direct if kind == "direct" else via_vllmkit
                times[kind].append(round(fn(model, env, args.timeout), 2))
    med = {k: statistics.median(v) for k, v in times.items()}
    # the minimum is the least disturbed start (other work on the box only ever adds time)
    best = {k: min(v) for k, v in times.items()}
    result = {
        "model": str(args.model or "tiny llama (tests/e2e/tiny.py)"),
        "repeats": args.repeats,
        "seconds_to_healthy": times,
        "median_s": med,
        "min_s": best,
        "ratio_vllmkit_over_direct": round(med["vllmkit"] / med["direct"], 3),
        "ratio_of_minimums": round(best["vllmkit"] / best["direct"], 3),
        "overhead_s": round(med["vllmkit"] - med["direct"], 2),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"direct  : {times['direct']} s (median {med['direct']:.2f})")
        print(f"vllmkit : {times['vllmkit']} s (median {med['vllmkit']:.2f})")
        print(
            f"ratio vllmkit/direct = {result['ratio_vllmkit_over_direct']:.3f} (overhead {result['overhead_s']:+.2f} s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
