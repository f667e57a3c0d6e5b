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

from vllmkit.cli.options import JSON_OPTION
from vllmkit.errors import UsageError
from vllmkit.output import CommandResult, warn

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


@calibration_app.command("list", short_help="Show the stored calibrations (memory and performance).")
def list_cmd(
    gpu: str | None = GPU_FILTER,
    family: str | None = FAMILY_FILTER,
    kind: str = typer.Option("all", "--kind", help="memory (startups) | performance (`vllmkit bench`) | all"),
    json_output: bool = JSON_OPTION,
) -> CommandResult:
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
    return CommandResult("calibration list", data, view="vllmkit.views.calibration:render_list", json_mode=json_output)


@calibration_app.command("clear", short_help="Remove calibrations.")
def clear_cmd(
    record_ids: list[str] | None = IDS_ARGUMENT,
    gpu: str | None = GPU_FILTER,
    family: str | None = FAMILY_FILTER,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    json_output: bool = JSON_OPTION,
) -> CommandResult:
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
    return CommandResult("calibration clear", data, view="vllmkit.views.calibration:render_message", json_mode=json_output)


@calibration_app.command("export", short_help="Write the calibrations to a file.")
def export_cmd(
    file: Path = EXPORT_ARGUMENT,
    gpu: str | None = GPU_FILTER,
    family: str | None = FAMILY_FILTER,
    force: bool = typer.Option(False, "--force", help="Overwrite FILE if it exists."),
    json_output: bool = JSON_OPTION,
) -> CommandResult:
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
    return CommandResult("calibration export", data, view="vllmkit.views.calibration:render_message", json_mode=json_output)


@calibration_app.command("import", short_help="Merge calibrations from a file.")
def import_cmd(
    file: Path = IMPORT_ARGUMENT,
    json_output: bool = JSON_OPTION,
) -> CommandResult:
    """Merge the calibrations of FILE into the store (records already stored are skipped)."""
    from vllmkit.calibration.store import add_records, read_import_file, store_path

    path = store_path(_env())
    records = read_import_file(file)
    added, duplicates = add_records(path, records)
    data = {"store": str(path), "file": str(file), "read": len(records), "added": added, "duplicates": duplicates,
            "message": f"imported {added} calibration(s) from {file} ({duplicates} already stored) into {path}"}
    return CommandResult("calibration import", data, view="vllmkit.views.calibration:render_message", json_mode=json_output)


def register(app: typer.Typer) -> None:
    app.add_typer(calibration_app, name="calibration", short_help="Measured startups used by plan (list/clear/export/import).")
