"""`vllmkit calibration list` shows both kinds of records: memory (startups) and performance (bench)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.clirun import invoke

from vllmkit.calibration.perfstore import PerfRecord, add_perf_records, perf_store_path


def _record(model: str = "org/[bold]tiny") -> PerfRecord:
    return PerfRecord(record_id="abcdef0123456789", recorded_at="2026-11-30T12:00:00+00:00", gpu="cpu",
                      vllm_version="0.32.0", model=model, precision="bf16", input_len=32, output_len=16,
                      concurrency=4, num_requests=8, completed=8, duration_s=2.0, output_tokens_per_s=64.0,
                      total_tokens_per_s=192.0, requests_per_s=4.0, ttft_ms={"p50": 12.5}, tpot_ms={"p50": 3.25},
                      source="bench http://127.0.0.1:8000")


def test_list_shows_performance_records(tmp_path: Path) -> None:
    env = {"VLLMKIT_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "250"}
    add_perf_records(perf_store_path(env), [_record()])
    human = invoke(["calibration", "list"], env=env)
    assert human.exit_code == 0, human.output
    assert "no calibrations in" in human.output  # the memory store is empty
    assert "org/[bold]tiny" in human.output  # escaped, printed literally
    assert "64.0" in human.output and "c=4" in human.output and "12.5" in human.output
    data = json.loads(invoke(["calibration", "list", "--json"], env=env).stdout)["data"]
    assert data["records"] == [] and [r["record_id"] for r in data["performance"]] == ["abcdef0123456789"]
    only_mem = invoke(["calibration", "list", "--kind", "memory"], env=env)
    assert "abcdef01" not in only_mem.output and "performance.jsonl" not in only_mem.output
    assert invoke(["calibration", "list", "--gpu", "h100"], env=env).output.count("abcdef01") == 0
    bad = invoke(["calibration", "list", "--kind", "speed"], env=env)
    assert bad.exit_code == 2
