"""What the GPU probe scripts share (benchmarks/gpu_probe*.py, run on a GPU machine from the repository root):
the median CUDA-event time of a callable, and writing a result as JSON to a file or stdout."""

from __future__ import annotations

import json
from collections.abc import Callable


def median_seconds(fn: Callable[[], object], reps: int, warmup: int) -> float:
    """Median of `reps` timings of `fn` between two CUDA events, after `warmup` untimed calls."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return sorted(times)[reps // 2]


def emit(out: dict, path: str) -> None:
    """`out` as indented JSON: printed when `path` is "-", else written there."""
    text = json.dumps(out, indent=1)
    if path == "-":
        print(text)
    else:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
