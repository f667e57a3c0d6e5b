"""Measure, on one NVIDIA GPU with PyTorch, the facts the planner takes from GPU profiles and the
performance model's ceilings:

- memory: `torch.cuda.get_device_properties().total_memory` (vLLM's `total` in its "Free memory on
  device (free/total GiB)" check and in `requested = ceil(total x util)`), free memory before and after
  CUDA / cuBLAS initialisation (the CUDA context and library workspaces that vLLM counts as non-torch
  memory);
- the linear-layer roofline: the four GEMMs of every decoder layer of a Llama-3.1-8B-shaped model
  (32 distinct layers, so weights never sit in L2) for M = 1 ... 8192 tokens, in bf16 and fp8
  (torch._scaled_mm, per-tensor scales, what vLLM's FP8 linear layers run on Hopper). From the time:
  achieved bandwidth (weight bytes / t) and FLOP rate (2 M params / t). These are kernel ceilings: an
  engine step of vLLM adds attention, sampling and scheduling, so the performance model's fitted
  fractions (src/vllmkit/estimate/perf.py) must stay at or below them (tests/unit/estimate/test_gpu_probe.py).
- a device-to-device copy for the raw bandwidth ceiling.

Run on a GPU machine:  python benchmarks/gpu_probe.py --out probe.json
Results kept in benchmarks/data/gpu-probe-<gpu>.json with the date and the torch/driver versions.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
from functools import partial

from gpu_timing import emit, median_seconds

HIDDEN, INTER, HEADS, KV_HEADS, HEAD_DIM, LAYERS = 4096, 14336, 32, 8, 128, 32  # Llama-3.1-8B config.json
SHAPES = {  # (in, out) of each linear layer (vLLM fuses q/k/v and gate/up)
    "qkv": (HIDDEN, (HEADS + 2 * KV_HEADS) * HEAD_DIM),
    "o": (HEADS * HEAD_DIM, HIDDEN),
    "gate_up": (HIDDEN, 2 * INTER),
    "down": (INTER, HIDDEN),
}
TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="-")
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    out: dict = {"date": dt.date.today().isoformat(), "torch": torch.__version__, "cuda": torch.version.cuda}
    try:
        out["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,memory.total", "--format=csv,noheader"],
                                       capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out["driver"] = None

    dev = torch.device("cuda:0")
    props = torch.cuda.get_device_properties(dev)
    free0, total0 = torch.cuda.mem_get_info(dev)  # creates the context
    out["memory"] = {"name": props.name, "total_memory": props.total_memory, "mem_get_info_total": total0,
                     "free_after_context": free0, "sm_count": props.multi_processor_count}
    a = torch.randn(256, 256, device=dev, dtype=torch.bfloat16)
    (a @ a).sum().item()  # cuBLAS handle + workspace
    torch.cuda.synchronize()
    free1, _ = torch.cuda.mem_get_info(dev)
    reserved = torch.cuda.memory_reserved(dev)
    out["memory"].update({"free_after_cublas": free1, "torch_reserved_after_cublas": reserved,
                          "non_torch_after_cublas": total0 - free1 - reserved})
    del a
    torch.cuda.empty_cache()

    timed = partial(median_seconds, warmup=2)

    # raw copy bandwidth: 4 GiB read + 4 GiB written
    src = torch.empty(4 << 30, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    t = timed(lambda d=dst, s=src: d.copy_(s), args.reps)
    out["copy_bytes_per_s"] = 2 * src.numel() / t
    del src, dst
    torch.cuda.empty_cache()

    params = LAYERS * sum(i * o for i, o in SHAPES.values())
    results = []
    for precision in ("bf16", "fp8"):
        weights = []
        for _ in range(LAYERS):
            layer = []
            for i, o in SHAPES.values():
                w = torch.randn(o, i, device=dev, dtype=torch.bfloat16) * 0.02
                if precision == "fp8":
                    w = w.to(torch.float8_e4m3fn)
                layer.append(w.t())  # column-major (out x in stored, used as in x out) as vLLM's layers
            weights.append(layer)
        scale = torch.ones((), device=dev, dtype=torch.float32)
        for m in TOKENS:
            x = torch.randn(m, max(i for i, _ in SHAPES.values()), device=dev, dtype=torch.bfloat16)
            xs = {i: x[:, :i].contiguous() for i, _ in SHAPES.values()}
            if precision == "fp8":
                xs = {i: v.to(torch.float8_e4m3fn) for i, v in xs.items()}

                def run(weights=weights, xs=xs, scale=scale) -> None:  # loop values bound now
                    for layer in weights:
                        for w in layer:
                            torch._scaled_mm(xs[w.shape[0]], w, scale_a=scale, scale_b=scale,
                                             out_dtype=torch.bfloat16)
            else:
                def run(weights=weights, xs=xs) -> None:  # loop values bound now
                    for layer in weights:
                        for w in layer:
                            torch.mm(xs[w.shape[0]], w)
            try:
                t = timed(run, args.reps)
            except RuntimeError as exc:  # e.g. an fp8 shape cuBLASLt refuses
                results.append({"precision": precision, "tokens": m, "error": str(exc)[:200]})
                continue
            wbytes = params * (1 if precision == "fp8" else 2)
            results.append({"precision": precision, "tokens": m, "seconds": t,
                            "weight_bytes_per_s": wbytes / t, "flops_per_s": 2.0 * m * params / t})
            print(json.dumps(results[-1]), flush=True)
        del weights
        torch.cuda.empty_cache()
    out["linear_layers"] = {"model": "Llama-3.1-8B shapes", "params": params, "layers": LAYERS, "rows": results}
    emit(out, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
