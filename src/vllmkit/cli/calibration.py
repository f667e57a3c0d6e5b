"""`vllmkit calibration list|clear|export|import`: the local store of measured non-KV memory.

Records come from `vllmkit serve` (after a healthy start) and `vllmkit check-log LOG --record`;
`vllmkit plan` uses the closest one (same GPU profile, architecture family and vLLM minor version;
each term only where the inputs it depends on match) and tags those terms `calibrated`.
The store is `$VLLMKIT_DATA_DIR/calibrations.jsonl` (else `$XDG_DATA_HOME/vllmkit/`, else
`~/.local/share/vllmkit/`). Export/import share it within a team: import merges and skips records
whose id is already stored.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vllmkit.cli._common import JSON_OPTION, boundary
from vllmkit.errors import UsageError
from vllmkit.output import emit, gib, thousands, warn

if TYPE_CHECKING:
    from vllmkit.calibration.store import CalibrationRecord

calibration_app = typer.Typer(
    help="Measured non-KV memory from real startups, used by `vllmkit plan` (list, clear, export, import).",
    no_args_is_help=True,
)

GPU_FILTER = typer.Option(None, "--gpu", help="Only records of this GPU profile name.")
FAMILY_FILTER = typer.Option(None, "--family", help="Only records of this architecture family (model_type).")
IDS_ARGUMENT = typer.Argument(None, help="Record ids (or prefixes) to remove; default: all.")
EXPORT_ARGUMENT = typer.Argument(..., help="Where to write the records (JSON lines).", show_default=False)
IMPORT_ARGUMENT = typer.Argument(..., help="A file written by `vllmkit calibration export`.", show_default=False)


def _env() -> dict[str, str]:
    return dict(os.environ)


def _matches(record: CalibrationRecord, gpu: str | None, family: str | None, ids: list[str] | None = None) -> bool:
    if gpu and record.gpu.lower() != gpu.lower():
        return False
    if family and record.family.lower() != family.lower():
        return False
    return not ids or any(record.record_id.startswith(i) for i in ids)


def _record_rows(records: list[CalibrationRecord]) -> list[dict]:
    return [r.model_dump(mode="json") for r in records]


def render_list(console: Console, data: dict) -> None:
    if data.get("kind", "all") in ("all", "memory"):
        _render_memory(console, data)
    if data.get("kind", "all") in ("all", "performance"):
        _render_performance(console, data)


def _render_performance(console: Console, data: dict) -> None:
    """What `vllmkit bench` measured (calibration/perfstore.py), one row per load point."""
    records = data.get("performance") or []
    if not records:
        console.print(f"no performance records in {data.get('performance_store')}", markup=False)
        return
    table = Table(title=escape(f"performance ({data.get('performance_store')})"))
    for col in ("id", "date", "GPU", "vLLM", "model", "precision", "TP", "PP", "in/out", "load", "out tok/s",
                "TTFT p50 ms", "TPOT p50 ms", "source"):
        table.add_column(col, overflow="fold")
    for r in records:
        load = f"c={r['concurrency']}" if r.get("concurrency") else f"rate={r.get('request_rate')}"
        table.add_row(*(escape(str(v)) for v in (
            r["record_id"][:12], r["recorded_at"][:10], r["gpu"], r["vllm_version"], r["model"], r["precision"],
            r["tp"], r["pp"], f"{r['input_len']:.0f}/{r['output_len']:.0f}", load, f"{r['output_tokens_per_s']:.1f}",
            "-" if r["ttft_ms"].get("p50") is None else f"{r['ttft_ms']['p50']:.1f}",
            "-" if r["tpot_ms"].get("p50") is None else f"{r['tpot_ms']['p50']:.1f}", r.get("source", ""))))
    console.print(table)


def _render_memory(console: Console, data: dict) -> None:
    records = data["records"]
    if not records:
        console.print(f"no calibrations in {data['store']}", markup=False)
        return
    table = Table(title=f"calibrations ({data['store']})")
    for col in ("id", "date", "GPU", "vLLM", "family", "model", "batched tokens", "TP", "PP", "eager", "terms", "source"):
        table.add_column(col, justify="right" if col in ("batched tokens", "TP", "PP") else "left", overflow="fold")
    for r in records:
        terms = ", ".join(f"{k} {gib(v)}" for k, v in r["terms"].items()) + (" (lump)" if r.get("lump") else "")
        table.add_row(r["record_id"][:12], r["recorded_at"][:10], r["gpu"], r["vllm_version"], r["family"], r["model"],
                      thousands(r["max_num_batched_tokens"]), str(r["tp"]), str(r["pp"]),
                      "yes" if r["enforce_eager"] else "no", terms, r.get("source", ""))
    console.print(table)


def _render_message(console: Console, data: dict) -> None:
    console.print(data["message"], markup=False)


@calibration_app.command("list")
@boundary("calibration list")
def list_cmd(
    gpu: str | None = GPU_FILTER,
    family: str | None = FAMILY_FILTER,
    kind: str = typer.Option("all", "--kind", help="memory (startups) | performance (`vllmkit bench`) | all"),
    json_output: bool = JSON_OPTION,
) -> None:
    """Show the stored calibrations: memory (from startups) and performance (from `vllmkit bench`)."""
    from vllmkit.calibration.perfstore import load_perf_records, perf_store_path
    from vllmkit.calibration.store import load_records, store_path

    if kind not in ("all", "memory", "performance"):
        raise UsageError(f"--kind {kind!r} is not memory, performance or all", "e.g. --kind performance")
    env = _env()
    path = store_path(env)
    records, bad = load_records(path)
    chosen = [r for r in records if _matches(r, gpu, family)]
    if bad and not json_output:
        warn(f"{len(bad)} line(s) of {path} are not valid records and are ignored (first: line {bad[0][0]}: {bad[0][1]})")
    perf_path = perf_store_path(env)
    perf, perf_bad = load_perf_records(perf_path)
    perf = [r for r in perf if (not gpu or r.gpu.lower() == gpu.lower())
            and (not family or r.family.lower() == family.lower())]
    if perf_bad and not json_output:
        warn(f"{len(perf_bad)} line(s) of {perf_path} are not valid records and are ignored "
             f"(first: line {perf_bad[0][0]}: {perf_bad[0][1]})")
    data = {"store": str(path), "records": _record_rows(chosen), "invalid_lines": [n for n, _ in bad],
            "kind": kind, "performance_store": str(perf_path),
            "performance": [r.model_dump(mode="json") for r in perf],
            "performance_invalid_lines": [n for n, _ in perf_bad]}
    emit("calibration list", data, json_mode=json_output, render=render_list)


@calibration_app.command("clear")
@boundary("calibration clear")
def clear_cmd(
    record_ids: list[str] | None = IDS_ARGUMENT,
    gpu: str | None = GPU_FILTER,
    family: str | None = FAMILY_FILTER,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Remove calibrations (all, or those selected by id / --gpu / --family)."""
    from vllmkit.calibration.store import load_records, remove_records, store_path

    path = store_path(_env())
    records, _ = load_records(path)
    ids = list(record_ids or [])
    targets = [r for r in records if _matches(r, gpu, family, ids)]
    for rid in ids:
        if not any(r.record_id.startswith(rid) for r in records):
            raise UsageError(f"no calibration with id {rid!r}", "see `vllmkit calibration list` for ids",
                             code="unknown-record")
    if targets and not yes:
        if json_output or not sys.stdin.isatty():
            raise UsageError(f"refusing to remove {len(targets)} calibration(s) without --yes",
                             "add --yes (see `vllmkit calibration list` first, or export a backup)", code="confirm")
        if not typer.confirm(f"remove {len(targets)} calibration(s) from {path}?"):
            raise typer.Exit(1)
    wanted = {r.record_id for r in targets}
    removed = remove_records(path, lambda r: r.record_id in wanted) if wanted else 0
    data = {"store": str(path), "removed": removed, "message": f"removed {removed} calibration(s) from {path}"}
    emit("calibration clear", data, json_mode=json_output, render=_render_message)


