"""Causal prefill attention rates on one NVIDIA GPU with PyTorch's fused attention kernels.

The performance model (src/vllmkit/estimate/perf.py) times a prompt's attention as its FLOPs (4 x heads x
head_dim per query-key pair, causal) at the fitted compute fraction of the datasheet peak, the rate its GEMMs
get (`Efficiency.prefill_attention` = 1 on CUDA). This script measures what fused attention kernels reach at
Llama-3.1-8B's head layout (32 query heads, 8 KV heads, head_dim 128) for one prompt of 1k ... 32k tokens,
through torch's scaled_dot_product_attention backends:

- FLASH_ATTENTION: FlashAttention-2 (the kernel family vLLM's CUDA backends ran before FlashAttention-3),
- CUDNN_ATTENTION: cuDNN's fused attention (on Hopper a warp-specialised kernel of FlashAttention-3's kind),
- EFFICIENT_ATTENTION: the memory-efficient (xFormers-style) kernel.

vLLM's own kernels (vllm-flash-attn FA2 / FA3, FlashInfer) are not installed on the probe machine, so these
are the nearest kernels of each kind, not vLLM's, and its results must say so.
GQA is run with K / V expanded to the query heads (the same FLOPs; a prompt this long is compute-bound).

Run on a GPU machine:  python benchmarks/gpu_probe_attention.py --out attention.json
Not yet run: written in round 41 (2026-12-06) for an H100 that the device tool then did not lend; the
performance model takes nothing from it until a run's results are kept in benchmarks/data/.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial

from gpu_timing import emit, median_seconds

HEADS, KV_HEADS, HEAD_DIM = 32, 8, 128  # Llama-3.1-8B config.json
TOKENS = (1024, 2048, 4096, 8192, 16384, 32768)


def main() -> int:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="-")
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    dev = torch.device("cuda:0")

    timed = partial(median_seconds, reps=args.reps, warmup=3)

    rows = []
    for backend in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"):
        for s in TOKENS:
            q = torch.randn(1, HEADS, s, HEAD_DIM, device=dev, dtype=torch.bfloat16)
            k = torch.randn(1, KV_HEADS, s, HEAD_DIM, device=dev, dtype=torch.bfloat16)
            v = torch.randn(1, KV_HEADS, s, HEAD_DIM, device=dev, dtype=torch.bfloat16)
            k, v = (t.repeat_interleave(HEADS // KV_HEADS, dim=1).contiguous() for t in (k, v))

            def run(q=q, k=k, v=v, backend=backend) -> None:
                with sdpa_kernel([getattr(SDPBackend, backend)]):
                    F.scaled_dot_product_attention(q, k, v, is_causal=True)

            pairs = s * (s + 1) / 2
            try:
                t = timed(run)
            except RuntimeError as exc:  # a backend that refuses the shape or the GPU
                rows.append({"backend": backend, "tokens": s, "error": str(exc)[:200]})
                print(json.dumps(rows[-1]), flush=True)
                continue
            rows.append({"backend": backend, "tokens": s, "seconds": t, "causal_pairs": pairs,
                         "flops_per_s": 4.0 * HEADS * HEAD_DIM * pairs / t})
            print(json.dumps(rows[-1]), flush=True)
            del q, k, v
            torch.cuda.empty_cache()
    out = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(dev),
           "layout": {"heads": HEADS, "kv_heads": KV_HEADS, "head_dim": HEAD_DIM, "causal": True, "batch": 1},
           "flops": "4 x heads x head_dim x causal (query, key) pairs", "rows": rows}
    emit(out, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
