"""Linear-layer timings on one NVIDIA GPU for several per-rank shapes, under CUDA graphs and eagerly.

benchmarks/gpu_probe.py times Llama-3.1-8B's layers launched one by one from Python. On a small GEMM
that measures the launch rate, not the GPU: this script captures the whole pass in one CUDA graph (as
vLLM runs its decode steps) and also times per-rank shapes of tensor parallelism, so the performance
model's per-kernel cost and weight-streaming rate can be read apart (src/vllmkit/estimate/perf.py).

Shapes (hidden, intermediate, heads, kv heads, layers, tp): Llama-3.1-8B at TP1 and TP4, Llama-3.1-70B
at TP4. Precisions: bf16 (torch.mm), fp8 (torch._scaled_mm on fp8 activations), fp8q (a bf16->fp8
cast before every GEMM, as vLLM's W8A8 layers quantize their input).

Run on a GPU machine:  python benchmarks/gpu_probe_shapes.py --out probe.json  [--eager]
Results kept in benchmarks/data/gpu-probe-h200-shapes.json (2026-11-30, H200, torch 2.11).
"""

from __future__ import annotations

import argparse
import sys
from functools import partial

from gpu_timing import emit, median_seconds

SHAPES = {
    "8b-tp1": (4096, 14336, 32, 8, 32, 1),
    "8b-tp4": (4096, 14336, 32, 8, 32, 4),
    "70b-tp4": (8192, 28672, 64, 8, 80, 4),
}
TOKENS = (1, 8, 64, 128, 256, 512, 1024)
HEAD_DIM = 128


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="-")
    parser.add_argument("--eager", action="store_true", help="launch from Python instead of a CUDA graph")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    dev = torch.device("cuda:0")
    f8 = torch.float8_e4m3fn
    one = torch.ones((), device=dev)

    timed = partial(median_seconds, reps=args.reps, warmup=3)

    out: dict = {"torch": torch.__version__, "timing": "eager" if args.eager else "CUDA graph replay"}
    for name, (hidden, inter, heads, kv_heads, layers, tp) in SHAPES.items():
        # (in, out) per rank: column-parallel qkv / gate_up split their output, row-parallel o / down their input
        shapes = [(hidden, (heads + 2 * kv_heads) * HEAD_DIM // tp), (heads * HEAD_DIM // tp, hidden),
                  (hidden, 2 * inter // tp), (inter // tp, hidden)]
        params = layers * sum(i * o for i, o in shapes)
        rows = []
        for precision in ("bf16", "fp8", "fp8q"):
            dtype = torch.bfloat16 if precision == "bf16" else f8
            weights = [[(torch.randn(o, i, device=dev, dtype=torch.bfloat16) * 0.02).to(dtype).t() for i, o in shapes]
                       for _ in range(layers)]
            for m in TOKENS:
                x = torch.randn(m, max(i for i, _ in shapes), device=dev, dtype=torch.bfloat16)
                xs = {i: x[:, :i].contiguous() for i, _ in shapes}
                if precision == "fp8":
                    xs = {k: v.to(f8) for k, v in xs.items()}

                def run(weights=weights, xs=xs, precision=precision) -> None:
                    for layer in weights:
                        for w in layer:
                            a = xs[w.shape[0]]
                            if precision == "bf16":
                                torch.mm(a, w)
                            else:
                                torch._scaled_mm(a if precision == "fp8" else a.to(f8), w, scale_a=one, scale_b=one,
                                                 out_dtype=torch.bfloat16)

                run()
                torch.cuda.synchronize()
                if args.eager:
                    t = timed(run)
                else:
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        run()
                    t = timed(graph.replay)
                    del graph
                rows.append({"precision": precision, "tokens": m, "seconds": t,
                             "weight_bytes_per_s": params * (2 if precision == "bf16" else 1) / t,
                             "flops_per_s": 2.0 * m * params / t})
                print(name, precision, m, f"{t * 1e3:.3f} ms", flush=True)
            del weights
            torch.cuda.empty_cache()
        out[name] = {"params": params, "layers": layers, "tp": tp, "shapes": shapes, "rows": rows}
    emit(out, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
