"""The bundled public startup logs against vLLM's own budget identity.

vLLM's V1 worker sizes the KV cache as requested - weights - peak activation - non-torch memory, where
requested = total x gpu_memory_utilization (v1/worker/gpu_worker.py determine_available_memory, the same
in the 0.10-0.19 wheels these logs come from; its "Free memory on device" summary prints each term), and
the V0 worker prints the same four terms ("model weights take ...; non_torch_memory takes ...; PyTorch
activation peak memory takes ...; the rest of the memory reserved for KV Cache is ...", worker/worker.py
determine_num_available_blocks in 0.6-0.7). So a
row that carries all four terms and its utilization must add up to that budget. A row that does not has
a wrong utilization, total or term, and would score the planner against a run that never happened: round
29 found llm-d-benchmark's gpt-oss-120b row labelled 0.90 while its terms add up to 0.95 x 79.18 GiB
exactly (at 0.90 they leave -0.63 GiB and the run, reported a success, could not have started).

From 0.20 (CUDA; engine/versions.py cudagraph_counted) the worker also subtracts its estimate of the CUDA-graph
memory before sizing the KV cache; rows of those releases that print the estimate ("... CUDA graph memory
estimate ...", `cudagraph_estimate_gib`) add it to the sum -- through 0.26.0. From the builds after 0.26.0 (0.27;
the 0.26.1rc1 dev builds of main too) the printed peak activation already holds the applied estimate
(gpu_worker.py: peak_activation_memory = transient_peak_headroom + cudagraph_memory_estimate_applied, read in
0.32; calibration/measure.py reads the summary the same way), so it is not added again.

Pipeline-parallel rows are left out: each stage prints its own terms and the row mixes the stage that
printed first with the KV line of another (their notes say which).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllmkit.engine.versions import parse_version, rules_for

DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data"
TERMS = ("weights_gib", "peak_activation_gib", "non_torch_gib", "available_kv_gib")


def _rows() -> list[tuple[str, dict]]:
    rows = []
    for path in sorted(DATA.glob("*startup-logs*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append((path.name, json.loads(line)))
    return rows


def _checkable(row: dict) -> bool:
    return (row.get("engine") in ("V0", "V1") and (row.get("pp") or 1) == 1
            and bool(row.get("gpu_memory_utilization")) and bool(row.get("gpu_total_gib"))
            and all(row.get(k) is not None for k in TERMS))


# rows whose printed terms do not add up, and why (each is checked to fail the identity, so the list cannot go stale)
IDENTITY_EXCEPTIONS: dict[str, str] = {
    # (round 34: the two 0.26.1rc1 / 0.30 rows once listed here add up exactly once the estimate folded into their
    # printed peak activation is not counted twice; vLLM's "--kv-cache-memory=... to fit into requested memory"
    # figure is requested - consumed - peak - the actual graph pool - 150 MiB, not a sign of an oversized cache)
}
CHECKABLE = [(name, row) for name, row in _rows() if _checkable(row) and row["id"] not in IDENTITY_EXCEPTIONS]


def test_enough_rows_carry_every_term() -> None:
    # the identity is only worth checking if the data holds it for many runs (llm-d-benchmark,
    # llm-d-planner and others print the summary); a schema change that renamed a key would empty this
    assert len(CHECKABLE) >= 50


def _identity(row: dict) -> tuple[float, float]:
    budget = row["gpu_memory_utilization"] * row["gpu_total_gib"]
    total = sum(row[k] for k in TERMS)
    version = str(row.get("vllm_version") or "").split("+")[0]
    if (row.get("cudagraph_estimate_gib") is not None and version and rules_for(version).cudagraph_counted
            and parse_version(version) < (0, 26, 1)):
        total += row["cudagraph_estimate_gib"]
    return total, budget


@pytest.mark.parametrize(("name", "row"), CHECKABLE, ids=[row["id"] for _, row in CHECKABLE])
def test_terms_add_up_to_the_budget(name: str, row: dict) -> None:
    total, budget = _identity(row)
    # each term is printed to 0.01 GiB, so four of them round by at most 0.02
    assert total == pytest.approx(budget, abs=0.025), (
        f"{name}: {row['id']} terms add up to {total:.2f} GiB, not {row['gpu_memory_utilization']} x "
        f"{row['gpu_total_gib']} = {budget:.2f} GiB")


def test_the_exceptions_really_break_the_identity() -> None:
    rows = {r["id"]: r for _, r in _rows()}
    for row_id in IDENTITY_EXCEPTIONS:
        assert _checkable(rows[row_id])
        total, budget = _identity(rows[row_id])
        assert abs(total - budget) > 0.025, row_id


def test_a_summary_after_0_26_holds_the_graph_estimate_in_its_peak() -> None:
    # vLLM 0.30 on an H200 (collected-startup-logs-29): "Desired GPU memory utilization is (0.9, 125.82 GiB). Actual
    # usage is 28.08 GiB for consumed memory (weights + non-torch), 2.47 GiB for peak activation" and "Available KV
    # cache memory: 95.27 GiB": 28.08 + 2.47 + 95.27 = 125.82 with the 1.42 GiB estimate inside the 2.47
    row = next(r for _, r in _rows() if r["id"] == "h200-inferred-phi4-bf16-len8192-util090-v0300-warm")
    total, budget = _identity(row)
    assert total == pytest.approx(125.82, abs=0.025) and budget == pytest.approx(125.82, abs=0.01)
    assert row["cudagraph_estimate_gib"] == 1.42


def test_the_gpt_oss_120b_row_uses_the_budget_its_terms_imply() -> None:
    row = next(r for _, r in _rows() if r["id"] == "llmdbench-h100-gpt-oss-120b-tp1-len16000-util090")
    # 64.38 + 7.38 + 0.13 + 3.33 = 75.22 = 0.95 x 79.18 (75.221); 0.90 would give 71.26
    assert row["gpu_memory_utilization"] == 0.95
    assert row["startup_ok"] is True
