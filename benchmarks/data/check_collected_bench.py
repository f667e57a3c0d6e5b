"""Validate the collected data files: collected-bench-results*.jsonl and collected-startup-logs-{2,...,9}.jsonl.

Every line must parse as JSON, carry the keys of the public-bench-results schema, have a unique
id not already used by the curated truth file, cite a source URL, and have numbers (not strings)
in `measured`.  Run: python benchmarks/data/check_collected_bench.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUIRED = [
    "id",
    "source",
    "source_kind",
    "quote",
    "vllm_version",
    "engine",
    "gpu",
    "gpu_count",
    "tp",
    "pp",
    "dp",
    "model",
    "precision",
    "kv_cache_dtype",
    "benchmark_tool",
    "dataset",
    "input_len",
    "output_len",
    "concurrency",
    "request_rate",
    "num_prompts",
    "enable_prefix_caching",
    "speculative",
    "measured",
    "server_cmd",
]
MEASURED = [
    "output_tok_s",
    "total_tok_s",
    "request_throughput_rps",
    "ttft_ms_mean",
    "ttft_ms_median",
    "ttft_ms_p99",
    "tpot_ms_mean",
    "tpot_ms_median",
    "tpot_ms_p99",
    "itl_ms_mean",
    "itl_ms_median",
    "itl_ms_p99",
    "e2e_latency_s_mean",
    "successful_requests",
    "duration_s",
    "total_input_tokens",
    "total_output_tokens",
]


def check(path: Path, known_ids: set[str]) -> list[str]:
    errors: list[str] = []
    seen: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            errors.append(f"{path.name}:{n}: blank line")
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"{path.name}:{n}: not JSON ({exc})")
            continue
        missing = [k for k in REQUIRED if k not in row]
        if missing:
            errors.append(f"{path.name}:{n}: missing keys {missing}")
        rid = row.get("id")
        if rid in seen or rid in known_ids:
            errors.append(f"{path.name}:{n}: duplicate id {rid}")
        seen.add(rid)
        if not str(row.get("source", "")).startswith("https://"):
            errors.append(f"{path.name}:{n}: source is not a URL")
        if not row.get("quote"):
            errors.append(f"{path.name}:{n}: empty quote")
        meas = row.get("measured") or {}
        miss_m = [k for k in MEASURED if k not in meas]
        if miss_m:
            errors.append(f"{path.name}:{n}: measured lacks {miss_m}")
        for k, v in meas.items():
            if v is not None and not isinstance(v, (int, float)):
                errors.append(f"{path.name}:{n}: measured.{k} is not a number: {v!r}")
        if not any(
            meas.get(k) is not None
            for k in ("output_tok_s", "total_tok_s", "request_throughput_rps", "ttft_ms_mean", "tpot_ms_mean")
        ):
            errors.append(f"{path.name}:{n}: no throughput or latency number")
        for k in ("tp", "pp", "dp", "gpu_count"):
            v = row.get(k)
            if v is not None and (not isinstance(v, int) or v < 1):
                errors.append(f"{path.name}:{n}: {k} must be a positive int or null")
    return errors


STARTUP_REQUIRED = [
    "id",
    "source",
    "source_kind",
    "model",
    "vllm_version",
    "engine",
    "gpu",
    "gpu_profile",
    "num_gpus",
    "tp",
    "pp",
    "quantization",
    "kv_cache_dtype",
    "max_model_len",
    "gpu_memory_utilization",
    "enforce_eager",
    "max_num_seqs",
    "weights_gib",
    "cudagraph_gib",
    "available_kv_gib",
    "kv_needed_for_max_len_gib",
    "kv_cache_tokens",
    "max_concurrency",
    "init_engine_s",
    "startup_ok",
    "quote",
    "notes",
]


def check_startup(path: Path) -> list[str]:
    """Startup rows: JSON, schema keys of collected-startup-logs.jsonl, unique ids, a quote."""
    errors: list[str] = []
    seen: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"{path.name}:{n}: not JSON ({exc})")
            continue
        missing = [k for k in STARTUP_REQUIRED if k not in row]
        if missing:
            errors.append(f"{path.name}:{n}: missing keys {missing}")
        if row.get("id") in seen:
            errors.append(f"{path.name}:{n}: duplicate id {row.get('id')}")
        seen.add(row.get("id"))
        if not row.get("quote") or not row.get("source"):
            errors.append(f"{path.name}:{n}: needs a quote and a source")
        if row.get("startup_ok") is not None and not isinstance(row.get("startup_ok"), bool):
            errors.append(f"{path.name}:{n}: startup_ok must be true, false or null (unknown)")
        mc = row.get("max_concurrency")
        if mc is not None and not (isinstance(mc, dict) and {"tokens_per_request", "x"} <= set(mc)):
            errors.append(f"{path.name}:{n}: max_concurrency must be {{tokens_per_request, x}}")
    return errors


BENCH_FILES = ("collected-bench-results.jsonl", "collected-bench-results-2.jsonl", "collected-bench-results-3.jsonl",
               "collected-bench-results-4.jsonl", "collected-bench-results-5.jsonl", "collected-bench-results-6.jsonl",
               "collected-bench-results-7.jsonl", "collected-bench-results-8.jsonl",
               "collected-bench-results-9.jsonl", "collected-bench-results-10.jsonl",
               "collected-bench-results-11.jsonl", "collected-bench-results-12.jsonl",
               "collected-bench-results-13.jsonl", "collected-bench-results-14.jsonl",
               "collected-bench-results-15.jsonl", "collected-bench-results-16.jsonl",
               "collected-bench-results-17.jsonl", "collected-bench-results-18.jsonl",
               "collected-bench-results-19.jsonl",
               "collected-bench-results-20.jsonl", "collected-bench-results-21.jsonl",
               "collected-bench-results-22.jsonl", "collected-bench-results-23.jsonl",
               "collected-bench-results-24.jsonl", "collected-bench-results-25.jsonl",
               "collected-bench-results-26.jsonl", "collected-bench-results-27.jsonl",
               "collected-bench-results-28.jsonl", "collected-bench-results-29.jsonl",
               "collected-bench-results-30.jsonl", "collected-bench-results-31.jsonl",
               "collected-bench-results-32.jsonl", "collected-bench-results-33.jsonl", "collected-bench-results-34.jsonl",
               "collected-bench-results-35.jsonl", "collected-bench-results-36.jsonl",
               "collected-bench-results-37.jsonl", "collected-bench-results-38.jsonl",
               "collected-bench-results-39.jsonl", "collected-bench-results-40.jsonl",
               "collected-bench-results-41.jsonl", "collected-bench-results-42.jsonl",
               "collected-bench-results-43.jsonl", "collected-bench-results-44.jsonl",
               "collected-bench-results-45.jsonl", "collected-bench-results-46.jsonl",
               "collected-bench-results-47.jsonl", "collected-bench-results-48.jsonl",
               "collected-bench-results-49.jsonl", "collected-bench-results-50.jsonl",
               "collected-bench-results-51.jsonl", "collected-bench-results-52.jsonl",
               "collected-bench-results-53.jsonl", "collected-bench-results-54.jsonl",
               "collected-bench-results-55.jsonl", "collected-bench-results-56.jsonl",
               "collected-bench-results-57.jsonl", "collected-bench-results-58.jsonl",
               "collected-bench-results-59.jsonl", "collected-bench-results-60.jsonl",
               "collected-bench-results-61.jsonl")
STARTUP_FILES = ("collected-startup-logs-2.jsonl", "collected-startup-logs-3.jsonl", "collected-startup-logs-4.jsonl",
                 "collected-startup-logs-5.jsonl", "collected-startup-logs-6.jsonl", "collected-startup-logs-7.jsonl",
                 "collected-startup-logs-8.jsonl", "collected-startup-logs-9.jsonl", "collected-startup-logs-10.jsonl",
                 "collected-startup-logs-11.jsonl", "collected-startup-logs-12.jsonl",
                 "collected-startup-logs-13.jsonl", "collected-startup-logs-14.jsonl",
                 "collected-startup-logs-15.jsonl", "collected-startup-logs-16.jsonl",
                 "collected-startup-logs-17.jsonl", "collected-startup-logs-18.jsonl",
                 "collected-startup-logs-19.jsonl", "collected-startup-logs-20.jsonl",
                 "collected-startup-logs-21.jsonl", "collected-startup-logs-22.jsonl",
                 "collected-startup-logs-23.jsonl",
                 "collected-startup-logs-24.jsonl", "collected-startup-logs-25.jsonl",
                 "collected-startup-logs-26.jsonl", "collected-startup-logs-27.jsonl",
                 "collected-startup-logs-28.jsonl", "collected-startup-logs-29.jsonl",
                 "collected-startup-logs-30.jsonl", "collected-startup-logs-31.jsonl",
                 "collected-startup-logs-33.jsonl", "collected-startup-logs-34.jsonl",
                 "collected-startup-logs-35.jsonl", "collected-startup-logs-36.jsonl",
                 "collected-startup-logs-37.jsonl", "collected-startup-logs-38.jsonl", "collected-startup-logs-39.jsonl",
                 "collected-startup-logs-40.jsonl", "collected-startup-logs-41.jsonl",
                 "collected-startup-logs-42.jsonl", "collected-startup-logs-43.jsonl",
                 "collected-startup-logs-44.jsonl", "collected-startup-logs-45.jsonl",
                 "collected-startup-logs-46.jsonl", "collected-startup-logs-47.jsonl",
                 "collected-startup-logs-48.jsonl", "collected-startup-logs-49.jsonl",
                 "collected-startup-logs-50.jsonl", "collected-startup-logs-51.jsonl",
                 "collected-startup-logs-52.jsonl", "collected-startup-logs-53.jsonl",
                 "collected-startup-logs-54.jsonl", "collected-startup-logs-55.jsonl",
                 "collected-startup-logs-56.jsonl", "collected-startup-logs-57.jsonl",
                 "collected-startup-logs-58.jsonl", "collected-startup-logs-59.jsonl",
                 "collected-startup-logs-60.jsonl", "collected-startup-logs-61.jsonl",
                 "collected-startup-logs-62.jsonl")


def main() -> int:
    truth = HERE.parent.parent.parent / "shared" / "truth" / "public-bench-results.jsonl"
    known: set[str] = set()
    if truth.exists():
        known = {json.loads(x)["id"] for x in truth.read_text(encoding="utf-8").splitlines() if x.strip()}
    errors: list[str] = []
    rows = 0
    for name in BENCH_FILES:
        path = HERE / name
        if path.exists():
            errors += check(path, known)
            ids = {json.loads(x)["id"] for x in path.read_text(encoding="utf-8").splitlines() if x.strip()}
            rows += len(ids)
            known |= ids  # ids stay unique across the files too
    for name in STARTUP_FILES:
        if (HERE / name).exists():
            errors += check_startup(HERE / name)
    for e in errors:
        print(e)
    print(f"{rows} benchmark rows, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
