"""Pure statistics for bench: percentiles, per-point summaries, goodput, confidence intervals.

Definitions follow vLLM's own benchmark (vllm/benchmarks/serve.py, `calculate_metrics`, 0.32):
- TTFT = first streamed chunk with a choice - request send (time.perf_counter);
- TPOT = (e2e - TTFT) / (output_tokens - 1), only for requests with more than one output token;
  for goodput a one-token request counts TPOT 0 (as vLLM does);
- ITL = the gaps between successive streamed chunks (one chunk per token unless the server batches);
- e2e = last streamed chunk - request send;
- percentiles: numpy's default linear interpolation (np.percentile, method="linear").
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

from pydantic import BaseModel


def percentile(values: Sequence[float], q: float) -> float | None:
    """q in [0, 100]; linear interpolation between closest ranks (numpy's default). None if empty."""
    if not values:
        return None
    xs = sorted(values)
    if len(xs) == 1:
        return float(xs[0])
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    frac = pos - lo
    return float(xs[lo] + (xs[hi] - xs[lo]) * frac)


def median(values: Sequence[float]) -> float | None:
    return percentile(values, 50.0)


class Summary(BaseModel):
    """mean / p50 / p90 / p99 of one quantity (unit given by the field that holds it)."""

    n: int = 0
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None


def summarize(values: Sequence[float], scale: float = 1.0) -> Summary:
    if not values:
        return Summary()
    scaled = [v * scale for v in values]
    return Summary(
        n=len(scaled),
        mean=sum(scaled) / len(scaled),
        p50=percentile(scaled, 50),
        p90=percentile(scaled, 90),
        p99=percentile(scaled, 99),
    )


def tpot_s(e2e_s: float, ttft_s: float, output_tokens: int) -> float | None:
    """vLLM's TPOT: decode time over the tokens after the first. None for <= 1 output token."""
    if output_tokens <= 1:
        return None
    return (e2e_s - ttft_s) / (output_tokens - 1)


class Slo(BaseModel):
    """Goodput targets in seconds (None = not constrained)."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None

    def is_set(self) -> bool:
        return any(v is not None for v in (self.ttft_s, self.tpot_s, self.e2e_s))


def meets_slo(slo: Slo, *, ttft: float, tpot: float | None, e2e: float) -> bool:
    """A completed request is good when every set target holds (<=, as vLLM's `s >= r`)."""
    if slo.ttft_s is not None and ttft > slo.ttft_s:
        return False
    if slo.tpot_s is not None and (tpot or 0.0) > slo.tpot_s:  # one-token request: TPOT counts 0
        return False
    return not (slo.e2e_s is not None and e2e > slo.e2e_s)


_UNITS = {"ms": 1e-3, "us": 1e-6, "s": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """'2s' / '50ms' / '5m' / '1h' / '1.5' (seconds) -> seconds. ValueError on anything else."""
    t = text.strip().lower()
    try:
        for unit in _UNITS:  # "ms"/"us" before "s", "min" before "m"
            if t.endswith(unit):
                value = float(t[: -len(unit)].strip()) * _UNITS[unit]
                break
        else:
            value = float(t)
    except ValueError:
        raise ValueError(f"not a duration: {text.strip()!r} (e.g. 2s, 50ms, 5m)") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"not a positive duration: {text!r}")
    return value


def parse_slo(text: str) -> Slo:
    """'ttft=2s,tpot=50ms[,e2e=10s]' -> Slo. ValueError with the offending part."""
    fields: dict[str, float] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        if "=" not in part and ":" not in part:
            raise ValueError(f"{part!r} is not KEY=VALUE")
        key, _, value = part.replace(":", "=", 1).partition("=")
        key = key.strip().lower()
        if key in ("e2el", "e2e"):
            key = "e2e"
        if key not in ("ttft", "tpot", "e2e"):
            raise ValueError(f"unknown SLO {key!r} (known: ttft, tpot, e2e)")
        fields[f"{key}_s"] = parse_duration(value)
    return Slo(**fields)


# --- confidence intervals ------------------------------------------------------------------------


def bootstrap_ci(
    a: Sequence[float],
    b: Sequence[float],
    stat: Callable[[Sequence[float]], float | None],
    *,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile-bootstrap CI of stat(b)/stat(a) - 1 (relative change from A to B), resampling each
    sample independently with replacement. Seeded, so the same files always give the same verdict.
    None when a sample is too small (< 5) or a statistic is zero."""
    if len(a) < 5 or len(b) < 5:
        return None
    rng = random.Random(seed)
    ratios: list[float] = []
    for _ in range(resamples):
        ra = stat([a[rng.randrange(len(a))] for _ in range(len(a))])
        rb = stat([b[rng.randrange(len(b))] for _ in range(len(b))])
        if ra is None or rb is None or ra == 0:
            continue
        ratios.append(rb / ra - 1.0)
    if len(ratios) < resamples // 2:
        return None
    alpha = (1.0 - confidence) / 2.0
    lo, hi = percentile(ratios, 100 * alpha), percentile(ratios, 100 * (1 - alpha))
    assert lo is not None and hi is not None
    return lo, hi


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
