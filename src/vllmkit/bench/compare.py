"""`vllmkit bench --compare A.json B.json`: differences that are real, and the ones that are noise.

For each load point present in both files (matched by label: c=8, rate=4, ...):
- median TTFT, TPOT and e2e: relative change B vs A with a 95 % percentile-bootstrap confidence
  interval from the per-request samples saved in the files (each file resampled on its own);
- output tokens/s: the point's throughput, with a 95 % bootstrap CI of the change of the mean over
  10 equal time windows of each run (batch means; see aggregate.throughput_windows).
A change is called only when its whole interval lies on one side of zero *and* beyond `min_change`
(default 2 %): "B is 12 % faster (95 % CI 9-15 %)"; otherwise "no significant difference".
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from vllmkit.bench.aggregate import throughput_windows
from vllmkit.bench.models import BenchReport, PointResult
from vllmkit.bench.stats import bootstrap_ci, mean, median
from vllmkit.bench.workload import read_json_file
from vllmkit.errors import UsageError

Better = Literal["lower", "higher"]
Call = Literal["better", "worse", "same", "unknown"]


class MetricDiff(BaseModel):
    metric: str  # ttft_p50_ms | tpot_p50_ms | e2e_p50_s | output_tokens_per_s
    a: float | None
    b: float | None
    change: float | None  # (b - a) / a
    ci_low: float | None = None
    ci_high: float | None = None
    call: Call = "unknown"
    better: Better


class PointDiff(BaseModel):
    label: str
    metrics: list[MetricDiff] = Field(default_factory=list)


class Comparison(BaseModel):
    a: str
    b: str
    a_target: dict[str, object] = Field(default_factory=dict)
    b_target: dict[str, object] = Field(default_factory=dict)
    points: list[PointDiff] = Field(default_factory=list)
    only_in_a: list[str] = Field(default_factory=list)
    only_in_b: list[str] = Field(default_factory=list)
    confidence: float = 0.95
    min_change: float = 0.02
    summary: list[str] = Field(default_factory=list)


def load_report(path: Path) -> BenchReport:
    doc = read_json_file(path, "", "give files written by `vllmkit bench --save`")
    if isinstance(doc, dict) and doc.get("command") == "bench" and isinstance(doc.get("data"), dict):
        doc = doc["data"]  # a `bench --json` envelope
    try:
        return BenchReport.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise UsageError(f"{path} is not a bench result ({where}: {first.get('msg')})",
                         "give files written by `vllmkit bench --save FILE` or `--json`") from None


def _call(ci: tuple[float, float] | None, better: Better, min_change: float) -> Call:
    if ci is None:
        return "unknown"
    lo, hi = ci
    if lo > min_change:
        return "better" if better == "higher" else "worse"
    if hi < -min_change:
        return "better" if better == "lower" else "worse"
    return "same"


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a == 0:
        return None
    return b / a - 1.0


def _latency(name: str, a: PointResult, b: PointResult, field: str, scale: float, min_change: float,
             confidence: float) -> MetricDiff:
    xa = [getattr(s, field) * scale for s in a.samples if s.ok and getattr(s, field) is not None]
    xb = [getattr(s, field) * scale for s in b.samples if s.ok and getattr(s, field) is not None]
    ma, mb = median(xa), median(xb)
    ci = bootstrap_ci(xa, xb, median, confidence=confidence)  # type: ignore[arg-type]
    return MetricDiff(metric=name, a=ma, b=mb, change=_ratio(ma, mb), ci_low=ci[0] if ci else None,
                      ci_high=ci[1] if ci else None, call=_call(ci, "lower", min_change), better="lower")


def _throughput(a: PointResult, b: PointResult, min_change: float, confidence: float) -> MetricDiff:
    wa, wb = throughput_windows(a.samples), throughput_windows(b.samples)
    ci = bootstrap_ci(wa, wb, mean, confidence=confidence)  # type: ignore[arg-type]
    return MetricDiff(metric="output_tokens_per_s", a=a.output_tokens_per_s, b=b.output_tokens_per_s,
                      change=_ratio(a.output_tokens_per_s, b.output_tokens_per_s),
                      ci_low=ci[0] if ci else None, ci_high=ci[1] if ci else None,
                      call=_call(ci, "higher", min_change), better="higher")


_WORDS = {
    "ttft_p50_ms": ("median TTFT", "lower", "higher"),
    "tpot_p50_ms": ("median TPOT", "lower", "higher"),
    "e2e_p50_s": ("median latency", "lower", "higher"),
    "output_tokens_per_s": ("output throughput", "higher", "lower"),
}


def _sentence(label: str, d: MetricDiff) -> str | None:
    if d.call not in ("better", "worse") or d.change is None or d.ci_low is None or d.ci_high is None:
        return None
    what, _, _ = _WORDS[d.metric]
    direction = "higher" if d.change > 0 else "lower"
    return (f"{label}: B's {what} is {abs(d.change):.0%} {direction} than A's "
            f"(95% CI {d.ci_low:+.0%} to {d.ci_high:+.0%}): {d.call}")


def compare_reports(path_a: Path, path_b: Path, *, min_change: float = 0.02, confidence: float = 0.95) -> Comparison:
    a, b = load_report(path_a), load_report(path_b)
    pa = {p.label: p for p in a.points}
    pb = {p.label: p for p in b.points}
    out = Comparison(
        a=str(path_a), b=str(path_b), confidence=confidence, min_change=min_change,
        a_target=a.target.model_dump(include={"gpu", "model", "precision", "tp", "pp", "vllm_version", "url"}),
        b_target=b.target.model_dump(include={"gpu", "model", "precision", "tp", "pp", "vllm_version", "url"}),
        only_in_a=[k for k in pa if k not in pb],
        only_in_b=[k for k in pb if k not in pa],
    )
    for label, point_a in pa.items():
        point_b = pb.get(label)
        if point_b is None:
            continue
        diff = PointDiff(label=label, metrics=[
            _throughput(point_a, point_b, min_change, confidence),
            _latency("ttft_p50_ms", point_a, point_b, "ttft_s", 1000.0, min_change, confidence),
            _latency("tpot_p50_ms", point_a, point_b, "tpot_s", 1000.0, min_change, confidence),
            _latency("e2e_p50_s", point_a, point_b, "e2e_s", 1.0, min_change, confidence),
        ])
        out.points.append(diff)
        sentences = [s for s in (_sentence(label, d) for d in diff.metrics) if s]
        out.summary.extend(sentences or [f"{label}: no significant difference"])
    if not out.points:
        raise UsageError("the two files share no load point",
                         f"A has {', '.join(pa) or 'none'}; B has {', '.join(pb) or 'none'}: run the same --concurrency/--request-rate")
    return out
