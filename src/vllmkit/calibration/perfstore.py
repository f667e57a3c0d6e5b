"""The local store of measured serving performance: what `vllmkit bench` measured on a live vLLM.

One JSON object per line in `<data dir>/performance.jsonl` (the data dir of `calibration.store`),
with the same safety rules as the memory calibration store (exclusive flock for writers, atomic
replace, readers skip lines that do not validate).

Written by `vllmkit bench` (one record per load point); read by the planner and `capacity`:
- at a *measured point* (same GPU, model, precision, TP/PP, vLLM major.minor, lengths within 10 %,
  same concurrency or request rate) `plan` reports `performance.source = "measured"`;
- elsewhere the performance model's efficiencies for that GPU and precision are corrected from the
  records (`calibrated`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from vllmkit.calibration.store import (
    MAX_PARALLEL,
    MAX_TEXT,
    _first_error,
    _remove_stale_temps,
    _write_atomic,
    data_dir,
    locked,
)
from vllmkit.errors import UsageError

PERF_STORE_NAME = "performance.jsonl"
PERF_SCHEMA_VERSION = 1

# Physical bounds on a measured load point (docs/limits.md), far above what any server reaches:
# one H100 decodes ~10^4 tokens/s for an 8B model (vLLM benchmarks); 10^8 tokens/s per replica is
# four orders of magnitude more. A latency above a day (86,400,000 ms) or a run above a week is no
# serving benchmark.
MAX_TOKENS_PER_S = 1e8
MAX_LATENCY = 86_400_000.0
MAX_DURATION_S = 7 * 86_400.0
MAX_COUNT = 10**9
MAX_LEN_TOKENS = float(1 << 28)  # the longest context read_arch accepts


class LatencyStats(BaseModel):
    """Milliseconds (seconds for e2e), over the completed requests of one load point."""

    model_config = ConfigDict(extra="ignore")

    mean: float | None = Field(default=None, ge=0, le=MAX_LATENCY)
    p50: float | None = Field(default=None, ge=0, le=MAX_LATENCY)
    p90: float | None = Field(default=None, ge=0, le=MAX_LATENCY)
    p99: float | None = Field(default=None, ge=0, le=MAX_LATENCY)

    @model_validator(mode="after")
    def _ordered(self) -> LatencyStats:
        known = [v for v in (self.p50, self.p90, self.p99) if v is not None]
        if any(b < a * (1 - 1e-6) for a, b in itertools.pairwise(known)):
            raise ValueError("percentiles must not decrease (p50 <= p90 <= p99)")
        return self


class PerfRecord(BaseModel):
    """One measured load point (a closed loop at `concurrency`, or Poisson arrivals at `request_rate`)."""

    model_config = ConfigDict(extra="ignore")

    kind: Literal["performance"] = "performance"
    schema_version: int = PERF_SCHEMA_VERSION
    record_id: str = Field(pattern=r"^[0-9a-f]{8,64}$")
    recorded_at: str  # ISO 8601 with UTC offset
    # key: what the measurement depends on
    gpu: str = Field(min_length=1, max_length=MAX_TEXT)  # GPU profile name, "cpu" for the CPU build
    gpu_count: int = Field(ge=1, le=MAX_PARALLEL, default=1)  # GPUs of one replica (TP x PP)
    vllm_version: str
    model: str = Field(min_length=1, max_length=MAX_TEXT)  # served model id / path as planned
    family: str = ""  # config.json model_type when known
    precision: str = "bf16"  # bf16 | fp16 | fp8 | awq | gptq | int8 | mxfp4 | ... (as the plan names it)
    kv_cache_dtype: str = "auto"
    tp: int = Field(ge=1, le=MAX_PARALLEL, default=1)
    pp: int = Field(ge=1, le=MAX_PARALLEL, default=1)
    # data-parallel engines behind the measured endpoint (--data-parallel-size): its rates are the fleet's
    dp: int = Field(ge=1, le=MAX_PARALLEL, default=1)
    max_num_seqs: int | None = Field(default=None, gt=0)
    max_num_batched_tokens: int | None = Field(default=None, gt=0)
    # workload (means over completed requests; token counts from the server's usage)
    input_len: float = Field(gt=0, le=MAX_LEN_TOKENS)
    output_len: float = Field(gt=0, le=MAX_LEN_TOKENS)
    concurrency: int | None = Field(default=None, gt=0, le=MAX_COUNT)  # closed loop
    request_rate: float | None = Field(default=None, gt=0, le=MAX_TOKENS_PER_S)  # Poisson arrivals
    num_requests: int = Field(ge=0, le=MAX_COUNT)
    completed: int = Field(ge=0, le=MAX_COUNT)
    failed: int = Field(ge=0, le=MAX_COUNT, default=0)
    duration_s: float = Field(gt=0, le=MAX_DURATION_S)
    # measurements
    output_tokens_per_s: float = Field(ge=0, le=MAX_TOKENS_PER_S)
    total_tokens_per_s: float = Field(ge=0, le=MAX_TOKENS_PER_S)
    requests_per_s: float = Field(ge=0, le=MAX_TOKENS_PER_S)
    ttft_ms: LatencyStats = Field(default_factory=LatencyStats)
    tpot_ms: LatencyStats = Field(default_factory=LatencyStats)
    itl_ms: LatencyStats = Field(default_factory=LatencyStats)
    e2e_s: LatencyStats = Field(default_factory=LatencyStats)
    peak_kv_usage: float | None = Field(default=None, ge=0, le=1.0001)
    preemptions: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    max_running: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    max_waiting: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    # context
    source: str = ""  # "bench <url>" / "import <file>"
    notes: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> PerfRecord:
        if self.completed + self.failed > self.num_requests:
            raise ValueError(f"completed ({self.completed}) + failed ({self.failed}) exceed num_requests "
                             f"({self.num_requests})")
        if self.output_tokens_per_s > self.total_tokens_per_s * (1 + 1e-6):
            raise ValueError("output_tokens_per_s is larger than total_tokens_per_s")
        return self


def perf_store_path(env: Mapping[str, str]) -> Path:
    return data_dir(env) / PERF_STORE_NAME


def parse_perf_lines(text: str) -> tuple[list[PerfRecord], list[tuple[int, str]]]:
    records: list[PerfRecord] = []
    bad: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(PerfRecord.model_validate_json(line))
        except ValidationError as exc:
            bad.append((number, _first_error(exc)))
    return records, bad


def load_perf_records(path: Path) -> tuple[list[PerfRecord], list[tuple[int, str]]]:
    """All valid records (empty when the store does not exist) and the skipped lines."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        raise UsageError(f"cannot read the performance store {path}: {exc.strerror}",
                         "check its permissions, or point VLLMKIT_DATA_DIR elsewhere",
                         code="calibration-store") from None
    return parse_perf_lines(text)