@calibration_app.command("export")
@boundary("calibration export")
def export_cmd(
    file: Path = EXPORT_ARGUMENT,
    gpu: str | None = GPU_FILTER,
    family: str | None = FAMILY_FILTER,
    force: bool = typer.Option(False, "--force", help="Overwrite FILE if it exists."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Write the calibrations to FILE, to share with `vllmkit calibration import FILE`."""
    from vllmkit.calibration.store import export_records, load_records, store_path

    path = store_path(_env())
    records, _ = load_records(path)
    chosen = [r for r in records if _matches(r, gpu, family)]
    if file.exists() and not force:
        raise UsageError(f"{file} exists", "pass --force to overwrite it, or choose another file", code="file-exists")
    export_records(file, chosen)
    data = {"store": str(path), "file": str(file), "exported": len(chosen),
            "message": f"exported {len(chosen)} calibration(s) to {file}"}
    emit("calibration export", data, json_mode=json_output, render=_render_message)


@calibration_app.command("import")
@boundary("calibration import")
def import_cmd(
    file: Path = IMPORT_ARGUMENT,
    json_output: bool = JSON_OPTION,
) -> None:
    """Merge the calibrations of FILE into the store (records already stored are skipped)."""
    from vllmkit.calibration.store import add_records, read_import_file, store_path

    path = store_path(_env())
    records = read_import_file(file)
    added, duplicates = add_records(path, records)
    data = {"store": str(path), "file": str(file), "read": len(records), "added": added, "duplicates": duplicates,
            "message": f"imported {added} calibration(s) from {file} ({duplicates} already stored) into {path}"}
    emit("calibration import", data, json_mode=json_output, render=_render_message)


def register(app: typer.Typer) -> None:
    app.add_typer(calibration_app, name="calibration")