def add_perf_records(path: Path, records: Iterable[PerfRecord]) -> tuple[int, int]:
    """Append records not already stored (by record_id). Returns (added, duplicates)."""
    incoming = list(records)
    with locked(path):
        _remove_stale_temps(path)
        current, _ = load_perf_records(path)
        seen = {r.record_id for r in current}
        added = dupes = 0
        for rec in incoming:
            if rec.record_id in seen:
                dupes += 1
                continue
            seen.add(rec.record_id)
            current.append(rec)
            added += 1
        _write_atomic(path, current, what="the performance store")  # type: ignore[arg-type]
    return added, dupes


def _close(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-9)


def match_measured(
    records: Iterable[PerfRecord],
    *,
    gpu: str,
    model: str,
    precision: str,
    tp: int,
    pp: int,
    vllm_version: str | None,
    input_len: float,
    output_len: float,
    concurrency: int | None = None,
    request_rate: float | None = None,
    length_tolerance: float = 0.10,
    dp: int = 1,
) -> PerfRecord | None:
    """The newest record measured at this point: same GPU profile, model, precision, TP/PP/DP, vLLM
    major.minor (when both are known), input/output lengths within `length_tolerance`, and the same
    closed-loop concurrency or (within 5 %) the same request rate. None when nothing matches."""
    from vllmkit.engine.versions import parse_version

    def minor(v: str | None) -> tuple[int, ...] | None:
        if not v:
            return None
        try:
            return tuple(parse_version(v)[:2])
        except ValueError:
            return None

    want_minor = minor(vllm_version)
    best: PerfRecord | None = None
    for rec in records:
        if (rec.gpu, rec.model, rec.precision, rec.tp, rec.pp, rec.dp) != (gpu, model, precision, tp, pp, dp):
            continue
        have_minor = minor(rec.vllm_version)
        if want_minor is not None and have_minor is not None and want_minor != have_minor:
            continue
        if not (_close(rec.input_len, input_len, length_tolerance) and _close(rec.output_len, output_len, length_tolerance)):
            continue
        if concurrency is not None:
            if rec.concurrency != concurrency:
                continue
        elif request_rate is not None:
            if rec.request_rate is None or not _close(rec.request_rate, request_rate, 0.05):
                continue
        else:
            continue
        if best is None or rec.recorded_at > best.recorded_at:
            best = rec
    return best
